//! Signed objects: signing, and the verification verdict.
//!
//! A signed object is a JSON object with a top-level `signature` member:
//! `{"alg":"ed25519","keyId","signedAt","digest":"sha256:<hex>","signature":"<base64url>"}`.
//! `digest` is SHA-256 over the RFC 8785 canonical JSON of the object without its top-level
//! `signature`; the Ed25519 signature covers the ASCII string `keyId.signedAt.digest`.
//! The provenance block of a response uses the same signature object at `provenance.receipt`.

use serde::Serialize;
use serde_json::{Map, Value};

use super::keys::{Keyring, PublicKeyRecord, verify_with};
use super::{b64url, b64url_decode, jcs};

/// The only algorithm we sign with.
pub const ALG: &str = "ed25519";

/// Builds the signature object for `payload` (which must not contain the signature itself).
pub fn sign_payload(keyring: &Keyring, payload: &Value, signed_at: &str) -> Map<String, Value> {
    sign_digest(keyring, jcs::digest(payload), signed_at)
}

/// Builds the signature object for an already computed `sha256:` digest.
pub fn sign_digest(keyring: &Keyring, digest: String, signed_at: &str) -> Map<String, Value> {
    let key_id = &keyring.current().key_id;
    let input = format!("{key_id}.{signed_at}.{digest}");
    let signature = keyring.sign(input.as_bytes());
    let mut block = Map::new();
    block.insert("alg".into(), ALG.into());
    block.insert("keyId".into(), key_id.clone().into());
    block.insert("signedAt".into(), signed_at.into());
    block.insert("digest".into(), digest.into());
    block.insert("signature".into(), b64url(&signature).into());
    block
}

/// Signs an object in place: any old top-level `signature` is replaced by a fresh one.
pub fn sign_object(keyring: &Keyring, object: &mut Map<String, Value>, signed_at: &str) {
    object.shift_remove("signature");
    let payload = Value::Object(std::mem::take(object));
    let block = sign_payload(keyring, &payload, signed_at);
    let Value::Object(map) = payload else {
        unreachable!("built as an object above")
    };
    *object = map;
    object.insert("signature".into(), Value::Object(block));
}

/// The answer of `POST /api/verify-receipt` and `bourse verify`.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Digest matches and the signature verifies under a known key.
    pub valid: bool,
    /// The key id the signature names.
    pub key_id: String,
    /// The key id resolves to a current or earlier key of this server.
    pub key_known: bool,
    /// The key id is the server's current key.
    pub key_current: bool,
    /// The recomputed digest equals `signature.digest`.
    pub digest_matches: bool,
    /// Why the verdict is invalid; `null` when valid.
    pub reason: Option<String>,
}

/// The parts of a signature object that verification reads.
pub struct SignatureFields<'a> {
    pub alg: &'a str,
    pub key_id: &'a str,
    pub signed_at: &'a str,
    pub digest: &'a str,
    pub signature: &'a str,
}

impl<'a> SignatureFields<'a> {
    /// Reads the string members of a signature object. `signature.value` is accepted for the
    /// signature string too, as in the shared test vectors.
    ///
    /// # Errors
    /// Names the first member that is missing or not a string (the request is malformed).
    pub fn read(block: &'a Value) -> Result<SignatureFields<'a>, String> {
        let Value::Object(map) = block else {
            return Err("the signature must be an object".into());
        };
        let field = |name: &str| -> Result<&'a str, String> {
            match map.get(name) {
                Some(Value::String(text)) => Ok(text.as_str()),
                Some(_) => Err(format!("signature.{name} must be a string")),
                None => Err(format!("signature.{name} is required")),
            }
        };
        let signature = match map.get("signature") {
            Some(Value::String(text)) => text.as_str(),
            Some(_) => return Err("signature.signature must be a string".into()),
            None => field("value").map_err(|_| "signature.signature is required".to_owned())?,
        };
        Ok(SignatureFields {
            alg: field("alg")?,
            key_id: field("keyId")?,
            signed_at: field("signedAt")?,
            digest: field("digest")?,
            signature,
        })
    }
}

/// Verifies `payload` against a signature object, resolving the key through `resolve`
/// (which answers the key record and whether it is current).
pub fn verify(
    fields: &SignatureFields<'_>,
    payload: &Value,
    resolve: impl Fn(&str) -> Option<(PublicKeyRecord, bool)>,
) -> Verdict {
    let recomputed = jcs::digest(payload);
    let digest_matches = recomputed == fields.digest;
    let resolved = resolve(fields.key_id);
    let mut verdict = Verdict {
        valid: false,
        key_id: fields.key_id.to_owned(),
        key_known: resolved.is_some(),
        key_current: resolved.as_ref().is_some_and(|(_, current)| *current),
        digest_matches,
        reason: None,
    };
    let reason = if !fields.alg.eq_ignore_ascii_case(ALG) {
        Some(format!(
            "unsupported alg {:?}; expected \"ed25519\"",
            fields.alg
        ))
    } else if !valid_key_id(fields.key_id) {
        Some("keyId must match ^[A-Za-z0-9_-]{1,128}$".to_owned())
    } else if !valid_signed_at(fields.signed_at) {
        Some("signedAt must be an RFC 3339 UTC timestamp ending in Z".to_owned())
    } else if !digest_matches {
        Some(format!(
            "digest mismatch: the payload hashes to {recomputed}"
        ))
    } else if let Some((record, _)) = &resolved {
        let input = format!("{}.{}.{}", fields.key_id, fields.signed_at, fields.digest);
        b64url_decode(fields.signature)
            .and_then(|signature| verify_with(&record.public_key, input.as_bytes(), &signature))
            .err()
    } else {
        Some(format!("unknown keyId {:?}", fields.key_id))
    };
    verdict.valid = reason.is_none();
    verdict.reason = reason;
    verdict
}

/// Splits a whole signed document into (signature object, payload): a top-level `signature`
/// member, else a `provenance.receipt` block.
///
/// # Errors
/// When the document carries neither.
pub fn split_signed(document: &Value) -> Result<(Value, Value), String> {
    let Value::Object(map) = document else {
        return Err("a signed document must be a JSON object".into());
    };
    let mut payload = map.clone();
    if let Some(signature) = payload.shift_remove("signature") {
        return Ok((signature, Value::Object(payload)));
    }
    if let Some(Value::Object(provenance)) = payload.get_mut("provenance")
        && let Some(receipt) = provenance.shift_remove("receipt")
    {
        return Ok((receipt, Value::Object(payload)));
    }
    Err("the document has neither a top-level signature nor a provenance.receipt".into())
}

fn valid_key_id(key_id: &str) -> bool {
    (1..=128).contains(&key_id.len())
        && key_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn valid_signed_at(signed_at: &str) -> bool {
    signed_at.ends_with('Z') && signed_at.parse::<jiff::Timestamp>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_compact::{KeyPair, Seed};

    #[test]
    fn shared_signed_receipt_vector_reproduces_byte_for_byte() {
        let vectors: Value =
            serde_json::from_str(include_str!("../../tests/data/jcs_vectors.json")).unwrap();
        let case = &vectors["signed_receipt"];
        let seed_hex = case["seed_hex"].as_str().unwrap();
        let seed: Vec<u8> = (0..seed_hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&seed_hex[i..i + 2], 16).unwrap())
            .collect();
        let pair = KeyPair::from_seed(Seed::from_slice(&seed).unwrap());
        assert_eq!(
            b64url(pair.pk.as_ref()),
            case["public_key_b64url"].as_str().unwrap()
        );

        let document = jcs::parse_strict(case["receipt_text"].as_str().unwrap()).unwrap();
        let (block, payload) = split_signed(&document).unwrap();
        assert_eq!(jcs::digest(&payload), case["digest"].as_str().unwrap());
        let fields = SignatureFields::read(&block).unwrap();
        let input = format!("{}.{}.{}", fields.key_id, fields.signed_at, fields.digest);
        assert_eq!(input, case["signing_input"].as_str().unwrap());
        let signature = pair.sk.sign(input.as_bytes(), None);
        assert_eq!(
            b64url(signature.as_ref()),
            case["signature_b64url"].as_str().unwrap()
        );

        let record = PublicKeyRecord {
            key_id: fields.key_id.to_owned(),
            public_key: b64url(pair.pk.as_ref()),
            created_at: "2026-01-01T00:00:00Z".into(),
            retired_at: None,
        };
        let verdict = verify(&fields, &payload, |_| Some((record.clone(), true)));
        assert!(verdict.valid, "{verdict:?}");
    }

    #[test]
    fn sign_then_verify_and_a_flipped_character_fails() {
        let dir = tempfile::tempdir().unwrap();
        let keyring =
            Keyring::load_or_create(&dir.path().join("k"), "2026-01-01T00:00:00.000Z").unwrap();
        let mut object = serde_json::json!({"b": 1.5, "a": "héllo", "nested": {"signature": 1}})
            .as_object()
            .unwrap()
            .clone();
        sign_object(&keyring, &mut object, "2026-11-21T04:00:00.123Z");
        let document = Value::Object(object);
        let resolve = |id: &str| keyring.find(id).map(|r| (r.clone(), true));
        let (block, payload) = split_signed(&document).unwrap();
        assert!(verify(&SignatureFields::read(&block).unwrap(), &payload, resolve).valid);

        let mut tampered = payload.clone();
        tampered["a"] = "hello".into();
        let verdict = verify(&SignatureFields::read(&block).unwrap(), &tampered, resolve);
        assert!(!verdict.valid && !verdict.digest_matches);
    }
}
