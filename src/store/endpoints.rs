//! Sellers' verified delivery endpoints (`delivery_endpoints`): one per seller, and a URL
//! belongs to one seller.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The seller whose verified endpoint is `url`, if any.
///
/// # Errors
/// Database failure.
pub fn owner(conn: &Connection, url: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT agent_id FROM delivery_endpoints WHERE url = ?1")?
        .query_row([url], |r| r.get(0))
        .optional()?)
}

/// Whether a seller other than `agent_id` has verified `url`.
///
/// # Errors
/// Database failure.
pub fn taken_by_another(conn: &Connection, url: &str, agent_id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM delivery_endpoints WHERE url = ?1 AND agent_id != ?2")?
        .query_row([url, agent_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Stores (or replaces) a seller's verified endpoint.
///
/// # Errors
/// Database failure (including a URL another seller holds).
pub fn upsert(conn: &Connection, agent_id: &str, url: &str, verified_at: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO delivery_endpoints (agent_id, url, verified_at, updated_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (agent_id) DO UPDATE SET url = excluded.url, verified_at = excluded.verified_at,
             updated_at = excluded.updated_at",
    )?
    .execute(params![agent_id, url, verified_at])?;
    Ok(())
}

/// A seller's verified endpoint: (url, verified_at).
///
/// # Errors
/// Database failure.
pub fn verified(conn: &Connection, agent_id: &str) -> Result<Option<(String, String)>> {
    Ok(conn
        .prepare_cached("SELECT url, verified_at FROM delivery_endpoints WHERE agent_id = ?1")?
        .query_row([agent_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{agents, test_agent, test_db};

    #[test]
    fn an_endpoint_belongs_to_one_seller_and_can_be_replaced() {
        let conn = test_db();
        agents::insert(&conn, &test_agent("a", "A-1"), "ka", None).unwrap();
        agents::insert(&conn, &test_agent("b", "A-2"), "kb", None).unwrap();
        assert_eq!(verified(&conn, "a").unwrap(), None);
        upsert(&conn, "a", "https://a.example/d", "t1").unwrap();
        assert_eq!(
            owner(&conn, "https://a.example/d").unwrap().as_deref(),
            Some("a")
        );
        assert!(!taken_by_another(&conn, "https://a.example/d", "a").unwrap());
        assert!(taken_by_another(&conn, "https://a.example/d", "b").unwrap());
        assert!(upsert(&conn, "b", "https://a.example/d", "t2").is_err());
        upsert(&conn, "a", "https://a.example/e", "t3").unwrap();
        assert_eq!(
            verified(&conn, "a").unwrap(),
            Some(("https://a.example/e".into(), "t3".into()))
        );
        assert_eq!(owner(&conn, "https://a.example/d").unwrap(), None);
    }
}
