//! Unit tests of `snapshot.rs`: a written file reads back entry for entry, and every way a file
//! can be the wrong one or damaged is refused.
use super::*;
use crate::service::catalog::entries::Entries;

fn entry(seq: i64, price_cents: i64) -> Entry {
    Entry {
        seq,
        price_cents,
        rating_sum: (seq % 50) as u32,
        rating_count: (seq % 10) as u32,
        purchase_count: u32::MAX - seq as u32,
        view_count: (seq * 7) as u32,
        quality: seq as f32 / 3.0,
        reputation: -0.25,
        category: (seq % 5) as u16,
        vertical: u16::MAX,
        listing_type: (seq % 3) as u8,
        active: seq % 4 != 0,
        sample: seq % 9 == 0,
    }
}

fn bytes(list: &[Entry]) -> Vec<[u8; ENTRY]> {
    list.iter().map(encode).collect()
}

/// An index of `n` entries (`seq`s with gaps) and a file of it in `dir`.
fn written(dir: &Path, n: i64) -> (Vec<Entry>, PathBuf, [u8; 32]) {
    let taxonomy = Taxonomy::load();
    let index = BrowseIndex::empty(&taxonomy);
    let list: Vec<Entry> = (1..=n).map(|i| entry(i * 3, i * 100 - 700)).collect();
    *index.entries.write().unwrap() = Entries::new(list.clone());
    let path = dir.join("browse-index.snapshot");
    let print = fingerprint(&taxonomy);
    assert_eq!(
        write_file(&index, &path, &[7; 16], 41, &print).unwrap(),
        n as usize
    );
    (list, path, print)
}

#[test]
fn a_written_file_reads_back_entry_for_entry_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let n = CHUNK as i64 * 2 + 5;
    let (list, path, print) = written(dir.path(), n);
    assert!(!temporary(&path).exists());
    let read = read_file(&path, &print, &[7; 16], 41).unwrap();
    assert_eq!(bytes(&read), bytes(&list));
}

#[test]
fn a_file_not_named_made_elsewhere_or_damaged_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path, print) = written(dir.path(), 1000);
    let refusal = |path: &Path, print: &[u8; 32], id: &[u8; 16], since: i64| {
        read_file(path, print, id, since).unwrap_err()
    };
    assert_eq!(
        refusal(&path, &print, &[8; 16], 41),
        "not the file the database names"
    );
    assert_eq!(
        refusal(&path, &print, &[7; 16], 42),
        "not the file the database names"
    );
    assert_eq!(
        refusal(&path, &[0; 32], &[7; 16], 41),
        "made by another release, schema or taxonomy"
    );
    let original = fs::read(&path).unwrap();
    let damaged = |at: usize, bit: u8| {
        let mut bytes = original.clone();
        bytes[at] ^= bit;
        fs::write(&path, &bytes).unwrap();
        refusal(&path, &print, &[7; 16], 41)
    };
    // A price, a counter, a score: only the checksum tells.
    for at in [
        HEADER + 8,
        HEADER + 500 * ENTRY + 20,
        HEADER + 999 * ENTRY + 36,
    ] {
        assert_eq!(damaged(at, 0x10), "its checksum does not match");
    }
    assert_eq!(damaged(HEADER + 45, 0x02), "an entry is malformed");
    assert_eq!(damaged(HEADER + ENTRY + 7, 0x80), "its seqs do not ascend");
    assert_eq!(damaged(0, 0x01), "not the file the database names");
    fs::write(&path, &original[..original.len() - 1]).unwrap();
    assert_eq!(
        refusal(&path, &print, &[7; 16], 41),
        "its length is not its header's"
    );
    fs::write(&path, &original[..HEADER - 1]).unwrap();
    assert_eq!(
        refusal(&path, &print, &[7; 16], 41),
        "shorter than its header"
    );
    fs::remove_file(&path).unwrap();
    assert!(refusal(&path, &print, &[7; 16], 41).starts_with("cannot open it"));
}

#[test]
fn the_fingerprint_follows_the_taxonomy() {
    let taxonomy = Taxonomy::load();
    let mut other = taxonomy.clone();
    other.verticals.swap(0, 1);
    assert_eq!(fingerprint(&taxonomy), fingerprint(&Taxonomy::load()));
    assert_ne!(fingerprint(&taxonomy), fingerprint(&other));
}

#[test]
fn changed_rows_replace_their_entries_and_new_ones_are_appended() {
    let list: Vec<Entry> = [2, 4, 6].iter().map(|&seq| entry(seq, 1)).collect();
    let row = |seq: i64| IndexRow::plain(seq, 99);
    let made = |row: &IndexRow| entry(row.seq, row.price_cents);
    let caught = caught_up(list.clone(), &[row(4), row(7), row(9)], made).unwrap();
    let prices: Vec<(i64, i64)> = caught.iter().map(|e| (e.seq, e.price_cents)).collect();
    assert_eq!(prices, [(2, 1), (4, 99), (6, 1), (7, 99), (9, 99)]);
    // A seq inside the file that the file lacks: not this catalogue's file.
    assert!(caught_up(list, &[row(3)], made).is_none());
}

#[test]
fn a_setting_names_its_file_by_id_and_change() {
    let named = json!({"id": b64url(&[3; 16]), "lastChange": 12});
    assert_eq!(named_file(&named), Some(([3; 16], 12)));
    for broken in [
        json!({"id": b64url(&[3; 15]), "lastChange": 12}),
        json!({"id": "!", "lastChange": 12}),
        json!({"id": b64url(&[3; 16])}),
        json!("x"),
    ] {
        assert_eq!(named_file(&broken), None, "{broken}");
    }
}
