//! Inquiries: ideas (`submit_idea`) and contact messages (`contact_marketplace`) for the
//! operator. Each is stored as sent and answered with its id; the id is the capability to read
//! the inquiry's thread later (the contact surfaces define those threads).

use serde_json::{Value, json};

use super::App;
use crate::args::Args;
use crate::error::{Error, Result};
use crate::store::agents::AgentRow;
use crate::store::inquiries::{self as store, InquiryRow, MessageRow};

/// What every message's `emailStatus` says: this self-hosted server has no mail settings, so
/// no email is ever sent for an inquiry or a reply; the thread is the only channel.
pub const EMAIL_NOT_CONFIGURED: &str = "not_configured";

pub const SUBJECT_MAX: usize = 200;
pub const MESSAGE_MAX: usize = 10_000;
pub const SHORT_MAX: usize = 100;
pub const EMAIL_MAX: usize = 254;
const IMPACT_MAX: usize = 2_000;

/// What kind of inquiry is being sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `{title*, description*, category, submittedBy, impact}`.
    Idea,
    /// `{subject*, message*, category, name, email, submittedBy}`.
    Contact,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Idea => "idea",
            Kind::Contact => "contact",
        }
    }
}

/// Stores an idea or a contact message (the MCP tools `submit_idea`, `contact_marketplace`);
/// answers `{id, kind, status, createdAt}`. Counts against the inquiry limit of the client IP
/// (`contact::INQUIRIES`, shared with `POST /api/inquiries` and service requests).
///
/// # Errors
/// `INVALID_ARGUMENT` for a missing, unknown or oversized field.
pub async fn submit(
    app: &App,
    ip: &str,
    kind: Kind,
    sender: Option<&AgentRow>,
    args: Args,
) -> Result<Value> {
    app.limiter.check(super::contact::INQUIRIES, ip)?;
    let row = create(app, kind, sender, args).await?;
    Ok(json!({
        "id": row.id,
        "kind": row.kind,
        "status": row.status,
        "createdAt": row.created_at,
        "note": "keep this id: it is the capability to read this inquiry's thread later",
    }))
}

/// Validates and stores an idea or a contact message, with its thread's first message (the
/// inquiry itself, from `inquirer`), in one write; answers the stored row.
///
/// # Errors
/// `INVALID_ARGUMENT` for a missing, unknown or oversized field.
pub async fn create(
    app: &App,
    kind: Kind,
    sender: Option<&AgentRow>,
    args: Args,
) -> Result<InquiryRow> {
    let (subject, message, name, email, impact) = match kind {
        Kind::Idea => {
            args.deny_unknown(&["title", "description", "category", "submittedBy", "impact"])?;
            (
                args.req_str("title", SUBJECT_MAX)?,
                req_text(&args, "description", MESSAGE_MAX)?,
                None,
                None,
                args.opt_str("impact", IMPACT_MAX)?,
            )
        }
        Kind::Contact => {
            args.deny_unknown(&[
                "subject",
                "message",
                "category",
                "name",
                "email",
                "submittedBy",
            ])?;
            let email = args.opt_str("email", EMAIL_MAX)?;
            if let Some(email) = &email
                && !plausible_email(email)
            {
                return Err(Error::invalid("`email` is not an email address"));
            }
            (
                args.req_str("subject", SUBJECT_MAX)?,
                req_text(&args, "message", MESSAGE_MAX)?,
                args.opt_str("name", SHORT_MAX)?,
                email,
                None,
            )
        }
    };
    let row = InquiryRow {
        id: uuid::Uuid::new_v4().to_string(),
        kind: kind.as_str().into(),
        subject,
        message,
        category: args.opt_str("category", SHORT_MAX)?,
        name,
        email,
        submitted_by: args.opt_str("submittedBy", SHORT_MAX)?,
        impact,
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

/// Whether `email` looks like an address (one `@`, a dotted domain, no whitespace).
pub fn plausible_email(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
                && !email.contains(char::is_whitespace)
        }
        None => false,
    }
}

/// A required multi-line text of 1..=`max_chars` characters (trimmed): like `Args::req_str`, but
/// line breaks and tabs are allowed (other control characters are not).
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field: missing, not a string, empty, too long.
pub fn req_text(args: &Args, name: &str, max_chars: usize) -> Result<String> {
    let text = match args.get(name) {
        None | Some(Value::Null) => return Err(Error::invalid(format!("`{name}` is required"))),
        Some(Value::String(text)) => text.trim(),
        Some(_) => return Err(Error::invalid(format!("`{name}` must be a string"))),
    };
    if text.is_empty() {
        return Err(Error::invalid(format!("`{name}` must not be empty")));
    }
    if text.chars().count() > max_chars {
        return Err(Error::invalid(format!(
            "`{name}` must be at most {max_chars} characters"
        )));
    }
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(Error::invalid(format!(
            "`{name}` must not contain control characters other than line breaks and tabs"
        )));
    }
    Ok(text.to_owned())
}
