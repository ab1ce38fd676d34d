//! Key/value settings whose values are JSON.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::error::{Error, Result};

/// The chair binding: `{"agentId": …}`.
pub const CHAIR: &str = "chair";
/// Operator overrides of the provenance block.
pub const PROVENANCE: &str = "provenance";
/// The house seller's agent id (owner of the reference samples).
pub const HOUSE: &str = "house";
/// Seconds the sandbox clock has been moved forward in all (restored at start).
pub const SANDBOX_CLOCK_OFFSET: &str = "sandbox_clock_offset";
/// Random salt for hashing querier identities.
pub const QUERIER_SALT: &str = "querier_salt";
/// The latest participation snapshot (`GET /api/proof/participation`).
pub const PARTICIPATION: &str = "participation_snapshot";
/// When this instance's database was created (`"2026-…Z"`).
pub const ESTABLISHED: &str = "established";
/// The public keys this database's answers were signed with, current first (checked at start).
pub const SIGNING_KEYS: &str = "signing_keys";
/// The replicated primary's heartbeat: `{"unixMillis": …}`, written every second.
pub const HEARTBEAT: &str = "replication_heartbeat";
/// The browse index's snapshot file that matches this database: `{"id": …, "lastChange": …}`
/// (`service::catalog::browse`'s snapshot; written after the file is durable).
pub const BROWSE_SNAPSHOT: &str = "browse_snapshot";

/// Reads one setting.
///
/// # Errors
/// Database failure, or a stored value that is not JSON.
pub fn get(conn: &Connection, key: &str) -> Result<Option<Value>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| Error::Internal(format!("setting {key}: {e}")))
    })
    .transpose()
}

/// Writes one setting.
///
/// # Errors
/// Database failure.
pub fn put(conn: &Connection, key: &str, value: &Value, now: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    )?
    .execute(params![key, value.to_string(), now])?;
    Ok(())
}

/// Removes one setting (nothing happens when it is not set).
///
/// # Errors
/// Database failure.
pub fn delete(conn: &Connection, key: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM settings WHERE key = ?1")?
        .execute([key])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_written_replaced_read_and_deleted() {
        let conn = crate::store::test_db();
        assert_eq!(get(&conn, CHAIR).unwrap(), None);
        put(&conn, CHAIR, &serde_json::json!({"agentId": "a"}), "t1").unwrap();
        put(&conn, CHAIR, &serde_json::json!({"agentId": "b"}), "t2").unwrap();
        assert_eq!(
            get(&conn, CHAIR).unwrap(),
            Some(serde_json::json!({"agentId": "b"}))
        );
        delete(&conn, CHAIR).unwrap();
        delete(&conn, CHAIR).unwrap();
        assert_eq!(get(&conn, CHAIR).unwrap(), None);
    }
}
