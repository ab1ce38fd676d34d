//! MCP over raw HTTP (`/api/mcp`), and the official Python SDK end to end.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{BinServer, Party, Resp, TestServer, exit_within, skip_or_fail};

const MCP: &str = "/api/mcp";
const TOOL_NAMES: [&str; 4] = [
    "agent_whoami",
    "agent_lookup",
    "agent_inbox",
    "agent_send_message",
];

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// POSTs a JSON-RPC body the way MCP clients do, with an optional Bearer key and extra headers.
fn post(server: &TestServer, key: Option<&str>, extra: &[(&str, &str)], body: &Value) -> Resp {
    post_bytes(server, key, extra, body.to_string().as_bytes())
}

fn post_bytes(server: &TestServer, key: Option<&str>, extra: &[(&str, &str)], body: &[u8]) -> Resp {
    let auth = key.map(|key| format!("Bearer {key}"));
    let mut headers = vec![("accept", "application/json, text/event-stream")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    headers.extend_from_slice(extra);
    server.request("POST", MCP, &headers, Some(body))
}

/// A 200 JSON-RPC success; returns `result`.
#[track_caller]
fn ok_result(response: &Resp) -> Value {
    response.assert_status(200);
    assert!(
        response
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{:?}",
        response.headers
    );
    let body = response.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(body.get("error").is_none(), "{body}");
    assert!(
        body.get("provenance").is_none(),
        "no provenance on JSON-RPC: {body}"
    );
    body["result"].clone()
}

/// A JSON-RPC error with this HTTP status and code; returns the error object.
#[track_caller]
fn rpc_error(response: &Resp, status: u16, code: i64) -> Value {
    let body = response.expect(status);
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    body["error"].clone()
}

/// `tools/call` with a key; returns the CallToolResult.
#[track_caller]
fn call_tool(server: &TestServer, key: &str, name: &str, arguments: Value) -> Value {
    let response = post(
        server,
        Some(key),
        &[("mcp-protocol-version", "2025-11-25")],
        &request(
            7,
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        ),
    );
    let result = ok_result(&response);
    assert_eq!(response.json()["id"], 7);
    result
}

/// A successful tool call: the structured content, which the text block repeats as JSON.
#[track_caller]
fn tool_ok(server: &TestServer, key: &str, name: &str, arguments: Value) -> Value {
    let result = call_tool(server, key, name, arguments);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"], "{result}");
    result["structuredContent"].clone()
}

/// A tool call that failed on its own terms: `isError` with a readable text; returns
/// `structuredContent.error`.
#[track_caller]
fn tool_err(server: &TestServer, key: &str, name: &str, arguments: Value, code: &str) -> Value {
    let result = call_tool(server, key, name, arguments);
    assert_eq!(result["isError"], true, "{result}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(message.contains(code), "{message}");
    let error = result["structuredContent"]["error"].clone();
    assert_eq!(error["code"], code, "{result}");
    error
}

fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "it", "version": "0" },
    })
}

/// A 2026-07-28 request: `_meta` envelope plus the mirrored headers (overridable by `extra`).
fn post_stateless(
    server: &TestServer,
    key: Option<&str>,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> Resp {
    params["_meta"] = stateless_meta();
    let name = params["name"].as_str().map(str::to_owned);
    let mut headers: Vec<(&str, &str)> = Vec::new();
    for (header, value) in [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ] {
        if !extra.iter().any(|(h, _)| h.eq_ignore_ascii_case(header)) {
            headers.push((header, value));
        }
    }
    if let Some(name) = &name
        && !extra
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case("mcp-name"))
    {
        headers.push(("mcp-name", name));
    }
    headers.extend_from_slice(extra);
    post(server, key, &headers, &request(11, method, params))
}

/// One raw HTTP/1.1 exchange, for headers a client library would not let us forge.
fn raw_http(server: &TestServer, head: &str, body: &str) -> (u16, String) {
    let address = server.base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(address).unwrap();
    let request = format!(
        "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {response}"));
    (status, response)
}

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
        assert_eq!(schema["additionalProperties"], false, "{tool}");
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
    assert_eq!(result["tools"].as_array().unwrap().len(), 4 + 20);
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
}

#[test]
fn agents_message_each_other_through_the_tools() {
    let server = TestServer::start();
    let [
        Party {
            key: key_a,
            handle: handle_a,
        },
        Party {
            key: key_b,
            handle: handle_b,
        },
    ] = server.parties(["mcp-alice", "mcp-bob"]);

    // whoami is the REST /me body.
    let me = tool_ok(&server, &key_a, "agent_whoami", json!({}));
    let mut rest = server.get_auth("/api/agents/me", &key_a).json();
    rest.as_object_mut().unwrap().remove("provenance");
    assert_eq!(me, rest);
    assert!(me.get("apiKey").is_none());

    // lookup by handle, in any case.
    let found = tool_ok(
        &server,
        &key_a,
        "agent_lookup",
        json!({"handle": handle_b.to_lowercase()}),
    );
    assert_eq!(found["agents"][0]["handle"], handle_b);
    assert!(found["agents"][0].get("name").is_none());
    let none = tool_ok(
        &server,
        &key_a,
        "agent_lookup",
        json!({"handle": "A-00000000"}),
    );
    assert_eq!(none["agents"], json!([]));

    // A sends to B: 200 over MCP, created, with a signed receipt.
    let arguments = json!({"handle": handle_b, "clientMessageId": "mcp-1",
                           "body": "hello B, over MCP ✓"});
    let sent = tool_ok(&server, &key_a, "agent_send_message", arguments.clone());
    assert_eq!(sent["created"], true);
    assert_eq!(sent["senderHandle"], handle_a);
    assert_eq!(sent["recipientHandle"], handle_b);
    assert_eq!(sent["body"], "hello B, over MCP ✓");
    assert_eq!(sent["receipt"]["messageId"], sent["id"]);
    assert!(sent["receipt"]["signature"]["signature"].is_string());

    // The same call again returns the same message, not a new one.
    let again = tool_ok(&server, &key_a, "agent_send_message", arguments);
    assert_eq!(again["created"], false);
    assert_eq!(again["id"], sent["id"]);
    assert_eq!(again["receipt"], sent["receipt"]);

    // Reusing the id for another body is a tool error carrying the 409 code.
    let error = tool_err(
        &server,
        &key_a,
        "agent_send_message",
        json!({"handle": handle_b, "clientMessageId": "mcp-1", "body": "something else"}),
        "CLIENT_MESSAGE_ID_REUSED",
    );
    assert_eq!(error["status"], 409);
    // Unknown recipients are tool errors too.
    tool_err(
        &server,
        &key_a,
        "agent_send_message",
        json!({"handle": "A-00000000", "clientMessageId": "mcp-2", "body": "x"}),
        "NOT_FOUND",
    );

    // B reads its inbox: the message and its receipt.
    let inbox = tool_ok(&server, &key_b, "agent_inbox", json!({}));
    let messages = inbox["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{inbox}");
    assert_eq!(messages[0]["id"], sent["id"]);
    assert_eq!(messages[0]["body"], "hello B, over MCP ✓");
    assert_eq!(messages[0]["senderHandle"], handle_a);
    assert_eq!(messages[0]["receipt"], sent["receipt"]);
    assert_eq!(inbox["hasMore"], false);
    let through = inbox["nextAfter"].as_i64().unwrap();
    assert_eq!(through, messages[0]["sequence"].as_i64().unwrap());
    // Same as REST.
    let mut rest = server.get_auth("/api/agents/me/inbox", &key_b).json();
    rest.as_object_mut().unwrap().remove("provenance");
    assert_eq!(inbox, rest);
    // Paging arguments.
    let later = tool_ok(
        &server,
        &key_b,
        "agent_inbox",
        json!({"after": through, "limit": 5}),
    );
    assert_eq!(later["messages"], json!([]));
    assert_eq!(later["nextAfter"], through);
    // A's inbox holds nothing: inboxes are private.
    let empty = tool_ok(&server, &key_a, "agent_inbox", json!({"limit": 10}));
    assert_eq!(empty["messages"], json!([]));

    // mark_read stores nothing: the inbox reads the same afterwards.
    let marked = tool_ok(
        &server,
        &key_b,
        "agent_inbox",
        json!({"action": "mark_read", "through": through}),
    );
    assert_eq!(
        marked,
        json!({"readCursor": through, "readStateStored": false})
    );
    assert_eq!(tool_ok(&server, &key_b, "agent_inbox", json!({})), inbox);
    tool_err(
        &server,
        &key_b,
        "agent_inbox",
        json!({"action": "mark_read"}),
        "INVALID_ARGUMENT",
    );
}

#[test]
fn only_the_bearer_header_authenticates() {
    let server = TestServer::start();
    let [
        Party {
            key: key_a,
            handle: handle_a,
        },
        Party {
            key: key_b,
            handle: handle_b,
        },
    ] = server.parties(["mcp-alice", "mcp-bob"]);
    let whoami = request(
        3,
        "tools/call",
        json!({"name": "agent_whoami", "arguments": {}}),
    );

    // No key: 401 with a Bearer challenge.
    let response = post(&server, None, &[], &whoami);
    rpc_error(&response, 401, -32600);
    assert!(
        response
            .header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer")),
        "{:?}",
        response.headers
    );
    assert_eq!(response.json()["id"], 3);

    // A bad key is refused on every request, even the public ones.
    for body in [
        request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "it", "version": "0"}}),
        ),
        request(2, "tools/list", json!({})),
        whoami.clone(),
    ] {
        let response = post(&server, Some("svc_live_not-a-real-key"), &[], &body);
        assert_eq!(response.status, 401, "{body}: {}", response.text());
        assert!(response.header("www-authenticate").is_some());
    }
    // Other schemes are not accepted.
    let basic = post(
        &server,
        None,
        &[("authorization", "Basic dXNlcjpwdw==")],
        &request(1, "tools/list", json!({})),
    );
    basic.assert_status(401);

    // A key in the URL never authenticates.
    for query in ["api_key", "access_token", "apiKey"] {
        let response = server.request(
            "POST",
            &format!("{MCP}?{query}={key_a}"),
            &[],
            Some(whoami.to_string().as_bytes()),
        );
        assert_eq!(response.status, 401, "{query}: {}", response.text());
    }

    // A key in the arguments never authenticates...
    for name in ["api_key", "apiKey"] {
        let body = request(
            4,
            "tools/call",
            json!({"name": "agent_whoami", "arguments": {name: key_a}}),
        );
        assert_eq!(post(&server, None, &[], &body).status, 401);
        // ...and is refused next to a Bearer: the call never runs as anyone.
        let error = tool_err(
            &server,
            &key_b,
            "agent_whoami",
            json!({name: key_a}),
            "INVALID_ARGUMENT",
        );
        assert!(
            error["message"].as_str().unwrap().contains("Bearer"),
            "{error}"
        );
    }
    let sent = call_tool(
        &server,
        &key_b,
        "agent_send_message",
        json!({"handle": handle_a, "clientMessageId": "k", "body": "hi", "apiKey": key_a}),
    );
    assert_eq!(sent["isError"], true);
    let inbox = tool_ok(&server, &key_a, "agent_inbox", json!({}));
    assert_eq!(inbox["messages"], json!([]), "nothing was sent");

    // The Bearer decides who is calling.
    assert_eq!(
        tool_ok(&server, &key_b, "agent_whoami", json!({}))["handle"],
        handle_b
    );
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
    ] {
        rpc_error(&post(&server, Some(&key), &v, &body), 400, -32600);
    }
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

/// The Python with the official MCP SDK: `BOURSE_MCP_PYTHON` (`.ci/run` sets one up), checked
/// by importing `mcp`. Without it the test is skipped and says so, or fails where the SDK is
/// required (`support::skip_or_fail`).
fn sdk_python(test: &str) -> Option<std::ffi::OsString> {
    let why = match std::env::var_os("BOURSE_MCP_PYTHON").filter(|p| !p.is_empty()) {
        None => "BOURSE_MCP_PYTHON is not set".to_owned(),
        Some(python) => match Command::new(&python).args(["-c", "import mcp"]).output() {
            Ok(output) if output.status.success() => return Some(python),
            Ok(output) => format!(
                "BOURSE_MCP_PYTHON={python:?} cannot import the SDK: {}",
                String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            ),
            Err(error) => format!("BOURSE_MCP_PYTHON={python:?} does not run: {error}"),
        },
    };
    skip_or_fail(
        test,
        &format!(
            "{why}; set it to a Python with the official `mcp` SDK installed (bash .ci/run sets one up)"
        ),
    );
    None
}

/// Runs `tests/mcp_sdk/<script>` with `env` (bounded to 180 s) and checks that it passed: exit
/// status 0 and a last line `<summary>: N passed, 0 failed`.
fn run_sdk_script(python: &std::ffi::OsStr, script: &str, env: &[(&str, &str)], summary: &str) {
    let path = format!("{}/tests/mcp_sdk/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(python)
        .arg(&path)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python:?}: {e}"));
    if exit_within(&mut child, Duration::from_secs(180)).is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stdout.lines().last().is_some_and(
            |line| line.starts_with(&format!("{summary}: ")) && line.ends_with(" 0 failed")
        ),
        "{stdout}"
    );
}

/// The official Python SDK against the real binary: two agents message each other over MCP.
#[test]
fn official_python_sdk_end_to_end() {
    let Some(python) = sdk_python("official_python_sdk_end_to_end") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &[]);
    let [
        Party {
            key: key_a,
            handle: handle_a,
        },
        Party {
            key: key_b,
            handle: handle_b,
        },
    ] = server.client.parties(["sdk-alice", "sdk-bob"]);
    let url = format!("{}{MCP}", server.client.base);
    run_sdk_script(
        &python,
        "e2e.py",
        &[
            ("BOURSE_MCP_URL", &url),
            ("BOURSE_MCP_KEY_A", &key_a),
            ("BOURSE_MCP_HANDLE_A", &handle_a),
            ("BOURSE_MCP_KEY_B", &key_b),
            ("BOURSE_MCP_HANDLE_B", &handle_b),
        ],
        "mcp sdk e2e",
    );
}

/// OAuth over the official Python SDK's client provider against the real binary: discovery from
/// the 401, dynamic registration and a client metadata document, the authorization page submitted
/// as a browser would, tokens, step-up to `spend` on a 403, refresh and revocation.
#[test]
fn official_python_sdk_oauth_end_to_end() {
    let Some(python) = sdk_python("official_python_sdk_oauth_end_to_end") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &["--allow-loopback-outbound"]);
    let agent = server.client.register("sdk-oauth");
    run_sdk_script(
        &python,
        "oauth_e2e.py",
        &[
            ("BOURSE_URL", &server.client.base),
            ("BOURSE_API_KEY", agent["apiKey"].as_str().unwrap()),
        ],
        "mcp oauth e2e",
    );
}

/// The marketplace over the official Python SDK against the real binary: agents register,
/// sell, buy (sandbox rail, scripted pay), poll until delivered and rate, all over MCP.
#[test]
fn official_python_sdk_marketplace_end_to_end() {
    let Some(python) = sdk_python("official_python_sdk_marketplace_end_to_end") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &["--allow-loopback-outbound"]);
    let deliverable = "sdk market deliverable";
    let twin = crate::seller_twin::SellerTwin::start(
        &server.client.base,
        deliverable.as_bytes().to_vec(),
        "text/plain",
        crate::seller_twin::Mode::Honest,
    );
    let url = format!("{}{MCP}", server.client.base);
    run_sdk_script(
        &python,
        "market_e2e.py",
        &[
            ("BOURSE_MCP_URL", &url),
            ("BOURSE_SELLER_ENDPOINT", &twin.url),
            ("BOURSE_DELIVERABLE", deliverable),
        ],
        "mcp market e2e",
    );
}
