//! MCP spoken as raw JSON-RPC over HTTP (`/api/mcp`), as the MCP tests speak it.
//!
//! Two dialects, both kept: the marketplace tools' (`rpc`, `call`, `ok`, `err`: request id 11,
//! a failed tool names its HTTP status) and Agent Connect's (`post`, `call_tool`, `tool_ok`,
//! `tool_err`: request id 7, the JSON-RPC envelope checked in full), with the 2026-07-28
//! stateless envelope (`post_stateless`) and one raw HTTP/1.1 exchange (`raw_http`).

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::{Value, json};

use super::{Client, Resp};

pub const MCP: &str = "/api/mcp";

pub fn rpc(server: &Client, key: Option<&str>, method: &str, params: Value) -> Resp {
    let auth = key.map(|key| format!("Bearer {key}"));
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    let body = json!({ "jsonrpc": "2.0", "id": 11, "method": method, "params": params });
    server.request("POST", MCP, &headers, Some(body.to_string().as_bytes()))
}

/// The CallToolResult of a `tools/call` answered with 200.
#[track_caller]
pub fn call(server: &Client, key: Option<&str>, name: &str, arguments: Value) -> Value {
    let response = rpc(
        server,
        key,
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    );
    assert_eq!(response.status, 200, "{name}: {}", response.text());
    let body = response.json();
    assert_eq!(body["id"], 11, "{body}");
    assert!(body.get("error").is_none(), "{body}");
    body["result"].clone()
}

/// A successful tool call: the structured content (which the text block repeats).
#[track_caller]
pub fn ok(server: &Client, key: Option<&str>, name: &str, arguments: Value) -> Value {
    let result = call(server, key, name, arguments);
    assert_eq!(result["isError"], false, "{name}: {result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"], "{result}");
    result["structuredContent"].clone()
}

/// A failed tool call naming `code` in its text; returns `structuredContent.error`.
#[track_caller]
pub fn err(server: &Client, key: Option<&str>, name: &str, arguments: Value, code: &str) -> Value {
    let result = call(server, key, name, arguments);
    assert_eq!(result["isError"], true, "{name}: {result}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains(code) && message.contains("HTTP"),
        "{name}: {message}"
    );
    let error = result["structuredContent"]["error"].clone();
    assert_eq!(error["code"], code, "{result}");
    assert!(error["status"].is_u64(), "{result}");
    error
}

pub fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// POSTs a JSON-RPC body the way MCP clients do, with an optional Bearer key and extra headers.
pub fn post(server: &Client, key: Option<&str>, extra: &[(&str, &str)], body: &Value) -> Resp {
    post_bytes(server, key, extra, body.to_string().as_bytes())
}

pub fn post_bytes(server: &Client, key: Option<&str>, extra: &[(&str, &str)], body: &[u8]) -> Resp {
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
pub fn ok_result(response: &Resp) -> Value {
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
pub fn rpc_error(response: &Resp, status: u16, code: i64) -> Value {
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
pub fn call_tool(server: &Client, key: &str, name: &str, arguments: Value) -> Value {
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
pub fn tool_ok(server: &Client, key: &str, name: &str, arguments: Value) -> Value {
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
pub fn tool_err(server: &Client, key: &str, name: &str, arguments: Value, code: &str) -> Value {
    let result = call_tool(server, key, name, arguments);
    assert_eq!(result["isError"], true, "{result}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(message.contains(code), "{message}");
    let error = result["structuredContent"]["error"].clone();
    assert_eq!(error["code"], code, "{result}");
    error
}

pub fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "it", "version": "0" },
    })
}

/// A 2026-07-28 request: `_meta` envelope plus the mirrored headers (overridable by `extra`).
pub fn post_stateless(
    server: &Client,
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
pub fn raw_http(server: &Client, head: &str, body: &str) -> (u16, String) {
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
