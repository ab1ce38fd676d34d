//! Receipt verification for `POST /api/verify-receipt`, and the signing-key document.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::crypto::jcs;
use crate::crypto::keys::{Keyring, PublicKeyRecord};
use crate::crypto::receipt::{self, SignatureFields, Verdict};
use crate::error::{Error, Result};
use crate::service::App;

/// A signed record (a listing's history entry, a health consent record, a rating's
/// attestation): JSON whose members are fixed by its signature, so it is kept and passed on
/// exactly as signed rather than as a type of ours.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Signed(pub Map<String, Value>);

impl Signed {
    /// A stored record read back; `None` when the text is not a JSON object.
    pub fn parse(text: &str) -> Option<Signed> {
        serde_json::from_str(text).ok().map(Signed)
    }
}

impl std::fmt::Display for Signed {
    /// The record as JSON text (as stored).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_string(&self.0) {
            Ok(text) => f.write_str(&text),
            Err(_) => Err(std::fmt::Error),
        }
    }
}

/// `GET /api/signing-key`: the current key plus every earlier one.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SigningKey<'a> {
    pub alg: &'static str,
    pub key_id: &'a str,
    pub public_key: &'a str,
    pub created_at: &'a str,
    pub previous_keys: &'a [PublicKeyRecord],
    pub verify: String,
    /// The transparency log's newest checkpoint (`GET /log/checkpoint`).
    pub log_checkpoint: String,
    /// The signed-note verifier key of the log's checkpoints.
    pub log_verifier_key: String,
}

/// `GET /api/signing-key`.
pub fn signing_key(app: &App) -> SigningKey<'_> {
    let current = app.keyring.current();
    SigningKey {
        alg: receipt::ALG,
        key_id: &current.key_id,
        public_key: &current.public_key,
        created_at: &current.created_at,
        previous_keys: app.keyring.previous(),
        verify: app.url("/api/verify-receipt"),
        log_checkpoint: app.url("/log/checkpoint"),
        log_verifier_key: super::log::verifier_key(app),
    }
}

/// Resolves a key id against a keyring: the record and whether it is current.
pub fn resolver(keyring: &Keyring) -> impl Fn(&str) -> Option<(PublicKeyRecord, bool)> + '_ {
    move |key_id| {
        keyring
            .find(key_id)
            .map(|record| (record.clone(), record.key_id == keyring.current().key_id))
    }
}

/// Verifies a request body of either form: `{receipt, payload}` or `{signed}`.
/// The body is parsed strictly (duplicate members, unsafe integers refused).
///
/// # Errors
/// `INVALID_JSON` / `INVALID_ARGUMENT` when the request is malformed; an invalid signature is
/// not an error but a verdict with `valid: false`.
pub fn verify_request(
    body: &str,
    resolve: impl Fn(&str) -> Option<(PublicKeyRecord, bool)>,
) -> Result<Verdict> {
    let request = jcs::parse_strict(body)
        .map_err(|error| Error::InvalidJson(format!("the body is not valid JSON: {error}")))?;
    let Value::Object(request) = request else {
        return Err(Error::invalid("the body must be a JSON object"));
    };
    if let Some(unknown) = request
        .keys()
        .find(|k| !["signed", "receipt", "payload"].contains(&k.as_str()))
    {
        return Err(Error::invalid(format!(
            "unknown field `{unknown}`; accepted fields: signed, receipt, payload"
        )));
    }
    match (
        request.get("signed"),
        request.get("receipt"),
        request.get("payload"),
    ) {
        (Some(signed), None, None) => verify_signed(signed, resolve),
        (None, Some(block), Some(payload)) => {
            if !payload.is_object() {
                return Err(Error::invalid("`payload` must be a JSON object"));
            }
            let fields = SignatureFields::read(block).map_err(Error::InvalidArgument)?;
            Ok(receipt::verify(&fields, payload, resolve))
        }
        _ => Err(Error::invalid(
            "send either {\"receipt\": <signature object>, \"payload\": <object without signature>} or {\"signed\": <whole signed object>}",
        )),
    }
}

/// Verifies a whole signed document: its top-level `signature`, else its `provenance.receipt`.
///
/// # Errors
/// `INVALID_ARGUMENT` when the document carries no well-formed signature object; a signature
/// that does not verify is a verdict with `valid: false`.
pub fn verify_signed(
    document: &Value,
    resolve: impl Fn(&str) -> Option<(PublicKeyRecord, bool)>,
) -> Result<Verdict> {
    let (block, payload) = receipt::split_signed(document).map_err(Error::InvalidArgument)?;
    let fields = SignatureFields::read(&block).map_err(Error::InvalidArgument)?;
    Ok(receipt::verify(&fields, &payload, resolve))
}
