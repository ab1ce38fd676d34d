//! Inquiries: ideas and contact messages sent to the operator.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// One stored inquiry.
#[derive(Clone, Debug)]
pub struct InquiryRow {
    pub id: String,
    /// `idea` or `contact`.
    pub kind: String,
    /// The idea's title or the contact message's subject.
    pub subject: String,
    /// The idea's description or the contact message's body.
    pub message: String,
    pub category: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub submitted_by: Option<String>,
    pub impact: Option<String>,
    /// The authenticated agent that sent it, if any.
    pub agent_id: Option<String>,
    pub status: String,
    pub created_at: String,
}

const COLUMNS: &str = "id, kind, subject, message, category, name, email, submitted_by, impact, agent_id, status, created_at";

/// Stores a new inquiry.
///
/// # Errors
/// Database failure.
pub fn insert(conn: &Connection, row: &InquiryRow) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO inquiries ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
    ))?
    .execute(params![
        row.id,
        row.kind,
        row.subject,
        row.message,
        row.category,
        row.name,
        row.email,
        row.submitted_by,
        row.impact,
        row.agent_id,
        row.status,
        row.created_at,
    ])?;
    Ok(())
}

/// One inquiry by id.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, id: &str) -> Result<Option<InquiryRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM inquiries WHERE id = ?1"))?
        .query_row([id], inquiry_from_row)
        .optional()?)
}

fn inquiry_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InquiryRow> {
    Ok(InquiryRow {
        id: r.get(0)?,
        kind: r.get(1)?,
        subject: r.get(2)?,
        message: r.get(3)?,
        category: r.get(4)?,
        name: r.get(5)?,
        email: r.get(6)?,
        submitted_by: r.get(7)?,
        impact: r.get(8)?,
        agent_id: r.get(9)?,
        status: r.get(10)?,
        created_at: r.get(11)?,
    })
}

/// One page of inquiries, newest first, optionally of one status, with each one's message
/// count; and the total matching.
///
/// # Errors
/// Database failure.
pub fn list(
    conn: &Connection,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<(Vec<(InquiryRow, i64)>, i64)> {
    let total: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM inquiries WHERE ?1 IS NULL OR status = ?1")?
        .query_row([status], |r| r.get(0))?;
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, (SELECT COUNT(*) FROM inquiry_messages m WHERE m.inquiry_id = inquiries.id) \
             FROM inquiries WHERE ?1 IS NULL OR status = ?1 ORDER BY seq DESC LIMIT ?2 OFFSET ?3"
        ))?
        .query_map(params![status, limit, offset], |r| {
            Ok((inquiry_from_row(r)?, r.get(12)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

/// Sets an inquiry's status; false when there is no such inquiry.
///
/// # Errors
/// Database failure.
pub fn set_status(conn: &Connection, id: &str, status: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE inquiries SET status = ?2 WHERE id = ?1")?
        .execute([id, status])?
        == 1)
}

/// One message of an inquiry's thread.
#[derive(Clone, Debug)]
pub struct MessageRow {
    pub id: String,
    pub inquiry_id: String,
    /// `team` or `inquirer`.
    pub sender: String,
    pub author_name: Option<String>,
    pub body: String,
    /// A JSON array of `{name, contentType, size, data}`.
    pub attachments: String,
    pub email_status: String,
    pub created_at: String,
}

/// Appends a message to a thread.
///
/// # Errors
/// Database failure.
pub fn insert_message(conn: &Connection, row: &MessageRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO inquiry_messages (id, inquiry_id, sender, author_name, body, attachments, email_status, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        row.id,
        row.inquiry_id,
        row.sender,
        row.author_name,
        row.body,
        row.attachments,
        row.email_status,
        row.created_at,
    ])?;
    Ok(())
}

/// How many messages a thread holds.
///
/// # Errors
/// Database failure.
pub fn count_messages(conn: &Connection, inquiry_id: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT COUNT(*) FROM inquiry_messages WHERE inquiry_id = ?1")?
        .query_row([inquiry_id], |r| r.get(0))?)
}

/// A thread's messages, oldest first.
///
/// # Errors
/// Database failure.
pub fn messages(conn: &Connection, inquiry_id: &str) -> Result<Vec<MessageRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT id, inquiry_id, sender, author_name, body, attachments, email_status, created_at \
             FROM inquiry_messages WHERE inquiry_id = ?1 ORDER BY seq",
        )?
        .query_map([inquiry_id], |r| {
            Ok(MessageRow {
                id: r.get(0)?,
                inquiry_id: r.get(1)?,
                sender: r.get(2)?,
                author_name: r.get(3)?,
                body: r.get(4)?,
                attachments: r.get(5)?,
                email_status: r.get(6)?,
                created_at: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// One relay rail.
#[derive(Clone, Debug)]
pub struct RailRow {
    pub id: String,
    pub root_inquiry_id: String,
    /// SHA-256 (hex) of the consent token; the token itself is never stored.
    pub consent_token_hash: String,
    pub created_at: String,
}

/// Stores a rail.
///
/// # Errors
/// Database failure.
pub fn insert_rail(conn: &Connection, row: &RailRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO rails (id, root_inquiry_id, consent_token_hash, created_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        row.id,
        row.root_inquiry_id,
        row.consent_token_hash,
        row.created_at
    ])?;
    Ok(())
}

/// The rail whose consent token hashes to `hash`.
///
/// # Errors
/// Database failure.
pub fn rail_by_token_hash(conn: &Connection, hash: &str) -> Result<Option<RailRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT id, root_inquiry_id, consent_token_hash, created_at FROM rails WHERE consent_token_hash = ?1",
        )?
        .query_row([hash], |r| {
            Ok(RailRow {
                id: r.get(0)?,
                root_inquiry_id: r.get(1)?,
                consent_token_hash: r.get(2)?,
                created_at: r.get(3)?,
            })
        })
        .optional()?)
}

/// Stores a service request (its JSON as sent, normalized).
///
/// # Errors
/// Database failure.
pub fn insert_service_request(
    conn: &Connection,
    id: &str,
    request: &str,
    created_at: &str,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO service_requests (id, request, created_at) VALUES (?1, ?2, ?3)",
    )?
    .execute([id, request, created_at])?;
    Ok(())
}

/// The stored JSON of a service request, by id (the id of its inquiry).
///
/// # Errors
/// Database failure.
pub fn find_service_request(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT request FROM service_requests WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}
