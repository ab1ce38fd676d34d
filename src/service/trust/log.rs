//! The transparency log (c2sp.org/tlog-tiles v0.1.0, tlog-checkpoint v1.0.0, signed-note
//! v1.0.0, tlog-proof v1): its origin, checkpoints published at most once a second, tiles,
//! entry bundles and inclusion proofs.
//!
//! Entries are appended by `store::tlog::append` inside the writer's job that creates each
//! artifact (message receipts, listing versions, rating attestations, ingress decisions, fee
//! announcements, signing-key changes), so an entry is never lost nor duplicated and the log's
//! order is the commit order. A checkpoint is signed in a writer job too, so the size it names and
//! its root are read together and two checkpoints are always consistent (the log only grows).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::crypto::keys::Keyring;
use crate::crypto::tlog::{self as arith, TilePath};
use crate::error::{Error, Result};
use crate::service::App;
use crate::store::settings;
use crate::store::tlog::{self as store, CheckpointRow};

/// How often a new checkpoint may be published (when there are new entries).
pub const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// The log member answered beside a logged artifact: its index and where its proof is served.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LogRef {
    pub index: u64,
    pub proof: String,
}

impl LogRef {
    /// The member for entry `index`.
    pub fn at(index: u64) -> LogRef {
        LogRef {
            index,
            proof: format!("/log/proof/{index}"),
        }
    }
}

/// The origin (and signed-note key name) derived from the public URL: the URL without its
/// scheme or trailing slash, plus `/log`.
pub fn origin_for(public_url: &str) -> String {
    let bare = public_url
        .split_once("://")
        .map_or(public_url, |(_, rest)| rest)
        .trim_end_matches('/');
    format!("{bare}/log")
}

/// Where the newest published checkpoint is also written, outside the database, so a restore
/// that lost entries is noticed.
pub fn mark_file(data_dir: &Path) -> PathBuf {
    data_dir.join("log-checkpoint")
}

/// The log's origin as recorded at first use (writing it now, on a primary, when absent).
///
/// # Errors
/// Database failure.
pub fn record_origin(tx: &rusqlite::Connection, public_url: &str, now: &str) -> Result<String> {
    match settings::get(tx, store::ORIGIN_SETTING)? {
        Some(serde_json::Value::String(origin)) => Ok(origin),
        _ => {
            let origin = origin_for(public_url);
            settings::put(
                tx,
                store::ORIGIN_SETTING,
                &serde_json::Value::String(origin.clone()),
                now,
            )?;
            Ok(origin)
        }
    }
}

/// Refuses a database whose log is behind the checkpoint this instance last published (a
/// restore that lost entries), unless `accept` says to go on.
///
/// # Errors
/// The log is behind its published checkpoint.
pub fn check_not_behind(mark: &Path, size: u64, accept: bool) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(mark) else {
        return Ok(());
    };
    let Ok(published) = arith::parse_checkpoint(&text) else {
        return Ok(());
    };
    if published.size <= size {
        return Ok(());
    }
    let why = format!(
        "the database's transparency log holds {size} entries, but this instance already published a checkpoint of {} ({}): the database was restored from a point before that checkpoint, so entries outsiders may hold proofs for are missing, and continuing would sign checkpoints inconsistent with the published one",
        published.size,
        mark.display()
    );
    if accept {
        tracing::warn!("--accept-log-behind: {why}");
        Ok(())
    } else {
        Err(Error::Internal(format!(
            "{why}. Restore a newer copy, or start once with --accept-log-behind to continue anyway (monitors will see the fork)."
        )))
    }
}

/// Publishes a checkpoint when the log has grown since the last one (or none was published).
/// Returns the new checkpoint's size.
///
/// # Errors
/// Database failure.
pub async fn publish(app: &App) -> Result<Option<u64>> {
    let keyring = app.keyring.clone();
    let origin = app.log_origin.clone();
    let now = app.now();
    let published = app
        .store
        .write(move |tx| publish_in(tx, &keyring, &origin, &now))
        .await?;
    let mut published = published;
    if let Some((row, old, proof)) = &mut published
        && !app.witnesses.is_empty()
    {
        let cosigned = cosign(app, row, *old, proof).await;
        if cosigned != row.note {
            row.note = cosigned.clone();
            let size = row.size;
            app.store
                .write(move |tx| store::update_checkpoint_note(tx, size, &cosigned))
                .await?;
        }
    }
    let published = published.map(|(row, _, _)| row);
    if let (Some(row), Some(mark)) = (&published, &app.log_mark)
        && let Err(error) = crate::crypto::keys::write_private_file(mark, row.note.as_bytes())
    {
        tracing::warn!(%error, "could not write the published checkpoint's copy");
    }
    Ok(published.map(|row| row.size))
}

/// The checkpoint published, the size of the one before it, and the consistency proof between
/// the two (what a witness asks for).
type Published = (CheckpointRow, u64, Vec<arith::Hash>);

fn publish_in(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    origin: &str,
    now: &str,
) -> Result<Option<Published>> {
    let size = store::size(tx)?;
    let latest = store::latest_checkpoint(tx)?;
    if latest.as_ref().is_some_and(|c| c.size >= size) {
        return Ok(None);
    }
    let old = latest.map_or(0, |c| c.size);
    let proof = store::consistency(tx, old, size)?;
    let root = store::root(tx, size)?;
    let row = CheckpointRow {
        size,
        root: root.to_vec(),
        note: arith::sign_checkpoint(keyring, origin, size, &root),
        signed_at: now.to_owned(),
    };
    store::insert_checkpoint(tx, &row)?;
    Ok(Some((row, old, proof)))
}

/// Asks every configured witness to cosign `row` (c2sp.org/tlog-witness `add-checkpoint`) and
/// returns the note with the cosignatures that verify; a witness that fails is logged and left
/// out.
async fn cosign(app: &App, row: &CheckpointRow, old: u64, proof: &[arith::Hash]) -> String {
    let mut body = format!("old {old}\n");
    for hash in proof {
        body.push_str(&arith::b64(hash));
        body.push('\n');
    }
    body.push('\n');
    body.push_str(&row.note);
    let Ok(checkpoint) = arith::parse_checkpoint(&row.note) else {
        return row.note.clone();
    };
    let mut note = row.note.clone();
    for (verifier, url) in app.witnesses.clone() {
        let (request, target) = (body.clone(), format!("{url}/add-checkpoint"));
        let answer = tokio::task::spawn_blocking(move || {
            let agent = crate::outbound::configured_agent(
                ureq::Agent::config_builder()
                    .timeout_global(Some(Duration::from_secs(5)))
                    .http_status_as_error(false)
                    .build(),
            );
            let mut response = agent
                .post(&target)
                .content_type("text/plain; charset=utf-8")
                .send(request)
                .map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let text = response
                .body_mut()
                .read_to_string()
                .map_err(|e| e.to_string())?;
            if status == 200 {
                Ok(text)
            } else {
                Err(format!("HTTP {status}: {text}"))
            }
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        match answer {
            Ok(lines) => {
                for line in lines.lines().filter(|l| !l.is_empty()) {
                    match arith::verify_cosignature(&checkpoint, line, &verifier) {
                        Ok(()) => {
                            note.push_str(line);
                            note.push('\n');
                        }
                        Err(error) => {
                            tracing::warn!(%url, %error, "a witness's cosignature does not verify")
                        }
                    }
                }
            }
            Err(error) => tracing::warn!(%url, %error, "a witness did not cosign the checkpoint"),
        }
    }
    note
}

/// The publishing loop of a primary: a checkpoint at most every [`PUBLISH_INTERVAL`].
pub async fn publisher(app: std::sync::Arc<App>) {
    let mut shutdown = app.shutdown.subscribe();
    let mut tick = tokio::time::interval(PUBLISH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        if let Err(error) = publish(&app).await {
            tracing::warn!(%error, "publishing a log checkpoint failed");
        }
    }
}

/// `GET /log/checkpoint`: the newest checkpoint's note (an empty log's size-0 checkpoint when
/// none was published yet).
///
/// # Errors
/// Database failure.
pub async fn checkpoint(app: &App) -> Result<String> {
    let latest = app.store.read(store::latest_checkpoint).await?;
    Ok(match latest {
        Some(row) => row.note,
        None => arith::sign_checkpoint(&app.keyring, &app.log_origin, 0, &arith::empty_root()),
    })
}

/// The signed-note verifier key of the log's checkpoints.
pub fn verifier_key(app: &App) -> String {
    let public_key = crate::crypto::b64url_decode(&app.keyring.current().public_key)
        .expect("the keyring's public key is base64url");
    arith::verifier_key(&app.log_origin, &public_key)
}

/// What a tile request names, resolved: its bytes and whether it is full (immutable).
pub struct Tile {
    pub bytes: Vec<u8>,
    pub full: bool,
}

/// `GET /log/tile/…`: a hash tile or an entry bundle, full or partial.
///
/// # Errors
/// `NOT_FOUND` for a malformed path or a tile the log does not hold (yet).
pub async fn tile(app: &App, path: &str) -> Result<Tile> {
    let Some(TilePath {
        level,
        index,
        width,
    }) = arith::parse_tile_path(path)
    else {
        return Err(Error::NotFound(format!("{path:?} is not a tile path")));
    };
    let bytes = app
        .store
        .read(move |conn| match level {
            Some(level) => store::hash_tile(conn, level, index, width),
            None => store::entry_tile(conn, index, width),
        })
        .await?
        .ok_or_else(|| Error::NotFound(format!("the log holds no tile {path:?} yet")))?;
    Ok(Tile {
        bytes,
        full: width == 0,
    })
}

/// `GET /log/proof/{index}`: the c2sp.org/tlog-proof of entry `index` in the newest checkpoint.
///
/// # Errors
/// `NOT_FOUND` with a retry hint while no checkpoint covers the entry.
pub async fn proof(app: &App, index: u64) -> Result<String> {
    let found = app
        .store
        .read(move |conn| {
            let Some(latest) = store::latest_checkpoint(conn)? else {
                return Ok(None);
            };
            if index >= latest.size {
                return Ok(None);
            }
            let hashes = store::inclusion(conn, index, latest.size)?;
            Ok(Some(arith::proof_text(index, &hashes, &latest.note)))
        })
        .await?;
    found.ok_or_else(|| Error::NotYet {
        code: "NOT_YET_LOGGED",
        message: format!(
            "no published checkpoint covers entry {index} yet; checkpoints are published every second"
        ),
        retry_after_secs: 1,
    })
}

/// `GET /log/consistency?old=M&new=N`-like answer for the CLI: the consistency proof between two
/// published sizes, one base64 hash a line.
///
/// # Errors
/// `INVALID_ARGUMENT` when the sizes are out of order or beyond the log.
pub async fn consistency(app: &App, old: u64, new: u64) -> Result<String> {
    let hashes = app
        .store
        .read(move |conn| {
            let size = store::size(conn)?;
            if old > new || new > size {
                return Err(Error::invalid(format!(
                    "a consistency proof needs old ≤ new ≤ {size}"
                )));
            }
            store::consistency(conn, old, new)
        })
        .await?;
    Ok(hashes
        .iter()
        .map(|h| format!("{}\n", arith::b64(h)))
        .collect())
}

/// The log member of an artifact, when it is logged.
///
/// # Errors
/// Database failure.
pub fn log_ref(conn: &rusqlite::Connection, reference: &str) -> Result<Option<LogRef>> {
    Ok(store::index_of(conn, reference)?.map(LogRef::at))
}
