//! The operator's provenance overrides.

use serde_json::{Map, Value};

use super::{Field, Input, Kind, Op};
use crate::error::{Error, Result};

const TEXT: &str = r#"{"type":["string","null"]}"#;

/// `PATCH /api/operator/provenance` (operator): each field set, or `null` to restore the
/// default.
pub static UPDATE_PROVENANCE: Op = Op {
    name: "update_provenance",
    fields: &[
        Field::rest("source", Kind::Json(TEXT)),
        Field::rest("creator", Kind::Json(TEXT)),
        Field::rest("brand", Kind::Json(TEXT)),
        Field::rest("established", Kind::Json(TEXT)),
        Field::rest("classification", Kind::Json(TEXT)),
        Field::rest("attribution", Kind::Json(TEXT)),
        Field::rest("patent", Kind::Json(r#"{"type":["object","null"]}"#)),
        Field::rest(
            "network",
            Kind::Json(r#"{"type":["array","null"],"items":{"type":"string"}}"#),
        ),
        Field::rest("marketing", Kind::Json(r#"{"type":["object","null"]}"#)),
    ],
    scope: None,
    tool: None,
};

/// The overrides sent: field → value, `null` meaning "restore the default".
#[derive(Debug)]
pub struct UpdateProvenance {
    pub changes: Map<String, Value>,
}

impl UpdateProvenance {
    /// # Errors
    /// `INVALID_ARGUMENT` naming a field of the wrong type, or holding an integer beyond
    /// ±(2^53−1).
    pub fn read(input: &Input) -> Result<UpdateProvenance> {
        let mut changes = Map::new();
        for field in UPDATE_PROVENANCE.fields {
            let Some(value) = input.raw(field) else {
                continue;
            };
            let ok = match field.rest {
                _ if value.is_null() => true,
                "network" => value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string)),
                "patent" | "marketing" => value.is_object(),
                _ => value.is_string(),
            };
            if !ok {
                return Err(Error::invalid(format!(
                    "`{}` has the wrong type",
                    field.rest
                )));
            }
            // The block is signed into every public answer as canonical JSON (RFC 8785), which
            // carries no integer beyond ±(2^53−1) exactly: a verifier would refuse the answer.
            crate::crypto::jcs::check_strict(value)
                .map_err(|e| Error::invalid(format!("`{}`: {e}", field.rest)))?;
            changes.insert(field.rest.to_owned(), value.clone());
        }
        Ok(UpdateProvenance { changes })
    }
}
