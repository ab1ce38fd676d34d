//! The writer thread: the only connection that writes. It commits whatever jobs are queued
//! together (group commit), each job in its own savepoint, and tells every caller once the
//! COMMIT is known.

use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, TransactionBehavior};

use super::hand_back_idle;
use super::queue::{Next, Taker};

/// Most jobs committed together.
const GROUP_MAX: usize = 256;

/// What the writer thread hands back to a job's caller once the group's COMMIT is known.
pub(super) type Completion = Box<dyn FnOnce(std::result::Result<(), String>) + Send>;

/// A transactional job: given the group's connection (or why there is none), it runs in its own
/// savepoint and returns its completion.
type TransactionJob =
    Box<dyn FnOnce(std::result::Result<&Connection, &str>) -> Option<Completion> + Send>;

pub(super) enum Job {
    /// Runs inside the group transaction, in its own savepoint, or hears why the transaction
    /// could not start. Returns the completion to call after COMMIT, or `None` when it failed
    /// (and has already answered its caller).
    Transaction(TransactionJob),
    /// Runs alone, outside any transaction (checkpoints, readiness probes).
    Raw(Box<dyn FnOnce(&mut Connection) + Send>),
}

/// The writer connection's page cache, in KiB. Small on purpose: pages missed come from the
/// operating system's file cache in a microsecond or two, and SQLite scans the whole cache when a
/// commit follows a B-tree rebalance (which borrows a page number past the end of the file), so
/// at 1M listings 4 MiB sends messages as fast as 16 MiB did, with 12 MiB less resident.
pub(super) const WRITER_CACHE_KIB: u32 = 4 * 1024;

/// Runs one job, surviving its panic: the job's savepoint is rolled back and its caller hears
/// an error (its reply channel is dropped), while the group and the writer thread go on.
fn run_guarded(job: TransactionJob, tx: &Connection) -> Option<Completion> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(Ok(tx)))) {
        Ok(completion) => completion,
        Err(_) => {
            tracing::error!("a write job panicked; its changes were rolled back");
            let _ = tx.execute_batch("ROLLBACK TO job; RELEASE job");
            None
        }
    }
}

/// The writer thread: takes whatever jobs are queued (up to [`GROUP_MAX`]), runs them in one
/// transaction, commits once, then tells every caller. Ends when every `Store` is dropped.
pub(super) fn writer_loop(
    mut conn: Connection,
    mut queue: Taker<Job>,
    commits: &AtomicU64,
    meters: &super::Meters,
) {
    let mut pending: Option<Job> = None;
    loop {
        let first = match pending.take() {
            Some(job) => job,
            None => match queue.next() {
                Next::Job(job) => job,
                Next::Idle => {
                    hand_back_idle(&conn);
                    continue;
                }
                Next::Closed => return,
            },
        };
        let mut group = match first {
            Job::Raw(f) => {
                f(&mut conn);
                continue;
            }
            Job::Transaction(f) => vec![f],
        };
        while group.len() < GROUP_MAX {
            match queue.try_next() {
                Some(Job::Transaction(f)) => group.push(f),
                Some(raw @ Job::Raw(_)) => {
                    pending = Some(raw);
                    break;
                }
                None => break,
            }
        }
        let (began, jobs) = (std::time::Instant::now(), group.len());
        match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(tx) => {
                let completions: Vec<Completion> = group
                    .into_iter()
                    .filter_map(|job| run_guarded(job, &tx))
                    .collect();
                let committed = tx.commit().map_err(|e| format!("database commit: {e}"));
                if committed.is_ok() {
                    // Before any caller hears of it: an answer read after a write sees the bump.
                    commits.fetch_add(1, Ordering::SeqCst);
                }
                if let Some(meters) = meters.get() {
                    meters.commit_seconds.record(began.elapsed().as_secs_f64());
                    meters.group_jobs.record(jobs as f64);
                }
                completions
                    .into_iter()
                    .for_each(|complete| complete(committed.clone()));
            }
            Err(error) => {
                let why = format!("database: {error}");
                for job in group {
                    let _ = job(Err(&why));
                }
            }
        }
    }
}
