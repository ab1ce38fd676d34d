//! Contact: inquiry threads, operator handling, relay rails and service requests.
//!
//! - An inquiry (`POST /api/inquiries`, or the MCP tools `submit_idea` / `contact_marketplace`)
//!   opens a thread whose first message is the inquiry itself. Its UUID is the capability: whoever
//!   holds it reads the thread and posts follow-ups as `inquirer`. Creation is limited to
//!   [`INQUIRIES`] per client IP (service requests count too).
//! - Every message: at most [`MESSAGE_MAX`] characters, at most [`ATTACHMENTS_MAX`] base64
//!   attachments of at most [`ATTACHMENT_BYTES_MAX`] bytes decoded each and
//!   [`ATTACHMENTS_TOTAL_MAX`] together; a thread holds at most [`THREAD_MAX`] messages
//!   (then 409 `THREAD_FULL`).
//!
//! [`MESSAGE_MAX`]: crate::request::contact::MESSAGE_MAX
//! [`ATTACHMENTS_MAX`]: crate::request::contact::ATTACHMENTS_MAX
//! [`ATTACHMENT_BYTES_MAX`]: crate::request::contact::ATTACHMENT_BYTES_MAX
//! [`ATTACHMENTS_TOTAL_MAX`]: crate::request::contact::ATTACHMENTS_TOTAL_MAX
//! - `emailStatus` is always `not_configured`: this self-hosted server has no mail settings and
//!   sends no email; the thread is the only channel.
//! - Statuses: `open` → (team reply) `answered` → (inquirer follow-up) `open` again; the operator
//!   sets any of `open`, `answered`, `resolved`, `closed`. A `closed` thread refuses follow-ups by
//!   capability (409 `INQUIRY_CLOSED`); the team may still reply (which makes it `answered`).
//! - A relay rail (operator-approved, rooted in one inquiry) has a consent token, shown once and
//!   stored only as its SHA-256. The token permits exactly one thing: posting into the root
//!   inquiry's thread as `inquirer` with `Authorization: Bearer <consentToken>` on
//!   `POST /api/inquiries/{rootInquiryId}/messages`, even when the inquiry is `closed` (the
//!   operator consented to that relay). It is refused on any other inquiry (403 `RAIL_SCOPE`)
//!   and grants nothing elsewhere (no operator, agent or reading rights). Agent inbox messages
//!   never need a rail.
//! - A service request (`POST /api/services/request`) is stored in `service_requests` and gets a
//!   thread through a `contact` inquiry of category `service` with the same id.

use serde_json::{Map, Value, json};

use super::inquiries::{self, EMAIL_NOT_CONFIGURED};
use crate::error::{Error, Result};
use crate::request::contact::{NewInquiry, PostMessage, ServiceRequest};
use crate::service::ratelimit::INQUIRIES;
use crate::service::{App, hash_secret, mint_secret};
use crate::store::inquiries::{self as store, InquiryRow, MessageRow, RailRow};

/// Messages per thread, the inquiry itself included.
pub const THREAD_MAX: i64 = 200;
use crate::request::contact::STATUSES;

/// Every consent token starts with this.
pub const RAIL_TOKEN_PREFIX: &str = "rail_";

/// Who posts a message.
pub enum Poster<'a> {
    /// The operator, as `team`.
    Team,
    /// The inquirer, by the inquiry id (the capability) or a rail's consent token.
    Inquirer { token: Option<&'a str> },
}

fn not_found(id: &str) -> Error {
    Error::NotFound(format!("no inquiry `{id}`"))
}

/// Refuses anything but a UUID before touching the database.
fn check_id(id: &str) -> Result<()> {
    uuid::Uuid::parse_str(id).map_err(|_| not_found(id))?;
    Ok(())
}

fn thread_path(id: &str) -> String {
    format!("/api/inquiries/{id}/thread")
}

/// The inquiry as its holder and the operator see it.
fn view(app: &App, row: &InquiryRow) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("id".into(), json!(row.id));
    out.insert("kind".into(), json!(row.kind));
    out.insert("subject".into(), json!(row.subject));
    out.insert("message".into(), json!(row.message));
    out.insert("category".into(), json!(row.category));
    out.insert("name".into(), json!(row.name));
    out.insert("email".into(), json!(row.email));
    out.insert("submittedBy".into(), json!(row.submitted_by));
    if row.impact.is_some() {
        out.insert("impact".into(), json!(row.impact));
    }
    out.insert("status".into(), json!(row.status));
    out.insert("createdAt".into(), json!(row.created_at));
    out.insert("threadUrl".into(), json!(app.url(&thread_path(&row.id))));
    out.insert(
        "messagesUrl".into(),
        json!(app.url(&format!("/api/inquiries/{}/messages", row.id))),
    );
    out
}

fn message_view(row: &MessageRow) -> Value {
    let attachments: Value = serde_json::from_str(&row.attachments).unwrap_or_else(|_| json!([]));
    json!({
        "id": row.id,
        "from": row.sender,
        "authorName": row.author_name,
        "body": row.body,
        "emailStatus": row.email_status,
        "createdAt": row.created_at,
        "attachments": attachments,
    })
}

/// `POST /api/inquiries`: stores a contact inquiry; answers it with its thread URL.
///
/// # Errors
/// `RATE_LIMITED`, `INVALID_ARGUMENT`.
pub async fn create(app: &App, ip: &str, request: Result<NewInquiry>) -> Result<Value> {
    let row = inquiries::create(app, ip, None, request).await?;
    let mut out = view(app, &row);
    out.insert(
        "note".into(),
        json!(
            "keep this id: it is the capability to read this inquiry's thread and post follow-ups"
        ),
    );
    Ok(Value::Object(out))
}

/// `GET /api/inquiries/{id}/thread`: the inquiry and its messages, oldest first.
///
/// # Errors
/// `NOT_FOUND`.
pub async fn thread(app: &App, id: &str) -> Result<Value> {
    check_id(id)?;
    let key = id.to_owned();
    let (row, messages, request) = app
        .store
        .read(move |conn| {
            let Some(row) = store::find(conn, &key)? else {
                return Ok(None);
            };
            let messages = store::messages(conn, &key)?;
            let request = store::find_service_request(conn, &key)?;
            Ok(Some((row, messages, request)))
        })
        .await?
        .ok_or_else(|| not_found(id))?;
    let mut out = view(app, &row);
    if let Some(request) = request {
        out.insert(
            "serviceRequest".into(),
            serde_json::from_str(&request).unwrap_or(Value::Null),
        );
    }
    out.insert("messageCount".into(), json!(messages.len()));
    out.insert("messageLimit".into(), json!(THREAD_MAX));
    out.insert(
        "messages".into(),
        Value::Array(messages.iter().map(message_view).collect()),
    );
    Ok(Value::Object(out))
}

/// Posts a message to a thread: a follow-up by the inquirer (`POST /api/inquiries/{id}/messages`)
/// or a reply by the team (`POST /api/operator/inquiries/{id}/reply`). Body:
/// `{message*, authorName, attachments: [{name, contentType, data (base64)}]}`.
/// Answers `{message, inquiryId, status, threadUrl}`.
///
/// # Errors
/// `NOT_FOUND`, `INVALID_ARGUMENT`, 401 for an unknown consent token, 403 `RAIL_SCOPE`,
/// 409 `THREAD_FULL` / `INQUIRY_CLOSED`.
pub async fn post(
    app: &App,
    id: &str,
    poster: Poster<'_>,
    request: Result<PostMessage>,
) -> Result<Value> {
    check_id(id)?;
    let rail = match poster {
        Poster::Inquirer { token: Some(token) } if token.starts_with(RAIL_TOKEN_PREFIX) => {
            Some(rail_for(app, id, token).await?)
        }
        _ => None,
    };
    // A rail's scope is checked before the body (a token for another thread learns nothing).
    let PostMessage {
        message: body,
        author_name,
        attachments,
    } = request?;
    let team = matches!(poster, Poster::Team);
    let row = MessageRow {
        id: uuid::Uuid::new_v4().to_string(),
        inquiry_id: id.to_owned(),
        sender: if team { "team" } else { "inquirer" }.into(),
        author_name: author_name.or_else(|| team.then(|| "Team".to_owned())),
        body,
        attachments: Value::Array(attachments).to_string(),
        email_status: EMAIL_NOT_CONFIGURED.into(),
        created_at: app.now(),
    };
    let stored = row.clone();
    let via_rail = rail.is_some();
    let status = app
        .store
        .write(move |conn| {
            let Some(inquiry) = store::find(conn, &stored.inquiry_id)? else {
                return Err(not_found(&stored.inquiry_id));
            };
            if !team && !via_rail && inquiry.status == "closed" {
                return Err(Error::Conflict {
                    code: "INQUIRY_CLOSED",
                    message: "this inquiry is closed; open a new inquiry".into(),
                });
            }
            if store::count_messages(conn, &stored.inquiry_id)? >= THREAD_MAX {
                return Err(Error::Conflict {
                    code: "THREAD_FULL",
                    message: format!(
                        "this thread holds its maximum of {THREAD_MAX} messages; open a new inquiry"
                    ),
                });
            }
            store::insert_message(conn, &stored)?;
            let status = if team {
                "answered"
            } else if matches!(inquiry.status.as_str(), "answered" | "resolved") {
                "open"
            } else {
                inquiry.status.as_str()
            }
            .to_owned();
            if status != inquiry.status {
                store::set_status(conn, &stored.inquiry_id, &status)?;
            }
            Ok(status)
        })
        .await?;
    let mut out = json!({
        "inquiryId": id,
        "status": status,
        "message": message_view(&row),
        "threadUrl": app.url(&thread_path(id)),
    });
    if let Some(rail) = rail {
        out["railId"] = json!(rail.id);
    }
    Ok(out)
}

/// The rail a consent token belongs to, if it is rooted in inquiry `id`.
async fn rail_for(app: &App, id: &str, token: &str) -> Result<RailRow> {
    let hash = hash_secret(token);
    let rail = app
        .store
        .read(move |conn| store::rail_by_token_hash(conn, &hash))
        .await?
        .ok_or_else(|| Error::Unauthenticated("unknown relay rail consent token".into()))?;
    if rail.root_inquiry_id != id {
        return Err(Error::Forbidden {
            code: "RAIL_SCOPE",
            message: "this consent token belongs to a rail rooted in another inquiry".into(),
        });
    }
    Ok(rail)
}

/// `GET /api/operator/inquiries`: newest first, `{inquiries, total, limit, offset, status}`.
///
/// # Errors
/// `INVALID_ARGUMENT` for an unknown status.
pub async fn list(app: &App, status: Option<String>, limit: i64, offset: i64) -> Result<Value> {
    if let Some(status) = &status
        && !STATUSES.contains(&status.as_str())
    {
        return Err(Error::invalid(format!(
            "`status` must be one of {}",
            STATUSES.join(", ")
        )));
    }
    let filter = status.clone();
    let (rows, total) = app
        .store
        .read(move |conn| store::list(conn, filter.as_deref(), limit, offset))
        .await?;
    let inquiries: Vec<Value> = rows
        .iter()
        .map(|(row, count)| {
            let mut out = view(app, row);
            out.insert("agentId".into(), json!(row.agent_id));
            out.insert("messageCount".into(), json!(count));
            Value::Object(out)
        })
        .collect();
    Ok(json!({
        "inquiries": inquiries,
        "total": total,
        "limit": limit,
        "offset": offset,
        "status": status,
    }))
}

/// `PATCH /api/operator/inquiries/{id}` `{status}`: answers the inquiry.
///
/// # Errors
/// `NOT_FOUND`, `INVALID_ARGUMENT`.
pub async fn set_status(app: &App, id: &str, status: &'static str) -> Result<Value> {
    check_id(id)?;
    let key = id.to_owned();
    let row = app
        .store
        .write(move |conn| {
            if !store::set_status(conn, &key, status)? {
                return Ok(None);
            }
            store::find(conn, &key)
        })
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Value::Object(view(app, &row)))
}

/// `POST /api/rails` `{rootInquiryId}`: approves a relay rail; the consent token is shown once.
///
/// # Errors
/// `INVALID_ARGUMENT`, `NOT_FOUND` for an unknown root inquiry.
pub async fn create_rail(app: &App, root: String) -> Result<Value> {
    check_id(&root)?;
    let (token, token_hash) = mint_secret(RAIL_TOKEN_PREFIX);
    let rail = RailRow {
        id: uuid::Uuid::new_v4().to_string(),
        root_inquiry_id: root.clone(),
        consent_token_hash: token_hash,
        created_at: app.now(),
    };
    let stored = rail.clone();
    app.store
        .write(move |conn| {
            if store::find(conn, &stored.root_inquiry_id)?.is_none() {
                return Err(not_found(&stored.root_inquiry_id));
            }
            store::insert_rail(conn, &stored)
        })
        .await?;
    Ok(json!({
        "rail": {
            "id": rail.id,
            "rootInquiryId": rail.root_inquiry_id,
            "createdAt": rail.created_at,
            "permits": [format!(
                "POST /api/inquiries/{root}/messages with `Authorization: Bearer <consentToken>`: post into the root inquiry's thread as `inquirer`, also when it is closed"
            )],
            "doesNotPermit": "any other inquiry (403 RAIL_SCOPE), reading beyond the thread the inquiry id already opens, operator or agent endpoints; agent inbox messages never need a rail",
        },
        "consentToken": token,
        "note": "the consent token is shown once and stored only as its SHA-256",
    }))
}

/// `POST /api/services/request`: a request for quoted work.
///
/// Body: `{what* (≤ 10,000 characters: the work wanted), title (≤ 200), budget: {amountCents*
/// (1..=10^12), currency (ISO 4217, default USD)}, deadline (YYYY-MM-DD), contact: {name, email,
/// handle}, submittedBy}`. Stored as sent (normalized) in `service_requests`; its thread is a
/// `contact` inquiry of category `service` with the same id, which is returned.
///
/// # Errors
/// `RATE_LIMITED`, `INVALID_ARGUMENT`.
pub async fn service_request(
    app: &App,
    ip: &str,
    request: Result<ServiceRequest>,
) -> Result<Value> {
    // Every attempt counts, a malformed one included (anti-abuse), as for inquiries.
    app.limiter.check(INQUIRIES, ip)?;
    let ServiceRequest {
        what,
        title,
        budget,
        deadline,
        contact_name: name,
        contact_email: email,
        contact_handle: handle,
        submitted_by,
    } = request?;
    if let Some(email) = &email
        && !crate::service::identity::agents::plausible_email(email)
    {
        return Err(Error::invalid("`contact.email` is not an email address"));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let created_at = app.now();
    let request = json!({
        "id": id,
        "title": title,
        "what": what,
        "budget": budget,
        "deadline": deadline,
        "contact": { "name": name, "email": email, "handle": handle },
        "submittedBy": submitted_by,
        "createdAt": created_at,
    });
    let row = InquiryRow {
        id,
        kind: "contact".into(),
        subject: title.unwrap_or_else(|| "Service request".into()),
        message: what,
        category: Some("service".into()),
        name,
        email,
        submitted_by,
        impact: None,
        agent_id: None,
        status: "open".into(),
        created_at,
    };
    let row = inquiries::store_new(app, row, Some(request.to_string())).await?;
    let mut out = view(app, &row);
    out.insert("serviceRequest".into(), request);
    out.insert(
        "note".into(),
        json!("keep this id: it is the capability to read this request's thread and post follow-ups; the operator answers there with a quote"),
    );
    Ok(Value::Object(out))
}
