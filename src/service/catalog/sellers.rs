//! Sellers: the verified delivery endpoint, the signed requests bourse sends to it, the public
//! seller code, and the payouts a seller of paid listings needs on the instance's card rail
//! ([`require_payouts`], checked when a paid listing is listed and again when it is sold).
//!
//! Protocol (also in llms.txt): bourse POSTs a signed JSON object to the seller's endpoint with
//! `Content-Type: application/json` and `X-Bourse-Request-Type: <type>`:
//! - `bourse.verify` {challenge, sellerHandle, issuedAt} → 200 `{"challenge": <same>}`;
//! - `bourse.fingerprint` {listingId, deliverableRef, sellerHandle, issuedAt} → 200 with the
//!   deliverable's bytes and Content-Type (hashed into the listing's fingerprint, then dropped);
//! - `bourse.delivery` {listingId, purchaseId, deliverableRef, sellerHandle, issuedAt} → 200
//!   with the bytes, relayed live to the buyer.
//!
//! Every body carries a top-level receipt-style `signature`; sellers verify it against
//! `GET /api/signing-key` and refuse stale `issuedAt` values.

use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::crypto::receipt::sign_object;
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::outbound::{self, OutboundError};
use crate::request::catalog::SetDeliveryEndpoint;
use crate::service::App;
use crate::service::rail::Rail;
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::endpoints;
use crate::store::payments as payment_store;

/// The deliverable as fetched from the seller.
pub struct Deliverable {
    pub bytes: Vec<u8>,
    pub content_type: String,
}

/// The seller's delivery endpoint: its URL and when it was verified (`url` and `verifiedAt`
/// null, `verified` false, before any).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub url: Option<String>,
    pub verified: bool,
    pub verified_at: Option<String>,
}

/// `PUT /api/sell/delivery-endpoint` {url}: verifies the endpoint with a signed challenge and
/// stores it only when the echo matches. A failed verification leaves any earlier verified
/// endpoint in place.
///
/// # Errors
/// `INVALID_ARGUMENT` for a bad URL, `DESTINATION_REFUSED` (422) for a forbidden address,
/// `ENDPOINT_VERIFICATION_FAILED` (422) when the endpoint does not answer the challenge.
pub async fn set_endpoint(
    app: &App,
    agent: &AgentRow,
    request: SetDeliveryEndpoint,
) -> Result<Endpoint> {
    let url = request.url;
    let url = outbound::check_url(&url, app.outbound.policy()).map_err(outbound_error)?;
    let (owner_check, me) = (url.clone(), agent.id.clone());
    let owner = app
        .store
        .read(move |conn| endpoints::owner(conn, &owner_check))
        .await?;
    if owner.is_some_and(|owner| owner != me) {
        return Err(endpoint_in_use());
    }
    let challenge = b64url(&random_bytes::<32>());
    let mut body = Map::new();
    body.insert("type".into(), "bourse.verify".into());
    body.insert("challenge".into(), challenge.clone().into());
    body.insert("sellerHandle".into(), agent.handle.clone().into());
    let request = signed_request(app, body);
    let client = app.outbound_verify.clone();
    let target = url.clone();
    let response = run_blocking(move || {
        client.post_json(
            &target,
            &request,
            &[("x-bourse-request-type", "bourse.verify")],
            64 * 1024,
        )
    })
    .await?
    .map_err(|e| match e {
        OutboundError::Denied { .. } => outbound_error(e),
        other => verification_failed(format!("the endpoint could not be reached: {other}")),
    })?;
    if response.status != 200 {
        return Err(verification_failed(format!(
            "the endpoint answered HTTP {} instead of 200",
            response.status
        )));
    }
    let echoed = serde_json::from_slice::<Value>(&response.body)
        .ok()
        .and_then(|v| {
            v.get("challenge")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    if echoed.as_deref() != Some(challenge.as_str()) {
        return Err(verification_failed(
            "the endpoint did not echo the challenge: answer 200 with {\"challenge\": <the value we sent>}".into(),
        ));
    }
    let now = app.now();
    let agent_id = agent.id.clone();
    let stored_url = url.clone();
    let verified_at = now.clone();
    app.store
        .write(move |tx| {
            if endpoints::taken_by_another(tx, &stored_url, &agent_id)? {
                return Err(endpoint_in_use());
            }
            endpoints::upsert(tx, &agent_id, &stored_url, &verified_at)
        })
        .await?;
    Ok(Endpoint {
        url: Some(url),
        verified: true,
        verified_at: Some(now),
    })
}

/// `GET /api/sell/delivery-endpoint`.
///
/// # Errors
/// Database failure.
pub async fn get_endpoint(app: &App, agent: &AgentRow) -> Result<Endpoint> {
    let agent_id = agent.id.clone();
    let stored = app
        .store
        .read(move |conn| verified_endpoint(conn, &agent_id))
        .await?;
    Ok(Endpoint {
        verified: stored.is_some(),
        url: stored.as_ref().map(|(url, _)| url.clone()),
        verified_at: stored.map(|(_, verified_at)| verified_at),
    })
}

/// The seller's verified endpoint (url, verified_at).
///
/// # Errors
/// Database failure.
pub fn verified_endpoint(conn: &Connection, agent_id: &str) -> Result<Option<(String, String)>> {
    endpoints::verified(conn, agent_id)
}

/// Refuses a paid listing (or a paid checkout) from a seller whose payouts are not connected on
/// the card rail `card`.
///
/// # Errors
/// `PAYOUTS_NOT_CONNECTED` (409).
pub fn require_payouts(conn: &Connection, agent_id: &str, card: Rail) -> Result<()> {
    let rail = card.account_name().unwrap_or_default();
    let account = payment_store::account_of(conn, agent_id)?;
    if account.is_some_and(|a| a.status == "complete" && a.rail == rail) {
        return Ok(());
    }
    Err(Error::Conflict {
        code: "PAYOUTS_NOT_CONNECTED",
        message: format!(
            "a paid listing needs connected payouts on this server's {rail} rail: POST /api/sell/register and finish onboarding (free listings need none)"
        ),
    })
}

/// Fetches the deliverable from the seller's endpoint with a signed request
/// (`bourse.fingerprint` without a purchase, `bourse.delivery` with one).
///
/// # Errors
/// `SELLER_ENDPOINT_FAILED` (422) when the endpoint refuses, fails or answers too much.
pub async fn fetch_deliverable(
    app: &App,
    url: &str,
    seller_handle: &str,
    listing_id: &str,
    purchase_id: Option<&str>,
    deliverable_ref: Option<&str>,
) -> Result<Deliverable> {
    let kind = if purchase_id.is_some() {
        "bourse.delivery"
    } else {
        "bourse.fingerprint"
    };
    let mut body = Map::new();
    body.insert("type".into(), kind.into());
    body.insert("listingId".into(), listing_id.into());
    if let Some(purchase_id) = purchase_id {
        body.insert("purchaseId".into(), purchase_id.into());
    }
    body.insert(
        "deliverableRef".into(),
        deliverable_ref.map_or(Value::Null, Value::from),
    );
    body.insert("sellerHandle".into(), seller_handle.into());
    let request = signed_request(app, body);
    let client = app.outbound.clone();
    let target = url.to_owned();
    let limit = app.max_deliverable_bytes;
    let response = run_blocking(move || {
        client.post_json(&target, &request, &[("x-bourse-request-type", kind)], limit)
    })
    .await?
    .map_err(|e| endpoint_failed(format!("fetching the deliverable failed: {e}")))?;
    if response.status != 200 {
        return Err(endpoint_failed(format!(
            "the delivery endpoint answered HTTP {} to {kind}; it must answer 200 with the deliverable",
            response.status
        )));
    }
    Ok(Deliverable {
        content_type: response
            .content_type
            .unwrap_or_else(|| "application/octet-stream".into()),
        bytes: response.body,
    })
}

/// Signs a request body with a fresh `issuedAt`.
fn signed_request(app: &App, mut body: Map<String, Value>) -> Vec<u8> {
    let now = crate::clock::rfc3339(app.clock.wall());
    body.insert("issuedAt".into(), now.clone().into());
    sign_object(&app.keyring, &mut body, &now);
    serde_json::to_vec(&body).expect("a map serializes")
}

/// The seller's public code (`S-` + 6 digits, never `S-000000`, which stays free for examples
/// and tests of an unknown code), assigned on first use and stable after.
///
/// # Errors
/// Database failure.
pub fn seller_code(conn: &Connection, agent_id: &str) -> Result<String> {
    if let Some(code) = agent_store::seller_code(conn, agent_id)? {
        return Ok(code);
    }
    for _ in 0..64 {
        let n = 1 + u32::from_le_bytes(random_bytes::<4>()) % 999_999;
        let code = format!("S-{n:06}");
        if !agent_store::seller_code_taken(conn, &code)? {
            agent_store::set_seller_code(conn, agent_id, &code)?;
            return Ok(code);
        }
    }
    Err(Error::Internal("no free seller code".into()))
}

async fn run_blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("outbound task: {e}")))
}

fn outbound_error(error: OutboundError) -> Error {
    match error {
        OutboundError::InvalidUrl(message) => Error::invalid(format!("`url` {message}")),
        OutboundError::Denied { host, reason } => Error::Unprocessable {
            code: "DESTINATION_REFUSED",
            message: format!(
                "refusing to call {host}: {reason}; delivery endpoints must be public https:// URLs"
            ),
        },
        other => verification_failed(other.to_string()),
    }
}

fn endpoint_in_use() -> Error {
    Error::Conflict {
        code: "ENDPOINT_IN_USE",
        message: "another seller has verified this URL; a delivery endpoint belongs to one seller"
            .into(),
    }
}

fn verification_failed(message: String) -> Error {
    Error::Unprocessable {
        code: "ENDPOINT_VERIFICATION_FAILED",
        message,
    }
}

fn endpoint_failed(message: String) -> Error {
    Error::Unprocessable {
        code: "SELLER_ENDPOINT_FAILED",
        message,
    }
}
