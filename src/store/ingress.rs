//! Admission-door decisions (`ingress_decisions`).

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// A stored decision.
pub struct DecisionRow {
    pub public_key: String,
    pub idempotency_key: String,
    pub request_digest: String,
    pub decision: &'static str,
    pub reason: &'static str,
    pub class: Option<String>,
    pub admission_id: Option<String>,
    pub answer: String,
    pub created_at: String,
}

/// The decision stored for `(public_key, idempotency_key)`: `(request_digest, answer)`.
///
/// # Errors
/// Database failure.
pub fn find(
    conn: &Connection,
    public_key: &str,
    idempotency_key: &str,
) -> Result<Option<(String, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT request_digest, answer FROM ingress_decisions
             WHERE public_key = ?1 AND idempotency_key = ?2",
        )?
        .query_row(params![public_key, idempotency_key], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

/// The admission id of an earlier ADMIT of `public_key` in `class`, if any.
///
/// # Errors
/// Database failure.
pub fn admission_for(conn: &Connection, public_key: &str, class: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT admission_id FROM ingress_decisions
             WHERE public_key = ?1 AND class = ?2 AND decision = 'ADMIT'
             ORDER BY created_at LIMIT 1",
        )?
        .query_row(params![public_key, class], |r| r.get(0))
        .optional()?)
}

/// Stores a decision.
///
/// # Errors
/// Database failure (including a duplicate key, which callers rule out first).
pub fn insert(conn: &Connection, row: &DecisionRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO ingress_decisions (public_key, idempotency_key, request_digest, decision,
             reason, class, admission_id, answer, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        row.public_key,
        row.idempotency_key,
        row.request_digest,
        row.decision,
        row.reason,
        row.class,
        row.admission_id,
        row.answer,
        row.created_at
    ])?;
    super::tlog::append(
        conn,
        &format!("ingress:{}:{}", row.public_key, row.idempotency_key),
        "bourse.ingress.decision",
        &row.answer,
    )?;
    Ok(())
}

/// Distinct public keys admitted in any class.
///
/// # Errors
/// Database failure.
pub fn admitted_keys(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(DISTINCT public_key) FROM ingress_decisions WHERE decision = 'ADMIT'",
        )?
        .query_row([], |r| r.get(0))?)
}

/// One group of decisions: `(decision, class, rows, distinct keys)`.
pub type DecisionCount = (String, Option<String>, i64, i64);

/// Counts for the public door description, by decision and class.
///
/// # Errors
/// Database failure.
pub fn counts(conn: &Connection) -> Result<Vec<DecisionCount>> {
    let mut stmt = conn.prepare_cached(
        "SELECT decision, class, count(*), count(DISTINCT public_key) FROM ingress_decisions
         GROUP BY decision, class ORDER BY decision, class",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
