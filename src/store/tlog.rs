//! The transparency log's rows: entries, stored hashes and published checkpoints
//! (schema.sql, v9). The arithmetic lives in `crypto::tlog`; this module only reads and writes.
//!
//! [`append`] runs inside the writer's job that creates the artifact, so an entry commits (or
//! rolls back) with it, in commit order, once (`ref` is unique).

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::crypto::tlog::{self as arith, Hash, TILE_HEIGHT, TILE_WIDTH};
use crate::error::{Error, Result};

/// The settings key holding the log's origin, fixed at first use.
pub const ORIGIN_SETTING: &str = "tlog_origin";

/// Appends the signed `artifact` (JSON text) as an entry of type `kind`, named `reference`.
/// Returns its index. Costs one entry row, one row per hash the leaf completes (two on
/// average) and one read per completed subtree.
///
/// # Errors
/// Database failure, a `reference` logged already, or an artifact that is not JSON.
pub fn append(conn: &Connection, reference: &str, kind: &str, artifact: &str) -> Result<u64> {
    let value: Value = serde_json::from_str(artifact)
        .map_err(|e| Error::Internal(format!("a logged artifact is not JSON: {e}")))?;
    append_value(conn, reference, kind, &value)
}

/// [`append`] with the artifact already parsed.
///
/// # Errors
/// Database failure, or a `reference` logged already.
pub fn append_value(
    conn: &Connection,
    reference: &str,
    kind: &str,
    artifact: &Value,
) -> Result<u64> {
    append_entry(conn, reference, &arith::entry(kind, artifact))
}

/// [`append`] of an entry made beforehand (`crypto::tlog::entry`), where the artifact was signed.
///
/// # Errors
/// Database failure, or a `reference` logged already.
pub fn append_entry(conn: &Connection, reference: &str, entry: &[u8]) -> Result<u64> {
    let index = size(conn)?;
    let hashes = arith::hashes_to_store(index, arith::leaf_hash(entry), |id| read_hash(conn, id))?;
    conn.prepare_cached("INSERT INTO tlog_entries (idx, ref, entry) VALUES (?1, ?2, ?3)")?
        .execute(params![to_i64(index), reference, entry])?;
    let mut insert = conn.prepare_cached("INSERT INTO tlog_hashes (id, hash) VALUES (?1, ?2)")?;
    for (id, hash) in hashes {
        insert.execute(params![to_i64(id), &hash[..]])?;
    }
    Ok(index)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The number of entries.
///
/// # Errors
/// Database failure.
pub fn size(conn: &Connection) -> Result<u64> {
    let max: Option<i64> = conn
        .prepare_cached("SELECT max(idx) FROM tlog_entries")?
        .query_row([], |r| r.get(0))?;
    Ok(max.map_or(0, |m| u64::try_from(m + 1).unwrap_or(0)))
}

/// One stored hash by its number.
///
/// # Errors
/// Database failure, or a hash the log should hold and does not.
pub fn read_hash(conn: &Connection, id: u64) -> Result<Hash> {
    let hash: Option<Vec<u8>> = conn
        .prepare_cached("SELECT hash FROM tlog_hashes WHERE id = ?1")?
        .query_row([to_i64(id)], |r| r.get(0))
        .optional()?;
    hash.and_then(|h| h.try_into().ok())
        .ok_or_else(|| Error::Internal(format!("the log has no stored hash {id}")))
}

/// The root hash of the tree of `size` entries.
///
/// # Errors
/// Database failure.
pub fn root(conn: &Connection, size: u64) -> Result<Hash> {
    arith::tree_hash(size, |id| read_hash(conn, id))
}

/// The inclusion proof of `index` in the tree of `size` entries.
///
/// # Errors
/// Database failure.
pub fn inclusion(conn: &Connection, index: u64, size: u64) -> Result<Vec<Hash>> {
    arith::inclusion_proof(index, size, |id| read_hash(conn, id))
}

/// The consistency proof between sizes `old` and `new`.
///
/// # Errors
/// Database failure.
pub fn consistency(conn: &Connection, old: u64, new: u64) -> Result<Vec<Hash>> {
    arith::consistency_proof(old, new, |id| read_hash(conn, id))
}

/// A hash tile: `width` hashes (a full tile when 0) of tree level 8·`level`, from number
/// 256·`index`; `None` when the log does not hold that many yet.
///
/// # Errors
/// Database failure.
pub fn hash_tile(conn: &Connection, level: u32, index: u64, width: u64) -> Result<Option<Vec<u8>>> {
    let width = if width == 0 { TILE_WIDTH } else { width };
    let tree_level = level * TILE_HEIGHT;
    let Some(first) = index.checked_mul(TILE_WIDTH) else {
        return Ok(None);
    };
    // The tile exists once its last hash does: leaves up to the end of its last subtree.
    let last = first + width - 1;
    let leaves_needed = (last + 1).checked_shl(tree_level).unwrap_or(u64::MAX);
    if size(conn)? < leaves_needed {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(usize::try_from(width).unwrap_or(256) * 32);
    let mut read = conn.prepare_cached("SELECT hash FROM tlog_hashes WHERE id = ?1")?;
    for n in first..=last {
        let id = to_i64(arith::stored_hash_index(tree_level, n));
        let hash: Vec<u8> = read.query_row([id], |r| r.get(0))?;
        out.extend_from_slice(&hash);
    }
    Ok(Some(out))
}

/// An entry bundle: `width` entries (256 when 0) from 256·`index`, each a big-endian uint16
/// length and the bytes; `None` when the log does not hold them yet.
///
/// # Errors
/// Database failure.
pub fn entry_tile(conn: &Connection, index: u64, width: u64) -> Result<Option<Vec<u8>>> {
    let width = if width == 0 { TILE_WIDTH } else { width };
    let Some(first) = index.checked_mul(TILE_WIDTH) else {
        return Ok(None);
    };
    if size(conn)? < first + width {
        return Ok(None);
    }
    let mut stmt = conn.prepare_cached(
        "SELECT entry FROM tlog_entries WHERE idx >= ?1 AND idx < ?2 ORDER BY idx",
    )?;
    let rows = stmt.query_map(params![to_i64(first), to_i64(first + width)], |r| {
        r.get::<_, Vec<u8>>(0)
    })?;
    let mut out = Vec::new();
    for entry in rows {
        let entry = entry?;
        let len = u16::try_from(entry.len())
            .map_err(|_| Error::Internal("a log entry passes 65,535 bytes".into()))?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&entry);
    }
    Ok(Some(out))
}

/// The index of the entry naming `reference`, if logged.
///
/// # Errors
/// Database failure.
pub fn index_of(conn: &Connection, reference: &str) -> Result<Option<u64>> {
    let index: Option<i64> = conn
        .prepare_cached("SELECT idx FROM tlog_entries WHERE ref = ?1")?
        .query_row([reference], |r| r.get(0))
        .optional()?;
    Ok(index.and_then(|i| u64::try_from(i).ok()))
}

/// One entry's bytes.
///
/// # Errors
/// Database failure.
pub fn entry(conn: &Connection, index: u64) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT entry FROM tlog_entries WHERE idx = ?1")?
        .query_row([to_i64(index)], |r| r.get(0))
        .optional()?)
}

/// A published checkpoint.
#[derive(Clone, Debug)]
pub struct CheckpointRow {
    pub size: u64,
    pub root: Vec<u8>,
    pub note: String,
    pub signed_at: String,
}

/// The newest published checkpoint.
///
/// # Errors
/// Database failure.
pub fn latest_checkpoint(conn: &Connection) -> Result<Option<CheckpointRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT size, root, note, signed_at FROM tlog_checkpoints ORDER BY size DESC LIMIT 1",
        )?
        .query_row([], |r| {
            Ok(CheckpointRow {
                size: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
                root: r.get(1)?,
                note: r.get(2)?,
                signed_at: r.get(3)?,
            })
        })
        .optional()?)
}

/// Records a published checkpoint.
///
/// # Errors
/// Database failure (a size published twice).
pub fn insert_checkpoint(conn: &Connection, row: &CheckpointRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO tlog_checkpoints (size, root, note, signed_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![to_i64(row.size), row.root, row.note, row.signed_at])?;
    Ok(())
}

/// Replaces a published checkpoint's note with one carrying more (witness) signatures.
///
/// # Errors
/// Database failure.
pub fn update_checkpoint_note(conn: &Connection, size: u64, note: &str) -> Result<()> {
    conn.prepare_cached("UPDATE tlog_checkpoints SET note = ?2 WHERE size = ?1")?
        .execute(params![to_i64(size), note])?;
    Ok(())
}
