//! The primary's readers: a fixed set of threads, each owning one connection for its whole life.
//!
//! A read is one hop off the async executor: the caller puts a closure on a queue
//! ([`super::queue`]) and awaits its answer; whichever reader thread is free runs it on its own
//! connection. No pool is checked out per read (no lock hand-off between many blocking threads
//! and few connections) and tokio's blocking pool does not grow under load. Reads in flight are
//! bounded: past [`IN_FLIGHT`], callers wait (asynchronously) before sending, so a burst queues
//! in the executor instead of in memory without limit. Once no read has been sent for a second,
//! each reader that has read since it last did so hands memory back (`hand_back_idle`).

use std::sync::Arc;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

use super::queue::{self, Next};
use super::{IDLE_AFTER, hand_back_idle};
use crate::error::{Error, Result};

/// Reader threads (and connections): two per core, so a read waiting on the disk leaves the
/// cores busy, from 2 to 16. Not more: each thread keeps allocator pages of its own. At 1M
/// listings on 2 cores, 8 readers answered uncached browse pages 7% slower than 4 and left the
/// process 14 MiB larger after the bench's load; 2 were 8% slower than 4.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |cores| cores.get() * 2)
        .clamp(2, 16)
}

/// Most reads sent and not yet answered.
const IN_FLIGHT: usize = 256;

/// A read and when it was queued (for the queue-wait histogram).
type ReadJob = (std::time::Instant, Box<dyn FnOnce(&Connection) + Send>);

/// Handle to the reader threads; they end when the last handle is dropped.
#[derive(Clone)]
pub struct Readers {
    jobs: Arc<queue::Sender<ReadJob>>,
    in_flight: Arc<tokio::sync::Semaphore>,
}

impl Readers {
    /// Starts `count` threads (see [`threads`]), each holding one connection of `pool` (the
    /// pool opens and configures them) until the readers are dropped.
    ///
    /// # Errors
    /// A connection cannot be opened or a thread started.
    pub fn start(
        pool: &r2d2::Pool<SqliteConnectionManager>,
        count: usize,
        meters: super::Meters,
    ) -> Result<Readers> {
        let (jobs, taker) = queue::queue::<ReadJob>(IDLE_AFTER);
        for n in 0..count {
            let conn = pool.get()?;
            let (mut taker, meters) = (taker.clone(), meters.clone());
            std::thread::Builder::new()
                .name(format!("bourse-reader-{n}"))
                .spawn(move || {
                    loop {
                        match taker.next() {
                            // A panicking read answers its caller with an error (its reply is
                            // dropped) and the thread goes on.
                            Next::Job((sent, job)) => {
                                if let Some(meters) = meters.get() {
                                    meters
                                        .read_wait_seconds
                                        .record(sent.elapsed().as_secs_f64());
                                }
                                let _ =
                                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                        job(&conn)
                                    }));
                            }
                            Next::Idle => hand_back_idle(&conn),
                            Next::Closed => return, // every handle dropped
                        }
                    }
                })
                .map_err(|e| Error::Internal(format!("cannot start a reader thread: {e}")))?;
        }
        Ok(Readers {
            jobs: Arc::new(jobs),
            in_flight: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
        })
    }

    /// Runs `f` on a reader thread's connection and answers what it returns.
    ///
    /// # Errors
    /// Whatever `f` returns, or `Internal` when it panicked.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| Error::Internal("the readers stopped".into()))?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs
            .send((
                std::time::Instant::now(),
                Box::new(move |conn| {
                    let _ = reply.send(f(conn));
                }),
            ))
            .map_err(|_| Error::Internal("the readers stopped".into()))?;
        answer
            .await
            .map_err(|_| Error::Internal("a read failed without an answer (it panicked)".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_read_answers_an_error_and_the_readers_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let manager = SqliteConnectionManager::file(dir.path().join("r.db"));
        let pool = r2d2::Pool::builder()
            .max_size(threads() as u32)
            .build(manager)
            .unwrap();
        let readers = Readers::start(&pool, threads(), super::super::Meters::default()).unwrap();
        for _ in 0..threads() * 2 {
            let failed = readers
                .read(|_| -> Result<()> { panic!("a bug in a read") })
                .await;
            assert!(matches!(failed, Err(Error::Internal(_))));
        }
        // Far more reads than threads, all at once: each is answered.
        let reads = (0..IN_FLIGHT * 2).map(|n| {
            let readers = readers.clone();
            tokio::spawn(async move {
                readers
                    .read(move |conn| {
                        Ok(conn.query_row("SELECT ?1", [n as i64], |r| r.get::<_, i64>(0))?)
                    })
                    .await
            })
        });
        for (n, read) in reads.enumerate() {
            assert_eq!(read.await.unwrap().unwrap(), n as i64);
        }
    }
}
