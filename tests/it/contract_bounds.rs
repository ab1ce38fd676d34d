//! What the contract's schemas state, the server enforces: requests the fuzzing step of CI found
//! the two disagreeing on, settled one way or the other (see `.ci/schemathesis`).

use serde_json::json;

use crate::support::TestServer;

#[test]
fn a_patch_without_a_body_is_refused_and_an_empty_object_changes_nothing() {
    let server = TestServer::start();
    let agent = server.register("patcher");
    let key = agent["apiKey"].as_str().unwrap();
    let auth = format!("Bearer {key}");
    server
        .request("PATCH", "/api/agents/me", &[("authorization", &auth)], None)
        .assert_error(400, "INVALID_JSON");
    let same = server
        .send_auth("PATCH", "/api/agents/me", key, &json!({}))
        .ok();
    assert_eq!(same["name"], "patcher");
    let operator = format!("Bearer {}", server.operator_key());
    server
        .request(
            "PATCH",
            "/api/operator/provenance",
            &[("authorization", &operator)],
            Some(b""),
        )
        .assert_error(400, "INVALID_JSON");
}

#[test]
fn the_sandbox_buttons_answer_404_for_an_id_that_names_nothing() {
    let server = TestServer::start();
    for path in [
        "/sandbox/checkout/cs_7a6X0ix_AxwoXEqModBCnClB3xgipMWu/pay",
        "/sandbox/checkout/cs_7a6X0ix_AxwoXEqModBCnClB3xgipMWu/cancel",
        "/sandbox/connect/RgqM27oBrldJT_Zw9jcg9Q/complete",
    ] {
        server
            .request_unredirected("POST", path, &[], Some(b""))
            .assert_error(404, "NOT_FOUND");
    }
}

#[test]
fn a_seller_email_must_be_an_address_as_everywhere_else() {
    let server = TestServer::start();
    let agent = server.register("seller-mail");
    let key = agent["apiKey"].as_str().unwrap();
    let refused = server.send_auth("POST", "/api/sell/register", key, &json!({"email": "00"}));
    refused.assert_error(400, "INVALID_ARGUMENT");
    assert!(refused.text().contains("`email`"), "{}", refused.text());
    server
        .send_auth(
            "POST",
            "/api/sell/register",
            key,
            &json!({"email": "payouts@example.com"}),
        )
        .assert_status(200);
}

#[test]
fn a_callback_host_that_resolves_to_a_refused_address_is_a_422() {
    let server = TestServer::start_with(|config| config.allow_loopback_outbound = false);
    server
        .post(
            "/api/agents/register",
            &json!({"name": "hooked", "callbackUrl": "https://localhost/hook"}),
        )
        .assert_error(422, "DESTINATION_REFUSED");
    // A literal address is refused by the URL's own shape, as the schema's pattern says.
    server
        .post(
            "/api/agents/register",
            &json!({"name": "hooked", "callbackUrl": "https://127.0.0.1/hook"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    let agent = server.register("hooked");
    let key = agent["apiKey"].as_str().unwrap();
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            key,
            &json!({"callbackUrl": "https://localhost/hook"}),
        )
        .assert_error(422, "DESTINATION_REFUSED");
}
