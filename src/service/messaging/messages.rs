//! The messaging rail: send with a signed acceptance receipt, idempotent retries, per-recipient
//! sequences, inbox paging and long-poll.
//!
//! Storage: the inbox row holds the body; the append-only journal holds ids, handles, time,
//! the body digest and the receipt, never the body. The receipt proves acceptance into the
//! recipient's inbox only, not reading or action.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::Map;
use tokio::sync::watch;

use super::callbacks;
use super::message::Message;
use crate::crypto::jcs;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::request::messaging::{ReadInbox, SendMessage};
use crate::service::App;
use crate::service::identity::agents::Client;
use crate::service::ratelimit::{ADMISSION, NEW_MESSAGES};
use crate::service::trust::receipts::Signed;
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::messages::{self as store, MessageRow};
use crate::store::tlog;

/// Largest message body, in UTF-8 bytes.
pub const BODY_MAX_BYTES: usize = 16_384;
pub use crate::request::messaging::{CLIENT_ID_MAX, WAIT_MAX_SECS};
/// How long a send may wait for its commit before answering 503 (safe to retry).
const COMMIT_DEADLINE: Duration = Duration::from_secs(5);

/// Wakes long-polls when a recipient's inbox grows.
#[derive(Default)]
pub struct Inboxes {
    watchers: Mutex<HashMap<String, watch::Sender<i64>>>,
}

impl Inboxes {
    fn subscribe(&self, agent_id: &str) -> watch::Receiver<i64> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
        watchers
            .entry(agent_id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    fn notify(&self, agent_id: &str, sequence: i64) {
        let mut watchers = self.watchers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = watchers.get(agent_id) {
            if sender.receiver_count() == 0 {
                watchers.remove(agent_id);
            } else {
                sender.send_replace(sequence);
            }
        }
    }
}

/// The outcome of a send: a new message (201) or the original of an idempotent repeat (200).
pub struct Sent {
    pub created: bool,
    pub message: Message,
}

/// `POST /api/agents/{handle}/messages`. Sending is the hottest write, so it is one trip to the
/// writer: the sender comes from the known-agents cache, the receipt is signed first, and the
/// recipient lookup, the idempotency check, the per-sender limit and the inserts all run in
/// one job on the writer thread (which also makes concurrent duplicates resolve to one).
///
/// # Errors
/// `UNAUTHENTICATED`, `INVALID_ARGUMENT`, `NOT_FOUND` (unknown handle),
/// `CLIENT_MESSAGE_ID_REUSED` (409), `RATE_LIMITED` (429), `ADMISSION_NOT_ACKNOWLEDGED` (503,
/// safe to retry).
pub async fn send(
    app: &App,
    sender: &AgentRow,
    request: SendMessage,
    client: &Client<'_>,
) -> Result<Sent> {
    check_client_message_id(&request.client_message_id)?;
    check_body(&request.body)?;
    let SendMessage {
        recipient: handle,
        client_message_id,
        body,
    } = request;
    let handle = handle.trim().to_ascii_uppercase();
    app.limiter.check(ADMISSION, client.ip)?;

    let now = app.now();
    // Time-ordered (UUIDv7): consecutive messages land on the same index page instead of one
    // page each, which is most of what a send costs the writer.
    let id = uuid::Uuid::now_v7().to_string();
    let body_digest = jcs::sha256_prefixed(body.as_bytes());
    let mut receipt = Map::new();
    receipt.insert("type".into(), "bourse.message.receipt".into());
    receipt.insert("messageId".into(), id.clone().into());
    receipt.insert("clientMessageId".into(), client_message_id.clone().into());
    receipt.insert("senderHandle".into(), sender.handle.clone().into());
    receipt.insert("recipientHandle".into(), handle.clone().into());
    receipt.insert("acceptedAt".into(), now.clone().into());
    receipt.insert("bodyDigest".into(), body_digest.clone().into());
    sign_object(&app.keyring, &mut receipt, &now);
    let log_entry = crate::crypto::tlog::object_entry(store::LOG_KIND, &receipt);
    let receipt = Signed(receipt);
    let mut message = MessageRow {
        id,
        recipient_id: String::new(),
        sequence: 0,
        sender_id: sender.id.clone(),
        sender_handle: sender.handle.clone(),
        recipient_handle: handle.clone(),
        client_message_id,
        body,
        created_at: now.clone(),
        receipt: receipt.to_string(),
    };
    let limiter = app.limiter.clone();
    let write = app.store.write(move |tx| {
        let recipient =
            agent_store::find_by_handle(tx, &message.recipient_handle)?.ok_or_else(|| {
                Error::NotFound(format!(
                    "no agent has the handle {:?}",
                    message.recipient_handle
                ))
            })?;
        message.recipient_id = recipient.id.clone();
        message.sequence = store::next_sequence(tx, &message.recipient_id)?;
        let Some(index) = store::insert(tx, &message, &body_digest, &log_entry)? else {
            let existing =
                store::find_by_client_id(tx, &message.sender_id, &message.client_message_id)?
                    .ok_or_else(|| {
                        Error::Internal("a clientMessageId in use has no message".into())
                    })?;
            let index = tlog::index_of(tx, &store::log_ref(&existing.id))?;
            return Ok(Accepted::Existing(Box::new((
                existing,
                recipient,
                message.body,
                index,
            ))));
        };
        // Only a new message counts; a refusal rolls the insert back with the job.
        limiter.check(NEW_MESSAGES, &message.sender_id)?;
        if let Some(url) = &recipient.callback_url {
            callbacks::enqueue(tx, &message, url, &now)?;
        }
        Ok(Accepted::New(
            Box::new(message),
            recipient.callback_url.is_some(),
            index,
        ))
    });
    let accepted = tokio::time::timeout(COMMIT_DEADLINE, write).await.map_err(|_| Error::Busy {
        code: "ADMISSION_NOT_ACKNOWLEDGED",
        message: "the message could not be committed in time; retrying with the same clientMessageId is safe".into(),
        retry_after_secs: 1,
    })??;
    match accepted {
        Accepted::Existing(earlier) => {
            let (existing, recipient, body, index) = *earlier;
            repeat(existing, &recipient, &body, index)
        }
        Accepted::New(message, queued, index) => {
            app.inboxes.notify(&message.recipient_id, message.sequence);
            if queued {
                app.callbacks_due.notify_one();
            }
            Ok(Sent {
                created: true,
                message: Message::with_receipt(*message, Some(receipt)).logged_at(Some(index)),
            })
        }
    }
}

/// What the writer made of a send.
enum Accepted {
    /// Accepted now; whether a callback was queued; its receipt's log index.
    New(Box<MessageRow>, bool, u64),
    /// The sender already used this clientMessageId: the earlier message, its recipient now,
    /// the body of this attempt, and the earlier receipt's log index.
    Existing(Box<(MessageRow, AgentRow, String, Option<u64>)>),
}

/// An idempotent repeat: the original message when recipient and body match, else 409.
fn repeat(
    existing: MessageRow,
    recipient: &AgentRow,
    body: &str,
    index: Option<u64>,
) -> Result<Sent> {
    if existing.recipient_id == recipient.id && existing.body == body {
        return Ok(Sent {
            created: false,
            message: Message::of(existing).logged_at(index),
        });
    }
    Err(Error::Conflict {
        code: "CLIENT_MESSAGE_ID_REUSED",
        message: format!(
            "clientMessageId {:?} was already used for a message with another recipient or body; use a new id for a new message",
            existing.client_message_id
        ),
    })
}

fn check_client_message_id(id: &str) -> Result<()> {
    let chars = id.chars().count();
    if chars == 0 || chars > CLIENT_ID_MAX || id.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "`clientMessageId` must be 1–{CLIENT_ID_MAX} characters without control characters"
        )));
    }
    Ok(())
}

/// The body is kept exactly as sent: not trimmed, any text, 1 to 16,384 UTF-8 bytes.
fn check_body(body: &str) -> Result<()> {
    if body.is_empty() {
        return Err(Error::invalid("`body` must not be empty"));
    }
    if body.len() > BODY_MAX_BYTES {
        return Err(Error::invalid(format!(
            "`body` is {} UTF-8 bytes; the limit is {BODY_MAX_BYTES} bytes (bytes, not characters)",
            body.len()
        )));
    }
    Ok(())
}

/// A page of the inbox: the messages, the cursor to pass as `after` next, and whether more
/// are waiting.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inbox {
    pub messages: Vec<Message>,
    pub next_after: i64,
    pub has_more: bool,
}

/// The answer of `mark_read`: the caller's own cursor, handed back.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadCursor {
    pub read_cursor: i64,
    /// Always false: read state is not stored.
    pub read_state_stored: bool,
}

/// `GET /api/agents/me/inbox?after&limit&wait`: the caller's messages with `sequence > after`,
/// ascending; with `wait` (seconds, at most 30) an empty answer waits for the next message.
///
/// # Errors
/// `RATE_LIMITED`; database failure.
pub async fn inbox(
    app: &App,
    agent: &AgentRow,
    request: ReadInbox,
    client: &Client<'_>,
) -> Result<Inbox> {
    let ReadInbox {
        after,
        limit,
        wait_secs,
    } = request;
    app.limiter.check(ADMISSION, client.ip)?;
    let mut arrivals = app.inboxes.subscribe(&agent.id);
    let mut shutdown = app.shutdown.subscribe();
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(wait_secs.clamp(0, WAIT_MAX_SECS) as u64);
    loop {
        let recipient = agent.id.clone();
        let mut rows = app
            .store
            .read(move |conn| {
                let rows = store::inbox(conn, &recipient, after, limit + 1)?;
                rows.into_iter()
                    .map(|row| Ok((tlog::index_of(conn, &store::log_ref(&row.id))?, row)))
                    .collect::<Result<Vec<_>>>()
            })
            .await?;
        let waiting =
            rows.is_empty() && tokio::time::Instant::now() < deadline && !*shutdown.borrow();
        if !waiting {
            let has_more = rows.len() as i64 > limit;
            rows.truncate(limit as usize);
            let next_after = rows.last().map_or(after, |(_, m)| m.sequence);
            return Ok(Inbox {
                messages: rows
                    .into_iter()
                    .map(|(index, row)| Message::of(row).logged_at(index))
                    .collect(),
                next_after,
                has_more,
            });
        }
        tokio::select! {
            changed = arrivals.changed() => {
                if changed.is_err() {
                    arrivals = app.inboxes.subscribe(&agent.id);
                }
            }
            _ = shutdown.changed() => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// `mark_read` (MCP `agent_inbox`): read state is the caller's own cursor; nothing is stored and
/// no read receipt is made, so the answer only hands the cursor back.
pub fn mark_read(through: i64) -> ReadCursor {
    ReadCursor {
        read_cursor: through,
        read_state_stored: false,
    }
}
