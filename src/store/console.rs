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

/// The sellers' net held in escrow at the instant `at` (RFC 3339): ledger rows made by then and
/// not yet released.
///
/// # Errors
/// Database failure.
pub fn escrow_held_at(conn: &Connection, at: &str) -> Result<i64> {
    let held = conn
        .prepare_cached(
            "SELECT coalesce(sum(amount_cents - platform_fee_cents), 0) FROM ledger
             WHERE created_at <= ?1 AND (released_at IS NULL OR released_at > ?1)",
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

/// A listing as the console's lists show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingLine {
    pub id: String,
    pub title: String,
    pub active: bool,
    pub price_cents: i64,
    pub version: i64,
    pub sold_count: i64,
}

/// A seller's listings, newest first (at most `limit`), and how many there are.
///
/// # Errors
/// Database failure.
pub fn listings_of_seller(
    conn: &Connection,
    seller_id: &str,
    limit: i64,
) -> Result<(Vec<ListingLine>, i64)> {
    let rows = conn
        .prepare_cached(
            "SELECT id, title, active, price_cents, version, sold_count FROM listings
             WHERE seller_id = ?1 ORDER BY seq DESC LIMIT ?2",
        )?
        .query_map(params![seller_id, limit], |row| {
            Ok(ListingLine {
                id: row.get(0)?,
                title: row.get(1)?,
                active: row.get(2)?,
                price_cents: row.get(3)?,
                version: row.get(4)?,
                sold_count: row.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let total = conn
        .prepare_cached("SELECT count(*) FROM listings WHERE seller_id = ?1")?
        .query_row(params![seller_id], |row| row.get(0))?;
    Ok((rows, total))
}

/// A purchase as the console lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurchaseLine {
    pub id: String,
    pub listing_id: String,
    pub listing_title: String,
    pub buyer_handle: Option<String>,
    pub seller_handle: String,
    pub status: String,
    pub rail: String,
    pub amount_cents: i64,
    pub created_at: String,
    /// The ledger row's escrow: `held` or `released`, and when it is or was released.
    pub escrow: Option<String>,
    pub release_at: Option<String>,
    /// The checkout session of a purchase on a checkout rail (its capability).
    pub checkout_session: Option<String>,
}

const PURCHASE_LINE: &str =
    "SELECT p.id, p.listing_id, l.title, p.buyer_handle, s.handle, p.status, p.rail,
            p.amount_cents, p.created_at, g.status, coalesce(g.released_at, g.release_at),
            p.checkout_session
     FROM purchases p JOIN listings l ON l.id = p.listing_id JOIN agents s ON s.id = p.seller_id
     LEFT JOIN ledger g ON g.purchase_id = p.id";

fn purchase_line(row: &rusqlite::Row<'_>) -> rusqlite::Result<PurchaseLine> {
    Ok(PurchaseLine {
        id: row.get(0)?,
        listing_id: row.get(1)?,
        listing_title: row.get(2)?,
        buyer_handle: row.get(3)?,
        seller_handle: row.get(4)?,
        status: row.get(5)?,
        rail: row.get(6)?,
        amount_cents: row.get(7)?,
        created_at: row.get(8)?,
        escrow: row.get(9)?,
        release_at: row.get(10)?,
        checkout_session: row.get(11)?,
    })
}

/// Purchases, newest first, in a `status` and on a `rail` when given (at most `limit`), and
/// how many match.
///
/// # Errors
/// Database failure.
pub fn purchases(
    conn: &Connection,
    status: Option<&str>,
    rail: Option<&str>,
    buyer_id: Option<&str>,
    limit: i64,
) -> Result<(Vec<PurchaseLine>, i64)> {
    let filter = " WHERE (?1 IS NULL OR p.status = ?1) AND (?2 IS NULL OR p.rail = ?2)
                   AND (?3 IS NULL OR p.buyer_id = ?3)";
    let rows = conn
        .prepare_cached(&format!(
            "{PURCHASE_LINE}{filter} ORDER BY p.seq DESC LIMIT ?4"
        ))?
        .query_map(params![status, rail, buyer_id, limit], purchase_line)?
        .collect::<rusqlite::Result<_>>()?;
    let total = conn
        .prepare_cached(&format!("SELECT count(*) FROM purchases p{filter}"))?
        .query_row(params![status, rail, buyer_id], |row| row.get(0))?;
    Ok((rows, total))
}

/// The escrow queue: held ledger rows, the soonest release first (rows whose clock has not
/// started, awaiting delivery or shipment, last), at most `limit`.
///
/// # Errors
/// Database failure.
pub fn escrow_queue(conn: &Connection, limit: i64) -> Result<Vec<PurchaseLine>> {
    let rows = conn
        .prepare_cached(&format!(
            "{PURCHASE_LINE} WHERE g.status = 'held'
             ORDER BY g.release_at IS NULL, g.release_at, g.seq LIMIT ?1"
        ))?
        .query_map(params![limit], purchase_line)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
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

/// One thing an agent did, for the sandbox page's feed: what (`listing created`, `purchase
/// opened`, `purchase paid`), when, who, and the listing's title. Never a message body.
#[derive(Clone, Debug)]
pub struct ActivityLine {
    pub at: String,
    pub what: String,
    pub who: String,
    pub title: String,
}

/// The newest `limit` things agents did: listings created (not the reference samples the
/// instance seeds itself), purchases opened and paid (at one instant, a payment before an
/// opening before a listing, each newest first).
///
/// # Errors
/// Database failure.
pub fn activity(conn: &Connection, limit: i64) -> Result<Vec<ActivityLine>> {
    let mut stmt = conn.prepare_cached(
        "SELECT at, what, who, title FROM (
           SELECT * FROM (SELECT l.created_at AS at, 'listing created' AS what, a.handle AS who,
               l.title AS title, 0 AS ord, l.seq AS seq
             FROM listings l JOIN agents a ON a.id = l.seller_id WHERE l.is_sample = 0
             ORDER BY l.seq DESC LIMIT ?1)
           UNION ALL
           SELECT * FROM (SELECT p.created_at, 'purchase opened', coalesce(p.buyer_handle, 'anonymous'),
               l.title, 1, p.seq
             FROM purchases p JOIN listings l ON l.id = p.listing_id ORDER BY p.seq DESC LIMIT ?1)
           UNION ALL
           SELECT * FROM (SELECT p.paid_at, 'purchase paid', coalesce(p.buyer_handle, 'anonymous'),
               l.title, 2, p.seq
             FROM purchases p JOIN listings l ON l.id = p.listing_id
             WHERE p.paid_at IS NOT NULL ORDER BY p.paid_at DESC, p.seq DESC LIMIT ?1))
         ORDER BY at DESC, ord DESC, seq DESC LIMIT ?1",
    )?;
    let rows = stmt
        .query_map(params![limit], |row| {
            Ok(ActivityLine {
                at: row.get(0)?,
                what: row.get(1)?,
                who: row.get(2)?,
                title: row.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// How many messages were accepted at or after `since` (from the journal: no body).
///
/// # Errors
/// Database failure.
pub fn messages_since(conn: &Connection, since: &str) -> Result<i64> {
    let n = conn
        .prepare_cached("SELECT count(*) FROM message_journal WHERE accepted_at >= ?1")?
        .query_row(params![since], |row| row.get(0))?;
    Ok(n)
}
