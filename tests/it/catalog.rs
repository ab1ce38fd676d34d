//! The catalogue's listings: delivery endpoints and their verification, creating a listing
//! (every spec field, the live fingerprint, the signed receipt), validation, screening, and
//! owner-only edits as verifiable versions. Browsing is in `catalog_browse.rs`.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::seller_twin::{Mode, SellerTwin};
use crate::support::TestServer;
use crate::support::catalog::{create, listing_body, seller, verify};

fn sha256(bytes: &[u8]) -> String {
    format!(
        "sha256:{}",
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

#[test]
fn creating_a_listing_needs_a_verified_delivery_endpoint() {
    let server = TestServer::start();
    let agent = server.register("no-endpoint");
    let key = agent["apiKey"].as_str().unwrap();
    server
        .send_auth(
            "POST",
            "/api/marketplace/listings",
            key,
            &listing_body("Regional prices", 500),
        )
        .assert_error(409, "DELIVERY_ENDPOINT_REQUIRED");
    let status = server.get_auth("/api/sell/delivery-endpoint", key).json();
    assert_eq!(status["verified"], false);
    server
        .get("/api/sell/delivery-endpoint")
        .assert_error(401, "UNAUTHENTICATED");
}

#[test]
fn endpoint_verification_succeeds_with_the_echo_and_fails_otherwise() {
    let server = TestServer::start();
    let agent = server.register("verifier");
    let key = agent["apiKey"].as_str().unwrap();
    for mode in [Mode::WrongEcho, Mode::Status(500), Mode::Redirect] {
        let twin = SellerTwin::start(&server.base, b"x".to_vec(), "text/plain", mode);
        let refused = server.send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            key,
            &json!({"url": twin.url}),
        );
        refused.assert_error(422, "ENDPOINT_VERIFICATION_FAILED");
        assert_eq!(
            server.get_auth("/api/sell/delivery-endpoint", key).json()["verified"],
            false
        );
    }
    let twin = SellerTwin::start(&server.base, b"x".to_vec(), "text/plain", Mode::Honest);
    let verified = server.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        key,
        &json!({"url": twin.url}),
    );
    verified.assert_status(200);
    let status = server.get_auth("/api/sell/delivery-endpoint", key).json();
    assert_eq!(status["verified"], true);
    assert_eq!(
        status["url"].as_str().unwrap().trim_end_matches('/'),
        twin.url.trim_end_matches('/')
    );
    let request = &twin.requests()[0];
    assert_eq!(request["type"], "bourse.verify");
    assert_eq!(request["sellerHandle"], agent["handle"]);
    assert!(
        request["signature"]["signature"].is_string(),
        "the challenge is signed"
    );

    // The api_key body field works as well as the Bearer header.
    let by_field = server.request(
        "PUT",
        "/api/sell/delivery-endpoint",
        &[],
        Some(
            json!({"url": twin.url, "api_key": key})
                .to_string()
                .as_bytes(),
        ),
    );
    by_field.assert_status(200);
}

#[test]
fn a_verified_endpoint_url_belongs_to_one_seller() {
    let server = TestServer::start();
    let owner = seller(&server, "owner", b"the owner's data");
    let mallory = server.register("mallory");
    let taken = server.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        mallory["apiKey"].as_str().unwrap(),
        &json!({"url": owner.twin.url}),
    );
    taken.assert_error(409, "ENDPOINT_IN_USE");
    // The owner can verify it again.
    let again = server.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        &owner.key,
        &json!({"url": owner.twin.url}),
    );
    again.assert_status(200);
}

#[test]
fn private_and_loopback_destinations_are_refused_without_the_loopback_flag() {
    let server = TestServer::start_with(|config| config.allow_loopback_outbound = false);
    let agent = server.register("ssrf");
    let key = agent["apiKey"].as_str().unwrap();
    for url in [
        "https://127.0.0.1/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::1]:8443/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.8/",
        "https://localhost/hook",
    ] {
        let refused = server.send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            key,
            &json!({"url": url}),
        );
        refused.assert_error(422, "DESTINATION_REFUSED");
    }
    for url in [
        "http://seller.example.com/",
        "https://user:pw@seller.example.com/",
        "not a url",
    ] {
        let refused = server.send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            key,
            &json!({"url": url}),
        );
        refused.assert_error(400, "INVALID_ARGUMENT");
    }
}

#[test]
fn a_created_listing_has_every_spec_field_a_live_fingerprint_and_a_signed_receipt() {
    let server = TestServer::start();
    let deliverable = b"region,value\nnorth,1\nsouth,2\n";
    let seller = seller(&server, "lister", deliverable);
    let mut body = listing_body("Regional prices 2026", 1500);
    body["images"] = json!(["https://cdn.example.com/a.png"]);
    body["dataFormat"] = json!("text/csv");
    body["contextTags"] = json!(["prices", "regional"]);
    let created = create(&server, &seller, &body);
    let listing = &created["listing"];
    assert_eq!(
        listing["fingerprint"],
        sha256(deliverable),
        "the deliverable is hashed as fetched"
    );
    assert_eq!(listing["version"], 1);
    let fetch = seller
        .twin
        .requests()
        .into_iter()
        .find(|r| r["type"] == "bourse.fingerprint")
        .unwrap();
    assert_eq!(fetch["listingId"], listing["id"]);
    assert_eq!(fetch["sellerHandle"], seller.handle);

    let receipt = &created["receipt"];
    assert_eq!(receipt["listingId"], listing["id"]);
    assert_eq!(receipt["version"], 1);
    assert_eq!(receipt["changes"]["priceCents"]["to"], 1500);
    assert_eq!(verify(&server, receipt)["valid"], true);

    let id = listing["id"].as_str().unwrap();
    let detail = server.get(&format!("/api/marketplace/listings/{id}"));
    let detail = detail.expect(200);
    let listing = &detail["listing"];
    let expect_type = |field: &str, check: fn(&Value) -> bool| {
        assert!(
            listing.get(field).is_some_and(check),
            "listing.{field} = {:?}",
            listing.get(field)
        );
    };
    let string = |v: &Value| v.is_string();
    let number = |v: &Value| v.is_number();
    let integer = |v: &Value| v.is_i64();
    let boolean = |v: &Value| v.is_boolean();
    let nullable = |_: &Value| true;
    for field in [
        "id",
        "sellerId",
        "sellerName",
        "verticalSlug",
        "verticalName",
        "verticalIcon",
        "verticalCategory",
        "pricingType",
        "title",
        "description",
        "listingType",
        "fingerprint",
        "createdAt",
        "modificationHistoryUrl",
        "sellerKind",
    ] {
        expect_type(field, string);
    }
    expect_type("sellerReputation", number);
    for field in [
        "ratingCount",
        "priceCents",
        "soldCount",
        "purchaseCount",
        "viewCount",
        "version",
        "modificationCount",
    ] {
        expect_type(field, integer);
    }
    for field in [
        "betaFree",
        "active",
        "exclusiveSold",
        "isSample",
        "healthConsentVerified",
    ] {
        expect_type(field, boolean);
    }
    for field in [
        "ratingAvg",
        "betaNote",
        "maxCopies",
        "lastModified",
        "subcategory",
        "dataDate",
        "dataFormat",
        "sellerState",
        "demographics",
        "contextTags",
        "dataOrigin",
        "collectionMethod",
        "sourceAttribution",
        "deidentificationLevel",
        "authorizedUses",
    ] {
        expect_type(field, nullable);
    }
    expect_type("images", |v| v.is_array());
    expect_type("sellerBadges", |v| {
        v.as_array().is_some_and(|a| a.contains(&json!("verified")))
    });
    let seller_name = listing["sellerName"].as_str().unwrap();
    assert!(
        seller_name.len() == 8
            && seller_name.starts_with("S-")
            && seller_name[2..].bytes().all(|b| b.is_ascii_digit())
    );
    assert_eq!(listing["pricingType"], "fixed");
    assert_eq!(listing["verticalCategory"], "data");
    assert_eq!(listing["dataFormat"], "text/csv");
    assert_eq!(
        listing["modificationHistoryUrl"],
        format!("/api/marketplace/listings/{id}/history")
    );
    assert_eq!(
        detail["preview"],
        json!({"columns": ["region", "value"], "rows": 2})
    );
    for field in [
        "id",
        "displayName",
        "reputation",
        "ratingCount",
        "totalSalesCount",
    ] {
        assert!(detail["seller"].get(field).is_some(), "seller.{field}");
    }
    assert!(detail["ratings"].is_array());
    let license = &detail["license"];
    assert_eq!(license["type"], "data-license");
    assert!(license["permissions"].as_array().unwrap().len() >= 3);
    let restrictions = license["restrictions"].to_string();
    assert!(
        restrictions.contains("resell")
            && restrictions.contains("re-list")
            && restrictions.contains("redistribute")
    );

    // A second listing by the same seller keeps the same public seller code.
    let second = create(&server, &seller, &listing_body("Regional wages", 900));
    assert_eq!(second["listing"]["sellerName"], seller_name);
    server
        .get("/api/marketplace/listings/not-a-uuid")
        .assert_error(404, "NOT_FOUND");
    server
        .get("/api/marketplace/listings/00000000-0000-4000-8000-000000000000")
        .assert_error(404, "NOT_FOUND");
}

#[test]
fn create_validates_its_fields() {
    let server = TestServer::start();
    let seller = seller(&server, "validator", b"x");
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (
            json!({"title": "t", "description": "d", "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "priceCents",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": -1, "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "priceCents",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1.5, "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "priceCents",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1, "listingType": "limited", "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "maxCopies",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1, "listingType": "rare", "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "listingType",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1, "verticalSlug": "nope", "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "verticalSlug",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1, "preview": {"blob": "x".repeat(5000)}, "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "preview",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1, "images": ["http://x.example/a.png"], "consent": true}),
            400,
            "INVALID_ARGUMENT",
            "images",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1}),
            422,
            "CONSENT_REQUIRED",
            "consent",
        ),
        (
            json!({"title": "t", "description": "d", "priceCents": 1, "consent": false}),
            422,
            "CONSENT_REQUIRED",
            "consent",
        ),
        (
            json!({"title": "My records", "description": "d", "priceCents": 1, "verticalSlug": "personal-health-data", "consent": true}),
            422,
            "HEALTH_CONSENT_REQUIRED",
            "consent",
        ),
    ];
    for (body, status, code, mention) in cases {
        let response = server.send_auth("POST", "/api/marketplace/listings", &seller.key, &body);
        response.assert_error(status, code);
        let message = response.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains(mention), "{body} → {message}");
    }
    let with_copies = create(
        &server,
        &seller,
        &json!({"title": "Limited drop", "description": "d", "priceCents": 100, "listingType": "limited", "maxCopies": 3.0, "consent": true}),
    );
    assert_eq!(with_copies["listing"]["maxCopies"], 3);
    let stats = server.get("/api/stats").json();
    assert_eq!(stats["totalListings"], 1, "refused creations write nothing");
}

#[test]
fn prohibited_content_is_refused_and_ordinary_text_passes() {
    let server = TestServer::start();
    let seller = seller(&server, "screened", b"x");
    let refused = [
        ("title", json!("Huge password dump 2026")),
        (
            "description",
            json!("AWS key AKIAIOSFODNN7EXAMPLE with full access"),
        ),
        ("title", json!("Windows 11 product keys, lifetime")),
        ("title", json!("Steam game codes bundle")),
        ("description", json!("Unused gift card codes")),
        (
            "description",
            json!("Patient records exported from a clinic"),
        ),
        (
            "preview",
            json!({"sample": "-----BEGIN OPENSSH PRIVATE KEY-----"}),
        ),
        ("dataOrigin", json!("combo list from a breach")),
    ];
    for (field, value) in refused {
        let mut body = listing_body("Clean title", 100);
        body[field] = value.clone();
        let response = server.send_auth("POST", "/api/marketplace/listings", &seller.key, &body);
        response.assert_error(422, "PROHIBITED_CONTENT");
        assert!(
            response.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains(field),
            "{field}: {value}"
        );
    }
    for title in [
        "Market research on password managers",
        "Software license management survey",
        "Healthcare market analysis 2026",
        "Gift economies: an anthropology reading list",
    ] {
        create(&server, &seller, &listing_body(title, 100));
    }
}

#[test]
fn only_the_owner_edits_and_every_edit_is_a_verifiable_version() {
    let server = TestServer::start();
    let owner = seller(&server, "owner", b"v1 data");
    let created = create(&server, &owner, &listing_body("Port traffic", 2500));
    let id = created["listing"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/marketplace/listings/{id}");

    let stranger = server.register("stranger");
    let stranger_key = stranger["apiKey"].as_str().unwrap();
    server
        .send_auth("PATCH", &path, stranger_key, &json!({"priceCents": 1}))
        .assert_error(403, "NOT_OWNER");
    server
        .send_auth(
            "POST",
            &format!("{path}/deactivate"),
            stranger_key,
            &json!({}),
        )
        .assert_error(403, "NOT_OWNER");
    server
        .request("PATCH", &path, &[], Some(b"{\"priceCents\": 1}"))
        .assert_error(401, "UNAUTHENTICATED");

    let edit = server.send_auth(
        "PATCH",
        &path,
        &owner.key,
        &json!({"priceCents": 1900, "title": "Port traffic v2", "reason": "refresh"}),
    );
    let edit = edit.expect(200);
    assert_eq!(edit["listing"]["version"], 2);
    assert_eq!(edit["listing"]["modificationCount"], 1);
    assert!(edit["listing"]["lastModified"].is_string());
    assert_eq!(
        edit["receipt"]["changes"],
        json!({
            "priceCents": {"from": 2500, "to": 1900},
            "title": {"from": "Port traffic", "to": "Port traffic v2"}
        })
    );
    assert_eq!(edit["receipt"]["reason"], "refresh");

    // The api_key body field authenticates as well.
    let via_field = server.request(
        "PATCH",
        &path,
        &[],
        Some(
            json!({"api_key": owner.key, "preview": {"rows": 3}})
                .to_string()
                .as_bytes(),
        ),
    );
    via_field.assert_status(200);
    let preview_change = &via_field.json()["receipt"]["changes"]["preview"];
    assert!(
        preview_change["from"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"),
        "previews appear as fingerprints only"
    );
    assert!(!preview_change.to_string().contains("rows"));

    let noop = server
        .send_auth(
            "PATCH",
            &path,
            &owner.key,
            &json!({"priceCents": 1900, "title": "Port traffic v2"}),
        )
        .json();
    assert_eq!(noop["listing"]["version"], 3);
    assert_eq!(noop["receipt"], Value::Null, "a no-op makes no version");

    owner.twin.set_deliverable(b"v2 data".to_vec());
    let refreshed = server
        .send_auth(
            "PATCH",
            &path,
            &owner.key,
            &json!({"refreshFingerprint": true}),
        )
        .json();
    assert_eq!(refreshed["listing"]["fingerprint"], sha256(b"v2 data"));
    assert_eq!(
        refreshed["receipt"]["changes"]["fingerprint"],
        json!({"from": sha256(b"v1 data"), "to": sha256(b"v2 data")})
    );

    let deactivated = server
        .send_auth(
            "POST",
            &format!("{path}/deactivate"),
            &owner.key,
            &json!({"reason": "paused"}),
        )
        .json();
    assert_eq!(deactivated["listing"]["active"], false);
    assert_eq!(
        deactivated["receipt"]["changes"]["active"],
        json!({"from": true, "to": false})
    );
    let again = server
        .send_auth(
            "POST",
            &format!("{path}/deactivate"),
            &owner.key,
            &json!({}),
        )
        .json();
    assert_eq!(again["receipt"], Value::Null);

    let history = server.get(&format!("{path}/history"));
    let history = history.expect(200);
    let entries = history["entries"].as_array().unwrap();
    assert_eq!(
        entries.len(),
        5,
        "created, edit, preview, fingerprint, deactivate"
    );
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(entry["version"], i + 1);
        assert_eq!(entry["listingId"], id.as_str());
        let verdict = verify(&server, entry);
        assert_eq!(verdict["valid"], true, "entry {i}: {verdict}");
    }
    let mut forged = entries[1].clone();
    forged["changes"]["priceCents"]["to"] = json!(1);
    assert_eq!(verify(&server, &forged)["valid"], false);
    server
        .get("/api/marketplace/listings/00000000-0000-4000-8000-000000000000/history")
        .assert_error(404, "NOT_FOUND");
}
