//! Bulk loading of a synthetic catalogue, for the benchmark's fixture tool only
//! (`examples/seed_catalog.rs`, through [`super::Store::seed_listings`]); the server never calls
//! it. The catalogue it leaves is the one [`super::listings::insert`] row by row would have left:
//! the same rows and `changed` numbers, the same search index, the same indexes and triggers.
//!
//! Why it is faster: one prepared statement in one transaction, no savepoint per job; the
//! listings' secondary indexes and triggers are dropped for the load and created again from the
//! definitions the database itself holds (so they cannot drift from `schema.sql`), the indexes
//! built by one sort each instead of row by row; the search index is built by one FTS5
//! `rebuild` over the loaded table with a large in-memory hash (few segments to merge, where a
//! transaction per few hundred rows left thousands), then merged and the tables analyzed
//! ([`super::listings::optimize_search`]) before the commit, and `changed` is numbered as the insert
//! trigger numbers it. Durability is off for the load (`synchronous = OFF`), the page cache is
//! large and index builds sort on two threads; all three are put back afterwards.

use rusqlite::{Connection, TransactionBehavior};

use super::listings::{INSERT_COLUMNS, ListingRow, bind_insert};
use crate::error::Result;

/// The writer's page cache during a load, in KiB.
const LOAD_CACHE_KIB: i64 = 512 * 1024;

/// FTS5's pending-terms hash during a load, in bytes (its default is 1 MiB).
const LOAD_FTS_HASH_BYTES: i64 = 256 << 20;

/// FTS5's default hash size, written back before the setting is removed.
const DEFAULT_FTS_HASH_BYTES: i64 = 1 << 20;

/// A listings index or trigger, as `sqlite_master` holds it.
struct Derived {
    kind: String,
    name: String,
    sql: String,
}

/// Appends `rows` to the listings in one transaction and builds the search index; returns how
/// many were written. `seq` is assigned as by [`super::listings::insert`] (the field is
/// ignored). Runs on the writer's connection, outside any group transaction. Nothing is written
/// when it fails.
///
/// # Errors
/// Database failure (a row that breaks a constraint fails the whole load).
pub fn insert_listings(
    conn: &mut Connection,
    rows: impl IntoIterator<Item = ListingRow>,
) -> Result<usize> {
    let synchronous: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    let cache_size: i64 = conn.query_row("PRAGMA cache_size", [], |r| r.get(0))?;
    let threads: i64 = conn.query_row("PRAGMA threads", [], |r| r.get(0))?;
    conn.execute_batch(&format!(
        "PRAGMA synchronous = OFF; PRAGMA cache_size = -{LOAD_CACHE_KIB}; PRAGMA threads = 2;"
    ))?;
    let loaded = load(conn, rows);
    let restored = conn.execute_batch(&format!(
        "PRAGMA synchronous = {synchronous}; PRAGMA cache_size = {cache_size};
         PRAGMA threads = {threads};"
    ));
    let count = loaded?;
    restored?;
    Ok(count)
}

fn load(conn: &mut Connection, rows: impl IntoIterator<Item = ListingRow>) -> Result<usize> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let derived = derived(&tx)?;
    for object in &derived {
        tx.execute_batch(&format!("DROP {} \"{}\"", object.kind, object.name))?;
    }
    // What the insert trigger gives each new row: one more than the highest so far.
    let mut changed: i64 =
        tx.query_row("SELECT COALESCE(MAX(changed), 0) FROM listings", [], |r| {
            r.get(0)
        })?;
    let mut count = 0;
    {
        let mut stmt = tx.prepare(&format!(
            "INSERT INTO listings ({INSERT_COLUMNS}, changed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34)"
        ))?;
        for row in rows {
            changed += 1;
            bind_insert(&mut stmt, &row)?;
            stmt.raw_bind_parameter(34, changed)?;
            stmt.raw_execute()?;
            count += 1;
        }
    }
    tx.execute_batch(&format!(
        "INSERT INTO listings_fts (listings_fts, rank) VALUES ('hashsize', {LOAD_FTS_HASH_BYTES});
         INSERT INTO listings_fts (listings_fts) VALUES ('rebuild');
         INSERT INTO listings_fts (listings_fts, rank) VALUES ('hashsize', {DEFAULT_FTS_HASH_BYTES});
         DELETE FROM listings_fts_config WHERE k = 'hashsize';"
    ))?;
    for object in &derived {
        tx.execute_batch(&object.sql)?;
    }
    // In the same transaction: a separate one would wait behind the checkpoint thread copying
    // the load's WAL (gigabytes at 10M listings) and could time out on the write lock.
    super::listings::optimize_search(&tx)?;
    tx.commit()?;
    Ok(count)
}

/// The listings' indexes and triggers (not the UNIQUE constraint's own index), in the order
/// the schema created them.
fn derived(conn: &Connection) -> Result<Vec<Derived>> {
    let mut stmt = conn.prepare(
        "SELECT type, name, sql FROM sqlite_master
         WHERE tbl_name = 'listings' AND type IN ('index', 'trigger') AND sql IS NOT NULL
         ORDER BY rowid",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Derived {
            kind: r.get::<_, String>(0)?.to_uppercase(),
            name: r.get(1)?,
            sql: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
#[path = "seeding_tests.rs"]
mod tests;
