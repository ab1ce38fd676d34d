//! The messaging rail: send, receipts, idempotency, inbox, long-poll, limits, callbacks.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Client, Party, TestServer, WAIT, wait_until};

pub(crate) fn send(
    client: &Client,
    from: &Party,
    to: &str,
    id: &str,
    body: &str,
) -> crate::support::Resp {
    client.send_auth(
        "POST",
        &format!("/api/agents/{to}/messages"),
        &from.key,
        &json!({"clientMessageId": id, "body": body}),
    )
}

fn sha256(text: &str) -> String {
    format!(
        "sha256:{}",
        Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    )
}

#[test]
fn a_new_message_is_201_with_a_receipt_that_verifies_and_binds_the_body() {
    let server = TestServer::start();
    let [a, b] = server.parties(["alice", "bob"]);
    let body = "Hello Bob — 👋\nline two";
    let message = send(&server, &a, &b.handle, "m-1", body).expect(201);
    for field in [
        "id",
        "clientMessageId",
        "senderHandle",
        "recipientHandle",
        "sequence",
        "body",
        "createdAt",
        "receipt",
    ] {
        assert!(message.get(field).is_some(), "message.{field}");
    }
    assert_eq!(message["senderHandle"], a.handle);
    assert_eq!(message["recipientHandle"], b.handle);
    assert_eq!(message["sequence"], 1);
    assert_eq!(
        message["body"], body,
        "the body is stored exactly, not trimmed"
    );
    let receipt = &message["receipt"];
    assert_eq!(receipt["type"], "bourse.message.receipt");
    assert_eq!(receipt["messageId"], message["id"]);
    assert_eq!(receipt["bodyDigest"], sha256(body));
    assert_eq!(receipt["senderHandle"], a.handle);
    assert_eq!(receipt["recipientHandle"], b.handle);
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": receipt}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
    let mut forged = receipt.clone();
    forged["bodyDigest"] = json!(sha256("something else"));
    assert_eq!(
        server
            .post("/api/verify-receipt", &json!({"signed": forged}))
            .json()["valid"],
        false
    );

    // Lower-case handles work; unknown handles are 404; no key is 401.
    send(&server, &a, &b.handle.to_lowercase(), "m-2", "hi").assert_status(201);
    send(&server, &a, "A-NOPE0000", "m-3", "hi").assert_error(404, "NOT_FOUND");
    let anonymous = server.post(
        &format!("/api/agents/{}/messages", b.handle),
        &json!({"clientMessageId": "x", "body": "y"}),
    );
    anonymous.assert_error(401, "UNAUTHENTICATED");
}

/// Handles match in any case, and whitespace around one is ignored, as llms.txt and the
/// contract say: in the path, in a lookup and in an MCP argument alike.
#[test]
fn a_handle_matches_in_any_case_with_surrounding_whitespace_ignored() {
    let server = TestServer::start();
    let [sender, recipient] = server.parties(["spaced-sender", "spaced-recipient"]);
    let spaced = format!("%20{}%20", recipient.handle.to_ascii_lowercase());
    let sent = send(&server, &sender, &spaced, "spaced-1", "hello").expect(201);
    assert_eq!(sent["recipientHandle"], recipient.handle.as_str(), "{sent}");
    let lookup = server
        .get(&format!(
            "/api/agents/lookup?handle=%20{}%20",
            recipient.handle
        ))
        .expect(200);
    assert_eq!(lookup["agents"][0]["handle"], recipient.handle.as_str());
    let over_mcp = crate::support::mcp::ok(
        &server,
        Some(&sender.key),
        "agent_send_message",
        json!({"handle": format!(" {} ", recipient.handle), "clientMessageId": "spaced-2", "body": "again"}),
    );
    assert_eq!(over_mcp["recipientHandle"], recipient.handle.as_str());
    let inbox = server
        .get_auth("/api/agents/me/inbox", &recipient.key)
        .expect(200);
    assert_eq!(inbox["messages"].as_array().unwrap().len(), 2, "{inbox}");
}

#[test]
fn repeats_are_200_with_the_same_receipt_and_reuse_is_409() {
    let server = TestServer::start();
    let [a, b, c] = server.parties(["a", "b", "c"]);
    let first = send(&server, &a, &b.handle, "same", "payload").expect(201);
    let again = send(&server, &a, &b.handle, "same", "payload").ok();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(
        again["receipt"].to_string(),
        first["receipt"].to_string(),
        "byte-identical receipt"
    );
    send(&server, &a, &b.handle, "same", "another payload")
        .assert_error(409, "CLIENT_MESSAGE_ID_REUSED");
    send(&server, &a, &c.handle, "same", "payload").assert_error(409, "CLIENT_MESSAGE_ID_REUSED");
    // The same id from another sender is a different message.
    send(&server, &c, &b.handle, "same", "payload").assert_status(201);
    let inbox = server.get_auth("/api/agents/me/inbox", &b.key).json();
    assert_eq!(inbox["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn concurrent_duplicates_resolve_to_exactly_one_message() {
    let server = TestServer::start();
    let [a, b] = server.parties(["a", "b"]);
    let base = server.base.clone();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (base, key, handle) = (base.clone(), a.key.clone(), b.handle.clone());
            std::thread::spawn(move || {
                let client = Client::new(&base);
                let from = Party {
                    key,
                    handle: String::new(),
                };
                let response = send(&client, &from, &handle, "race", "one body");
                (
                    response.status,
                    response.json()["id"].as_str().unwrap().to_owned(),
                )
            })
        })
        .collect();
    let results: Vec<(u16, String)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        results.iter().filter(|(status, _)| *status == 201).count(),
        1,
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .all(|(status, _)| *status == 201 || *status == 200)
    );
    assert!(
        results.iter().all(|(_, id)| *id == results[0].1),
        "one message id for all"
    );
    let inbox = server.get_auth("/api/agents/me/inbox", &b.key).json();
    assert_eq!(inbox["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn the_body_limit_counts_utf8_bytes() {
    let server = TestServer::start();
    let [a, b] = server.parties(["a", "b"]);
    let at_limit = "é".repeat(8192); // 2 bytes each: exactly 16,384 bytes
    send(&server, &a, &b.handle, "fits", &at_limit).assert_status(201);
    let over = format!("{at_limit}x");
    let refused = send(&server, &a, &b.handle, "over", &over);
    refused.assert_error(400, "INVALID_ARGUMENT");
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("16384")
    );
    let emoji = "😀".repeat(4097); // 4,097 characters, 16,388 bytes
    send(&server, &a, &b.handle, "emoji", &emoji).assert_error(400, "INVALID_ARGUMENT");
    send(&server, &a, &b.handle, "empty", "").assert_error(400, "INVALID_ARGUMENT");
    send(&server, &a, &b.handle, &"x".repeat(129), "hi").assert_error(400, "INVALID_ARGUMENT");
    let missing = server.send_auth(
        "POST",
        &format!("/api/agents/{}/messages", b.handle),
        &a.key,
        &json!({"body": "hi"}),
    );
    missing.assert_error(400, "INVALID_ARGUMENT");
}

#[test]
fn inbox_pages_by_sequence_and_only_ever_shows_the_callers_messages() {
    let server = TestServer::start();
    let [a, b, c] = server.parties(["a", "b", "c"]);
    for i in 1..=5 {
        send(
            &server,
            &a,
            &b.handle,
            &format!("m{i}"),
            &format!("body {i}"),
        )
        .assert_status(201);
    }
    send(&server, &a, &c.handle, "for-c", "private to c");
    let page = server
        .get_auth("/api/agents/me/inbox?limit=2", &b.key)
        .json();
    let sequences = |page: &Value| {
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["sequence"].as_i64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(sequences(&page), [1, 2]);
    assert_eq!(page["nextAfter"], 2);
    assert_eq!(page["hasMore"], true);
    let page = server
        .get_auth("/api/agents/me/inbox?after=2&limit=2", &b.key)
        .json();
    assert_eq!(sequences(&page), [3, 4]);
    let page = server
        .get_auth("/api/agents/me/inbox?after=4", &b.key)
        .json();
    assert_eq!(sequences(&page), [5]);
    assert_eq!(page["hasMore"], false);
    let empty = server
        .get_auth("/api/agents/me/inbox?after=5", &b.key)
        .json();
    assert_eq!(empty["messages"], json!([]));
    assert_eq!(empty["nextAfter"], 5);

    let c_inbox = server.get_auth("/api/agents/me/inbox", &c.key).json();
    assert_eq!(sequences(&c_inbox), [1], "c's own sequence starts at 1");
    assert!(!c_inbox.to_string().contains("body 1"));
    let a_inbox = server.get_auth("/api/agents/me/inbox", &a.key).json();
    assert_eq!(
        a_inbox["messages"],
        json!([]),
        "the sender's inbox holds nothing of what it sent"
    );
    server
        .get("/api/agents/me/inbox")
        .assert_error(401, "UNAUTHENTICATED");
    server
        .get_auth("/api/agents/me/inbox?limit=101", &b.key)
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get_auth("/api/agents/me/inbox?wait=31", &b.key)
        .assert_error(400, "INVALID_ARGUMENT");
    // An empty value is refused, not read as the default; so is a parameter given twice.
    server
        .get_auth("/api/agents/me/inbox?after=&limit=", &b.key)
        .assert_invalid_naming("after");
    server
        .get_auth("/api/agents/me/inbox?limit=", &b.key)
        .assert_invalid_naming("limit");
    server
        .get_auth("/api/agents/me/inbox?after=1&after=2", &b.key)
        .assert_invalid_naming("after");
}

#[test]
fn a_long_poll_returns_as_soon_as_a_message_arrives() {
    let server = TestServer::start();
    let [a, b] = server.parties(["a", "b"]);
    let (base, key) = (server.base.clone(), b.key.clone());
    let started = Instant::now();
    let poller = std::thread::spawn(move || {
        Client::new(&base)
            .get_auth("/api/agents/me/inbox?wait=25", &key)
            .json()
    });
    // Send once the poll is under way (it subscribes to new messages before it first reads
    // the inbox); the poll must end with the message, long before 25 s.
    wait_until("the long-poll is under way", WAIT, || {
        server.long_polls() == 1
    });
    send(&server, &a, &b.handle, "wake", "wake up").assert_status(201);
    let page = poller.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the poll returned early"
    );
    assert_eq!(page["messages"][0]["body"], "wake up");
}

#[test]
fn new_messages_are_limited_per_sender_and_repeats_are_free() {
    let server = TestServer::start();
    let [a, b] = server.parties(["a", "b"]);
    for i in 0..30 {
        send(&server, &a, &b.handle, &format!("n{i}"), "x").assert_status(201);
    }
    assert_eq!(
        send(&server, &a, &b.handle, "n0", "x").status,
        200,
        "a repeat does not count"
    );
    let refused = send(&server, &a, &b.handle, "n30", "x");
    refused.assert_error(429, "RATE_LIMITED");
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("30 per minute")
    );
    server.clock.advance(jiff::SignedDuration::from_secs(61));
    send(&server, &a, &b.handle, "n30", "x").assert_status(201);
}

#[test]
fn admission_is_limited_per_ip_across_lookup_inbox_and_send() {
    let server = TestServer::start();
    let [a, b] = server.parties(["a", "b"]);
    for i in 0..40 {
        assert_eq!(
            server
                .get(&format!("/api/agents/lookup?handle={}", b.handle))
                .status,
            200,
            "{i}"
        );
        server
            .get_auth("/api/agents/me/inbox", &b.key)
            .assert_status(200);
        send(&server, &a, &b.handle, "same", "x").assert_status(if i == 0 { 201 } else { 200 });
    }
    let refused = server.get_auth("/api/agents/me/inbox", &b.key);
    refused.assert_error(429, "RATE_LIMITED");
    assert!(
        refused
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("120 per minute")
    );
    send(&server, &a, &b.handle, "more", "x").assert_error(429, "RATE_LIMITED");
    server.clock.advance(jiff::SignedDuration::from_secs(60));
    server
        .get(&format!("/api/agents/lookup?handle={}", b.handle))
        .assert_status(200);
}

#[test]
fn the_journal_keeps_digests_never_bodies_and_is_append_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = TestServer::start_in(&data);
    let [a, b] = server.parties(["a", "b"]);
    send(&server, &a, &b.handle, "j", "the secret body");
    server.stop();
    let conn = rusqlite::Connection::open(data.join("bourse.db")).unwrap();
    let (digest, receipt): (String, String) = conn
        .query_row(
            "SELECT body_digest, receipt FROM message_journal",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(digest, sha256("the secret body"));
    assert!(!receipt.contains("the secret body"));
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('message_journal')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!columns.iter().any(|c| c == "body"), "{columns:?}");
    assert!(conn.execute("DELETE FROM message_journal", []).is_err());
    assert!(
        conn.execute("UPDATE message_journal SET body_digest = 'x'", [])
            .is_err()
    );
}

/// One request a receiver saw: its headers and JSON body.
pub(crate) type Seen = (Vec<(String, String)>, Value);

/// A local callback receiver: answers each request with the next scripted status (200 once the
/// script runs out) and records what it received.
pub(crate) struct Receiver {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

impl Receiver {
    pub(crate) fn start(script: &[u16]) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let statuses = Arc::new(Mutex::new(
            script.iter().copied().collect::<VecDeque<u16>>(),
        ));
        let (record, script) = (seen.clone(), statuses.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut headers = Vec::new();
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                loop {
                    line.clear();
                    reader.read_line(&mut line).unwrap();
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    let (name, value) = line.split_once(':').unwrap();
                    headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                }
                let length: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                record.lock().unwrap().push((
                    headers,
                    serde_json::from_slice(&body).unwrap_or(Value::Null),
                ));
                let status = script.lock().unwrap().pop_front().unwrap_or(200);
                let extra = if status == 302 {
                    "Location: https://example.com/\r\n"
                } else {
                    ""
                };
                let answer = format!(
                    "HTTP/1.1 {status} X\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        Receiver { url, seen }
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Waits (bounded) until the receiver has seen `n` requests.
    #[track_caller]
    pub(crate) fn wait_for(&self, n: usize) {
        wait_until(&format!("{n} callback attempts arrived"), WAIT, || {
            let seen = self.count();
            if seen >= n { Ok(()) } else { Err(seen) }
        });
    }
}

pub(crate) fn with_callback(server: &TestServer, name: &str, url: &str) -> Party {
    let body = server
        .post(
            "/api/agents/register",
            &json!({"name": name, "callbackUrl": url}),
        )
        .expect(201);
    Party {
        key: body["apiKey"].as_str().unwrap().to_owned(),
        handle: body["handle"].as_str().unwrap().to_owned(),
    }
}

fn callbacks(server: &TestServer, agent: &Party, status: &str) -> Vec<Value> {
    server
        .get_auth(
            &format!("/api/agents/me/callbacks?status={status}"),
            &agent.key,
        )
        .json()["callbacks"]
        .as_array()
        .unwrap()
        .clone()
}

/// Waits (bounded) until the agent has `n` callbacks in `status`.
#[track_caller]
pub(crate) fn wait_status(
    server: &TestServer,
    agent: &Party,
    status: &str,
    n: usize,
) -> Vec<Value> {
    wait_until(&format!("{n} callbacks are {status}"), WAIT, || {
        let found = callbacks(server, agent, status);
        if found.len() == n {
            Ok(found)
        } else {
            Err(Value::from(found))
        }
    })
}

/// Waits until the pending delivery has recorded `n` failed attempts, so that the next retry
/// is scheduled before the test moves the clock (the receiver sees a request before the worker
/// records its failure).
#[track_caller]
fn wait_attempts(server: &TestServer, agent: &Party, n: usize) {
    wait_until(
        &format!("a pending callback has {n} attempts"),
        WAIT,
        || {
            let pending = callbacks(server, agent, "pending");
            if pending.first().is_some_and(|c| c["attempts"] == n) {
                Ok(())
            } else {
                Err(Value::from(pending))
            }
        },
    );
}

/// Waits until the callback worker has run a whole pass (attempts included) that began after
/// the caller's last step: an attempt that step made due has been made by now.
fn callback_pass(server: &TestServer) {
    server.worker_pass("callback worker", |w| &w.callbacks);
}

#[test]
fn a_callback_is_pushed_signed_with_delivery_headers() {
    let server = TestServer::start();
    let receiver = Receiver::start(&[]);
    let (a, b) = (
        server.party("a"),
        with_callback(&server, "b", &receiver.url),
    );
    let message = send(&server, &a, &b.handle, "push", "pushed body").json();
    receiver.wait_for(1);
    let (headers, payload) = receiver.seen.lock().unwrap()[0].clone();
    assert_eq!(payload["event"], "agent.message");
    assert_eq!(payload["message"]["id"], message["id"]);
    assert_eq!(payload["message"]["body"], "pushed body");
    assert_eq!(
        payload["message"]["receipt"], message["receipt"],
        "the original receipt rides along"
    );
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": payload}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict}");
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-bourse-attempt").as_deref(), Some("1"));
    assert!(header("x-bourse-delivery-id").is_some());
    wait_status(&server, &b, "delivered", 1);
}

#[test]
fn a_transient_failure_is_retried_on_the_schedule_then_delivered() {
    let server = TestServer::start();
    let receiver = Receiver::start(&[500, 302]);
    let (a, b) = (
        server.party("a"),
        with_callback(&server, "b", &receiver.url),
    );
    send(&server, &a, &b.handle, "retry", "x");
    receiver.wait_for(1);
    wait_attempts(&server, &b, 1);
    let pending = wait_status(&server, &b, "pending", 1);
    assert!(pending[0]["lastError"].as_str().unwrap().contains("500"));
    server.clock.advance(jiff::SignedDuration::from_secs(4));
    callback_pass(&server);
    assert_eq!(receiver.count(), 1, "not before 5 s");
    server.clock.advance(jiff::SignedDuration::from_secs(1));
    receiver.wait_for(2);
    // A redirect is a failure, not followed.
    wait_attempts(&server, &b, 2);
    server.clock.advance(jiff::SignedDuration::from_secs(30));
    receiver.wait_for(3);
    let delivered = wait_status(&server, &b, "delivered", 1);
    assert_eq!(delivered[0]["attempts"], 3);
    let attempts: Vec<String> = receiver
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(h, _)| {
            h.iter()
                .find(|(n, _)| n == "x-bourse-attempt")
                .unwrap()
                .1
                .clone()
        })
        .collect();
    assert_eq!(attempts, ["1", "2", "3"]);
}

#[test]
fn five_failures_or_a_permanent_refusal_dead_letter_and_replay_redelivers() {
    let server = TestServer::start();
    let failing = Receiver::start(&[503, 503, 503, 503, 503]);
    let (a, b) = (server.party("a"), with_callback(&server, "b", &failing.url));
    send(&server, &a, &b.handle, "doomed", "x");
    for (n, wait) in [(1, 0), (2, 5), (3, 30), (4, 120), (5, 600)] {
        server.clock.advance(jiff::SignedDuration::from_secs(wait));
        failing.wait_for(n);
        if n < 5 {
            wait_attempts(&server, &b, n);
        }
    }
    let dead = wait_status(&server, &b, "dead", 1);
    assert_eq!(dead[0]["attempts"], 5);
    server.clock.advance(jiff::SignedDuration::from_mins(60));
    callback_pass(&server);
    assert_eq!(failing.count(), 5, "five attempts in all");
    // Polling still works.
    assert_eq!(
        server.get_auth("/api/agents/me/inbox", &b.key).json()["messages"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let gone = Receiver::start(&[410]);
    let c = with_callback(&server, "c", &gone.url);
    send(&server, &a, &c.handle, "gone", "x");
    gone.wait_for(1);
    let dead = wait_status(&server, &c, "dead", 1);
    assert_eq!(dead[0]["attempts"], 1, "410 dead-letters at once");

    // Replay: to the agent's current callback URL, with fresh attempts.
    let healthy = Receiver::start(&[]);
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            &c.key,
            &json!({"callbackUrl": healthy.url}),
        )
        .assert_status(200);
    let id = dead[0]["id"].as_str().unwrap();
    server
        .send_auth(
            "POST",
            &format!("/api/agents/me/callbacks/{id}/replay"),
            &c.key,
            &json!({}),
        )
        .assert_status(200);
    healthy.wait_for(1);
    wait_status(&server, &c, "delivered", 1);
    server
        .send_auth(
            "POST",
            &format!("/api/agents/me/callbacks/{id}/replay"),
            &c.key,
            &json!({}),
        )
        .assert_error(409, "NOT_DEAD");
    server
        .send_auth(
            "POST",
            &format!("/api/agents/me/callbacks/{id}/replay"),
            &b.key,
            &json!({}),
        )
        .assert_error(404, "NOT_FOUND");
    server
        .get_auth("/api/agents/me/callbacks?status=lost", &b.key)
        .assert_error(400, "INVALID_ARGUMENT");
    for (query, name) in [
        ("status=", "status"),
        ("limit=", "limit"),
        ("limit=0", "limit"),
        ("status=dead&status=pending", "status"),
    ] {
        server
            .get_auth(&format!("/api/agents/me/callbacks?{query}"), &b.key)
            .assert_invalid_naming(name);
    }
}

#[test]
fn the_callback_queue_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let receiver = Receiver::start(&[500]);
    let server = TestServer::start_in(&data);
    let (a, b) = (
        server.party("a"),
        with_callback(&server, "b", &receiver.url),
    );
    send(&server, &a, &b.handle, "durable", "x");
    receiver.wait_for(1);
    wait_status(&server, &b, "pending", 1);
    server.stop();

    let server = TestServer::start_in(&data);
    server.clock.advance(jiff::SignedDuration::from_secs(5));
    receiver.wait_for(2);
    wait_status(&server, &b, "delivered", 1);
}
