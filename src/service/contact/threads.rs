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

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::inquiries::{self, EMAIL_NOT_CONFIGURED, MESSAGE_MAX, SHORT_MAX, SUBJECT_MAX};
use crate::args::{Args, int_in_range};
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::request::contact::NewInquiry;
use crate::service::ratelimit::INQUIRIES;
use crate::service::{App, hash_secret};
use crate::store::inquiries::{self as store, InquiryRow, MessageRow, RailRow};

/// Messages per thread, the inquiry itself included.
pub const THREAD_MAX: i64 = 200;
/// Attachments per message.
pub const ATTACHMENTS_MAX: usize = 5;
/// Decoded bytes per attachment.
pub const ATTACHMENT_BYTES_MAX: usize = 256 * 1024;
/// Decoded bytes of all attachments of one message (keeps a message under the 1 MiB body cap).
pub const ATTACHMENTS_TOTAL_MAX: usize = 512 * 1024;
/// Every consent token starts with this.
pub const RAIL_TOKEN_PREFIX: &str = "rail_";

const STATUSES: [&str; 4] = ["open", "answered", "resolved", "closed"];
const ATTACHMENT_NAME_MAX: usize = 200;
const CONTENT_TYPE_MAX: usize = 100;
const WHAT_MAX: usize = MESSAGE_MAX;
const BUDGET_MAX_CENTS: i64 = 1_000_000_000_000;

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
pub async fn post(app: &App, id: &str, poster: Poster<'_>, args: Args) -> Result<Value> {
    check_id(id)?;
    let rail = match poster {
        Poster::Inquirer { token: Some(token) } if token.starts_with(RAIL_TOKEN_PREFIX) => {
            Some(rail_for(app, id, token).await?)
        }
        _ => None,
    };
    args.deny_unknown(&["message", "authorName", "attachments"])?;
    let body = args.req_paragraph("message", MESSAGE_MAX)?;
    let author_name = args.opt_str("authorName", SHORT_MAX)?;
    let attachments = read_attachments(args.get("attachments"))?;
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

fn read_attachments(value: Option<&Value>) -> Result<Vec<Value>> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(Error::invalid(
                "`attachments` must be an array of {name, contentType, data}",
            ));
        }
    };
    if items.len() > ATTACHMENTS_MAX {
        return Err(Error::invalid(format!(
            "at most {ATTACHMENTS_MAX} attachments per message"
        )));
    }
    let mut total = 0;
    let mut out = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let field = |name: &str| format!("attachments[{index}].{name}");
        let args = Args::from_value(item.clone()).map_err(|_| {
            Error::invalid(format!(
                "`attachments[{index}]` must be an object {{name, contentType, data}}"
            ))
        })?;
        args.deny_unknown(&["name", "contentType", "data"])?;
        let name = match args.get("name") {
            Some(_) => args.req_str("name", ATTACHMENT_NAME_MAX),
            None => Err(Error::invalid(format!("`{}` is required", field("name")))),
        }?;
        let content_type = args.req_str("contentType", CONTENT_TYPE_MAX).map_err(|_| {
            Error::invalid(format!(
                "`{}` is required (type/subtype)",
                field("contentType")
            ))
        })?;
        if !plausible_media_type(&content_type) {
            return Err(Error::invalid(format!(
                "`{}` must be a media type such as text/plain",
                field("contentType")
            )));
        }
        let Some(Value::String(data)) = args.get("data") else {
            return Err(Error::invalid(format!(
                "`{}` must be a base64 string",
                field("data")
            )));
        };
        // Cheap bound before decoding: 4 base64 characters carry 3 bytes.
        if data.len() > (ATTACHMENT_BYTES_MAX / 3 + 1) * 4 {
            return Err(Error::invalid(format!(
                "`{}` exceeds {ATTACHMENT_BYTES_MAX} bytes decoded",
                field("data")
            )));
        }
        let bytes = STANDARD.decode(data).map_err(|error| {
            Error::invalid(format!(
                "`{}` is not valid padded base64: {error}",
                field("data")
            ))
        })?;
        if bytes.len() > ATTACHMENT_BYTES_MAX {
            return Err(Error::invalid(format!(
                "`{}` exceeds {ATTACHMENT_BYTES_MAX} bytes decoded",
                field("data")
            )));
        }
        total += bytes.len();
        if total > ATTACHMENTS_TOTAL_MAX {
            return Err(Error::invalid(format!(
                "attachments exceed {ATTACHMENTS_TOTAL_MAX} bytes decoded per message"
            )));
        }
        out.push(json!({
            "name": name,
            "contentType": content_type,
            "size": bytes.len(),
            "data": data,
        }));
    }
    Ok(out)
}

fn plausible_media_type(text: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&^_.+-".contains(c))
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    matches!(essence.split_once('/'), Some((kind, sub)) if token(kind) && token(sub))
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
pub async fn set_status(app: &App, id: &str, args: Args) -> Result<Value> {
    check_id(id)?;
    args.deny_unknown(&["status"])?;
    let status = args.req_str("status", SHORT_MAX)?;
    if !STATUSES.contains(&status.as_str()) {
        return Err(Error::invalid(format!(
            "`status` must be one of {}",
            STATUSES.join(", ")
        )));
    }
    let key = id.to_owned();
    let row = app
        .store
        .write(move |conn| {
            if !store::set_status(conn, &key, &status)? {
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
pub async fn create_rail(app: &App, args: Args) -> Result<Value> {
    args.deny_unknown(&["rootInquiryId"])?;
    let root = args.req_str("rootInquiryId", 64)?;
    check_id(&root)?;
    let token = format!("{RAIL_TOKEN_PREFIX}{}", b64url(&random_bytes::<32>()));
    let rail = RailRow {
        id: uuid::Uuid::new_v4().to_string(),
        root_inquiry_id: root.clone(),
        consent_token_hash: hash_secret(&token),
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
pub async fn service_request(app: &App, ip: &str, args: Args) -> Result<Value> {
    app.limiter.check(INQUIRIES, ip)?;
    args.deny_unknown(&[
        "what",
        "title",
        "budget",
        "deadline",
        "contact",
        "submittedBy",
    ])?;
    let what = args.req_paragraph("what", WHAT_MAX)?;
    let title = args.opt_str("title", SUBJECT_MAX)?;
    let budget = match args.get("budget") {
        None | Some(Value::Null) => Value::Null,
        Some(value @ Value::Object(_)) => {
            let budget = Args::from_value(value.clone())?;
            budget.deny_unknown(&["amountCents", "currency"])?;
            let amount = match budget.get("amountCents") {
                Some(value) => int_in_range("budget.amountCents", value, 1, BUDGET_MAX_CENTS)?,
                None => return Err(Error::invalid("`budget.amountCents` is required")),
            };
            let currency = budget
                .opt_str("currency", 3)?
                .unwrap_or_else(|| "USD".into());
            if currency.len() != 3 || !currency.chars().all(|c| c.is_ascii_uppercase()) {
                return Err(Error::invalid(
                    "`budget.currency` must be a three-letter code such as USD",
                ));
            }
            json!({ "amountCents": amount, "currency": currency })
        }
        Some(_) => {
            return Err(Error::invalid(
                "`budget` must be an object {amountCents, currency}",
            ));
        }
    };
    let deadline = args.opt_str("deadline", 10)?;
    if let Some(deadline) = &deadline
        && deadline.parse::<jiff::civil::Date>().is_err()
    {
        return Err(Error::invalid("`deadline` must be a date YYYY-MM-DD"));
    }
    let (name, email, handle) = match args.get("contact") {
        None | Some(Value::Null) => (None, None, None),
        Some(value @ Value::Object(_)) => {
            let contact = Args::from_value(value.clone())?;
            contact.deny_unknown(&["name", "email", "handle"])?;
            let email = contact.opt_str("email", inquiries::EMAIL_MAX)?;
            if let Some(email) = &email
                && !inquiries::plausible_email(email)
            {
                return Err(Error::invalid("`contact.email` is not an email address"));
            }
            (
                contact.opt_str("name", SHORT_MAX)?,
                email,
                contact.opt_str("handle", SHORT_MAX)?,
            )
        }
        Some(_) => {
            return Err(Error::invalid(
                "`contact` must be an object {name, email, handle}",
            ));
        }
    };
    let submitted_by = args.opt_str("submittedBy", SHORT_MAX)?;
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
