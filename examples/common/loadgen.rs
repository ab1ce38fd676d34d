//! The closed-loop HTTP/1.1 load generator shared by `examples/load.rs` and `examples/bench`:
//! each connection sends one request at a time over keep-alive and waits for the whole answer.
//! Loopback only.

#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Builds the bytes of request number `n` (numbered across all connections).
pub type Requests = Arc<dyn Fn(usize) -> Vec<u8> + Send + Sync>;

/// What one run measured.
pub struct Run {
    pub requests: usize,
    /// Answers whose status was not the expected one.
    pub unexpected: usize,
    /// Signed answers (a provenance receipt) whose signature an earlier answer of the run
    /// already carried: answers the server kept and reused rather than made.
    pub reused: usize,
    /// Signed answers in all.
    pub signed: usize,
    pub elapsed: Duration,
    /// Sorted.
    pub latencies: Vec<Duration>,
}

impl Run {
    /// The share of signed answers that were kept ones (0 when none was signed).
    pub fn reuse_rate(&self) -> f64 {
        self.reused as f64 / self.signed.max(1) as f64
    }

    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p` quantile (0.5, 0.99; 1.0 is the maximum).
    pub fn percentile(&self, p: f64) -> Duration {
        let count = self.latencies.len();
        self.latencies
            .get(((count as f64 * p) as usize).min(count.saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    }
}

/// The `host:port` of an `http://` loopback URL; anything else is refused.
pub fn loopback_host(url: &str) -> String {
    let host = url
        .strip_prefix("http://")
        .expect("the URL must be http://")
        .trim_end_matches('/')
        .to_owned();
    let loopback =
        host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]");
    assert!(loopback, "load is only ever sent to loopback");
    host
}

/// Runs `connections` closed loops against `host` for `duration` (or until `budget` requests
/// were sent), counting answers whose status is not `expect(status)`.
pub async fn closed_loop(
    host: &str,
    connections: usize,
    duration: Duration,
    budget: Option<usize>,
    requests: Requests,
    expect: fn(u16) -> bool,
) -> Run {
    let next = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<HashSet<Vec<u8>>>> = Arc::default();
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (host, requests, next, seen) = (
            host.to_owned(),
            requests.clone(),
            next.clone(),
            seen.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(&host).await.expect("connect");
            stream.set_nodelay(true).ok();
            let mut stream = BufReader::new(stream);
            let (mut latencies, mut unexpected, mut reused, mut signed) =
                (Vec::new(), 0usize, 0usize, 0usize);
            while Instant::now() < deadline {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if budget.is_some_and(|budget| n >= budget) {
                    break;
                }
                let request = requests(n);
                let sent = Instant::now();
                stream.get_mut().write_all(&request).await.expect("write");
                let (status, body) = read_response(&mut stream).await;
                latencies.push(sent.elapsed());
                if !expect(status) {
                    unexpected += 1;
                }
                if let Some(signature) = receipt_signature(&body) {
                    signed += 1;
                    if !seen.lock().expect("seen").insert(signature.to_vec()) {
                        reused += 1;
                    }
                }
            }
            (latencies, unexpected, reused, signed)
        }));
    }
    let (mut latencies, mut unexpected, mut reused, mut signed) = (Vec::new(), 0, 0, 0);
    for task in tasks {
        let (mut lat, bad, kept, made) = task.await.expect("a connection");
        latencies.append(&mut lat);
        unexpected += bad;
        reused += kept;
        signed += made;
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Run {
        requests: latencies.len(),
        unexpected,
        reused,
        signed,
        elapsed,
        latencies,
    }
}

/// The signature of an answer's provenance receipt, which comes first in a signed answer's
/// canonical bytes (a kept answer carries the signature it was first sent with).
fn receipt_signature(body: &[u8]) -> Option<&[u8]> {
    const MARK: &[u8] = b"\"signature\":\"";
    let head = &body[..body.len().min(4096)];
    let at = head.windows(MARK.len()).position(|w| w == MARK)? + MARK.len();
    let end = head[at..].iter().position(|&b| b == b'"')?;
    Some(&head[at..at + end])
}

/// A GET with optional extra header lines (each ending in `\r\n`).
pub fn get(host: &str, path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{headers}\r\n").into_bytes()
}

/// Reads one response with a Content-Length body; returns its status and body.
pub async fn read_response(stream: &mut BufReader<TcpStream>) -> (u16, Vec<u8>) {
    let mut line = String::new();
    stream.read_line(&mut line).await.expect("status line");
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0usize;
    loop {
        line.clear();
        stream.read_line(&mut line).await.expect("header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.expect("body");
    (status, body)
}

/// One request on a fresh connection; returns the status and the body.
pub async fn once(host: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(host).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Registers an agent from a given client address (believed only by a server started with
/// `--trusted-proxy 127.0.0.1`); returns (key, handle).
pub async fn register_as(host: &str, client: &str) -> (String, String) {
    let body = r#"{"name":"load-test"}"#;
    let request = format!(
        "POST /api/agents/register HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-For: {client}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, answer) = once(host, &request).await;
    if status == 429 {
        eprintln!(
            "load: registration is rate limited (HTTP 429: 10 new agents per hour per client address). \
             Use fewer senders, start the server with --trusted-proxy 127.0.0.1 so each sender's X-Forwarded-For counts, or wait."
        );
        std::process::exit(1);
    }
    let field = |name: &str| -> Option<String> {
        let at = answer.find(&format!("\"{name}\":\""))? + name.len() + 4;
        answer[at..].split('"').next().map(str::to_owned)
    };
    match (field("apiKey"), field("handle")) {
        (Some(key), Some(handle)) => (key, handle),
        _ => {
            eprintln!("load: registration refused (HTTP {status}): {answer}");
            std::process::exit(1);
        }
    }
}

/// The address sender `i` appears to come from (only ever sent as a header; loopback is the only
/// address dialled).
pub fn client_ip(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

/// The message-send workload: `senders` agents, each behind its own client address, sending
/// 200-byte messages to 100 recipients; at most 30 per sender (the per-sender limit), so the
/// budget is `30 × senders`.
pub async fn message_senders(host: &str, senders: usize) -> (Requests, usize) {
    senders_on(host, senders, Face::Rest).await
}

/// The face a message is sent through.
#[derive(Clone, Copy, Debug)]
pub enum Face {
    /// `POST /api/agents/{handle}/messages`.
    Rest,
    /// A2A JSON-RPC `SendMessage` to `/a2a/agents/{handle}`.
    A2a,
}

/// As [`message_senders`], sending through `face`.
pub async fn senders_on(host: &str, senders: usize, face: Face) -> (Requests, usize) {
    let mut registered = Vec::with_capacity(senders);
    for i in 0..senders {
        registered.push((register_as(host, &client_ip(i)).await, client_ip(i)));
    }
    let recipients: Vec<String> = registered
        .iter()
        .take(100)
        .map(|((_, handle), _)| handle.clone())
        .collect();
    let host = host.to_owned();
    let body = "x".repeat(200);
    let requests: Requests = Arc::new(move |n| {
        let ((key, _), ip) = &registered[n % registered.len()];
        let to = &recipients[n % recipients.len()];
        let (path, json) = match face {
            Face::Rest => (
                format!("/api/agents/{to}/messages"),
                format!(r#"{{"clientMessageId":"m-{n}","body":"{body}"}}"#),
            ),
            Face::A2a => (
                format!("/a2a/agents/{to}"),
                format!(
                    r#"{{"jsonrpc":"2.0","id":"{n}","method":"SendMessage","params":{{"message":{{"messageId":"m-{n}","role":"ROLE_USER","parts":[{{"text":"{body}"}}]}}}}}}"#
                ),
            ),
        };
        format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nX-Forwarded-For: {ip}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
            json.len()
        )
        .into_bytes()
    });
    (requests, 30 * senders)
}
