//! Inquiries: ideas (`submit_idea`) and contact messages (`contact_marketplace`) for the
//! operator. Each is stored as sent and answered with its id; the id is the capability to read
//! the inquiry's thread later (the contact surfaces define those threads).

use serde_json::{Value, json};

use super::App;
use crate::args::Args;
use crate::error::{Error, Result};
use crate::store::agents::AgentRow;
use crate::store::inquiries::{self as store, InquiryRow};

const SUBJECT_MAX: usize = 200;
const MESSAGE_MAX: usize = 10_000;
const SHORT_MAX: usize = 100;
const EMAIL_MAX: usize = 254;
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

/// Stores an idea or a contact message; answers `{id, kind, status, createdAt}`.
///
/// # Errors
/// `INVALID_ARGUMENT` for a missing, unknown or oversized field.
pub async fn submit(app: &App, kind: Kind, sender: Option<&AgentRow>, args: Args) -> Result<Value> {
    let (subject, message, name, email, impact) = match kind {
        Kind::Idea => {
            args.deny_unknown(&["title", "description", "category", "submittedBy", "impact"])?;
            (
                args.req_str("title", SUBJECT_MAX)?,
                args.req_str("description", MESSAGE_MAX)?,
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
                args.req_str("message", MESSAGE_MAX)?,
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
    let stored = row.clone();
    app.store
        .write(move |conn| store::insert(conn, &stored))
        .await?;
    Ok(json!({
        "id": row.id,
        "kind": row.kind,
        "status": row.status,
        "createdAt": row.created_at,
        "note": "keep this id: it is the capability to read this inquiry's thread later",
    }))
}

fn plausible_email(email: &str) -> bool {
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
