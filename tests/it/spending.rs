//! Spending controls: an agent's policy (caps per purchase, per UTC day and month, rails and
//! categories), enforced in the transaction that opens a purchase, on REST and MCP.

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::support::mcp::{tool_err, tool_ok};
use crate::support::{Party, TestServer, WAIT, checkout_session};

fn list(server: &TestServer, seller: &Party, price: i64, vertical: &str) -> String {
    let base = json!({"title": "Freight rates", "description": "Weekly freight.", "priceCents": price, "verticalSlug": vertical, "consent": true});
    server.create_listing(seller, base, json!({}))
}

fn set_policy(server: &TestServer, agent: &Party, policy: Value) -> Value {
    server
        .send_auth("PUT", "/api/agents/me/spending-policy", &agent.key, &policy)
        .ok()
}

fn spending(server: &TestServer, agent: &Party) -> Value {
    server.get_auth("/api/agents/me/spending", &agent.key).ok()
}

/// The refusal of a purchase: asserts 403 with `code` and returns the error member.
#[track_caller]
fn refused(server: &TestServer, buyer: &Party, listing: &str, code: &str) -> Value {
    let response = server.buy(buyer, listing);
    response.assert_error(403, code);
    response.json()["error"].clone()
}

#[test]
fn daily_and_monthly_caps_refuse_name_the_limit_and_start_over_with_the_calendar() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 600, "trucking");
    let before = spending(&server, &buyer);
    assert_eq!(before["policy"]["dailyCents"], Value::Null);
    assert_eq!(before["daily"]["spentCents"], 0);
    let set = set_policy(
        &server,
        &buyer,
        json!({"dailyCents": 1000, "monthlyCents": 2500, "perPurchaseCents": 5000}),
    );
    assert_eq!(set["policy"]["dailyCents"], 1000);
    assert_eq!(set["daily"]["leftCents"], 1000);
    assert_eq!(set["daily"]["resetsAt"], "2026-11-22T00:00:00.000Z");
    assert_eq!(set["monthly"]["resetsAt"], "2026-12-01T00:00:00.000Z");

    server.buy_and_pay(&buyer, &listing);
    let error = refused(&server, &buyer, &listing, "SPEND_LIMIT_EXCEEDED");
    assert_eq!(
        error["limit"],
        json!({"name": "daily", "amountCents": 1000, "leftCents": 400, "requestedCents": 600, "resetsAt": "2026-11-22T00:00:00.000Z"})
    );
    let now = spending(&server, &buyer);
    assert_eq!(
        (
            &now["daily"]["spentCents"],
            &now["daily"]["leftCents"],
            &now["monthly"]["leftCents"]
        ),
        (&json!(600), &json!(400), &json!(1900))
    );

    // A new UTC day: the daily cap starts over, the monthly one does not.
    server.clock.advance(SignedDuration::from_hours(20));
    server.buy_and_pay(&buyer, &listing);
    server.clock.advance(SignedDuration::from_hours(24));
    server.buy_and_pay(&buyer, &listing);
    server.clock.advance(SignedDuration::from_hours(24));
    server.buy_and_pay(&buyer, &listing);
    server.clock.advance(SignedDuration::from_hours(24));
    let error = refused(&server, &buyer, &listing, "SPEND_LIMIT_EXCEEDED");
    assert_eq!(
        error["limit"],
        json!({"name": "monthly", "amountCents": 2500, "leftCents": 100, "requestedCents": 600, "resetsAt": "2026-12-01T00:00:00.000Z"})
    );
    // A new UTC month.
    server.clock.advance(SignedDuration::from_hours(24 * 6));
    server.buy_and_pay(&buyer, &listing);
    let december = spending(&server, &buyer);
    assert_eq!(december["monthly"]["spentCents"], 600);
    assert_eq!(december["monthly"]["startsAt"], "2026-12-01T00:00:00.000Z");
}

#[test]
fn a_per_purchase_cap_rails_and_categories_refuse_and_free_listings_pass() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let dear = list(&server, &seller, 900, "trucking");
    let cheap = list(&server, &seller, 100, "research-data");
    let free = list(&server, &seller, 0, "trucking");
    set_policy(&server, &buyer, json!({"perPurchaseCents": 500}));
    let error = refused(&server, &buyer, &dear, "SPEND_LIMIT_EXCEEDED");
    assert_eq!(
        error["limit"],
        json!({"name": "per_purchase", "amountCents": 500, "leftCents": 500, "requestedCents": 900, "resetsAt": null})
    );
    set_policy(&server, &buyer, json!({"rails": ["x402_usdc_base"]}));
    refused(&server, &buyer, &cheap, "RAIL_NOT_ALLOWED");
    // Above the threshold a purchase waits for the owner's approval (tests/it/approvals.rs).
    set_policy(&server, &buyer, json!({"approvalThresholdCents": 500}));
    let waiting = server.buy(&buyer, &dear).expect(202);
    assert_eq!(waiting["status"], "pending_approval");
    server.buy(&buyer, &cheap).assert_status(200);
    set_policy(&server, &buyer, json!({"categories": ["services"]}));
    refused(&server, &buyer, &cheap, "CATEGORY_NOT_ALLOWED");
    server.buy(&buyer, &dear).assert_status(200);
    // Either list admits a listing.
    set_policy(
        &server,
        &buyer,
        json!({"categories": ["services"], "verticals": ["research-data"]}),
    );
    server.buy(&buyer, &cheap).assert_status(200);
    // Spending nothing, a free listing passes every cap.
    set_policy(&server, &buyer, json!({"dailyCents": 0, "rails": ["card"]}));
    server.buy(&buyer, &free).assert_status(200);
    // Unknown names are refused; the whole policy is replaced by each PUT.
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &buyer.key,
            &json!({"rails": ["free"]}),
        )
        .assert_invalid_naming("rails");
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &buyer.key,
            &json!({"verticals": ["no-such-vertical"]}),
        )
        .assert_error(422, "UNKNOWN_VERTICAL");
    let cleared = set_policy(&server, &buyer, json!({}));
    assert_eq!(cleared["policy"]["rails"], Value::Null);
    assert_eq!(cleared["policy"]["dailyCents"], Value::Null);
}

#[test]
fn cancelled_and_expired_checkouts_give_their_amount_back() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 600, "trucking");
    set_policy(&server, &buyer, json!({"dailyCents": 1000}));
    let pending = server.buy(&buyer, &listing).ok();
    assert_eq!(
        spending(&server, &buyer)["daily"]["spentCents"],
        600,
        "an open checkout holds its amount"
    );
    refused(&server, &buyer, &listing, "SPEND_LIMIT_EXCEEDED");
    let session = checkout_session(&pending);
    server
        .post(
            &format!("/api/sandbox/checkout/{session}/cancel"),
            &json!({}),
        )
        .assert_status(200);
    assert_eq!(spending(&server, &buyer)["daily"]["spentCents"], 0);
    server.buy(&buyer, &listing).assert_status(200);
    refused(&server, &buyer, &listing, "SPEND_LIMIT_EXCEEDED");
    // The checkout expires unpaid (30 minutes).
    server.clock.advance(SignedDuration::from_mins(31));
    assert_eq!(spending(&server, &buyer)["daily"]["spentCents"], 0);
    server.buy(&buyer, &listing).assert_status(200);
}

#[test]
fn fifty_concurrent_purchases_against_a_cap_that_allows_ten_exactly_ten_succeed() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 100, "trucking");
    set_policy(&server, &buyer, json!({"dailyCents": 1000}));
    let (base, key) = (server.base.clone(), buyer.key.clone());
    let path = format!("/api/marketplace/listings/{listing}/purchase");
    let answers: Vec<(u16, Value)> =
        crate::support::all_at_once("fifty sandbox purchases", 50, WAIT * 6, move |_| {
            let response =
                crate::support::Client::new(&base).send_auth("POST", &path, &key, &json!({}));
            (response.status, response.json()["error"]["code"].clone())
        });
    let ok = answers.iter().filter(|(status, _)| *status == 200).count();
    let capped = answers
        .iter()
        .filter(|(status, code)| *status == 403 && code == "SPEND_LIMIT_EXCEEDED")
        .count();
    assert_eq!((ok, capped), (10, 40), "{answers:?}");
    let now = spending(&server, &buyer);
    assert_eq!(now["daily"]["spentCents"], 1000);
    assert_eq!(now["daily"]["leftCents"], 0);
}

#[test]
fn a_policy_put_without_a_body_or_with_an_unknown_category_changes_nothing() {
    let server = TestServer::start();
    let agent = server.party("agent");
    set_policy(&server, &agent, json!({"monthlyCents": 100000}));
    // A PUT replaces the whole policy: without a body it is a mistake, not a cleared policy.
    let bearer = format!("Bearer {}", agent.key);
    server
        .request(
            "PUT",
            "/api/agents/me/spending-policy",
            &[("Authorization", &bearer)],
            None,
        )
        .assert_error(400, "INVALID_JSON");
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &agent.key,
            &json!({"categories": ["no-such-slug"]}),
        )
        .assert_error(422, "UNKNOWN_CATEGORY");
    let after = spending(&server, &agent);
    assert_eq!(after["policy"]["monthlyCents"], 100000);
    assert_eq!(after["policy"]["categories"], Value::Null);
}

#[test]
fn mcp_sets_reads_and_meets_the_policy() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 600, "trucking");
    let set = tool_ok(
        &server,
        &buyer.key,
        "set_spending_policy",
        json!({"daily_cents": 500}),
    );
    assert_eq!(set["policy"]["dailyCents"], 500);
    let read = tool_ok(&server, &buyer.key, "get_spending", json!({}));
    assert_eq!(read["daily"]["leftCents"], 500);
    assert_eq!(read, spending(&server, &buyer));
    let error = tool_err(
        &server,
        &buyer.key,
        "buy_data",
        json!({"listing_id": listing}),
        "SPEND_LIMIT_EXCEEDED",
    );
    assert_eq!(error["limit"]["name"], "daily");
    assert_eq!(error["limit"]["leftCents"], 500);
}

/// Mints a restricted key with the agent's full key; returns the 201 body.
fn mint(server: &TestServer, agent: &Party, body: Value) -> Value {
    server
        .send_auth("POST", "/api/agents/me/keys", &agent.key, &body)
        .expect(201)
}

fn as_party(key: &Value, handle: &str) -> Party {
    Party {
        key: key["apiKey"].as_str().unwrap().to_owned(),
        handle: handle.to_owned(),
    }
}

#[test]
fn a_restricted_key_is_the_same_agent_within_its_scopes_and_outlives_a_rotation() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let agent = server.party("agent");
    let listing = list(&server, &seller, 300, "trucking");
    let minted = mint(
        &server,
        &agent,
        json!({"label": "reader", "scopes": ["read"], "expiresInHours": 48}),
    );
    assert!(minted["apiKey"].as_str().unwrap().starts_with("svc_live_"));
    assert_eq!(minted["scopes"], json!(["read"]));
    assert_eq!(minted["expiresAt"], "2026-11-23T04:00:00.000Z");
    let reader = as_party(&minted, &agent.handle);
    // The same agent to everyone.
    let me = server.get_auth("/api/agents/me", &reader.key).ok();
    assert_eq!(me["handle"], agent.handle);
    // Outside its scopes, and what only the full key may do.
    refused(&server, &reader, &listing, "INSUFFICIENT_SCOPE");
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &reader.key,
            &json!({}),
        )
        .assert_error(403, "INSUFFICIENT_SCOPE");
    server
        .send_auth(
            "POST",
            "/api/agents/me/keys",
            &reader.key,
            &json!({"scopes": ["read"]}),
        )
        .assert_error(403, "INSUFFICIENT_SCOPE");
    server
        .send_auth("POST", "/api/agents/keys/revoke", &reader.key, &json!({}))
        .assert_error(403, "INSUFFICIENT_SCOPE");
    let body = json!({"handle": seller.handle, "clientMessageId": "m1", "body": "hi"});
    server
        .send_auth(
            "POST",
            &format!("/api/agents/{}/messages", seller.handle),
            &reader.key,
            &body,
        )
        .assert_error(403, "INSUFFICIENT_SCOPE");
    // Over MCP, the key holds its scopes only.
    let spent = tool_ok(&server, &reader.key, "get_spending", json!({}));
    assert_eq!(spent["daily"]["spentCents"], 0);

    // Rotating the full key leaves the restricted key alone.
    let rotated = server
        .send_auth("POST", "/api/agents/keys/revoke", &agent.key, &json!({}))
        .ok();
    let full = Party {
        key: rotated["newApiKey"].as_str().unwrap().to_owned(),
        handle: agent.handle.clone(),
    };
    server
        .get_auth("/api/agents/me", &reader.key)
        .assert_status(200);
    let listed = server.get_auth("/api/agents/me/keys", &full.key).ok();
    assert_eq!(listed["keys"][0]["id"], minted["id"]);
    assert!(
        listed["keys"][0].get("apiKey").is_none(),
        "never the key again"
    );
    // Revoking it never touches the full key.
    let id = minted["id"].as_str().unwrap();
    let revoked = server
        .send_auth(
            "POST",
            &format!("/api/agents/me/keys/{id}/revoke"),
            &full.key,
            &json!({}),
        )
        .ok();
    assert!(revoked["revokedAt"].is_string());
    server
        .get_auth("/api/agents/me", &reader.key)
        .assert_error(401, "UNAUTHENTICATED");
    server
        .get_auth("/api/agents/me", &full.key)
        .assert_status(200);
    // An expired key stops working.
    let short = as_party(
        &mint(
            &server,
            &full,
            json!({"scopes": ["read"], "expiresInHours": 1}),
        ),
        &agent.handle,
    );
    server
        .get_auth("/api/agents/me", &short.key)
        .assert_status(200);
    server.clock.advance(SignedDuration::from_mins(61));
    server
        .get_auth("/api/agents/me", &short.key)
        .assert_error(401, "UNAUTHENTICATED");
}

#[test]
fn a_restricted_keys_caps_count_its_own_purchases_within_the_agents() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let agent = server.party("agent");
    let listing = list(&server, &seller, 300, "trucking");
    set_policy(&server, &agent, json!({"dailyCents": 1000}));
    server
        .send_auth(
            "POST",
            "/api/agents/me/keys",
            &agent.key,
            &json!({"scopes": ["spend"], "dailyCents": 2000}),
        )
        .assert_error(422, "KEY_CAP_ABOVE_POLICY");
    let buyer = as_party(
        &mint(
            &server,
            &agent,
            json!({"label": "shopper", "scopes": ["spend", "read"], "dailyCents": 500}),
        ),
        &agent.handle,
    );
    let first = server.buy(&buyer, &listing).ok();
    assert_eq!(
        first["buyerHandle"], agent.handle,
        "the same agent to others"
    );
    let error = refused(&server, &buyer, &listing, "SPEND_LIMIT_EXCEEDED");
    assert_eq!(
        error["limit"],
        json!({"name": "key", "amountCents": 500, "leftCents": 200, "requestedCents": 300, "resetsAt": "2026-11-22T00:00:00.000Z"})
    );
    // The agent's own cap counts every purchase, the key's too.
    server.buy(&agent, &listing).assert_status(200);
    server.buy(&agent, &listing).assert_status(200);
    let error = refused(&server, &agent, &listing, "SPEND_LIMIT_EXCEEDED");
    assert_eq!(error["limit"]["name"], "daily");
    assert_eq!(error["limit"]["leftCents"], 100);
}

#[test]
fn an_oauth_grants_daily_cap_counts_its_purchases_as_well_as_the_agents_policy() {
    use crate::support::oauth::{
        authorize_page, authorize_params, location_query, param, refresh, setup,
    };
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let listing = list(&server, &seller, 300, "trucking");
    let owner = setup(&server, "oauth-buyer", "spend-cap");
    let agent = Party {
        key: owner.key.clone(),
        handle: owner.agent["handle"].as_str().unwrap().to_owned(),
    };
    let scope = "read spend";
    // The consent page offers a daily cap when the client asks for spend.
    let page = authorize_page(
        &server,
        &authorize_params(&owner.client_id, &owner.challenge, scope),
    )
    .text();
    assert!(page.contains("name=\"spend_daily_cap\""), "{page}");
    let mut form = authorize_params(&owner.client_id, &owner.challenge, scope);
    form.extend([
        ("grant", "read"),
        ("grant", "spend"),
        ("spend_daily_cap", "5.00"),
        ("api_key", owner.key.as_str()),
        ("decision", "allow"),
    ]);
    let query = location_query(&server.post_form("/oauth/authorize", &[], &form));
    let code = param(&query, "code").unwrap().to_owned();
    let tokens = owner.exchange(&server, &code).expect(200);
    let token = tokens["access_token"].as_str().unwrap();
    let buy = json!({"listing_id": listing});
    tool_ok(&server, token, "buy_data", buy.clone());
    let error = tool_err(
        &server,
        token,
        "buy_data",
        buy.clone(),
        "SPEND_LIMIT_EXCEEDED",
    );
    assert_eq!(
        error["limit"],
        json!({"name": "grant", "amountCents": 500, "leftCents": 200, "requestedCents": 300, "resetsAt": "2026-11-22T00:00:00.000Z"})
    );
    // The agent's own key is not held to the app's cap, but its policy counts the app's purchase.
    set_policy(&server, &agent, json!({"dailyCents": 600}));
    server.buy(&agent, &listing).assert_status(200);
    refused(&server, &agent, &listing, "SPEND_LIMIT_EXCEEDED");
    // A token cannot change the policy.
    tool_err(
        &server,
        token,
        "set_spending_policy",
        json!({"daily_cents": 100_000}),
        "INSUFFICIENT_SCOPE",
    );
    // The cap starts over with the UTC day.
    set_policy(&server, &agent, json!({}));
    server.clock.advance(SignedDuration::from_hours(20));
    let refresh_token = tokens["refresh_token"].as_str().unwrap();
    let refreshed = refresh(&server, &owner.client_id, refresh_token, &[]).expect(200);
    let token = refreshed["access_token"].as_str().unwrap();
    tool_ok(&server, token, "buy_data", buy);
}

#[test]
fn the_operator_sees_policies_and_refusals_as_counts() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 600, "trucking");
    set_policy(&server, &buyer, json!({"perPurchaseCents": 100}));
    refused(&server, &buyer, &listing, "SPEND_LIMIT_EXCEEDED");
    set_policy(&server, &buyer, json!({"rails": ["card"]}));
    refused(&server, &buyer, &listing, "RAIL_NOT_ALLOWED");
    let view = server
        .get_auth("/api/operator/spending", &server.operator_key())
        .ok();
    assert_eq!(view["agentsWithPolicy"], 1);
    assert_eq!(view["refusals"]["per_purchase"], 1);
    assert_eq!(view["refusals"]["rail"], 1);
    assert_eq!(view["refusals"]["daily"], 0);
    server
        .get_auth("/api/operator/spending", &buyer.key)
        .assert_error(401, "UNAUTHENTICATED");
}

#[path = "spending_stripe.rs"]
mod stripe_rail;
