//! Seller participation (`GET /api/proof/participation`): the daily snapshot, its figures,
//! the independence rule and the stale-on-failure rule.

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::support::{Party, TestServer};

fn list(server: &TestServer, seller: &Party, title: &str) -> String {
    let base = json!({"title": title, "description": "Weekly figures.", "priceCents": 0, "verticalSlug": "trucking", "consent": true});
    server.create_listing(seller, base, json!({}))
}

fn participation(server: &TestServer) -> Value {
    let resp = server.get("/api/proof/participation");
    resp.assert_status(200);
    let body = resp.json();
    assert!(body["provenance"]["receipt"].is_object(), "signed: {body}");
    let verified = server.post("/api/verify-receipt", &json!({"signed": body}));
    assert_eq!(verified.json()["valid"], true, "{}", verified.json());
    body
}

fn next_day(server: &TestServer) {
    server.clock.advance(SignedDuration::from_hours(24));
}

#[test]
fn counts_independent_sellers_once_a_day_with_the_definition_applied() {
    let server = TestServer::start();

    // Only the house samples exist: nobody independent yet.
    let empty = participation(&server);
    for field in [
        "generatedAt",
        "asOfDate",
        "snapshotPolicy",
        "seriesLabel",
        "chartTitle",
        "chartCaption",
        "historyPolicy",
        "caption",
        "independenceDefinition",
        "acquisitionNote",
        "demandNote",
    ] {
        assert!(empty[field].is_string(), "{field}: {empty}");
    }
    for field in ["source", "rule", "machineReadable", "demandLedger"] {
        assert!(empty["provenance"][field].is_string(), "{field}");
    }
    assert!(empty["limitations"].as_array().unwrap().len() >= 2);
    assert_eq!(empty["asOfDate"], "2026-11-21");
    assert_eq!(empty["independentSellersLive"], 0);
    assert_eq!(empty["independentListingsLive"], 0);
    assert_eq!(empty["independentSellersEver"], 0);
    assert_eq!(empty["series"], json!([]));
    assert_eq!(empty["recent"], json!([]));
    assert_eq!(
        empty["firstListingRange"],
        json!({"from": null, "to": null})
    );
    assert_eq!(
        empty["concentration"],
        json!({"topSellerListings": 0, "topSellerShare": null})
    );

    // A seller lists today; the snapshot of today does not move.
    let (ada, _ada_twin) = server.seller("ada", b"x");
    let first = list(&server, &ada, "Ada's first");
    assert_eq!(participation(&server)["independentSellersEver"], 0);
    assert_eq!(participation(&server)["generatedAt"], empty["generatedAt"]);

    // Next day: Ada counts; Bob and an affiliated agent list too.
    next_day(&server);
    let (bob, _bob_twin) = server.seller("bob", b"x");
    list(&server, &bob, "Bob's only");
    let (aff, _aff_twin) = server.seller("affiliate", b"x");
    list(&server, &aff, "In-house");
    let classified = server.send_auth(
        "PUT",
        &format!("/api/operator/parties/{}", aff.handle),
        &server.operator_key(),
        &json!({"party": "affiliated"}),
    );
    classified.assert_status(200);
    list(&server, &ada, "Ada's second");
    list(&server, &ada, "Ada's third");

    let day2 = participation(&server);
    assert_eq!(day2["asOfDate"], "2026-11-22");
    assert_eq!(day2["independentSellersEver"], 2, "{day2}");
    assert_eq!(day2["independentSellersLive"], 2);
    assert_eq!(day2["independentListingsLive"], 4);
    assert_eq!(
        day2["series"],
        json!([
            {"date": "2026-11-21", "cumulativeSellers": 1},
            {"date": "2026-11-22", "cumulativeSellers": 2},
        ])
    );
    assert_eq!(
        day2["concentration"],
        json!({"topSellerListings": 3, "topSellerShare": 0.75})
    );
    assert_eq!(
        day2["firstListingRange"]["from"],
        "2026-11-21T04:00:00.000Z"
    );
    let recent = day2["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 2);
    assert_eq!(recent[1]["listingId"], first.as_str());
    assert_eq!(recent[1]["listingTitle"], "Ada's first");
    assert_eq!(recent[1]["liveListings"], 3);
    assert_eq!(recent[0]["liveListings"], 1);

    // Deactivating Ada's listings takes her out of the live figures, not out of the history.
    next_day(&server);
    for id in server.get("/api/marketplace/listings?q=Ada").json()["listings"]
        .as_array()
        .unwrap()
    {
        let id = id["id"].as_str().unwrap();
        let off = server.send_auth(
            "POST",
            &format!("/api/marketplace/listings/{id}/deactivate"),
            &ada.key,
            &json!({}),
        );
        off.assert_status(200);
    }
    let day3 = participation(&server);
    assert_eq!(day3["independentSellersEver"], 2);
    assert_eq!(day3["independentSellersLive"], 1, "{day3}");
    assert_eq!(day3["independentListingsLive"], 1);
    assert_eq!(day3["series"], day2["series"]);

    // The disclosures chart is drawn from the same series.
    let page = server.get("/disclosures");
    let html = page.text();
    assert!(
        html.contains("<svg") && html.contains("2026-11-22"),
        "{html}"
    );
}

#[test]
fn a_failed_refresh_serves_the_previous_snapshot_with_its_timestamp() {
    let server = TestServer::start();
    let (ada, _twin) = server.seller("ada", b"x");
    list(&server, &ada, "Ada's first");
    let before = participation(&server);
    assert_eq!(before["independentSellersEver"], 1);

    // Next day, with another process holding the database's write lock: the refresh cannot
    // store, so yesterday's snapshot is served as it was.
    next_day(&server);
    let blocker = rusqlite::Connection::open(server.data.join("bourse.db")).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let stale = participation(&server);
    assert_eq!(stale["generatedAt"], before["generatedAt"]);
    assert_eq!(stale["asOfDate"], "2026-11-21");
    assert_eq!(stale["independentSellersEver"], 1);
    blocker.execute_batch("ROLLBACK").unwrap();
    drop(blocker);

    // Once the database answers again, the day's snapshot is computed.
    let fresh = participation(&server);
    assert_eq!(fresh["asOfDate"], "2026-11-22");
    assert_eq!(fresh["generatedAt"], "2026-11-22T04:00:00.000Z");
}
