//! The SQLite store: one file, WAL, one writer, a pool of readers.
//!
//! Invariants: this module never imports hyper. Store functions are synchronous
//! (`fn(&Connection, …) -> Result<T>`); async callers reach them only through [`Store::read`] and
//! [`Store::write`], which run the closure on the blocking pool, so no SQLite call runs on an
//! async worker and no connection is held across an `.await`. Every `write` is one IMMEDIATE
//! transaction under the writer lock: a failed request leaves nothing half-written.

pub mod agents;
pub mod listings;
pub mod messages;
pub mod settings;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::{Error, Result};

/// `PRAGMA application_id` stamped on every bourse database: ASCII "BRSE".
pub const APPLICATION_ID: i32 = 0x4252_5345;
/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i32 = 1;
const SCHEMA: &str = include_str!("../../schema.sql");
const READ_POOL_SIZE: u32 = 8;

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    readers: r2d2::Pool<SqliteConnectionManager>,
    writer: Arc<Mutex<Connection>>,
}

impl Store {
    /// Opens (creating if needed) and migrates the database at `path`.
    ///
    /// A database stamped by another application, or by a newer bourse, is refused before any
    /// byte of it is changed.
    ///
    /// # Errors
    /// The file cannot be opened, belongs to something else, or migration fails.
    pub fn open(path: &Path) -> Result<Store> {
        let mut writer = Connection::open(path)
            .map_err(|e| Error::Internal(format!("cannot open {}: {e}", path.display())))?;
        check_identity(&writer, path)?;
        configure(&mut writer)?;
        migrate(&mut writer)?;
        let manager = SqliteConnectionManager::file(path)
            .with_flags(OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .with_init(configure);
        let readers = r2d2::Pool::builder()
            .max_size(READ_POOL_SIZE)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(manager)?;
        Ok(Store {
            readers,
            writer: Arc::new(Mutex::new(writer)),
        })
    }

    /// Runs `f` on a pooled read connection, off the async executor.
    ///
    /// # Errors
    /// Whatever `f` returns, or a pool failure.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let readers = self.readers.clone();
        run_blocking(move || {
            let conn = readers.get()?;
            f(&conn)
        })
        .await
    }

    /// Runs `f` in one IMMEDIATE transaction on the single writer, off the async executor;
    /// commits when `f` succeeds, rolls back otherwise.
    ///
    /// # Errors
    /// Whatever `f` returns, or a database failure.
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction) -> Result<T> + Send + 'static,
    {
        let store = self.clone();
        run_blocking(move || store.write_blocking(f)).await
    }

    /// The synchronous form of [`Store::write`], for CLI commands and blocking contexts.
    ///
    /// # Errors
    /// Whatever `f` returns, or a database failure.
    pub fn write_blocking<T>(&self, f: impl FnOnce(&Transaction) -> Result<T>) -> Result<T> {
        let mut conn = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    /// Readiness: the schema is ours and current, and the writer can take the write lock.
    ///
    /// # Errors
    /// Describes what is not ready.
    pub async fn check_ready(&self) -> Result<()> {
        let store = self.clone();
        run_blocking(move || {
            let conn = store.writer.lock().unwrap_or_else(|p| p.into_inner());
            let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version != SCHEMA_VERSION {
                return Err(Error::Internal(format!("schema version {version}")));
            }
            conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")?;
            Ok(())
        })
        .await
    }

    /// Writes a consistent copy of the database to `out` (`VACUUM INTO`), safe while serving.
    ///
    /// # Errors
    /// `out` exists or cannot be written.
    pub fn backup_to(&self, out: &Path) -> Result<()> {
        let conn = self.readers.get()?;
        let target = out
            .to_str()
            .ok_or_else(|| Error::invalid("the output path must be UTF-8"))?;
        conn.execute("VACUUM INTO ?1", [target])?;
        Ok(())
    }

    /// Flushes the WAL into the main file (used on shutdown).
    pub fn checkpoint(&self) {
        let conn = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(error) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);") {
            tracing::warn!(%error, "WAL checkpoint on shutdown failed");
        }
    }
}

/// Runs blocking work on tokio's blocking pool and re-raises its panics.
async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(join) => Err(Error::Internal(format!("blocking task cancelled: {join}"))),
    }
}

fn configure(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    // Browse builds one statement per combination of filters; keep them all prepared.
    conn.set_prepared_statement_cache_capacity(128);
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;",
    )?;
    Ok(())
}

/// Reads the header stamps without writing anything.
fn check_identity(conn: &Connection, path: &Path) -> Result<()> {
    let refuse = |why: String| Error::Internal(format!("refusing {}: {why}", path.display()));
    let application_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(|e| refuse(format!("not a readable SQLite database ({e})")))?;
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    if application_id == 0 && version == 0 && objects == 0 {
        return Ok(()); // a new, empty file
    }
    if application_id != APPLICATION_ID {
        return Err(refuse(format!(
            "application_id is {application_id:#x}, not bourse's {APPLICATION_ID:#x}; it belongs to another application"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(refuse(format!(
            "schema version {version} is newer than this binary's {SCHEMA_VERSION}; upgrade bourse"
        )));
    }
    Ok(())
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version == 0 {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))?;
        tx.commit()?;
    }
    // Later schema versions: `if version < N { …; PRAGMA user_version = N }` steps go here.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_database_is_refused_and_left_byte_identical() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "PRAGMA application_id = 42; CREATE TABLE t(x); INSERT INTO t VALUES (1);",
            )
            .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let error = Store::open(&path).err().unwrap();
        assert!(error.to_string().contains("another application"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 99; CREATE TABLE t(x);"
            ))
            .unwrap();
        }
        let error = Store::open(&path).err().unwrap();
        assert!(error.to_string().contains("newer"), "{error}");
    }

    #[test]
    fn fresh_database_is_stamped_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        drop(Store::open(&path).unwrap());
        let store = Store::open(&path).unwrap();
        let conn = store.readers.get().unwrap();
        let id: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(id, APPLICATION_ID);
    }
}
