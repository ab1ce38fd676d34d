//! The MCP marketplace tools over raw JSON-RPC: for every tool a success case and its main
//! failure, the Bearer/`api_key` rules, and REST–MCP parity for the same operation.

use serde_json::{Value, json};

use crate::seller_twin::{Mode, SellerTwin};
use crate::support::TestServer;
use crate::support::mcp::{MCP, call, err, ok, rpc};

const MARKET_TOOLS: [&str; 25] = [
    "about_marketplace",
    "list_verticals",
    "register_agent",
    "get_platform_stats",
    "submit_idea",
    "contact_marketplace",
    "become_seller",
    "set_delivery_endpoint",
    "sell_data",
    "list_health_data",
    "browse_marketplace",
    "preview_listing",
    "buy_data",
    "get_purchase",
    "rate_listing",
    "update_listing",
    "deactivate_listing",
    "listing_history",
    "seller_dashboard",
    "marketplace_stats",
    "set_spending_policy",
    "get_spending",
    "mint_restricted_key",
    "list_restricted_keys",
    "revoke_restricted_key",
];

const PUBLIC_TOOLS: [&str; 10] = [
    "about_marketplace",
    "list_verticals",
    "register_agent",
    "get_platform_stats",
    "submit_idea",
    "contact_marketplace",
    "browse_marketplace",
    "preview_listing",
    "listing_history",
    "marketplace_stats",
];

fn key_of(server: &TestServer, name: &str) -> String {
    server.register(name)["apiKey"].as_str().unwrap().to_owned()
}

/// A seller with a verified endpoint (set over MCP) and connected payouts.
fn seller(server: &TestServer, name: &str) -> (String, SellerTwin) {
    let key = key_of(server, name);
    let twin = SellerTwin::start(
        &server.base,
        b"mcp deliverable".to_vec(),
        "text/plain",
        Mode::Honest,
    );
    ok(
        server,
        Some(&key),
        "set_delivery_endpoint",
        json!({ "url": twin.url }),
    );
    server.onboard(&key);
    (key, twin)
}

fn sell(server: &TestServer, key: &str, price: i64) -> String {
    let created = ok(
        server,
        Some(key),
        "sell_data",
        json!({
            "title": "Freight rates",
            "description": "Weekly freight rates by lane.",
            "preview": { "lanes": 12 },
            "price_cents": price,
            "consent": true,
            "vertical": "trucking",
        }),
    );
    assert_eq!(created["listing"]["priceCents"], price, "{created}");
    created["listing"]["id"].as_str().unwrap().to_owned()
}

fn without_provenance(mut value: Value) -> Value {
    if let Value::Object(object) = &mut value {
        object.remove("provenance");
    }
    value
}

#[test]
fn every_marketplace_tool_is_listed_with_its_required_arguments() {
    let server = TestServer::start();
    let tools = rpc(&server, None, "tools/list", json!({})).ok()["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names[4..], MARKET_TOOLS);
    let required = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"]["required"].clone()
    };
    assert_eq!(required("register_agent"), json!(["name"]));
    assert_eq!(required("submit_idea"), json!(["title", "description"]));
    assert_eq!(
        required("contact_marketplace"),
        json!(["subject", "message"])
    );
    assert_eq!(
        required("sell_data"),
        json!(["title", "description", "preview", "price_cents", "consent"])
    );
    assert_eq!(
        required("rate_listing"),
        json!(["listing_id", "purchase_id", "rating"])
    );
    assert_eq!(required("preview_listing"), json!(["listing_id"]));
    assert_eq!(required("get_purchase"), json!(["purchase_id"]));
    for tool in &tools[4..] {
        let description = tool["description"].as_str().unwrap();
        assert!(description.len() > 20, "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        let name = tool["name"].as_str().unwrap();
        let has_key = tool["inputSchema"]["properties"].get("api_key").is_some();
        assert_eq!(has_key, !PUBLIC_TOOLS.contains(&name), "{tool}");
        if has_key {
            assert!(description.contains("Bearer"), "{tool}");
        }
    }
    let manifest = server.get(MCP).json();
    assert_eq!(manifest["version"], "1.0.0");
    assert_eq!(
        manifest["tools"].as_array().unwrap().len(),
        4 + MARKET_TOOLS.len()
    );
}

#[test]
fn public_tools_work_without_a_key_and_the_others_are_401() {
    let server = TestServer::start();
    let about = ok(&server, None, "about_marketplace", json!({}));
    assert_eq!(about["fees"]["bands"][1]["bps"], 500, "{about}");
    assert!(
        about["links"]["llmsTxt"]
            .as_str()
            .unwrap()
            .ends_with("/llms.txt")
    );
    assert!(
        about["links"]["openapi"]
            .as_str()
            .unwrap()
            .ends_with("/openapi.json")
    );
    assert!(about["counts"]["verticals"].as_u64().unwrap() > 0);
    err(
        &server,
        None,
        "about_marketplace",
        json!({"x": 1}),
        "INVALID_ARGUMENT",
    );

    let verticals = ok(&server, None, "list_verticals", json!({}));
    assert_eq!(
        verticals,
        without_provenance(server.get("/api/verticals").json())
    );
    err(
        &server,
        None,
        "list_verticals",
        json!({"x": 1}),
        "INVALID_ARGUMENT",
    );

    let stats = ok(&server, None, "get_platform_stats", json!({}));
    assert_eq!(stats["platform"], "bourse");
    err(
        &server,
        None,
        "get_platform_stats",
        json!({"x": 1}),
        "INVALID_ARGUMENT",
    );
    let stats = ok(&server, None, "marketplace_stats", json!({}));
    assert_eq!(stats["platformFeeCents"], 0);
    err(
        &server,
        None,
        "marketplace_stats",
        json!({"x": 1}),
        "INVALID_ARGUMENT",
    );

    for name in MARKET_TOOLS
        .iter()
        .filter(|name| !PUBLIC_TOOLS.contains(name))
    {
        let response = rpc(
            &server,
            None,
            "tools/call",
            json!({ "name": name, "arguments": { "listing_id": "x" } }),
        );
        assert_eq!(response.status, 401, "{name}: {}", response.text());
        assert!(response.header("www-authenticate").is_some());
        assert_eq!(response.json()["error"]["data"]["code"], "UNAUTHENTICATED");
    }
    // A bad Bearer key is refused even for a public tool.
    let response = rpc(
        &server,
        Some("svc_live_unknown"),
        "tools/call",
        json!({ "name": "about_marketplace", "arguments": {} }),
    );
    response.assert_status(401);
}

#[test]
fn register_agent_registers_and_is_rate_limited() {
    let server = TestServer::start();
    let agent = ok(
        &server,
        None,
        "register_agent",
        json!({"name": "mcp-reg", "email": "a@b.example"}),
    );
    let key = agent["apiKey"].as_str().unwrap();
    assert!(key.starts_with("svc_live_"));
    let me = server.get_auth("/api/agents/me", key).json();
    assert_eq!(me["handle"], agent["handle"]);
    err(
        &server,
        None,
        "register_agent",
        json!({}),
        "INVALID_ARGUMENT",
    );
    // The registration limit (per IP) is shared with REST.
    let mut limited = false;
    for i in 0..15 {
        let result = call(
            &server,
            None,
            "register_agent",
            json!({"name": format!("r{i}")}),
        );
        if result["isError"] == true {
            assert_eq!(
                result["structuredContent"]["error"]["code"], "RATE_LIMITED",
                "{result}"
            );
            assert!(result["structuredContent"]["error"]["retryAfterSecs"].is_u64());
            limited = true;
            break;
        }
    }
    assert!(
        limited,
        "the registration rate limit applies to register_agent"
    );
}

#[test]
fn ideas_and_contact_messages_are_stored_with_an_id() {
    let server = TestServer::start();
    let idea = ok(
        &server,
        None,
        "submit_idea",
        json!({"title": "Weather data", "description": "Hourly weather by zip.", "impact": "farmers", "submittedBy": "bot"}),
    );
    assert_eq!(idea["kind"], "idea");
    assert_eq!(idea["status"], "open");
    assert_eq!(idea["id"].as_str().unwrap().len(), 36, "{idea}");
    err(
        &server,
        None,
        "submit_idea",
        json!({"title": "no description"}),
        "INVALID_ARGUMENT",
    );

    let key = key_of(&server, "contact");
    let contact = ok(
        &server,
        Some(&key),
        "contact_marketplace",
        json!({"subject": "Hello", "message": "A question.", "name": "Ann", "email": "ann@example.com"}),
    );
    assert_eq!(contact["kind"], "contact");
    assert_ne!(contact["id"], idea["id"]);
    err(
        &server,
        None,
        "contact_marketplace",
        json!({"subject": "Hi", "message": "x", "email": "not-an-email"}),
        "INVALID_ARGUMENT",
    );
    // The public tools take no key argument.
    err(
        &server,
        Some(&key),
        "contact_marketplace",
        json!({"subject": "Hi", "message": "x", "api_key": key}),
        "INVALID_ARGUMENT",
    );
}

#[test]
fn ideas_and_contact_share_the_inquiry_limit_with_rest() {
    let server = TestServer::start();
    for i in 0..10 {
        ok(
            &server,
            None,
            "submit_idea",
            json!({"title": format!("Idea {i}"), "description": "More datasets."}),
        );
        server
            .post(
                "/api/inquiries",
                &json!({"subject": format!("Q {i}"), "message": "A question."}),
            )
            .assert_status(201);
    }
    let limited = err(
        &server,
        None,
        "contact_marketplace",
        json!({"subject": "One more", "message": "A question."}),
        "RATE_LIMITED",
    );
    assert_eq!(limited["status"], 429);
    server
        .post(
            "/api/inquiries",
            &json!({"subject": "One more", "message": "A question."}),
        )
        .assert_error(429, "RATE_LIMITED");
}

#[test]
fn a_seller_onboards_lists_edits_and_withdraws_over_mcp() {
    let server = TestServer::start();
    let key = key_of(&server, "mcp-seller");
    // sell_data before a delivery endpoint is refused.
    let no_endpoint = json!({"title": "Rates", "description": "Weekly rates.", "preview": {}, "price_cents": 0, "consent": true});
    err(
        &server,
        Some(&key),
        "sell_data",
        no_endpoint,
        "DELIVERY_ENDPOINT_REQUIRED",
    );

    let link = ok(
        &server,
        Some(&key),
        "become_seller",
        json!({"name": "Seller Co"}),
    );
    assert!(
        link["onboardingUrl"]
            .as_str()
            .unwrap()
            .contains("/sandbox/connect/"),
        "{link}"
    );
    assert_eq!(link["status"], "pending");
    server.onboard(&key);
    err(
        &server,
        Some(&key),
        "become_seller",
        json!({}),
        "INVALID_ARGUMENT",
    );

    err(
        &server,
        Some(&key),
        "set_delivery_endpoint",
        json!({"url": "not a url"}),
        "INVALID_ARGUMENT",
    );
    let twin = SellerTwin::start(&server.base, b"x".to_vec(), "text/plain", Mode::Honest);
    let endpoint = ok(
        &server,
        Some(&key),
        "set_delivery_endpoint",
        json!({"url": twin.url}),
    );
    assert!(endpoint.to_string().contains(&twin.url), "{endpoint}");
    let wrong = SellerTwin::start(&server.base, b"x".to_vec(), "text/plain", Mode::WrongEcho);
    err(
        &server,
        Some(&key),
        "set_delivery_endpoint",
        json!({"url": wrong.url}),
        "ENDPOINT_VERIFICATION_FAILED",
    );

    // consent must be true; the health vertical needs its own consent flow.
    err(
        &server,
        Some(&key),
        "sell_data",
        json!({"title": "Rates", "description": "Weekly rates.", "preview": {}, "price_cents": 0, "consent": false}),
        "CONSENT_REQUIRED",
    );
    err(
        &server,
        Some(&key),
        "sell_data",
        json!({"title": "My labs", "description": "My blood tests.", "preview": {}, "price_cents": 100, "consent": true, "vertical": "personal-health-data"}),
        "HEALTH_CONSENT_REQUIRED",
    );
    err(
        &server,
        Some(&key),
        "sell_data",
        json!({"title": "Rates", "description": "d", "preview": {}, "priceCents": 1, "consent": true}),
        "INVALID_ARGUMENT",
    );
    // Without `vertical` the catalog files it.
    let auto = ok(
        &server,
        Some(&key),
        "sell_data",
        json!({"title": "Truck freight lane rates", "description": "Weekly trucking freight rates per lane.", "preview": {"lanes": 3}, "price_cents": 0, "consent": true}),
    );
    assert!(auto["listing"]["verticalSlug"].is_string(), "{auto}");
    let id = sell(&server, &key, 0);

    let other = key_of(&server, "not-owner");
    let updated = ok(
        &server,
        Some(&key),
        "update_listing",
        json!({"listing_id": id, "price_cents": 250, "title": "Freight rates v2", "reason": "repriced"}),
    );
    assert!(
        updated.to_string().contains("Freight rates v2"),
        "{updated}"
    );
    err(
        &server,
        Some(&other),
        "update_listing",
        json!({"listing_id": id, "title": "mine"}),
        "NOT_OWNER",
    );

    let history = ok(&server, None, "listing_history", json!({"listing_id": id}));
    assert!(history.to_string().contains("repriced"), "{history}");
    err(
        &server,
        None,
        "listing_history",
        json!({"listing_id": "00000000-0000-4000-8000-000000000000"}),
        "NOT_FOUND",
    );

    let dashboard = ok(&server, Some(&key), "seller_dashboard", json!({}));
    assert_eq!(
        dashboard["listings"].as_array().unwrap().len(),
        2,
        "{dashboard}"
    );
    err(
        &server,
        Some(&key),
        "seller_dashboard",
        json!({"x": 1}),
        "INVALID_ARGUMENT",
    );

    let withdrawn = ok(
        &server,
        Some(&key),
        "deactivate_listing",
        json!({"listing_id": id, "reason": "gone"}),
    );
    assert!(
        withdrawn.to_string().contains("\"active\":false"),
        "{withdrawn}"
    );
    err(
        &server,
        Some(&key),
        "deactivate_listing",
        json!({"listing_id": "00000000-0000-4000-8000-000000000000"}),
        "NOT_FOUND",
    );
    let detail = ok(&server, None, "preview_listing", json!({"listing_id": id}));
    assert_eq!(detail["listing"]["active"], false, "{detail}");
    err(
        &server,
        None,
        "preview_listing",
        json!({}),
        "INVALID_ARGUMENT",
    );
}

#[test]
fn a_buyer_buys_pays_polls_and_rates_over_mcp() {
    let server = TestServer::start();
    let (seller_key, _twin) = seller(&server, "mcp-seller");
    let buyer = key_of(&server, "mcp-buyer");
    let id = sell(&server, &seller_key, 10_000);

    err(
        &server,
        Some(&seller_key),
        "buy_data",
        json!({"listing_id": id}),
        "CANNOT_BUY_OWN_LISTING",
    );
    let pending = ok(&server, Some(&buyer), "buy_data", json!({"listing_id": id}));
    assert_eq!(pending["status"], "pending_payment", "{pending}");
    let purchase = pending["id"].as_str().unwrap().to_owned();
    // Not delivered yet: rating is refused.
    err(
        &server,
        Some(&buyer),
        "rate_listing",
        json!({"listing_id": id, "purchase_id": purchase, "rating": 5}),
        "NOT_DELIVERED",
    );
    server.pay_checkout(&pending);

    let polled = ok(
        &server,
        Some(&buyer),
        "get_purchase",
        json!({"purchase_id": purchase}),
    );
    assert_eq!(polled["status"], "delivered", "{polled}");
    assert_eq!(polled["delivery"]["content"], "mcp deliverable");
    err(
        &server,
        Some(&seller_key),
        "get_purchase",
        json!({"purchase_id": purchase}),
        "NOT_BUYER",
    );

    // The same answer as REST for the same purchase.
    let rest = server
        .get_auth(&format!("/api/marketplace/purchases/{purchase}"), &buyer)
        .json();
    assert_eq!(without_provenance(rest)["status"], polled["status"]);

    let rated = ok(
        &server,
        Some(&buyer),
        "rate_listing",
        json!({"listing_id": id, "purchase_id": purchase, "rating": 4, "comment": "good"}),
    );
    assert!(rated.to_string().contains("attestation"), "{rated}");
    err(
        &server,
        Some(&buyer),
        "rate_listing",
        json!({"listing_id": id, "purchase_id": purchase, "rating": 4}),
        "ALREADY_RATED",
    );
}

#[test]
fn health_data_purchases_need_the_buyer_terms() {
    let server = TestServer::start();
    let buyer = key_of(&server, "health-buyer");
    let page = ok(
        &server,
        None,
        "browse_marketplace",
        json!({"vertical": "personal-health-data", "samples": "only"}),
    );
    let listing = page["listings"][0]["id"]
        .as_str()
        .expect("a health sample")
        .to_owned();
    let error = err(
        &server,
        Some(&buyer),
        "buy_data",
        json!({"listing_id": listing}),
        "HEALTH_TERMS_REQUIRED",
    );
    assert_eq!(error["status"], 422);
    let attestation: serde_json::Map<String, Value> = [
        "notForInsurance",
        "notForEmployment",
        "notForDiscrimination",
        "noReidentification",
        "acceptUseTerms",
    ]
    .iter()
    .map(|name| ((*name).to_owned(), Value::Bool(true)))
    .collect();
    let bought = ok(
        &server,
        Some(&buyer),
        "buy_data",
        json!({"listing_id": listing, "buyer_intended_use": "academic_research", "buyer_attestation": attestation}),
    );
    assert!(bought["status"].is_string(), "{bought}");
}

#[test]
fn api_key_arguments_must_name_the_bearer_agent() {
    let server = TestServer::start();
    let alice = key_of(&server, "alice");
    let bob = key_of(&server, "bob");
    // The same key as the header: accepted.
    let dashboard = ok(
        &server,
        Some(&alice),
        "seller_dashboard",
        json!({"api_key": alice}),
    );
    assert!(dashboard["listings"].is_array());
    // Another agent's key, or an unknown one: refused.
    err(
        &server,
        Some(&alice),
        "seller_dashboard",
        json!({"api_key": bob}),
        "API_KEY_MISMATCH",
    );
    err(
        &server,
        Some(&alice),
        "seller_dashboard",
        json!({"api_key": "svc_live_nope"}),
        "API_KEY_MISMATCH",
    );
    // Never instead of the header.
    let response = rpc(
        &server,
        None,
        "tools/call",
        json!({"name": "seller_dashboard", "arguments": {"api_key": alice}}),
    );
    response.assert_status(401);
    // The Agent Connect tools still refuse any key argument.
    err(
        &server,
        Some(&alice),
        "agent_whoami",
        json!({"api_key": alice}),
        "INVALID_ARGUMENT",
    );
}

#[test]
fn rest_and_mcp_answer_the_same() {
    let server = TestServer::start();
    let (seller_key, _twin) = seller(&server, "parity-seller");
    let id = sell(&server, &seller_key, 500);
    ok(
        &server,
        Some(&seller_key),
        "update_listing",
        json!({"listing_id": id, "price_cents": 700}),
    );

    let rest = without_provenance(
        server
            .get(&format!("/api/marketplace/listings/{id}"))
            .json(),
    );
    let mcp = ok(&server, None, "preview_listing", json!({"listing_id": id}));
    // Each read counts a view; everything else is the same.
    let strip_views = |mut value: Value| {
        if let Some(Value::Object(listing)) = value.get_mut("listing") {
            listing.remove("viewCount");
        }
        value
    };
    assert_eq!(strip_views(mcp), strip_views(rest));

    let rest = without_provenance(
        server
            .get(&format!("/api/marketplace/listings/{id}/history"))
            .json(),
    );
    let mcp = ok(&server, None, "listing_history", json!({"listing_id": id}));
    assert_eq!(mcp, rest);

    let rest = without_provenance(
        server
            .get("/api/marketplace/listings?q=freight&samples=include&sort=price_asc&limit=5")
            .json(),
    );
    let mcp = ok(
        &server,
        None,
        "browse_marketplace",
        json!({"q": "freight", "samples": "include", "sort": "price_asc", "limit": 5}),
    );
    assert_eq!(mcp["total"], rest["total"]);
    assert_eq!(mcp["listings"], rest["listings"]);
    assert_eq!(mcp["listings"][0]["id"], id);

    // The same validation: the REST 400 is the MCP tool error.
    server
        .get("/api/marketplace/listings?sort=cheapest")
        .assert_error(400, "INVALID_ARGUMENT");
    err(
        &server,
        None,
        "browse_marketplace",
        json!({"sort": "cheapest"}),
        "INVALID_ARGUMENT",
    );
    err(
        &server,
        None,
        "browse_marketplace",
        json!({"limit": 1000}),
        "INVALID_ARGUMENT",
    );

    let rest = without_provenance(server.get("/api/stats").json());
    let mcp = ok(&server, None, "get_platform_stats", json!({}));
    assert_eq!(mcp["totalListings"], rest["totalListings"]);
    assert_eq!(mcp["totalAgents"], rest["totalAgents"]);
}

#[test]
fn list_health_data_records_a_signed_consent() {
    let server = TestServer::start();
    let (key, _twin) = seller(&server, "health-seller");
    let consent = json!({
        "ownership": {"ownData": true, "adult": true, "noThirdPartyData": true, "voluntary": true},
        "saleTerms": {"acceptSaleTerms": true, "buyersKeepCopies": true, "noRecall": true},
        "authorizedUses": ["academic_research"],
        "deidentificationLevel": "full_identified",
        "stateAuthorizations": {"state": "NON_US", "generalAuthorization": true},
    });
    let mut arguments = json!({"title": "My step counts", "description": "Two years of my own step counts.", "preview": {"days": 730}, "price_cents": 500, "consent": true, "health_consent": consent});
    let created = ok(&server, Some(&key), "list_health_data", arguments.clone());
    assert_eq!(created["listing"]["healthConsentVerified"], true);
    assert_eq!(
        created["listing"]["deidentificationLevel"],
        "full_identified"
    );
    assert_eq!(created["consent"]["consent"], consent);

    arguments["health_consent"]["ownership"]["voluntary"] = json!(false);
    let refused = err(
        &server,
        Some(&key),
        "list_health_data",
        arguments,
        "HEALTH_CONSENT_REQUIRED",
    );
    assert_eq!(refused["status"], 422);
}
