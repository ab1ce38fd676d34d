//! Personal health data: the signed consent flow that lists a person's own health data
//! (`POST /api/marketplace/listings/health`, MCP `list_health_data`) and the buyer's use check.
//!
//! # The consent (`healthConsent`)
//! ```json
//! {"ownership": {"ownData": true, "adult": true, "noThirdPartyData": true, "voluntary": true},
//!  "saleTerms": {"acceptSaleTerms": true, "buyersKeepCopies": true, "noRecall": true},
//!  "authorizedUses": ["academic_research", "ai_training"],
//!  "deidentificationLevel": "name_removed",
//!  "stateAuthorizations": {"state": "CA", "generalAuthorization": true, "cmiaAuthorization": true}}
//! ```
//! Every affirmation must be `true`; `authorizedUses` is a non-empty subset of the buyer's
//! intended-use vocabulary; `deidentificationLevel` is `full_identified` or `name_removed`;
//! `stateAuthorizations.state` is a two-letter US state or territory code or `NON_US`, and
//! `generalAuthorization` is always required, plus the state's own authorization where a state
//! law on consumer health data asks for one (see [`STATE_AUTHORIZATIONS`]). A missing or false
//! affirmation is 422 `HEALTH_CONSENT_REQUIRED` naming it; a malformed member is 400.
//!
//! # The record
//! bourse signs the consent as a record (`kind: bourse.health-consent`, terms version, listing
//! id, seller id and handle, time, and the consent as given) with its receipt key; the record
//! is stored with the listing in the same transaction, returned at creation and shown on the
//! listing detail. A buyer's `buyer_intended_use` must be one of the listing's
//! `authorizedUses` (else 422 `HEALTH_USE_NOT_AUTHORIZED`).

use serde_json::{Map, Value, json};

use crate::crypto::keys::Keyring;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::service::trust::receipts::Signed;

/// The version of the consent terms this server records.
pub const TERMS_VERSION: i64 = 1;

const OWNERSHIP: &[&str] = &["ownData", "adult", "noThirdPartyData", "voluntary"];
const SALE_TERMS: &[&str] = &["acceptSaleTerms", "buyersKeepCopies", "noRecall"];
pub use crate::request::commerce::{ATTESTATIONS, INTENDED_USES};
/// De-identification choices.
pub const LEVELS: &[&str] = &["full_identified", "name_removed"];
/// States whose consumer-health-data laws ask for their own authorization, and its field.
pub const STATE_AUTHORIZATIONS: &[(&str, &str)] = &[
    ("CA", "cmiaAuthorization"),
    ("CT", "ctConsumerHealthDataConsent"),
    ("NV", "nvConsumerHealthDataAuthorization"),
    ("WA", "mhmdaAuthorization"),
];
const STATES: &[&str] = &[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA",
    "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM",
    "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA",
    "WV", "WI", "WY", "PR", "GU", "VI", "AS", "MP", "NON_US",
];

/// A validated consent.
pub struct Consent {
    given: Value,
    pub uses: Vec<String>,
    pub level: String,
}

fn missing(field: &str) -> Error {
    Error::Unprocessable {
        code: "HEALTH_CONSENT_REQUIRED",
        message: format!(
            "personal health data is listed only with a complete consent: `healthConsent.{field}` must be true"
        ),
    }
}

fn object<'a>(parent: &'a Map<String, Value>, name: &str) -> Result<&'a Map<String, Value>> {
    match parent.get(name) {
        Some(Value::Object(map)) => Ok(map),
        None | Some(Value::Null) => Err(Error::Unprocessable {
            code: "HEALTH_CONSENT_REQUIRED",
            message: format!("`healthConsent.{name}` is required"),
        }),
        Some(_) => Err(Error::invalid(format!(
            "`healthConsent.{name}` must be an object"
        ))),
    }
}

/// Every `required` member must be `true`; members outside `accepted` are refused.
fn affirmations(
    map: &Map<String, Value>,
    section: &str,
    accepted: &[&str],
    required: &[&str],
) -> Result<()> {
    if let Some(key) = map.keys().find(|k| !accepted.contains(&k.as_str())) {
        return Err(Error::invalid(format!(
            "unknown field `healthConsent.{section}.{key}`; accepted: {}",
            accepted.join(", ")
        )));
    }
    if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_boolean()) {
        return Err(Error::invalid(format!(
            "`healthConsent.{section}.{key}` must be a boolean"
        )));
    }
    for key in required {
        match map.get(*key) {
            Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) | None | Some(Value::Null) => {
                return Err(missing(&format!("{section}.{key}")));
            }
            Some(_) => {
                return Err(Error::invalid(format!(
                    "`healthConsent.{section}.{key}` must be a boolean"
                )));
            }
        }
    }
    Ok(())
}

/// Validates `healthConsent` against the buyer's intended-use vocabulary `uses_allowed`.
///
/// # Errors
/// 422 `HEALTH_CONSENT_REQUIRED` for a missing or false affirmation; 400 for a malformed one.
pub fn parse(value: Option<&Value>, uses_allowed: &[&str]) -> Result<Consent> {
    let consent = match value {
        Some(Value::Object(map)) => map,
        None | Some(Value::Null) => {
            return Err(Error::Unprocessable {
                code: "HEALTH_CONSENT_REQUIRED",
                message: "`healthConsent` is required: ownership, saleTerms, authorizedUses, deidentificationLevel, stateAuthorizations".into(),
            });
        }
        Some(_) => return Err(Error::invalid("`healthConsent` must be an object")),
    };
    let sections = [
        "ownership",
        "saleTerms",
        "authorizedUses",
        "deidentificationLevel",
        "stateAuthorizations",
    ];
    if let Some(key) = consent.keys().find(|k| !sections.contains(&k.as_str())) {
        return Err(Error::invalid(format!(
            "unknown field `healthConsent.{key}`; accepted: {}",
            sections.join(", ")
        )));
    }
    affirmations(
        object(consent, "ownership")?,
        "ownership",
        OWNERSHIP,
        OWNERSHIP,
    )?;
    affirmations(
        object(consent, "saleTerms")?,
        "saleTerms",
        SALE_TERMS,
        SALE_TERMS,
    )?;

    let uses: Vec<String> = match consent.get("authorizedUses") {
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut uses = Vec::new();
            for item in items {
                match item.as_str() {
                    // Each use once, as the contract's `uniqueItems` says.
                    Some(u) if uses.iter().any(|x| x == u) => {
                        return Err(Error::invalid(format!(
                            "`healthConsent.authorizedUses` names {u} twice; each use once"
                        )));
                    }
                    Some(u) if uses_allowed.contains(&u) => uses.push(u.to_owned()),
                    _ => {
                        return Err(Error::invalid(format!(
                            "`healthConsent.authorizedUses` items must be among {}",
                            uses_allowed.join(", ")
                        )));
                    }
                }
            }
            uses
        }
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            return Err(Error::Unprocessable {
                code: "HEALTH_CONSENT_REQUIRED",
                message: format!(
                    "`healthConsent.authorizedUses` must name at least one use among {}",
                    uses_allowed.join(", ")
                ),
            });
        }
        Some(_) => {
            return Err(Error::invalid(
                "`healthConsent.authorizedUses` must be an array",
            ));
        }
    };
    let level = match consent.get("deidentificationLevel") {
        Some(Value::String(level)) if LEVELS.contains(&level.as_str()) => level.clone(),
        None | Some(Value::Null) => {
            return Err(Error::Unprocessable {
                code: "HEALTH_CONSENT_REQUIRED",
                message: "`healthConsent.deidentificationLevel` is required: full_identified or name_removed".into(),
            });
        }
        Some(_) => {
            return Err(Error::invalid(
                "`healthConsent.deidentificationLevel` must be full_identified or name_removed",
            ));
        }
    };

    let state_map = object(consent, "stateAuthorizations")?;
    let state = match state_map.get("state") {
        Some(Value::String(s)) if STATES.contains(&s.as_str()) => s.clone(),
        None | Some(Value::Null) => {
            return Err(Error::Unprocessable {
                code: "HEALTH_CONSENT_REQUIRED",
                message: "`healthConsent.stateAuthorizations.state` is required: a two-letter US state or territory code, or NON_US".into(),
            });
        }
        Some(_) => {
            return Err(Error::invalid(
                "`healthConsent.stateAuthorizations.state` must be a two-letter US state or territory code (upper case) or NON_US",
            ));
        }
    };
    let mut required = vec!["generalAuthorization"];
    if let Some((_, field)) = STATE_AUTHORIZATIONS.iter().find(|(s, _)| *s == state) {
        required.push(field);
    }
    let mut flags = state_map.clone();
    flags.remove("state");
    let accepted: Vec<&str> = std::iter::once("generalAuthorization")
        .chain(STATE_AUTHORIZATIONS.iter().map(|(_, field)| *field))
        .collect();
    affirmations(&flags, "stateAuthorizations", &accepted, &required)?;

    Ok(Consent {
        given: Value::Object(consent.clone()),
        uses,
        level,
    })
}

/// The signed consent record of a new listing.
pub fn record(
    keyring: &Keyring,
    consent: &Consent,
    listing_id: &str,
    seller: (&str, &str),
    now: &str,
) -> Signed {
    let Value::Object(mut record) = json!({
        "kind": "bourse.health-consent",
        "termsVersion": TERMS_VERSION,
        "listingId": listing_id,
        "sellerId": seller.0,
        "sellerHandle": seller.1,
        "recordedAt": now,
        "consent": consent.given,
    }) else {
        unreachable!("built as an object")
    };
    sign_object(keyring, &mut record, now);
    Signed(record)
}

/// Refuses a buyer whose intended use the seller did not authorize.
///
/// # Errors
/// 422 `HEALTH_USE_NOT_AUTHORIZED`.
pub fn check_use(authorized: Option<&str>, intended: &str) -> Result<()> {
    let uses: Vec<String> = authorized
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    if uses.iter().any(|u| u == intended) {
        Ok(())
    } else {
        Err(Error::Unprocessable {
            code: "HEALTH_USE_NOT_AUTHORIZED",
            message: format!(
                "the seller authorized only these uses: {}; `buyer_intended_use` {intended:?} is not one of them",
                uses.join(", ")
            ),
        })
    }
}
