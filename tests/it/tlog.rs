//! The transparency log: artifacts answer their log index, proofs verify offline with our own
//! arithmetic, and Go's golang.org/x/mod/sumdb (an implementation bourse did not write) checks
//! the checkpoint's signature, every tile, the root, sampled inclusions and consistency.

use std::path::Path;
use std::process::Command;

use bourse::crypto::tlog;
use serde_json::{Value, json};

use crate::support::{Party, TestServer, WAIT, skip_or_fail, wait_until};

fn send(server: &TestServer, from: &Party, to: &str, id: &str) -> Value {
    server
        .send_auth(
            "POST",
            &format!("/api/agents/{to}/messages"),
            &from.key,
            &json!({"clientMessageId": id, "body": format!("body of {id}")}),
        )
        .expect(201)
}

fn verifier_public_key(server: &TestServer) -> (String, Vec<u8>) {
    let key = server.get("/api/signing-key").ok();
    let verifier = key["logVerifierKey"].as_str().unwrap().to_owned();
    let public_key = bourse::crypto::b64url_decode(key["publicKey"].as_str().unwrap()).unwrap();
    (verifier, public_key)
}

/// The checkpoint, once one covers `size` entries.
fn checkpoint_covering(server: &TestServer, size: u64) -> String {
    wait_until("a checkpoint covers the entries", WAIT, || {
        let note = server.get("/log/checkpoint").text();
        let parsed = tlog::parse_checkpoint(&note).map_err(|e| e.to_string())?;
        if parsed.size >= size {
            Ok(note)
        } else {
            Err(format!("size {}", parsed.size))
        }
    })
}

#[test]
fn a_message_receipt_is_logged_beside_it_and_its_proof_verifies_offline() {
    let server = TestServer::start();
    let [a, b] = server.parties(["alice", "bob"]);
    let message = send(&server, &a, &b.handle, "m-1");
    let log = &message["log"];
    let index = log["index"]
        .as_u64()
        .expect("a log index beside the receipt");
    assert_eq!(log["proof"], format!("/log/proof/{index}"));
    assert!(
        message["receipt"].get("log").is_none(),
        "never inside the signed payload"
    );
    // The inbox names the same index; an idempotent repeat too.
    let inbox = server.get_auth("/api/agents/me/inbox", &b.key).ok();
    assert_eq!(inbox["messages"][0]["log"], *log);
    let repeat = server
        .send_auth(
            "POST",
            &format!("/api/agents/{}/messages", b.handle),
            &a.key,
            &json!({"clientMessageId": "m-1", "body": "body of m-1"}),
        )
        .expect(200);
    assert_eq!(repeat["log"], *log);

    let proof = wait_until("the proof is served", WAIT, || {
        let resp = server.get(&format!("/log/proof/{index}"));
        (resp.status == 200).then(|| resp.text())
    });
    let proof = tlog::parse_proof(&proof).unwrap();
    assert_eq!(proof.index, index);
    let checkpoint = tlog::parse_checkpoint(&proof.checkpoint).unwrap();
    let (verifier, public_key) = verifier_public_key(&server);
    assert!(verifier.starts_with(&format!("{}+", checkpoint.origin)));
    tlog::verify_checkpoint(&checkpoint, &checkpoint.origin, &public_key).unwrap();
    let entry = tlog::entry("bourse.message.receipt", &message["receipt"]);
    let leaf = tlog::leaf_hash(&entry);
    tlog::verify_inclusion(
        index,
        checkpoint.size,
        &leaf,
        &proof.hashes,
        &checkpoint.root,
    )
    .unwrap();
    let mut other = message["receipt"].clone();
    other["bodyDigest"] = json!("sha256:00");
    let forged = tlog::leaf_hash(&tlog::entry("bourse.message.receipt", &other));
    assert!(
        tlog::verify_inclusion(
            index,
            checkpoint.size,
            &forged,
            &proof.hashes,
            &checkpoint.root
        )
        .is_err()
    );
}

#[test]
fn a_proof_no_checkpoint_covers_is_404_with_retry_after_and_tiles_past_the_log_are_404() {
    let server = TestServer::start();
    let resp = server.get("/log/proof/999999999");
    resp.assert_error(404, "NOT_YET_LOGGED");
    assert_eq!(resp.header("retry-after"), Some("1"));
    server.get("/log/proof/01").assert_error(404, "NOT_FOUND");
    server
        .get("/log/tile/5/x999/000")
        .assert_error(404, "NOT_FOUND");
    server
        .get("/log/tile/0/000.p/0")
        .assert_error(404, "NOT_FOUND");
    let checkpoint = server.get("/log/checkpoint");
    let cache = checkpoint.header("cache-control").unwrap_or_default();
    assert!(cache.contains("max-age=1"), "{cache}");
    assert!(checkpoint.text().contains("/log\n"));
}

#[test]
fn a_listing_version_answers_its_log_index_and_its_history_one_per_entry() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("sam", b"the deliverable");
    let body = crate::support::catalog::listing_body("A logged listing", 0);
    let id = server.create_listing(&seller, body, json!({}));
    let history = server
        .get(&format!("/api/marketplace/listings/{id}/history"))
        .ok();
    let log = history["log"].as_array().unwrap();
    assert_eq!(log.len(), history["entries"].as_array().unwrap().len());
    let index = log[0]["index"].as_u64().expect("version 1 is logged");
    let width = index % 256 + 1;
    let bundle = server
        .get(&format!(
            "/log/tile/entries/{}.p/{width}",
            tlog::tile_index_path(index / 256)
        ))
        .body;
    let expected = tlog::entry("bourse.listing.version", &history["entries"][0]);
    assert!(
        bundle
            .windows(expected.len())
            .any(|window| window == expected.as_slice()),
        "the entry bundle holds the version's canonical entry"
    );
}

/// Go's x/mod, in GOPATH mode (Debian's golang-go and golang-golang-x-mod-dev).
fn go_with_x_mod(test: &str) -> Option<(String, String)> {
    let gopath = std::env::var("BOURSE_GOPATH").unwrap_or_else(|_| "/usr/share/gocode".into());
    let go = std::env::var("BOURSE_GO").unwrap_or_else(|_| "go".into());
    let runs = Command::new(&go)
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    let has_x_mod = Path::new(&gopath)
        .join("src/golang.org/x/mod/sumdb/tlog/tlog.go")
        .exists();
    if !runs || !has_x_mod {
        skip_or_fail(
            test,
            "Go with golang.org/x/mod is not installed (Debian: golang-go golang-golang-x-mod-dev; .ci/test-tools installs them)",
        );
        return None;
    }
    Some((go, gopath))
}

#[test]
fn go_x_mod_checks_the_checkpoint_every_tile_the_root_inclusion_and_consistency() {
    let test = "tlog::go_x_mod_checks_the_checkpoint_every_tile_the_root_inclusion_and_consistency";
    let Some((go, gopath)) = go_with_x_mod(test) else {
        return;
    };
    let server = TestServer::start();
    let [a, b] = server.parties(["alice", "bob"]);
    let first = send(&server, &a, &b.handle, "first");
    let first_index = first["log"]["index"].as_u64().unwrap();
    let old = checkpoint_covering(&server, first_index + 1);
    // Past a full tile of entries, so full and partial tiles of two levels are served.
    let mut last = first.clone();
    for n in 0..300 {
        if n % 25 == 24 {
            // The per-sender limit counts per minute of the injected clock.
            server.clock.advance(jiff::SignedDuration::from_secs(61));
        }
        last = send(&server, &b, &a.handle, &format!("m-{n}"));
    }
    let last_index = last["log"]["index"].as_u64().unwrap();
    checkpoint_covering(&server, last_index + 1);
    let dir = tempfile::tempdir().unwrap();
    let old_file = dir.path().join("old-checkpoint");
    std::fs::write(&old_file, &old).unwrap();
    let (verifier, _) = verifier_public_key(&server);
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tlog_go/verify.go");
    let output = Command::new(&go)
        .arg("run")
        .arg(&program)
        .arg(&server.base)
        .arg(&verifier)
        .arg(&old_file)
        .arg(format!("{first_index}={}", first["id"].as_str().unwrap()))
        .arg(format!("{last_index}={}", last["id"].as_str().unwrap()))
        .arg("0")
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .env("GOCACHE", dir.path().join("gocache"))
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.starts_with("ok "),
        "the Go checker failed:\n{stdout}\n{stderr}"
    );
}

/// The entries of the log as served, from the entry bundles of the newest checkpoint.
fn all_entries(server: &TestServer) -> Vec<Value> {
    let size = tlog::parse_checkpoint(&server.get("/log/checkpoint").text())
        .unwrap()
        .size;
    let mut out = Vec::new();
    let mut start = 0;
    while start < size {
        let width = (size - start).min(256);
        let path = if width == 256 {
            format!("/log/tile/entries/{}", tlog::tile_index_path(start / 256))
        } else {
            format!(
                "/log/tile/entries/{}.p/{width}",
                tlog::tile_index_path(start / 256)
            )
        };
        let bundle = server.get(&path).body;
        let mut rest = bundle.as_slice();
        while rest.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
            out.push(serde_json::from_slice(&rest[2..2 + len]).unwrap());
            rest = &rest[2 + len..];
        }
        start += width;
    }
    out
}

#[test]
fn a_sale_is_logged_as_a_signed_ledger_event_and_a_rating_answers_its_log_index() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("sam", b"the deliverable");
    let [buyer] = server.parties(["bea"]);
    let body = crate::support::catalog::listing_body("A sold listing", 0);
    let listing = server.create_listing(&seller, body, json!({}));
    let purchase = server.buy(&buyer, &listing).json();
    let purchase_id = purchase["id"].as_str().unwrap();
    let rated = server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{listing}/rate"),
            &buyer.key,
            &json!({"purchase_id": purchase_id, "rating": 5}),
        )
        .ok();
    let index = rated["log"]["index"]
        .as_u64()
        .expect("the rating's log index");
    checkpoint_covering(&server, index + 1);
    let entries = all_entries(&server);
    let rating = &entries[usize::try_from(index).unwrap()];
    assert_eq!(rating["type"], "bourse.rating.attestation");
    assert_eq!(rating["artifact"], rated["rating"]);
    let sale = entries
        .iter()
        .find(|e| e["type"] == "bourse.ledger.event" && e["artifact"]["purchaseId"] == purchase_id)
        .expect("the settled sale is logged");
    assert_eq!(sale["artifact"]["event"], "sale");
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": sale["artifact"]}))
        .ok();
    assert_eq!(verdict["valid"], true, "{verdict}");
    let key_changes = entries
        .iter()
        .filter(|e| e["type"] == "bourse.signing-key.change")
        .count();
    assert_eq!(key_changes, 1, "the first key is logged once");
}

#[test]
fn the_cli_verifies_inclusion_offline_refuses_a_newer_checkpoint_without_the_log_and_audits() {
    let server = TestServer::start();
    let [a, b] = server.parties(["alice", "bob"]);
    let message = send(&server, &a, &b.handle, "m-1");
    let index = message["log"]["index"].as_u64().unwrap();
    let proof = wait_until("the proof is served", WAIT, || {
        let resp = server.get(&format!("/log/proof/{index}"));
        (resp.status == 200).then(|| resp.text())
    });
    let old = server.get("/log/checkpoint").text();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let receipt = file("receipt.json", &message["receipt"].to_string());
    let proof_file = file("proof", &proof);
    let old_file = file("old-checkpoint", &old);
    let binary = crate::support::release_binary();
    let verify = |extra: &[&std::ffi::OsStr]| {
        let output = Command::new(&binary)
            .arg("verify")
            .arg(&receipt)
            .arg("--url")
            .arg(&server.base)
            .arg("--proof")
            .args(extra)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let (code, out) = verify(&[proof_file.as_os_str()]);
    assert_eq!(code, Some(0), "{out}");
    // A flipped hash in the proof: the signature still verifies, the inclusion does not.
    let mut lines: Vec<String> = proof.lines().map(str::to_owned).collect();
    let hash = &mut lines[2];
    let flipped = if hash.starts_with('A') { "B" } else { "A" };
    hash.replace_range(0..1, flipped);
    let bad = file("bad-proof", &(lines.join("\n") + "\n"));
    let (code, out) = verify(&[bad.as_os_str()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("transparency log"), "{out}");

    // A newer checkpoint: checked against the log's tiles with --url, refused without it.
    let more = send(&server, &b, &a.handle, "m-2");
    let newer = checkpoint_covering(&server, more["log"]["index"].as_u64().unwrap() + 1);
    let newer_file = file("newer-checkpoint", &newer);
    let (code, out) = verify(&[
        proof_file.as_os_str(),
        "--checkpoint".as_ref(),
        newer_file.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{out}");
    let output = Command::new(&binary)
        .arg("verify")
        .arg(&receipt)
        .arg("--public-key")
        .arg(
            server.get("/api/signing-key").ok()["publicKey"]
                .as_str()
                .unwrap(),
        )
        .arg("--proof")
        .arg(&proof_file)
        .arg("--checkpoint")
        .arg(&newer_file)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{out}");
    assert!(out.contains("--url"), "{out}");

    let output = Command::new(&binary)
        .args(["log", "audit"])
        .arg(&server.base)
        .arg("--from")
        .arg(&old_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let old_size = tlog::parse_checkpoint(&old).unwrap().size;
    assert_eq!(report["consistentWith"], old_size);
    assert!(report["signedEntries"].as_u64().unwrap() >= 2, "{report}");
    assert_eq!(report["keysRecorded"], 1);
}

/// Copies the database files of `from` (the database and any WAL beside it) into `to`.
fn copy_database(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in ["bourse.db", "bourse.db-wal", "bourse.db-shm"] {
        let _ = std::fs::remove_file(to.join(name));
        if from.join(name).exists() {
            std::fs::copy(from.join(name), to.join(name)).unwrap();
        }
    }
}

fn bind(config: &bourse::config::Config) -> Result<(), String> {
    let clock = std::sync::Arc::new(bourse::clock::ManualClock::new(
        "2026-11-21T04:00:00Z".parse().unwrap(),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(bourse::bind(config, clock))
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn a_restore_behind_a_published_checkpoint_refuses_to_start_without_the_flag_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let backup = dir.path().join("backup");
    let server = TestServer::start_in(&data);
    let [a, b] = server.parties(["alice", "bob"]);
    send(&server, &a, &b.handle, "m-1");
    server.stop();
    copy_database(&data, &backup);

    let server = TestServer::start_in(&data);
    let later = send(&server, &b, &a.handle, "m-2");
    checkpoint_covering(&server, later["log"]["index"].as_u64().unwrap() + 1);
    server.stop();
    copy_database(&backup, &data);

    let mut config = bourse::config::Config::for_tests(data.clone());
    let refused = bind(&config).expect_err("a log behind its published checkpoint is refused");
    assert!(
        refused.contains("already published a checkpoint")
            && refused.contains("--accept-log-behind"),
        "{refused}"
    );
    config.accept_log_behind = true;
    bind(&config).expect("the flag lets it start");
}

/// A loopback witness (c2sp.org/tlog-witness `add-checkpoint`, tlog-cosignature v1): cosigns
/// every checkpoint it is sent. Answers its verifier key and its base URL.
fn start_witness() -> (String, String) {
    use std::io::{Read, Write};
    let seed = ed25519_compact::Seed::new([7u8; 32]);
    let pair = ed25519_compact::KeyPair::from_seed(seed);
    let name = "witness.test";
    let id = tlog::cosignature_key_id(name, pair.pk.as_ref());
    let mut typed = vec![0x04];
    typed.extend_from_slice(pair.pk.as_ref());
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let verifier = format!("{name}+{hex}+{}", tlog::b64(&typed));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head_end, length) = loop {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (0, 0);
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..at]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (at + 4, length);
                }
            };
            while buf.len() < head_end + length {
                let n = stream.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
            let note = body.split_once("\n\n").map_or("", |(_, note)| note);
            let checkpoint_body = note.split_once("\n\n").map_or("", |(b, _)| b);
            let timestamp = 1_790_000_000u64;
            let message = tlog::cosigned_message(timestamp, &format!("{checkpoint_body}\n"));
            let signature = pair.sk.sign(message.as_bytes(), None);
            let mut bytes = id.to_vec();
            bytes.extend_from_slice(&timestamp.to_be_bytes());
            bytes.extend_from_slice(signature.as_ref());
            let line = format!("\u{2014} {name} {}\n", tlog::b64(&bytes));
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{line}",
                line.len()
            );
        }
    });
    (verifier, url)
}

#[test]
fn a_configured_witness_cosigns_each_new_checkpoint_and_the_cosigned_one_is_served() {
    let (verifier, url) = start_witness();
    let witness = (verifier.clone(), url);
    let server = TestServer::start_with(move |config| config.witnesses = vec![witness]);
    let [a, b] = server.parties(["alice", "bob"]);
    let message = send(&server, &a, &b.handle, "m-1");
    let size = message["log"]["index"].as_u64().unwrap() + 1;
    let note = wait_until("a cosigned checkpoint is served", WAIT, || {
        let note = server.get("/log/checkpoint").text();
        let parsed = tlog::parse_checkpoint(&note).map_err(|e| e.to_string())?;
        if parsed.size >= size && note.contains("witness.test") {
            Ok(note)
        } else {
            Err(note)
        }
    });
    let checkpoint = tlog::parse_checkpoint(&note).unwrap();
    let line = note
        .lines()
        .find(|l| l.starts_with("\u{2014} witness.test "))
        .unwrap();
    tlog::verify_cosignature(&checkpoint, line, &verifier).unwrap();
    let (_, public_key) = verifier_public_key(&server);
    tlog::verify_checkpoint(&checkpoint, &checkpoint.origin, &public_key).unwrap();
}
