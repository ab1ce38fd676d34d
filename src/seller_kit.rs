//! What a seller's delivery endpoint needs to check bourse's signed requests.
//!
//! bourse POSTs JSON to the seller's verified delivery URL (`Content-Type: application/json`,
//! header `X-Bourse-Request-Type: <type>`). Every body is a signed object: a top-level
//! `signature` member `{alg, keyId, signedAt, digest, signature}` over the RFC 8785 canonical
//! JSON of the rest of the body, exactly like bourse's receipts. Three types exist:
//!
//! | `type` | fields | the endpoint answers |
//! |---|---|---|
//! | `bourse.verify` | `challenge`, `sellerHandle`, `issuedAt` | 200 `{"challenge": <the same value>}` |
//! | `bourse.fingerprint` | `listingId`, `deliverableRef` (string or null), `sellerHandle`, `issuedAt` | 200 with the deliverable's bytes and Content-Type |
//! | `bourse.delivery` | `listingId`, `purchaseId`, `deliverableRef`, `sellerHandle`, `issuedAt` | 200 with the deliverable's bytes and Content-Type |
//!
//! A seller must check the signature against bourse's public keys ([`Keys::fetch`] reads
//! `GET {bourse}/api/signing-key`), refuse a request whose `issuedAt` is more than
//! [`MAX_SKEW`] away from its own clock, and refuse unknown types: 401 for a bad signature,
//! 400 for a malformed or stale request ([`Refusal::status`]). [`verify_request`] does all of
//! that; canonicalization and signature checks are those of [`crate::crypto`].
//!
//! `examples/seller_endpoint.rs` is a complete endpoint built on this module.

use std::fmt;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value};

use crate::crypto::keys::PublicKeyRecord;
use crate::crypto::receipt::{self, SignatureFields};
use crate::crypto::{b64url_decode, jcs};

/// `type` of the endpoint-ownership challenge.
pub const TYPE_VERIFY: &str = "bourse.verify";
/// `type` of a fingerprint fetch (bourse hashes the bytes, then discards them).
pub const TYPE_FINGERPRINT: &str = "bourse.fingerprint";
/// `type` of a live delivery (bourse relays the bytes to the buyer).
pub const TYPE_DELIVERY: &str = "bourse.delivery";
/// The header that repeats the body's `type` (informational: only the body is signed).
pub const REQUEST_TYPE_HEADER: &str = "x-bourse-request-type";
/// How far `issuedAt` may be from the seller's clock, either way.
pub const MAX_SKEW: SignedDuration = SignedDuration::from_secs(300);
/// A generous cap for a request body; real requests are a few hundred bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A verified request from bourse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignedRequest {
    /// `bourse.verify`: answer `{"challenge": challenge}`.
    Verify {
        challenge: String,
        seller_handle: String,
    },
    /// `bourse.fingerprint`: answer the deliverable's bytes.
    Fingerprint {
        listing_id: String,
        deliverable_ref: Option<String>,
        seller_handle: String,
    },
    /// `bourse.delivery`: answer the deliverable's bytes.
    Delivery {
        listing_id: String,
        purchase_id: String,
        deliverable_ref: Option<String>,
        seller_handle: String,
    },
}

impl SignedRequest {
    /// The wire `type` (`bourse.verify`, `bourse.fingerprint`, `bourse.delivery`).
    pub fn type_name(&self) -> &'static str {
        match self {
            SignedRequest::Verify { .. } => TYPE_VERIFY,
            SignedRequest::Fingerprint { .. } => TYPE_FINGERPRINT,
            SignedRequest::Delivery { .. } => TYPE_DELIVERY,
        }
    }

    /// The seller the request is addressed to.
    pub fn seller_handle(&self) -> &str {
        match self {
            SignedRequest::Verify { seller_handle, .. }
            | SignedRequest::Fingerprint { seller_handle, .. }
            | SignedRequest::Delivery { seller_handle, .. } => seller_handle,
        }
    }
}

/// Why a request was refused; [`Refusal::status`] is the HTTP status to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// Not JSON, not an object, unsigned, or a field missing or of the wrong type (400).
    Malformed,
    /// `issuedAt` is too far from the seller's clock (400).
    Stale,
    /// A well-formed signature names a key id the seller does not know; refetching the keys
    /// may help after a rotation (401).
    UnknownKey,
    /// The digest or signature does not verify (401).
    BadSignature,
    /// A signed, fresh request of a type this kit does not know (400).
    UnknownType,
    /// A valid request for another seller: someone verified this endpoint, or replays a
    /// request, under a handle that is not the seller's (403).
    WrongSeller,
}

/// A refused request: its kind and a short human-readable reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

impl Refusal {
    fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }

    fn malformed(message: impl Into<String>) -> Refusal {
        Refusal::new(RefusalKind::Malformed, message)
    }

    /// 401 for signature problems, 400 for everything else.
    pub fn status(&self) -> u16 {
        match self.kind {
            RefusalKind::UnknownKey | RefusalKind::BadSignature => 401,
            RefusalKind::Malformed | RefusalKind::Stale | RefusalKind::UnknownType => 400,
            RefusalKind::WrongSeller => 403,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The bourse public keys a seller trusts.
#[derive(Clone, Debug)]
pub struct Keys {
    trust: Trust,
}

#[derive(Clone, Debug)]
enum Trust {
    /// One key, whatever `keyId` the signature names.
    AnyId(String),
    /// Keys by id, as served by `GET /api/signing-key`.
    Records(Vec<PublicKeyRecord>),
}

impl Keys {
    /// Trusts one raw Ed25519 public key (unpadded base64url) for any `keyId`.
    pub fn from_public_key(b64url: &str) -> Keys {
        Keys {
            trust: Trust::AnyId(b64url.trim().to_owned()),
        }
    }

    /// Trusts these key records, matched by `keyId`. A record with `retired_at` set only
    /// verifies signatures made (`signedAt`) no later than its retirement.
    pub fn from_records(records: Vec<PublicKeyRecord>) -> Keys {
        Keys {
            trust: Trust::Records(records),
        }
    }

    /// Reads a signing-key document (`{keyId, publicKey, createdAt, previousKeys: [...]}`, the
    /// body of `GET /api/signing-key`).
    ///
    /// # Errors
    /// A missing or mistyped field, or a public key that is not 32 bytes of base64url.
    pub fn from_document(document: &Value) -> Result<Keys, String> {
        let current: PublicKeyRecord = serde_json::from_value(document.clone())
            .map_err(|e| format!("not a signing-key document: {e}"))?;
        let previous: Vec<PublicKeyRecord> = match document.get("previousKeys") {
            None | Some(Value::Null) => Vec::new(),
            Some(list) => serde_json::from_value(list.clone())
                .map_err(|e| format!("bad previousKeys: {e}"))?,
        };
        let records: Vec<PublicKeyRecord> = std::iter::once(current).chain(previous).collect();
        for record in &records {
            let bytes = b64url_decode(&record.public_key)
                .map_err(|e| format!("key {}: {e}", record.key_id))?;
            if bytes.len() != 32 {
                return Err(format!("key {}: not a 32-byte public key", record.key_id));
            }
        }
        Ok(Keys::from_records(records))
    }

    /// Fetches `GET {bourse_base_url}/api/signing-key` with a plain agent (http is allowed: the
    /// seller chooses which bourse to trust) and a 10 s timeout.
    ///
    /// # Errors
    /// The request fails, or the answer is not a signing-key document.
    pub fn fetch(bourse_base_url: &str) -> Result<Keys, String> {
        let url = format!("{}/api/signing-key", bourse_base_url.trim_end_matches('/'));
        let agent = crate::outbound::configured_agent(
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(10)))
                .build(),
        );
        let text = agent
            .get(&url)
            .call()
            .map_err(|e| format!("cannot fetch {url}: {e}"))?
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("cannot read {url}: {e}"))?;
        let document: Value =
            serde_json::from_str(&text).map_err(|e| format!("{url} did not answer JSON: {e}"))?;
        Keys::from_document(&document).map_err(|e| format!("{url}: {e}"))
    }

    /// Whether a signature naming `key_id` can be checked with these keys.
    pub fn knows(&self, key_id: &str) -> bool {
        self.record(key_id).is_some()
    }

    fn record(&self, key_id: &str) -> Option<PublicKeyRecord> {
        match &self.trust {
            Trust::AnyId(public_key) => Some(PublicKeyRecord {
                key_id: key_id.to_owned(),
                public_key: public_key.clone(),
                created_at: String::new(),
                retired_at: None,
            }),
            Trust::Records(records) => records.iter().find(|r| r.key_id == key_id).cloned(),
        }
    }
}

/// Verifies a request body: strict JSON parse, signature valid under `keys`, `issuedAt`
/// within `max_skew` of `now`, known type with its fields.
///
/// # Errors
/// A short reason; [`check_request`] says which kind of refusal it is.
pub fn verify_request(
    body: &[u8],
    keys: &Keys,
    now: Timestamp,
    max_skew: SignedDuration,
) -> Result<SignedRequest, String> {
    check_request(body, keys, now, max_skew).map_err(|refusal| refusal.message)
}

/// [`check_request`], then refuses a request addressed to another seller. An endpoint must
/// know its own handle and answer only for it: otherwise any agent could verify this endpoint's
/// URL as its own and sell what it serves.
///
/// # Errors
/// As [`check_request`], or `WrongSeller` (403).
pub fn check_request_for(
    body: &[u8],
    keys: &Keys,
    now: Timestamp,
    max_skew: SignedDuration,
    seller_handle: &str,
) -> Result<SignedRequest, Refusal> {
    let request = check_request(body, keys, now, max_skew)?;
    if !request.seller_handle().eq_ignore_ascii_case(seller_handle) {
        return Err(Refusal {
            kind: RefusalKind::WrongSeller,
            message: format!(
                "this endpoint serves {seller_handle}, not {}",
                request.seller_handle()
            ),
        });
    }
    Ok(request)
}

/// [`verify_request`] with the kind of refusal, to choose the status (401 or 400) and to
/// refetch the keys on [`RefusalKind::UnknownKey`].
///
/// # Errors
/// See [`RefusalKind`].
pub fn check_request(
    body: &[u8],
    keys: &Keys,
    now: Timestamp,
    max_skew: SignedDuration,
) -> Result<SignedRequest, Refusal> {
    let text =
        std::str::from_utf8(body).map_err(|_| Refusal::malformed("the body is not UTF-8"))?;
    let document = jcs::parse_strict(text)
        .map_err(|e| Refusal::malformed(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(object) = &document else {
        return Err(Refusal::malformed("the body must be a JSON object"));
    };
    if !object.contains_key("signature") {
        return Err(Refusal::new(
            RefusalKind::BadSignature,
            "the request is not signed (no top-level signature)",
        ));
    }
    let (block, payload) = receipt::split_signed(&document).map_err(Refusal::malformed)?;
    let fields = SignatureFields::read(&block).map_err(Refusal::malformed)?;
    let record = keys.record(fields.key_id);
    let verdict = receipt::verify(&fields, &payload, |_| record.clone().map(|r| (r, false)));
    if !verdict.valid {
        let kind = if !verdict.key_known && verdict.digest_matches {
            RefusalKind::UnknownKey
        } else {
            RefusalKind::BadSignature
        };
        let reason = verdict.reason.unwrap_or_default();
        return Err(Refusal::new(kind, format!("bad signature: {reason}")));
    }
    if let Some(retired) = record.as_ref().and_then(|r| r.retired_at.as_deref())
        && let (Ok(retired), Ok(signed)) = (
            retired.parse::<Timestamp>(),
            fields.signed_at.parse::<Timestamp>(),
        )
        && signed > retired
    {
        return Err(Refusal::new(
            RefusalKind::BadSignature,
            format!(
                "bad signature: key {} was retired before signedAt",
                fields.key_id
            ),
        ));
    }

    let Value::Object(payload) = payload else {
        unreachable!("split from an object")
    };
    let kind = string(&payload, "type")?;
    let issued_at = string(&payload, "issuedAt")?;
    let issued: Timestamp = issued_at
        .parse()
        .map_err(|_| Refusal::malformed("issuedAt must be an RFC 3339 timestamp"))?;
    let skew = now.duration_since(issued);
    if skew.abs() > max_skew.abs() {
        return Err(Refusal::new(
            RefusalKind::Stale,
            format!(
                "issuedAt {issued_at} is {}s from this endpoint's clock (at most {}s allowed)",
                skew.as_secs(),
                max_skew.abs().as_secs()
            ),
        ));
    }
    let seller_handle = string(&payload, "sellerHandle")?;
    match kind.as_str() {
        TYPE_VERIFY => Ok(SignedRequest::Verify {
            challenge: string(&payload, "challenge")?,
            seller_handle,
        }),
        TYPE_FINGERPRINT => Ok(SignedRequest::Fingerprint {
            listing_id: string(&payload, "listingId")?,
            deliverable_ref: optional_string(&payload, "deliverableRef")?,
            seller_handle,
        }),
        TYPE_DELIVERY => Ok(SignedRequest::Delivery {
            listing_id: string(&payload, "listingId")?,
            purchase_id: string(&payload, "purchaseId")?,
            deliverable_ref: optional_string(&payload, "deliverableRef")?,
            seller_handle,
        }),
        other => Err(Refusal::new(
            RefusalKind::UnknownType,
            format!("unknown request type {other:?}"),
        )),
    }
}

/// A required, non-empty string member.
fn string(object: &Map<String, Value>, name: &str) -> Result<String, Refusal> {
    match object.get(name) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        Some(Value::String(_)) => Err(Refusal::malformed(format!("{name} must not be empty"))),
        Some(_) => Err(Refusal::malformed(format!("{name} must be a string"))),
        None => Err(Refusal::malformed(format!("{name} is required"))),
    }
}

/// A string member that may be null or absent.
fn optional_string(object: &Map<String, Value>, name: &str) -> Result<Option<String>, Refusal> {
    match object.get(name) {
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Null) | None => Ok(None),
        Some(_) => Err(Refusal::malformed(format!(
            "{name} must be a string or null"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::rfc3339;
    use crate::crypto::keys::Keyring;
    use crate::crypto::receipt::sign_object;
    use serde_json::json;

    const NOW: &str = "2026-11-21T04:00:00Z";

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    fn keyring(dir: &tempfile::TempDir) -> Keyring {
        Keyring::load_or_create(&dir.path().join("signing.key"), &rfc3339(now())).unwrap()
    }

    fn keys_of(keyring: &Keyring) -> Keys {
        Keys::from_records(vec![keyring.current().clone()])
    }

    fn signed(keyring: &Keyring, mut body: Value, at: Timestamp) -> Vec<u8> {
        body["issuedAt"] = rfc3339(at).into();
        let object = body.as_object_mut().unwrap();
        sign_object(keyring, object, &rfc3339(at));
        body.to_string().into_bytes()
    }

    fn delivery() -> Value {
        json!({
            "type": "bourse.delivery",
            "listingId": "5f0c6f7e-55c5-4c3c-9d53-0c7f7e3c9a10",
            "purchaseId": "8a1d2b3c-1111-4c3c-9d53-0c7f7e3c9a10",
            "deliverableRef": null,
            "sellerHandle": "A-7KQ2M9XD",
        })
    }

    #[test]
    fn signed_requests_of_each_type_verify() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = keyring(&dir);
        let keys = keys_of(&keyring);
        let body = signed(&keyring, delivery(), now());
        assert_eq!(
            verify_request(&body, &keys, now(), MAX_SKEW).unwrap(),
            SignedRequest::Delivery {
                listing_id: "5f0c6f7e-55c5-4c3c-9d53-0c7f7e3c9a10".into(),
                purchase_id: "8a1d2b3c-1111-4c3c-9d53-0c7f7e3c9a10".into(),
                deliverable_ref: None,
                seller_handle: "A-7KQ2M9XD".into(),
            }
        );

        let verify = json!({"type": "bourse.verify", "challenge": "c-123", "sellerHandle": "A-1"});
        let body = signed(&keyring, verify, now());
        let request = verify_request(&body, &keys, now(), MAX_SKEW).unwrap();
        assert_eq!(
            request,
            SignedRequest::Verify {
                challenge: "c-123".into(),
                seller_handle: "A-1".into()
            }
        );
        assert_eq!(request.type_name(), TYPE_VERIFY);

        let fingerprint = json!({"type": "bourse.fingerprint", "listingId": "L",
            "deliverableRef": "v2/data.csv", "sellerHandle": "A-1"});
        let body = signed(&keyring, fingerprint, now());
        let by_public_key = Keys::from_public_key(&keyring.current().public_key);
        assert_eq!(
            verify_request(&body, &by_public_key, now(), MAX_SKEW).unwrap(),
            SignedRequest::Fingerprint {
                listing_id: "L".into(),
                deliverable_ref: Some("v2/data.csv".into()),
                seller_handle: "A-1".into()
            }
        );
    }

    #[test]
    fn an_endpoint_that_knows_its_handle_refuses_other_sellers() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = keyring(&dir);
        let keys = keys_of(&keyring);
        let body = signed(&keyring, delivery(), now());
        assert!(check_request_for(&body, &keys, now(), MAX_SKEW, "a-7kq2m9xd").is_ok());
        let refusal = check_request_for(&body, &keys, now(), MAX_SKEW, "A-MALLORY0").unwrap_err();
        assert_eq!(
            (refusal.kind, refusal.status()),
            (RefusalKind::WrongSeller, 403)
        );
    }

    #[test]
    fn a_tampered_field_is_refused_as_a_bad_signature() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = keyring(&dir);
        let body = signed(&keyring, delivery(), now());
        let mut value: Value = serde_json::from_slice(&body).unwrap();
        value["purchaseId"] = "00000000-0000-4000-8000-000000000000".into();
        let tampered = value.to_string().into_bytes();
        let refusal = check_request(&tampered, &keys_of(&keyring), now(), MAX_SKEW).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::BadSignature, "{refusal}");
        assert_eq!(refusal.status(), 401);
        assert!(verify_request(&tampered, &keys_of(&keyring), now(), MAX_SKEW).is_err());

        let mut value: Value = serde_json::from_slice(&body).unwrap();
        value.as_object_mut().unwrap().shift_remove("signature");
        let unsigned = value.to_string().into_bytes();
        let refusal = check_request(&unsigned, &keys_of(&keyring), now(), MAX_SKEW).unwrap_err();
        assert_eq!(refusal.status(), 401, "{refusal}");
    }

    #[test]
    fn a_stale_or_future_issued_at_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = keyring(&dir);
        let keys = keys_of(&keyring);
        for offset in [-301, 301] {
            let at = now() + SignedDuration::from_secs(offset);
            let body = signed(&keyring, delivery(), at);
            let refusal = check_request(&body, &keys, now(), MAX_SKEW).unwrap_err();
            assert_eq!(refusal.kind, RefusalKind::Stale, "{refusal}");
            assert_eq!(refusal.status(), 400);
        }
        let body = signed(&keyring, delivery(), now() - SignedDuration::from_secs(299));
        assert!(verify_request(&body, &keys, now(), MAX_SKEW).is_ok());
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = keyring(&dir);
        let other_dir = tempfile::tempdir().unwrap();
        let other = Keys::from_records(vec![self::keyring(&other_dir).current().clone()]);
        let body = signed(&keyring, delivery(), now());
        let refusal = check_request(&body, &other, now(), MAX_SKEW).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::UnknownKey, "{refusal}");
        assert!(!other.knows(&keyring.current().key_id));

        // A single trusted key that is not the signer's: the signature itself fails.
        let other_key = Keys::from_public_key(&self::keyring(&other_dir).current().public_key);
        let refusal = check_request(&body, &other_key, now(), MAX_SKEW).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::BadSignature, "{refusal}");
    }

    #[test]
    fn a_retired_key_verifies_only_what_it_signed_before_retirement() {
        let dir = tempfile::tempdir().unwrap();
        let mut keyring = keyring(&dir);
        let old_body = signed(&keyring, delivery(), now());
        let later = now() + SignedDuration::from_secs(60);
        let late_body = signed(&keyring, delivery(), later);
        keyring.rotate(&rfc3339(now() + SignedDuration::from_secs(30)));
        let document = json!({
            "keyId": keyring.current().key_id,
            "publicKey": keyring.current().public_key,
            "createdAt": keyring.current().created_at,
            "previousKeys": keyring.previous(),
        });
        let keys = Keys::from_document(&document).unwrap();
        assert!(verify_request(&old_body, &keys, now(), MAX_SKEW).is_ok());
        let refusal = check_request(&late_body, &keys, later, MAX_SKEW).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::BadSignature, "{refusal}");
    }

    #[test]
    fn an_unknown_type_or_missing_field_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let keyring = keyring(&dir);
        let keys = keys_of(&keyring);
        let mut unknown = delivery();
        unknown["type"] = "bourse.refund".into();
        let body = signed(&keyring, unknown, now());
        let refusal = check_request(&body, &keys, now(), MAX_SKEW).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::UnknownType, "{refusal}");
        assert_eq!(refusal.status(), 400);

        let mut missing = delivery();
        missing.as_object_mut().unwrap().shift_remove("purchaseId");
        let body = signed(&keyring, missing, now());
        let refusal = check_request(&body, &keys, now(), MAX_SKEW).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::Malformed, "{refusal}");

        for junk in [&b"not json"[..], b"[1]", b"{\"a\":1,\"a\":2}"] {
            let refusal = check_request(junk, &keys, now(), MAX_SKEW).unwrap_err();
            assert_eq!(refusal.status(), 400, "{refusal}");
        }
    }
}
