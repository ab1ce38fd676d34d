//! Replication with Litestream: the signing-key record that keeps a restored database from
//! being served under someone else's keys, the primary's heartbeat, and the follower, which
//! serves public reads from a replica that `litestream restore -f` keeps current.
//!
//! bourse does not replicate anything itself: Litestream ships the WAL off the machine and
//! applies it to replicas. What bourse does is stay out of its way (`--replicated` leaves
//! checkpoints to it) and, on a follower, notice when the replica file changed: it then reads
//! the listings whose change counter moved into its browse index, and forgets whatever it kept
//! from before. Every [`FOLLOW_POLL`] it also closes its read connections, which Litestream
//! needs to apply a change (see `store::replica`).

use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::crypto::keys::{Keyring, PublicKeyRecord};
use crate::error::{Error, Result};
use crate::service::App;
use crate::store::{Store, listings, settings};

/// How often the primary writes its heartbeat (with `--replicated`).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// How often a follower looks at its replica file.
pub const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// Longest a follower waits at start for its replica to appear (the restore that creates it may
/// still be downloading).
pub const REPLICA_WAIT: Duration = Duration::from_secs(120);

/// Milliseconds since the Unix epoch, by the machine's clock (not the sandbox clock: replication
/// lag is about real time).
pub fn unix_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The transparency log's entry type of a signing-key change.
pub const KEY_CHANGE: &str = "bourse.signing-key.change";

/// Checks that `keyring` may sign for the database in `store` and records its public keys there.
///
/// The database remembers the public keys it was signed with. Started with a keyfile that holds
/// none of them (a database restored on a new machine without the instance's `signing.key`),
/// bourse refuses: answers signed with an unknown key would not verify against the keys the
/// instance published. With `accept_new` it adopts the keyfile's key and keeps the recorded
/// public keys as retired ones (saved into the keyfile), so earlier receipts still verify.
///
/// A follower only checks: it must hold the primary's current key.
///
/// # Errors
/// The keys differ (and `accept_new` is off), or the keyfile or database cannot be written.
pub fn check_signing_key(
    store: &Store,
    keyring: &mut Keyring,
    keyfile: &Path,
    accept_new: bool,
    now: &str,
) -> Result<()> {
    let recorded: Vec<PublicKeyRecord> = store
        .read_blocking(|conn| settings::get(conn, settings::SIGNING_KEYS))?
        .and_then(|value| serde_json::from_value(value).ok())
        .unwrap_or_default();
    let holds = |keyring: &Keyring| {
        recorded
            .first()
            .is_none_or(|r| keyring.find(&r.key_id).is_some())
    };
    if store.is_follower() {
        return match recorded.first() {
            None => Err(Error::Internal(
                "the replica records no signing key: start its primary with this release first"
                    .into(),
            )),
            Some(current) if keyring.current().key_id != current.key_id => {
                Err(Error::Internal(format!(
                    "the replica is signed with key {} and {} holds {}: a follower signs with its primary's key; copy the primary's signing.key into the follower's data directory",
                    current.key_id,
                    keyfile.display(),
                    keyring.current().key_id
                )))
            }
            Some(_) => Ok(()),
        };
    }
    if !holds(keyring) {
        let current = &recorded[0];
        if !accept_new {
            return Err(Error::Internal(format!(
                "this database was signed with key {}, which {} does not hold (it holds {}). A restored database needs the instance's signing.key beside it: copy it from the old machine or your secret store. To sign with the new key instead, start once with --accept-new-signing-key (the recorded public keys are kept, so earlier receipts still verify).",
                current.key_id,
                keyfile.display(),
                keyring.current().key_id
            )));
        }
        keyring.adopt_retired(&recorded, now);
        keyring.save(keyfile).map_err(Error::Internal)?;
        tracing::warn!(
            old = %current.key_id,
            new = %keyring.current().key_id,
            "--accept-new-signing-key: signing with a new key; the recorded public keys are kept"
        );
    }
    let records: Vec<PublicKeyRecord> = std::iter::once(keyring.current().clone())
        .chain(keyring.previous().iter().cloned())
        .collect();
    if records != recorded {
        let value = serde_json::to_value(records)
            .map_err(|e| Error::Internal(format!("signing key records: {e}")))?;
        // The change is logged, signed by the key now current: a first key, a rotation, or a
        // new key adopted after a restore. An auditor learns every key from the log itself.
        let mut change = serde_json::Map::new();
        change.insert("type".into(), KEY_CHANGE.into());
        change.insert(
            "currentKeyId".into(),
            keyring.current().key_id.clone().into(),
        );
        change.insert("keys".into(), value.clone());
        change.insert("changedAt".into(), now.into());
        crate::crypto::receipt::sign_object(keyring, &mut change, now);
        let change = serde_json::Value::Object(change);
        let reference = format!("keys:{}", crate::crypto::jcs::digest(&value));
        let now = now.to_owned();
        store.write_blocking(move |tx| {
            settings::put(tx, settings::SIGNING_KEYS, &value, &now)?;
            if crate::store::tlog::index_of(tx, &reference)?.is_none() {
                crate::store::tlog::append_value(tx, &reference, KEY_CHANGE, &change)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Writes the heartbeat every [`HEARTBEAT_EVERY`] (a primary with `--replicated`). A follower's
/// lag is how old the newest heartbeat in its replica is.
pub async fn heartbeat(app: Arc<App>) {
    let mut ticker = tokio::time::interval(HEARTBEAT_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let (now, millis) = (app.now(), unix_millis());
        let result = app
            .store
            .write(move |tx| {
                settings::put(
                    tx,
                    settings::HEARTBEAT,
                    &json!({ "unixMillis": millis }),
                    &now,
                )
            })
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "writing the replication heartbeat failed");
        }
    }
}

/// What a follower knows about its replica.
pub struct Follower {
    /// The primary's base URL, without a trailing slash: where writes are redirected.
    pub primary: String,
    /// Readiness fails beyond this lag.
    max_lag_secs: u64,
    /// The primary signs with another key than this follower holds (rotated, or adopted with
    /// `--accept-new-signing-key`): this follower's signatures would not verify, so it answers
    /// nothing itself until it is restarted with the primary's new signing.key.
    key_superseded: std::sync::atomic::AtomicBool,
    /// Consecutive failed catch-ups (the first of a streak is logged as a warning).
    failures: std::sync::atomic::AtomicU64,
    /// The newest catalogue change read into the browse index.
    seen_change: AtomicI64,
    /// The newest heartbeat seen in the replica (ms since the epoch), 0 before the first.
    heartbeat_millis: AtomicI64,
    /// The replica file's size and modification times when last looked at.
    stamp: Mutex<Option<FileStamp>>,
}

type FileStamp = [(u64, Option<SystemTime>); 2];

impl Follower {
    /// A follower of `primary` that has read the catalogue up to change `seen_change`.
    pub fn new(primary: String, seen_change: i64, max_lag_secs: u64) -> Follower {
        Follower {
            primary,
            max_lag_secs,
            key_superseded: std::sync::atomic::AtomicBool::new(false),
            failures: std::sync::atomic::AtomicU64::new(0),
            seen_change: AtomicI64::new(seen_change),
            heartbeat_millis: AtomicI64::new(0),
            stamp: Mutex::new(None),
        }
    }

    /// Seconds between the newest heartbeat in the replica and now; `None` before one is seen
    /// (the primary runs without `--replicated`, or has not written since the follower started).
    pub fn lag_seconds(&self) -> Option<f64> {
        let at = self.heartbeat_millis.load(Ordering::SeqCst);
        (at > 0).then(|| ((unix_millis() - at).max(0) as f64) / 1000.0)
    }

    /// Whether this follower may answer requests itself: it holds the key its primary signs
    /// with.
    pub fn serves(&self) -> bool {
        !self.key_superseded.load(Ordering::SeqCst)
    }

    /// Why this follower is not ready, if it is not: the primary's key moved on, or the replica
    /// is more than `--follow-max-lag` behind.
    pub fn unready(&self) -> Option<String> {
        if !self.serves() {
            return Some(
                "the primary signs with a new key: restart this follower with its signing.key"
                    .into(),
            );
        }
        self.lag_seconds()
            .filter(|lag| *lag > self.max_lag_secs as f64)
            .map(|lag| {
                format!(
                    "the replica is {lag:.1} s behind the primary (limit {} s)",
                    self.max_lag_secs
                )
            })
    }

    /// The primary's URL for a request path and query.
    pub fn primary_url(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.primary)
    }
}

/// Waits (at most [`REPLICA_WAIT`]) until the replica exists, then opens it read-only.
///
/// # Errors
/// No replica in time, or one that cannot be served (see [`Store::open_follower`]).
pub fn open_replica(path: &Path) -> Result<Store> {
    let deadline = std::time::Instant::now() + REPLICA_WAIT;
    let mut logged = false;
    loop {
        if path.exists() {
            match Store::open_follower(path) {
                Ok(store) => return Ok(store),
                // A restore still writing the file: not a bourse database yet.
                Err(error) if std::time::Instant::now() < deadline => {
                    tracing::debug!(%error, "replica not usable yet");
                }
                Err(error) => return Err(error),
            }
        }
        if std::time::Instant::now() >= deadline {
            return Err(Error::Internal(format!(
                "no replica at {} after {} s: start `litestream restore -f -o {} …` first",
                path.display(),
                REPLICA_WAIT.as_secs(),
                path.display()
            )));
        }
        if !logged {
            tracing::info!(path = %path.display(), "waiting for the replica to appear");
            logged = true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Closes the follower's read connections every [`FOLLOW_POLL`], so that Litestream, which can
/// only apply a change while none is open, waits at most that long and a read. Its own task:
/// never held up by a catch-up that waits for Litestream.
pub async fn release_connections(app: Arc<App>) {
    let mut ticker = tokio::time::interval(FOLLOW_POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        app.store.release_replica();
    }
}

/// The follower's loop: every [`FOLLOW_POLL`], when the replica file changed, catch up.
pub async fn follow(app: Arc<App>) {
    let (Some(follower), Some(database)) = (app.follower.as_ref(), app.store.replica_file()) else {
        return;
    };
    let database = database.to_owned();
    let wal = database.with_extension("db-wal");
    let mut ticker = tokio::time::interval(FOLLOW_POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let stamp = [file_stamp(&database), file_stamp(&wal)];
        let changed = {
            let mut last = follower.stamp.lock().unwrap_or_else(|p| p.into_inner());
            let changed = last.as_ref() != Some(&stamp);
            *last = Some(stamp);
            changed
        };
        if !changed {
            continue;
        }
        match catch_up(&app).await {
            Ok(()) => {
                if follower.failures.swap(0, Ordering::SeqCst) > 0 {
                    tracing::info!("reading the replica's changes works again");
                }
            }
            Err(error) => {
                if follower.failures.fetch_add(1, Ordering::SeqCst) == 0 {
                    tracing::warn!(%error, "reading the replica's changes failed; retrying quietly");
                } else {
                    tracing::debug!(%error, "reading the replica's changes failed again");
                }
                *follower.stamp.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
        }
    }
}

fn file_stamp(path: &Path) -> (u64, Option<SystemTime>) {
    std::fs::metadata(path).map_or((0, None), |m| (m.len(), m.modified().ok()))
}

/// Reads what changed in the replica: listings into the browse index, the heartbeat, the
/// provenance block; kept answers and agents are forgotten.
///
/// # Errors
/// Database failure.
pub async fn catch_up(app: &Arc<App>) -> Result<()> {
    let Some(follower) = app.follower.as_ref() else {
        return Ok(());
    };
    let since = follower.seen_change.load(Ordering::SeqCst);
    let (rows, last, heartbeat, provenance, keys) = app
        .store
        .read(move |conn| {
            let last = listings::last_change(conn)?;
            // The counter went back: the primary was restored to an earlier point (or its
            // replica started over), so what this follower read may be gone. Read everything.
            let from = if last < since { i64::MIN } else { since };
            let rows = listings::index_rows_changed_since(conn, from)?;
            let heartbeat = settings::get(conn, settings::HEARTBEAT)?;
            let provenance = settings::get(conn, settings::PROVENANCE)?;
            let keys = settings::get(conn, settings::SIGNING_KEYS)?;
            Ok((rows, last, heartbeat, provenance, keys))
        })
        .await?;
    // Off the executor: a reload rebuilds the sort orders (about 80 ms at a million listings).
    let index = app.clone();
    tokio::task::spawn_blocking(move || {
        if last < since {
            tracing::warn!(
                since,
                last,
                "the replica's catalogue went back in time; reloading the browse index"
            );
            index.browse.replace_all(&rows);
        } else if !rows.is_empty() {
            index.browse.upsert_rows(&rows);
        }
    })
    .await
    .map_err(|e| Error::Internal(format!("updating the browse index: {e}")))?;
    follower.seen_change.store(last, Ordering::SeqCst);
    let primary_key = keys
        .and_then(|value| serde_json::from_value::<Vec<PublicKeyRecord>>(value).ok())
        .and_then(|records| records.into_iter().next())
        .map(|record| record.key_id);
    let superseded = primary_key.is_some_and(|key| key != app.keyring.current().key_id);
    if superseded && !follower.key_superseded.swap(true, Ordering::SeqCst) {
        tracing::error!(
            "the primary signs with a new key: this follower redirects every request until it is restarted with the primary's signing.key"
        );
    }
    if let Some(millis) = heartbeat
        .as_ref()
        .and_then(|h| h.get("unixMillis"))
        .and_then(Value::as_i64)
    {
        follower.heartbeat_millis.store(millis, Ordering::SeqCst);
    }
    app.known_agents.forget_all();
    app.reload_provenance(provenance.as_ref());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follower_is_ready_until_its_lag_passes_the_limit_or_its_key_is_superseded() {
        let follower = Follower::new("http://primary".into(), 0, 30);
        assert_eq!(follower.lag_seconds(), None);
        assert_eq!(follower.unready(), None, "no heartbeat yet: ready");
        follower
            .heartbeat_millis
            .store(unix_millis() - 5_000, Ordering::SeqCst);
        assert!(follower.lag_seconds().is_some_and(|lag| lag >= 5.0));
        assert_eq!(follower.unready(), None);
        follower
            .heartbeat_millis
            .store(unix_millis() - 31_000, Ordering::SeqCst);
        assert!(follower.unready().unwrap().contains("behind the primary"));
        follower.key_superseded.store(true, Ordering::SeqCst);
        assert!(!follower.serves());
        assert!(follower.unready().unwrap().contains("new key"));
    }
}
