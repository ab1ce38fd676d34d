//! Routing, error bodies, limits, health.

use serde_json::json;

use crate::support::TestServer;

#[test]
fn unknown_path_is_404_and_wrong_method_is_405_with_allow() {
    let server = TestServer::start();
    let missing = server.get("/api/no-such-thing");
    missing.assert_error(404, "NOT_FOUND");
    assert!(
        missing
            .header("x-request-id")
            .is_some_and(|id| !id.is_empty())
    );

    let wrong = server.request("DELETE", "/api/agents/register", &[], None);
    wrong.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(wrong.header("allow"), Some("POST"));
    let wrong = server.request("POST", "/healthz", &[], None);
    assert_eq!(wrong.header("allow"), Some("GET, HEAD"));
}

#[test]
fn head_answers_get_routes_without_a_body() {
    let server = TestServer::start();
    let head = server.request("HEAD", "/healthz", &[], None);
    head.assert_status(200);
    assert!(head.body.is_empty());
}

#[test]
fn oversized_bodies_are_413_and_bad_json_is_400() {
    let server = TestServer::start();
    let answer = raw_exchange(
        &server.base,
        "POST /api/agents/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("\"PAYLOAD_TOO_LARGE\""), "{answer}");
    let chunked = format!(
        "POST /api/agents/register HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
        (1 << 20) + 1,
        "x".repeat((1 << 20) + 1)
    );
    let answer = raw_exchange(&server.base, &chunked);
    assert!(
        answer.starts_with("HTTP/1.1 413"),
        "a streamed body over the cap is refused too: {answer}"
    );
    server
        .request("POST", "/api/agents/register", &[], Some(b"{\"name\":"))
        .assert_error(400, "INVALID_JSON");
    server
        .request("POST", "/api/agents/register", &[], Some(b"[1,2]"))
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .request("POST", "/api/agents/register", &[], Some(&[0xff, 0xfe]))
        .assert_error(400, "INVALID_JSON");
    assert_eq!(server.get("/api/agents").json()["total"], 0);
}

/// Writes raw bytes to the server and reads its answer (the server may answer before it has
/// read the whole request, as it does for an oversized body).
fn raw_exchange(base: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.strip_prefix("http://").unwrap();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(request.as_bytes());
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}") {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn every_response_carries_a_request_id() {
    let server = TestServer::start();
    let a = server.get("/healthz");
    let b = server.post("/api/agents/register", &json!({}));
    let (a, b) = (
        a.header("x-request-id").unwrap().to_owned(),
        b.header("x-request-id").unwrap().to_owned(),
    );
    assert_ne!(a, b);
}

#[test]
fn health_and_readiness() {
    let server = TestServer::start();
    let health = server.get("/healthz");
    health.assert_status(200);
    assert_eq!(
        health.json(),
        serde_json::json!({"status": "ok"}),
        "unsigned: just the status"
    );
    let ready = server.get("/readyz");
    ready.assert_status(200);
    assert_eq!(ready.json()["status"], "ready");
    assert!(
        ready.json().get("provenance").is_none(),
        "probes are not signed"
    );
}
