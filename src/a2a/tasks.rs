//! Purchases as A2A tasks. A task is one purchase: its id is the purchase id, and so is its
//! context (a purchase starts its own). States:
//!
//! | purchase | task |
//! |---|---|
//! | `pending_payment` | `TASK_STATE_INPUT_REQUIRED`, the checkout URL in its status message |
//! | `paid`, `delivered` | `TASK_STATE_COMPLETED`, the deliverable as an artifact when read live |
//! | `paid` whose relay failed this time | `TASK_STATE_WORKING` (the next read retries) |
//! | `cancelled` | `TASK_STATE_CANCELED` |
//! | `expired` | `TASK_STATE_FAILED` (the checkout ended unpaid) |
//!
//! The Purchase resource itself, with its signed receipt, is the task's `bourse.purchase`
//! metadata.

use serde_json::{Map, Value, json};

use super::fault::Fault;
use super::wire::{
    Artifact, ListTasksRequest, ListTasksResponse, Message, Part, Role, Task, TaskState,
    TaskStatus, whole_number,
};
use crate::error::Error;
use crate::request::commerce::GetPurchase;
use crate::service::App;
use crate::service::commerce::purchases::{self, BuyerPurchase, Delivery, PurchasePage};
use crate::store::agents::AgentRow;

/// `ListTasks`' page size when none is asked, and the largest.
pub const PAGE_DEFAULT: i64 = 50;
pub const PAGE_MAX: i64 = 100;

/// The task a purchase is.
pub fn task(mut purchase: BuyerPurchase) -> Task {
    let id = purchase.id.clone();
    let delivery = purchase.delivery.take();
    let (state, text, data) = match purchase.status.as_str() {
        "pending_payment" => (
            TaskState::InputRequired,
            format!(
                "Pay {} cents at {} before {}, then read this task again (GetTask).",
                purchase.amount_cents,
                purchase.checkout_url.as_deref().unwrap_or("the checkout"),
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
            None => (TaskState::Completed, "Paid.".into(), None),
        },
    };
    let mut parts = vec![Part::text(text)];
    parts.extend(data.map(Part::data));
    let timestamp = purchase
        .delivered_at
        .clone()
        .or_else(|| purchase.paid_at.clone())
        .unwrap_or_else(|| purchase.created_at.clone());
    let artifacts = delivery.map(|delivery| {
        vec![Artifact {
            artifact_id: format!("{id}-deliverable"),
            name: "deliverable".into(),
            parts: vec![deliverable_part(delivery)],
        }]
    });
    let mut metadata = Map::new();
    metadata.insert(
        "bourse.purchase".into(),
        serde_json::to_value(&purchase).unwrap_or_default(),
    );
    Task {
        id: id.clone(),
        context_id: id.clone(),
        status: TaskStatus {
            state,
            message: Some(Message {
                message_id: format!("{id}-{}", state_name(state)),
                context_id: Some(id.clone()),
                task_id: Some(id),
                role: Role::Agent,
                parts,
                metadata: Map::new(),
                extensions: Vec::new(),
            }),
            timestamp,
        },
        artifacts,
        metadata,
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

/// A purchase of the buyer's, read live (the deliverable relayed); another's, or none, is
/// `TASK_NOT_FOUND` alike.
///
/// # Errors
/// `TASK_NOT_FOUND`; the A2A form of a failed read.
pub async fn find(app: &App, buyer: &AgentRow, id: &str) -> Result<BuyerPurchase, Fault> {
    let request = GetPurchase {
        purchase_id: id.to_owned(),
    };
    match purchases::get(app, buyer, request).await {
        Ok(purchase) => Ok(purchase),
        Err(Error::NotFound(_) | Error::Forbidden { .. }) => Err(Fault::task_not_found(id)),
        Err(error) => Err(error.into()),
    }
}

/// The purchase statuses a task state covers.
fn statuses(state: TaskState) -> Option<&'static [&'static str]> {
    match state {
        TaskState::InputRequired => Some(&["pending_payment"]),
        TaskState::Completed | TaskState::Working => Some(&["paid", "delivered"]),
        TaskState::Canceled => Some(&["cancelled"]),
        TaskState::Failed => Some(&["expired"]),
        TaskState::Unspecified => Some(&[]),
        TaskState::Submitted | TaskState::Rejected | TaskState::AuthRequired => None,
    }
}

/// `ListTasks`: the buyer's purchases, newest first. `pageToken` is the offset the previous page
/// ended at; `contextId` names one purchase (each is its own context).
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
            .filter(|offset| (0..=i64::from(i32::MAX)).contains(offset))
            .ok_or_else(|| Fault::invalid_params("pageToken is not one this server gave"))?,
    };
    if let Some(context) = &request.context_id {
        let tasks: Vec<Task> = match find(app, buyer, context).await {
            Ok(purchase) => vec![without_artifacts(task(purchase), &request)],
            Err(fault) if fault.reason == "TASK_NOT_FOUND" => Vec::new(),
            Err(fault) => return Err(fault),
        };
        let total = i64::try_from(tasks.len()).unwrap_or(0);
        return Ok(ListTasksResponse {
            tasks,
            next_page_token: String::new(),
            page_size: limit,
            total_size: total,
        });
    }
    let Some(statuses) = statuses(request.status.unwrap_or(TaskState::Unspecified)) else {
        return Ok(ListTasksResponse {
            tasks: Vec::new(),
            next_page_token: String::new(),
            page_size: limit,
            total_size: 0,
        });
    };
    let page = PurchasePage {
        statuses,
        limit,
        offset,
    };
    let found = purchases::list(app, buyer, page).await?;
    let count = i64::try_from(found.purchases.len()).unwrap_or(0);
    let next = offset + count;
    Ok(ListTasksResponse {
        tasks: found
            .purchases
            .into_iter()
            .map(|purchase| without_artifacts(task(purchase), &request))
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

/// A listed task keeps `artifacts` only when asked (`includeArtifacts`); a list never relays.
fn without_artifacts(mut task: Task, request: &ListTasksRequest) -> Task {
    if request.include_artifacts != Some(true) {
        task.artifacts = None;
    }
    task
}
