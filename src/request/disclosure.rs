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
    /// `INVALID_ARGUMENT` naming the field (a schedule holding an integer beyond ±(2^53−1)
    /// included).
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
        // Published in signed answers (`/api/meta`) as canonical JSON (RFC 8785), which carries
        // no integer beyond ±(2^53−1) exactly.
        crate::crypto::jcs::check_strict(&schedule)
            .map_err(|e| Error::invalid(format!("`schedule`: {e}")))?;
        Ok(Announce {
            effective_from,
            schedule,
            note: input.text(field(2))?,
        })
    }
}

/// Default and maximum page size of the demand ledger's row list.
pub const DEMAND_DEFAULT_LIMIT: i64 = 100;
pub const DEMAND_MAX_LIMIT: i64 = 500;

/// `GET /api/proof/demand` (query; public). Other parameters are ignored.
pub static DEMAND: Op = Op {
    name: "demand_ledger",
    fields: &[
        Field::rest("limit", Kind::Int(1, DEMAND_MAX_LIMIT)),
        Field::rest("offset", Kind::Int(0, i32::MAX as i64)),
    ],
    scope: None,
    tool: None,
};

/// A page of the demand ledger's rows, newest first (the totals cover every row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemandPage {
    pub limit: i64,
    pub offset: i64,
}

impl DemandPage {
    /// # Errors
    /// `INVALID_ARGUMENT` for a `limit` or `offset` that is not an integer in its range.
    pub fn read(input: &Input) -> Result<DemandPage> {
        Ok(DemandPage {
            limit: input
                .int(&DEMAND.fields[0])?
                .unwrap_or(DEMAND_DEFAULT_LIMIT),
            offset: input.int(&DEMAND.fields[1])?.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(query: &[(&str, &str)]) -> Result<DemandPage> {
        let pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        DemandPage::read(&Input::query(&DEMAND, &pairs))
    }

    #[test]
    fn the_demand_page_has_defaults_and_bounds() {
        assert_eq!(
            page(&[]).unwrap(),
            DemandPage {
                limit: 100,
                offset: 0
            }
        );
        assert_eq!(
            page(&[("offset", "5"), ("utm", "x"), ("utm", "y")]).unwrap(),
            DemandPage {
                limit: 100,
                offset: 5
            }
        );
        assert!(
            page(&[("limit", ""), ("offset", "5")])
                .unwrap_err()
                .to_string()
                .contains("`limit` is empty")
        );
        assert!(page(&[("offset", "1"), ("offset", "2")]).is_err());
        assert_eq!(
            page(&[("limit", "501")]).unwrap_err().to_string(),
            page(&[("limit", "0")]).unwrap_err().to_string()
        );
        assert!(
            page(&[("limit", "x")])
                .unwrap_err()
                .to_string()
                .contains("`limit` must be an integer from 1 to 500")
        );
        assert!(page(&[("offset", "-1")]).is_err());
    }
}
