//! Orders: purchases asked for as tasks (the A2A face's `SendMessage` with a listing). An order
//! names its purchase before the purchase is made, so a task has one id from its first answer
//! on: on the card rail the purchase is made at once under the order's id; on the x402 rail
//! the order waits for a payment (the 402 challenge is its input) and its purchase is made
//! under its id when a payment settles. The order keeps the task's context and the purchase's
//! own members, so a payment needs nothing else.
//!
//! The purchase itself goes through `purchases::purchase_on`, as REST and MCP purchases do.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::request::commerce::{GetPurchase, PaymentHeader, Purchase};
use crate::service::App;
use crate::service::commerce::purchases::{self, Answer, BuyerPurchase};
use crate::service::commerce::{checkout, rails::x402};
use crate::service::rail::Rail;
use crate::store::agents::AgentRow;
use crate::store::orders::{self as store, OrderRow};

/// Which rail an order pays on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderRail {
    /// The instance's card rail (sandbox or Stripe): a checkout URL.
    Card,
    /// x402: the payment travels with a later message.
    X402,
}

impl OrderRail {
    fn name(self) -> &'static str {
        match self {
            OrderRail::Card => "card",
            OrderRail::X402 => "x402",
        }
    }
}

/// A new order.
#[derive(Debug)]
pub struct NewOrder {
    /// The caller's context; a new order starts its own (its id) without one.
    pub context_id: Option<String>,
    pub rail: OrderRail,
    /// The purchase asked for (its `purchase_id` is the order's, set here).
    pub purchase: Purchase,
}

/// An order and where it stands.
#[derive(Debug)]
pub struct Order {
    pub id: String,
    pub context_id: String,
    pub rail: OrderRail,
    pub created_at: String,
    pub updated_at: String,
    pub state: OrderState,
}

/// Where an order stands.
#[derive(Debug)]
pub enum OrderState {
    /// Its purchase exists (any status), with the x402 settlement when this call made it.
    Bought {
        purchase: Box<BuyerPurchase>,
        settled: Option<x402::Payment>,
    },
    /// x402: waiting for a payment. `required` is the challenge (the 402 body) when it was made
    /// for this answer (lists leave it out); `error` the last refused payment's reason.
    AwaitingPayment {
        required: Option<Value>,
        error: Option<String>,
    },
    /// Withdrawn before anything was bought.
    Canceled,
    /// A card-rail order whose purchase was never made (the request was interrupted).
    NotMade,
}

/// Where x402 challenges say the listing is bought (the REST purchase's URL, so a payment
/// signed for one face is good on the other).
fn resource(app: &App, listing_id: &str) -> String {
    app.url(&format!("/api/marketplace/listings/{listing_id}/purchase"))
}

/// Opens an order: on the card rail its purchase is made at once (free: bought; paid: its
/// checkout opened); on x402 a paid listing's order waits with the challenge. A purchase the
/// marketplace refuses leaves no order.
///
/// # Errors
/// As `purchases::purchase_on`.
pub async fn open(app: &App, buyer: &AgentRow, mut order: NewOrder) -> Result<Order> {
    let id = uuid::Uuid::new_v4().to_string();
    let now = app.now();
    let members = json!({
        "email": order.purchase.email.as_ref().ok().cloned().flatten(),
        "intendedUse": order.purchase.intended_use.as_ref().ok().cloned().flatten(),
        "attestation": order.purchase.attestation.as_ref().ok().cloned().flatten(),
    });
    let row = OrderRow {
        id: id.clone(),
        buyer_id: buyer.id.clone(),
        context_id: order.context_id.clone().unwrap_or_else(|| id.clone()),
        listing_id: order.purchase.listing_id.clone(),
        rail: order.rail.name().into(),
        request: members.to_string(),
        status: "open".into(),
        payment_error: None,
        created_at: now.clone(),
        updated_at: now,
    };
    let stored = row.clone();
    app.store
        .write(move |tx| store::insert(tx, &stored))
        .await?;
    order.purchase.purchase_id = Some(id.clone());
    let rail = match order.rail {
        OrderRail::Card => app.card_rail(),
        OrderRail::X402 => Rail::Wallet,
    };
    let listing = order.purchase.listing_id.clone();
    let made = purchases::purchase_on(
        app,
        Some(buyer),
        rail,
        order.purchase,
        resource(app, &listing),
    )
    .await;
    let state = match made {
        Ok(Answer::Purchase { purchase, .. }) => OrderState::Bought {
            settled: purchase.payment.clone(),
            purchase,
        },
        Ok(Answer::Refused(refusal)) if refusal.status == 402 => OrderState::AwaitingPayment {
            required: Some(payment_required(refusal)),
            error: None,
        },
        Ok(Answer::Refused(refusal)) => {
            forget(app, &id).await;
            return Err(Error::BadRequest {
                code: "INVALID_PAYMENT",
                message: format!("the x402 rail refused the order ({})", refusal.status),
            });
        }
        Err(error) => {
            forget(app, &id).await;
            return Err(error);
        }
    };
    Ok(order_of(row, state))
}

/// The x402 v2 `PaymentRequired` of a challenge (its `PAYMENT-REQUIRED` header; the 402 body
/// is the v1 form, for v1 clients), as a2a-x402 carries it.
fn payment_required(refusal: checkout::Refusal) -> Value {
    refusal
        .headers
        .iter()
        .find(|(name, _)| *name == "payment-required")
        .and_then(|(_, value)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(value)
                .ok()?;
            serde_json::from_slice(&bytes).ok()
        })
        .unwrap_or(refusal.body)
}

/// Removes an order whose purchase was refused (best effort: an order left behind shows as
/// never made).
async fn forget(app: &App, id: &str) {
    let id = id.to_owned();
    if let Err(error) = app.store.write(move |tx| store::forget(tx, &id)).await {
        tracing::warn!(%error, "an order whose purchase was refused could not be removed");
    }
}

fn order_of(row: OrderRow, state: OrderState) -> Order {
    Order {
        rail: if row.rail == "x402" {
            OrderRail::X402
        } else {
            OrderRail::Card
        },
        id: row.id,
        context_id: row.context_id,
        created_at: row.created_at,
        updated_at: row.updated_at,
        state,
    }
}

async fn find(app: &App, buyer: &AgentRow, id: &str) -> Result<OrderRow> {
    let (buyer_id, key) = (buyer.id.clone(), id.to_owned());
    app.store
        .read(move |conn| store::find(conn, &buyer_id, &key))
        .await?
        .ok_or_else(|| Error::NotFound(format!("no order {id:?} of yours")))
}

/// The buyer's order, read live: its purchase with the deliverable relayed, or the x402
/// challenge made again.
///
/// # Errors
/// `NOT_FOUND` (another's or none).
pub async fn get(app: &App, buyer: &AgentRow, id: &str) -> Result<Order> {
    let row = find(app, buyer, id).await?;
    let state = state_of(app, buyer, &row, true).await?;
    Ok(order_of(row, state))
}

/// The buyer's order as recorded: no deliverable relayed, no challenge made (cheap enough to
/// check often).
///
/// # Errors
/// `NOT_FOUND` (another's or none).
pub async fn recorded(app: &App, buyer: &AgentRow, id: &str) -> Result<Order> {
    let row = find(app, buyer, id).await?;
    let state = state_of(app, buyer, &row, false).await?;
    Ok(order_of(row, state))
}

async fn state_of(app: &App, buyer: &AgentRow, row: &OrderRow, live: bool) -> Result<OrderState> {
    let purchase = if live {
        let request = GetPurchase {
            purchase_id: row.id.clone(),
        };
        match purchases::get(app, buyer, request).await {
            Ok(purchase) => Some(purchase),
            Err(Error::NotFound(_)) => None,
            Err(error) => return Err(error),
        }
    } else {
        purchases::recorded(app, &row.id).await?
    };
    if let Some(purchase) = purchase {
        let settled = settlement_of(app, &purchase).await?;
        return Ok(OrderState::Bought {
            purchase: Box::new(purchase),
            settled,
        });
    }
    Ok(match (row.status.as_str(), row.rail.as_str()) {
        ("canceled", _) => OrderState::Canceled,
        (_, "x402") => OrderState::AwaitingPayment {
            required: if live {
                challenge(app, buyer, row).await?
            } else {
                None
            },
            error: row.payment_error.clone(),
        },
        _ => OrderState::NotMade,
    })
}

/// The x402 settlement of a paid purchase on that rail, as recorded (its transaction and
/// payer), so a task read later carries the receipts its payment's answer did.
async fn settlement_of(app: &App, purchase: &BuyerPurchase) -> Result<Option<x402::Payment>> {
    let paid = matches!(purchase.status.as_str(), "paid" | "delivered");
    let (true, true, Some(x402)) = (paid, purchase.rail == Rail::Wallet.name(), &app.x402) else {
        return Ok(None);
    };
    let id = purchase.id.clone();
    let row = app
        .store
        .read(move |conn| crate::store::purchases::find(conn, &id))
        .await?;
    Ok(row.and_then(|row| {
        Some(x402::Payment {
            transaction: row.payment_ref?,
            network: x402.network.clone(),
            payer: row.payer,
        })
    }))
}

/// The purchase an order asked for, with `payment`.
fn purchase_of(row: &OrderRow, payment: Option<PaymentHeader>) -> Purchase {
    let members: Map<String, Value> = serde_json::from_str(&row.request).unwrap_or_default();
    let text = |key: &str| members.get(key).and_then(Value::as_str).map(str::to_owned);
    Purchase {
        listing_id: row.listing_id.clone(),
        rail: None,
        payment,
        email: Ok(text("email")),
        intended_use: Ok(text("intendedUse")),
        attestation: Ok(members.get("attestation").filter(|v| !v.is_null()).cloned()),
        purchase_id: Some(row.id.clone()),
    }
}

/// The x402 challenge of an order waiting for its payment, made again.
async fn challenge(app: &App, buyer: &AgentRow, row: &OrderRow) -> Result<Option<Value>> {
    let asked = purchase_of(row, None);
    let resource = resource(app, &row.listing_id);
    match purchases::purchase_on(app, Some(buyer), Rail::Wallet, asked, resource).await? {
        Answer::Refused(refusal) => Ok(Some(payment_required(refusal))),
        Answer::Purchase { .. } => Ok(None),
    }
}

/// Pays an x402 order: the purchase is made under the order's id when the payment settles; a
/// refused payment leaves the order waiting, with the reason and a new challenge.
///
/// # Errors
/// `NOT_FOUND`; `ORDER_NOT_PAYABLE` (409) for a card-rail or canceled order; as
/// `purchases::purchase_on` on the x402 rail.
pub async fn pay(app: &App, buyer: &AgentRow, id: &str, payment: PaymentHeader) -> Result<Order> {
    let row = find(app, buyer, id).await?;
    if let Some(purchase) = purchases::recorded(app, &row.id).await? {
        // Paid already (a repeated payment message): the purchase as it stands.
        let state = OrderState::Bought {
            purchase: Box::new(purchase),
            settled: None,
        };
        return Ok(order_of(row, state));
    }
    if row.rail != "x402" || row.status != "open" {
        return Err(Error::Conflict {
            code: "ORDER_NOT_PAYABLE",
            message: if row.status == "open" {
                "this order pays at its checkout URL, not with an x402 payment".into()
            } else {
                "this order was canceled".into()
            },
        });
    }
    let asked = purchase_of(&row, Some(payment));
    let resource = resource(app, &row.listing_id);
    let now = app.now();
    let state =
        match purchases::purchase_on(app, Some(buyer), Rail::Wallet, asked, resource).await? {
            Answer::Purchase { purchase, .. } => OrderState::Bought {
                settled: purchase.payment.clone(),
                purchase,
            },
            Answer::Refused(refusal) => {
                let reason = refusal.body["error"]
                    .as_str()
                    .unwrap_or("the payment was refused")
                    .to_owned();
                let (key, error) = (row.id.clone(), reason.clone());
                app.store
                    .write(move |tx| store::set_payment_error(tx, &key, Some(&error), &now))
                    .await?;
                OrderState::AwaitingPayment {
                    required: Some(refusal.body),
                    error: Some(reason),
                }
            }
        };
    Ok(order_of(row, state))
}

/// Withdraws an order: one waiting for an x402 payment is canceled; one whose checkout is open
/// ends its checkout (`checkout::cancel_purchase`).
///
/// # Errors
/// `NOT_FOUND`; `CHECKOUT_CLOSED` (409) when it no longer waits for payment.
pub async fn cancel(app: &App, buyer: &AgentRow, id: &str) -> Result<Order> {
    let row = find(app, buyer, id).await?;
    if purchases::recorded(app, &row.id).await?.is_some() {
        checkout::cancel_purchase(app, buyer, &row.id).await?;
        let (key, now) = (row.id.clone(), app.now());
        app.store
            .write(move |tx| store::touch(tx, &key, &now))
            .await?;
    } else {
        let (key, now) = (row.id.clone(), app.now());
        let canceled = app
            .store
            .write(move |tx| store::cancel(tx, &key, &now))
            .await?;
        if !canceled {
            return Err(Error::Conflict {
                code: "CHECKOUT_CLOSED",
                message: "this order no longer waits for payment".into(),
            });
        }
    }
    get(app, buyer, id).await
}

/// Which orders to list.
#[derive(Debug)]
pub struct OrderPage {
    /// One context only.
    pub context_id: Option<String>,
    /// Purchase statuses to keep (`pending_payment` covers orders waiting for a payment,
    /// `cancelled` canceled ones); every one when empty.
    pub statuses: &'static [&'static str],
    /// Only orders changed after this time (RFC 3339, as the server writes times).
    pub changed_after: Option<String>,
    /// Read each one live (deliverables relayed), as [`get`] does.
    pub live: bool,
    pub limit: i64,
    pub offset: i64,
}

/// A page of orders and how many match.
#[derive(Debug)]
pub struct OrderList {
    pub orders: Vec<Order>,
    pub total: i64,
}

/// The buyer's orders, the latest change first, as recorded (no deliverable relayed, no
/// challenge made) unless the page asks for them live.
///
/// # Errors
/// Database failure.
pub async fn list(app: &App, buyer: &AgentRow, page: OrderPage) -> Result<OrderList> {
    let buyer_id = buyer.id.clone();
    let OrderPage {
        context_id,
        statuses,
        changed_after,
        live,
        limit,
        offset,
    } = page;
    let (rows, total) = app
        .store
        .read(move |conn| {
            let (context, after) = (context_id.as_deref(), changed_after.as_deref());
            store::of_buyer(conn, &buyer_id, context, statuses, after, limit, offset)
        })
        .await?;
    let mut orders = Vec::with_capacity(rows.len());
    for row in rows {
        let state = state_of(app, buyer, &row, live).await?;
        orders.push(order_of(row, state));
    }
    Ok(OrderList { orders, total })
}
