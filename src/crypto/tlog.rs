//! The transparency log's arithmetic, free of storage: RFC 6962 hashing, the stored-hash layout,
//! tree and subtree hashes, inclusion and consistency proofs and their verification, and the
//! signed checkpoint note.
//!
//! Specs followed: c2sp.org/signed-note v1.0.0, c2sp.org/tlog-checkpoint v1.0.0,
//! c2sp.org/tlog-tiles v0.1.0, c2sp.org/tlog-proof v1; hashing is RFC 6962 (as RFC 9162 2.1).
//! The stored-hash numbering is the one of Go's `golang.org/x/mod/sumdb/tlog` (`StoredHashIndex`):
//! every complete subtree's hash gets one integer, and the hashes a new leaf completes get
//! consecutive ones, so appending costs one read per completed level and a few inserts.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::jcs;
use super::keys::Keyring;

/// A SHA-256 hash of the tree.
pub type Hash = [u8; 32];

/// Hashes per tile (c2sp.org/tlog-tiles: tile height 8).
pub const TILE_WIDTH: u64 = 256;
/// Tile height: a tile of level L holds hashes of tree level 8·L.
pub const TILE_HEIGHT: u32 = 8;
/// Largest entry a tile's uint16 length prefix can carry.
pub const ENTRY_MAX_BYTES: usize = 65_535;

/// SHA-256(0x00 ‖ entry).
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0u8]);
    hasher.update(entry);
    hasher.finalize().into()
}

/// SHA-256(0x01 ‖ left ‖ right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([1u8]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The storage number of the `n`th hash of tree level `level` (Go's `tlog.StoredHashIndex`):
/// level L's nth hash comes right after level L+1's (2n+1)th.
pub fn stored_hash_index(level: u32, n: u64) -> u64 {
    let mut n = n;
    for _ in 0..level {
        n = 2 * n + 1;
    }
    let mut i = 0u64;
    let mut m = n;
    while m > 0 {
        i += m;
        m >>= 1;
    }
    i + u64::from(level)
}

/// The hashes appending leaf `n` (hash `leaf`) stores, with their storage numbers: the leaf's
/// own, then one per subtree it completes. `read` returns an earlier stored hash.
///
/// # Errors
/// Whatever `read` fails with.
pub fn hashes_to_store<E>(
    n: u64,
    leaf: Hash,
    mut read: impl FnMut(u64) -> Result<Hash, E>,
) -> Result<Vec<(u64, Hash)>, E> {
    let mut out = vec![(stored_hash_index(0, n), leaf)];
    let mut hash = leaf;
    let levels = (n + 1).trailing_zeros();
    for level in 0..levels {
        let sibling = read(stored_hash_index(level, (n >> level) - 1))?;
        hash = node_hash(&sibling, &hash);
        out.push((stored_hash_index(level + 1, n >> (level + 1)), hash));
    }
    Ok(out)
}

/// The largest power of two smaller than `n` (n ≥ 2), and its log2.
fn split(n: u64) -> (u64, u32) {
    let level = 63 - (n - 1).leading_zeros();
    (1 << level, level)
}

/// The complete subtrees making up leaves `[lo, hi)` (lo aligned to the largest), left to
/// right, as (level, index at that level).
fn subtrees(mut lo: u64, hi: u64) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    while lo < hi {
        let remaining = hi - lo;
        let level = if remaining == 1 {
            0
        } else {
            63 - remaining.leading_zeros()
        };
        // The largest aligned power of two that fits.
        let mut level = level;
        while lo & ((1u64 << level) - 1) != 0 {
            level -= 1;
        }
        out.push((level, lo >> level));
        lo += 1 << level;
    }
    out
}

/// MTH of leaves `[lo, hi)` from stored hashes.
///
/// # Errors
/// Whatever `read` fails with.
pub fn range_hash<E>(
    lo: u64,
    hi: u64,
    read: &mut impl FnMut(u64) -> Result<Hash, E>,
) -> Result<Hash, E> {
    if lo == hi {
        return Ok(empty_root());
    }
    let parts = subtrees(lo, hi)
        .into_iter()
        .map(|(level, n)| read(stored_hash_index(level, n)))
        .collect::<Result<Vec<Hash>, E>>()?;
    let mut parts = parts.into_iter().rev();
    let mut hash = parts.next().expect("a non-empty range has a subtree");
    for left in parts {
        hash = node_hash(&left, &hash);
    }
    Ok(hash)
}

/// The root of the tree of `size` leaves.
///
/// # Errors
/// Whatever `read` fails with.
pub fn tree_hash<E>(size: u64, mut read: impl FnMut(u64) -> Result<Hash, E>) -> Result<Hash, E> {
    range_hash(0, size, &mut read)
}

/// The RFC 6962 inclusion proof (PATH) of leaf `index` in the tree of `size` leaves.
///
/// # Errors
/// Whatever `read` fails with.
pub fn inclusion_proof<E>(
    index: u64,
    size: u64,
    mut read: impl FnMut(u64) -> Result<Hash, E>,
) -> Result<Vec<Hash>, E> {
    let mut proof = Vec::new();
    path(index, 0, size, &mut read, &mut proof)?;
    Ok(proof)
}

fn path<E>(
    m: u64,
    lo: u64,
    hi: u64,
    read: &mut impl FnMut(u64) -> Result<Hash, E>,
    out: &mut Vec<Hash>,
) -> Result<(), E> {
    if hi - lo <= 1 {
        return Ok(());
    }
    let (k, _) = split(hi - lo);
    if m < lo + k {
        path(m, lo, lo + k, read, out)?;
        out.push(range_hash(lo + k, hi, read)?);
    } else {
        path(m, lo + k, hi, read, out)?;
        out.push(range_hash(lo, lo + k, read)?);
    }
    Ok(())
}

/// The RFC 6962 consistency proof between the trees of `old` and `new` leaves (0 < old ≤ new).
///
/// # Errors
/// Whatever `read` fails with.
pub fn consistency_proof<E>(
    old: u64,
    new: u64,
    mut read: impl FnMut(u64) -> Result<Hash, E>,
) -> Result<Vec<Hash>, E> {
    let mut proof = Vec::new();
    if old == 0 || old >= new {
        return Ok(proof);
    }
    subproof(old, 0, new, true, &mut read, &mut proof)?;
    Ok(proof)
}

fn subproof<E>(
    m: u64,
    lo: u64,
    hi: u64,
    whole: bool,
    read: &mut impl FnMut(u64) -> Result<Hash, E>,
    out: &mut Vec<Hash>,
) -> Result<(), E> {
    if lo + m == hi {
        if !whole {
            out.push(range_hash(lo, hi, read)?);
        }
        return Ok(());
    }
    let (k, _) = split(hi - lo);
    if m <= k {
        subproof(m, lo, lo + k, whole, read, out)?;
        out.push(range_hash(lo + k, hi, read)?);
    } else {
        subproof(m - k, lo + k, hi, false, read, out)?;
        out.push(range_hash(lo, lo + k, read)?);
    }
    Ok(())
}

/// Checks an inclusion proof (RFC 9162 2.1.3.2).
///
/// # Errors
/// Why the proof does not lead to `root`.
pub fn verify_inclusion(
    index: u64,
    size: u64,
    leaf: &Hash,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), String> {
    if index >= size {
        return Err(format!("index {index} is not below the tree size {size}"));
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return Err("the inclusion proof is longer than the tree is deep".into());
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 || &r != root {
        return Err("the inclusion proof does not lead to the checkpoint's root hash".into());
    }
    Ok(())
}

/// Checks a consistency proof (RFC 9162 2.1.4.2) between two roots.
///
/// # Errors
/// Why the trees are not shown consistent.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), String> {
    if old > new {
        return Err(format!("size {old} is larger than size {new}"));
    }
    if old == new {
        return if old_root == new_root && proof.is_empty() {
            Ok(())
        } else {
            Err("two checkpoints of the same size name different roots".into())
        };
    }
    if old == 0 {
        return Ok(());
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let Some(first) = path.first() else {
        return Err("the consistency proof is empty".into());
    };
    let (mut fn_, mut sn) = (old - 1, new - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in &path[1..] {
        if sn == 0 {
            return Err("the consistency proof is too long".into());
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if &fr != old_root || &sr != new_root || sn != 0 {
        return Err(format!(
            "the checkpoints of sizes {old} and {new} are not consistent"
        ));
    }
    Ok(())
}

/// A log entry: canonical JSON (RFC 8785) `{"artifact": <the signed artifact>, "type": kind}`;
/// an artifact whose entry would pass a tile's 65,535-byte limit is logged by its digest,
/// `{"artifactDigest": "sha256:<hex of its canonical bytes>", "type": kind}`.
pub fn entry(kind: &str, artifact: &serde_json::Value) -> Vec<u8> {
    entry_with(kind, |out| jcs::write_canonical(artifact, out))
}

/// [`entry`] of an artifact held as an object (a receipt just signed: no `Value` built for it).
pub fn object_entry(kind: &str, artifact: &serde_json::Map<String, serde_json::Value>) -> Vec<u8> {
    entry_with(kind, |out| jcs::write_object(artifact, out))
}

/// The entry of the artifact whose canonical bytes `write` appends.
fn entry_with(kind: &str, write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    const OPENING: &[u8] = b"{\"artifact\":";
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(OPENING);
    write(&mut out);
    let artifact_end = out.len();
    out.extend_from_slice(b",\"type\":");
    jcs::write_str(kind, &mut out);
    out.push(b'}');
    if out.len() <= ENTRY_MAX_BYTES {
        return out;
    }
    let digest = jcs::sha256_prefixed(&out[OPENING.len()..artifact_end]);
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"artifactDigest\":");
    jcs::write_str(&digest, &mut out);
    out.extend_from_slice(b",\"type\":");
    jcs::write_str(kind, &mut out);
    out.push(b'}');
    out
}

/// Standard base64 (RFC 4648 §4), the encoding of notes and proofs.
pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes standard base64.
///
/// # Errors
/// Not standard base64.
pub fn b64_decode(text: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(text)
        .map_err(|error| format!("not base64: {error}"))
}

/// Decodes a base64 hash.
///
/// # Errors
/// Not base64 of 32 bytes.
pub fn hash_from_b64(text: &str) -> Result<Hash, String> {
    b64_decode(text)?
        .try_into()
        .map_err(|_| format!("{text:?} is not a 32-byte hash"))
}

/// A signed-note key id for an Ed25519 key: the first 4 bytes of
/// SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key).
pub fn note_key_id(name: &str, public_key: &[u8]) -> [u8; 4] {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0x0A, 0x01]);
    hasher.update(public_key);
    let hash = hasher.finalize();
    [hash[0], hash[1], hash[2], hash[3]]
}

/// The verifier key: `<name>+<hex key id>+<base64(0x01 ‖ public key)>`.
pub fn verifier_key(name: &str, public_key: &[u8]) -> String {
    let id = note_key_id(name, public_key);
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let mut typed = vec![0x01];
    typed.extend_from_slice(public_key);
    format!("{name}+{hex}+{}", b64(&typed))
}

/// The checkpoint body: origin, size, base64 root, each ending in a newline.
pub fn checkpoint_body(origin: &str, size: u64, root: &Hash) -> String {
    format!("{origin}\n{size}\n{}\n", b64(root))
}

/// The checkpoint as a signed note, signed with the keyring's current key under the key name
/// `origin`.
pub fn sign_checkpoint(keyring: &Keyring, origin: &str, size: u64, root: &Hash) -> String {
    let body = checkpoint_body(origin, size, root);
    let public_key = super::b64url_decode(&keyring.current().public_key)
        .expect("the keyring's public key is base64url");
    let mut signature = note_key_id(origin, &public_key).to_vec();
    signature.extend_from_slice(&keyring.sign(body.as_bytes()));
    format!("{body}\n\u{2014} {origin} {}\n", b64(&signature))
}

/// A checkpoint read back from its note (signatures checked separately).
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// The signed text (body lines with their newlines).
    pub body: String,
    /// (key name, key id, signature) of each signature line.
    pub signatures: Vec<(String, [u8; 4], Vec<u8>)>,
}

/// Parses a signed checkpoint note.
///
/// # Errors
/// Not a checkpoint note.
pub fn parse_checkpoint(note: &str) -> Result<Checkpoint, String> {
    let (body, sigs) = note
        .split_once("\n\n")
        .ok_or("a signed note has a blank line before its signatures")?;
    let body = format!("{body}\n");
    let mut lines = body.lines();
    let origin = lines.next().unwrap_or_default().to_owned();
    let size = lines
        .next()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or("the checkpoint's second line is not a size")?;
    let root = hash_from_b64(lines.next().ok_or("the checkpoint has no root line")?)?;
    if origin.is_empty() {
        return Err("the checkpoint has no origin".into());
    }
    let mut signatures = Vec::new();
    for line in sigs.lines() {
        let rest = line
            .strip_prefix("\u{2014} ")
            .ok_or_else(|| format!("{line:?} is not a signature line"))?;
        let (name, sig) = rest
            .split_once(' ')
            .ok_or_else(|| format!("{line:?} is not a signature line"))?;
        let bytes = b64_decode(sig)?;
        if bytes.len() < 4 {
            return Err(format!("{line:?} carries no key id"));
        }
        let id = [bytes[0], bytes[1], bytes[2], bytes[3]];
        signatures.push((name.to_owned(), id, bytes[4..].to_vec()));
    }
    Ok(Checkpoint {
        origin,
        size,
        root,
        body,
        signatures,
    })
}

/// Checks that one of `checkpoint`'s signatures is the Ed25519 signature of `name` with
/// `public_key` (raw 32 bytes).
///
/// # Errors
/// No such signature, or it does not verify.
pub fn verify_checkpoint(
    checkpoint: &Checkpoint,
    name: &str,
    public_key: &[u8],
) -> Result<(), String> {
    let id = note_key_id(name, public_key);
    let (_, _, signature) = checkpoint
        .signatures
        .iter()
        .find(|(n, i, _)| n == name && *i == id)
        .ok_or_else(|| format!("the checkpoint carries no signature by {name}'s key"))?;
    let key = ed25519_compact::PublicKey::from_slice(public_key)
        .map_err(|_| "the public key is not 32 bytes".to_owned())?;
    let signature = ed25519_compact::Signature::from_slice(signature)
        .map_err(|_| "the signature is not 64 bytes".to_owned())?;
    key.verify(checkpoint.body.as_bytes(), &signature)
        .map_err(|_| "the checkpoint's signature does not verify".to_owned())
}

/// Reads a verifier key `<name>+<hex key id>+<base64(type ‖ public key)>`: (name, key id,
/// type byte, public key).
///
/// # Errors
/// Not a verifier key.
pub fn parse_verifier_key(text: &str) -> Result<(String, [u8; 4], u8, Vec<u8>), String> {
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("{text:?} is not <name>+<key id>+<key>"));
    };
    if name.is_empty() || id.len() != 8 {
        return Err(format!("{text:?} is not <name>+<key id>+<key>"));
    }
    let id = u32::from_str_radix(id, 16)
        .map_err(|_| format!("{text:?}: the key id is not hex"))?
        .to_be_bytes();
    let raw = b64_decode(key)?;
    let (&kind, public_key) = raw.split_first().ok_or("an empty key")?;
    if public_key.len() != 32 {
        return Err(format!("{text:?}: not an Ed25519 key"));
    }
    Ok((name.to_owned(), id, kind, public_key.to_vec()))
}

/// A c2sp.org/tlog-cosignature v1 key id: SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[..4].
pub fn cosignature_key_id(name: &str, public_key: &[u8]) -> [u8; 4] {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0x0A, 0x04]);
    hasher.update(public_key);
    let hash = hasher.finalize();
    [hash[0], hash[1], hash[2], hash[3]]
}

/// What a witness signs (c2sp.org/tlog-cosignature v1): `cosignature/v1`, `time <t>`, then the
/// checkpoint body.
pub fn cosigned_message(timestamp: u64, body: &str) -> String {
    format!("cosignature/v1\ntime {timestamp}\n{body}")
}

/// Checks a cosignature line `— <name> <base64(key id ‖ timestamp ‖ signature)>` of
/// `checkpoint` against the witness's verifier key.
///
/// # Errors
/// The line is not a valid cosignature by that key.
pub fn verify_cosignature(
    checkpoint: &Checkpoint,
    line: &str,
    verifier: &str,
) -> Result<(), String> {
    let (name, id, kind, public_key) = parse_verifier_key(verifier)?;
    if kind != 0x04 || id != cosignature_key_id(&name, &public_key) {
        return Err(format!("{verifier:?} is not a cosignature/v1 verifier key"));
    }
    let rest = line
        .strip_prefix("\u{2014} ")
        .and_then(|rest| rest.strip_prefix(name.as_str()))
        .and_then(|rest| rest.strip_prefix(' '))
        .ok_or_else(|| format!("{line:?} is not a cosignature line of {name}"))?;
    let bytes = b64_decode(rest.trim_end())?;
    if bytes.len() != 4 + 8 + 64 || bytes[..4] != id {
        return Err(format!("{line:?} is not a cosignature by {name}'s key"));
    }
    let timestamp = u64::from_be_bytes(bytes[4..12].try_into().expect("eight bytes"));
    let key = ed25519_compact::PublicKey::from_slice(&public_key)
        .map_err(|_| "the witness key is not 32 bytes".to_owned())?;
    let signature = ed25519_compact::Signature::from_slice(&bytes[12..])
        .map_err(|_| "the cosignature is not 64 bytes".to_owned())?;
    key.verify(
        cosigned_message(timestamp, &checkpoint.body).as_bytes(),
        &signature,
    )
    .map_err(|_| format!("{name}'s cosignature does not verify"))
}

/// The c2sp.org/tlog-proof text: index, inclusion hashes, then the checkpoint note.
pub fn proof_text(index: u64, hashes: &[Hash], checkpoint_note: &str) -> String {
    let mut out = format!("c2sp.org/tlog-proof@v1\nindex {index}\n");
    for hash in hashes {
        out.push_str(&b64(hash));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(checkpoint_note);
    out
}

/// A parsed tlog-proof: index, inclusion hashes and the checkpoint note's text.
pub struct Proof {
    pub index: u64,
    pub hashes: Vec<Hash>,
    pub checkpoint: String,
}

/// Parses a c2sp.org/tlog-proof text.
///
/// # Errors
/// Not a tlog-proof.
pub fn parse_proof(text: &str) -> Result<Proof, String> {
    let (head, checkpoint) = text
        .split_once("\n\n")
        .ok_or("a tlog-proof has a blank line before its checkpoint")?;
    let mut lines = head.lines();
    if lines.next() != Some("c2sp.org/tlog-proof@v1") {
        return Err("the proof does not start with c2sp.org/tlog-proof@v1".into());
    }
    let mut line = lines.next().ok_or("the proof has no index")?;
    if line.starts_with("extra ") {
        line = lines.next().ok_or("the proof has no index")?;
    }
    let index = line
        .strip_prefix("index ")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or("the proof's index line is malformed")?;
    let hashes = lines.map(hash_from_b64).collect::<Result<Vec<_>, _>>()?;
    Ok(Proof {
        index,
        hashes,
        checkpoint: checkpoint.to_owned(),
    })
}

/// A tile's path after `tile/` in c2sp.org/tlog-tiles: `<L>/<N>[.p/<W>]` or
/// `entries/<N>[.p/<W>]`. Level `None` is the entry bundle. Width 0 is a full tile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TilePath {
    pub level: Option<u32>,
    pub index: u64,
    pub width: u64,
}

/// Reads a tile path (the part after `tile/`).
pub fn parse_tile_path(path: &str) -> Option<TilePath> {
    let (head, rest) = path.split_once('/')?;
    let level = if head == "entries" {
        None
    } else {
        if head.is_empty() || head.len() > 2 || !head.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let level: u32 = head.parse().ok()?;
        if level > 5 {
            return None;
        }
        Some(level)
    };
    let (index_part, width) = match rest.split_once(".p/") {
        Some((index_part, width)) => {
            if width.is_empty() || width.len() > 3 || width.starts_with('0') {
                return None;
            }
            let width: u64 = width.parse().ok()?;
            if !(1..TILE_WIDTH).contains(&width) {
                return None;
            }
            (index_part, width)
        }
        None => (rest, 0),
    };
    let groups: Vec<&str> = index_part.split('/').collect();
    let (last, earlier) = groups.split_last()?;
    let mut index: u64 = 0;
    for group in earlier {
        let digits = group.strip_prefix('x')?;
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        index = index.checked_mul(1000)? + digits.parse::<u64>().ok()?;
    }
    if last.len() != 3 || !last.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    index = index.checked_mul(1000)? + last.parse::<u64>().ok()?;
    Some(TilePath {
        level,
        index,
        width,
    })
}

/// Writes a tile index as c2sp.org/tlog-tiles does: groups of three digits, `x` before all but
/// the last.
pub fn tile_index_path(index: u64) -> String {
    let mut groups = vec![format!("{:03}", index % 1000)];
    let mut rest = index / 1000;
    while rest > 0 {
        groups.push(format!("x{:03}", rest % 1000));
        rest /= 1000;
    }
    groups.reverse();
    groups.join("/")
}

#[cfg(test)]
#[path = "tlog_tests.rs"]
mod tests;
