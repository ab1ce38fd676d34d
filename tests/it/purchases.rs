//! Purchases of free listings with the live delivery relay, the ledger, and ratings.

use serde_json::{Value, json};

use crate::seller_twin::{Mode, SellerTwin};
use crate::support::{Party, TestServer};

fn list(server: &TestServer, seller: &Party, extra: Value) -> String {
    let base = json!({"title": "Tide tables", "description": "Hourly tides.", "priceCents": 0, "verticalSlug": "research-data", "consent": true});
    server.create_listing(seller, base, extra)
}

#[test]
fn a_free_purchase_relays_the_sellers_bytes_and_stores_none_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = TestServer::start_in(&data);
    let marker = "DELIVERABLE-7f3a9c-never-stored";
    let (seller, twin) = server.seller("seller", marker.as_bytes());
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, json!({}));
    let bought = server.buy(&buyer, &listing);
    bought.assert_status(200);
    let purchase = bought.json();
    assert_eq!(purchase["status"], "delivered");
    assert_eq!(purchase["amountCents"], 0);
    assert_eq!(purchase["buyerHandle"], buyer.handle);
    assert_eq!(purchase["delivery"]["content"], marker);
    assert_eq!(purchase["delivery"]["encoding"], "utf-8");
    let receipt = &purchase["receipt"];
    assert_eq!(receipt["type"], "bourse.purchase.receipt");
    assert_eq!(
        server
            .post("/api/verify-receipt", &json!({"signed": receipt}))
            .json()["valid"],
        true
    );
    let delivery = twin
        .requests()
        .into_iter()
        .find(|r| r["type"] == "bourse.delivery")
        .unwrap();
    assert_eq!(delivery["purchaseId"], purchase["id"]);

    let id = purchase["id"].as_str().unwrap();
    let by_query = server.get(&format!(
        "/api/marketplace/purchases/{id}?api_key={}",
        buyer.key
    ));
    by_query.assert_status(200);
    assert_eq!(
        by_query.json()["delivery"]["content"],
        marker,
        "relayed live again"
    );
    let stranger = server.party("stranger");
    server
        .get_auth(&format!("/api/marketplace/purchases/{id}"), &stranger.key)
        .assert_error(403, "NOT_BUYER");
    server
        .get(&format!("/api/marketplace/purchases/{id}"))
        .assert_error(401, "UNAUTHENTICATED");
    server
        .get_auth("/api/marketplace/purchases/no-such", &buyer.key)
        .assert_error(404, "NOT_FOUND");
    server.stop();

    for file in ["bourse.db", "bourse.db-wal"] {
        if let Ok(bytes) = std::fs::read(data.join(file)) {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(marker),
                "{file} holds the deliverable"
            );
        }
    }
    let conn = rusqlite::Connection::open(data.join("bourse.db")).unwrap();
    let (amount, status, rail): (i64, String, String) = conn
        .query_row(
            "SELECT amount_cents, status, rail FROM ledger WHERE purchase_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (amount, status.as_str(), rail.as_str()),
        (0, "released", "checkout"),
        "a free sale is a released row of 0"
    );
}

#[test]
fn purchase_rules_own_listing_unavailable_paid_and_samples() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"x");
    let buyer = server.party("buyer");
    let free = list(&server, &seller, json!({}));
    server
        .buy(&seller, &free)
        .assert_error(403, "CANNOT_BUY_OWN_LISTING");
    let paid = list(&server, &seller, json!({"priceCents": 1500}));
    let checkout = server.buy(&buyer, &paid).json();
    assert_eq!(
        checkout["status"], "pending_payment",
        "a paid listing opens a checkout"
    );
    server.send_auth(
        "POST",
        &format!("/api/marketplace/listings/{free}/deactivate"),
        &seller.key,
        &json!({}),
    );
    server
        .buy(&buyer, &free)
        .assert_error(409, "LISTING_UNAVAILABLE");
    server
        .buy(&buyer, "00000000-0000-4000-8000-000000000000")
        .assert_error(404, "NOT_FOUND");
    let by_field = server.request(
        "POST",
        &format!("/api/marketplace/listings/{paid}/purchase"),
        &[],
        Some(
            json!({"api_key": buyer.key, "nonsense": 1})
                .to_string()
                .as_bytes(),
        ),
    );
    by_field.assert_error(400, "INVALID_ARGUMENT");

    let sample = server
        .get("/api/marketplace/listings?samples=only&vertical=music")
        .json()["listings"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bought = server.buy(&buyer, &sample).json();
    assert_eq!(bought["status"], "delivered");
    assert_eq!(bought["delivery"]["encoding"], "json");
    assert_eq!(bought["delivery"]["content"]["vertical"], "music");
}

#[test]
fn an_exclusive_listing_sells_once_even_to_concurrent_buyers_and_is_delisted() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"exclusive bytes");
    let listing = list(&server, &seller, json!({"listingType": "exclusive"}));
    let buyers: Vec<Party> = (0..6)
        .map(|i| server.party(&format!("buyer-{i}")))
        .collect();
    let threads: Vec<_> = buyers
        .into_iter()
        .map(|buyer| {
            let (base, listing) = (server.base.clone(), listing.clone());
            std::thread::spawn(move || {
                let client = crate::support::Client::new(&base);
                client
                    .send_auth(
                        "POST",
                        &format!("/api/marketplace/listings/{listing}/purchase"),
                        &buyer.key,
                        &json!({}),
                    )
                    .status
            })
        })
        .collect();
    let statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        5,
        "{statuses:?}"
    );
    let detail = server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .json();
    assert_eq!(detail["listing"]["exclusiveSold"], true);
    assert_eq!(detail["listing"]["active"], false);
    assert_eq!(detail["listing"]["soldCount"], 1);
    let history = server
        .get(&format!("/api/marketplace/listings/{listing}/history"))
        .json();
    let last = history["entries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["changes"]["active"],
        json!({"from": true, "to": false})
    );
    assert_eq!(last["reason"], "sold out");
    assert_eq!(
        server
            .post("/api/verify-receipt", &json!({"signed": last}))
            .json()["valid"],
        true
    );
    let reactivate = server.send_auth(
        "PATCH",
        &format!("/api/marketplace/listings/{listing}"),
        &seller.key,
        &json!({"active": true}),
    );
    reactivate.assert_error(409, "LISTING_SOLD_OUT");
}

#[test]
fn a_limited_listing_is_delisted_at_its_cap() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"limited");
    let listing = list(
        &server,
        &seller,
        json!({"listingType": "limited", "maxCopies": 2}),
    );
    let [a, b, c] = server.parties(["a", "b", "c"]);
    assert_eq!(server.buy(&a, &listing).status, 200);
    assert_eq!(
        server
            .get(&format!("/api/marketplace/listings/{listing}"))
            .json()["listing"]["active"],
        true
    );
    assert_eq!(server.buy(&b, &listing).status, 200);
    server
        .buy(&c, &listing)
        .assert_error(409, "LISTING_UNAVAILABLE");
    let detail = server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .json();
    assert_eq!(
        (
            detail["listing"]["soldCount"].clone(),
            detail["listing"]["active"].clone()
        ),
        (json!(2), json!(false))
    );
}

#[test]
fn a_failed_delivery_leaves_the_purchase_paid_and_the_next_poll_delivers() {
    let server = TestServer::start();
    let (seller, twin) = server.seller("seller", b"eventually");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, json!({}));
    drop(twin); // the seller's endpoint goes away
    let bought = server.buy(&buyer, &listing).json();
    assert_eq!(bought["status"], "paid");
    assert!(
        bought["deliveryError"]
            .as_str()
            .unwrap()
            .contains("deliverable")
    );
    assert_eq!(bought["delivery"], Value::Null);

    let back = SellerTwin::start(
        &server.base,
        b"eventually".to_vec(),
        "text/plain",
        Mode::Honest,
    );
    let verified = server.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        &seller.key,
        &json!({"url": back.url}),
    );
    verified.assert_status(200);
    let id = bought["id"].as_str().unwrap();
    let polled = server
        .get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
        .json();
    assert_eq!(polled["status"], "delivered");
    assert_eq!(polled["delivery"]["content"], "eventually");
}

#[test]
fn bytes_that_changed_since_listing_make_a_new_version_with_the_new_fingerprint() {
    let server = TestServer::start();
    let (seller, twin) = server.seller("seller", b"version one");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, json!({}));
    twin.set_deliverable(b"version two".to_vec());
    let bought = server.buy(&buyer, &listing).json();
    assert_eq!(bought["delivery"]["content"], "version two");
    let history = server
        .get(&format!("/api/marketplace/listings/{listing}/history"))
        .json();
    let last = history["entries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["changes"]["fingerprint"]["to"],
        bought["delivery"]["fingerprint"]
    );
    assert_eq!(
        server
            .get(&format!("/api/marketplace/listings/{listing}"))
            .json()["listing"]["fingerprint"],
        bought["delivery"]["fingerprint"]
    );
}

#[test]
fn only_the_buyer_of_a_delivered_purchase_rates_once_with_a_signed_attestation() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rated");
    let [buyer, other] = server.parties(["buyer", "other"]);
    let listing = list(&server, &seller, json!({}));
    let purchase = server.buy(&buyer, &listing).json();
    let purchase_id = purchase["id"].as_str().unwrap();
    let rate = |who: &Party, body: Value| {
        server.send_auth(
            "POST",
            &format!("/api/marketplace/listings/{listing}/rate"),
            &who.key,
            &body,
        )
    };

    rate(&buyer, json!({"purchase_id": purchase_id, "rating": 6}))
        .assert_error(400, "INVALID_ARGUMENT");
    rate(
        &buyer,
        json!({"purchase_id": purchase_id, "rating": 4, "comment": "x".repeat(2001)}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
    rate(&other, json!({"purchase_id": purchase_id, "rating": 5})).assert_error(403, "NOT_BUYER");
    rate(
        &buyer,
        json!({"purchase_id": "00000000-0000-4000-8000-000000000000", "rating": 5}),
    )
    .assert_error(404, "NOT_FOUND");

    let rated = rate(
        &buyer,
        json!({"purchase_id": purchase_id, "rating": 4, "comment": "accurate tides"}),
    );
    rated.assert_status(200);
    let attestation = rated.json()["rating"].clone();
    assert_eq!(attestation["verifiedBuyer"], true);
    assert_eq!(attestation["rating"], 4);
    assert!(
        !attestation.to_string().contains(&buyer.handle),
        "ratings are anonymous"
    );
    assert_eq!(
        server
            .post("/api/verify-receipt", &json!({"signed": attestation}))
            .json()["valid"],
        true
    );
    rate(&buyer, json!({"purchase_id": purchase_id, "rating": 5}))
        .assert_error(409, "ALREADY_RATED");

    let detail = server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .json();
    assert_eq!(detail["listing"]["ratingAvg"], 4.0);
    assert_eq!(detail["listing"]["ratingCount"], 1);
    assert_eq!(detail["ratings"][0]["comment"], "accurate tides");
    assert_eq!(detail["seller"]["ratingCount"], 1);
    assert_ne!(
        detail["listing"]["sellerReputation"], 2.4,
        "the seller's reputation moved"
    );
    let rated_only = server.get("/api/marketplace/listings?min_rating=4").json();
    assert_eq!(rated_only["total"], 1);
}
