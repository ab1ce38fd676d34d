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

#[path = "common/loadgen.rs"]
mod loadgen;

use std::sync::Arc;
use std::time::Duration;

use loadgen::{Requests, closed_loop, get, loopback_host, message_senders, register_as};

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
    let host = loopback_host(&options.url);
    let mut budget = None;
    let expect: fn(u16) -> bool = |status| (200..300).contains(&status);
    // Requests are sent in rotation; `patch` alternates two values so every request writes.
    let requests: Requests = match options.scenario.as_str() {
        "get" => {
            let request = get(&host, &options.path, "");
            Arc::new(move |_| request.clone())
        }
        "me" => {
            let (key, _) = register_as(&host, "127.0.0.1").await;
            let request = get(
                &host,
                "/api/agents/me",
                &format!("Authorization: Bearer {key}\r\n"),
            );
            Arc::new(move |_| request.clone())
        }
        "patch" => {
            let (key, _) = register_as(&host, "127.0.0.1").await;
            let bodies: Vec<Vec<u8>> = ["Load A", "Load B"]
                .iter()
                .map(|name| {
                    let body = format!(r#"{{"displayName":"{name}"}}"#);
                    format!(
                        "PATCH /api/agents/me HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .into_bytes()
                })
                .collect();
            Arc::new(move |n| bodies[n % 2].clone())
        }
        "send" => {
            let started = std::time::Instant::now();
            let (requests, most) = message_senders(&host, options.senders).await;
            eprintln!(
                "registered {} senders in {:.1?}",
                options.senders,
                started.elapsed()
            );
            budget = Some(most);
            requests
        }
        other => panic!("unknown scenario {other}; use get, me, patch or send"),
    };
    let run = closed_loop(
        &host,
        options.connections,
        Duration::from_secs(options.seconds),
        budget,
        requests,
        expect,
    )
    .await;
    println!(
        "scenario={} path={} connections={} seconds={:.1} requests={} unexpected={} rps={:.0} p50={:?} p99={:?} max={:?}",
        options.scenario,
        options.path,
        options.connections,
        run.elapsed.as_secs_f64(),
        run.requests,
        run.unexpected,
        run.per_second(),
        run.percentile(0.50),
        run.percentile(0.99),
        run.percentile(1.0),
    );
}
