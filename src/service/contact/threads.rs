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

use serde::Serialize;
use serde_json::{Value, json};

use super::inquiries::{self, EMAIL_NOT_CONFIGURED};
use crate::error::{Error, Result};
use crate::request::Page;
use crate::request::contact::{InquiryList, NewInquiry, PostMessage, ServiceRequest};
use crate::service::ratelimit::INQUIRIES;
use crate::service::{App, hash_secret, mint_secret};
use crate::store::inquiries::{self as store, InquiryRow, MessageRow, RailRow};

/// Messages per thread, the inquiry itself included.
pub const THREAD_MAX: i64 = 200;

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
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InquiryView {
    pub id: String,
    pub kind: String,
    pub subject: String,
    pub message: String,
    pub category: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub submitted_by: Option<String>,
    /// An idea's impact (absent on other inquiries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impact: Option<String>,
    pub status: String,
    pub created_at: String,
    pub thread_url: String,
    pub messages_url: String,
}

fn view(app: &App, row: &InquiryRow) -> InquiryView {
    InquiryView {
        id: row.id.clone(),
        kind: row.kind.clone(),
        subject: row.subject.clone(),
        message: row.message.clone(),
        category: row.category.clone(),
        name: row.name.clone(),
        email: row.email.clone(),
        submitted_by: row.submitted_by.clone(),
        impact: row.impact.clone(),
        status: row.status.clone(),
        created_at: row.created_at.clone(),
        thread_url: app.url(&thread_path(&row.id)),
        messages_url: app.url(&format!("/api/inquiries/{}/messages", row.id)),
    }
}

/// One message of a thread.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    pub id: String,
    pub from: String,
    pub author_name: Option<String>,
    pub body: String,
    pub email_status: String,
    pub created_at: String,
    /// `{name, contentType, size, data}` each, as sent.
    pub attachments: Value,
}

fn message_view(row: &MessageRow) -> MessageView {
    MessageView {
        id: row.id.clone(),
        from: row.sender.clone(),
        author_name: row.author_name.clone(),
        body: row.body.clone(),
        email_status: row.email_status.clone(),
        created_at: row.created_at.clone(),
        attachments: serde_json::from_str(&row.attachments).unwrap_or_else(|_| json!([])),
    }
}

/// An inquiry just stored, with a word on keeping its id.
#[derive(Clone, Debug, Serialize)]
pub struct Created {
    #[serde(flatten)]
    pub inquiry: InquiryView,
    pub note: &'static str,
}

/// `GET /api/inquiries/{id}/thread`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    #[serde(flatten)]
    pub inquiry: InquiryView,
    /// The service request the thread answers, as stored (absent for other inquiries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_request: Option<Value>,
    pub message_count: usize,
    pub message_limit: i64,
    pub messages: Vec<MessageView>,
}

/// A message posted to a thread.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Posted {
    pub inquiry_id: String,
    pub status: String,
    pub message: MessageView,
    pub thread_url: String,
    /// The relay rail it came through (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rail_id: Option<String>,
}

/// `GET /api/operator/inquiries`.
#[derive(Clone, Debug, Serialize)]
pub struct InquiryPage {
    pub inquiries: Vec<ListedInquiry>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
    pub status: Option<&'static str>,
}

/// An inquiry in the operator's list.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedInquiry {
    #[serde(flatten)]
    pub inquiry: InquiryView,
    pub agent_id: Option<String>,
    pub message_count: i64,
}

/// `POST /api/rails`: the rail, and its consent token shown once.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RailCreated {
    pub rail: RailView,
    pub consent_token: String,
    pub note: &'static str,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RailView {
    pub id: String,
    pub root_inquiry_id: String,
    pub created_at: String,
    pub permits: Vec<String>,
    pub does_not_permit: &'static str,
}

/// `POST /api/services/request`: the request's thread, with the request as stored.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRequested {
    #[serde(flatten)]
    pub inquiry: InquiryView,
    pub service_request: ServiceRequestRecord,
    pub note: &'static str,
}

/// A service request as stored in `service_requests`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRequestRecord {
    pub id: String,
    pub title: Option<String>,
    pub what: String,
    /// `{amountCents, currency}` normalized, or null.
    pub budget: Value,
    pub deadline: Option<String>,
    pub contact: ServiceContact,
    pub submitted_by: Option<String>,
    pub created_at: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ServiceContact {
    pub name: Option<String>,
    pub email: Option<String>,
    pub handle: Option<String>,
}

/// `POST /api/inquiries`: stores a contact inquiry; answers it with its thread URL.
///
/// # Errors
/// `RATE_LIMITED`, `INVALID_ARGUMENT`.
pub async fn create(app: &App, ip: &str, request: Result<NewInquiry>) -> Result<Created> {
    let row = inquiries::create(app, ip, None, request).await?;
    Ok(Created {
        inquiry: view(app, &row),
        note: "keep this id: it is the capability to read this inquiry's thread and post follow-ups",
    })
}

/// `GET /api/inquiries/{id}/thread`: the inquiry and its messages, oldest first.
///
/// # Errors
/// `NOT_FOUND`.
pub async fn thread(app: &App, id: &str) -> Result<Thread> {
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
    Ok(Thread {
        inquiry: view(app, &row),
        service_request: request
            .map(|request| serde_json::from_str(&request).unwrap_or(Value::Null)),
        message_count: messages.len(),
        message_limit: THREAD_MAX,
        messages: messages.iter().map(message_view).collect(),
    })
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
) -> Result<Posted> {
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
    Ok(Posted {
        inquiry_id: id.to_owned(),
        status,
        message: message_view(&row),
        thread_url: app.url(&thread_path(id)),
        rail_id: rail.map(|rail| rail.id),
    })
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

/// `GET /api/operator/inquiries`: newest first, `{inquiries, total, limit, offset, status}` (the
/// request reader has checked the status).
///
/// # Errors
/// Database failure.
pub async fn list(app: &App, list: InquiryList) -> Result<InquiryPage> {
    let InquiryList { status, page } = list;
    let Page { limit, offset } = page;
    let (rows, total) = app
        .store
        .read(move |conn| store::list(conn, status, limit, offset))
        .await?;
    let inquiries = rows
        .iter()
        .map(|(row, count)| ListedInquiry {
            inquiry: view(app, row),
            agent_id: row.agent_id.clone(),
            message_count: *count,
        })
        .collect();
    Ok(InquiryPage {
        inquiries,
        total,
        limit,
        offset,
        status,
    })
}

/// `PATCH /api/operator/inquiries/{id}` `{status}`: answers the inquiry.
///
/// # Errors
/// `NOT_FOUND`, `INVALID_ARGUMENT`.
pub async fn set_status(app: &App, id: &str, status: &'static str) -> Result<InquiryView> {
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
    Ok(view(app, &row))
}

/// `POST /api/rails` `{rootInquiryId}`: approves a relay rail; the consent token is shown once.
///
/// # Errors
/// `INVALID_ARGUMENT`, `NOT_FOUND` for an unknown root inquiry.
pub async fn create_rail(app: &App, root: String) -> Result<RailCreated> {
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
    Ok(RailCreated {
        rail: RailView {
            id: rail.id,
            root_inquiry_id: rail.root_inquiry_id,
            created_at: rail.created_at,
            permits: vec![format!(
                "POST /api/inquiries/{root}/messages with `Authorization: Bearer <consentToken>`: post into the root inquiry's thread as `inquirer`, also when it is closed"
            )],
            does_not_permit: "any other inquiry (403 RAIL_SCOPE), reading beyond the thread the inquiry id already opens, operator or agent endpoints; agent inbox messages never need a rail",
        },
        consent_token: token,
        note: "the consent token is shown once and stored only as its SHA-256",
    })
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
) -> Result<ServiceRequested> {
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
    let request = ServiceRequestRecord {
        id: id.clone(),
        title: title.clone(),
        what: what.clone(),
        budget,
        deadline,
        contact: ServiceContact {
            name: name.clone(),
            email: email.clone(),
            handle,
        },
        submitted_by: submitted_by.clone(),
        created_at: created_at.clone(),
    };
    let stored = serde_json::to_string(&request)
        .map_err(|e| Error::Internal(format!("service request: {e}")))?;
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
    let row = inquiries::store_new(app, row, Some(stored)).await?;
    Ok(ServiceRequested {
        inquiry: view(app, &row),
        service_request: request,
        note: "keep this id: it is the capability to read this request's thread and post follow-ups; the operator answers there with a quote",
    })
}
