//! Escrow and what sellers and the operator see of money: the escrow clock, the commerce worker
//! (checkout expiry, release), the sandbox clock, shipment, the seller dashboard, the
//! operator's payments view and the receipt check of a payment session. Rails are chosen and
//! called by `checkout`; the sandbox and Stripe rails live in their own modules.
//!
//! Paid money is `held` in the ledger until the escrow clock has run after the first
//! successful delivery (and the shipment, for physical orders); a worker driven by the injected
//! clock then releases it to the seller: in place for rows no money moves for (sandbox,
//! wallet), after the transfer for card rows.

use std::sync::Arc;

use jiff::SignedDuration;
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::clock::rfc3339_after;
use crate::error::{Error, Result};
use crate::request::commerce::{ClockChange, Ship};
use crate::service::rail::Rail;
use crate::service::{App, commerce::checkout};
use crate::store::agents::AgentRow;
use crate::store::payments as store;
use crate::store::settings;

/// Starts the escrow clock of a sale once it is delivered (and shipped, for physical orders).
///
/// # Errors
/// Database failure.
pub fn start_escrow(
    conn: &Connection,
    purchase_id: &str,
    now: jiff::Timestamp,
    hold: std::time::Duration,
) -> Result<()> {
    let Some(order) = store::fulfilment(conn, purchase_id)? else {
        return Ok(());
    };
    if order.delivered_at.is_none() || (order.physical && order.shipped_at.is_none()) {
        return Ok(());
    }
    let hold = SignedDuration::try_from(hold).unwrap_or(SignedDuration::MAX);
    let release_at = rfc3339_after(now, hold);
    store::set_release_at(conn, purchase_id, &release_at)
}

/// Runs forever: every second, expires checkouts and releases escrow whose clock has run (and,
/// on the Stripe rail, makes the refunds and transfers that are due).
pub async fn worker(app: Arc<App>) {
    // Local bookkeeping and Stripe's calls run side by side: a slow or unreachable Stripe never
    // holds back checkout expiry or the release of sandbox and wallet rows.
    let local = async {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let _pass = app.worker_passes.commerce.begin();
            if let Err(error) = expire_and_release(&app).await {
                tracing::warn!(%error, "commerce worker");
            }
        }
    };
    tokio::join!(local, checkout::move_money(&app));
}

/// One pass of the commerce worker's local part: expires checkouts and releases, in place, the
/// held rows whose escrow clock has run and for which no money moves through bourse (sandbox
/// and wallet rows). Card rows are released one by one by the card rail's money pass once their
/// transfer to the seller is made.
async fn expire_and_release(app: &App) -> Result<(usize, usize)> {
    let now = app.now();
    app.store
        .write(move |tx| {
            Ok((
                store::expire_checkouts(tx, &now)?,
                store::release_due_without_payout(tx, &now, Rail::Card.ledger_name())?,
            ))
        })
        .await
}

/// `POST /api/sandbox/clock` {advanceSeconds} or {reset: true} (operator): moves the sandbox
/// clock forward (or back to real time), keeps the offset for restarts, then runs the commerce
/// worker once so its effects are visible at once.
///
/// # Errors
/// `INVALID_ARGUMENT`; `CLOCK_FIXED` (409) when the server's clock cannot move.
pub async fn advance_clock(app: &App, change: ClockChange) -> Result<Value> {
    let moved = match change {
        ClockChange::Advance(seconds) => app.clock.advance(SignedDuration::from_secs(seconds)),
        ClockChange::Reset => app.clock.reset(),
    };
    if !moved {
        return Err(Error::Conflict {
            code: "CLOCK_FIXED",
            message: "this server's clock cannot be moved".into(),
        });
    }
    // Kept, so a restart resumes the moved clock where it is (and a reset stays a reset).
    let stamp = app.now();
    app.store
        .write(move |tx| {
            let total = match (&change, settings::get(tx, settings::SANDBOX_CLOCK_OFFSET)?) {
                (ClockChange::Reset, _) => 0,
                (ClockChange::Advance(seconds), Some(Value::Number(n))) => {
                    n.as_i64().unwrap_or(0).saturating_add(*seconds)
                }
                (ClockChange::Advance(seconds), _) => *seconds,
            };
            settings::put(
                tx,
                settings::SANDBOX_CLOCK_OFFSET,
                &Value::from(total),
                &stamp,
            )
        })
        .await?;
    let (expired, released) = expire_and_release(app).await?;
    Ok(json!({ "now": app.now(), "expiredCheckouts": expired, "releasedRows": released }))
}

/// `POST /api/marketplace/purchases/{id}/ship` {carrier, tracking}: the seller marks a physical
/// order shipped; its escrow clock can then start.
///
/// # Errors
/// `NOT_FOUND`, `NOT_SELLER` (403), `NOT_PHYSICAL` (409), `NOT_PAID` (409).
pub async fn ship(app: &App, seller: &AgentRow, purchase_id: &str, request: Ship) -> Result<Value> {
    let Ship { carrier, tracking } = request;
    let (seller_id, id, now, at) = (
        seller.id.clone(),
        purchase_id.to_owned(),
        app.clock.now(),
        app.now(),
    );
    let hold = app.escrow_hold;
    app.store
        .write(move |tx| {
            let order = store::fulfilment(tx, &id)?.ok_or_else(|| Error::NotFound(format!("no purchase {id:?}")))?;
            if order.seller_id != seller_id {
                return Err(Error::Forbidden { code: "NOT_SELLER", message: "only the seller ships an order".into() });
            }
            if !order.physical {
                return Err(Error::Conflict { code: "NOT_PHYSICAL", message: "only physical listings are shipped".into() });
            }
            if order.status != "paid" && order.status != "delivered" {
                return Err(Error::Conflict { code: "NOT_PAID", message: "an order is shipped once it is paid".into() });
            }
            let shipped_at = store::mark_shipped(tx, &id, &at, &carrier, &tracking)?;
            start_escrow(tx, &id, now, hold)?;
            Ok(json!({ "purchaseId": id, "shippedAt": shipped_at, "carrier": carrier, "tracking": tracking }))
        })
        .await
}

/// `GET /api/sell/dashboard`: the seller's listings (inactive too), sales, escrow and ratings.
///
/// # Errors
/// Database failure.
pub async fn dashboard(app: &App, seller: &AgentRow) -> Result<Value> {
    let seller_id = seller.id.clone();
    let (rows, sales, ratings, orders) = app
        .store
        .read(move |conn| {
            Ok((
                crate::store::listings::of_seller(conn, &seller_id)?,
                store::sales_totals(conn, &seller_id)?,
                // Read fresh: the caller's agent row may come from the known-agents cache.
                crate::store::agents::seller_standing(conn, &seller_id)?,
                store::recent_orders(conn, &seller_id, 100)?,
            ))
        })
        .await?;
    let orders: Vec<Value> = orders
        .into_iter()
        .map(|o| {
            json!({
                "purchaseId": o.purchase_id,
                "listingId": o.listing_id,
                "status": o.status,
                "amountCents": o.amount_cents,
                "sellerNetCents": o.seller_net_cents,
                "createdAt": o.created_at,
                "paidAt": o.paid_at,
                "deliveredAt": o.delivered_at,
                "shippedAt": o.shipped_at,
                "physical": o.physical,
            })
        })
        .collect();
    let listings: Vec<_> = rows
        .iter()
        .map(|row| crate::service::catalog::view::listing_json(app, row))
        .collect();
    let (rating_count, rating_sum, reputation) = ratings;
    let average = (rating_count > 0)
        .then(|| (rating_sum as f64 / rating_count as f64 * 100.0).round() / 100.0);
    Ok(json!({
        "listings": listings,
        "orders": orders,
        "sales": {
            "count": sales.count,
            "grossCents": sales.gross_cents,
            "platformFeeCents": sales.fee_cents,
            "heldCents": sales.held_cents,
            "releasedCents": sales.released_cents,
        },
        "ratings": { "count": rating_count, "average": average },
        "reputation": reputation,
    }))
}

/// Most items of each list in the operator's payments view.
const OPERATOR_LIST_LIMIT: i64 = 100;

/// `GET /api/operator/payments` (operator): where money stands and what needs a hand — escrow
/// held and due, open checkouts, payouts that keep failing, refunds owed to buyers, and the
/// x402 (wallet) sales released to sellers, which the operator pays since the USDC went to the
/// operator's wallet.
///
/// # Errors
/// Database failure.
pub async fn operator_view(app: &App) -> Result<Value> {
    let now = app.now();
    let at = now.clone();
    let (escrow, checkouts, failing, (refunds, refunded), wallet) = app
        .store
        .read(move |conn| {
            Ok((
                store::escrow_totals(conn, &at)?,
                store::open_checkouts(conn, &at)?,
                store::failing_payouts(conn, OPERATOR_LIST_LIMIT)?,
                store::pending_refunds(conn, OPERATOR_LIST_LIMIT)?,
                store::wallet_released(conn, OPERATOR_LIST_LIMIT, Rail::Wallet.ledger_name())?,
            ))
        })
        .await?;
    let failing: Vec<Value> = failing
        .into_iter()
        .map(|f| {
            json!({
                "purchaseId": f.purchase_id,
                "sellerHandle": f.seller_handle,
                "sellerNetCents": f.seller_net_cents,
                "refusedAttempts": f.attempts,
                "error": f.error,
                "retryAt": f.retry_at,
            })
        })
        .collect();
    let refunds: Vec<Value> = refunds
        .into_iter()
        .map(|r| {
            json!({
                "purchaseId": r.purchase_id,
                "paymentRef": r.payment_ref,
                "amountCents": r.amount_cents,
                "refusedAttempts": r.attempts,
                "error": r.error,
                "retryAt": r.retry_at,
                "createdAt": r.created_at,
            })
        })
        .collect();
    let wallet: Vec<Value> = wallet
        .into_iter()
        .map(|w| {
            json!({
                "sellerHandle": w.seller_handle,
                "sales": w.sales,
                "sellerNetCents": w.seller_net_cents,
            })
        })
        .collect();
    let rail = app.card_rail().account_name().unwrap_or_default();
    Ok(json!({
        "now": now,
        "rail": rail,
        "x402Configured": app.x402.is_some(),
        "x402Facilitator": app.x402_facilitator.get(),
        "escrow": {
            "heldRows": escrow.held_rows,
            "heldSellerNetCents": escrow.held_net_cents,
            "dueRows": escrow.due_rows,
        },
        "openCheckouts": checkouts,
        "failingPayouts": failing,
        "pendingRefunds": refunds,
        "refundsMade": refunded,
        "walletReleased": wallet,
    }))
}

/// `GET /api/svcpay/receipts/{session_id}/verify` (public): the signed purchase receipt of a
/// payment session, checked against this instance's keys. The session id is the unguessable
/// capability of the checkout URL, so only its holder can look it up.
///
/// # Errors
/// `NOT_FOUND` for an unknown session; database failure.
pub async fn verify_session_receipt(app: &App, session: &str) -> Result<Value> {
    let key = session.to_owned();
    let purchase = app
        .store
        .read(move |conn| crate::store::purchases::find_by_session(conn, &key))
        .await?
        .ok_or_else(|| Error::NotFound(format!("no payment session {session:?}")))?;
    let receipt: Value = serde_json::from_str(&purchase.receipt)
        .map_err(|e| Error::Internal(format!("stored receipt: {e}")))?;
    let verdict = crate::service::trust::receipts::verify_signed(
        &receipt,
        crate::service::trust::receipts::resolver(&app.keyring),
    )
    // The receipt is ours: a malformed one is a server fault, not the caller's.
    .map_err(|e| Error::Internal(format!("stored receipt: {}", e.public_message())))?;
    let verification =
        serde_json::to_value(verdict).map_err(|e| Error::Internal(format!("verdict: {e}")))?;
    Ok(json!({
        "sessionId": session,
        "purchaseId": purchase.id,
        "rail": purchase.rail,
        "amountCents": purchase.amount_cents,
        "paid": purchase.paid_at.is_some(),
        "paidAt": purchase.paid_at,
        "purchaseStatus": purchase.status,
        "receipt": receipt,
        "verification": verification,
        "note": "The receipt is the purchase's signed receipt as last issued (re-signed when the purchase is paid); `verification` checks its signature against this instance's current and earlier keys. Verify it offline with GET /api/signing-key.",
    }))
}
