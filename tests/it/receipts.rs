//! Signed responses: provenance receipts, POST /api/verify-receipt, `bourse verify`, rotation.

use std::io::Write;

use serde_json::{Value, json};

use crate::support::{TestServer, bourse};

/// Splits a response body into (provenance.receipt, body without it).
fn provenance_parts(body: &Value) -> (Value, Value) {
    let mut payload = body.clone();
    let receipt = payload["provenance"]
        .as_object_mut()
        .unwrap()
        .shift_remove("receipt")
        .unwrap();
    (receipt, payload)
}

#[test]
fn every_success_object_begins_with_a_signed_provenance_block_that_verifies() {
    let server = TestServer::start();
    let agent = server.register("signed");
    for body in [
        agent.clone(),
        server.get("/api/meta").json(),
        server.get("/api/signing-key").json(),
    ] {
        let first_key = body.as_object().unwrap().keys().next().unwrap().clone();
        assert_eq!(first_key, "provenance", "{body}");
        let provenance = &body["provenance"];
        for field in [
            "source",
            "creator",
            "brand",
            "established",
            "classification",
            "attribution",
            "patent",
            "network",
            "marketing",
        ] {
            assert!(provenance.get(field).is_some(), "provenance lacks {field}");
        }
        let receipt = &provenance["receipt"];
        assert_eq!(receipt["alg"], "ed25519");
        assert_eq!(
            receipt["verify"],
            format!("{}/api/verify-receipt", server.base)
        );
        assert!(receipt["digest"].as_str().unwrap().starts_with("sha256:"));

        let (receipt, payload) = provenance_parts(&body);
        let verdict = server
            .post(
                "/api/verify-receipt",
                &json!({"receipt": receipt, "payload": payload}),
            )
            .json();
        assert_eq!(verdict["valid"], true, "{verdict}");
        assert_eq!(verdict["keyCurrent"], true);
        let whole = server
            .post("/api/verify-receipt", &json!({"signed": body}))
            .json();
        assert_eq!(whole["valid"], true, "{whole}");
    }
    let error = server.get("/nope").json();
    assert!(
        error.get("provenance").is_none(),
        "error bodies keep their documented shape"
    );
}

#[test]
fn one_flipped_character_makes_a_receipt_invalid() {
    let server = TestServer::start();
    let body = server.register("flip");
    let text = body.to_string().replacen("\"flip\"", "\"flop\"", 1);
    let tampered: Value = serde_json::from_str(&text).unwrap();
    let verdict = server.post("/api/verify-receipt", &json!({"signed": tampered}));
    let verdict = verdict.expect(200);
    assert_eq!(verdict["valid"], false);
    assert_eq!(verdict["digestMatches"], false);
    assert!(verdict["reason"].as_str().unwrap().contains("digest"));

    let mut bad_signature = body.clone();
    let signature = bad_signature["provenance"]["receipt"]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let (first, rest) = signature.split_at(1);
    let flipped = format!("{}{rest}", if first == "A" { "B" } else { "A" });
    bad_signature["provenance"]["receipt"]["signature"] = flipped.into();
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": bad_signature}))
        .json();
    assert_eq!(verdict["valid"], false);
    assert_eq!(verdict["digestMatches"], true);
}

#[test]
fn verify_receipt_answers_400_for_malformed_requests() {
    let server = TestServer::start();
    server
        .request("POST", "/api/verify-receipt", &[], Some(b"{not json"))
        .assert_error(400, "INVALID_JSON");
    server
        .post("/api/verify-receipt", &json!({}))
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .post("/api/verify-receipt", &json!({"signed": {}, "extra": 1}))
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .post(
            "/api/verify-receipt",
            &json!({"receipt": {"alg": "ed25519"}, "payload": {}}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .post(
            "/api/verify-receipt",
            &json!({"signed": {"no": "signature"}}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .request(
            "POST",
            "/api/verify-receipt",
            &[],
            Some(br#"{"signed": {"a": 1, "a": 2}}"#),
        )
        .assert_error(400, "INVALID_JSON");
    let unknown = json!({"receipt": {"alg": "ed25519", "keyId": "ed25519-0000000000000000", "signedAt": "2026-01-01T00:00:00Z",
        "digest": format!("sha256:{}", "0".repeat(64)), "signature": "A".repeat(86)}, "payload": {"x": 1}});
    let verdict = server.post("/api/verify-receipt", &unknown).json();
    assert_eq!(verdict["valid"], false);
    assert_eq!(verdict["keyKnown"], false);
}

#[test]
fn signing_key_is_published_and_verifies_offline_with_bourse_verify() {
    let server = TestServer::start();
    let key = server.get("/api/signing-key").json();
    assert_eq!(key["alg"], "ed25519");
    let key_id = key["keyId"].as_str().unwrap();
    assert!(!key_id.contains('.'));
    let public_key = key["publicKey"].as_str().unwrap();
    assert_eq!(public_key.len(), 43, "32 bytes, unpadded base64url");

    let body = server.register("offline");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receipt.json");
    std::fs::write(&file, body.to_string()).unwrap();
    let by_key = bourse()
        .arg("verify")
        .arg(&file)
        .args(["--public-key", public_key])
        .output()
        .unwrap();
    assert!(
        by_key.status.success(),
        "{}",
        String::from_utf8_lossy(&by_key.stderr)
    );
    let by_data = bourse()
        .arg("verify")
        .arg(&file)
        .arg("--data")
        .arg(&server.data)
        .output()
        .unwrap();
    assert!(
        by_data.status.success(),
        "{}",
        String::from_utf8_lossy(&by_data.stderr)
    );
    let by_url = bourse()
        .arg("verify")
        .arg(&file)
        .args(["--url", &server.base])
        .output()
        .unwrap();
    assert!(
        by_url.status.success(),
        "{}",
        String::from_utf8_lossy(&by_url.stderr)
    );

    let tampered = dir.path().join("tampered.json");
    std::fs::write(
        &tampered,
        body.to_string().replacen("offline", "offlinE", 1),
    )
    .unwrap();
    let refused = bourse()
        .arg("verify")
        .arg(&tampered)
        .args(["--public-key", public_key])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("digest"),
        "the reason goes to stderr"
    );

    let mut stdin_run = bourse()
        .args(["verify", "-", "--public-key", public_key])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    stdin_run
        .stdin
        .take()
        .unwrap()
        .write_all(body.to_string().as_bytes())
        .unwrap();
    assert!(stdin_run.wait().unwrap().success());
}

#[test]
fn after_keys_rotate_and_a_restart_old_receipts_verify_and_new_ones_use_the_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = TestServer::start_in(&data);
    let old_body = server.register("before-rotation");
    let old_key_id = old_body["provenance"]["receipt"]["keyId"]
        .as_str()
        .unwrap()
        .to_owned();
    server.stop();

    let rotate = bourse()
        .args(["keys", "rotate", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        rotate.status.success(),
        "{}",
        String::from_utf8_lossy(&rotate.stderr)
    );

    let server = TestServer::start_in(&data);
    let new_body = server.get("/api/meta").json();
    let new_key_id = new_body["provenance"]["receipt"]["keyId"].as_str().unwrap();
    assert_ne!(new_key_id, old_key_id);
    let keys = server.get("/api/signing-key").json();
    assert_eq!(keys["keyId"], new_key_id);
    assert_eq!(keys["previousKeys"][0]["keyId"], old_key_id);
    assert!(keys["previousKeys"][0]["retiredAt"].is_string());

    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": old_body}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
    assert_eq!(verdict["keyKnown"], true);
    assert_eq!(verdict["keyCurrent"], false);
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": new_body}))
        .json();
    assert_eq!(verdict["keyCurrent"], true);

    let file = dir.path().join("old.json");
    std::fs::write(&file, old_body.to_string()).unwrap();
    let offline = bourse()
        .arg("verify")
        .arg(&file)
        .arg("--data")
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        offline.status.success(),
        "{}",
        String::from_utf8_lossy(&offline.stderr)
    );
}

/// A listing's detail is signed once per content: two reads without a change between them are
/// the same signed bytes (and they verify); an edit, a rename of the seller or a new rating shows
/// at once in a freshly signed answer.
#[test]
fn a_listing_detail_is_signed_once_per_content_and_never_served_stale() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("signed-once", b"bytes");
    let listing = server.create_listing(
        &seller,
        json!({"title": "Signed once", "description": "Reused signature.", "priceCents": 0, "consent": true}),
        json!({}),
    );
    let path = format!("/api/marketplace/listings/{listing}");
    let first = server.get(&path);
    let second = server.get(&path);
    first.assert_status(200);
    assert_eq!(
        first.body, second.body,
        "an unchanged listing reuses its signed answer"
    );
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": second.json()}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
    // An edit shows at once.
    server
        .send_auth(
            "PATCH",
            &path,
            &seller.key,
            &json!({"title": "Signed twice"}),
        )
        .assert_status(200);
    let edited = server.get(&path).json();
    assert_eq!(edited["listing"]["title"], "Signed twice");
    // So does the seller's new display name.
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            &seller.key,
            &json!({"displayName": "Renamed Seller"}),
        )
        .assert_status(200);
    let renamed = server.get(&path).json();
    assert_eq!(renamed["seller"]["displayName"], "Renamed Seller");
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": renamed}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
}

/// A browse page is signed once per content too: the same query twice is the same signed bytes;
/// a new listing shows at once; each page verifies.
#[test]
fn a_browse_page_is_signed_once_per_content_and_never_served_stale() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("browse-once", b"bytes");
    let listing = |title: &str| json!({"title": title, "description": "Reused page signature.", "priceCents": 0, "consent": true});
    server.create_listing(&seller, listing("Tidal gauges north"), json!({}));
    let path = "/api/marketplace/listings?q=tidal&limit=10";
    let first = server.get(path);
    let second = server.get(path);
    first.assert_status(200);
    assert_eq!(
        first.body, second.body,
        "an unchanged page reuses its signed answer"
    );
    assert_eq!(first.json()["total"], 1);
    let other = server.get("/api/marketplace/listings?q=tidal&limit=9");
    assert_ne!(other.body, first.body, "another query is another page");
    server.create_listing(&seller, listing("Tidal gauges south"), json!({}));
    let third = server.get(path).json();
    assert_eq!(third["total"], 2, "a new listing shows at once: {third}");
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": third}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
}

/// Public statistics, fees and the demand ledger are signed once per content too: the same
/// read twice is the same signed bytes; any committed write shows at once.
#[test]
fn public_reads_reuse_their_signed_answer_until_a_write() {
    let server = TestServer::start();
    for path in [
        "/api/stats",
        "/api/fees",
        "/api/proof/demand?limit=5",
        "/api/agents",
    ] {
        let first = server.get(path);
        first.assert_status(200);
        assert_eq!(
            first.body,
            server.get(path).body,
            "{path}: an unchanged answer is reused"
        );
    }
    let before = server.get("/api/agents").json();
    server.register("a newcomer");
    let after = server.get("/api/agents").json();
    assert_eq!(
        after["total"].as_i64().unwrap(),
        before["total"].as_i64().unwrap() + 1,
        "a registration shows at once"
    );
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": after}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
}
