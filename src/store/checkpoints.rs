//! How the writer and the checkpointer share the WAL: the checkpoint thread's rounds, and the
//! busy handlers that keep a checkpoint's hold on the write lock short for both sides.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// How often the WAL is copied back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// WAL content past which a checkpoint waits for the writer so that the WAL starts over.
const WAL_LIMIT_BYTES: i64 = 4 << 20;

/// The size the WAL file is cut back to when it starts over (`journal_size_limit`).
pub(super) const WAL_FILE_LIMIT_BYTES: i64 = 64 << 20;

/// Frames a PASSIVE pass may copy for the next pass to be a RESTART: what remains for the
/// RESTART (which holds the writer back while it copies and syncs) is what arrives meanwhile.
const RESTART_AFTER_FRAMES: i64 = 256;

/// Passes that may chase a busy writer before the RESTART goes ahead regardless.
const PASSES_MAX: usize = 4;

/// Checkpoints every [`CHECKPOINT_EVERY`] until the store is dropped: PASSIVE (never blocks a
/// writer), then, once the WAL holds more than [`WAL_LIMIT_BYTES`], RESTART, since under
/// constant writes a WAL only starts over when a checkpoint waits for the writer. A RESTART
/// holds commits back while it copies what the PASSIVE pass left and syncs the file (15 ms
/// and more under a stream of message sends, where a pass takes 25 ms), so PASSIVE passes
/// first chase the frames written meanwhile until a pass copies few (at most
/// [`PASSES_MAX`] passes). The WAL then stays small enough to stay in the page cache (left to
/// grow to 64 MiB and truncated, it cost message sends about 12% of their throughput). RESTART
/// keeps the file: later commits overwrite it instead of growing it again.
pub(super) fn checkpoint_loop(conn: Connection, closed: Arc<AtomicBool>) {
    let page_size: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap_or(4096);
    let checkpoint = |mode: &str| -> rusqlite::Result<i64> {
        // (busy, frames in the WAL, frames copied)
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| r.get(1))
    };
    while !closed.load(Ordering::SeqCst) {
        std::thread::sleep(CHECKPOINT_EVERY);
        let result = checkpoint("PASSIVE").and_then(|mut frames| {
            if frames.saturating_mul(page_size) <= WAL_LIMIT_BYTES {
                return Ok(());
            }
            for _ in 0..PASSES_MAX {
                let now = checkpoint("PASSIVE")?;
                let copied = now.saturating_sub(frames);
                frames = now;
                if copied <= RESTART_AFTER_FRAMES {
                    break;
                }
            }
            checkpoint("RESTART").map(|_| ())
        });
        if let Err(error) = result {
            tracing::debug!(%error, "checkpoint");
        }
    }
}

/// The writer's busy handler: while a RESTART checkpoint holds the write lock (a few ms), wait
/// in short steps instead of SQLite's default sleeps (1, 2, 5, 10… ms), which leave the queue
/// of commits stalled well after the lock is free; give up after 5 s, the other connections'
/// busy timeout.
pub(super) fn writer_waits(attempt: i32) -> bool {
    wait_briefly(attempt, Duration::from_secs(5))
}

/// The checkpointer's busy handler. A RESTART holds the write lock while it waits for the
/// writer's current group and then for readers to leave the WAL: a long read (a backup, a large
/// export) must not hold every commit back for seconds, so a RESTART that cannot finish within
/// 50 ms gives up and the next round tries again.
pub(super) fn checkpoint_waits(attempt: i32) -> bool {
    wait_briefly(attempt, Duration::from_millis(50))
}

/// A busy handler's step: sleep 100 µs unless `give_up_after` has passed since the first
/// attempt of this wait.
fn wait_briefly(attempt: i32, give_up_after: Duration) -> bool {
    const STEP: Duration = Duration::from_micros(100);
    thread_local! {
        static WAITING_SINCE: std::cell::Cell<Instant> = std::cell::Cell::new(Instant::now());
    }
    let now = Instant::now();
    if attempt == 0 {
        WAITING_SINCE.set(now);
    }
    if now.duration_since(WAITING_SINCE.get()) >= give_up_after {
        return false;
    }
    std::thread::sleep(STEP);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_wait_goes_on_until_its_time_is_spent() {
        assert!(!wait_briefly(0, Duration::ZERO), "no time: give up at once");
        assert!(wait_briefly(0, Duration::from_secs(60)));
        assert!(
            wait_briefly(1, Duration::from_secs(60)),
            "later attempts of the same wait"
        );
        assert!(writer_waits(0) && checkpoint_waits(0));
    }
}
