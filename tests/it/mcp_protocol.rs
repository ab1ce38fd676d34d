//! MCP over raw HTTP (`/api/mcp`), the protocol itself: initialize and version negotiation,
//! notifications and ping, tools/list, the stateless 2026-07-28 revision, origins, GET, errors
//! told apart, and batches.

use serde_json::{Value, json};

use crate::support::mcp::{
    MCP, ok_result, post, post_bytes, post_stateless, raw_http, request, rpc_error, stateless_meta,
    tool_err,
};
use crate::support::{Party, TestServer};

const TOOL_NAMES: [&str; 4] = [
    "agent_whoami",
    "agent_lookup",
    "agent_inbox",
    "agent_send_message",
];

#[test]
fn initialize_answers_each_dated_revision_and_negotiates_the_rest() {
    let server = TestServer::start();
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let response = post(
            &server,
            None,
            &[],
            &request(
                1,
                "initialize",
                json!({"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "it", "version": "0"}}),
            ),
        );
        let result = ok_result(&response);
        assert_eq!(result["protocolVersion"], version, "{result}");
        assert_eq!(result["serverInfo"]["name"], "bourse");
        assert!(result["serverInfo"]["version"].is_string());
        assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
        assert!(result["instructions"].as_str().unwrap().contains("Bearer"));
        assert_eq!(response.json()["id"], 1);
        assert!(
            response.header("mcp-session-id").is_none(),
            "no session is minted"
        );
    }
    for unknown in ["1999-01-01", "2024-11-05", "2026-07-28"] {
        let result = ok_result(&post(
            &server,
            None,
            &[],
            &request(
                2,
                "initialize",
                json!({"protocolVersion": unknown, "capabilities": {},
                       "clientInfo": {"name": "it", "version": "0"}}),
            ),
        ));
        assert_eq!(result["protocolVersion"], "2025-11-25", "{unknown}");
    }
    // String ids are echoed exactly.
    let response = post(
        &server,
        None,
        &[],
        &json!({"jsonrpc": "2.0", "id": "init-α", "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "it", "version": "0"}}}),
    );
    ok_result(&response);
    assert_eq!(response.json()["id"], "init-α");
    // Without a protocolVersion the params are invalid.
    rpc_error(
        &post(&server, None, &[], &request(3, "initialize", json!({}))),
        200,
        -32602,
    );
}

#[test]
fn notifications_are_accepted_with_202_and_ping_answers_empty() {
    let server = TestServer::start();
    let [Party { key, .. }, _] = server.parties(["mcp-alice", "mcp-bob"]);
    for message in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
    ] {
        for auth in [None, Some(key.as_str())] {
            let response = post(
                &server,
                auth,
                &[("mcp-protocol-version", "2025-11-25")],
                &message,
            );
            assert_eq!(response.status, 202, "{message}: {}", response.text());
            assert!(response.body.is_empty(), "{}", response.text());
        }
    }
    let response = post(
        &server,
        Some(&key),
        &[("mcp-protocol-version", "2025-11-25")],
        &request(9, "ping", json!({})),
    );
    assert_eq!(ok_result(&response), json!({}));
    assert_eq!(response.json()["id"], 9);
    // ping is not one of the public methods.
    let response = post(&server, None, &[], &request(9, "ping", json!({})));
    rpc_error(&response, 401, -32600);
}

#[test]
fn tools_list_offers_the_four_agent_connect_tools_without_a_key() {
    let server = TestServer::start();
    let result = ok_result(&post(
        &server,
        None,
        &[("mcp-protocol-version", "2025-11-25")],
        &request(2, "tools/list", json!({})),
    ));
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    // The Agent Connect tools come first; the marketplace tools (tests/it/mcp_market.rs) follow.
    assert_eq!(names[..4], TOOL_NAMES);
    for tool in &tools[..4] {
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 20),
            "{tool}"
        );
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        // Unknown arguments are refused all the same (mcp_schemas), but not said in the schema:
        // an agent SDK fails on `additionalProperties: false` (see request::Op::input_schema).
        assert!(schema.get("additionalProperties").is_none(), "{tool}");
        assert!(schema["properties"].is_object(), "{tool}");
        let properties = schema["properties"].as_object().unwrap();
        assert!(
            !properties.contains_key("api_key") && !properties.contains_key("apiKey"),
            "no key argument: {tool}"
        );
    }
    assert_eq!(
        tools[3]["inputSchema"]["required"],
        json!(["handle", "clientMessageId", "body"])
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["handle"]));
    // A cursor we never issued is invalid params.
    rpc_error(
        &post(
            &server,
            None,
            &[],
            &request(3, "tools/list", json!({"cursor": "page-2"})),
        ),
        200,
        -32602,
    );
}

#[test]
fn the_stateless_2026_revision_discovers_lists_and_calls() {
    let server = TestServer::start();
    let [Party { key, handle }, _] = server.parties(["mcp-alice", "mcp-bob"]);

    let response = post_stateless(&server, None, "server/discover", json!({}), &[]);
    let result = ok_result(&response);
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
    assert!(result["ttlMs"].is_u64() && result["cacheScope"] == "public");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "bourse"
    );
    assert!(response.header("mcp-session-id").is_none());

    let result = ok_result(&post_stateless(&server, None, "tools/list", json!({}), &[]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["tools"].as_array().unwrap().len(), 4 + 25);
    assert!(result["ttlMs"].is_u64() && result["cacheScope"] == "public");

    let call = json!({"name": "agent_whoami", "arguments": {}});
    let result = ok_result(&post_stateless(
        &server,
        Some(&key),
        "tools/call",
        call.clone(),
        &[],
    ));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["handle"], handle);
    // Mcp-Name may come base64-encoded.
    let result = ok_result(&post_stateless(
        &server,
        Some(&key),
        "tools/call",
        call.clone(),
        &[("mcp-name", "=?base64?YWdlbnRfd2hvYW1p?=")],
    ));
    assert_eq!(result["structuredContent"]["handle"], handle);
    // Without a key, tools/call is 401 on this wire too.
    let response = post_stateless(&server, None, "tools/call", call.clone(), &[]);
    response.assert_status(401);

    // Headers must mirror the body.
    for extra in [
        [("mcp-name", "agent_inbox")],
        [("mcp-method", "tools/list")],
        [("mcp-protocol-version", "2025-11-25")],
    ] {
        rpc_error(
            &post_stateless(&server, Some(&key), "tools/call", call.clone(), &extra),
            400,
            -32020,
        );
    }
    // The per-request envelope is required.
    let response = post(
        &server,
        None,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        &request(4, "tools/list", json!({})),
    );
    rpc_error(&response, 400, -32602);
    // An unsupported modern version names the supported one.
    let mut params = json!({});
    params["_meta"] = stateless_meta();
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01".into();
    let response = post(
        &server,
        None,
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "server/discover"),
        ],
        &request(5, "server/discover", params),
    );
    let error = rpc_error(&response, 400, -32022);
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(error["data"]["requested"], "2099-01-01");
    // Handshake methods do not exist on the stateless wire.
    rpc_error(
        &post_stateless(
            &server,
            None,
            "initialize",
            json!({"protocolVersion": "2025-11-25"}),
            &[],
        ),
        404,
        -32601,
    );
    rpc_error(
        &post_stateless(&server, Some(&key), "ping", json!({}), &[]),
        404,
        -32601,
    );
    // A notification is acknowledged and dropped.
    let response = post(
        &server,
        None,
        &[("mcp-protocol-version", "2026-07-28")],
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 11}}),
    );
    response.assert_status(202);
    assert!(response.body.is_empty());
    // A request method without an id is no notification: 400 -32600.
    let response = post(
        &server,
        None,
        &[("mcp-protocol-version", "2026-07-28")],
        &json!({"jsonrpc": "2.0", "method": "server/discover", "params": {}}),
    );
    response.assert_status(400);
    assert_eq!(response.json()["error"]["code"], -32600);
}

#[test]
fn foreign_origins_are_refused() {
    let server = TestServer::start();
    let [Party { key, .. }, _] = server.parties(["mcp-alice", "mcp-bob"]);
    let list = request(1, "tools/list", json!({}));
    let port = server.base.rsplit(':').next().unwrap().to_owned();

    for origin in [
        "https://evil.example.com",
        "http://127.0.0.1.evil.example",
        "null",
    ] {
        let response = post(&server, Some(&key), &[("origin", origin)], &list);
        assert_eq!(response.status, 403, "{origin}: {}", response.text());
        let body = response.json();
        assert_eq!(body["jsonrpc"], "2.0");
        assert!(body["error"]["code"].is_i64() && body.get("id").is_none());
        let get = server.request("GET", MCP, &[("origin", origin)], None);
        assert_eq!(get.status, 403, "GET {origin}");
    }
    for origin in [
        server.base.clone(),
        format!("http://localhost:{port}"),
        "http://localhost:3000".to_owned(),
        "http://[::1]:9".to_owned(),
    ] {
        let response = post(&server, Some(&key), &[("origin", &origin)], &list);
        assert_eq!(response.status, 200, "{origin}: {}", response.text());
    }
    // No Origin at all: a non-browser client.
    assert_eq!(post(&server, Some(&key), &[], &list).status, 200);

    // DNS rebinding: the attacker's name as both Host and Origin.
    let body = list.to_string();
    let (status, response) = raw_http(
        &server,
        "POST /api/mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: http://evil.example.com\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream",
        &body,
    );
    assert_eq!(status, 403, "{response}");
    let (status, response) = raw_http(
        &server,
        &format!(
            "POST /api/mcp HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://localhost:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
        ),
        &body,
    );
    assert_eq!(status, 200, "{response}");
}

#[test]
fn get_serves_the_manifest_and_refuses_streams_and_delete() {
    let server = TestServer::start();
    let response = server.get(MCP);
    response.assert_status(200);
    let bad_key = server.get_auth(MCP, "svc_live_not-a-key");
    assert_eq!(
        bad_key.status, 401,
        "a presented key must be valid, even on GET"
    );
    assert!(
        bad_key
            .header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer"))
    );
    let manifest = response.json();
    assert_eq!(manifest["name"], "bourse");
    assert_eq!(manifest["version"], "1.0.0");
    let names: Vec<&str> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..4], TOOL_NAMES);
    assert!(
        manifest["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["inputSchema"]["type"] == "object")
    );

    for accept in ["text/event-stream", "application/json, text/event-stream"] {
        let response = server.request("GET", MCP, &[("accept", accept)], None);
        assert_eq!(response.status, 405, "{accept}: {}", response.text());
        assert_eq!(response.header("allow"), Some("GET, POST"));
    }
    let response = server.request("DELETE", MCP, &[("mcp-session-id", "abc")], None);
    response.assert_status(405);
    assert_eq!(response.header("allow"), Some("GET, POST"));
}

#[test]
fn protocol_errors_and_tool_errors_are_told_apart() {
    let server = TestServer::start();
    let [Party { key, .. }, _] = server.parties(["mcp-alice", "mcp-bob"]);
    let v = [("mcp-protocol-version", "2025-11-25")];

    // Malformed JSON: 400, -32700, id null.
    let response = post_bytes(&server, Some(&key), &v, b"{\"jsonrpc\": \"2.0\", ");
    rpc_error(&response, 400, -32700);
    assert_eq!(response.json()["id"], Value::Null);
    assert!(response.json().as_object().unwrap().contains_key("id"));
    // Invalid envelopes: 400, -32600.
    for body in [
        json!({"id": 1, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
        json!("ping"),
        // `params` is an object (null counts as absent), whatever the method.
        json!({"jsonrpc": "2.0", "id": 1, "method": "", "params": 799}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": "x"}),
    ] {
        rpc_error(&post(&server, Some(&key), &v, &body), 400, -32600);
    }
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": null});
    assert_eq!(
        post(&server, Some(&key), &v, &ping).json()["result"],
        json!({})
    );
    // Unknown method.
    let response = post(
        &server,
        Some(&key),
        &v,
        &request(2, "resources/list", json!({})),
    );
    rpc_error(&response, 200, -32601);
    assert_eq!(response.json()["id"], 2);
    // Unknown tool and malformed call params: -32602.
    for params in [
        json!({"name": "agent_teleport", "arguments": {}}),
        json!({"arguments": {}}),
        json!({"name": "agent_whoami", "arguments": "handle=A-1"}),
    ] {
        rpc_error(
            &post(&server, Some(&key), &v, &request(3, "tools/call", params)),
            200,
            -32602,
        );
    }
    // Bad arguments: a result with isError and a readable message.
    for (tool, arguments) in [
        ("agent_lookup", json!({})),
        ("agent_lookup", json!({"handle": 42})),
        ("agent_whoami", json!({"verbose": true})),
        ("agent_inbox", json!({"limit": 0})),
        ("agent_inbox", json!({"after": "1"})),
        ("agent_inbox", json!({"wait": 31})),
        ("agent_inbox", json!({"action": "delete"})),
        ("agent_inbox", json!({"through": 3})),
        (
            "agent_send_message",
            json!({"handle": "A-1", "clientMessageId": "x"}),
        ),
        (
            "agent_send_message",
            json!({"clientMessageId": "x", "body": "y"}),
        ),
        (
            "agent_send_message",
            json!({"handle": "A-1", "clientMessageId": "x", "body": "y", "priority": 1}),
        ),
    ] {
        let error = tool_err(&server, &key, tool, arguments.clone(), "INVALID_ARGUMENT");
        assert_eq!(error["status"], 400, "{tool} {arguments}");
    }
    // A version header we do not serve: 400 naming the supported ones.
    let response = post(
        &server,
        Some(&key),
        &[("mcp-protocol-version", "1999-01-01")],
        &request(4, "ping", json!({})),
    );
    let error = rpc_error(&response, 400, -32602);
    assert_eq!(
        error["data"]["supported"],
        json!(["2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(error["data"]["requested"], "1999-01-01");
    // Not JSON by Content-Type: 415.
    let (status, response) = raw_http(
        &server,
        &format!(
            "POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\nContent-Type: text/plain"
        ),
        &request(5, "ping", json!({})).to_string(),
    );
    assert_eq!(status, 415, "{response}");
}

#[test]
fn batches_follow_the_2025_03_26_rules() {
    let server = TestServer::start();
    let [Party { key, handle }, _] = server.parties(["mcp-alice", "mcp-bob"]);
    let batch = json!([
        request(1, "ping", json!({})),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request(2, "tools/call", json!({"name": "agent_whoami", "arguments": {}})),
        request(3, "nope", json!({})),
    ]);
    for header in [None, Some("2025-03-26")] {
        let extra: Vec<(&str, &str)> = header
            .map(|v| vec![("mcp-protocol-version", v)])
            .unwrap_or_default();
        let response = post(&server, Some(&key), &extra, &batch);
        response.assert_status(200);
        let answers = response.json();
        let answers = answers.as_array().unwrap();
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert_eq!(answers[1]["result"]["structuredContent"]["handle"], handle);
        assert_eq!(answers[2]["error"]["code"], -32601);
    }
    // Only notifications: 202.
    let response = post(
        &server,
        None,
        &[],
        &json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]),
    );
    response.assert_status(202);
    // initialize is never batched.
    let response = post(
        &server,
        None,
        &[],
        &json!([request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-03-26"})
        )]),
    );
    response.assert_status(200);
    assert_eq!(response.json()[0]["error"]["code"], -32600);
    // A locked method in a batch without a key: 401.
    let response = post(&server, None, &[], &batch);
    response.assert_status(401);
    // Later revisions removed batching; an empty batch is invalid everywhere.
    for version in ["2025-06-18", "2025-11-25"] {
        let response = post(
            &server,
            Some(&key),
            &[("mcp-protocol-version", version)],
            &batch,
        );
        rpc_error(&response, 400, -32600);
    }
    rpc_error(&post(&server, Some(&key), &[], &json!([])), 400, -32600);
}
