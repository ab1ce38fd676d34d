//! Agent rows.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;

/// One agent as stored (never the API key itself).
#[derive(Clone, Debug)]
pub struct AgentRow {
    pub id: String,
    pub handle: String,
    pub name: String,
    pub display_name: Option<String>,
    pub email: Option<String>,
    pub callback_url: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Verified ratings received as a seller.
    pub rating_count: i64,
    /// Completed sales as a seller.
    pub sales_count: i64,
}

const COLUMNS: &str = "id, handle, name, display_name, email, callback_url, created_at, updated_at, rating_count, sales_count";

fn from_row(row: &Row<'_>) -> rusqlite::Result<AgentRow> {
    Ok(AgentRow {
        id: row.get(0)?,
        handle: row.get(1)?,
        name: row.get(2)?,
        display_name: row.get(3)?,
        email: row.get(4)?,
        callback_url: row.get(5)?,
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        rating_count: row.get(8)?,
        sales_count: row.get(9)?,
    })
}

/// Inserts a new agent with the hash of its key.
///
/// # Errors
/// Database failure (including a handle collision, which callers avoid by checking first).
pub fn insert(conn: &Connection, agent: &AgentRow, key_hash: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO agents (id, handle, name, display_name, email, callback_url, key_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        agent.id,
        agent.handle,
        agent.name,
        agent.display_name,
        agent.email,
        agent.callback_url,
        key_hash,
        agent.created_at,
        agent.updated_at
    ])?;
    Ok(())
}

/// Finds the agent owning a key hash.
///
/// # Errors
/// Database failure.
pub fn find_by_key_hash(conn: &Connection, key_hash: &str) -> Result<Option<AgentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE key_hash = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([key_hash], from_row)
        .optional()?)
}

/// Finds an agent by id.
///
/// # Errors
/// Database failure.
pub fn find_by_id(conn: &Connection, id: &str) -> Result<Option<AgentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], from_row)
        .optional()?)
}

/// Finds an agent by public handle.
///
/// # Errors
/// Database failure.
pub fn find_by_handle(conn: &Connection, handle: &str) -> Result<Option<AgentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE handle = ?1 AND is_house = 0");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([handle], from_row)
        .optional()?)
}

/// Agents whose opt-in display name equals `display_name` exactly, oldest first, at most `limit`.
///
/// # Errors
/// Database failure.
pub fn find_by_display_name(
    conn: &Connection,
    display_name: &str,
    limit: i64,
) -> Result<Vec<AgentRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM agents WHERE display_name = ?1 AND is_house = 0 ORDER BY seq LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![display_name, limit], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One page of agents in registration order, and the total count.
///
/// # Errors
/// Database failure.
pub fn list(conn: &Connection, limit: i64, offset: i64) -> Result<(Vec<AgentRow>, i64)> {
    let sql =
        format!("SELECT {COLUMNS} FROM agents WHERE is_house = 0 ORDER BY seq LIMIT ?1 OFFSET ?2");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params![limit, offset], from_row)?
        .collect::<rusqlite::Result<_>>()?;
    let total = conn
        .prepare_cached("SELECT count(*) FROM agents WHERE is_house = 0")?
        .query_row([], |r| r.get(0))?;
    Ok((rows, total))
}

/// Writes the mutable profile fields.
///
/// # Errors
/// Database failure.
pub fn update_profile(conn: &Connection, agent: &AgentRow) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET display_name = ?2, email = ?3, callback_url = ?4, updated_at = ?5 WHERE id = ?1",
    )?
    .execute(params![agent.id, agent.display_name, agent.email, agent.callback_url, agent.updated_at])?;
    Ok(())
}

/// Replaces the key hash, only if the presented key is still the current one (of two
/// concurrent rotations with one key, one wins); the old key stops working at once. Returns
/// whether the key was replaced.
///
/// # Errors
/// Database failure.
pub fn replace_key(
    conn: &Connection,
    id: &str,
    old_hash: &str,
    key_hash: &str,
    now: &str,
) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE agents SET key_hash = ?3, key_rotated_at = ?4, updated_at = ?4 WHERE id = ?1 AND key_hash = ?2",
        )?
        .execute(params![id, old_hash, key_hash, now])?;
    Ok(changed == 1)
}

/// Total number of agents.
///
/// # Errors
/// Database failure.
pub fn count(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM agents WHERE is_house = 0")?
        .query_row([], |r| r.get(0))?)
}

/// One more completed sale for a seller.
///
/// # Errors
/// Database failure.
pub fn add_sale(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET sales_count = sales_count + 1 WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// One more rating for a seller.
///
/// # Errors
/// Database failure.
pub fn add_rating(conn: &Connection, id: &str, rating: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET rating_sum = rating_sum + ?2, rating_count = rating_count + 1 WHERE id = ?1",
    )?
    .execute(params![id, rating])?;
    Ok(())
}

/// What a seller's reputation is computed from: rating sum, rating count, sales count.
///
/// # Errors
/// Database failure.
pub fn reputation_inputs(conn: &Connection, id: &str) -> Result<(i64, i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT rating_sum, rating_count, sales_count FROM agents WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?)
}

/// Stores a seller's reputation score.
///
/// # Errors
/// Database failure.
pub fn set_reputation(conn: &Connection, id: &str, score: f64) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET reputation = ?2 WHERE id = ?1")?
        .execute(params![id, score])?;
    Ok(())
}

/// A seller's rating count, rating sum and reputation, read fresh.
///
/// # Errors
/// Database failure.
pub fn seller_standing(conn: &Connection, id: &str) -> Result<(i64, i64, f64)> {
    Ok(conn
        .prepare_cached("SELECT rating_count, rating_sum, reputation FROM agents WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?)
}
