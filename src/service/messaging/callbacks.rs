//! Signed push callbacks with retries and a dead-letter queue: `agent.message` (a new message)
//! and `purchase.approval_decided` (the owner approved or denied a purchase of the agent, or its
//! approval expired; queued and made by `commerce::approvals`).
//!
//! A delivery is queued in the same transaction that accepts the message (or decides the
//! approval), so it survives a restart. The worker attempts due deliveries: first at once, then 5 s, 30 s, 2 min and 10 min
//! after the previous failure (five attempts in all), by the injected clock. A 2xx is success;
//! a network error, timeout, 5xx, 408, 429 or any redirect is a transient failure; any other 4xx
//! is a permanent refusal and dead-letters at once, as do five failed attempts. Each attempt is
//! signed afresh (new `signedAt`); receivers deduplicate by `message.id` (or `purchaseId`). Inbox polling works
//! whatever happens here.

use std::collections::HashSet;
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use rusqlite::Connection;
use serde::Serialize;
use serde_json::Map;

use super::message::Message;
use crate::clock::rfc3339;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::outbound::OutboundError;
use crate::request::messaging::CallbackList;
use crate::service::App;
use crate::store::agents::AgentRow;
use crate::store::messages::{self as store, DeliveryRow, MessageRow};
use crate::telemetry::CallbackOutcome;

/// Waits before attempts 2 to 5.
pub const RETRY_DELAYS: [SignedDuration; 4] = [
    SignedDuration::from_secs(5),
    SignedDuration::from_secs(30),
    SignedDuration::from_mins(2),
    SignedDuration::from_mins(10),
];
/// Attempts in all.
pub const MAX_ATTEMPTS: i64 = 5;
/// Largest answer read from a callback receiver.
const ANSWER_MAX_BYTES: usize = 64 * 1024;

/// Queues the push of a new message (inside the send transaction).
///
/// # Errors
/// Database failure.
pub fn enqueue(conn: &Connection, message: &MessageRow, url: &str, now: &str) -> Result<()> {
    store::insert_delivery(
        conn,
        &DeliveryRow {
            id: uuid::Uuid::new_v4().to_string(),
            agent_id: message.recipient_id.clone(),
            event: MESSAGE.into(),
            message_id: Some(message.id.clone()),
            purchase_id: None,
            url: url.to_owned(),
            status: "pending".into(),
            attempts: 0,
            next_attempt_at: Some(now.to_owned()),
            last_error: None,
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
        },
    )
}

/// The event of a new message.
pub const MESSAGE: &str = "agent.message";
/// Most callback attempts in flight at once.
const IN_FLIGHT_MAX: usize = 64;

/// Runs forever: whenever woken (and at least every 250 ms) starts every due delivery that is
/// not already in flight, each on its own task, so a slow receiver delays nobody else.
pub async fn worker(app: Arc<App>) {
    let in_flight: Arc<std::sync::Mutex<HashSet<String>>> = Arc::default();
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT_MAX));
    loop {
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(250),
            app.callbacks_due.notified(),
        )
        .await;
        let pass = app.worker_passes.callbacks.begin();
        let now = app.now();
        let due = match app
            .store
            .read(move |conn| store::due_deliveries(conn, &now, IN_FLIGHT_MAX as i64))
            .await
        {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "callback worker");
                continue;
            }
        };
        for delivery in due {
            if !in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(delivery.id.clone())
            {
                continue;
            }
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let (app, in_flight, pass) = (app.clone(), in_flight.clone(), pass.clone());
            tokio::spawn(async move {
                let id = delivery.id.clone();
                if let Err(error) = attempt(&app, delivery).await {
                    tracing::warn!(%error, delivery = %id, "callback attempt");
                }
                in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                drop((slot, pass));
            });
        }
    }
}

async fn attempt(app: &App, mut delivery: DeliveryRow) -> Result<()> {
    let mut payload = match (&delivery.message_id, &delivery.purchase_id) {
        (Some(message_id), _) => {
            let message_id = message_id.clone();
            let message = app
                .store
                .read(move |conn| store::find(conn, &message_id))
                .await?
                .ok_or_else(|| Error::Internal("callback for a missing message".into()))?;
            message_payload(&message)?
        }
        (None, Some(purchase_id)) => {
            let event =
                crate::service::commerce::approvals::decided_event(app, purchase_id).await?;
            match serde_json::to_value(event) {
                Ok(serde_json::Value::Object(map)) => map,
                _ => return Err(Error::Internal("callback payload: not an object".into())),
            }
        }
        (None, None) => return Err(Error::Internal("callback of nothing".into())),
    };
    delivery.attempts += 1;
    sign_object(&app.keyring, &mut payload, &rfc3339(app.clock.wall()));
    let body = serde_json::to_vec(&payload)
        .map_err(|e| Error::Internal(format!("callback payload: {e}")))?;
    let event = delivery.event.clone();
    let client = app.outbound_callbacks.clone();
    let url = delivery.url.clone();
    let (delivery_id, attempt_number) = (delivery.id.clone(), delivery.attempts.to_string());
    let outcome = tokio::task::spawn_blocking(move || {
        client.post_json(
            &url,
            &body,
            &[
                ("x-bourse-event", &event),
                ("x-bourse-delivery-id", &delivery_id),
                ("x-bourse-attempt", &attempt_number),
            ],
            ANSWER_MAX_BYTES,
        )
    })
    .await
    .map_err(|e| Error::Internal(format!("callback task: {e}")))?;
    let now = app.clock.now();
    let failure = match outcome {
        Ok(response) if (200..300).contains(&response.status) => None,
        Ok(response) if matches!(response.status, 408 | 429) || response.status >= 500 => {
            Some((format!("HTTP {}", response.status), true))
        }
        Ok(response) => Some((
            format!("HTTP {} (permanent refusal)", response.status),
            false,
        )),
        Err(error @ OutboundError::Redirect(_)) => Some((error.to_string(), true)),
        Err(error) => {
            let transient = error.is_transient();
            Some((error.to_string(), transient))
        }
    };
    apply_outcome(&mut delivery, failure, now);
    app.telemetry
        .callback_attempt(match delivery.status.as_str() {
            "delivered" => CallbackOutcome::Delivered,
            "dead" => CallbackOutcome::Dead,
            _ => CallbackOutcome::Retry,
        });
    let row = delivery.clone();
    app.store
        .write(move |tx| store::update_delivery(tx, &row))
        .await?;
    Ok(())
}

/// The next state of a delivery after an attempt (`failure` = reason and whether transient).
fn apply_outcome(delivery: &mut DeliveryRow, failure: Option<(String, bool)>, now: Timestamp) {
    delivery.updated_at = rfc3339(now);
    match failure {
        None => {
            delivery.status = "delivered".into();
            delivery.next_attempt_at = None;
            delivery.last_error = None;
        }
        Some((reason, transient)) => {
            delivery.last_error = Some(reason);
            let index = usize::try_from(delivery.attempts - 1).unwrap_or(usize::MAX);
            match RETRY_DELAYS.get(index) {
                Some(delay) if transient && delivery.attempts < MAX_ATTEMPTS => {
                    delivery.next_attempt_at = Some(rfc3339(now + *delay));
                }
                _ => {
                    delivery.status = "dead".into();
                    delivery.next_attempt_at = None;
                }
            }
        }
    }
}

/// `{event: "agent.message", message}` (signed by the caller).
fn message_payload(message: &MessageRow) -> Result<Map<String, serde_json::Value>> {
    let unserializable = |e: serde_json::Error| Error::Internal(format!("callback payload: {e}"));
    let mut payload = Map::new();
    payload.insert("event".into(), MESSAGE.into());
    payload.insert(
        "message".into(),
        serde_json::to_value(Message::of(message.clone())).map_err(unserializable)?,
    );
    Ok(payload)
}

/// A callback delivery as its agent sees it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Callback {
    pub id: String,
    /// `agent.message` or `purchase.approval_decided`.
    pub event: String,
    /// The message pushed (`agent.message`), else null.
    pub message_id: Option<String>,
    /// The purchase whose approval was decided (`purchase.approval_decided`), else null.
    pub purchase_id: Option<String>,
    pub url: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl Callback {
    fn of(d: &DeliveryRow) -> Callback {
        Callback {
            id: d.id.clone(),
            event: d.event.clone(),
            message_id: d.message_id.clone(),
            purchase_id: d.purchase_id.clone(),
            url: d.url.clone(),
            status: d.status.clone(),
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at.clone(),
            last_error: d.last_error.clone(),
            created_at: d.created_at.clone(),
            updated_at: d.updated_at.clone(),
        }
    }
}

/// `GET /api/agents/me/callbacks`: the caller's deliveries.
#[derive(Debug, Serialize)]
pub struct Callbacks {
    pub callbacks: Vec<Callback>,
}

/// `POST /api/agents/me/callbacks/{id}/replay`: the delivery, queued again.
#[derive(Debug, Serialize)]
pub struct Replayed {
    pub callback: Callback,
}

/// `GET /api/agents/me/callbacks?status=pending|delivered|dead` (the request reader has checked
/// the state).
///
/// # Errors
/// Database failure.
pub async fn list(app: &App, agent: &AgentRow, list: CallbackList) -> Result<Callbacks> {
    let CallbackList { status, limit } = list;
    let agent_id = agent.id.clone();
    let rows = app
        .store
        .read(move |conn| store::deliveries_of(conn, &agent_id, status, limit))
        .await?;
    Ok(Callbacks {
        callbacks: rows.iter().map(Callback::of).collect(),
    })
}

/// `POST /api/agents/me/callbacks/{id}/replay`: a dead delivery goes back to the queue with
/// five fresh attempts, to the agent's current callback URL.
///
/// # Errors
/// `NOT_FOUND` (also for another agent's delivery), `NOT_DEAD` (409), `CALLBACK_URL_MISSING` (409).
pub async fn replay(app: &App, agent: &AgentRow, id: &str) -> Result<Replayed> {
    let key = id.to_owned();
    let found = app
        .store
        .read(move |conn| store::find_delivery(conn, &key))
        .await?;
    let mut delivery = found
        .filter(|d| d.agent_id == agent.id)
        .ok_or_else(|| Error::NotFound(format!("no callback delivery {id:?} of yours")))?;
    if delivery.status != "dead" {
        return Err(Error::Conflict {
            code: "NOT_DEAD",
            message: format!(
                "only dead-lettered deliveries can be replayed; this one is {}",
                delivery.status
            ),
        });
    }
    let url = agent.callback_url.clone().ok_or_else(|| Error::Conflict {
        code: "CALLBACK_URL_MISSING",
        message: "set a callbackUrl first (PATCH /api/agents/me)".into(),
    })?;
    let now = app.now();
    delivery.url = url;
    delivery.status = "pending".into();
    delivery.attempts = 0;
    delivery.next_attempt_at = Some(now.clone());
    delivery.last_error = None;
    delivery.updated_at = now;
    let row = delivery.clone();
    app.store
        .write(move |tx| store::replay_delivery(tx, &row))
        .await?;
    app.callbacks_due.notify_one();
    Ok(Replayed {
        callback: Callback::of(&delivery),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> DeliveryRow {
        DeliveryRow {
            id: "d".into(),
            agent_id: "a".into(),
            event: MESSAGE.into(),
            message_id: Some("m".into()),
            purchase_id: None,
            url: "https://x.example/".into(),
            status: "pending".into(),
            attempts: 0,
            next_attempt_at: None,
            last_error: None,
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn the_schedule_is_now_5s_30s_2min_10min_then_dead() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut d = delivery();
        let mut waits = Vec::new();
        for _ in 0..5 {
            d.attempts += 1;
            apply_outcome(&mut d, Some(("HTTP 500".into(), true)), start);
            if let Some(next) = &d.next_attempt_at {
                let next: Timestamp = next.parse().unwrap();
                waits.push(next.duration_since(start).as_secs());
            }
        }
        assert_eq!(waits, [5, 30, 120, 600]);
        assert_eq!(d.status, "dead");
    }

    #[test]
    fn a_permanent_refusal_dead_letters_at_once_and_success_delivers() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut d = delivery();
        d.attempts = 1;
        apply_outcome(&mut d, Some(("HTTP 410".into(), false)), now);
        assert_eq!(d.status, "dead");
        let mut ok = delivery();
        ok.attempts = 1;
        apply_outcome(&mut ok, None, now);
        assert_eq!(ok.status, "delivered");
    }
}
