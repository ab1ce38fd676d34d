//! Orders: purchases asked for as A2A tasks (`orders` table). An order's id is its purchase's
//! id once the purchase is made.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;

/// An order as stored.
#[derive(Clone, Debug)]
pub struct OrderRow {
    pub id: String,
    pub buyer_id: String,
    pub context_id: String,
    pub listing_id: String,
    /// `card` or `x402`.
    pub rail: String,
    /// The purchase's own members as sent, JSON.
    pub request: String,
    /// `open` or `canceled`.
    pub status: String,
    pub payment_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const COLUMNS: &str = "id, buyer_id, context_id, listing_id, rail, request, status, payment_error, created_at, updated_at";

fn from_row(row: &Row<'_>) -> rusqlite::Result<OrderRow> {
    Ok(OrderRow {
        id: row.get(0)?,
        buyer_id: row.get(1)?,
        context_id: row.get(2)?,
        listing_id: row.get(3)?,
        rail: row.get(4)?,
        request: row.get(5)?,
        status: row.get(6)?,
        payment_error: row.get(7)?,
        created_at: row.get(8)?,
        updated_at: row.get(9)?,
    })
}

/// Records a new order.
///
/// # Errors
/// Database failure.
pub fn insert(conn: &Connection, order: &OrderRow) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO orders ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    ))?
    .execute(params![
        order.id,
        order.buyer_id,
        order.context_id,
        order.listing_id,
        order.rail,
        order.request,
        order.status,
        order.payment_error,
        order.created_at,
        order.updated_at,
    ])?;
    Ok(())
}

/// The buyer's order `id`, if there is one.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, buyer_id: &str, id: &str) -> Result<Option<OrderRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM orders WHERE id = ?1 AND buyer_id = ?2"
        ))?
        .query_row(params![id, buyer_id], from_row)
        .optional()?)
}

/// Removes an order whose purchase was refused before it was made.
///
/// # Errors
/// Database failure.
pub fn forget(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM orders WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Marks an open order canceled; false when it was not open.
///
/// # Errors
/// Database failure.
pub fn cancel(conn: &Connection, id: &str, at: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE orders SET status = 'canceled', updated_at = ?2 WHERE id = ?1 AND status = 'open'",
        )?
        .execute(params![id, at])?
        == 1)
}

/// Records (or clears) the last refused payment of an order.
///
/// # Errors
/// Database failure.
pub fn set_payment_error(conn: &Connection, id: &str, error: Option<&str>, at: &str) -> Result<()> {
    conn.prepare_cached("UPDATE orders SET payment_error = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![id, error, at])?;
    Ok(())
}

/// Records that an order changed now (its purchase's checkout was ended).
///
/// # Errors
/// Database failure.
pub fn touch(conn: &Connection, id: &str, at: &str) -> Result<()> {
    conn.prepare_cached("UPDATE orders SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![id, at])?;
    Ok(())
}

/// When an order's state last changed: the latest of its own change and its purchase's
/// payment and delivery (timestamps in one format, so the latest string is the latest time).
pub const STATUS_AT: &str =
    "MAX(o.updated_at, COALESCE(p.paid_at, ''), COALESCE(p.delivered_at, ''))";

/// What an order's state comes to for a list's filter: its purchase's status, or, before a
/// purchase, `pending_payment` while open and `cancelled` once canceled.
const STATE: &str =
    "COALESCE(p.status, CASE o.status WHEN 'canceled' THEN 'cancelled' ELSE 'pending_payment' END)";

/// A buyer's orders, the latest change first ([`STATUS_AT`]), with the number that match: in
/// context `context` (any when `None`), in one of `states` (purchase statuses, see [`STATE`];
/// any when empty), changed after `after` (any when `None`).
///
/// # Errors
/// Database failure.
pub fn of_buyer(
    conn: &Connection,
    buyer_id: &str,
    context: Option<&str>,
    states: &[&str],
    after: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<(Vec<OrderRow>, i64)> {
    let states = serde_json::to_string(states).unwrap_or_else(|_| "[]".into());
    let filter = format!(
        "o.buyer_id = ?1 AND (?2 IS NULL OR o.context_id = ?2)
         AND (?3 = '[]' OR {STATE} IN (SELECT value FROM json_each(?3)))
         AND (?4 IS NULL OR {STATUS_AT} > ?4)"
    );
    let columns = COLUMNS
        .split(", ")
        .map(|column| format!("o.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {columns} FROM orders o LEFT JOIN purchases p ON p.id = o.id
             WHERE {filter} ORDER BY {STATUS_AT} DESC, o.seq DESC LIMIT ?5 OFFSET ?6"
        ))?
        .query_map(
            params![buyer_id, context, states, after, limit, offset],
            from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let total = conn
        .prepare_cached(&format!(
            "SELECT count(*) FROM orders o LEFT JOIN purchases p ON p.id = o.id WHERE {filter}"
        ))?
        .query_row(params![buyer_id, context, states, after], |row| row.get(0))?;
    Ok((rows, total))
}
