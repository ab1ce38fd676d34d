//! The Stripe rail's wire: a small form-encoded client for the few calls bourse makes, and the
//! verification of `Stripe-Signature` on incoming webhooks.
//!
//! Every POST carries an `Idempotency-Key` derived from local ids, so a retry after a crash or
//! a timeout never creates a second object. The API base is the operator's own setting (Stripe,
//! or a local fake in tests), not user input, so this client is not the SSRF-guarded one; it
//! still follows no redirects and reads no proxy settings.

use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::StripeSettings;
use crate::error::{Error, Result};

/// The Stripe API version every call pins with `Stripe-Version`, so the account's default
/// version never decides the shapes bourse parses. bourse reads, in that version: Checkout
/// Session `id`, `url`, `expires_at`, `payment_intent`, `client_reference_id`; PaymentIntent
/// `latest_charge` (or `charges.data[0].id` on accounts still answering the older shape);
/// Account `id`, `payouts_enabled`; Account Link `url`, `expires_at`; Transfer and Refund `id`;
/// errors' `error.message`, `error.code`, `error.type`. Webhook events arrive in the version of
/// their endpoint: create the endpoint with this version (`api_version` in the Dashboard or
/// API).
pub const API_VERSION: &str = "2023-08-16";

/// Why a Stripe call failed.
#[derive(Debug)]
pub enum Failure {
    /// Stripe answered with an error (its HTTP status, message, `error.code` and `error.type`).
    Api {
        status: u16,
        message: String,
        code: Option<String>,
        kind: Option<String>,
    },
    /// No answer (connection, timeout, unreadable body): the outcome is unknown, so a retry
    /// must reuse the same idempotency key.
    Transport(String),
    /// Not sent: something it needs is missing (the seller has no Stripe account).
    NotSent(String),
}

impl Failure {
    /// What happened, for the operator (kept with the retried payout or refund).
    pub fn describe(&self) -> String {
        match self {
            Failure::Api {
                status,
                message,
                code,
                ..
            } => match code {
                Some(code) => format!("Stripe refused (HTTP {status}, {code}): {message}"),
                None => format!("Stripe refused (HTTP {status}): {message}"),
            },
            Failure::Transport(message) => format!("no answer from Stripe: {message}"),
            Failure::NotSent(message) => format!("not sent: {message}"),
        }
    }
}

impl From<Failure> for Error {
    fn from(failure: Failure) -> Error {
        match failure {
            Failure::Api {
                status, message, ..
            } => {
                tracing::warn!(status, %message, "Stripe refused a request");
                Error::BadGateway {
                    code: "STRIPE_ERROR",
                    message: format!(
                        "the payment provider refused the request (HTTP {status}); the operator's log has the detail"
                    ),
                }
            }
            Failure::Transport(message) | Failure::NotSent(message) => Error::BadGateway {
                code: "STRIPE_UNAVAILABLE",
                message: format!("Stripe could not be reached: {message}"),
            },
        }
    }
}

/// A client for one Stripe account.
pub struct Client {
    agent: ureq::Agent,
    settings: StripeSettings,
}

impl Client {
    /// A client with deadlines, no redirects and no proxy.
    pub fn new(settings: StripeSettings) -> Client {
        let config = ureq::Agent::config_builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(30)))
            .user_agent("bourse/1.0")
            .build();
        Client {
            agent: crate::outbound::configured_agent(config),
            settings,
        }
    }

    /// The webhook endpoints' signing secrets (comma-separated in the setting: the platform
    /// endpoint and the Connect endpoint each have their own).
    pub fn webhook_secrets(&self) -> Vec<&str> {
        self.settings
            .webhook_secret
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// Whether the key is a live-mode key (events of the other mode are ignored).
    pub fn livemode(&self) -> bool {
        self.settings.is_live()
    }

    /// `POST {api_base}{path}`, form-encoded, with an idempotency key (blocking).
    ///
    /// # Errors
    /// [`Failure`].
    pub fn post(
        &self,
        path: &str,
        params: &[(&str, String)],
        idempotency_key: &str,
    ) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.settings.api_base);
        let response = self
            .agent
            .post(&url)
            .header(
                "authorization",
                format!("Bearer {}", self.settings.secret_key),
            )
            .header("idempotency-key", idempotency_key)
            .header("stripe-version", API_VERSION)
            .send_form(params.iter().map(|(k, v)| (*k, v.as_str())));
        read(response)
    }

    /// `GET {api_base}{path}` (blocking).
    ///
    /// # Errors
    /// [`Failure`].
    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.settings.api_base);
        let response = self
            .agent
            .get(&url)
            .header(
                "authorization",
                format!("Bearer {}", self.settings.secret_key),
            )
            .header("stripe-version", API_VERSION)
            .call();
        read(response)
    }
}

fn read(
    response: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<Value, Failure> {
    let mut response = response.map_err(|e| Failure::Transport(e.to_string()))?;
    let status = response.status().as_u16();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_vec()
        .map_err(|e| Failure::Transport(format!("unreadable answer (HTTP {status}): {e}")))?;
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::Transport(format!("answer is not JSON (HTTP {status}): {e}")))?;
    if (200..300).contains(&status) {
        return Ok(body);
    }
    let error = &body["error"];
    Err(Failure::Api {
        status,
        message: error["message"].as_str().unwrap_or("no message").to_owned(),
        code: error["code"].as_str().map(str::to_owned),
        kind: error["type"].as_str().map(str::to_owned),
    })
}

/// Runs a blocking Stripe call off the async executor.
///
/// # Errors
/// The call's [`Failure`], or a transport failure when the task dies.
pub async fn call<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(Failure::Transport(format!("task: {e}"))))
}

/// The USD amounts Stripe Checkout accepts, in cents.
pub const MIN_AMOUNT_CENTS: i64 = 50;
pub const MAX_AMOUNT_CENTS: i64 = 99_999_999;

/// Refuses a price Stripe Checkout cannot charge, before anything is reserved.
///
/// # Errors
/// `PRICE_OUT_OF_RANGE_FOR_RAIL` (422).
pub fn check_amount(cents: i64) -> Result<()> {
    if (MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS).contains(&cents) {
        return Ok(());
    }
    Err(Error::Unprocessable {
        code: "PRICE_OUT_OF_RANGE_FOR_RAIL",
        message: format!(
            "Stripe Checkout charges from {MIN_AMOUNT_CENTS} to {MAX_AMOUNT_CENTS} cents; this listing's price cannot be paid by card here"
        ),
    })
}

/// How far a webhook's timestamp may be from now, as Stripe's libraries default.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// Checks `Stripe-Signature` (`t=<unix>,v1=<hex>[,v1=…]`) over the raw body: HMAC-SHA256 keyed
/// with the whole `whsec_…` string, over `<t>.<body>`; any `v1` may match any of the secrets
/// (secret rotation, several endpoints); compared in constant time; `t` within the tolerance of
/// `now_unix`.
///
/// # Errors
/// 400 `STRIPE_SIGNATURE_MISSING`, `STRIPE_SIGNATURE_INVALID` (malformed or no match) or
/// `STRIPE_SIGNATURE_STALE`.
pub fn verify_signature(
    header: Option<&str>,
    body: &[u8],
    secrets: &[&str],
    now_unix: i64,
) -> Result<()> {
    let refuse = |code: &'static str, message: &str| Error::BadRequest {
        code,
        message: message.to_owned(),
    };
    let header = header.ok_or_else(|| {
        refuse(
            "STRIPE_SIGNATURE_MISSING",
            "the Stripe-Signature header is missing",
        )
    })?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value),
            _ => {}
        }
    }
    let (Some(t), false) = (timestamp, signatures.is_empty()) else {
        return Err(refuse(
            "STRIPE_SIGNATURE_INVALID",
            "Stripe-Signature needs t=<unix seconds> and at least one v1=<hex>",
        ));
    };
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    let expected: Vec<String> = secrets
        .iter()
        .map(|secret| hex(&hmac_sha256(secret.as_bytes(), &signed)))
        .collect();
    let matched = signatures.iter().any(|candidate| {
        expected
            .iter()
            .any(|e| constant_time_eq(candidate.as_bytes(), e.as_bytes()))
    });
    if !matched {
        return Err(refuse(
            "STRIPE_SIGNATURE_INVALID",
            "no v1 signature matches this body and the webhook secret",
        ));
    }
    if (now_unix - t).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err(refuse(
            "STRIPE_SIGNATURE_STALE",
            "the signature's timestamp is more than 300 s from now",
        ));
    }
    Ok(())
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The `id` of a Stripe object, checked against its prefix.
pub fn object_id(object: &Value, prefix: &str) -> Result<String> {
    object["id"]
        .as_str()
        .filter(|id| id.starts_with(prefix))
        .map(str::to_owned)
        .ok_or_else(|| malformed(&format!("an answer without a {prefix}… id")))
}

/// `STRIPE_ERROR` (502) for an answer bourse cannot use.
pub fn malformed(what: &str) -> Error {
    Error::BadGateway {
        code: "STRIPE_ERROR",
        message: format!("Stripe sent {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A key longer than the block is hashed first (RFC 4231 case 6).
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn stripe_signature_vector_and_every_refusal() {
        let good = "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925";
        let body = br#"{"id":"evt_1"}"#;
        let check = |header: Option<&str>, now: i64| {
            verify_signature(header, body, &["whsec_other", "whsec_test"], now)
                .map_err(|e| e.code())
        };
        assert_eq!(
            check(Some(&format!("t=1700000000,v1={good}")), 1_700_000_000),
            Ok(())
        );
        // Any v1 may match; other schemes are ignored.
        assert_eq!(
            check(
                Some(&format!("t=1700000000,v0=00,v1=deadbeef,v1={good}")),
                1_700_000_100
            ),
            Ok(())
        );
        assert_eq!(check(None, 1_700_000_000), Err("STRIPE_SIGNATURE_MISSING"));
        assert_eq!(
            check(Some("garbage"), 1_700_000_000),
            Err("STRIPE_SIGNATURE_INVALID")
        );
        assert_eq!(
            check(Some("t=1700000000,v1=deadbeef"), 1_700_000_000),
            Err("STRIPE_SIGNATURE_INVALID")
        );
        assert_eq!(
            check(Some(&format!("t=1700000000,v1={good}")), 1_700_000_301),
            Err("STRIPE_SIGNATURE_STALE")
        );
        assert_eq!(
            check(Some(&format!("t=1700000000,v1={good}")), 1_700_000_300),
            Ok(())
        );
    }
}
