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

/// Writes raw bytes to the server and reads everything it answers until it closes.
fn raw_until_close(base: &str, request: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(base.strip_prefix("http://").unwrap()).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
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

/// A request head that stops arriving is answered 408 with the usual JSON error once the read
/// timeout passes (30 s by default; 300 ms here), and the connection closes; an idle keep-alive
/// connection, with nothing started since its last answer, is closed without a word.
#[test]
fn a_request_head_that_stops_arriving_is_a_json_408() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let server = TestServer::start_with(|config| config.read_timeout = Duration::from_millis(300));
    let addr = server.base.strip_prefix("http://").unwrap().to_owned();
    let read_to_end = |stream: &mut std::net::TcpStream| {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    };

    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nAcc")
        .unwrap();
    let started = Instant::now();
    let answer = read_to_end(&mut stream);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered in bounded time"
    );
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nx-request-id: req_"),
        "every answer carries a request id: {answer}"
    );
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{answer}"
    );
    let body: serde_json::Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"error": {"code": "REQUEST_TIMEOUT", "message": "the request did not arrive in time", "status": 408}})
    );

    // Idle after a complete exchange: closed, no 408 nobody asked for.
    let mut idle = std::net::TcpStream::connect(&addr).unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let answer = read_to_end(&mut idle);
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    // Never a byte sent: closed too.
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    assert_eq!(read_to_end(&mut silent), "");
    // A body that arrives after its answer (read and dropped to keep the connection), then
    // idle: closed, no 408 either.
    let mut late_body = std::net::TcpStream::connect(&addr).unwrap();
    late_body
        .write_all(b"POST /no/such/route HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n")
        .unwrap();
    let mut head = [0u8; 12];
    late_body.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 404");
    late_body.write_all(b"{\"late\": true}").unwrap();
    let answer = read_to_end(&mut late_body);
    assert!(!answer.contains("HTTP/1.1 408"), "{answer}");
    // The server goes on serving.
    server.get("/healthz").expect(200);
}

/// A request head the HTTP parser refuses gets the usual JSON error too: 400 for what is not
/// HTTP/1.1, 414 for a target too long, 431 for a header section too large.
#[test]
fn unreadable_request_heads_get_json_errors() {
    let server = TestServer::start();
    let cases = [
        ("GARBAGE\r\n\r\n".to_owned(), 400, "MALFORMED_REQUEST"),
        (
            "GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n".to_owned(),
            400,
            "MALFORMED_REQUEST",
        ),
        (
            format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000)),
            414,
            "URI_TOO_LONG",
        ),
        (
            format!(
                "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
                "a".repeat(500_000)
            ),
            431,
            "HEADERS_TOO_LARGE",
        ),
    ];
    for (request, status, code) in cases {
        let answer = raw_exchange(&server.base, &request);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{code}: {answer}"
        );
        let body: serde_json::Value =
            serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or_default())
                .unwrap_or_else(|e| panic!("{code}: {e}: {answer}"));
        assert_eq!(body["error"]["code"], code, "{answer}");
        assert_eq!(body["error"]["status"], status, "{answer}");
    }
    // A good request after a pipelined one still works, and the server goes on serving.
    let two = raw_until_close(
        &server.base,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n\
          GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(two.matches("HTTP/1.1 200 ").count(), 2, "{two}");
    // A malformed request after a good one on the same connection (read to the close: two
    // answers), and one in HTTP/1.0.
    let pipelined = raw_until_close(
        &server.base,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nBad Header\r\n\r\n",
    );
    assert!(pipelined.starts_with("HTTP/1.1 200 "), "{pipelined}");
    assert!(pipelined.contains("\"MALFORMED_REQUEST\""), "{pipelined}");
    let old = raw_exchange(&server.base, "GET /healthz HTTP/1.0\r\nBad Header\r\n\r\n");
    assert!(old.contains("\"MALFORMED_REQUEST\""), "{old}");
    server.get("/healthz").expect(200);
}

/// A client that asks to `Expect: 100-continue` gets the interim answer, sends its body and gets
/// the real answer.
#[test]
fn expect_100_continue_is_honoured() {
    use std::io::{Read, Write};
    let server = TestServer::start();
    let addr = server.base.strip_prefix("http://").unwrap();
    let body = br#"{"name": "patient"}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /api/agents/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut interim = [0u8; 25];
    stream.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    stream.write_all(body).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201 "), "{answer}");
    let registered: serde_json::Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(registered["name"], "patient");
}
