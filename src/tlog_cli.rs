//! The transparency log from the command line, as an outsider checks it: `bourse verify RECEIPT
//! --proof FILE [--checkpoint FILE]` (inclusion, offline) and `bourse log audit BASE_URL [--from
//! CHECKPOINT]` (every tile re-derived from the entries, the root, consistency with a checkpoint
//! seen earlier, and each entry's signature under the keys the log itself recorded).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use std::process::ExitCode;

use serde_json::Value;

use crate::crypto::keys::PublicKeyRecord;
use crate::crypto::receipt::Verdict;
use crate::crypto::tlog::{self, Checkpoint, Hash};
use crate::service::trust::receipts;

#[derive(Subcommand)]
pub enum LogAction {
    /// Audit an instance's transparency log: fetch every entry and tile, re-derive every hash
    /// and the root, check each entry's signature with the keys the log itself recorded, and
    /// (with --from) that a checkpoint seen earlier is a prefix of the log (exit 0 sound, 1 not).
    Audit {
        /// The instance's base URL.
        #[arg(value_parser = crate::config::parse_public_url)]
        base_url: String,
        /// A checkpoint seen earlier (a file holding its signed note).
        #[arg(long)]
        from: Option<PathBuf>,
    },
}

/// `--witness <verifier key>=<base URL>`.
///
/// # Errors
/// Not that form.
pub fn parse_witness(text: &str) -> Result<(String, String), String> {
    let (key, url) = text
        .split_once('=')
        .ok_or("expected <verifier key>=<base URL>")?;
    crate::crypto::tlog::parse_verifier_key(key)?;
    Ok((key.to_owned(), crate::config::parse_public_url(url)?))
}

/// Runs a `bourse log` command.
pub fn run(action: LogAction) -> ExitCode {
    match action {
        LogAction::Audit { base_url, from } => log_audit(&base_url, from.as_deref()),
    }
}

/// The entry types a signed artifact may be logged under.
const KINDS: &[&str] = &[
    "bourse.message.receipt",
    "bourse.listing.version",
    "bourse.rating.attestation",
    "bourse.ingress.decision",
    "bourse.ledger.event",
    "bourse.signing-key.change",
    "bourse.fees.announcement",
];

fn get(base: &str, path: &str) -> Result<Vec<u8>, String> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let agent = crate::outbound::configured_agent(
        ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(30)))
            .build(),
    );
    agent
        .get(&url)
        .call()
        .map_err(|e| format!("cannot fetch {url}: {e}"))?
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_vec()
        .map_err(|e| format!("cannot read {url}: {e}"))
}

/// Checks a checkpoint's signature with any of `keys` (raw Ed25519 keys, base64url) under the
/// checkpoint's origin as key name.
///
/// # Errors
/// No key verifies it.
pub fn check_signed(checkpoint: &Checkpoint, keys: &[String]) -> Result<(), String> {
    for key in keys {
        let Ok(raw) = crate::crypto::b64url_decode(key) else {
            continue;
        };
        if tlog::verify_checkpoint(checkpoint, &checkpoint.origin, &raw).is_ok() {
            return Ok(());
        }
    }
    Err(format!(
        "the checkpoint of size {} is not signed by any known key of {}",
        checkpoint.size, checkpoint.origin
    ))
}

/// Checks that `artifact` is included at the proof's index under the proof's checkpoint, and
/// returns that checkpoint.
///
/// # Errors
/// Why the proof does not show the artifact logged.
pub fn check_inclusion(
    artifact: &Value,
    proof_text: &str,
    keys: &[String],
) -> Result<Checkpoint, String> {
    let proof = tlog::parse_proof(proof_text)?;
    let checkpoint = tlog::parse_checkpoint(&proof.checkpoint)?;
    check_signed(&checkpoint, keys)?;
    let included = KINDS.iter().any(|kind| {
        let leaf = tlog::leaf_hash(&tlog::entry(kind, artifact));
        tlog::verify_inclusion(
            proof.index,
            checkpoint.size,
            &leaf,
            &proof.hashes,
            &checkpoint.root,
        )
        .is_ok()
    });
    if included {
        Ok(checkpoint)
    } else {
        Err(format!(
            "the proof does not show this document at index {} of the log of size {}",
            proof.index, checkpoint.size
        ))
    }
}

/// What an audit found.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    pub origin: String,
    pub size: u64,
    pub root: String,
    pub signed_entries: u64,
    pub unsigned_entries: u64,
    pub keys_recorded: usize,
    pub consistent_with: Option<u64>,
}

/// The whole log as served: its entries from the bundles, in order.
fn fetch_entries(base: &str, size: u64) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < size {
        let width = (size - start).min(tlog::TILE_WIDTH);
        let index = tlog::tile_index_path(start / tlog::TILE_WIDTH);
        let path = if width == tlog::TILE_WIDTH {
            format!("/log/tile/entries/{index}")
        } else {
            format!("/log/tile/entries/{index}.p/{width}")
        };
        let bundle = get(base, &path)?;
        let mut rest = bundle.as_slice();
        let mut count = 0;
        while rest.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
            let entry = rest.get(2..2 + len).ok_or(format!("{path} is truncated"))?;
            out.push(entry.to_vec());
            rest = &rest[2 + len..];
            count += 1;
        }
        if count != width {
            return Err(format!("{path} holds {count} entries, not {width}"));
        }
        start += width;
    }
    Ok(out)
}

/// Rebuilds every stored hash and compares every served hash tile with it.
fn rebuild_and_compare(base: &str, entries: &[Vec<u8>]) -> Result<HashMap<u64, Hash>, String> {
    let mut stored: HashMap<u64, Hash> = HashMap::new();
    for (n, entry) in entries.iter().enumerate() {
        let hashes = tlog::hashes_to_store(n as u64, tlog::leaf_hash(entry), |id| {
            stored.get(&id).copied().ok_or(format!("no hash {id}"))
        })?;
        stored.extend(hashes);
    }
    let size = entries.len() as u64;
    let mut level = 0u32;
    // Level L holds size >> 8L hashes; its tiles are full groups of 256 and a partial rest.
    while level * tlog::TILE_HEIGHT < 64 && (size >> (level * tlog::TILE_HEIGHT)) > 0 {
        let count = size >> (level * tlog::TILE_HEIGHT);
        let mut first = 0;
        while first < count {
            let width = (count - first).min(tlog::TILE_WIDTH);
            let index = tlog::tile_index_path(first / tlog::TILE_WIDTH);
            let path = if width == tlog::TILE_WIDTH {
                format!("/log/tile/{level}/{index}")
            } else {
                format!("/log/tile/{level}/{index}.p/{width}")
            };
            let served = get(base, &path)?;
            let mut expected = Vec::with_capacity(served.len());
            for n in first..first + width {
                let id = tlog::stored_hash_index(level * tlog::TILE_HEIGHT, n);
                expected.extend_from_slice(stored.get(&id).ok_or(format!("no hash {id}"))?);
            }
            if served != expected {
                return Err(format!(
                    "{path} differs from the hashes re-derived from the entries"
                ));
            }
            first += width;
        }
        level += 1;
    }
    Ok(stored)
}

/// `bourse log audit BASE_URL [--from CHECKPOINT]`.
///
/// # Errors
/// The first thing that does not hold.
pub fn audit(base: &str, from: Option<&str>) -> Result<Audit, String> {
    let note = String::from_utf8(get(base, "/log/checkpoint")?)
        .map_err(|_| "the checkpoint is not UTF-8".to_owned())?;
    let checkpoint = tlog::parse_checkpoint(&note)?;
    let entries = fetch_entries(base, checkpoint.size)?;
    let stored = rebuild_and_compare(base, &entries)?;
    let read = |id: u64| stored.get(&id).copied().ok_or(format!("no hash {id}"));
    let root = tlog::tree_hash(checkpoint.size, read)?;
    if root != checkpoint.root {
        return Err("the entries do not hash to the checkpoint's root".into());
    }
    // Keys come from the log itself: each key change lists every key so far.
    let mut keys: Vec<PublicKeyRecord> = Vec::new();
    let (mut signed, mut unsigned) = (0, 0);
    for (n, entry) in entries.iter().enumerate() {
        let value: Value =
            serde_json::from_slice(entry).map_err(|e| format!("entry {n} is not JSON: {e}"))?;
        let Some(artifact) = value.get("artifact") else {
            unsigned += 1; // logged by digest
            continue;
        };
        if value["type"] == "bourse.signing-key.change" {
            let listed: Vec<PublicKeyRecord> = serde_json::from_value(artifact["keys"].clone())
                .map_err(|e| format!("entry {n}: a key change without keys: {e}"))?;
            for record in listed {
                if !keys.iter().any(|k| k.key_id == record.key_id) {
                    keys.push(record);
                }
            }
        }
        let has_signature = artifact.get("signature").is_some()
            || artifact.pointer("/provenance/receipt").is_some();
        if !has_signature {
            unsigned += 1;
            continue;
        }
        let body = serde_json::json!({ "signed": artifact }).to_string();
        let resolve = |key_id: &str| {
            keys.iter()
                .find(|k| k.key_id == key_id)
                .map(|k| (k.clone(), false))
        };
        let verdict = receipts::verify_request(&body, resolve).map_err(|e| e.to_string())?;
        if !verdict.valid {
            return Err(format!(
                "entry {n} ({}) does not verify with the keys the log recorded: {}",
                value["type"],
                verdict.reason.unwrap_or_default()
            ));
        }
        signed += 1;
    }
    let key_texts: Vec<String> = keys.iter().map(|k| k.public_key.clone()).collect();
    check_signed(&checkpoint, &key_texts)?;
    let consistent_with = match from {
        None => None,
        Some(text) => {
            let old = tlog::parse_checkpoint(text)?;
            check_signed(&old, &key_texts)?;
            if old.origin != checkpoint.origin {
                return Err(format!(
                    "the earlier checkpoint is of another log ({})",
                    old.origin
                ));
            }
            if old.size > checkpoint.size {
                return Err(format!(
                    "the log went backwards: a checkpoint of {} was seen, now {}",
                    old.size, checkpoint.size
                ));
            }
            let old_root = tlog::tree_hash(old.size, read)?;
            if old_root != old.root {
                return Err(format!(
                    "the earlier checkpoint (size {}) is not a prefix of this log: a fork",
                    old.size
                ));
            }
            Some(old.size)
        }
    };
    Ok(Audit {
        origin: checkpoint.origin,
        size: checkpoint.size,
        root: tlog::b64(&checkpoint.root),
        signed_entries: signed,
        unsigned_entries: unsigned,
        keys_recorded: keys.len(),
        consistent_with,
    })
}

/// A newer checkpoint than the proof's: the log is fetched from `base` and re-derived, the newer
/// checkpoint's root must match, and the proof's checkpoint must be a prefix of it.
///
/// # Errors
/// Why the two checkpoints are not shown consistent.
pub fn check_newer(base: &str, older: &Checkpoint, newer: &Checkpoint) -> Result<(), String> {
    let entries = fetch_entries(base, newer.size)?;
    let stored = rebuild_and_compare(base, &entries)?;
    let read = |id: u64| stored.get(&id).copied().ok_or(format!("no hash {id}"));
    if tlog::tree_hash(newer.size, read)? != newer.root {
        return Err("the served log does not hash to the given checkpoint's root".into());
    }
    if tlog::tree_hash(older.size, read)? != older.root {
        return Err("the proof's checkpoint is not a prefix of the given one: a fork".into());
    }
    Ok(())
}

/// `bourse verify … --proof FILE [--checkpoint FILE]`: a signature that verified (`verdict`)
/// is also shown in the log, or the verdict says why not.
///
/// # Errors
/// Unusable input (unreadable files, an older checkpoint, a newer one without `--url`).
pub fn check_proof(
    verdict: Verdict,
    text: &str,
    public_keys: &[String],
    proof_file: &Path,
    checkpoint_file: Option<&Path>,
    url: Option<&str>,
) -> Result<Verdict, String> {
    let artifact = crate::crypto::jcs::parse_strict(text).map_err(|e| e.to_string())?;
    let proof = std::fs::read_to_string(proof_file)
        .map_err(|e| format!("cannot read {}: {e}", proof_file.display()))?;
    let logged = match check_inclusion(&artifact, &proof, public_keys) {
        Ok(checkpoint) => checkpoint,
        Err(why) => return Ok(not_logged(verdict, why)),
    };
    let Some(file) = checkpoint_file else {
        return Ok(verdict);
    };
    let note = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let given = tlog::parse_checkpoint(&note)?;
    if let Err(why) = check_signed(&given, public_keys) {
        return Ok(not_logged(verdict, why));
    }
    if given.size < logged.size {
        return Err(format!(
            "the checkpoint given (size {}) is older than the proof's (size {}): give the newer one",
            given.size, logged.size
        ));
    }
    if given.size == logged.size && given.root != logged.root {
        return Ok(not_logged(
            verdict,
            "two checkpoints of one size differ: a fork".into(),
        ));
    }
    if given.size > logged.size {
        let base = url.ok_or(
            "the checkpoint given is newer than the proof's: checking they are consistent needs the log, from --url",
        )?;
        if let Err(why) = check_newer(base, &logged, &given) {
            return Ok(not_logged(verdict, why));
        }
    }
    Ok(verdict)
}

/// A signature that verifies but a log proof that does not.
fn not_logged(mut verdict: Verdict, why: String) -> Verdict {
    verdict.valid = false;
    verdict.reason = Some(format!("not shown in the transparency log: {why}"));
    verdict
}

/// `bourse log audit`: exit 0 when every check holds, 1 when one does not, 2 for unusable input.
pub fn log_audit(base: &str, from: Option<&Path>) -> ExitCode {
    let from = match from.map(std::fs::read_to_string).transpose() {
        Ok(text) => text,
        Err(error) => {
            eprintln!("bourse log audit: cannot read the earlier checkpoint: {error}");
            return ExitCode::from(2);
        }
    };
    match audit(base, from.as_deref()) {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&report).expect("report serializes")
            );
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("bourse log audit: {why}");
            ExitCode::from(1)
        }
    }
}
