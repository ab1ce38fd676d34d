//! Embedded documents: llms.txt on both paths, OpenAPI ↔ router parity, working examples.

use std::collections::BTreeSet;

use bourse::operations::Operation;
use serde_json::{Value, json};

use crate::seller_twin::{Mode, SellerTwin};
use crate::support::TestServer;

#[test]
fn llms_txt_is_identical_on_both_paths() {
    let server = TestServer::start();
    let a = server.get("/llms.txt");
    let b = server.get("/api/llms.txt");
    a.assert_status(200);
    assert!(a.header("content-type").unwrap().starts_with("text/plain"));
    assert_eq!(a.body, b.body);
    assert!(a.text().contains("/api/agents/register"));
}

fn openapi(server: &TestServer) -> Value {
    let response = server.get("/openapi.json");
    response.expect(200)
}

#[test]
fn every_route_is_documented_and_every_documented_route_exists() {
    let server = TestServer::start();
    let document = openapi(&server);
    assert_eq!(document["openapi"], "3.1.0");
    assert_eq!(document["info"]["version"], "1.0.0");
    let documented: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|k| {
                    ["get", "put", "post", "patch", "delete", "options"].contains(&k.as_str())
                })
                .map(move |method| (method.to_uppercase(), path.clone()))
        })
        .collect();
    let routed: BTreeSet<(String, String)> = Operation::routes()
        .map(|(m, p, _)| (m.to_owned(), p.to_owned()))
        .collect();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let phantom: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty(),
        "routes missing from openapi.json: {undocumented:?}"
    );
    assert!(
        phantom.is_empty(),
        "openapi.json documents routes that do not exist: {phantom:?}"
    );
}

#[test]
fn every_request_body_example_succeeds_as_sent() {
    let server = TestServer::start();
    let document = openapi(&server);
    let agent = server.register("example-runner");
    let agent_key = agent["apiKey"].as_str().unwrap().to_owned();
    let operator_key = server.operator_key();
    let twin = SellerTwin::start(
        &server.base,
        b"example deliverable".to_vec(),
        "text/plain",
        Mode::Honest,
    );
    let endpoint = json!({"url": twin.url});
    let verified = server.send_auth("PUT", "/api/sell/delivery-endpoint", &agent_key, &endpoint);
    verified.assert_status(200);
    server.onboard(&agent_key);
    let listing = server.send_auth(
        "POST",
        "/api/marketplace/listings",
        &agent_key,
        &json!({"title": "Example target", "description": "Edited by the examples.", "priceCents": 100, "consent": true}),
    );
    let listing_id = listing.json()["listing"]["id"].as_str().unwrap().to_owned();
    let recipient = server.register("example-recipient")["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let inquiry = server.post(
        "/api/inquiries",
        &json!({"subject": "Examples", "message": "Target of the inquiry examples."}),
    );
    inquiry.assert_status(201);
    let inquiry_id = inquiry.json()["id"].as_str().unwrap().to_owned();
    let oauth_client = server
        .post(
            "/oauth/register",
            &json!({"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"}),
        )
        .expect(201)["client_id"]
        .clone();
    let (mut sent, mut skipped) = (0, 0);
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            // Examples that need a purchase of another agent (buying, rating, shipping) are
            // marked and exercised by the purchase and checkout tests instead; the Stripe
            // webhook's needs a Stripe server and a signature (exercised in stripe.rs).
            if operation.get("x-example-skip") == Some(&Value::Bool(true)) {
                skipped += 1;
                continue;
            }
            let Some(example) = operation.pointer("/requestBody/content/application~1json/example")
            else {
                // Form bodies (the OAuth endpoints) are driven by tests/it/oauth.rs.
                assert!(
                    operation
                        .pointer("/requestBody/content/application~1json")
                        .is_none(),
                    "{method} {path} has a JSON body without an example"
                );
                continue;
            };
            // Examples that name a resource which must already exist get the real one.
            let mut example = example.clone();
            match path.as_str() {
                "/api/operator/chair" => example["handle"] = agent["handle"].clone(),
                "/api/sell/delivery-endpoint" => example["url"] = endpoint["url"].clone(),
                "/api/rails" => example["rootInquiryId"] = json!(inquiry_id),
                "/api/operator/oauth/clients/revoke" => {
                    example["clientId"] = oauth_client.clone();
                }
                _ => {}
            }
            let id = if path.contains("/inquiries/{id}") {
                &inquiry_id
            } else {
                &listing_id
            };
            let mut target = path.replace("{id}", id).replace("{handle}", &recipient);
            if path.starts_with("/a2a") {
                // A2A's version, in the query form the binding also reads.
                target.push_str("?A2A-Version=1.0");
            }
            let operator_only = ["/api/sandbox/clock", "/api/rails"];
            let key =
                if path.starts_with("/api/operator/") || operator_only.contains(&path.as_str()) {
                    &operator_key
                } else {
                    &agent_key
                };
            let response = server.send_auth(&method.to_uppercase(), &target, key, &example);
            assert!(
                (200..300).contains(&response.status),
                "{method} {path} example → {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            );
            sent += 1;
        }
    }
    assert!(sent >= 8, "only {sent} examples were found");
    assert!(
        skipped <= 4,
        "{skipped} examples are skipped; only buy, rate, ship and the Stripe webhook may be"
    );
}

#[test]
fn the_front_page_explains_the_instance_to_people_and_programs() {
    let server = TestServer::start();
    server.register("counted");
    let page = server.request("GET", "/", &[("accept", "text/html,*/*")], None);
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text();
    for expected in [
        "/llms.txt",
        "/openapi.json",
        "/api/mcp",
        "/disclosures",
        "name=\"viewport\"",
        "id=\"agents\">1<",
    ] {
        assert!(
            html.contains(expected),
            "{expected} missing from the front page"
        );
    }
    assert!(!html.contains("<script"), "works without scripts");
    let index = server
        .request("GET", "/", &[("accept", "application/json")], None)
        .ok();
    assert_eq!(index["counts"]["agents"], 1);
    assert_eq!(
        index["links"]["openapi"],
        format!("{}/openapi.json", server.base)
    );
    assert!(
        index["provenance"]["receipt"].is_object(),
        "signed like every public answer"
    );
}
