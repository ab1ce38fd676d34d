//! The browse index's snapshot: every entry in a file beside the database
//! (`DATA/browse-index.snapshot`), so a restart reads one file instead of decoding every row
//! of the catalogue (at 10M listings, seven seconds of the start-up were that decoding).
//!
//! Why it stays right: a snapshot records the catalogue change counter (`listings.changed`,
//! moved by every insert and update) of the read its entries came from. Each entry in the file
//! is that read's, or a later committed state of the same listing (the file is written in the
//! background from the live index, whose entries only ever move forward and are only appended
//! to). At start the listings changed since that counter are read again, in one read
//! transaction with the counter and the highest `seq`, and replace theirs, as a follower
//! catches up with its replica. The database names the file it matches (setting
//! `browse_snapshot`: a random id and the counter, written only after the file is durable): a
//! database restored from a backup or a replica names an older file, or none, and the rows are
//! read. A file from another format, schema, release or taxonomy, a torn or damaged one (its
//! checksum), one whose `seq`s do not ascend or do not end where the catalogue does, or too many
//! changes since (more than one listing in [`CATCH_UP_SHARE`]) all fall back to reading the
//! rows; none stops the server. It is derived data: deleting it costs the next start the read.

use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{BrowseIndex, Entry};
use crate::crypto::{b64url, random_bytes};
use crate::error::Result;
use crate::service::taxonomy::Taxonomy;
use crate::store::Store;
use crate::store::listings::{self as store, IndexRow};
use crate::store::settings;

const MAGIC: &[u8; 8] = b"bourseix";
/// Bumped whenever an entry's bytes or meaning change.
const FORMAT: u32 = 1;
const ENTRY: usize = 48;
const HEADER: usize = 80;
/// Entries encoded per hold of the index's read lock while writing (writes wait at most that).
const CHUNK: usize = 1 << 16;
/// Catalogues of fewer listings are read from their rows at every start (10k rows take about
/// ten milliseconds), and get no snapshot.
pub const WORTH: usize = 10_000;
/// A restart reads the rows changed since the snapshot one by one while they are at most one
/// in this many listings (a full read costs about a microsecond a row, one by one a few).
pub const CATCH_UP_SHARE: usize = 8;
/// A restart that caught up with at least one listing in this many writes a fresh snapshot.
const REWRITE_SHARE: usize = 100;

/// What a file must have been made by: this format, schema and release, and this taxonomy (an
/// entry holds category and vertical positions).
pub fn fingerprint(taxonomy: &Taxonomy) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(format!(
        "bourse browse snapshot {FORMAT} {ENTRY} schema {} release {}\n",
        crate::store::SCHEMA_VERSION,
        env!("CARGO_PKG_VERSION")
    ));
    for slug in taxonomy.categories.iter().map(|c| &c.slug) {
        hash.update(format!("category {slug}\n"));
    }
    for slug in taxonomy.verticals.iter().map(|v| &v.slug) {
        hash.update(format!("vertical {slug}\n"));
    }
    hash.finalize().into()
}

/// The entries restored from a snapshot and brought up to date.
pub struct Restored {
    pub list: Vec<Entry>,
    /// The change counter the entries are as of.
    pub seen: i64,
    /// Whether enough changed since the snapshot that a fresh one is worth writing.
    pub stale: bool,
}

/// The entries of the snapshot at `path`, caught up with the catalogue, or `None` (with the
/// reason logged) when the rows must be read instead.
///
/// # Errors
/// Database failure (a missing, foreign or damaged file is not one).
pub fn restore(
    index: &BrowseIndex,
    store: &Store,
    path: &Path,
    fingerprint: &[u8; 32],
) -> Result<Option<Restored>> {
    let named = store.read_blocking(|conn| settings::get(conn, settings::BROWSE_SNAPSHOT))?;
    let Some((id, since)) = named.as_ref().and_then(named_file) else {
        return Ok(None);
    };
    Ok(
        match caught_up_file(index, store, path, fingerprint, &id, since)? {
            Ok(restored) => Some(restored),
            Err(why) => {
                tracing::info!(path = %path.display(), why, "browse snapshot not used: reading the rows");
                None
            }
        },
    )
}

/// The file named (`id`, `since`) read and caught up, or why it cannot serve.
fn caught_up_file(
    index: &BrowseIndex,
    store: &Store,
    path: &Path,
    fingerprint: &[u8; 32],
    id: &[u8; 16],
    since: i64,
) -> Result<std::result::Result<Restored, String>> {
    let file = match read_file(path, fingerprint, id, since) {
        Ok(list) => list,
        Err(why) => return Ok(Err(why)),
    };
    let most = (file.len() / CATCH_UP_SHARE).max(1_000);
    let caught = store.read_blocking(|conn| store::catch_up(conn, since, most))?;
    let Some(rows) = caught.rows else {
        return Ok(Err("too many listings changed since".into()));
    };
    let Some(list) = caught_up(file, &rows, |row| index.entry(row)) else {
        return Ok(Err("a listing changed since is missing from it".into()));
    };
    if list.last().map_or(0, |e| e.seq) != caught.max_seq {
        return Ok(Err("it ends short of the catalogue".into()));
    }
    Ok(Ok(Restored {
        stale: !rows.is_empty() && rows.len().saturating_mul(REWRITE_SHARE) >= list.len(),
        list,
        seen: caught.last_change,
    }))
}

/// The id and change counter of the file a `browse_snapshot` setting names.
fn named_file(value: &Value) -> Option<([u8; 16], i64)> {
    let id = crate::crypto::b64url_decode(value.get("id")?.as_str()?).ok()?;
    Some((id.try_into().ok()?, value.get("lastChange")?.as_i64()?))
}

/// `list` (ascending by `seq`) with `rows` (ascending by `seq`, changed since) replacing their
/// entries or, past the last, appended; `None` when a changed row names a `seq` inside the list
/// that it lacks (listings are never deleted, so the file is not this catalogue's).
fn caught_up(
    mut list: Vec<Entry>,
    rows: &[IndexRow],
    entry: impl Fn(&IndexRow) -> Entry,
) -> Option<Vec<Entry>> {
    let end = list.len();
    for row in rows {
        match list[..end].binary_search_by_key(&row.seq, |e| e.seq) {
            Ok(at) => list[at] = entry(row),
            Err(at) if at == end => list.push(entry(row)),
            Err(_) => return None,
        }
    }
    // Rows come ascending, so the appended tail ascends too, after the file's last.
    Some(list)
}

/// Writes a snapshot of `index` as of change `seen` to `path` (through a temporary file,
/// synced, then renamed) and names it in the database. Run in the background after start: the
/// index serves meanwhile, each chunk of entries copied under a short read lock.
///
/// # Errors
/// File or database failure (the caller logs it; the previous file, if any, stays named).
pub fn save(
    index: &BrowseIndex,
    store: &Store,
    path: &Path,
    fingerprint: &[u8; 32],
    seen: i64,
    now: String,
) -> Result<usize> {
    let id = random_bytes::<16>();
    let count = write_file(index, path, &id, seen, fingerprint).map_err(|e| {
        crate::error::Error::Internal(format!("cannot write {}: {e}", path.display()))
    })?;
    let named = json!({"id": b64url(&id), "lastChange": seen});
    store.write_blocking(move |tx| settings::put(tx, settings::BROWSE_SNAPSHOT, &named, &now))?;
    Ok(count)
}

/// Writes the file [`save`] names: through a temporary file, synced, then renamed (a file
/// left half-written by a crash is the temporary one, never read).
fn write_file(
    index: &BrowseIndex,
    path: &Path,
    id: &[u8; 16],
    seen: i64,
    fingerprint: &[u8; 32],
) -> std::io::Result<usize> {
    let temporary = temporary(path);
    let count = index.listings();
    let written = (|| -> std::io::Result<()> {
        let mut out = BufWriter::with_capacity(1 << 20, create_private(&temporary)?);
        out.write_all(&header(id, seen, count as u64, fingerprint))?;
        let mut sum = Checksum::default();
        let mut bytes = Vec::with_capacity(CHUNK * ENTRY);
        for from in (0..count).step_by(CHUNK) {
            bytes.clear();
            {
                let entries = index.entries.read().unwrap_or_else(|p| p.into_inner());
                for e in &entries.list[from..(from + CHUNK).min(count)] {
                    bytes.extend_from_slice(&encode(e));
                }
            }
            sum.add(&bytes);
            out.write_all(&bytes)?;
        }
        out.write_all(&sum.0.to_le_bytes())?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&temporary, path)?;
        if let Some(dir) = path.parent() {
            fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written.map(|()| count)
}

fn temporary(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn create_private(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn header(id: &[u8; 16], seen: i64, count: u64, fingerprint: &[u8; 32]) -> [u8; HEADER] {
    let mut header = [0u8; HEADER];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    header[12..16].copy_from_slice(&(ENTRY as u32).to_le_bytes());
    header[16..32].copy_from_slice(id);
    header[32..40].copy_from_slice(&seen.to_le_bytes());
    header[40..48].copy_from_slice(&count.to_le_bytes());
    header[48..80].copy_from_slice(fingerprint);
    header
}

/// The entries of the file at `path` if it is the one named (`id`, `since`) and made by this
/// build for this taxonomy, whole and undamaged; otherwise why not.
fn read_file(
    path: &Path,
    fingerprint: &[u8; 32],
    id: &[u8; 16],
    since: i64,
) -> std::result::Result<Vec<Entry>, String> {
    let file = fs::File::open(path).map_err(|e| format!("cannot open it: {e}"))?;
    let length = file.metadata().map_err(|e| e.to_string())?.len();
    let mut input = BufReader::with_capacity(1 << 20, file);
    let mut head = [0u8; HEADER];
    input
        .read_exact(&mut head)
        .map_err(|_| "shorter than its header".to_owned())?;
    let count = u64::from_le_bytes(head[40..48].try_into().unwrap_or_default());
    if head[..48] != header(id, since, count, fingerprint)[..48] {
        return Err("not the file the database names".into());
    }
    if head[48..] != fingerprint[..] {
        return Err("made by another release, schema or taxonomy".into());
    }
    let expected = count
        .checked_mul(ENTRY as u64)
        .and_then(|body| body.checked_add((HEADER + 8) as u64));
    if expected != Some(length) {
        return Err("its length is not its header's".into());
    }
    let count = usize::try_from(count).map_err(|e| e.to_string())?;
    let mut list = Vec::with_capacity(count);
    let mut sum = Checksum::default();
    let mut bytes = vec![0u8; CHUNK * ENTRY];
    let mut left = count;
    while left > 0 {
        let n = left.min(CHUNK);
        let chunk = &mut bytes[..n * ENTRY];
        input.read_exact(chunk).map_err(|e| e.to_string())?;
        sum.add(chunk);
        for raw in chunk.chunks_exact(ENTRY) {
            let entry = decode(raw).ok_or("an entry is malformed")?;
            if list
                .last()
                .is_some_and(|last: &Entry| last.seq >= entry.seq)
            {
                return Err("its seqs do not ascend".into());
            }
            list.push(entry);
        }
        left -= n;
    }
    let mut trailer = [0u8; 8];
    input.read_exact(&mut trailer).map_err(|e| e.to_string())?;
    if u64::from_le_bytes(trailer) != sum.0 {
        return Err("its checksum does not match".into());
    }
    Ok(list)
}

fn encode(e: &Entry) -> [u8; ENTRY] {
    let mut b = [0u8; ENTRY];
    b[..8].copy_from_slice(&e.seq.to_le_bytes());
    b[8..16].copy_from_slice(&e.price_cents.to_le_bytes());
    b[16..20].copy_from_slice(&e.rating_sum.to_le_bytes());
    b[20..24].copy_from_slice(&e.rating_count.to_le_bytes());
    b[24..28].copy_from_slice(&e.purchase_count.to_le_bytes());
    b[28..32].copy_from_slice(&e.view_count.to_le_bytes());
    b[32..36].copy_from_slice(&e.quality.to_bits().to_le_bytes());
    b[36..40].copy_from_slice(&e.reputation.to_bits().to_le_bytes());
    b[40..42].copy_from_slice(&e.category.to_le_bytes());
    b[42..44].copy_from_slice(&e.vertical.to_le_bytes());
    b[44] = e.listing_type;
    b[45] = u8::from(e.active);
    b[46] = u8::from(e.sample);
    b
}

fn decode(b: &[u8]) -> Option<Entry> {
    let u32_at = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let i64_at = |at: usize| Some(i64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?));
    let u16_at = |at: usize| Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let flag = |at: usize| match b.get(at)? {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    };
    if *b.get(47)? != 0 || *b.get(44)? > 3 {
        return None;
    }
    Some(Entry {
        seq: i64_at(0)?,
        price_cents: i64_at(8)?,
        rating_sum: u32_at(16)?,
        rating_count: u32_at(20)?,
        purchase_count: u32_at(24)?,
        view_count: u32_at(28)?,
        quality: f32::from_bits(u32_at(32)?),
        reputation: f32::from_bits(u32_at(36)?),
        category: u16_at(40)?,
        vertical: u16_at(42)?,
        listing_type: b[44],
        active: flag(45)?,
        sample: flag(46)?,
    })
}

/// A 64-bit checksum of the entries' bytes (a damaged file, not an attacker: whoever can write
/// the data directory can write the database too).
struct Checksum(u64);

impl Default for Checksum {
    fn default() -> Checksum {
        Checksum(0xcbf2_9ce4_8422_2325)
    }
}

impl Checksum {
    /// `bytes` is a whole number of entries, so of 8-byte words.
    fn add(&mut self, bytes: &[u8]) {
        for word in bytes.chunks_exact(8) {
            let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
