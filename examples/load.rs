//! A small closed-loop HTTP/1.1 load generator for measuring bourse.
//!
//! ```sh
//! cargo run --release -- serve --listen 127.0.0.1:8080 --data /tmp/bench &
//! cargo run --release --example load -- --url http://127.0.0.1:8080 --path /healthz
//! cargo run --release --example load -- --url http://127.0.0.1:8080 --scenario me
//! cargo run --release --example load -- --url http://127.0.0.1:8080 --scenario patch
//! ```
//!
//! Each connection sends one request at a time over keep-alive and waits for the whole answer;
//! the tool prints requests per second and latency percentiles. Scenarios `me` and `patch`
//! register one agent first and then read or update it with its Bearer key. Loopback only.
//!
//! Scenario `send` measures message acceptance. The limits (30 new messages per sender per
//! minute, 120 admissions per IP per minute, 10 registrations per IP per hour) stay on: the tool
//! registers `--senders` agents, each behind its own client address, which the server believes
//! only when started with `--trusted-proxy 127.0.0.1`:
//!
//! ```sh
//! cargo run --release -- serve --data /tmp/bench-msg --trusted-proxy 127.0.0.1 &
//! cargo run --release --example load -- --scenario send --senders 3000 --seconds 10
//! ```
//! Each sender sends at most 30 messages; the run ends early when they are all used.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

struct Options {
    url: String,
    path: String,
    scenario: String,
    connections: usize,
    seconds: u64,
    senders: usize,
}

fn parse() -> Options {
    let mut options = Options {
        url: "http://127.0.0.1:8080".into(),
        path: "/healthz".into(),
        scenario: "get".into(),
        connections: 32,
        seconds: 10,
        senders: 3000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => options.url = value,
            "--path" => options.path = value,
            "--scenario" => options.scenario = value,
            "--connections" => options.connections = value.parse().expect("--connections N"),
            "--seconds" => options.seconds = value.parse().expect("--seconds N"),
            "--senders" => options.senders = value.parse().expect("--senders N"),
            other => panic!("unknown flag {other}"),
        }
    }
    options
}

#[tokio::main]
async fn main() {
    let options = parse();
    let host = options
        .url
        .strip_prefix("http://")
        .expect("--url must be http://")
        .trim_end_matches('/')
        .to_owned();
    let ip_ok =
        host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]");
    assert!(ip_ok, "load is only ever sent to loopback");

    // Requests are sent in rotation; `patch` alternates two values so every request writes.
    let requests: Vec<String> = match options.scenario.as_str() {
        "get" => vec![format!(
            "GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n",
            options.path
        )],
        "me" => {
            let key = register(&host).await;
            vec![format!(
                "GET /api/agents/me HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n\r\n"
            )]
        }
        "patch" => {
            let key = register(&host).await;
            ["Load A", "Load B"]
                .iter()
                .map(|name| {
                    let body = format!(r#"{{"displayName":"{name}"}}"#);
                    format!(
                        "PATCH /api/agents/me HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                })
                .collect()
        }
        "send" => return send_scenario(&host, &options).await,
        other => panic!("unknown scenario {other}; use get, me, patch or send"),
    };

    let deadline = Instant::now() + Duration::from_secs(options.seconds);
    let mut tasks = Vec::new();
    for _ in 0..options.connections {
        let host = host.clone();
        let requests = requests.clone();
        tasks.push(tokio::spawn(async move {
            worker(&host, &requests, deadline).await
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0usize;
    for task in tasks {
        let (mut lat, err) = task.await.expect("worker");
        latencies.append(&mut lat);
        errors += err;
    }
    let (count, pct) = percentiles(&mut latencies);
    println!(
        "scenario={} path={} connections={} seconds={} requests={count} non2xx={errors} rps={:.0} p50={:?} p99={:?} max={:?}",
        options.scenario,
        options.path,
        options.connections,
        options.seconds,
        count as f64 / options.seconds as f64,
        pct(0.50),
        pct(0.99),
        pct(1.0),
    );
}

/// Sorts the latencies; returns their count and a percentile lookup (1.0 is the maximum).
fn percentiles(latencies: &mut [Duration]) -> (usize, impl Fn(f64) -> Duration + '_) {
    latencies.sort_unstable();
    let count = latencies.len();
    (count, move |p: f64| {
        latencies
            .get(((count as f64 * p) as usize).min(count.saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    })
}

async fn worker(host: &str, requests: &[String], deadline: Instant) -> (Vec<Duration>, usize) {
    let stream = TcpStream::connect(host).await.expect("connect");
    stream.set_nodelay(true).ok();
    let mut stream = BufReader::new(stream);
    let mut latencies = Vec::new();
    let mut errors = 0;
    while Instant::now() < deadline {
        let started = Instant::now();
        let request = &requests[latencies.len() % requests.len()];
        stream
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .expect("write");
        let status = read_response(&mut stream).await;
        latencies.push(started.elapsed());
        if !(200..300).contains(&status) {
            errors += 1;
        }
    }
    (latencies, errors)
}

/// Reads one response with a Content-Length body; returns its status.
async fn read_response(stream: &mut BufReader<TcpStream>) -> u16 {
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
    status
}

async fn register(host: &str) -> String {
    register_as(host, "127.0.0.1").await.0
}

/// Registers an agent from a given client address; returns (key, handle).
async fn register_as(host: &str, client: &str) -> (String, String) {
    let body = r#"{"name":"load-test"}"#;
    let request = format!(
        "POST /api/agents/register HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-For: {client}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(host).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("read");
    let status = answer.split(' ').nth(1).unwrap_or_default();
    if status == "429" {
        let retry = answer
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("retry-after:")
                    .map(|v| v.trim().to_owned())
            })
            .unwrap_or_else(|| "?".into());
        eprintln!(
            "load: registration is rate limited (HTTP 429: 10 new agents per hour per client address; retry after {retry} s). \
             Use fewer --senders, start the server with a trusted proxy so each sender's X-Forwarded-For counts, or wait."
        );
        std::process::exit(1);
    }
    let Some(start) = answer.find("svc_live_") else {
        eprintln!("load: registration refused (HTTP {status}): {answer}");
        std::process::exit(1);
    };
    let key = answer[start..].split('"').next().unwrap().to_owned();
    let handle_at = answer.find("\"handle\":\"").expect("a handle") + "\"handle\":\"".len();
    let handle = answer[handle_at..].split('"').next().unwrap().to_owned();
    (key, handle)
}

/// The address a sender appears to come from (only ever sent as a header; loopback is the only
/// address dialled).
fn client_ip(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

async fn send_scenario(host: &str, options: &Options) {
    let started = Instant::now();
    let mut senders = Vec::with_capacity(options.senders);
    for i in 0..options.senders {
        senders.push((register_as(host, &client_ip(i)).await, client_ip(i)));
    }
    let recipients: Vec<String> = senders
        .iter()
        .take(100)
        .map(|((_, handle), _)| handle.clone())
        .collect();
    eprintln!(
        "registered {} senders in {:.1?}",
        senders.len(),
        started.elapsed()
    );
    let senders = std::sync::Arc::new(senders);
    let recipients = std::sync::Arc::new(recipients);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let budget = 30 * senders.len();
    let deadline = Instant::now() + Duration::from_secs(options.seconds);
    let body = "x".repeat(200);
    let run_started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..options.connections {
        let (host, senders, recipients, next, body) = (
            host.to_owned(),
            senders.clone(),
            recipients.clone(),
            next.clone(),
            body.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(&host).await.expect("connect");
            stream.set_nodelay(true).ok();
            let mut stream = BufReader::new(stream);
            let (mut latencies, mut errors) = (Vec::new(), 0usize);
            while Instant::now() < deadline {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= budget {
                    break;
                }
                let ((key, _), ip) = &senders[n % senders.len()];
                let to = &recipients[n % recipients.len()];
                let json = format!(r#"{{"clientMessageId":"m-{n}","body":"{body}"}}"#);
                let request = format!(
                    "POST /api/agents/{to}/messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nX-Forwarded-For: {ip}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
                    json.len()
                );
                let sent_at = Instant::now();
                stream.get_mut().write_all(request.as_bytes()).await.expect("write");
                let status = read_response(&mut stream).await;
                latencies.push(sent_at.elapsed());
                if status != 201 {
                    errors += 1;
                }
            }
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (mut lat, err) = task.await.expect("worker");
        latencies.append(&mut lat);
        errors += err;
    }
    let elapsed = run_started.elapsed().as_secs_f64();
    let (count, pct) = percentiles(&mut latencies);
    println!(
        "scenario=send senders={} connections={} seconds={elapsed:.1} accepted={} non201={errors} per_sec={:.0} p50={:?} p99={:?} max={:?}",
        senders.len(),
        options.connections,
        count - errors,
        (count - errors) as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(1.0),
    );
}
