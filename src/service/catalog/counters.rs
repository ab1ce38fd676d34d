//! Counters that must not cost a database write per request: listing views, catalogue queries
//! and distinct queriers. Requests bump them in memory; a background task flushes them in one
//! transaction every few seconds and once more on shutdown.
//!
//! Definitions (documented in llms.txt): a *query* is one browse or search of the catalogue
//! (`GET /api/marketplace/listings`, and the MCP browse tool); a *querier* is a distinct client
//! that has made at least one query — the agent when the request carries a valid key, otherwise
//! the client IP, stored only as a salted hash.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use rusqlite::Connection;

use crate::error::Result;
use crate::store::counters as counter_store;
use crate::store::{Store, listings};

/// How often pending counts reach the database (and so how long a count an answer shows may lag).
pub const FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// Pending increments.
#[derive(Default)]
pub struct Pending {
    views: HashMap<i64, i64>,
    queries: i64,
    queriers: HashSet<String>,
}

/// The in-memory side of the counters.
#[derive(Default)]
pub struct Counters {
    pending: Mutex<Pending>,
    /// Bumped by every view and query: answers that show live counts are kept under it.
    version: std::sync::atomic::AtomicU64,
}

/// The counters row holding the total number of queries.
pub const QUERIES: &str = "queries";

impl Counters {
    /// Moves with every view and query counted.
    pub fn version(&self) -> u64 {
        self.version.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn bump(&self) {
        self.version
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn with<T>(&self, f: impl FnOnce(&mut Pending) -> T) -> T {
        f(&mut self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// One view of a listing.
    pub fn view(&self, seq: i64) {
        self.bump();
        self.with(|p| *p.views.entry(seq).or_default() += 1);
    }

    /// Views of a listing not yet flushed.
    pub fn pending_views(&self, seq: i64) -> i64 {
        self.with(|p| p.views.get(&seq).copied().unwrap_or(0))
    }

    /// One catalogue query by `querier` (a salted hash).
    pub fn query(&self, querier: String) {
        self.bump();
        self.with(|p| {
            p.queries += 1;
            p.queriers.insert(querier);
        });
    }

    /// (queries not yet flushed, querier keys not yet flushed).
    pub fn pending_queries(&self) -> (i64, Vec<String>) {
        self.with(|p| (p.queries, p.queriers.iter().cloned().collect()))
    }

    /// Drops everything pending (a follower, which cannot write, counts nothing).
    pub fn discard(&self) {
        self.with(std::mem::take);
    }

    /// Writes everything pending in one transaction and returns the view counts written; on
    /// failure the increments are put back.
    ///
    /// # Errors
    /// Database failure (after restoring the pending increments).
    pub fn flush(&self, store: &Store, now: &str) -> Result<Vec<(i64, i64)>> {
        let batch = self.with(std::mem::take);
        if batch.views.is_empty() && batch.queries == 0 && batch.queriers.is_empty() {
            return Ok(Vec::new());
        }
        let views: Vec<(i64, i64)> = batch.views.iter().map(|(k, v)| (*k, *v)).collect();
        let (written, queries, now) = (views.clone(), batch.queries, now.to_owned());
        let queriers: Vec<String> = batch.queriers.iter().cloned().collect();
        let result = store.write_blocking(move |tx| {
            listings::add_views(tx, &written)?;
            if queries != 0 {
                counter_store::add(tx, QUERIES, queries)?;
            }
            counter_store::add_queriers(tx, &queriers, &now)
        });
        if let Err(error) = result {
            self.with(|p| {
                for (seq, n) in batch.views {
                    *p.views.entry(seq).or_default() += n;
                }
                p.queries += batch.queries;
                p.queriers.extend(batch.queriers);
            });
            return Err(error);
        }
        Ok(views)
    }
}

/// A stored counter.
///
/// # Errors
/// Database failure.
pub fn stored(conn: &Connection, name: &str) -> Result<i64> {
    counter_store::get(conn, name)
}

/// Distinct queriers: those stored plus pending ones not stored yet.
///
/// # Errors
/// Database failure.
pub fn distinct_queriers(conn: &Connection, pending: &[String]) -> Result<i64> {
    Ok(counter_store::querier_count(conn)? + counter_store::unknown_queriers(conn, pending)?)
}
