//! RFC 8785 (JCS) canonical JSON and the strict parser used for objects received from outside.
//!
//! The writer is ours and allocation-light (it runs on every signed response): members sorted
//! by UTF-16 code units (a byte comparison when both names are ASCII, which gives the same
//! order), strings escaped as RFC 8785 says (only `"`, `\\` and U+0000–U+001F), numbers by the
//! ECMAScript rule (`ryu-js`: `1.0` → `1`, `1e16` → `10000000000000000`). Parsing is ours too:
//! `serde_json` silently keeps the last of duplicate members, so [`parse_strict`] uses its own
//! visitor that refuses them, and refuses integers outside ±(2^53−1), which would not survive
//! the trip through an IEEE double.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// The largest integer that JCS (IEEE double) represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Canonical bytes of `value` (RFC 8785).
pub fn canonicalize(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

/// Appends the canonical bytes of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_str(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(map, out),
    }
}

/// Appends the canonical bytes of the object `map` to `out`.
pub fn write_object(map: &Map<String, Value>, out: &mut Vec<u8>) {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
    out.push(b'{');
    for (i, (key, item)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(key, out);
        out.push(b':');
        write_canonical(item, out);
    }
    out.push(b'}');
}

/// Orders member names by their UTF-16 code units, as RFC 8785 §3.2.3 requires.
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.as_bytes().cmp(b.as_bytes())
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

fn write_number(number: &Number, out: &mut Vec<u8>) {
    if let Some(unsigned) = number.as_u64().filter(|u| *u <= MAX_SAFE_INTEGER) {
        out.extend_from_slice(unsigned.to_string().as_bytes());
    } else if let Some(signed) = number
        .as_i64()
        .filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER)
    {
        out.extend_from_slice(signed.to_string().as_bytes());
    } else {
        // Fractions, exponents and integers beyond 2^53 are IEEE doubles under JCS.
        let float = number.as_f64().unwrap_or(0.0);
        let mut buffer = ryu_js::Buffer::new();
        out.extend_from_slice(buffer.format(float).as_bytes());
    }
}

/// Appends a JSON string in canonical form.
pub fn write_str(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    // Eight bytes at a time while none needs escaping (most text never does); from the first
    // word that holds one, byte by byte.
    let clean = bytes
        .chunks_exact(8)
        .take_while(|word| !needs_escape(u64::from_le_bytes((*word).try_into().unwrap_or([0; 8]))))
        .count()
        * 8;
    for (i, &byte) in bytes.iter().enumerate().skip(clean) {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{byte:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends the decimal digits of `i` (as `i.to_string()` writes them, without allocating).
pub fn write_int(i: i64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let (mut rest, mut at) = (i.unsigned_abs(), digits.len());
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if i < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// Whether any of the eight bytes of `word` is a control character, `"` or a backslash (the bytes a
/// JSON string escapes): the classic test for a zero byte, applied to `word` and to `word`
/// XOR each special byte, exact for whether one exists.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH;
    let control = below(word, 0x20);
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    control | quote | backslash != 0
}

/// `"sha256:" + lowercase hex` of the canonical bytes of `value`.
pub fn digest(value: &Value) -> String {
    sha256_prefixed(&canonicalize(value))
}

/// `"sha256:" + lowercase hex` of `bytes`.
pub fn sha256_prefixed(bytes: &[u8]) -> String {
    hex_digest(&Sha256::digest(bytes))
}

/// `"sha256:" + lowercase hex` of a finished SHA-256 hash.
pub fn hex_digest(hash: &[u8]) -> String {
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for byte in hash {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Parses JSON text the way a verifier must: duplicate member names, lone surrogates,
/// non-finite numbers and integers outside ±(2^53−1) are errors.
///
/// # Errors
/// A human-readable reason, suitable for a 400 message or the CLI's stderr.
pub fn parse_strict(text: &str) -> Result<Value, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = StrictValue {
        safe_integers: true,
    }
    .deserialize(&mut deserializer)
    .map_err(|error| error.to_string())?;
    deserializer.end().map_err(|error| error.to_string())?;
    Ok(value)
}

/// Why a request body was refused by [`parse_request`].
#[derive(Debug, PartialEq, Eq)]
pub enum RequestFault {
    /// A member name appears twice in one object (the reason names it).
    Duplicate(String),
    /// Not JSON at all (the reason says where).
    Syntax(String),
}

/// Parses a request body: like `serde_json`, except that a duplicate member name is refused
/// (a client or proxy reading the first value would otherwise disagree with what bourse acted
/// on). Integer ranges are left to the reader, which names the field.
///
/// # Errors
/// [`RequestFault`].
pub fn parse_request(text: &str) -> Result<Value, RequestFault> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let seed = StrictValue {
        safe_integers: false,
    };
    let classify = |error: serde_json::Error| {
        let reason = error.to_string();
        if reason.starts_with(DUPLICATE) {
            RequestFault::Duplicate(reason)
        } else {
            RequestFault::Syntax(reason)
        }
    };
    let value = seed.deserialize(&mut deserializer).map_err(classify)?;
    deserializer.end().map_err(classify)?;
    Ok(value)
}

/// How a duplicate member is reported (the start of the reason).
const DUPLICATE: &str = "duplicate member name";

/// Checks a value built in-process (not parsed) for numbers JCS cannot carry exactly.
///
/// # Errors
/// Names the first offending integer.
pub fn check_strict(value: &Value) -> Result<(), String> {
    match value {
        Value::Number(number) => check_number(number),
        Value::Array(items) => items.iter().try_for_each(check_strict),
        Value::Object(map) => map.values().try_for_each(check_strict),
        _ => Ok(()),
    }
}

/// An integer must lie within ±(2^53−1): beyond it there is no exact IEEE double. A parsed
/// text's numbers written with a fraction or an exponent are doubles, which full JCS carries
/// ([`parse_strict`] keeps them); a value checked by [`check_strict`] came from a request body,
/// where a double beyond the bound is refused too (every double that large is an integer, as
/// JSON Schema counts them, and the schemas bound every number of such an object).
fn check_number(number: &Number) -> Result<(), String> {
    if let Some(unsigned) = number.as_u64() {
        if unsigned > MAX_SAFE_INTEGER {
            return Err(format!("integer {unsigned} is outside ±(2^53−1)"));
        }
    } else if let Some(signed) = number.as_i64() {
        if signed.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(format!("integer {signed} is outside ±(2^53−1)"));
        }
    } else if let Some(float) = number.as_f64()
        && float.abs() > MAX_SAFE_INTEGER as f64
    {
        return Err(format!("number {float} is outside ±(2^53−1)"));
    }
    Ok(())
}

/// The strict visitor; `safe_integers` also refuses integers outside ±(2^53−1).
#[derive(Clone, Copy)]
struct StrictValue {
    safe_integers: bool,
}

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        let number = Number::from(value);
        if self.safe_integers {
            check_number(&number).map_err(E::custom)?;
        }
        Ok(Value::Number(number))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        let number = Number::from(value);
        if self.safe_integers {
            check_number(&number).map_err(E::custom)?;
        }
        Ok(Value::Number(number))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite numbers are not JSON"))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("{DUPLICATE} {key:?}")));
            }
            let value = access.next_value_seed(self)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors() -> Value {
        let text = include_str!("../../tests/data/jcs_vectors.json");
        serde_json::from_str(text).unwrap()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn integers_are_written_as_their_decimal_text() {
        let mut values = vec![
            0,
            1,
            -1,
            9,
            10,
            -10,
            99,
            100,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        values.extend(
            (0..64)
                .map(|shift| 1i64 << shift)
                .flat_map(|n| [n, n.wrapping_sub(1), n.wrapping_neg()]),
        );
        for i in values {
            let mut written = Vec::new();
            write_int(i, &mut written);
            assert_eq!(String::from_utf8(written).unwrap(), i.to_string());
        }
    }

    #[test]
    fn a_string_is_escaped_wherever_its_special_byte_falls() {
        // Every ASCII byte, and a multi-byte character, at each position of the first words and
        // after them: the eight-byte scan must hand over to the byte loop at the right word.
        let specials = (0u8..0x80)
            .map(|b| char::from(b).to_string())
            .chain(["é€😀".into()]);
        for special in specials {
            for at in 0..20 {
                for len in [at, at + 1, at + 9, 24] {
                    let mut text = "a".repeat(at) + &special;
                    text.push_str(&"b".repeat(len - at));
                    let mut written = Vec::new();
                    write_str(&text, &mut written);
                    assert_eq!(
                        String::from_utf8(written).unwrap(),
                        serde_json::to_string(&text).unwrap(),
                        "{text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn valid_vectors_canonicalize_to_the_expected_bytes() {
        let vectors = vectors();
        for case in vectors["valid"].as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            let mut value = parse_strict(case["input"].as_str().unwrap()).unwrap();
            if let Value::Object(map) = &mut value {
                map.shift_remove("signature");
            }
            let bytes = canonicalize(&value);
            assert_eq!(
                hex(&bytes),
                case["canonical_hex"].as_str().unwrap(),
                "{name}"
            );
            assert_eq!(digest(&value), case["digest"].as_str().unwrap(), "{name}");
        }
    }

    #[test]
    fn reject_vectors_fail_except_floats_which_full_jcs_accepts() {
        let vectors = vectors();
        for case in vectors["reject"].as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            let input = case["input"].as_str().unwrap();
            let reason = case["reason"].as_str().unwrap();
            let parsed = parse_strict(input);
            if matches!(reason, "non-integer" | "-0") {
                assert!(parsed.is_ok(), "{name}: full JCS accepts {input}");
            } else {
                assert!(
                    parsed.is_err(),
                    "{name}: {input} must be refused ({reason})"
                );
            }
        }
    }

    #[test]
    fn float_vectors_follow_the_ecmascript_rule() {
        let vectors = vectors();
        for case in vectors["floats_full_jcs"].as_array().unwrap() {
            let input = case["value_repr"].as_str().unwrap();
            let value = parse_strict(input).unwrap();
            let bytes = canonicalize(&value);
            assert_eq!(
                std::str::from_utf8(&bytes).unwrap(),
                case["jcs"].as_str().unwrap()
            );
        }
    }

    #[test]
    fn check_strict_refuses_unsafe_integers_built_in_process() {
        assert!(check_strict(&serde_json::json!({"a": [1u64 << 53]})).is_err());
        assert!(check_strict(&serde_json::json!({"a": [MAX_SAFE_INTEGER]})).is_ok());
        // Past 2^53 every double is an integer: a request's object refuses it however it is
        // written; the verifier's parser keeps doubles, as full JCS does.
        for text in [
            "1e16",
            "-3.1241410690353212e16",
            "18446744073709551616",
            "1e300",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(check_strict(&value).is_err(), "{text}");
        }
        assert!(parse_strict("1e16").is_ok());
        assert!(parse_strict("9007199254740992").is_err());
        for text in [
            "9007199254740991.0",
            "-9007199254740991",
            "0.5",
            "1e15",
            "-2.5e-300",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(check_strict(&value).is_ok(), "{text}");
            assert!(parse_strict(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn request_bodies_refuse_duplicates_at_any_depth_but_leave_integer_ranges_to_the_reader() {
        assert!(matches!(
            parse_request(r#"{"a": 1, "a": 2}"#),
            Err(RequestFault::Duplicate(_))
        ));
        assert!(matches!(
            parse_request(r#"{"a": [{"b": 1, "b": 1}]}"#),
            Err(RequestFault::Duplicate(_))
        ));
        assert!(matches!(parse_request("{"), Err(RequestFault::Syntax(_))));
        assert_eq!(
            parse_request(r#"{"n": 9007199254740993}"#).unwrap()["n"],
            9_007_199_254_740_993_u64
        );
        assert!(parse_strict(r#"{"n": 9007199254740993}"#).is_err());
    }
}
