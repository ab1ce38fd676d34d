//! Typed reading of JSON objects (REST bodies and MCP tool arguments alike), with errors that
//! name the field. Integer fields accept integral numbers such as `5.0`.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A JSON object being read field by field.
pub struct Args {
    map: Map<String, Value>,
}

/// A field of a PATCH-like request: absent (keep), null (clear) or a value (set).
#[derive(Debug, PartialEq)]
pub enum Patch<T> {
    Keep,
    Clear,
    Set(T),
}

impl Args {
    /// Wraps a parsed body; anything but an object is refused.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when `value` is not an object.
    pub fn from_value(value: Value) -> Result<Args> {
        match value {
            Value::Object(map) => Ok(Args { map }),
            _ => Err(Error::invalid("the request body must be a JSON object")),
        }
    }

    /// An empty object (for requests without a body).
    pub fn empty() -> Args {
        Args { map: Map::new() }
    }

    /// Refuses members not in `allowed`, so a misspelt field is an error, not a silent no-op.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first unknown member.
    pub fn deny_unknown(&self, allowed: &[&str]) -> Result<()> {
        match self.map.keys().find(|key| !allowed.contains(&key.as_str())) {
            Some(key) => Err(Error::invalid(format!(
                "unknown field `{key}`; accepted fields: {}",
                allowed.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// A required string of 1..=`max_chars` characters (surrounding whitespace trimmed).
    ///
    /// # Errors
    /// Missing, not a string, empty or too long.
    pub fn req_str(&self, name: &str, max_chars: usize) -> Result<String> {
        match self.opt_str(name, max_chars)? {
            Some(text) => Ok(text),
            None => Err(Error::invalid(format!("`{name}` is required"))),
        }
    }

    /// An optional string; `null` counts as absent.
    ///
    /// # Errors
    /// Not a string, empty or too long.
    pub fn opt_str(&self, name: &str, max_chars: usize) -> Result<Option<String>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => check_text(name, text, max_chars).map(Some),
            Some(_) => Err(Error::invalid(format!("`{name}` must be a string"))),
        }
    }

    /// An optional multi-line text (see [`Args::req_paragraph`]); `null` counts as absent.
    ///
    /// # Errors
    /// Not a string, empty, too long, other control characters.
    pub fn opt_paragraph(&self, name: &str, max_chars: usize) -> Result<Option<String>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.req_paragraph(name, max_chars).map(Some),
        }
    }

    /// A required multi-line text of 1..=`max_chars` characters (trimmed): like
    /// [`Args::req_str`], but line breaks and tabs are allowed (other control characters are
    /// not).
    ///
    /// # Errors
    /// Missing, not a string, empty, too long, other control characters.
    pub fn req_paragraph(&self, name: &str, max_chars: usize) -> Result<String> {
        let text = match self.map.get(name) {
            None | Some(Value::Null) => {
                return Err(Error::invalid(format!("`{name}` is required")));
            }
            Some(Value::String(text)) => text,
            Some(_) => return Err(Error::invalid(format!("`{name}` must be a string"))),
        };
        // The limit counts the text as sent, as the contract's `maxLength` does.
        let sent = text.chars().count();
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::invalid(format!("`{name}` must not be empty")));
        }
        if sent > max_chars {
            return Err(Error::invalid(format!(
                "`{name}` must be at most {max_chars} characters"
            )));
        }
        if text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        {
            return Err(Error::invalid(format!(
                "`{name}` must not contain control characters other than line breaks and tabs"
            )));
        }
        Ok(text.to_owned())
    }

    /// A string that may be set, cleared with `null`, or left out.
    ///
    /// # Errors
    /// Not a string or null, empty or too long.
    pub fn patch_str(&self, name: &str, max_chars: usize) -> Result<Patch<String>> {
        match self.map.get(name) {
            None => Ok(Patch::Keep),
            Some(Value::Null) => Ok(Patch::Clear),
            Some(Value::String(text)) => check_text(name, text, max_chars).map(Patch::Set),
            Some(_) => Err(Error::invalid(format!("`{name}` must be a string or null"))),
        }
    }

    /// Removes and returns a string member (credentials such as `api_key`, which the handler
    /// reads before the service sees the arguments).
    pub fn take_str(&mut self, name: &str) -> Option<String> {
        match self.map.shift_remove(name) {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }
    }

    /// Removes and returns a member of any type.
    pub fn take(&mut self, name: &str) -> Option<Value> {
        self.map.shift_remove(name)
    }

    /// The member names, in the order sent.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.map.keys()
    }

    /// The raw member, if present.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }
}

/// Reads an integer from a JSON number, accepting integral floats (`5.0`) and refusing
/// fractions and values outside `min..=max`.
///
/// # Errors
/// `INVALID_ARGUMENT` naming `name`.
pub fn int_in_range(name: &str, value: &Value, min: i64, max: i64) -> Result<i64> {
    let out_of_range =
        || Error::invalid(format!("`{name}` must be an integer from {min} to {max}"));
    let Value::Number(number) = value else {
        return Err(out_of_range());
    };
    let integer = if let Some(i) = number.as_i64() {
        i
    } else {
        let float = number.as_f64().ok_or_else(out_of_range)?;
        if float.fract() != 0.0 || float < min as f64 || float > max as f64 {
            return Err(out_of_range());
        }
        float as i64
    };
    if integer < min || integer > max {
        return Err(out_of_range());
    }
    Ok(integer)
}

/// An integer written plainly, optionally with a zero fraction (`5`, `-3`, `5.0`).
pub fn parse_integral(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if !fraction.bytes().all(|b| b == b'0') || (text.contains('.') && fraction.is_empty()) {
        return None;
    }
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    whole.parse().ok()
}

fn check_text(name: &str, text: &str, max_chars: usize) -> Result<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Error::invalid(format!("`{name}` must not be empty")));
    }
    // The limit counts the text as sent, as the contract's `maxLength` does.
    if text.chars().count() > max_chars {
        return Err(Error::invalid(format!(
            "`{name}` must be at most {max_chars} characters"
        )));
    }
    if trimmed.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(format!(
            "`{name}` must not contain control characters"
        )));
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Args {
        Args::from_value(value).unwrap()
    }

    #[test]
    fn integral_query_values() {
        assert_eq!(parse_integral("5"), Some(5));
        assert_eq!(parse_integral("5.00"), Some(5));
        assert_eq!(parse_integral("-3"), Some(-3));
        for bad in ["1e2", "+5", "5.", "5.5", "", "-", "0x1"] {
            assert_eq!(parse_integral(bad), None, "{bad}");
        }
    }

    #[test]
    fn integers_accept_integral_floats_only() {
        assert_eq!(int_in_range("a", &json!(5.0), 0, 10).unwrap(), 5);
        assert!(int_in_range("b", &json!(5.5), 0, 10).is_err());
        assert!(int_in_range("c", &json!("5"), 0, 10).is_err());
        assert!(int_in_range("d", &json!(7), 0, 5).is_err());
    }

    #[test]
    fn strings_are_trimmed_bounded_and_named_in_errors() {
        let a = args(json!({"name": "  bob ", "long": "xxxx", "n": 3, "blank": " "}));
        assert_eq!(a.req_str("name", 10).unwrap(), "bob");
        assert!(
            a.req_str("long", 3)
                .unwrap_err()
                .to_string()
                .contains("`long`")
        );
        assert!(a.req_str("n", 3).unwrap_err().to_string().contains("`n`"));
        // The limit counts the text as sent, padding included (as `maxLength` does).
        assert!(a.req_str("name", 5).is_err());
        assert!(a.req_paragraph("name", 5).is_err());
        assert_eq!(a.req_paragraph("name", 6).unwrap(), "bob");
        assert!(a.req_str("blank", 3).is_err());
        assert!(
            a.req_str("absent", 3)
                .unwrap_err()
                .to_string()
                .contains("required")
        );
    }

    #[test]
    fn patch_distinguishes_absent_null_and_value() {
        let a = args(json!({"x": null, "y": "v"}));
        assert_eq!(a.patch_str("x", 5).unwrap(), Patch::Clear);
        assert_eq!(a.patch_str("y", 5).unwrap(), Patch::Set("v".into()));
        assert_eq!(a.patch_str("z", 5).unwrap(), Patch::Keep);
        assert!(a.deny_unknown(&["x"]).is_err());
    }
}
