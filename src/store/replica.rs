//! A follower's read connections over a replica that Litestream's follow-mode restore rewrites
//! in place.
//!
//! Litestream applies a change by writing pages straight into the file under an exclusive lock.
//! It takes SQLite's PENDING byte first, so no new reader starts, then waits until no connection
//! holds a shared lock; but a connection to a WAL-mode database holds one for as long as it is
//! open, idle or not. Connections are therefore kept for one short window only: [`Replica::
//! release`] (called every 100 ms by the follower's loop) retires every one of them, the idle
//! at once and those in use when their read ends, so an apply waits at most a window and a
//! read. A connection never outlives an apply, so none serves pages cached from before one.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OpenFlags};

use crate::error::Result;

/// Most idle connections kept.
const IDLE_MAX: usize = 8;

/// The replica's connections.
pub struct Replica {
    path: PathBuf,
    /// Moved by every release; a connection of an earlier window is not reused.
    window: AtomicU64,
    idle: Mutex<Vec<(u64, Connection)>>,
}

impl Replica {
    pub fn new(path: PathBuf) -> Replica {
        Replica {
            path,
            window: AtomicU64::new(0),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Runs `f` on a connection of the current window (opened if none is idle).
    ///
    /// # Errors
    /// Whatever `f` returns, or the replica cannot be opened.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let window = self.window.load(Ordering::SeqCst);
        let reused = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            idle.pop().filter(|(opened, _)| *opened == window)
        };
        let conn = match reused {
            Some((_, conn)) => conn,
            None => self.open()?,
        };
        let answer = f(&conn);
        // Checked under the lock `release` moves the window under: a connection is parked only
        // in the window it was opened in, never after that window's release.
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if self.window.load(Ordering::SeqCst) == window && idle.len() < IDLE_MAX {
            idle.push((window, conn));
        }
        answer
    }

    /// Ends the window: idle connections are closed now, those in use when their read ends.
    pub fn release(&self) {
        let closing = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            self.window.fetch_add(1, Ordering::SeqCst);
            std::mem::take(&mut *idle)
        };
        drop(closing);
    }

    /// The replica file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn open(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Its busy timeout waits out an apply in progress (Litestream holds the PENDING lock).
        super::configure_reading(&conn)?;
        Ok(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(replica: &Replica) -> Vec<u64> {
        let idle = replica.idle.lock().unwrap();
        idle.iter().map(|(window, _)| *window).collect()
    }

    #[test]
    fn connections_are_reused_within_a_window_and_closed_when_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replica.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);",
            )
            .unwrap();
        let replica = Replica::new(path);
        let count = |conn: &Connection| {
            Ok(conn.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))?)
        };
        assert_eq!(replica.read(count).unwrap(), 1);
        assert_eq!(replica.read(count).unwrap(), 1);
        assert_eq!(idle(&replica), vec![0], "one connection, reused");
        replica.release();
        assert!(idle(&replica).is_empty(), "closed when the window ends");
        // A read that began before the release does not return its connection.
        let answer = replica.read(|conn| {
            replica.release();
            count(conn)
        });
        assert_eq!(answer.unwrap(), 1);
        assert!(idle(&replica).is_empty());
        replica.read(count).unwrap();
        assert_eq!(idle(&replica), vec![2]);
    }
}
