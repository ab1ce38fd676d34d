//! The browse index's snapshot (`DATA/browse-index.snapshot`), against the real binary over a
//! catalogue seeded by `examples/seed_catalog`: the first start reads the rows and writes the
//! snapshot; a restart reads the snapshot, catches up with what changed since (a new listing, a
//! deactivated one, view counts), and answers every browse as a start that reads the rows does;
//! a damaged file is read past, never trusted.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::console::Console;
use crate::support::{BinServer, Client, WAIT, example, wait_until};

const FLAGS: &[&str] = &["--allow-loopback-outbound", "--relaxed-limits"];

/// Browses across sorts, filters and searches: what each answers (its total and the ids of its
/// page, in order).
fn answers(client: &Client) -> Vec<Value> {
    let queries = [
        "limit=50",
        "limit=50&offset=500",
        "sort=popular&limit=50",
        "sort=price_asc&price=paid&limit=50",
        "sort=price_desc&limit=50&offset=100",
        "sort=quality&min_rating=3&limit=50",
        "sort=trust&category=data&limit=50",
        "q=solar&limit=50",
        "q=snapshot&limit=50",
        "sort=popular&q=vintage%20camera&limit=50",
    ];
    queries
        .iter()
        .map(|query| {
            let page = client
                .get(&format!("/api/marketplace/listings?{query}"))
                .ok();
            let ids: Vec<Value> = page["listings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["id"].clone())
                .collect();
            json!({"query": query, "total": page["total"], "ids": ids})
        })
        .collect()
}

fn start(data: &Path, log: &Path) -> BinServer {
    BinServer::spawn_logged(data, FLAGS, log)
}

fn log_of(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// Waits for the server logging to `log` to have written its snapshot.
fn snapshot_written(log: &Path) {
    wait_until("the browse snapshot is written", WAIT, || {
        log_of(log).contains("browse snapshot written")
    });
}

#[test]
fn a_restart_reads_the_snapshot_catches_up_and_answers_as_reading_the_rows_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let seeded = Command::new(example("seed_catalog"))
        .arg("--data")
        .arg(&data)
        .args(["--count", "12000", "--sellers", "20"])
        .output()
        .unwrap();
    assert!(seeded.status.success(), "{seeded:?}");
    let snapshot = data.join("browse-index.snapshot");

    // First start: the rows are read, and the snapshot written in the background.
    let log = dir.path().join("first.log");
    let server = start(&data, &log);
    snapshot_written(&log);
    assert!(log_of(&log).contains("from=\"rows\""), "{}", log_of(&log));
    assert!(snapshot.is_file());
    // Changes after the snapshot: a new listing, a deactivated one, views of a third.
    let client = &server.client;
    let (seller, _twin) = client.seller("Snapshot Seller", b"rows");
    let created = client.create_listing(
        &seller,
        crate::support::catalog::listing_body("Snapshot catch-up dataset", 0),
        json!({}),
    );
    let seeded_ids: Vec<String> =
        client.get("/api/marketplace/listings?q=solar&limit=2").ok()["listings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect();
    let operator = std::fs::read_to_string(data.join("operator.key")).unwrap();
    let console = Console::sign_in(client, operator.trim());
    let path = format!("/console/listings/{}/deactivate", seeded_ids[0]);
    let done = console.post(client, &path, &[("reason", "Snapshot test")]);
    assert_eq!(done.status, 303, "{}", done.text());
    for _ in 0..3 {
        client
            .get(&format!("/api/marketplace/listings/{}", seeded_ids[1]))
            .ok();
    }
    let before = answers(client);
    server.terminate();

    // Restart: the snapshot, caught up.
    let log = dir.path().join("restart.log");
    let server = start(&data, &log);
    assert!(
        log_of(&log).contains("from=\"snapshot\""),
        "{}",
        log_of(&log)
    );
    let restored = answers(&server.client);
    let found = &restored[8];
    assert_eq!(found["ids"], json!([created]), "{found}");
    assert!(
        !restored
            .iter()
            .any(|a| a["ids"].as_array().unwrap().contains(&json!(seeded_ids[0]))),
        "the deactivated listing is browsed nowhere"
    );
    let viewed = server
        .client
        .get(&format!("/api/marketplace/listings/{}", seeded_ids[1]))
        .ok();
    assert!(
        viewed["listing"]["viewCount"].as_i64().unwrap() >= 3,
        "{viewed}"
    );
    // What the restart answers is what the server answered before it stopped, views aside:
    // a detail read counts a view, so the popular order may have moved by those reads.
    for (was, now) in before.iter().zip(&restored) {
        if !was["query"].as_str().unwrap().contains("popular") {
            assert_eq!(was, now);
        }
    }
    drop(server); // killed, not stopped: nothing is flushed

    // Without the snapshot: the rows are read, and the answers are the same.
    std::fs::remove_file(&snapshot).unwrap();
    let log = dir.path().join("rows.log");
    let server = start(&data, &log);
    assert!(log_of(&log).contains("from=\"rows\""), "{}", log_of(&log));
    assert_eq!(answers(&server.client), restored);
    snapshot_written(&log);
    server.terminate();

    // A damaged snapshot is read past.
    let mut bytes = std::fs::read(&snapshot).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&snapshot, &bytes).unwrap();
    let log = dir.path().join("damaged.log");
    let server = start(&data, &log);
    let logged = log_of(&log);
    assert!(logged.contains("checksum does not match"), "{logged}");
    assert!(logged.contains("from=\"rows\""), "{logged}");
    assert_eq!(answers(&server.client), restored);
}
