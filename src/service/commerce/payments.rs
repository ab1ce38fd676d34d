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
use serde::Serialize;
use serde_json::Value;

use crate::clock::rfc3339_after;
use crate::crypto::receipt::Verdict;
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
    let keyring = app.keyring.clone();
    app.store
        .write(move |tx| {
            let expired =
                store::expire_checkouts(tx, &now)? + super::approvals::expire_due(tx, &now)?;
            let released = store::release_due_without_payout(tx, &now, Rail::Card.ledger_name())?;
            for (row, purchase_id, amount) in &released {
                crate::service::ledger::log_event(
                    tx,
                    &keyring,
                    &crate::service::ledger::Event {
                        event: "release",
                        row,
                        purchase_id,
                        amount_cents: Some(*amount),
                        at: &now,
                    },
                )?;
            }
            Ok((expired, released.len()))
        })
        .await
}

/// `POST /api/sandbox/clock` {advanceSeconds} or {reset: true} (operator): moves the sandbox
/// clock forward (or back to real time), keeps the offset for restarts, then runs the commerce
/// worker once so its effects are visible at once.
///
/// # Errors
/// `INVALID_ARGUMENT`; `CLOCK_FIXED` (409) when the server's clock cannot move.
pub async fn advance_clock(app: &App, change: ClockChange) -> Result<ClockMoved> {
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
    Ok(ClockMoved {
        now: app.now(),
        expired_checkouts: expired,
        released_rows: released,
    })
}

/// The answer of a clock change: the clock's time and what the worker pass it ran did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClockMoved {
    pub now: String,
    pub expired_checkouts: usize,
    pub released_rows: usize,
}

/// `POST /api/marketplace/purchases/{id}/ship` {carrier, tracking}: the seller marks a physical
/// order shipped; its escrow clock can then start.
///
/// # Errors
/// `NOT_FOUND`, `NOT_SELLER` (403), `NOT_PHYSICAL` (409), `NOT_PAID` (409).
pub async fn ship(app: &App, seller: &AgentRow, request: Ship) -> Result<Shipped> {
    let Ship {
        purchase_id: id,
        carrier,
        tracking,
    } = request;
    let (seller_id, now, at) = (seller.id.clone(), app.clock.now(), app.now());
    let hold = app.escrow_hold;
    app.store
        .write(move |tx| {
            let order = store::fulfilment(tx, &id)?
                .ok_or_else(|| Error::NotFound(format!("no purchase {id:?}")))?;
            if order.seller_id != seller_id {
                return Err(Error::Forbidden {
                    code: "NOT_SELLER",
                    message: "only the seller ships an order".into(),
                });
            }
            if !order.physical {
                return Err(Error::Conflict {
                    code: "NOT_PHYSICAL",
                    message: "only physical listings are shipped".into(),
                });
            }
            if order.status != "paid" && order.status != "delivered" {
                return Err(Error::Conflict {
                    code: "NOT_PAID",
                    message: "an order is shipped once it is paid".into(),
                });
            }
            let shipped_at = store::mark_shipped(tx, &id, &at, &carrier, &tracking)?;
            start_escrow(tx, &id, now, hold)?;
            Ok(Shipped {
                purchase_id: id,
                shipped_at,
                carrier,
                tracking,
            })
        })
        .await
}

/// A recorded shipment.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shipped {
    pub purchase_id: String,
    /// The first shipment's time (a second one keeps it).
    pub shipped_at: String,
    pub carrier: String,
    pub tracking: String,
}

/// `GET /api/sell/dashboard`: the seller's listings (inactive too), sales, escrow and ratings.
///
/// # Errors
/// Database failure.
pub async fn dashboard(app: &App, seller: &AgentRow) -> Result<Dashboard> {
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
    let orders = orders
        .into_iter()
        .map(|o| Order {
            purchase_id: o.purchase_id,
            listing_id: o.listing_id,
            status: o.status,
            amount_cents: o.amount_cents,
            seller_net_cents: o.seller_net_cents,
            created_at: o.created_at,
            paid_at: o.paid_at,
            delivered_at: o.delivered_at,
            shipped_at: o.shipped_at,
            physical: o.physical,
        })
        .collect();
    // A listing as the catalogue shows it borrows its row; the dashboard keeps it as that JSON.
    let listings = rows
        .iter()
        .map(|row| {
            serde_json::to_value(crate::service::catalog::view::listing_json(app, row))
                .map_err(|e| Error::Internal(format!("a listing as JSON: {e}")))
        })
        .collect::<Result<_>>()?;
    let (rating_count, rating_sum, reputation) = ratings;
    let average = (rating_count > 0)
        .then(|| (rating_sum as f64 / rating_count as f64 * 100.0).round() / 100.0);
    Ok(Dashboard {
        listings,
        orders,
        sales: Sales {
            count: sales.count,
            gross_cents: sales.gross_cents,
            platform_fee_cents: sales.fee_cents,
            held_cents: sales.held_cents,
            released_cents: sales.released_cents,
        },
        ratings: Ratings {
            count: rating_count,
            average,
        },
        reputation,
    })
}

/// The seller dashboard.
#[derive(Debug, Serialize)]
pub struct Dashboard {
    /// The seller's listings, inactive too, as the catalogue shows a listing.
    pub listings: Vec<Value>,
    /// The latest orders, newest first.
    pub orders: Vec<Order>,
    pub sales: Sales,
    pub ratings: Ratings,
    pub reputation: f64,
}

/// One order in the seller dashboard.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub purchase_id: String,
    pub listing_id: String,
    pub status: String,
    pub amount_cents: i64,
    pub seller_net_cents: i64,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub delivered_at: Option<String>,
    pub shipped_at: Option<String>,
    pub physical: bool,
}

/// A seller's sales totals.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sales {
    pub count: i64,
    pub gross_cents: i64,
    pub platform_fee_cents: i64,
    pub held_cents: i64,
    pub released_cents: i64,
}

/// A seller's ratings: how many, and their average to two decimals (`null` without any).
#[derive(Debug, Serialize)]
pub struct Ratings {
    pub count: i64,
    pub average: Option<f64>,
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
pub async fn operator_view(app: &App) -> Result<OperatorPayments> {
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
    let failing = failing
        .into_iter()
        .map(|f| FailingPayout {
            purchase_id: f.purchase_id,
            seller_handle: f.seller_handle,
            seller_net_cents: f.seller_net_cents,
            refused_attempts: f.attempts,
            error: f.error,
            retry_at: f.retry_at,
        })
        .collect();
    let refunds = refunds
        .into_iter()
        .map(|r| PendingRefund {
            purchase_id: r.purchase_id,
            payment_ref: r.payment_ref,
            amount_cents: r.amount_cents,
            refused_attempts: r.attempts,
            error: r.error,
            retry_at: r.retry_at,
            created_at: r.created_at,
        })
        .collect();
    let wallet = wallet
        .into_iter()
        .map(|w| WalletReleased {
            seller_handle: w.seller_handle,
            sales: w.sales,
            seller_net_cents: w.seller_net_cents,
        })
        .collect();
    let rail = app.card_rail().account_name().unwrap_or_default();
    Ok(OperatorPayments {
        now,
        rail,
        x402_configured: app.x402.is_some(),
        x402_facilitator: app.x402_facilitator.get().cloned(),
        escrow: Escrow {
            held_rows: escrow.held_rows,
            held_seller_net_cents: escrow.held_net_cents,
            due_rows: escrow.due_rows,
        },
        open_checkouts: checkouts,
        failing_payouts: failing,
        pending_refunds: refunds,
        refunds_made: refunded,
        wallet_released: wallet,
    })
}

/// The operator's payments view.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorPayments {
    pub now: String,
    /// The card rail's name (`sandbox` or `stripe`).
    pub rail: &'static str,
    #[serde(rename = "x402Configured")]
    pub x402_configured: bool,
    /// What the x402 facilitator said it supports at start (`null` before it answered or
    /// without x402).
    #[serde(rename = "x402Facilitator")]
    pub x402_facilitator: Option<Value>,
    pub escrow: Escrow,
    pub open_checkouts: i64,
    pub failing_payouts: Vec<FailingPayout>,
    pub pending_refunds: Vec<PendingRefund>,
    pub refunds_made: i64,
    pub wallet_released: Vec<WalletReleased>,
}

/// Escrow held, and how much of it is due.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Escrow {
    pub held_rows: i64,
    pub held_seller_net_cents: i64,
    pub due_rows: i64,
}

/// A seller transfer that keeps failing.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailingPayout {
    pub purchase_id: String,
    pub seller_handle: String,
    pub seller_net_cents: i64,
    pub refused_attempts: i64,
    pub error: String,
    pub retry_at: Option<String>,
}

/// A refund owed to a buyer, not made yet.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingRefund {
    pub purchase_id: String,
    pub payment_ref: String,
    pub amount_cents: i64,
    pub refused_attempts: i64,
    pub error: Option<String>,
    pub retry_at: Option<String>,
    pub created_at: String,
}

/// A seller's x402 sales released to it, which the operator pays.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletReleased {
    pub seller_handle: String,
    pub sales: i64,
    pub seller_net_cents: i64,
}

/// `GET /api/svcpay/receipts/{session_id}/verify` (public): the signed purchase receipt of a
/// payment session, checked against this instance's keys. The session id is the unguessable
/// capability of the checkout URL, so only its holder can look it up.
///
/// # Errors
/// `NOT_FOUND` for an unknown session; database failure.
pub async fn verify_session_receipt(app: &App, session: &str) -> Result<SessionReceipt> {
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
    Ok(SessionReceipt {
        session_id: session.to_owned(),
        purchase_id: purchase.id,
        rail: purchase.rail,
        amount_cents: purchase.amount_cents,
        paid: purchase.paid_at.is_some(),
        paid_at: purchase.paid_at,
        purchase_status: purchase.status,
        receipt,
        verification: verdict,
        note: "The receipt is the purchase's signed receipt as last issued (re-signed when the purchase is paid); `verification` checks its signature against this instance's current and earlier keys. Verify it offline with GET /api/signing-key.",
    })
}

/// A payment session's signed purchase receipt and its check.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionReceipt {
    pub session_id: String,
    pub purchase_id: String,
    pub rail: String,
    pub amount_cents: i64,
    pub paid: bool,
    pub paid_at: Option<String>,
    pub purchase_status: String,
    /// The signed purchase receipt as stored.
    pub receipt: Value,
    pub verification: Verdict,
    pub note: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(value: &impl Serialize) -> Vec<String> {
        match serde_json::to_value(value).unwrap() {
            Value::Object(map) => map.keys().cloned().collect(),
            other => panic!("not an object: {other}"),
        }
    }

    /// The views keep the wire's members and order.
    #[test]
    fn views_keep_their_members_in_order() {
        let dashboard = Dashboard {
            listings: Vec::new(),
            orders: Vec::new(),
            sales: Sales {
                count: 0,
                gross_cents: 0,
                platform_fee_cents: 0,
                held_cents: 0,
                released_cents: 0,
            },
            ratings: Ratings {
                count: 0,
                average: None,
            },
            reputation: 2.4,
        };
        assert_eq!(
            keys(&dashboard),
            ["listings", "orders", "sales", "ratings", "reputation"]
        );
        assert_eq!(
            keys(&dashboard.sales),
            [
                "count",
                "grossCents",
                "platformFeeCents",
                "heldCents",
                "releasedCents"
            ]
        );
        assert_eq!(
            serde_json::to_value(&dashboard.ratings).unwrap(),
            serde_json::json!({"count": 0, "average": null})
        );
        let view = OperatorPayments {
            now: "t".into(),
            rail: "sandbox",
            x402_configured: false,
            x402_facilitator: None,
            escrow: Escrow {
                held_rows: 0,
                held_seller_net_cents: 0,
                due_rows: 0,
            },
            open_checkouts: 0,
            failing_payouts: Vec::new(),
            pending_refunds: Vec::new(),
            refunds_made: 0,
            wallet_released: Vec::new(),
        };
        assert_eq!(
            keys(&view),
            [
                "now",
                "rail",
                "x402Configured",
                "x402Facilitator",
                "escrow",
                "openCheckouts",
                "failingPayouts",
                "pendingRefunds",
                "refundsMade",
                "walletReleased"
            ]
        );
        assert_eq!(
            keys(&view.escrow),
            ["heldRows", "heldSellerNetCents", "dueRows"]
        );
    }
}
