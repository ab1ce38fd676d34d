//! Named counters (`counters`) and the salted keys of distinct queriers (`queriers`).

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// Adds `by` to the counter `name` (created at 0).
///
/// # Errors
/// Database failure.
pub fn add(conn: &Connection, name: &str, by: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO counters (name, value) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
    )?
    .execute(params![name, by])?;
    Ok(())
}

/// The value of the counter `name` (0 when never counted).
///
/// # Errors
/// Database failure.
pub fn get(conn: &Connection, name: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT value FROM counters WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Records querier keys first seen at `now` (keys already stored keep their first sighting).
///
/// # Errors
/// Database failure.
pub fn add_queriers(conn: &Connection, keys: &[String], now: &str) -> Result<()> {
    let mut insert =
        conn.prepare_cached("INSERT OR IGNORE INTO queriers (key, first_seen) VALUES (?1, ?2)")?;
    for key in keys {
        insert.execute(params![key, now])?;
    }
    Ok(())
}

/// How many querier keys are stored.
///
/// # Errors
/// Database failure.
pub fn querier_count(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM queriers")?
        .query_row([], |r| r.get(0))?)
}

/// How many of `keys` are not stored yet.
///
/// # Errors
/// Database failure.
pub fn unknown_queriers(conn: &Connection, keys: &[String]) -> Result<i64> {
    let mut known = conn.prepare_cached("SELECT 1 FROM queriers WHERE key = ?1")?;
    let mut unknown = 0;
    for key in keys {
        if known.query_row([key], |_| Ok(())).optional()?.is_none() {
            unknown += 1;
        }
    }
    Ok(unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_from_zero() {
        let conn = crate::store::test_db();
        assert_eq!(get(&conn, "queries").unwrap(), 0);
        add(&conn, "queries", 3).unwrap();
        add(&conn, "queries", 4).unwrap();
        assert_eq!(get(&conn, "queries").unwrap(), 7);
    }

    #[test]
    fn queriers_are_stored_once_and_pending_ones_counted_when_new() {
        let conn = crate::store::test_db();
        let keys = |ks: &[&str]| ks.iter().map(|k| (*k).to_owned()).collect::<Vec<_>>();
        add_queriers(&conn, &keys(&["a", "b"]), "t1").unwrap();
        add_queriers(&conn, &keys(&["b", "c"]), "t2").unwrap();
        assert_eq!(querier_count(&conn).unwrap(), 3);
        assert_eq!(unknown_queriers(&conn, &keys(&["a", "d", "e"])).unwrap(), 2);
        let first_seen: String = conn
            .query_row("SELECT first_seen FROM queriers WHERE key = 'b'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(first_seen, "t1");
    }
}
