//! Listing rows, the browse query, history entries, counts.

use rusqlite::{Connection, OptionalExtension, Statement, ToSql, params};
use serde_json::Value;

use crate::error::Result;

/// One listing as stored, its texts owned.
pub type ListingRow = Listing;

/// One listing as stored: its texts owned (`String`, [`ListingRow`]) or borrowed from the row
/// being read (`&str`, see [`visit_page`]).
#[derive(Clone, Debug)]
pub struct Listing<S = String> {
    pub seq: i64,
    pub id: S,
    pub seller_id: S,
    pub seller_code: S,
    pub seller_reputation: f64,
    pub vertical_slug: S,
    pub category: S,
    pub title: S,
    pub description: S,
    pub price_cents: i64,
    pub listing_type: S,
    pub max_copies: Option<i64>,
    pub sold_count: i64,
    pub purchase_count: i64,
    pub view_count: i64,
    pub active: bool,
    pub exclusive_sold: bool,
    pub fingerprint: S,
    /// JSON object text; empty in browse results (the preview is a detail-page field).
    pub preview: S,
    /// JSON array text.
    pub images: S,
    /// JSON object text of the nullable metadata fields.
    pub metadata: S,
    pub is_sample: bool,
    pub physical: bool,
    pub deliverable_ref: Option<S>,
    pub health_consent: bool,
    pub deidentification: Option<S>,
    /// JSON array text.
    pub authorized_uses: Option<S>,
    pub rating_sum: i64,
    pub rating_count: i64,
    pub quality: f64,
    pub created_at: S,
    pub version: i64,
    pub last_modified: Option<S>,
    pub modification_count: i64,
}

const COLUMNS: &str = "seq, id, seller_id, seller_code, seller_reputation, vertical_slug, category, title, description,
    price_cents, listing_type, max_copies, sold_count, purchase_count, view_count, active, exclusive_sold, fingerprint,
    preview, images, metadata, is_sample, physical, deliverable_ref, health_consent, deidentification, authorized_uses,
    rating_sum, rating_count, quality, created_at, version, last_modified, modification_count";

/// The same columns with the preview left out (browse pages never show it).
const BROWSE_COLUMNS: &str = "seq, id, seller_id, seller_code, seller_reputation, vertical_slug, category, title, description,
    price_cents, listing_type, max_copies, sold_count, purchase_count, view_count, active, exclusive_sold, fingerprint,
    '' AS preview, images, metadata, is_sample, physical, deliverable_ref, health_consent, deidentification, authorized_uses,
    rating_sum, rating_count, quality, created_at, version, last_modified, modification_count";

/// The columns an insert writes, in the order [`bind_insert`] binds them (`?1`..`?33`).
pub(super) const INSERT_COLUMNS: &str = "id, seller_id, seller_code, seller_reputation, vertical_slug, category, title,
    description, price_cents, listing_type, max_copies, sold_count, purchase_count, view_count, active,
    exclusive_sold, fingerprint, preview, images, metadata, is_sample, physical, deliverable_ref,
    health_consent, deidentification, authorized_uses, rating_sum, rating_count, quality, created_at,
    version, last_modified, modification_count";

// Reading a row: borrowed (`listing_ref`) or owned (`from_row`), and copying a borrowed one.
#[path = "listing_rows.rs"]
mod rows;
use rows::{from_row, listing_ref, text_at};

/// Binds a row's [`INSERT_COLUMNS`] to a statement's parameters `?1`..`?33`.
pub(super) fn bind_insert(stmt: &mut Statement<'_>, l: &ListingRow) -> rusqlite::Result<()> {
    let values: [&dyn ToSql; 33] = [
        &l.id,
        &l.seller_id,
        &l.seller_code,
        &l.seller_reputation,
        &l.vertical_slug,
        &l.category,
        &l.title,
        &l.description,
        &l.price_cents,
        &l.listing_type,
        &l.max_copies,
        &l.sold_count,
        &l.purchase_count,
        &l.view_count,
        &l.active,
        &l.exclusive_sold,
        &l.fingerprint,
        &l.preview,
        &l.images,
        &l.metadata,
        &l.is_sample,
        &l.physical,
        &l.deliverable_ref,
        &l.health_consent,
        &l.deidentification,
        &l.authorized_uses,
        &l.rating_sum,
        &l.rating_count,
        &l.quality,
        &l.created_at,
        &l.version,
        &l.last_modified,
        &l.modification_count,
    ];
    for (index, value) in values.into_iter().enumerate() {
        stmt.raw_bind_parameter(index + 1, value)?;
    }
    Ok(())
}

/// Inserts a listing; returns its `seq`.
///
/// # Errors
/// Database failure.
pub fn insert(conn: &Connection, l: &ListingRow) -> Result<i64> {
    let mut stmt = conn.prepare_cached(&format!(
        "INSERT INTO listings ({INSERT_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,
            ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33)"
    ))?;
    bind_insert(&mut stmt, l)?;
    stmt.raw_execute()?;
    Ok(conn.last_insert_rowid())
}

/// Writes the fields an edit can change.
///
/// # Errors
/// Database failure.
pub fn update(conn: &Connection, l: &ListingRow) -> Result<()> {
    conn.prepare_cached(
        "UPDATE listings SET title = ?2, description = ?3, price_cents = ?4, active = ?5, exclusive_sold = ?6,
            fingerprint = ?7, preview = ?8, version = ?9, last_modified = ?10, modification_count = ?11
         WHERE id = ?1",
    )?
    .execute(params![
        l.id,
        l.title,
        l.description,
        l.price_cents,
        l.active,
        l.exclusive_sold,
        l.fingerprint,
        l.preview,
        l.version,
        l.last_modified,
        l.modification_count
    ])?;
    Ok(())
}

/// A listing by id, preview included.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, id: &str) -> Result<Option<ListingRow>> {
    let sql = format!("SELECT {COLUMNS} FROM listings WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], from_row)
        .optional()?)
}

/// The sample listing of a vertical, if seeded.
///
/// # Errors
/// Database failure.
pub fn sample_of(conn: &Connection, vertical: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT id FROM listings WHERE is_sample = 1 AND vertical_slug = ?1")?
        .query_row([vertical], |r| r.get(0))
        .optional()?)
}

/// Stores one signed history entry verbatim.
///
/// # Errors
/// Database failure (including a duplicate version).
pub fn insert_history(
    conn: &Connection,
    listing_id: &str,
    version: i64,
    entry: &str,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO listing_history (listing_id, version, entry) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![listing_id, version, entry])?;
    super::tlog::append(
        conn,
        &history_log_ref(listing_id, version),
        HISTORY_LOG_KIND,
        entry,
    )?;
    Ok(())
}

/// The transparency log's entry type of a listing history entry.
pub const HISTORY_LOG_KIND: &str = "bourse.listing.version";

/// The transparency log's name of a listing's history entry.
pub fn history_log_ref(listing_id: &str, version: i64) -> String {
    format!("listing:{listing_id}:{version}")
}

/// Every history entry of a listing, oldest first, as stored.
///
/// # Errors
/// Database failure.
pub fn history(conn: &Connection, listing_id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT entry FROM listing_history WHERE listing_id = ?1 ORDER BY version",
    )?;
    let rows = stmt.query_map([listing_id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The columns of a listing that browse filters and sorts on; its texts owned (`String`) or
/// borrowed from the row being read (`&str`, see [`each_index_row`]).
#[derive(Clone, Debug)]
pub struct IndexRow<S = String> {
    pub seq: i64,
    pub active: bool,
    pub is_sample: bool,
    pub category: S,
    pub vertical_slug: S,
    pub listing_type: S,
    pub price_cents: i64,
    pub rating_sum: i64,
    pub rating_count: i64,
    pub quality: f64,
    pub seller_reputation: f64,
    pub purchase_count: i64,
    pub view_count: i64,
}

impl From<&ListingRow> for IndexRow {
    fn from(l: &ListingRow) -> IndexRow {
        IndexRow {
            seq: l.seq,
            active: l.active,
            is_sample: l.is_sample,
            category: l.category.clone(),
            vertical_slug: l.vertical_slug.clone(),
            listing_type: l.listing_type.clone(),
            price_cents: l.price_cents,
            rating_sum: l.rating_sum,
            rating_count: l.rating_count,
            quality: l.quality,
            seller_reputation: l.seller_reputation,
            purchase_count: l.purchase_count,
            view_count: l.view_count,
        }
    }
}

/// Calls `f` with every listing's browse columns, ascending by `seq`, without copying their
/// texts: what loading the browse index at start costs is mostly this.
///
/// # Errors
/// Database failure.
pub fn each_index_row(conn: &Connection, f: impl FnMut(IndexRow<&str>)) -> Result<()> {
    visit_index_rows(conn, "", [], f)
}

/// Calls `f` with the browse columns of the rows `filter` (a `WHERE` clause, or "") selects.
fn visit_index_rows(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
    mut f: impl FnMut(IndexRow<&str>),
) -> Result<()> {
    let mut stmt = conn.prepare_cached(&index_rows_sql(filter))?;
    let mut rows = stmt.query(params)?;
    while let Some(row) = rows.next()? {
        f(index_row(row)?);
    }
    Ok(())
}

/// Calls `f` with the browse columns of the listings whose `seq` is within `from..=to`,
/// ascending, all read in one read transaction, and answers the catalogue change counter
/// ([`last_change`]) that transaction saw: two connections that answer the same counter read
/// the same committed catalogue (every insert or update of a listing moves it).
///
/// # Errors
/// Database failure.
pub fn each_index_row_in(
    conn: &Connection,
    from: i64,
    to: i64,
    f: impl FnMut(IndexRow<&str>),
) -> Result<i64> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Deferred)?;
    let seen = last_change(&tx)?;
    visit_index_rows(&tx, "WHERE seq BETWEEN ?1 AND ?2", [from, to], f)?;
    tx.commit()?;
    Ok(seen)
}

/// The lowest and highest `seq` (`(0, 0)` for an empty catalogue).
///
/// # Errors
/// Database failure.
pub fn seq_bounds(conn: &Connection) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) FROM listings")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// The highest `seq` (0 for an empty catalogue): how many index entries to make room for.
///
/// # Errors
/// Database failure.
pub fn max_seq(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(seq), 0) FROM listings")?
        .query_row([], |r| r.get(0))?)
}

/// The highest catalogue change counter (0 for an empty catalogue): what a follower has seen.
///
/// # Errors
/// Database failure.
pub fn last_change(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(changed), 0) FROM listings")?
        .query_row([], |r| r.get(0))?)
}

/// The index entries of listings inserted or updated after change `since` (a follower catching
/// up with its replica), in `seq` order.
///
/// # Errors
/// Database failure.
pub fn index_rows_changed_since(conn: &Connection, since: i64) -> Result<Vec<IndexRow>> {
    index_rows_where(conn, "WHERE changed > ?1", [since])
}

/// What a browse index restored from a snapshot taken at change `since` needs, read in one read
/// transaction: the catalogue's change counter and highest `seq` now, and the browse columns of
/// the listings inserted or updated since (`None` when more than `most` were: reading them one
/// by one would cost more than reading every row).
pub struct CatchUp {
    pub last_change: i64,
    pub max_seq: i64,
    pub rows: Option<Vec<IndexRow>>,
}

/// See [`CatchUp`].
///
/// # Errors
/// Database failure.
pub fn catch_up(conn: &Connection, since: i64, most: usize) -> Result<CatchUp> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Deferred)?;
    let last_change = last_change(&tx)?;
    let max_seq = max_seq(&tx)?;
    let changed: i64 = tx
        .prepare_cached("SELECT count(*) FROM listings WHERE changed > ?1")?
        .query_row([since], |r| r.get(0))?;
    let rows = if usize::try_from(changed).unwrap_or(usize::MAX) > most {
        None
    } else {
        Some(index_rows_changed_since(&tx, since)?)
    };
    tx.commit()?;
    Ok(CatchUp {
        last_change,
        max_seq,
        rows,
    })
}

fn index_rows_sql(filter: &str) -> String {
    format!(
        "SELECT seq, active, is_sample, category, vertical_slug, listing_type, price_cents, rating_sum,
            rating_count, quality, seller_reputation, purchase_count, view_count
         FROM listings {filter} ORDER BY seq"
    )
}

fn index_row<'r>(r: &'r rusqlite::Row<'_>) -> rusqlite::Result<IndexRow<&'r str>> {
    let text = |i: usize| text_at(r, i);
    Ok(IndexRow {
        seq: r.get(0)?,
        active: r.get(1)?,
        is_sample: r.get(2)?,
        category: text(3)?,
        vertical_slug: text(4)?,
        listing_type: text(5)?,
        price_cents: r.get(6)?,
        rating_sum: r.get(7)?,
        rating_count: r.get(8)?,
        quality: r.get(9)?,
        seller_reputation: r.get(10)?,
        purchase_count: r.get(11)?,
        view_count: r.get(12)?,
    })
}

impl IndexRow<&str> {
    /// The same row with its texts copied.
    pub fn to_owned(&self) -> IndexRow {
        IndexRow {
            seq: self.seq,
            active: self.active,
            is_sample: self.is_sample,
            category: self.category.to_owned(),
            vertical_slug: self.vertical_slug.to_owned(),
            listing_type: self.listing_type.to_owned(),
            price_cents: self.price_cents,
            rating_sum: self.rating_sum,
            rating_count: self.rating_count,
            quality: self.quality,
            seller_reputation: self.seller_reputation,
            purchase_count: self.purchase_count,
            view_count: self.view_count,
        }
    }
}

#[cfg(test)]
impl IndexRow {
    /// The browse columns of an active standard listing `seq` at `price_cents`, unrated,
    /// unviewed, without taxonomy: for the browse index's unit tests.
    pub fn plain(seq: i64, price_cents: i64) -> IndexRow {
        IndexRow {
            seq,
            active: true,
            is_sample: false,
            category: String::new(),
            vertical_slug: String::new(),
            listing_type: "standard".into(),
            price_cents,
            rating_sum: 0,
            rating_count: 0,
            quality: 0.0,
            seller_reputation: 0.0,
            purchase_count: 0,
            view_count: 0,
        }
    }
}

/// The `seq`s of listings whose title or description match an FTS5 expression.
///
/// # Errors
/// Database failure (the caller makes the expression safe).
pub fn fts_rowids(conn: &Connection, expression: &str) -> Result<Vec<i64>> {
    let mut stmt =
        conn.prepare_cached("SELECT rowid FROM listings_fts WHERE listings_fts MATCH ?1")?;
    let rows = stmt.query_map([expression], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Which of `seqs` a search expression matches (the listings changed since a kept search).
///
/// # Errors
/// Database failure.
pub fn fts_rowids_among(conn: &Connection, expression: &str, seqs: &[i64]) -> Result<Vec<i64>> {
    let list: Vec<String> = seqs.iter().map(i64::to_string).collect();
    let mut stmt = conn.prepare_cached(
        "SELECT rowid FROM listings_fts WHERE listings_fts MATCH ?1 AND rowid IN (SELECT value FROM json_each(?2))",
    )?;
    let rows = stmt.query_map(params![expression, format!("[{}]", list.join(","))], |r| {
        r.get(0)
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Merges the search index's segments and refreshes the planner's statistics: worth running
/// once after a bulk load (the benchmark seeder), never on a request path.
///
/// # Errors
/// Database failure.
pub fn optimize_search(conn: &Connection) -> Result<()> {
    conn.execute_batch("INSERT INTO listings_fts (listings_fts) VALUES ('optimize'); ANALYZE;")?;
    Ok(())
}

/// Listings by `seq` for a browse page (preview left out), in the order given.
///
/// # Errors
/// Database failure.
pub fn fetch_page(conn: &Connection, seqs: &[i64]) -> Result<Vec<ListingRow>> {
    let mut rows = Vec::with_capacity(seqs.len());
    visit_page(conn, seqs, |row| rows.push(row.to_owned()))?;
    Ok(rows)
}

/// Calls `f` with the listings of `seqs` (preview left out), in the order given, each borrowed
/// from SQLite's own buffers: a browse page renders its fifty listings without copying a
/// column. A `seq` no listing has is skipped.
///
/// # Errors
/// Database failure.
pub fn visit_page(
    conn: &Connection,
    seqs: &[i64],
    mut f: impl FnMut(&Listing<&str>),
) -> Result<()> {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let sql = SQL.get_or_init(|| format!("SELECT {BROWSE_COLUMNS} FROM listings WHERE seq = ?1"));
    let mut stmt = conn.prepare_cached(sql)?;
    for seq in seqs {
        let mut rows = stmt.query([seq])?;
        if let Some(row) = rows.next()? {
            f(&listing_ref(row)?);
        }
    }
    Ok(())
}

/// Adds batched view counts.
///
/// # Errors
/// Database failure.
pub fn add_views(conn: &Connection, views: &[(i64, i64)]) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("UPDATE listings SET view_count = view_count + ?2 WHERE seq = ?1")?;
    for (seq, n) in views {
        stmt.execute(params![seq, n])?;
    }
    Ok(())
}

/// Counts one more sale of a listing.
///
/// # Errors
/// Database failure.
pub fn record_sale(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE listings SET sold_count = sold_count + 1, purchase_count = purchase_count + 1 WHERE id = ?1",
    )?
    .execute([id])?;
    Ok(())
}

/// A listing's rating sum and count as they will be with one more `rating`.
///
/// # Errors
/// Database failure.
pub fn rating_totals_with(conn: &Connection, id: &str, rating: i64) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT rating_sum + ?2, rating_count + 1 FROM listings WHERE id = ?1")?
        .query_row(params![id, rating], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Adds a rating to a listing and stores its new quality score.
///
/// # Errors
/// Database failure.
pub fn record_rating(conn: &Connection, id: &str, rating: i64, quality: f64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE listings SET rating_sum = rating_sum + ?2, rating_count = rating_count + 1, quality = ?3 WHERE id = ?1",
    )?
    .execute(params![id, rating, quality])?;
    Ok(())
}

/// Copies a seller's reputation onto its listings (browse sorts by it).
///
/// # Errors
/// Database failure.
pub fn set_seller_reputation(conn: &Connection, seller_id: &str, reputation: f64) -> Result<()> {
    conn.prepare_cached("UPDATE listings SET seller_reputation = ?2 WHERE seller_id = ?1")?
        .execute(params![seller_id, reputation])?;
    Ok(())
}

/// The browse columns of one seller's listings.
///
/// # Errors
/// Database failure.
pub fn index_rows_of_seller(conn: &Connection, seller_id: &str) -> Result<Vec<IndexRow>> {
    index_rows_where(conn, "WHERE seller_id = ?1", [seller_id])
}

fn index_rows_where<P: rusqlite::Params>(
    conn: &Connection,
    filter: &str,
    params: P,
) -> Result<Vec<IndexRow>> {
    let mut stmt = conn.prepare_cached(&index_rows_sql(filter))?;
    let rows = stmt.query_map(params, |r| index_row(r).map(|row| row.to_owned()))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether a listing was made in a vertical without commerce (its first settled sale may claim
/// founding fill).
///
/// # Errors
/// Database failure.
pub fn founding_eligible(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT founding_eligible FROM listings WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .unwrap_or(false))
}

/// Marks a new listing founding-eligible when its vertical has had no commerce (no ledger row
/// outside reference listings).
///
/// # Errors
/// Database failure.
pub fn mark_founding_eligible(conn: &Connection, id: &str, vertical: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE listings SET founding_eligible = 1 WHERE id = ?1 AND NOT EXISTS
            (SELECT 1 FROM ledger WHERE vertical_slug = ?2 AND is_reference_listing = 0)",
    )?
    .execute(params![id, vertical])?;
    Ok(())
}

/// Stores the signed consent record of a health listing.
///
/// # Errors
/// Database failure.
pub fn insert_health_consent(
    conn: &Connection,
    listing_id: &str,
    seller_id: &str,
    record: &Value,
    now: &str,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO health_consents (listing_id, seller_id, record, created_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![listing_id, seller_id, record.to_string(), now])?;
    Ok(())
}

/// The signed consent record of a health listing, if it has one.
///
/// # Errors
/// Database failure, or a stored record that is not JSON.
pub fn health_consent(conn: &Connection, listing_id: &str) -> Result<Option<Value>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT record FROM health_consents WHERE listing_id = ?1")?
        .query_row([listing_id], |r| r.get(0))
        .optional()?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| crate::error::Error::Internal(format!("consent: {e}")))
    })
    .transpose()
}

/// Every listing of a seller (inactive too), newest first.
///
/// # Errors
/// Database failure.
pub fn of_seller(conn: &Connection, seller_id: &str) -> Result<Vec<ListingRow>> {
    let ids: Vec<String> = conn
        .prepare_cached("SELECT id FROM listings WHERE seller_id = ?1 ORDER BY seq DESC")?
        .query_map([seller_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        rows.extend(find(conn, &id)?);
    }
    Ok(rows)
}

/// A page of a seller's active listings, newest first (preview left out, as a browse page),
/// and how many active listings the seller has: the seller's public page and its JSON twin.
/// Walks the seller's own rows on `listings_seller`.
///
/// # Errors
/// Database failure.
pub fn active_of_seller(
    conn: &Connection,
    seller_id: &str,
    limit: i64,
    offset: i64,
) -> Result<(Vec<ListingRow>, i64)> {
    let total: i64 = conn
        .prepare_cached("SELECT count(*) FROM listings WHERE seller_id = ?1 AND active = 1")?
        .query_row([seller_id], |r| r.get(0))?;
    let sql = format!(
        "SELECT {BROWSE_COLUMNS} FROM listings WHERE seller_id = ?1 AND active = 1 \
         ORDER BY seq DESC LIMIT ?2 OFFSET ?3"
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map(params![seller_id, limit, offset], from_row)?
        .collect::<rusqlite::Result<_>>()?;
    Ok((rows, total))
}

/// A bare search table and its rows, for the browse index's unit tests (no listings behind it).
#[cfg(test)]
pub mod search_fixture {
    use rusqlite::{Connection, params};

    pub fn create(conn: &Connection) {
        conn.execute_batch("CREATE VIRTUAL TABLE listings_fts USING fts5(title);")
            .expect("a search table");
    }

    pub fn set(conn: &Connection, seq: i64, text: &str) {
        conn.execute(
            "INSERT OR REPLACE INTO listings_fts (rowid, title) VALUES (?1, ?2)",
            params![seq, text],
        )
        .expect("a search row");
    }
}
