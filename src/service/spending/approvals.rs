//! Approval above a threshold (the page and its decision: `commerce::approvals`): a paid purchase costing more than its buyer's
//! `approvalThresholdCents` opens in `pending_approval` (holding its amount) and the buyer is
//! answered 202 with the URL of a single-use page for the agent's owner, `/approve/{id}`. The
//! id is the capability (`apr_` + 256 random bits; only its SHA-256 is stored, never the
//! purchase id). The page shows what, from whom, how much and on which rail, with Approve and
//! Deny; its form carries an anti-forgery token derived from the capability
//! ([`App::form_token`]). Approved, the purchase goes on as one under the threshold would
//! (`pending_payment`, the checkout open for the usual window); denied, it is `denied`;
//! undecided by its expiry (the policy's `approvalTtlHours`, 24 by default), the commerce worker
//! marks it `expired`. Denied and expired purchases give their amount back. Once decided the
//! page shows the decision and changes nothing. Each decision (approved, denied, expired) is
//! pushed to the buyer's callback URL as a signed `purchase.approval_decided` callback, queued in
//! the deciding transaction (`commerce::approvals::queue_decided`).

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::clock::rfc3339_after;
use crate::error::{Error, Result};
use crate::service::App;
use crate::store::approvals::{self as store, ApprovalRow};
use crate::store::purchases::PurchaseRow;

/// The URL of the approval page of `capability`.
pub fn page_url(app: &App, capability: &str) -> String {
    app.url(&format!("/approve/{capability}"))
}

/// When an approval asked at `now` expires.
///
/// # Errors
/// `Internal` for an unreadable clock reading.
pub fn expiry(now: &str, ttl_secs: i64) -> Result<String> {
    let at: Timestamp = now
        .parse()
        .map_err(|e| Error::Internal(format!("clock reading {now:?}: {e}")))?;
    Ok(rfc3339_after(at, SignedDuration::from_secs(ttl_secs)))
}

/// Records the approval of a purchase just opened in `pending_approval` (in its transaction).
///
/// # Errors
/// Database failure.
pub fn record(
    tx: &rusqlite::Connection,
    purchase: &PurchaseRow,
    id_hash: &str,
    now: &str,
) -> Result<()> {
    store::insert(
        tx,
        &ApprovalRow {
            id_hash: id_hash.to_owned(),
            purchase_id: purchase.id.clone(),
            buyer_id: purchase.buyer_id.clone().unwrap_or_default(),
            created_at: now.to_owned(),
            expires_at: purchase.expires_at.clone().unwrap_or_default(),
            decision: None,
            decided_at: None,
        },
    )
}

/// Marks the approvals undecided past their expiry expired, with their purchases (the commerce
/// worker, by the injected clock); returns those purchases' ids (`commerce::approvals::expire_due`
/// queues their callbacks).
///
/// # Errors
/// Database failure.
pub fn expire_due(tx: &rusqlite::Connection, now: &str) -> Result<Vec<String>> {
    store::expire_due(tx, now)
}

/// An approval waiting for the owner, as `GET /api/agents/me/spending` lists it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OpenApproval {
    pub purchase_id: String,
    pub listing_id: String,
    pub amount_cents: i64,
    pub rail: String,
    pub created_at: String,
    pub expires_at: String,
}

/// The buyer's approvals waiting at `now`.
///
/// # Errors
/// Database failure.
pub fn open_for(
    conn: &rusqlite::Connection,
    buyer_id: &str,
    now: &str,
) -> Result<Vec<OpenApproval>> {
    Ok(store::open_for_buyer(conn, buyer_id, now)?
        .into_iter()
        .map(|a| OpenApproval {
            purchase_id: a.purchase_id,
            listing_id: a.listing_id,
            amount_cents: a.amount_cents,
            rail: a.rail,
            created_at: a.created_at,
            expires_at: a.expires_at,
        })
        .collect())
}
