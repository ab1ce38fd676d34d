//! Inquiries: ideas (`submit_idea`) and contact messages (`contact_marketplace`) for the
//! operator. Each is stored as sent and answered with its id; the id is the capability to read
//! the inquiry's thread later (the contact surfaces define those threads).

use serde::Serialize;

use crate::error::Result;
use crate::request::contact::NewInquiry;
use crate::service::App;
use crate::service::identity::agents::check_email;
use crate::service::ratelimit::INQUIRIES;
use crate::store::agents::AgentRow;
use crate::store::inquiries::{self as store, InquiryRow, MessageRow};

/// What every message's `emailStatus` says: this self-hosted server has no mail settings, so
/// no email is ever sent for an inquiry or a reply; the thread is the only channel.
pub const EMAIL_NOT_CONFIGURED: &str = "not_configured";

/// Stores an idea or a contact message (the MCP tools `submit_idea`, `contact_marketplace`);
/// answers `{id, kind, status, createdAt}`.
///
/// # Errors
/// As [`create`].
pub async fn submit(
    app: &App,
    ip: &str,
    sender: Option<&AgentRow>,
    request: Result<NewInquiry>,
) -> Result<Submitted> {
    let row = create(app, ip, sender, request).await?;
    Ok(Submitted {
        id: row.id,
        kind: row.kind,
        status: row.status,
        created_at: row.created_at,
        note: "keep this id: it is the capability to read this inquiry's thread later",
    })
}

/// An idea or contact message stored through MCP.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    pub id: String,
    pub kind: String,
    pub status: String,
    pub created_at: String,
    pub note: &'static str,
}

/// Stores an idea or a contact message, with its thread's first message (the inquiry itself,
/// from `inquirer`), in one write; answers the stored row. Every attempt counts against the
/// inquiry limit of the client IP (`ratelimit::INQUIRIES`, shared by every way in), a malformed
/// one included, as an anti-abuse measure: so the request comes with its parse outcome.
///
/// # Errors
/// `RATE_LIMITED`; the parse error; `INVALID_ARGUMENT` for an implausible email.
pub async fn create(
    app: &App,
    ip: &str,
    sender: Option<&AgentRow>,
    request: Result<NewInquiry>,
) -> Result<InquiryRow> {
    app.limiter.check(INQUIRIES, ip)?;
    let request = request?;
    let email = request.email.map(check_email).transpose()?;
    let row = InquiryRow {
        id: uuid::Uuid::new_v4().to_string(),
        kind: request.kind.as_str().into(),
        subject: request.subject,
        message: request.message,
        category: request.category,
        name: request.name,
        email,
        submitted_by: request.submitted_by,
        impact: request.impact,
        agent_id: sender.map(|agent| agent.id.clone()),
        status: "open".into(),
        created_at: app.now(),
    };
    store_new(app, row, None).await
}

/// The thread's first message: the inquiry itself, from `inquirer`.
pub fn first_message(row: &InquiryRow) -> MessageRow {
    MessageRow {
        id: uuid::Uuid::new_v4().to_string(),
        inquiry_id: row.id.clone(),
        sender: "inquirer".into(),
        author_name: row.name.clone().or_else(|| row.submitted_by.clone()),
        body: row.message.clone(),
        attachments: "[]".into(),
        email_status: EMAIL_NOT_CONFIGURED.into(),
        created_at: row.created_at.clone(),
    }
}

/// Stores a new inquiry and its first message (and, for a service request, the request as
/// `(json)` under the same id) in one write job.
///
/// # Errors
/// Database failure.
pub async fn store_new(
    app: &App,
    row: InquiryRow,
    service_request: Option<String>,
) -> Result<InquiryRow> {
    let stored = row.clone();
    app.store
        .write(move |conn| {
            store::insert(conn, &stored)?;
            store::insert_message(conn, &first_message(&stored))?;
            if let Some(request) = &service_request {
                store::insert_service_request(conn, &stored.id, request, &stored.created_at)?;
            }
            Ok(())
        })
        .await?;
    Ok(row)
}
