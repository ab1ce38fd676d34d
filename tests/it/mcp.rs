//! Agent Connect over MCP (`/api/mcp`): agents messaging each other through the tools, only
//! the Bearer header authenticating, and the official Python SDK end to end.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::mcp::{MCP, call_tool, post, request, rpc_error, tool_err, tool_ok};
use crate::support::{BinServer, Party, TestServer, exit_within, skip_or_fail};

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
