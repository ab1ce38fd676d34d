//! The fee schedule surfaces: /api/meta, /api/fees and announcements, /disclosures.

use serde_json::json;

use crate::support::{TestServer, bourse};

#[test]
fn meta_states_the_schedule_commerce_charges() {
    let server = TestServer::start();
    let meta = server.get("/api/meta").json();
    assert!(meta.get("provenance").is_some());
    let flat = [
        ("microUnderCents", json!(2000)),
        ("standardBps", json!(500)),
        ("highTicketAtCents", json!(5_000_000)),
        ("highTicketBps", json!(50)),
        ("highTicketFloorCents", json!(24_900)),
        ("highTicketCapCents", json!(499_500)),
        ("lockUntil", json!("2027-06-30")),
        ("buyerBps", json!(0)),
    ];
    for (field, value) in flat {
        assert_eq!(meta[field], value, "{field}");
    }
    assert_eq!(meta["foundingFill"]["bps"], 0);
    let fees = &meta["fees"];
    assert_eq!(
        (
            fees["seller_fee_bps"].clone(),
            fees["seller_keep_bps"].clone()
        ),
        (json!(500), json!(9500))
    );
    assert_eq!(
        (
            fees["buyer_fee_bps"].clone(),
            fees["listing_fee_bps"].clone()
        ),
        (json!(0), json!(0))
    );
    assert_eq!(fees["rate_change_notice_days"], 60);
    assert_eq!(fees["schedule_version"], 1);
    assert_eq!(fees["settled_sales_keep_closing_rate"], true);
    assert_eq!(fees["banded"], true);
    assert_eq!(fees["bands"].as_array().unwrap().len(), 3);
    for field in ["schedule_history", "change_notice"] {
        assert!(fees.get(field).is_some(), "{field}");
    }
    for field in [
        "rails",
        "patent_status",
        "metric_definitions",
        "demand_ledger",
        "receipt_verification",
        "llms_txt",
    ] {
        assert!(meta.get(field).is_some(), "{field}");
    }
}

#[test]
fn announcements_need_the_lock_to_end_and_sixty_days_of_notice() {
    let server = TestServer::start();
    let op = server.operator_key();
    let fees = server.get("/api/fees").json();
    assert_eq!(fees["live"]["version"], 1);
    assert_eq!(fees["announced"], json!([]));
    let announce = |effective: &str| {
        server.send_auth(
            "POST",
            "/api/operator/fees/announcements",
            &op,
            &json!({"effectiveFrom": effective, "schedule": {"standardBps": 450}, "note": "lower standard rate"}),
        )
    };
    server
        .send_auth(
            "POST",
            "/api/operator/fees/announcements",
            "nope",
            &json!({"effectiveFrom": "2030-01-01", "schedule": {}}),
        )
        .assert_error(401, "UNAUTHENTICATED");
    announce("2027-06-30").assert_error(422, "RATE_LOCKED");
    announce("not a date").assert_error(400, "INVALID_ARGUMENT");
    // A schedule is published in signed answers as canonical JSON: an integer beyond
    // ±(2^53−1) could not be carried exactly, so it is refused, at any depth.
    for big in [
        json!(9_007_199_254_740_992_u64),
        json!(-9_007_199_254_740_992_i64),
    ] {
        server
            .send_auth(
                "POST",
                "/api/operator/fees/announcements",
                &op,
                &json!({"effectiveFrom": "2030-01-01", "schedule": {"bands": [{"upTo": big}]}}),
            )
            .assert_invalid_naming("schedule");
    }
    // Past the lock, the notice period is what refuses.
    server
        .clock
        .advance(jiff::SignedDuration::from_hours(24 * 240)); // 2027-07-19
    announce("2027-08-01").assert_error(422, "NOTICE_TOO_SHORT");
    let accepted = announce("2027-10-01");
    accepted.assert_status(201);
    assert_eq!(accepted.json()["version"], 2);
    let fees = server.get("/api/fees").json();
    assert_eq!(fees["announced"][0]["effectiveFrom"], "2027-10-01");
    assert_eq!(fees["announced"][0]["status"], "draft");
    assert_eq!(
        fees["live"]["version"], 1,
        "the live schedule stays until the announced one takes effect"
    );
}

#[test]
fn fee_changes_can_be_announced_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    TestServer::start_in(&data).stop();
    let refused = bourse()
        .args([
            "fees",
            "announce",
            "--effective-from",
            "2027-01-01",
            "--schedule",
            "{\"standardBps\": 400}",
            "--data",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("locked"));
    let accepted = bourse()
        .args([
            "fees",
            "announce",
            "--effective-from",
            "2031-01-01",
            "--schedule",
            "{\"standardBps\": 400}",
            "--data",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        accepted.status.success(),
        "{}",
        String::from_utf8_lossy(&accepted.stderr)
    );
    let server = TestServer::start_in(&data);
    assert_eq!(
        server.get("/api/fees").json()["announced"][0]["effectiveFrom"],
        "2031-01-01"
    );
}

#[test]
fn the_disclosures_page_renders_the_fee_table_and_the_participation_chart() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("discloser", b"x");
    server.create_listing(
        &seller,
        json!({"title": "Tide tables", "description": "d", "priceCents": 0, "consent": true}),
        json!({}),
    );
    let page = server.get("/disclosures");
    page.assert_status(200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = String::from_utf8(page.body).unwrap();
    for needle in [
        "<table",
        "High ticket",
        "$50,000.00",
        "0.5% (50 bps)",
        "60 days",
        "escrow",
        "<svg",
        "aria-label=\"Cumulative independent sellers\"",
        "<circle",
        "gift and game codes",
    ] {
        assert!(html.contains(needle), "the page lacks {needle:?}");
    }
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no external assets"
    );
}
