//! Unit tests of `crypto/tlog.rs`: the stored hashes against a naive RFC 6962 tree, proofs both
//! ways, notes, tile paths and entries.
use std::collections::HashMap;

use super::*;

/// MTH straight from RFC 6962's recursion.
fn naive(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let (k, _) = split(n as u64);
            let k = usize::try_from(k).unwrap();
            node_hash(&naive(&leaves[..k]), &naive(&leaves[k..]))
        }
    }
}

struct Tree {
    stored: HashMap<u64, Hash>,
    leaves: Vec<Hash>,
}

impl Tree {
    fn new(n: u64) -> Tree {
        let mut tree = Tree {
            stored: HashMap::new(),
            leaves: Vec::new(),
        };
        for i in 0..n {
            let leaf = leaf_hash(format!("entry {i}").as_bytes());
            let stored = &tree.stored;
            let new = hashes_to_store(i, leaf, |id| {
                stored.get(&id).copied().ok_or(format!("missing {id}"))
            })
            .unwrap();
            tree.stored.extend(new);
            tree.leaves.push(leaf);
        }
        tree
    }

    fn read(&self) -> impl FnMut(u64) -> Result<Hash, String> + '_ {
        |id| self.stored.get(&id).copied().ok_or(format!("missing {id}"))
    }
}

#[test]
fn stored_hashes_give_the_rfc_6962_root_and_proofs_that_verify() {
    let tree = Tree::new(300);
    for size in [1u64, 2, 3, 7, 8, 9, 255, 256, 257, 300] {
        let root = tree_hash(size, tree.read()).unwrap();
        let leaves = &tree.leaves[..usize::try_from(size).unwrap()];
        assert_eq!(root, naive(leaves), "size {size}");
        for index in [0, size / 2, size - 1] {
            let proof = inclusion_proof(index, size, tree.read()).unwrap();
            let leaf = tree.leaves[usize::try_from(index).unwrap()];
            verify_inclusion(index, size, &leaf, &proof, &root).unwrap();
            let mut wrong = leaf;
            wrong[0] ^= 1;
            assert!(verify_inclusion(index, size, &wrong, &proof, &root).is_err());
        }
        for old in [1u64, 2, 3, size / 2 + 1, size] {
            if old > size {
                continue;
            }
            let old_root = tree_hash(old, tree.read()).unwrap();
            let proof = consistency_proof(old, size, tree.read()).unwrap();
            verify_consistency(old, size, &old_root, &root, &proof).unwrap();
            if old < size {
                let mut wrong = old_root;
                wrong[1] ^= 1;
                assert!(verify_consistency(old, size, &wrong, &root, &proof).is_err());
            }
        }
    }
    assert_eq!(tree_hash(0, tree.read()).unwrap(), empty_root());
}

#[test]
fn stored_hash_numbers_match_go() {
    // tlog.StoredHashIndex(0, n) for n = 0..5 and a few upper levels.
    let level0: Vec<u64> = (0..6).map(|n| stored_hash_index(0, n)).collect();
    assert_eq!(level0, [0, 1, 3, 4, 7, 8]);
    assert_eq!(stored_hash_index(1, 0), 2);
    assert_eq!(stored_hash_index(2, 0), 6);
    assert_eq!(stored_hash_index(1, 1), 5);
}

#[test]
fn a_signed_checkpoint_parses_and_verifies_and_a_flipped_byte_fails() {
    let dir = tempfile::tempdir().unwrap();
    let keyring =
        Keyring::load_or_create(&dir.path().join("k"), "2026-01-01T00:00:00.000Z").unwrap();
    let public_key = crate::crypto::b64url_decode(&keyring.current().public_key).unwrap();
    let root = leaf_hash(b"x");
    let note = sign_checkpoint(&keyring, "example.com/log", 5, &root);
    let parsed = parse_checkpoint(&note).unwrap();
    assert_eq!((parsed.size, parsed.root), (5, root));
    verify_checkpoint(&parsed, "example.com/log", &public_key).unwrap();
    let tampered = note.replacen("\n5\n", "\n6\n", 1);
    let parsed = parse_checkpoint(&tampered).unwrap();
    assert!(verify_checkpoint(&parsed, "example.com/log", &public_key).is_err());
    let key = verifier_key("example.com/log", &public_key);
    assert!(key.starts_with("example.com/log+"), "{key}");
}

#[test]
fn tile_paths_read_and_write_the_c2sp_layout() {
    assert_eq!(tile_index_path(1_234_067), "x001/x234/067");
    assert_eq!(tile_index_path(5), "005");
    let tile = parse_tile_path("0/x001/x234/067.p/8").unwrap();
    assert_eq!(
        (tile.level, tile.index, tile.width),
        (Some(0), 1_234_067, 8)
    );
    let tile = parse_tile_path("entries/000").unwrap();
    assert_eq!((tile.level, tile.index, tile.width), (None, 0, 0));
    for bad in [
        "0/1",
        "0/000.p/0",
        "0/000.p/256",
        "0/000.p/08",
        "x/000",
        "0/001/000",
    ] {
        assert!(parse_tile_path(bad).is_none(), "{bad}");
    }
}

#[test]
fn a_proof_text_round_trips() {
    let hashes = vec![leaf_hash(b"a"), leaf_hash(b"b")];
    let text = proof_text(7, &hashes, "o\n1\nAAAA\n\n\u{2014} o x\n");
    let proof = parse_proof(&text).unwrap();
    assert_eq!((proof.index, proof.hashes), (7, hashes));
    assert!(proof.checkpoint.starts_with("o\n1\n"));
}

#[test]
fn an_entry_is_the_artifact_in_canonical_form_or_its_digest_when_too_big() {
    let small = serde_json::json!({"z": 1, "a": "é", "signature": {"alg": "ed25519"}});
    let entry_bytes = entry("kind", &small);
    assert_eq!(
        entry_bytes,
        r#"{"artifact":{"a":"é","signature":{"alg":"ed25519"},"z":1},"type":"kind"}"#.as_bytes()
    );
    let serde_json::Value::Object(object) = &small else {
        unreachable!()
    };
    assert_eq!(object_entry("kind", object), entry_bytes);

    let big = serde_json::json!({"body": "x".repeat(ENTRY_MAX_BYTES)});
    let expected = format!(
        r#"{{"artifactDigest":"{}","type":"kind"}}"#,
        jcs::digest(&big)
    );
    assert_eq!(entry("kind", &big), expected.as_bytes());
    let serde_json::Value::Object(object) = &big else {
        unreachable!()
    };
    assert_eq!(object_entry("kind", object), expected.as_bytes());
}
