//! The typed edges keep the order of refusals a caller sees: who may ask is settled before
//! what was asked is judged, business refusals keep their codes, and a fault counts against a
//! limit exactly when it did. Each check here is one a client can observe.

use serde_json::json;

use crate::support::TestServer;
use crate::support::mcp::{call, err};

const UNKNOWN_ID: &str = "00000000-0000-4000-8000-000000000000";

fn free_listing(
    server: &TestServer,
) -> (
    crate::support::Party,
    String,
    crate::seller_twin::SellerTwin,
) {
    let (seller, twin) = server.seller("seller", b"free bytes");
    let id = server.create_listing(
        &seller,
        json!({"title": "Tide tables", "description": "Hourly tides.", "priceCents": 0, "verticalSlug": "research-data", "preview": {"rows": 2}, "consent": true}),
        json!({}),
    );
    (seller, id, twin)
}

#[test]
fn a_listing_edit_is_judged_after_the_owner_check() {
    let server = TestServer::start();
    let (_seller, id, _twin) = free_listing(&server);
    let stranger = server.party("stranger");
    let path = format!("/api/marketplace/listings/{id}");
    server
        .send_auth("PATCH", &path, &stranger.key, &json!({"title": ""}))
        .assert_error(403, "NOT_OWNER");
    server
        .send_auth(
            "PATCH",
            &format!("/api/marketplace/listings/{UNKNOWN_ID}"),
            &stranger.key,
            &json!({"title": 5}),
        )
        .assert_error(404, "NOT_FOUND");
    // An unknown field is still refused first, named.
    server
        .send_auth("PATCH", &path, &stranger.key, &json!({"titel": "x"}))
        .assert_error(400, "INVALID_ARGUMENT");
}

#[test]
fn a_health_listing_without_its_consent_is_refused_for_the_consent_first() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"my own data");
    server
        .send_auth(
            "POST",
            "/api/marketplace/listings/health",
            &seller.key,
            &json!({"description": "x", "priceCents": 0, "consent": true, "titel": "typo"}),
        )
        .assert_error(422, "HEALTH_CONSENT_REQUIRED");
    // The MCP twin reads the same request the same way: consent first, then the rest.
    err(
        &server,
        Some(&seller.key),
        "list_health_data",
        json!({"description": "x", "price_cents": 0, "consent": true, "titel": "typo"}),
        "HEALTH_CONSENT_REQUIRED",
    );
    // Picking the vertical is refused on both faces, each naming the field its own way.
    let picked = err(
        &server,
        Some(&seller.key),
        "list_health_data",
        json!({"title": "t", "description": "x", "price_cents": 0, "consent": true, "vertical": "general"}),
        "INVALID_ARGUMENT",
    );
    assert!(
        picked["message"].as_str().unwrap().contains("`vertical`"),
        "{picked}"
    );
    let picked = server.send_auth(
        "POST",
        "/api/marketplace/listings/health",
        &seller.key,
        &json!({"title": "t", "description": "x", "priceCents": 0, "consent": true, "verticalSlug": "general"}),
    );
    picked.assert_error(400, "INVALID_ARGUMENT");
    let message = picked.json()["error"]["message"].clone();
    assert!(
        message.as_str().unwrap().contains("`verticalSlug`"),
        "{message}"
    );
}

#[test]
fn a_purchase_settles_who_buys_before_what_is_asked() {
    let server = TestServer::start();
    let (_seller, id, _twin) = free_listing(&server);
    let path = format!("/api/marketplace/listings/{id}/purchase");
    server
        .send_auth("POST", &path, "svc_live_not_a_key", &json!({"foo": 1}))
        .assert_error(401, "UNAUTHENTICATED");
    // Whether the health terms are met is judged for personal health data only; their shapes
    // always (an empty string is never a value, attestations are booleans).
    let buyer = server.party("buyer");
    for body in [
        json!({"buyer_intended_use": ""}),
        json!({"buyer_intended_use": 7}),
        json!({"buyer_attestation": {"acceptUseTerms": "yes"}}),
        json!({"buyer_attestation": true}),
    ] {
        server
            .send_auth("POST", &path, &buyer.key, &body)
            .assert_error(400, "INVALID_ARGUMENT");
    }
    let bought = server
        .send_auth(
            "POST",
            &path,
            &buyer.key,
            &json!({"buyer_intended_use": "spying"}),
        )
        .ok();
    assert_eq!(bought["status"], "delivered");
    // A purchase read with the buyer's key ignores a purchase token beside it.
    let purchase = bought["id"].as_str().unwrap();
    let read = server.get_auth(
        &format!("/api/marketplace/purchases/{purchase}?purchase_token=%20"),
        &buyer.key,
    );
    assert_eq!(read.ok()["id"], purchase);
    // Without a key, a malformed id is still first a missing credential.
    server
        .get("/api/marketplace/purchases/abc")
        .assert_error(401, "UNAUTHENTICATED");
}

#[test]
fn malformed_json_is_refused_before_the_inquiry_limit_counts() {
    let server = TestServer::start();
    for _ in 0..25 {
        server
            .request(
                "POST",
                "/api/inquiries",
                &[("content-type", "application/json")],
                Some(b"{not json"),
            )
            .assert_error(400, "INVALID_JSON");
    }
    server
        .post(
            "/api/inquiries",
            &json!({"subject": "Hello", "message": "Still counted from zero."}),
        )
        .expect(201);
}

#[test]
fn mcp_tools_enforce_their_schema_and_name_arguments_their_way() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"bytes");
    let key = Some(seller.key.as_str());
    let missing = err(
        &server,
        key,
        "sell_data",
        json!({"title": "t", "description": "d", "price_cents": 0, "consent": true}),
        "INVALID_ARGUMENT",
    );
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .contains("`preview` is required"),
        "{missing}"
    );
    let spelled = err(
        &server,
        key,
        "sell_data",
        json!({"title": "t", "description": "d", "preview": {}, "priceCents": 0, "consent": true}),
        "INVALID_ARGUMENT",
    );
    let message = spelled["message"].as_str().unwrap();
    assert!(
        message.contains("unknown argument `priceCents`")
            && message.contains("this tool calls it `price_cents`"),
        "{message}"
    );
    // An empty string is never a value of a JSON member, so an empty browse choice or search
    // is refused; null means the default, as an empty query parameter does. Text is a string.
    for arguments in [
        json!({"sort": ""}),
        json!({"type": ""}),
        json!({"category": ""}),
        json!({"q": ""}),
        json!({"q": 7}),
    ] {
        err(
            &server,
            None,
            "browse_marketplace",
            arguments,
            "INVALID_ARGUMENT",
        );
    }
    let result = call(
        &server,
        None,
        "browse_marketplace",
        json!({"sort": null, "type": null, "q": null}),
    );
    assert_eq!(result["isError"], false, "{result}");
}

#[test]
fn a_member_named_twice_is_refused_everywhere() {
    let server = TestServer::start();
    let duplicate = br#"{"name": "first", "name": "second"}"#;
    server
        .request(
            "POST",
            "/api/agents/register",
            &[("content-type", "application/json")],
            Some(duplicate),
        )
        .assert_error(400, "DUPLICATE_MEMBER");
    assert_eq!(
        server.get("/api/agents").json()["total"],
        0,
        "nothing written"
    );
    let [a, b] = server.parties(["a", "b"]);
    let auth = format!("Bearer {}", a.key);
    let sent = server.request(
        "POST",
        &format!("/api/agents/{}/messages", b.handle),
        &[
            ("content-type", "application/json"),
            ("authorization", &auth),
        ],
        Some(br#"{"clientMessageId": "d", "body": "first", "body": "second"}"#),
    );
    sent.assert_error(400, "DUPLICATE_MEMBER");
    // Nested objects too.
    server
        .request(
            "POST",
            "/api/services/request",
            &[("content-type", "application/json")],
            Some(br#"{"what": "x", "budget": {"amountCents": 1, "amountCents": 2}}"#),
        )
        .assert_error(400, "DUPLICATE_MEMBER");
    // MCP: two `method` members would let a reader run another method than bourse runs.
    let rpc = server.request(
        "POST",
        "/api/mcp",
        &[
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", &auth),
        ],
        Some(br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "method": "tools/call", "params": {}}"#),
    );
    assert_eq!(rpc.status, 400, "{}", rpc.text());
    assert_eq!(
        rpc.json()["error"]["data"]["code"],
        "DUPLICATE_MEMBER",
        "{}",
        rpc.text()
    );
}

#[test]
fn a_json_body_must_be_sent_as_json() {
    let server = TestServer::start();
    let body = br#"{"name": "typed"}"#;
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        server
            .request(
                "POST",
                "/api/agents/register",
                &[("content-type", content_type)],
                Some(body),
            )
            .assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    }
    assert_eq!(
        server.get("/api/agents").json()["total"],
        0,
        "nothing written"
    );
    server
        .request(
            "POST",
            "/api/agents/register",
            &[("content-type", "application/json; charset=utf-8")],
            Some(body),
        )
        .expect(201);
    // A missing Content-Type is tolerated.
    server
        .request(
            "POST",
            "/api/agents/register",
            &[],
            Some(br#"{"name": "bare"}"#),
        )
        .expect(201);
}

#[test]
fn long_text_for_people_keeps_its_line_breaks_and_refuses_other_control_characters() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"bytes");
    let listing = |description: &str| {
        server.send_auth(
            "POST",
            "/api/marketplace/listings",
            &seller.key,
            &json!({"title": "Soil survey", "description": description, "priceCents": 0, "verticalSlug": "research-data", "preview": {}, "consent": true}),
        )
    };
    let created = listing("Line one.\nLine two.\tTabbed.").expect(201);
    assert_eq!(
        created["listing"]["description"],
        "Line one.\nLine two.\tTabbed."
    );
    let refused = listing("Bell \u{7} rings");
    refused.assert_error(400, "INVALID_ARGUMENT");
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`description`")
    );
    // A title stays on one line.
    server
        .send_auth(
            "POST",
            "/api/marketplace/listings",
            &seller.key,
            &json!({"title": "Two\nlines", "description": "d", "priceCents": 0, "verticalSlug": "research-data", "preview": {}, "consent": true}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    // A rating comment too may span lines.
    let id = created["listing"]["id"].as_str().unwrap();
    let buyer = server.party("buyer");
    let bought = server.buy(&buyer, id).ok();
    let rated = server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{id}/rate"),
            &buyer.key,
            &json!({"purchase_id": bought["id"], "rating": 5, "comment": "Clean data.\nWould buy again."}),
        )
        .ok();
    assert_eq!(rated["rating"]["comment"], "Clean data.\nWould buy again.");
}

#[test]
fn display_names_are_normal_visible_and_not_look_alikes() {
    let server = TestServer::start();
    let register = |name: &str, display: &str| {
        server.post(
            "/api/agents/register",
            &json!({"name": name, "displayName": display}),
        )
    };
    let first = register("a", "Cafe\u{301} Data").expect(201);
    assert_eq!(first["displayName"], "Caf\u{e9} Data", "stored in NFC");
    // The same name in another normal form, another case, or with look-alike letters.
    for look_alike in [
        "Caf\u{e9} Data",
        "cafe\u{301} data",
        "C\u{430}f\u{e9} D\u{430}t\u{430}",
    ] {
        register("b", look_alike).assert_error(409, "DISPLAY_NAME_TAKEN");
    }
    // Capitals confusable with small letters, and the platform's own house seller.
    register("p", "PayPal").expect(201);
    register("q", "PayPaI").assert_error(409, "DISPLAY_NAME_TAKEN");
    register("h", "Marketplace reference samples").assert_error(409, "DISPLAY_NAME_TAKEN");
    for invisible in ["Zero\u{200B}Width", "Right\u{202E}Left", "Private\u{E000}"] {
        register("c", invisible).assert_error(422, "INVALID_DISPLAY_NAME");
    }
    // Lookup finds the stored form from another normal form.
    let found = server
        .get("/api/agents/lookup?name=Cafe%CC%81%20Data")
        .json();
    assert_eq!(found["agents"].as_array().unwrap().len(), 1, "{found}");
    // An edit is held to the same rule; keeping one's own name is fine.
    let other = server.party("other");
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            &other.key,
            &json!({"displayName": "caf\u{e9} data"}),
        )
        .assert_error(409, "DISPLAY_NAME_TAKEN");
    let key = first["apiKey"].as_str().unwrap();
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            key,
            &json!({"displayName": "Caf\u{e9} Data", "email": "a@b.example"}),
        )
        .ok();
}
