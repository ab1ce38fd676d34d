//! Purchases, ledger rows and ratings.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;

/// One purchase as stored (never the deliverable itself).
#[derive(Clone, Debug)]
pub struct PurchaseRow {
    pub id: String,
    pub listing_id: String,
    pub buyer_id: Option<String>,
    pub buyer_handle: Option<String>,
    pub seller_id: String,
    pub status: String,
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub seller_net_cents: i64,
    pub fee_bps: i64,
    pub schedule_version: i64,
    pub rail: String,
    pub email: Option<String>,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub delivered_at: Option<String>,
    pub delivery_fingerprint: Option<String>,
    /// The signed purchase receipt, verbatim JSON.
    pub receipt: String,
    /// The checkout session of a paid purchase (its unguessable capability).
    pub checkout_session: Option<String>,
    /// When an unpaid checkout expires.
    pub expires_at: Option<String>,
    /// When the seller shipped a physical order.
    pub shipped_at: Option<String>,
    /// The rail's own checkout page (Stripe's hosted Checkout), when it has one.
    pub checkout_url: Option<String>,
    /// The rail's reference of the payment (Stripe PaymentIntent, x402 transaction hash).
    pub payment_ref: Option<String>,
    /// The paying wallet (x402).
    pub payer: Option<String>,
}

const COLUMNS: &str = "id, listing_id, buyer_id, buyer_handle, seller_id, status, amount_cents, platform_fee_cents,
    seller_net_cents, fee_bps, schedule_version, rail, email, created_at, paid_at, delivered_at, delivery_fingerprint,
    receipt, checkout_session, expires_at, shipped_at, checkout_url, payment_ref, payer";

fn from_row(row: &Row<'_>) -> rusqlite::Result<PurchaseRow> {
    Ok(PurchaseRow {
        id: row.get(0)?,
        listing_id: row.get(1)?,
        buyer_id: row.get(2)?,
        buyer_handle: row.get(3)?,
        seller_id: row.get(4)?,
        status: row.get(5)?,
        amount_cents: row.get(6)?,
        platform_fee_cents: row.get(7)?,
        seller_net_cents: row.get(8)?,
        fee_bps: row.get(9)?,
        schedule_version: row.get(10)?,
        rail: row.get(11)?,
        email: row.get(12)?,
        created_at: row.get(13)?,
        paid_at: row.get(14)?,
        delivered_at: row.get(15)?,
        delivery_fingerprint: row.get(16)?,
        receipt: row.get(17)?,
        checkout_session: row.get(18)?,
        expires_at: row.get(19)?,
        shipped_at: row.get(20)?,
        checkout_url: row.get(21)?,
        payment_ref: row.get(22)?,
        payer: row.get(23)?,
    })
}

/// Inserts a purchase.
///
/// # Errors
/// Database failure.
pub fn insert(conn: &Connection, p: &PurchaseRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO purchases (id, listing_id, buyer_id, buyer_handle, seller_id, status, amount_cents,
            platform_fee_cents, seller_net_cents, fee_bps, schedule_version, rail, email, created_at, paid_at,
            delivered_at, delivery_fingerprint, receipt, checkout_session, expires_at, checkout_url, payment_ref, payer)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
    )?
    .execute(params![
        p.id,
        p.listing_id,
        p.buyer_id,
        p.buyer_handle,
        p.seller_id,
        p.status,
        p.amount_cents,
        p.platform_fee_cents,
        p.seller_net_cents,
        p.fee_bps,
        p.schedule_version,
        p.rail,
        p.email,
        p.created_at,
        p.paid_at,
        p.delivered_at,
        p.delivery_fingerprint,
        p.receipt,
        p.checkout_session,
        p.expires_at,
        p.checkout_url,
        p.payment_ref,
        p.payer
    ])?;
    Ok(())
}

/// A purchase by its checkout session.
///
/// # Errors
/// Database failure.
pub fn find_by_session(conn: &Connection, session: &str) -> Result<Option<PurchaseRow>> {
    let sql = format!("SELECT {COLUMNS} FROM purchases WHERE checkout_session = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([session], from_row)
        .optional()?)
}

/// Records a paid reservation: status, time, the fee it closed at, the re-signed receipt, and
/// whatever the rail reports (its payment reference, the payer, a read capability). An
/// `expired` or `cancelled` reservation is revived too: callers decide whether a late payment
/// may still buy (`purchases::pay_in`, `x402::complete`). Answers whether a row changed.
///
/// # Errors
/// Database failure.
pub fn mark_paid(conn: &Connection, p: &PurchaseRow) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE purchases SET status = 'paid', paid_at = ?2, platform_fee_cents = ?3, seller_net_cents = ?4,
                fee_bps = ?5, schedule_version = ?6, receipt = ?7, payment_ref = coalesce(?8, payment_ref),
                payer = coalesce(?9, payer), checkout_session = coalesce(?10, checkout_session)
             WHERE id = ?1 AND status IN ('pending_payment', 'expired', 'cancelled')",
        )?
        .execute(params![
            p.id,
            p.paid_at,
            p.platform_fee_cents,
            p.seller_net_cents,
            p.fee_bps,
            p.schedule_version,
            p.receipt,
            p.payment_ref,
            p.payer,
            p.checkout_session
        ])?;
    Ok(changed == 1)
}

/// When each listing of `listing_ids` was last delivered to a buyer (its newest purchase in
/// status `delivered`); listings never delivered are absent.
///
/// # Errors
/// Database failure.
pub fn last_deliveries(conn: &Connection, listing_ids: &[String]) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT max(delivered_at) FROM purchases WHERE listing_id = ?1 AND status = 'delivered'",
    )?;
    let mut out = Vec::new();
    for id in listing_ids {
        let at: Option<String> = stmt.query_row([id], |r| r.get(0))?;
        if let Some(at) = at {
            out.push((id.clone(), at));
        }
    }
    Ok(out)
}

/// A purchase by id.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, id: &str) -> Result<Option<PurchaseRow>> {
    let sql = format!("SELECT {COLUMNS} FROM purchases WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], from_row)
        .optional()?)
}

/// Records the first successful delivery.
///
/// # Errors
/// Database failure.
pub fn mark_delivered(conn: &Connection, id: &str, at: &str, fingerprint: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE purchases SET status = 'delivered', delivered_at = ?2, delivery_fingerprint = ?3
         WHERE id = ?1 AND status = 'paid'",
    )?
    .execute(params![id, at, fingerprint])?;
    Ok(())
}

/// One ledger row.
pub struct LedgerRow<'a> {
    pub id: &'a str,
    pub purchase_id: &'a str,
    pub seller_code: &'a str,
    pub vertical_slug: &'a str,
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub rail: &'a str,
    pub status: &'a str,
    pub is_reference_listing: bool,
    pub created_at: &'a str,
    pub released_at: Option<&'a str>,
}

/// Whether a vertical has had a paid sale outside reference listings (then founding fill is
/// spent there).
///
/// # Errors
/// Database failure.
pub fn vertical_has_paid_sale(conn: &Connection, vertical: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM ledger WHERE vertical_slug = ?1 AND is_reference_listing = 0 AND amount_cents > 0",
        )?
        .query_row([vertical], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Appends a sale to the ledger.
///
/// # Errors
/// Database failure.
pub fn insert_ledger(conn: &Connection, l: &LedgerRow<'_>) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO ledger (id, purchase_id, seller_code, vertical_slug, amount_cents,
            platform_fee_cents, rail, status, is_reference_listing, created_at, released_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        l.id,
        l.purchase_id,
        l.seller_code,
        l.vertical_slug,
        l.amount_cents,
        l.platform_fee_cents,
        l.rail,
        l.status,
        l.is_reference_listing,
        l.created_at,
        l.released_at
    ])?;
    Ok(())
}

/// Whether a purchase has been rated.
///
/// # Errors
/// Database failure.
pub fn is_rated(conn: &Connection, purchase_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM ratings WHERE purchase_id = ?1")?
        .query_row([purchase_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// One rating as stored.
pub struct RatingRow<'a> {
    pub id: &'a str,
    pub purchase_id: &'a str,
    pub listing_id: &'a str,
    pub rating: i64,
    pub comment: Option<&'a str>,
    pub created_at: &'a str,
    /// The signed attestation, verbatim JSON.
    pub attestation: &'a str,
}

/// Stores a rating with its attestation.
///
/// # Errors
/// Database failure (including a second rating of one purchase). Answers the attestation's
/// transparency log index.
pub fn insert_rating(conn: &Connection, r: &RatingRow<'_>) -> Result<u64> {
    conn.prepare_cached(
        "INSERT INTO ratings (id, purchase_id, listing_id, rating, comment, created_at, attestation)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![r.id, r.purchase_id, r.listing_id, r.rating, r.comment, r.created_at, r.attestation])?;
    super::tlog::append(
        conn,
        &format!("rating:{}", r.id),
        "bourse.rating.attestation",
        r.attestation,
    )
}

/// The latest ratings of a listing (attestation JSON texts), newest first.
///
/// # Errors
/// Database failure.
pub fn ratings_of(conn: &Connection, listing_id: &str, limit: i64) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT attestation FROM ratings WHERE listing_id = ?1 ORDER BY seq DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![listing_id, limit], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A purchase by the rail's payment reference (the x402 transaction hash).
///
/// # Errors
/// Database failure.
pub fn find_by_payment_ref(conn: &Connection, payment_ref: &str) -> Result<Option<PurchaseRow>> {
    let sql = format!("SELECT {COLUMNS} FROM purchases WHERE payment_ref = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([payment_ref], from_row)
        .optional()?)
}

/// Purchases counted by their stored `rail` and `status` (the metrics' gauge; a full scan,
/// made once per scrape on a reader).
///
/// # Errors
/// Database failure.
pub fn count_by_rail_and_status(conn: &Connection) -> Result<Vec<(String, String, i64)>> {
    let mut stmt =
        conn.prepare_cached("SELECT rail, status, count(*) FROM purchases GROUP BY rail, status")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
