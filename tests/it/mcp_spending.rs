//! Spending controls over MCP: `buy_data` above the approval threshold answers a normal tool
//! result (`pending_approval` with the owner's approval URL), and the restricted keys are minted,
//! listed and revoked with the agent's full key, as on REST.

use serde_json::{Value, json};

use crate::approvals::list;
use crate::support::TestServer;
use crate::support::mcp::{call_tool, tool_err, tool_ok};

#[test]
fn buy_data_above_the_threshold_is_a_normal_result_waiting_for_approval() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 900);
    tool_ok(
        &server,
        &buyer.key,
        "set_spending_policy",
        json!({"approval_threshold_cents": 500}),
    );
    let result = call_tool(
        &server,
        &buyer.key,
        "buy_data",
        json!({"listing_id": listing}),
    );
    assert_eq!(result["isError"], false, "{result}");
    let purchase = &result["structuredContent"];
    assert_eq!(purchase["status"], "pending_approval", "{result}");
    let url = purchase["approvalUrl"].as_str().expect("approvalUrl");
    assert!(url.contains("/approve/apr_"), "{url}");
    assert_eq!(purchase["checkoutUrl"], Value::Null);
    // The same purchase as the buyer polls it, on either face.
    let id = purchase["id"].as_str().unwrap();
    let polled = tool_ok(
        &server,
        &buyer.key,
        "get_purchase",
        json!({"purchase_id": id}),
    );
    assert_eq!(polled["status"], "pending_approval");
    // The page the URL names is the owner's approval page.
    let page = server.get(server.path_of(url)).text();
    assert!(page.contains("data-state=\"open\""), "{page}");
}

#[test]
fn restricted_keys_are_minted_listed_and_revoked_over_mcp_with_the_full_key_only() {
    let server = TestServer::start();
    let agent = server.party("agent");
    let minted = tool_ok(
        &server,
        &agent.key,
        "mint_restricted_key",
        json!({"label": "shopper", "scopes": ["read", "spend"], "daily_cents": 300, "expires_in_hours": 48}),
    );
    let key = minted["apiKey"].as_str().unwrap().to_owned();
    assert!(key.starts_with("svc_live_"), "{minted}");
    assert_eq!(minted["scopes"], json!(["read", "spend"]));
    assert_eq!(minted["dailyCents"], 300);
    let id = minted["id"].as_str().unwrap();

    // Listed as on REST, never with the secret.
    let listed = tool_ok(&server, &agent.key, "list_restricted_keys", json!({}));
    assert_eq!(
        listed,
        server.get_auth("/api/agents/me/keys", &agent.key).ok()
    );
    assert_eq!(listed["keys"][0]["id"], id);
    assert!(listed["keys"][0].get("apiKey").is_none());

    // The restricted key itself may not manage keys, whatever its scopes.
    for (tool, arguments) in [
        ("list_restricted_keys", json!({})),
        ("mint_restricted_key", json!({"scopes": ["read"]})),
        ("revoke_restricted_key", json!({"key_id": id})),
    ] {
        tool_err(&server, &key, tool, arguments, "INSUFFICIENT_SCOPE");
    }
    // A bad argument is named.
    tool_err(
        &server,
        &agent.key,
        "mint_restricted_key",
        json!({"scopes": ["everything"]}),
        "INVALID_ARGUMENT",
    );

    let revoked = tool_ok(
        &server,
        &agent.key,
        "revoke_restricted_key",
        json!({"key_id": id}),
    );
    assert!(revoked["revokedAt"].is_string(), "{revoked}");
    server.get_auth("/api/agents/me", &key).assert_status(401);
    tool_err(
        &server,
        &agent.key,
        "revoke_restricted_key",
        json!({"key_id": "00000000-0000-4000-8000-000000000000"}),
        "NOT_FOUND",
    );
}
