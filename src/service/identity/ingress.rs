//! The admission door (`POST /api/ingress`, `GET /api/ingress`, `GET /api/ingress/keys`).
//!
//! A stranger (no account, no API key) presents an Ed25519 public key and a request signed by
//! it: `{publicKey, request: {class, idempotencyKey, issuedAt, purpose?}, signature}`, the
//! signature being Ed25519 over the RFC 8785 canonical JSON of `request`. The door answers with
//! a decision signed by this instance's receipt key: ADMIT or REFUSE, with a reason. Like every
//! public answer it opens with the signed `provenance` block; the decision itself is the body
//! without `provenance`, and its own `decisionSignature` signs it (without
//! `decisionSignature`), so it can be kept and checked apart from the response. (Not named
//! `signature`: `POST /api/verify-receipt {signed}` reads a top-level `signature` before
//! `provenance.receipt`, and `{signed: answer}` must check the whole response.)
//!
//! # Order of checks
//! 1. Shape (400 `INVALID_ARGUMENT`): the three members, a 32-byte key, a 64-byte signature.
//! 2. Signature (401 `UNAUTHENTICATED`): an unsigned or mis-signed request proves nothing and is
//!    not recorded.
//! 3. Class (403 `MISSING_CLASS`): a signed request without `request.class`.
//! 4. The rest of `request` (400): `idempotencyKey` 1–200 characters, `issuedAt` RFC 3339,
//!    `purpose` at most 500 characters, nothing else.
//! 5. Idempotency, per public key: the same `idempotencyKey` with the same request (same
//!    canonical digest) replays the stored answer byte for byte; with a different request it
//!    is 409 `IDEMPOTENCY_CONFLICT`. Replays are free; new decisions count against
//!    [`DECISIONS`] per client IP.
//! 6. Decision: REFUSE `UNKNOWN_CLASS` (not one of the browse classes), REFUSE `STALE_REQUEST`
//!    (`issuedAt` more than [`MAX_SKEW_SECS`] from the server clock), else ADMIT — `ADMITTED`,
//!    or `ALREADY_ADMITTED` with the first admission's id when the key was admitted in that
//!    class before. Refusals are recorded and replayed like admissions.
//!
//! # What admission grants
//! An ADMIT is a signed, offline-verifiable statement that this instance admitted the key in
//! the class at `decidedAt` (its `admissionId` is stable per key and class), and the key is
//! counted in the door's public figures (`GET /api/ingress`). It grants no API key and no right
//! on any other route: to trade or message, an agent registers (`POST /api/agents/register`).

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::crypto::keys::verify_with;
use crate::crypto::receipt;
use crate::crypto::{b64url_decode, jcs};
use crate::error::{Error, Result};
use crate::request::agents::Ingress;
use crate::service::App;
use crate::service::ratelimit::Rule;
use crate::service::trust::provenance::Signer;
use crate::store::ingress::{self as store, DecisionRow};

/// Largest distance between `issuedAt` and the server clock.
pub const MAX_SKEW_SECS: i64 = 300;

/// 30 new decisions per client IP per hour (replays are free).
pub const DECISIONS: Rule = Rule {
    name: "ingress",
    max: 30,
    window: SignedDuration::from_hours(1),
    what: "admission requests",
    per_client: true,
};

/// What an ADMIT grants, stated in every ADMIT and in the door's description.
const GRANTS: &str = "A signed statement that this instance admitted this key in this class, verifiable offline with GET /api/ingress/keys, and a place in the door's public figures (GET /api/ingress). It grants no API key and no right on any other route: register an agent (POST /api/agents/register) to trade or message.";

/// An answer of `POST /api/ingress`: the stored bytes and whether they are a replay.
pub struct Answer {
    pub body: String,
    pub replayed: bool,
}

/// A string member of the signed request, taken as sent (it is covered by the signature).
fn request_str<'a>(
    request: &'a Map<String, Value>,
    name: &str,
    max: usize,
) -> Result<Option<&'a str>> {
    match request.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let count = text.chars().count();
            if count == 0 || count > max || text.chars().any(char::is_control) {
                Err(Error::invalid(format!(
                    "`request.{name}` must be 1–{max} characters without control characters"
                )))
            } else {
                Ok(Some(text))
            }
        }
        Some(_) => Err(Error::invalid(format!("`request.{name}` must be a string"))),
    }
}

/// `POST /api/ingress`.
///
/// # Errors
/// See the module documentation: 400, 401, 403 `MISSING_CLASS`, 409 `IDEMPOTENCY_CONFLICT`,
/// 429, database failure.
pub async fn decide(app: &App, ip: &str, ingress: Ingress) -> Result<Answer> {
    let Ingress {
        public_key,
        request,
        signature,
    } = ingress;
    let request_value = Value::Object(request.clone());
    jcs::check_strict(&request_value).map_err(Error::invalid)?;
    let canonical = jcs::canonicalize(&request_value);
    let signature_bytes = b64url_decode(&signature).map_err(Error::invalid)?;
    verify_with(&public_key, &canonical, &signature_bytes).map_err(|why| {
        Error::Unauthenticated(format!(
            "{why}: sign the RFC 8785 canonical JSON of `request` with the key in `publicKey`"
        ))
    })?;

    let class = match request_str(&request, "class", 64)? {
        Some(class) => class.to_owned(),
        None => {
            return Err(Error::Forbidden {
                code: "MISSING_CLASS",
                message: format!(
                    "a signed admission request must name its `request.class`, one of {}",
                    class_names(app).join(", ")
                ),
            });
        }
    };
    if let Some(key) = request
        .keys()
        .find(|k| !["class", "idempotencyKey", "issuedAt", "purpose"].contains(&k.as_str()))
    {
        return Err(Error::invalid(format!(
            "unknown field `request.{key}`; accepted fields: class, idempotencyKey, issuedAt, purpose"
        )));
    }
    let idempotency_key = request_str(&request, "idempotencyKey", 200)?
        .ok_or_else(|| Error::invalid("`request.idempotencyKey` is required"))?
        .to_owned();
    let issued_at: Timestamp = request_str(&request, "issuedAt", 64)?
        .ok_or_else(|| Error::invalid("`request.issuedAt` is required"))?
        .parse()
        .map_err(|_| Error::invalid("`request.issuedAt` must be an RFC 3339 timestamp"))?;
    request_str(&request, "purpose", 500)?;
    let digest = jcs::sha256_prefixed(&canonical);

    // A replay needs no new decision (and uses no rate budget).
    let (key, idem) = (public_key.clone(), idempotency_key.clone());
    if let Some(answer) = app
        .store
        .read(move |conn| store::find(conn, &key, &idem))
        .await?
    {
        return replay(answer, &digest);
    }
    app.limiter.check(DECISIONS, ip)?;

    let normalized = class.to_ascii_uppercase();
    let known = app.taxonomy.classes.iter().any(|c| c.slug == normalized);
    let now = app.clock.now();
    let skew = (now.as_second() - issued_at.as_second()).abs();
    let (decided_at, classes) = (app.now(), class_names(app));
    let keyring = app.keyring.clone();
    let signer = Signer::of(app);
    let verify_keys = app.url("/api/ingress/keys");
    app.store
        .write(move |tx| {
            if let Some(answer) = store::find(tx, &public_key, &idempotency_key)? {
                return replay(answer, &digest);
            }
            let (decision, reason, message, class_out, admission_id) = if !known {
                (
                    "REFUSE",
                    "UNKNOWN_CLASS",
                    format!("`{class}` is not a class of this marketplace; use one of {}", classes.join(", ")),
                    None,
                    None,
                )
            } else if skew > MAX_SKEW_SECS {
                (
                    "REFUSE",
                    "STALE_REQUEST",
                    format!("`issuedAt` is {skew} s from the server clock; at most {MAX_SKEW_SECS} s is accepted: sign a fresh request with a new idempotencyKey"),
                    Some(normalized),
                    None,
                )
            } else if let Some(id) = store::admission_for(tx, &public_key, &normalized)? {
                ("ADMIT", "ALREADY_ADMITTED", "this key was admitted in this class before; the admission is unchanged".to_owned(), Some(normalized), Some(id))
            } else {
                let id = format!("adm_{}", uuid::Uuid::new_v4().simple());
                ("ADMIT", "ADMITTED", "admitted".to_owned(), Some(normalized), Some(id))
            };
            let mut answer = Map::new();
            answer.insert("decision".into(), decision.into());
            answer.insert("reason".into(), reason.into());
            answer.insert("message".into(), message.into());
            answer.insert("publicKey".into(), public_key.clone().into());
            answer.insert("class".into(), json!(class_out));
            answer.insert("idempotencyKey".into(), idempotency_key.clone().into());
            answer.insert("requestDigest".into(), digest.clone().into());
            answer.insert("decidedAt".into(), decided_at.clone().into());
            if let Some(id) = &admission_id {
                answer.insert("admissionId".into(), id.clone().into());
                answer.insert("grants".into(), GRANTS.into());
            }
            answer.insert("verifyKeys".into(), verify_keys.into());
            let decision_signature =
                receipt::sign_payload(&keyring, &Value::Object(answer.clone()), &decided_at);
            answer.insert(
                "decisionSignature".into(),
                Value::Object(decision_signature),
            );
            // Stored exactly as sent, provenance block included, so that a replay is the
            // same bytes (its receipt keeps the decision's time).
            let body = String::from_utf8(signer.sign_response(answer))
                .map_err(|e| Error::Internal(format!("signed answer: {e}")))?;
            store::insert(
                tx,
                &DecisionRow {
                    public_key,
                    idempotency_key,
                    request_digest: digest,
                    decision,
                    reason,
                    class: class_out,
                    admission_id,
                    answer: body.clone(),
                    created_at: decided_at,
                },
            )?;
            Ok(Answer { body, replayed: false })
        })
        .await
}

/// The stored answer for a repeated idempotency key, or 409 when the request differs.
fn replay((stored_digest, body): (String, String), digest: &str) -> Result<Answer> {
    if stored_digest == digest {
        Ok(Answer {
            body,
            replayed: true,
        })
    } else {
        Err(Error::Conflict {
            code: "IDEMPOTENCY_CONFLICT",
            message: "this idempotencyKey was used by this key for a different request; use a new idempotencyKey".into(),
        })
    }
}

fn class_names(app: &App) -> Vec<String> {
    app.taxonomy
        .classes
        .iter()
        .map(|c| c.slug.clone())
        .collect()
}

/// `GET /api/ingress`: how to use the door, and its public figures.
#[derive(Clone, Debug, Serialize)]
pub struct Door {
    pub door: String,
    pub method: &'static str,
    pub request: RequestShape,
    pub classes: Vec<ClassName>,
    pub decisions: Decisions,
    pub errors: ErrorCodes,
    pub replay: &'static str,
    pub grants: &'static str,
    pub verification: Verification,
    pub figures: Figures,
    pub limits: Limits,
}

/// What a door request holds, member by member.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestShape {
    pub public_key: &'static str,
    pub request: SignedShape,
    pub signature: &'static str,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedShape {
    pub class: String,
    pub idempotency_key: &'static str,
    pub issued_at: String,
    pub purpose: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct ClassName {
    pub slug: String,
    pub name: String,
}

/// The outcomes of each decision.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub struct Decisions {
    pub admit: [&'static str; 2],
    pub refuse: [&'static str; 2],
}

/// The refusals that are errors, not decisions.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct ErrorCodes {
    pub missing_class: &'static str,
    pub idempotency_conflict: &'static str,
    pub unauthenticated: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    pub keys: String,
    pub recipe: &'static str,
}

/// The door's public figures.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub admitted_keys: i64,
    pub refusals: i64,
    /// Every class of the taxonomy, then any other class admitted in the past, in that order.
    pub by_class: ByClass,
}

/// Admitted keys by class, as a JSON object in the order of its entries.
#[derive(Clone, Debug, Default)]
pub struct ByClass(pub Vec<(String, Admitted)>);

impl ByClass {
    /// Sets `class`'s figure, in place when it is already listed.
    fn set(&mut self, class: String, admitted: Admitted) {
        match self.0.iter_mut().find(|(listed, _)| *listed == class) {
            Some((_, figure)) => *figure = admitted,
            None => self.0.push((class, admitted)),
        }
    }
}

impl Serialize for ByClass {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(class, figure)| (class, figure)))
    }
}

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Admitted {
    pub admitted_keys: i64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub new_decisions_per_ip_per_hour: usize,
    pub max_skew_seconds: i64,
}

/// `GET /api/ingress`: how to use the door, and its public figures.
///
/// # Errors
/// Database failure.
pub async fn describe(app: &App) -> Result<Door> {
    let (counts, admitted_keys) = app
        .store
        .read(|conn| Ok((store::counts(conn)?, store::admitted_keys(conn)?)))
        .await?;
    let mut by_class = ByClass::default();
    for class in &app.taxonomy.classes {
        by_class.set(class.slug.clone(), Admitted { admitted_keys: 0 });
    }
    let mut refusals = 0;
    for (decision, class, rows, keys) in counts {
        if decision == "ADMIT" {
            if let Some(class) = class {
                by_class.set(
                    class,
                    Admitted {
                        admitted_keys: keys,
                    },
                );
            }
        } else {
            refusals += rows;
        }
    }
    Ok(Door {
        door: app.url("/api/ingress"),
        method: "POST",
        request: RequestShape {
            public_key: "the stranger's Ed25519 public key, 32 bytes, unpadded base64url",
            request: SignedShape {
                class: format!(
                    "required: one of {} (the browse classes)",
                    class_names(app).join(", ")
                ),
                idempotency_key: "required, 1–200 characters; unique per public key",
                issued_at: format!(
                    "required, RFC 3339, within {MAX_SKEW_SECS} s of the server clock"
                ),
                purpose: "optional, at most 500 characters",
            },
            signature: "Ed25519 by publicKey over the RFC 8785 canonical JSON of `request`, 64 bytes, unpadded base64url",
        },
        classes: app
            .taxonomy
            .classes
            .iter()
            .map(|c| ClassName {
                slug: c.slug.clone(),
                name: c.name.clone(),
            })
            .collect(),
        decisions: Decisions {
            admit: ["ADMITTED", "ALREADY_ADMITTED"],
            refuse: ["UNKNOWN_CLASS", "STALE_REQUEST"],
        },
        errors: ErrorCodes {
            missing_class: "403: a correctly signed request without request.class",
            idempotency_conflict: "409: an idempotencyKey reused by the same key for a different request",
            unauthenticated: "401: the signature does not verify",
        },
        replay: "The same signed request (same key, same idempotencyKey, same canonical request) replays the first answer byte for byte, with the header Idempotent-Replayed: true.",
        grants: GRANTS,
        verification: Verification {
            keys: app.url("/api/ingress/keys"),
            recipe: "The decision: remove `provenance` and `decisionSignature` from the answer; digest = sha256: + hex SHA-256 of its RFC 8785 canonical JSON; check it equals decisionSignature.digest, then verify the Ed25519 signature over the ASCII string keyId.signedAt.digest with the public key of decisionSignature.keyId (or POST /api/verify-receipt {receipt: decisionSignature, payload: that object}). The whole response: POST /api/verify-receipt {signed: answer}.",
        },
        figures: Figures {
            admitted_keys,
            refusals,
            by_class,
        },
        limits: Limits {
            new_decisions_per_ip_per_hour: DECISIONS.max,
            max_skew_seconds: MAX_SKEW_SECS,
        },
    })
}

/// `GET /api/ingress/keys`: the public keys that verify ingress answers offline.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoorKeys {
    pub alg: &'static str,
    pub keys: Vec<DoorKey>,
    pub signed_input: &'static str,
    pub encoding: &'static str,
    pub note: &'static str,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoorKey {
    pub key_id: String,
    pub public_key: String,
    pub created_at: String,
    pub current: bool,
}

/// `GET /api/ingress/keys`: the public keys that verify ingress answers offline.
pub fn keys(app: &App) -> DoorKeys {
    let key = |record: &crate::crypto::keys::PublicKeyRecord, current| DoorKey {
        key_id: record.key_id.clone(),
        public_key: record.public_key.clone(),
        created_at: record.created_at.clone(),
        current,
    };
    let mut keys = vec![key(app.keyring.current(), true)];
    keys.extend(app.keyring.previous().iter().map(|k| key(k, false)));
    DoorKeys {
        alg: receipt::ALG,
        keys,
        signed_input: "keyId.signedAt.digest (ASCII), digest = sha256: + hex SHA-256 of the RFC 8785 canonical JSON of the answer without `provenance` and `decisionSignature`",
        encoding: "public keys and signatures are unpadded base64url",
        note: "The door signs with this instance's receipt keys: the same keys as GET /api/signing-key, listed here so that an ingress answer can be checked with nothing else.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_by_class_keep_their_first_place_when_updated() {
        let mut by_class = ByClass::default();
        by_class.set("b".into(), Admitted { admitted_keys: 0 });
        by_class.set("a".into(), Admitted { admitted_keys: 0 });
        by_class.set("b".into(), Admitted { admitted_keys: 2 });
        by_class.set("z".into(), Admitted { admitted_keys: 1 });
        assert_eq!(
            serde_json::to_string(&by_class).unwrap(),
            r#"{"b":{"admittedKeys":2},"a":{"admittedKeys":0},"z":{"admittedKeys":1}}"#
        );
    }
}
