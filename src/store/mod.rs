//! The SQLite store: one file, WAL, one writer thread, reader threads.
//!
//! Invariants: this module never imports hyper. Store functions are synchronous
//! (`fn(&Connection, …) -> Result<T>`); async callers reach them only through [`Store::read`]
//! (a reader thread, see `readers`) and [`Store::write`] (the writer thread), so no SQLite call runs on an
//! async worker and no connection is held across an `.await`.
//!
//! Writes: one thread owns the only writing connection and takes jobs from a queue. It runs
//! whatever jobs are queued together in one IMMEDIATE transaction (group commit), each inside
//! its own SAVEPOINT: a job that fails is rolled back alone, and no caller hears "done" before the
//! COMMIT that made its change durable. A failed request leaves nothing half-written.

pub mod agents;
pub mod approvals;
pub mod catalog;
mod checkpoints;
pub mod console;
pub mod counters;
pub mod endpoints;
pub mod fees;
pub mod ingress;
pub mod inquiries;
pub mod listings;
pub mod messages;
mod migrate;
pub mod oauth;
pub mod orders;
pub mod payments;
pub mod proof;
pub mod purchases;
mod queue;
mod readers;
mod replica;
mod seeding;
pub mod settings;
pub mod spending;
pub mod tlog;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags};

use checkpoints::{WAL_FILE_LIMIT_BYTES, checkpoint_loop, checkpoint_waits, writer_waits};
use migrate::{check_identity, migrate};
use writer::{Completion, Job, WRITER_CACHE_KIB, writer_loop};

use crate::error::{Error, Result};
use crate::telemetry::StoreMeters;

/// The handles the writer and the readers record through, once the server has given them
/// ([`Store::instrument`]); until then nothing is recorded.
type Meters = Arc<std::sync::OnceLock<StoreMeters>>;

/// How long no read (for the readers) or no write (for the writer) must come, after some work,
/// before each of those threads hands memory back.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// What a reader or the writer does once idle (see `crate::memory`): its connection's page
/// cache is emptied (the pages stay in the system's file cache, where the next read finds them
/// in a microsecond or two) and the allocators take back what the thread freed.
fn hand_back_idle(conn: &Connection) {
    let _ = conn.release_memory();
    crate::memory::hand_back_idle();
}

/// `PRAGMA application_id` stamped on every bourse database: ASCII "BRSE".
pub const APPLICATION_ID: i32 = 0x4252_5345;
/// The schema version this binary writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i32 = 13;
/// Handle to the database; cheap to clone. When the last clone is dropped the writer thread
/// ends (its queue closes) and the checkpoint thread stops.
#[derive(Clone)]
pub struct Store {
    readers: Readers,
    /// The writer thread's queue; `None` on a read-only follower.
    jobs: Option<Arc<queue::Sender<Job>>>,
    /// Transactions committed since start (see [`Store::commits`]).
    commits: Arc<AtomicU64>,
    _closed: Arc<Closed>,
    checkpoints: Checkpoints,
    meters: Meters,
}

/// Where reads run.
#[derive(Clone)]
enum Readers {
    /// A primary: reader threads owning their connections (`readers`), plus a small pool for
    /// blocking reads at start-up and in the CLI.
    Primary {
        threads: readers::Readers,
        pool: r2d2::Pool<SqliteConnectionManager>,
    },
    /// A follower's replica, rewritten in place by Litestream: connections live one short
    /// window each (see `replica`).
    Replica(Arc<replica::Replica>),
}

/// Who checkpoints the WAL into the database file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checkpoints {
    /// bourse does (PASSIVE every 500 ms, TRUNCATE past 64 MiB and on shutdown): the default.
    Bourse,
    /// Something else does, and bourse never checkpoints: Litestream, which must see every WAL
    /// frame before it is copied back (`serve --replicated`).
    External,
}

/// Raises its flag when dropped, i.e. with the last clone of a [`Store`].
struct Closed(Arc<AtomicBool>);

impl Drop for Closed {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
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
        Store::open_with(path, Checkpoints::Bourse)
    }

    /// [`Store::open`], saying who checkpoints.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with(path: &Path, checkpoints: Checkpoints) -> Result<Store> {
        let mut writer = Connection::open(path)
            .map_err(|e| Error::Internal(format!("cannot open {}: {e}", path.display())))?;
        check_identity(&writer, path)?;
        configure(&mut writer)?;
        migrate(&mut writer)?;
        let manager = SqliteConnectionManager::file(path)
            .with_flags(OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .with_init(configure);
        let threads = readers::threads();
        let meters = Meters::default();
        let pool = r2d2::Pool::builder()
            .max_size(threads as u32 + 2)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(manager)?;
        let readers = Readers::Primary {
            threads: readers::Readers::start(&pool, threads, meters.clone())?,
            pool,
        };
        // Checkpoints copy the WAL into the database file and fsync it: done inside a commit they
        // stall every queued write, so the writer never checkpoints and a separate connection
        // does it (`checkpoint_loop`: mostly PASSIVE, which never blocks writers).
        writer.execute_batch("PRAGMA wal_autocheckpoint = 0;")?;
        writer.busy_handler(Some(writer_waits))?;
        // A burst can grow the WAL past what checkpoints keep it to (a RESTART that had to give
        // up, a long read): the first commit after the WAL starts over cuts the file back.
        writer.execute_batch(&format!(
            "PRAGMA journal_size_limit = {WAL_FILE_LIMIT_BYTES};"
        ))?;
        writer.execute_batch(&format!("PRAGMA cache_size = -{};", WRITER_CACHE_KIB))?;
        let (jobs, queue) = queue::queue(IDLE_AFTER);
        let commits = Arc::new(AtomicU64::new(0));
        std::thread::Builder::new()
            .name("bourse-writer".into())
            .spawn({
                let (commits, meters) = (commits.clone(), meters.clone());
                move || writer_loop(writer, queue, &commits, &meters)
            })
            .map_err(|e| Error::Internal(format!("cannot start the writer thread: {e}")))?;
        let closed = Arc::new(AtomicBool::new(false));
        if checkpoints == Checkpoints::Bourse {
            let mut checkpointer = Connection::open(path)?;
            configure(&mut checkpointer)?;
            checkpointer.busy_handler(Some(checkpoint_waits))?;
            let stop = closed.clone();
            std::thread::Builder::new()
                .name("bourse-checkpoint".into())
                .spawn(move || checkpoint_loop(checkpointer, stop))
                .map_err(|e| Error::Internal(format!("cannot start the checkpoint thread: {e}")))?;
        }
        Ok(Store {
            readers,
            jobs: Some(Arc::new(jobs)),
            commits,
            _closed: Arc::new(Closed(closed)),
            checkpoints,
            meters,
        })
    }

    /// Opens a replica read-only, as a follower: no writer thread, no checkpoints, every write
    /// refused with [`Error::ReadOnlyFollower`]. The replica must carry this binary's schema
    /// version (a follower never migrates: upgrade the primary first, then its followers).
    ///
    /// # Errors
    /// No database at `path`, not bourse's, or of another schema version.
    pub fn open_follower(path: &Path) -> Result<Store> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| Error::Internal(format!("cannot open {}: {e}", path.display())))?;
        conn.busy_timeout(Duration::from_secs(5))?;
        check_identity(&conn, path)?;
        let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            return Err(Error::Internal(format!(
                "refusing {}: the replica has schema version {version} and this binary {SCHEMA_VERSION}; a follower runs the primary's release",
                path.display()
            )));
        }
        drop(conn);
        Ok(Store {
            readers: Readers::Replica(Arc::new(replica::Replica::new(path.to_owned()))),
            jobs: None,
            commits: Arc::new(AtomicU64::new(0)),
            _closed: Arc::new(Closed(Arc::new(AtomicBool::new(false)))),
            checkpoints: Checkpoints::External,
            meters: Meters::default(),
        })
    }

    /// Closes a follower's replica connections (idle ones now, the others after their read) so
    /// that Litestream can apply its next change; nothing on a primary.
    pub fn release_replica(&self) {
        if let Readers::Replica(replica) = &self.readers {
            replica.release();
        }
    }

    /// How many transactions this store has committed since it was opened: any answer read
    /// under one count is current while the count stands (a follower's stays 0; its replica's
    /// changes are tracked by the follower itself).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Gives the writer and the readers the handles to record through (group sizes, commit
    /// times, read waits); the first call wins.
    pub fn instrument(&self, meters: StoreMeters) {
        let _ = self.meters.set(meters);
    }

    /// Write jobs queued and not yet taken by the writer (0 on a follower).
    pub fn write_queue_depth(&self) -> usize {
        self.jobs.as_deref().map_or(0, queue::Sender::len)
    }

    /// A follower's replica file (which it watches for Litestream's changes).
    pub fn replica_file(&self) -> Option<&Path> {
        match &self.readers {
            Readers::Replica(replica) => Some(replica.path()),
            Readers::Primary { .. } => None,
        }
    }

    /// Whether a primary leaves checkpoints to Litestream (`serve --replicated`).
    pub fn replicated(&self) -> bool {
        !self.is_follower() && self.checkpoints == Checkpoints::External
    }

    /// Whether this is a read-only follower's store.
    pub fn is_follower(&self) -> bool {
        self.jobs.is_none()
    }

    fn queue(&self) -> Result<&queue::Sender<Job>> {
        self.jobs.as_deref().ok_or(Error::ReadOnlyFollower)
    }

    /// Runs `f` on a read connection, off the async executor: one hop to a reader thread (a
    /// follower's reads run on the blocking pool).
    ///
    /// # Errors
    /// Whatever `f` returns, or a connection failure.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        match &self.readers {
            Readers::Primary { threads, .. } => threads.read(f).await,
            Readers::Replica(replica) => {
                let replica = replica.clone();
                run_blocking(move || replica.read(f)).await
            }
        }
    }

    /// The blocking form of [`Store::read`], for start-up.
    ///
    /// # Errors
    /// Whatever `f` returns, or a pool failure.
    pub fn read_blocking<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        match &self.readers {
            Readers::Primary { pool, .. } => f(&*pool.get()?),
            Readers::Replica(replica) => replica.read(f),
        }
    }

    /// Runs `f` on the writer thread inside a transaction; answers after the COMMIT that makes
    /// its change durable. When `f` fails its changes are rolled back and nothing else is.
    ///
    /// # Errors
    /// Whatever `f` returns, or a database failure.
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(f, move |result| {
            let _ = reply.send(result);
        })?;
        answer
            .await
            .map_err(|_| Error::Internal("the writer thread stopped".into()))?
    }

    /// The blocking form of [`Store::write`], for CLI commands and start-up.
    ///
    /// # Errors
    /// Whatever `f` returns, or a database failure.
    pub fn write_blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = mpsc::channel();
        self.submit(f, move |result| {
            let _ = reply.send(result);
        })?;
        answer
            .recv()
            .map_err(|_| Error::Internal("the writer thread stopped".into()))?
    }

    fn submit<T, F>(&self, f: F, reply: impl FnOnce(Result<T>) + Send + 'static) -> Result<()>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let job = Job::Transaction(Box::new(
            move |conn: std::result::Result<&Connection, &str>| {
                let conn = match conn {
                    Ok(conn) => conn,
                    Err(why) => {
                        reply(Err(Error::Internal(why.to_owned())));
                        return None;
                    }
                };
                // Cached: every job opens and releases one, so they are parsed once.
                if let Err(error) = conn
                    .prepare_cached("SAVEPOINT job")
                    .and_then(|mut s| s.execute([]))
                {
                    reply(Err(error.into()));
                    return None;
                }
                match f(conn) {
                    Ok(value) => match conn
                        .prepare_cached("RELEASE job")
                        .and_then(|mut s| s.execute([]))
                    {
                        Ok(_) => Some(Box::new(move |committed: std::result::Result<(), String>| {
                            reply(committed.map(|()| value).map_err(Error::Internal));
                        }) as Completion),
                        Err(error) => {
                            let _ = conn.execute_batch("ROLLBACK TO job; RELEASE job");
                            reply(Err(error.into()));
                            None
                        }
                    },
                    Err(error) => {
                        let _ = conn.execute_batch("ROLLBACK TO job; RELEASE job");
                        reply(Err(error));
                        None
                    }
                }
            },
        ));
        self.queue()?
            .send(job)
            .map_err(|_| Error::Internal("the writer thread stopped".into()))
    }

    async fn raw<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> T + Send + 'static,
    ) -> Result<T> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job::Raw(Box::new(move |conn| {
            let _ = reply.send(f(conn));
        }));
        self.queue()?
            .send(job)
            .map_err(|_| Error::Internal("the writer thread stopped".into()))?;
        answer
            .await
            .map_err(|_| Error::Internal("the writer thread stopped".into()))
    }

    /// Readiness: the schema is ours and current, and the writer can take the write lock.
    ///
    /// # Errors
    /// Describes what is not ready.
    pub async fn check_ready(&self) -> Result<()> {
        if self.is_follower() {
            return self
                .read(|conn| {
                    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                    if version == SCHEMA_VERSION {
                        Ok(())
                    } else {
                        Err(Error::Internal(format!("replica schema version {version}")))
                    }
                })
                .await;
        }
        self.raw(|conn| -> Result<()> {
            let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version != SCHEMA_VERSION {
                return Err(Error::Internal(format!("schema version {version}")));
            }
            conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")?;
            Ok(())
        })
        .await?
    }

    /// Appends synthetic listings in bulk and builds their search index, on the writer thread
    /// outside the group transaction (writes queued meanwhile wait for it); returns how many
    /// were written. For the benchmark's catalogue seeder (`examples/seed_catalog.rs`) only:
    /// the load turns durability off while it runs and holds the write lock throughout. The
    /// catalogue it leaves is the one [`listings::insert`] row by row would leave (see
    /// `store/seeding.rs`). `rows` may be produced on another thread while the load writes.
    ///
    /// # Errors
    /// A database failure or a row that breaks a constraint; nothing is written then.
    pub fn seed_listings(
        &self,
        rows: impl IntoIterator<Item = listings::ListingRow> + Send + 'static,
    ) -> Result<usize> {
        let (reply, answer) = mpsc::channel();
        let job = Job::Raw(Box::new(move |conn| {
            let _ = reply.send(seeding::insert_listings(conn, rows));
        }));
        self.queue()?
            .send(job)
            .map_err(|_| Error::Internal("the writer thread stopped".into()))?;
        answer
            .recv()
            .map_err(|_| Error::Internal("the writer thread stopped".into()))?
    }

    /// Flushes the WAL into the main file (used on shutdown); waits for queued writes first.
    /// Nothing to do when checkpoints are left to Litestream, or on a follower.
    pub fn checkpoint(&self) {
        let Some(queue) = self
            .jobs
            .as_ref()
            .filter(|_| self.checkpoints == Checkpoints::Bourse)
        else {
            return;
        };
        let (reply, answer) = mpsc::channel();
        let job = Job::Raw(Box::new(move |conn| {
            if let Err(error) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);") {
                tracing::warn!(%error, "WAL checkpoint on shutdown failed");
            }
            let _ = reply.send(());
        }));
        if queue.send(job).is_ok() {
            let _ = answer.recv();
        }
    }
}

/// Creates an empty file readable and writable by its owner only (0600 on Unix).
fn create_private(path: &Path) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .map(drop)
        .map_err(|e| Error::Internal(format!("cannot create {}: {e}", path.display())))
}

/// Writes a consistent copy of the bourse database at `database` to the new file `out`
/// (`VACUUM INTO`), safe while a server is using it. The database is opened read-only: a backup
/// neither migrates nor writes it, and one that is not bourse's is refused.
///
/// # Errors
/// No database, not a bourse database, `out` exists, is not UTF-8 or cannot be written.
pub fn backup(database: &Path, out: &Path) -> Result<()> {
    if !database.exists() {
        return Err(Error::invalid(format!(
            "no database at {}",
            database.display()
        )));
    }
    if out.exists() {
        return Err(Error::invalid(format!(
            "{} already exists; choose a new file",
            out.display()
        )));
    }
    if let Some(folder) = out.parent().filter(|p| !p.as_os_str().is_empty())
        && !folder.is_dir()
    {
        return Err(Error::invalid(format!(
            "the folder {} does not exist; create it first (mkdir -p {})",
            folder.display(),
            folder.display()
        )));
    }
    let conn = Connection::open_with_flags(database, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| Error::Internal(format!("cannot open {}: {e}", database.display())))?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let application_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    if application_id != APPLICATION_ID {
        return Err(Error::invalid(format!(
            "{} is not a bourse database",
            database.display()
        )));
    }
    let target = out
        .to_str()
        .ok_or_else(|| Error::invalid("the output path must be UTF-8"))?;
    // The copy holds every agent's key hash and every message: readable by its owner only.
    // The file is created empty with that mode first, so it is never readable by others.
    create_private(out)?;
    if let Err(error) = conn.execute("VACUUM INTO ?1", [target]) {
        let _ = std::fs::remove_file(out);
        return Err(Error::Internal(format!("backup failed: {error}")));
    }
    Ok(())
}

/// Every reading connection's page cache, in KiB (SQLite's default is 2 MiB): the readers, the
/// pool's spares and a follower's connections. At 1M listings 512 KiB answered uncached browse
/// pages as fast, and left the process 45 MiB smaller after the bench's load.
const READER_CACHE_KIB: u32 = 512;

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

/// A primary's connections: the reading settings, in WAL mode.
fn configure(conn: &mut Connection) -> rusqlite::Result<()> {
    configure_reading(conn)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
}

/// What every connection takes, a follower's read-only ones too (they cannot set the journal
/// mode): a 5 s wait for a lock held elsewhere (a commit, a checkpoint, a Litestream apply),
/// prepared statements kept, foreign keys on, temporary tables in memory, the reading page cache.
fn configure_reading(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    // Browse builds one statement per combination of filters; keep them all prepared.
    conn.set_prepared_statement_cache_capacity(128);
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -{READER_CACHE_KIB};"
    ))
}

#[cfg(test)]
impl Store {
    fn test_reader(&self) -> r2d2::PooledConnection<SqliteConnectionManager> {
        match &self.readers {
            Readers::Primary { pool, .. } => pool.get().expect("a read connection"),
            Readers::Replica(_) => panic!("a follower has no pool"),
        }
    }
}

/// A fresh in-memory database with the current schema, for the store modules' unit tests.
#[cfg(test)]
pub(crate) fn test_db() -> Connection {
    let conn = Connection::open_in_memory().expect("an in-memory database");
    conn.execute_batch("PRAGMA foreign_keys = ON;")
        .expect("foreign keys");
    conn.execute_batch(migrate::SCHEMA)
        .expect("the schema applies");
    conn
}

/// An agent row for unit tests.
#[cfg(test)]
pub(crate) fn test_agent(id: &str, handle: &str) -> agents::AgentRow {
    agents::AgentRow {
        id: id.into(),
        handle: handle.into(),
        name: format!("agent {id}"),
        display_name: None,
        email: None,
        callback_url: None,
        created_at: "2026-01-01T00:00:00Z".into(),
        updated_at: "2026-01-01T00:00:00Z".into(),
        rating_count: 0,
        sales_count: 0,
        restricted: None,
        via_grant: None,
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
