//! Orders as A2A tasks (`service::commerce::orders`): a task is an order, and its purchase
//! has the task's id. States:
//!
//! | order | task |
//! |---|---|
//! | purchase `pending_payment` (card rail) | `TASK_STATE_INPUT_REQUIRED`, the checkout URL in its status message |
//! | waiting for an x402 payment | `TASK_STATE_INPUT_REQUIRED`, a2a-x402's `x402.payment.required` in its status message |
//! | purchase `paid`, `delivered` | `TASK_STATE_COMPLETED`, the deliverable as an artifact when read live |
//! | purchase `paid` whose relay failed this time, or an x402 settlement not confirmed | `TASK_STATE_WORKING` |
//! | purchase `cancelled`, or the order canceled | `TASK_STATE_CANCELED` |
//! | purchase `expired` | `TASK_STATE_FAILED` (the checkout ended unpaid) |
//! | a card order whose purchase was never made | `TASK_STATE_FAILED` |
//!
//! The Purchase itself, with its signed receipt, is the task's `bourse.purchase` metadata.

use serde_json::{Map, Value, json};

use super::fault::Fault;
use super::wire::{
    Artifact, ListTasksRequest, ListTasksResponse, Message, Part, Role, Task, TaskState,
    TaskStatus, whole_number,
};
use crate::error::Error;
use crate::service::App;
use crate::service::commerce::orders::{self, Order, OrderPage, OrderState};
use crate::service::commerce::purchases::Delivery;
use crate::store::agents::AgentRow;

/// `ListTasks`' page size when none is asked, and the largest.
pub const PAGE_DEFAULT: i64 = 50;
pub const PAGE_MAX: i64 = 100;

/// a2a-x402's metadata keys.
const STATUS: &str = "x402.payment.status";
const REQUIRED: &str = "x402.payment.required";
const RECEIPTS: &str = "x402.payment.receipts";
const ERROR: &str = "x402.payment.error";

/// The task an order is.
pub fn task(order: Order) -> Task {
    let Order {
        id,
        context_id,
        created_at,
        updated_at,
        state,
        ..
    } = order;
    let mut metadata = Map::new();
    let mut message_metadata = Map::new();
    let mut artifacts = None;
    let (state, text, data, timestamp) = match state {
        OrderState::Bought {
            mut purchase,
            settled,
        } => {
            if let Some(settled) = settled {
                message_metadata.insert(STATUS.into(), "payment-completed".into());
                message_metadata.insert(
                    RECEIPTS.into(),
                    json!([{
                        "success": true,
                        "transaction": settled.transaction,
                        "network": settled.network,
                        "payer": settled.payer,
                    }]),
                );
            }
            artifacts = purchase.delivery.take().map(|delivery| {
                vec![Artifact {
                    artifact_id: format!("{id}-deliverable"),
                    name: "deliverable".into(),
                    parts: vec![deliverable_part(delivery)],
                }]
            });
            // The latest change: the order's own (its creation, a cancel) or the purchase's
            // payment or delivery (the order of `store::orders::STATUS_AT`).
            let timestamp = [&purchase.paid_at, &purchase.delivered_at]
                .into_iter()
                .flatten()
                .fold(updated_at.clone(), |latest, at| latest.max(at.clone()));
            let (state, text, data) = purchase_state(&purchase);
            metadata.insert(
                "bourse.purchase".into(),
                serde_json::to_value(&purchase).unwrap_or_default(),
            );
            (state, text, data, timestamp)
        }
        OrderState::AwaitingPayment { required, error } => {
            let status = if error.is_some() {
                "payment-failed"
            } else {
                "payment-required"
            };
            message_metadata.insert(STATUS.into(), status.into());
            if let Some(required) = required {
                message_metadata.insert(REQUIRED.into(), required);
            }
            if let Some(error) = &error {
                message_metadata.insert(ERROR.into(), error_code(error).into());
            }
            let text = match &error {
                Some(error) => format!("The payment was refused ({error}); sign one of x402.payment.required's `accepts` and send it as x402.payment.payload in a message with this taskId."),
                None => "Payment required: sign one of x402.payment.required's `accepts` and send it as x402.payment.payload (x402.payment.status payment-submitted) in a message with this taskId.".into(),
            };
            (TaskState::InputRequired, text, None, updated_at)
        }
        OrderState::Canceled => (
            TaskState::Canceled,
            "The order was canceled before payment.".into(),
            None,
            updated_at,
        ),
        OrderState::NotMade => (
            TaskState::Failed,
            "The purchase was not made (the request was interrupted); send the order again.".into(),
            None,
            created_at,
        ),
    };
    let mut parts = vec![Part::text(text)];
    parts.extend(data.map(Part::data));
    Task {
        id: id.clone(),
        context_id: context_id.clone(),
        status: TaskStatus {
            state,
            message: Some(Message {
                message_id: format!("{id}-{}", state_name(state)),
                context_id: Some(context_id),
                task_id: Some(id),
                role: Role::Agent,
                parts,
                metadata: message_metadata,
                extensions: Vec::new(),
            }),
            timestamp,
        },
        artifacts,
        metadata,
    }
}

/// The state of a made purchase, with the words and data of its status message.
fn purchase_state(
    purchase: &crate::service::commerce::purchases::BuyerPurchase,
) -> (TaskState, String, Option<Value>) {
    match purchase.status.as_str() {
        "pending_payment" if purchase.checkout_url.is_none() => (
            TaskState::Working,
            "The payment's settlement is not confirmed yet; read the task again.".into(),
            None,
        ),
        "pending_payment" => (
            TaskState::InputRequired,
            format!(
                "Pay {} cents at {} before {}, then read this task again (GetTask).",
                purchase.amount_cents,
                purchase.checkout_url.as_deref().unwrap_or_default(),
                purchase
                    .expires_at
                    .as_deref()
                    .unwrap_or("the checkout closes"),
            ),
            Some(json!({
                "checkoutUrl": purchase.checkout_url,
                "expiresAt": purchase.expires_at,
                "amountCents": purchase.amount_cents,
            })),
        ),
        "cancelled" => (
            TaskState::Canceled,
            "The purchase was cancelled.".into(),
            None,
        ),
        "expired" => (TaskState::Failed, "The checkout ended unpaid.".into(), None),
        _ => match &purchase.delivery_error {
            Some(error) => (
                TaskState::Working,
                format!(
                    "Paid; the deliverable could not be relayed this time ({error}); read the task again to retry."
                ),
                None,
            ),
            None if purchase.amount_cents == 0 => {
                (TaskState::Completed, "Bought (free).".into(), None)
            }
            None => (TaskState::Completed, "Paid.".into(), None),
        },
    }
}

/// a2a-x402's error code for a refusal's reason.
fn error_code(reason: &str) -> &'static str {
    let reason = reason.to_ascii_lowercase();
    if reason.contains("insufficient") {
        "INSUFFICIENT_FUNDS"
    } else if reason.contains("signature") {
        "INVALID_SIGNATURE"
    } else if reason.contains("expired") {
        "EXPIRED_PAYMENT"
    } else if reason.contains("nonce") {
        "DUPLICATE_NONCE"
    } else if reason.contains("network") {
        "NETWORK_MISMATCH"
    } else if reason.contains("amount") || reason.contains("value") {
        "INVALID_AMOUNT"
    } else {
        "SETTLEMENT_FAILED"
    }
}

fn state_name(state: TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
}

/// A relayed deliverable as a part: JSON as data, text as text, bytes as raw, with its
/// media type, fingerprint and size in the part's metadata.
fn deliverable_part(delivery: Delivery) -> Part {
    let mut metadata = Map::new();
    metadata.insert("fingerprint".into(), delivery.fingerprint.into());
    metadata.insert("bytes".into(), delivery.bytes.into());
    let mut part = match (delivery.encoding, delivery.content) {
        ("json", content) => Part::data(content),
        ("utf-8", Value::String(text)) => Part::text(text),
        (_, Value::String(base64)) => Part {
            raw: Some(base64),
            ..Part::default()
        },
        (_, other) => Part::data(other),
    };
    part.media_type = Some(delivery.content_type);
    part.metadata = metadata;
    part
}

/// The buyer's order `id`, read live; another's, or none, is `TASK_NOT_FOUND` alike.
///
/// # Errors
/// `TASK_NOT_FOUND`; the A2A form of a failed read.
pub async fn find(app: &App, buyer: &AgentRow, id: &str) -> Result<Order, Fault> {
    match orders::get(app, buyer, id).await {
        Ok(order) => Ok(order),
        Err(Error::NotFound(_) | Error::Forbidden { .. }) => Err(Fault::task_not_found(id)),
        Err(error) => Err(error.into()),
    }
}

/// The purchase statuses a task state covers (`None`: no order is ever in it).
fn statuses(state: TaskState) -> Option<&'static [&'static str]> {
    match state {
        TaskState::InputRequired => Some(&["pending_payment"]),
        TaskState::Completed => Some(&["paid", "delivered"]),
        TaskState::Canceled => Some(&["cancelled"]),
        TaskState::Failed => Some(&["expired"]),
        TaskState::Unspecified => Some(&[]),
        // Working is a passing state seen only when a task is read live (a relay to retry, a
        // settlement to confirm): a recorded order is never in it.
        TaskState::Working
        | TaskState::Submitted
        | TaskState::Rejected
        | TaskState::AuthRequired => None,
    }
}

/// `ListTasks`: the buyer's orders, newest first. `pageToken` is the offset the previous page
/// ended at.
///
/// # Errors
/// `INVALID_PARAMS` for a page size or token out of range.
pub async fn list(
    app: &App,
    buyer: &AgentRow,
    request: ListTasksRequest,
) -> Result<ListTasksResponse, Fault> {
    let limit = match &request.page_size {
        None => PAGE_DEFAULT,
        Some(size) => whole_number(size)
            .filter(|size| (1..=PAGE_MAX).contains(size))
            .ok_or_else(|| {
                Fault::invalid_params(format!(
                    "pageSize must be a whole number from 1 to {PAGE_MAX}"
                ))
            })?,
    };
    let offset = match request.page_token.as_deref() {
        None | Some("") => 0,
        Some(token) => token
            .parse::<i64>()
            .ok()
            .filter(|offset| *offset >= 0)
            .ok_or_else(|| Fault::invalid_params("pageToken is not one this server gave"))?,
    };
    let Some(statuses) = statuses(request.status.unwrap_or(TaskState::Unspecified)) else {
        return Ok(ListTasksResponse {
            tasks: Vec::new(),
            next_page_token: String::new(),
            page_size: limit,
            total_size: 0,
        });
    };
    let changed_after = match request.status_timestamp_after.as_deref() {
        None | Some("") => None,
        Some(text) => Some(
            text.parse::<jiff::Timestamp>()
                .map(crate::clock::rfc3339)
                .map_err(|_| {
                    Fault::invalid_params(
                        "statusTimestampAfter must be an RFC 3339 time such as 2026-11-27T10:00:00Z",
                    )
                })?,
        ),
    };
    let page = OrderPage {
        context_id: request.context_id.clone().filter(|c| !c.is_empty()),
        statuses,
        changed_after,
        live: request.include_artifacts == Some(true),
        limit,
        offset,
    };
    let found = orders::list(app, buyer, page).await?;
    let count = i64::try_from(found.orders.len()).unwrap_or(0);
    let next = offset + count;
    let keep_artifacts = request.include_artifacts == Some(true);
    Ok(ListTasksResponse {
        tasks: found
            .orders
            .into_iter()
            .map(|order| {
                let mut task = task(order);
                if !keep_artifacts {
                    task.artifacts = None;
                }
                task
            })
            .collect(),
        next_page_token: if next < found.total {
            next.to_string()
        } else {
            String::new()
        },
        page_size: limit,
        total_size: found.total,
    })
}
