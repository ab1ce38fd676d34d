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
    /// The restricted key that authenticated this agent (`None` for its full key).
    pub restricted: Option<Box<RestrictedKey>>,
    /// The OAuth grant whose access token authenticated this agent, if one did.
    pub via_grant: Option<String>,
}

/// A restricted key an agent minted (never the key itself: its SHA-256 is stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestrictedKey {
    pub id: String,
    pub agent_id: String,
    pub label: Option<String>,
    /// Space-separated scope names.
    pub scopes: String,
    pub per_purchase_cents: Option<i64>,
    pub daily_cents: Option<i64>,
    pub monthly_cents: Option<i64>,
    pub expires_at: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

const KEY_COLUMNS: &str = "id, agent_id, label, scopes, per_purchase_cents, daily_cents, monthly_cents, expires_at, created_at, revoked_at";

fn key_from_row(row: &Row<'_>) -> rusqlite::Result<RestrictedKey> {
    Ok(RestrictedKey {
        id: row.get(0)?,
        agent_id: row.get(1)?,
        label: row.get(2)?,
        scopes: row.get(3)?,
        per_purchase_cents: row.get(4)?,
        daily_cents: row.get(5)?,
        monthly_cents: row.get(6)?,
        expires_at: row.get(7)?,
        created_at: row.get(8)?,
        revoked_at: row.get(9)?,
    })
}

/// Stores a restricted key by the hash of its secret.
///
/// # Errors
/// Database failure.
pub fn insert_key(conn: &Connection, key: &RestrictedKey, key_hash: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO agent_keys (id, agent_id, key_hash, label, scopes, per_purchase_cents,
             daily_cents, monthly_cents, expires_at, created_at, revoked_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(rusqlite::params![
        key.id,
        key.agent_id,
        key_hash,
        key.label,
        key.scopes,
        key.per_purchase_cents,
        key.daily_cents,
        key.monthly_cents,
        key.expires_at,
        key.created_at,
        key.revoked_at,
    ])?;
    Ok(())
}

/// The restricted key whose secret hashes to `key_hash` (revoked or expired ones too), with its
/// agent.
///
/// # Errors
/// Database failure.
pub fn find_by_restricted_key_hash(
    conn: &Connection,
    key_hash: &str,
) -> Result<Option<(AgentRow, RestrictedKey)>> {
    let sql = format!("SELECT {KEY_COLUMNS} FROM agent_keys WHERE key_hash = ?1");
    let Some(key) = conn
        .prepare_cached(&sql)?
        .query_row([key_hash], key_from_row)
        .optional()?
    else {
        return Ok(None);
    };
    Ok(find_by_id(conn, &key.agent_id)?.map(|agent| (agent, key)))
}

/// A restricted key by id.
///
/// # Errors
/// Database failure.
pub fn find_key(conn: &Connection, id: &str) -> Result<Option<RestrictedKey>> {
    let sql = format!("SELECT {KEY_COLUMNS} FROM agent_keys WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], key_from_row)
        .optional()?)
}

/// An agent's restricted keys, newest first.
///
/// # Errors
/// Database failure.
pub fn keys_of(conn: &Connection, agent_id: &str) -> Result<Vec<RestrictedKey>> {
    let sql = format!(
        "SELECT {KEY_COLUMNS} FROM agent_keys WHERE agent_id = ?1 ORDER BY created_at DESC, id"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_map([agent_id], key_from_row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Revokes an agent's restricted key; whether it was live.
///
/// # Errors
/// Database failure.
pub fn revoke_restricted_key(
    conn: &Connection,
    agent_id: &str,
    id: &str,
    now: &str,
) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE agent_keys SET revoked_at = ?3 WHERE id = ?1 AND agent_id = ?2 AND revoked_at IS NULL",
        )?
        .execute(rusqlite::params![id, agent_id, now])?
        == 1)
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
        restricted: None,
        via_grant: None,
    })
}

/// Inserts a new agent with the hash of its key.
///
/// # Errors
/// Database failure (including a handle collision, which callers avoid by checking first).
pub fn insert(
    conn: &Connection,
    agent: &AgentRow,
    key_hash: &str,
    display_skeleton: Option<&str>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO agents (id, handle, name, display_name, email, callback_url, key_hash, created_at, updated_at, display_skeleton)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
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
        agent.updated_at,
        display_skeleton
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

/// The newest `limit` agents that opted in to a display name, newest first.
///
/// # Errors
/// Database failure.
pub fn with_display_names(conn: &Connection, limit: i64) -> Result<Vec<AgentRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM agents WHERE display_name IS NOT NULL AND is_house = 0 ORDER BY seq DESC LIMIT ?1"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([limit], from_row)?;
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
pub fn update_profile(
    conn: &Connection,
    agent: &AgentRow,
    display_skeleton: Option<&str>,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE agents SET display_name = ?2, email = ?3, callback_url = ?4, updated_at = ?5, display_skeleton = ?6
         WHERE id = ?1",
    )?
    .execute(params![
        agent.id,
        agent.display_name,
        agent.email,
        agent.callback_url,
        agent.updated_at,
        display_skeleton
    ])?;
    Ok(())
}

/// Whether an agent other than `except_id` has a display name with this skeleton.
///
/// # Errors
/// Database failure.
pub fn skeleton_taken(conn: &Connection, skeleton: &str, except_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM agents WHERE display_skeleton = ?1 AND id != ?2 LIMIT 1")?
        .query_row(params![skeleton, except_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Agents with a display name but no skeleton yet (written before schema v4): `(id, name)`.
///
/// # Errors
/// Database failure.
pub fn without_skeleton(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, display_name FROM agents WHERE display_name IS NOT NULL AND display_skeleton IS NULL",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records the skeleton of an agent's display name (the v4 backfill).
///
/// # Errors
/// Database failure.
pub fn set_skeleton(conn: &Connection, id: &str, skeleton: &str) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET display_skeleton = ?2 WHERE id = ?1")?
        .execute(params![id, skeleton])?;
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

/// Replaces an agent's key whatever it was (the operator's forced rotation); the old key stops
/// working at once. Returns whether the agent exists.
///
/// # Errors
/// Database failure.
pub fn force_key(conn: &Connection, id: &str, key_hash: &str, now: &str) -> Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE agents SET key_hash = ?2, key_rotated_at = ?3, updated_at = ?3 WHERE id = ?1",
        )?
        .execute(params![id, key_hash, now])?;
    Ok(changed == 1)
}

/// Agents whose handle, name or display name contains `text` (any case), newest first.
///
/// # Errors
/// Database failure.
pub fn search(conn: &Connection, text: &str, limit: i64) -> Result<Vec<AgentRow>> {
    let pattern = format!(
        "%{}%",
        text.replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    );
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM agents
             WHERE handle LIKE ?1 ESCAPE '\\' OR name LIKE ?1 ESCAPE '\\'
                OR coalesce(display_name, '') LIKE ?1 ESCAPE '\\'
             ORDER BY seq DESC LIMIT ?2"
        ))?
        .query_map(params![pattern, limit], from_row)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
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

/// A seller's stored reputation score.
///
/// # Errors
/// Database failure, or no such agent.
pub fn reputation(conn: &Connection, id: &str) -> Result<f64> {
    Ok(conn
        .prepare_cached("SELECT reputation FROM agents WHERE id = ?1")?
        .query_row([id], |r| r.get(0))?)
}

/// A seller's public code, if one has been assigned.
///
/// # Errors
/// Database failure, or no such agent.
pub fn seller_code(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT seller_code FROM agents WHERE id = ?1")?
        .query_row([id], |r| r.get(0))?)
}

/// The agent whose public seller code is `code`.
///
/// # Errors
/// Database failure.
pub fn find_by_seller_code(conn: &Connection, code: &str) -> Result<Option<AgentRow>> {
    let sql = format!("SELECT {COLUMNS} FROM agents WHERE seller_code = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([code], from_row)
        .optional()?)
}

/// Whether some agent already holds the seller code `code`.
///
/// # Errors
/// Database failure.
pub fn seller_code_taken(conn: &Connection, code: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM agents WHERE seller_code = ?1")?
        .query_row([code], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Assigns a seller's public code (not part of [`AgentRow`], so no cached row goes stale).
///
/// # Errors
/// Database failure (including a code already taken).
pub fn set_seller_code(conn: &Connection, id: &str, code: &str) -> Result<()> {
    conn.prepare_cached("UPDATE agents SET seller_code = ?2 WHERE id = ?1")?
        .execute(params![id, code])?;
    Ok(())
}

/// The house seller's id (owner of the reference samples), if there is one.
///
/// # Errors
/// Database failure.
pub fn house_id(conn: &Connection) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT id FROM agents WHERE is_house = 1")?
        .query_row([], |r| r.get(0))
        .optional()?)
}

/// Inserts the house seller: an agent marked `is_house`, so never listed, looked up or counted.
///
/// # Errors
/// Database failure.
pub fn insert_house(
    conn: &Connection,
    agent: &AgentRow,
    key_hash: &str,
    display_skeleton: Option<&str>,
) -> Result<()> {
    insert(conn, agent, key_hash, display_skeleton)?;
    conn.prepare_cached("UPDATE agents SET is_house = 1 WHERE id = ?1")?
        .execute([&agent.id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::test_agent as agent;

    #[test]
    fn seller_codes_are_assigned_once_and_unique() {
        let conn = crate::store::test_db();
        insert(&conn, &agent("a", "A-1"), "ka", None).unwrap();
        insert(&conn, &agent("b", "A-2"), "kb", None).unwrap();
        assert_eq!(seller_code(&conn, "a").unwrap(), None);
        assert!(!seller_code_taken(&conn, "S-000001").unwrap());
        set_seller_code(&conn, "a", "S-000001").unwrap();
        assert_eq!(
            seller_code(&conn, "a").unwrap().as_deref(),
            Some("S-000001")
        );
        assert!(seller_code_taken(&conn, "S-000001").unwrap());
        let found = find_by_seller_code(&conn, "S-000001").unwrap().unwrap();
        assert_eq!(found.id, "a");
        assert!(find_by_seller_code(&conn, "S-000002").unwrap().is_none());
        assert!(
            set_seller_code(&conn, "b", "S-000001").is_err(),
            "codes are unique"
        );
        assert!(seller_code(&conn, "nobody").is_err());
    }

    #[test]
    fn the_house_seller_is_hidden_from_lists_and_lookups() {
        let conn = crate::store::test_db();
        assert_eq!(house_id(&conn).unwrap(), None);
        insert(&conn, &agent("a", "A-1"), "ka", None).unwrap();
        insert_house(&conn, &agent("h", "A-H"), "kh", None).unwrap();
        assert_eq!(house_id(&conn).unwrap().as_deref(), Some("h"));
        assert_eq!(count(&conn).unwrap(), 1);
        assert!(find_by_handle(&conn, "A-H").unwrap().is_none());
        assert_eq!(list(&conn, 10, 0).unwrap().1, 1);
    }

    #[test]
    fn sales_and_ratings_move_the_reputation_inputs() {
        let conn = crate::store::test_db();
        insert(&conn, &agent("a", "A-1"), "ka", None).unwrap();
        assert_eq!(reputation(&conn, "a").unwrap(), 2.4);
        add_sale(&conn, "a").unwrap();
        add_rating(&conn, "a", 4).unwrap();
        assert_eq!(reputation_inputs(&conn, "a").unwrap(), (4, 1, 1));
        set_reputation(&conn, "a", 3.5).unwrap();
        assert_eq!(reputation(&conn, "a").unwrap(), 3.5);
        assert_eq!(seller_standing(&conn, "a").unwrap(), (1, 4, 3.5));
        let row = find_by_id(&conn, "a").unwrap().unwrap();
        assert_eq!((row.sales_count, row.rating_count), (1, 1));
    }
}
