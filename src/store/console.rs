//! What the operator console reads beyond the other stores: daily series for its charts and
//! the counts of its overview. Counts and sums only: never a message body.

use rusqlite::{Connection, params};

use crate::error::Result;

/// Per day (`YYYY-MM-DD`, UTC, as stored): how many ledger rows (settled sales) were made and
/// their amount, for days at or after `since_day`; days without sales are absent.
///
/// # Errors
/// Database failure.
pub fn sales_per_day(conn: &Connection, since_day: &str) -> Result<Vec<(String, i64, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT substr(created_at, 1, 10) AS day, count(*), coalesce(sum(amount_cents), 0)
         FROM ledger WHERE created_at >= ?1 GROUP BY day ORDER BY day",
    )?;
    let rows = stmt
        .query_map(params![since_day], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// Per day: how many messages were accepted (from the journal, which keeps no body).
///
/// # Errors
/// Database failure.
pub fn messages_per_day(conn: &Connection, since_day: &str) -> Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT substr(accepted_at, 1, 10) AS day, count(*)
         FROM message_journal WHERE accepted_at >= ?1 GROUP BY day ORDER BY day",
    )?;
    let rows = stmt
        .query_map(params![since_day], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The sellers' net held in escrow at the instant `at` (RFC 3339): ledger rows made before it
/// and not released by then.
///
/// # Errors
/// Database failure.
pub fn escrow_held_at(conn: &Connection, at: &str) -> Result<i64> {
    let held = conn
        .prepare_cached(
            "SELECT coalesce(sum(amount_cents - platform_fee_cents), 0) FROM ledger
             WHERE created_at < ?1 AND (released_at IS NULL OR released_at >= ?1)",
        )?
        .query_row(params![at], |row| row.get(0))?;
    Ok(held)
}

/// Callback deliveries by outcome: (pending, delivered, dead).
///
/// # Errors
/// Database failure.
pub fn callback_outcomes(conn: &Connection) -> Result<(i64, i64, i64)> {
    let counts = conn
        .prepare_cached(
            "SELECT coalesce(sum(status = 'pending'), 0), coalesce(sum(status = 'delivered'), 0),
                    coalesce(sum(status = 'dead'), 0)
             FROM callback_deliveries",
        )?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_database_has_empty_series_and_zero_counts() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("bourse.db")).unwrap();
        let (sales, messages, held, outcomes) = store
            .read_blocking(|conn| {
                Ok((
                    sales_per_day(conn, "2026-01-01")?,
                    messages_per_day(conn, "2026-01-01")?,
                    escrow_held_at(conn, "2026-01-02T00:00:00Z")?,
                    callback_outcomes(conn)?,
                ))
            })
            .unwrap();
        assert!(sales.is_empty() && messages.is_empty());
        assert_eq!((held, outcomes), (0, (0, 0, 0)));
    }
}
