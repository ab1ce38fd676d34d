//! Operator operations on what the marketplace discloses: classifying a party and announcing a
//! fee schedule change.

use serde_json::Value;

use super::{Field, Input, Kind, Op};
use crate::error::{Error, Result};

/// `PUT /api/operator/parties/{handle}` `{party}` (operator).
pub static CLASSIFY: Op = Op {
    name: "classify_party",
    fields: &[Field::rest("party", Kind::Text(32)).required()],
    scope: None,
    tool: None,
};

/// The class to give the agent (checked against the classes by the service).
///
/// # Errors
/// `INVALID_ARGUMENT`.
pub fn party(input: &Input) -> Result<String> {
    input.req_text(&CLASSIFY.fields[0])
}

/// `POST /api/operator/fees/announcements` (operator; also `bourse fees announce`).
pub static ANNOUNCE: Op = Op {
    name: "announce_fees",
    fields: &[
        Field::rest("effectiveFrom", Kind::Text(10)).required(),
        Field::rest("schedule", Kind::Object).required(),
        Field::rest("note", Kind::Text(2000)),
    ],
    scope: None,
    tool: None,
};

/// A fee schedule change to announce.
#[derive(Debug)]
pub struct Announce {
    pub effective_from: jiff::civil::Date,
    /// Free-form, stored as sent.
    pub schedule: Value,
    pub note: Option<String>,
}

impl Announce {
    /// # Errors
    /// `INVALID_ARGUMENT` naming the field.
    pub fn read(input: &Input) -> Result<Announce> {
        let field = |i: usize| &ANNOUNCE.fields[i];
        let effective_from = input
            .req_text(field(0))?
            .parse()
            .map_err(|_| Error::invalid("`effectiveFrom` must be a date, YYYY-MM-DD"))?;
        let schedule = match input.json(field(1)) {
            Ok(Some(value @ Value::Object(_))) => value,
            _ => {
                return Err(Error::invalid(
                    "`schedule` must be an object describing the new bands and rates",
                ));
            }
        };
        Ok(Announce {
            effective_from,
            schedule,
            note: input.text(field(2))?,
        })
    }
}
