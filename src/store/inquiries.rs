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
        .query_row([id], |r| {
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
        })
        .optional()?)
}
