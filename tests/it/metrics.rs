//! `GET /metrics`: the Prometheus exposition, the operator's unless `--metrics-public`, counting
//! requests by route template and status class, naming no agent, and passing Prometheus' own
//! `promtool check metrics` without a format or lint problem.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::{BinServer, Party, TestServer, skip_or_fail};

const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The value of the series `series` (its name and labels exactly as exposed), if exposed.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        line.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|number| number.trim().parse().ok())
    })
}

#[track_caller]
fn scrape(server: &TestServer) -> String {
    let answer = server.get_auth("/metrics", &server.operator_key());
    answer.assert_status(200);
    assert_eq!(answer.header("content-type"), Some(CONTENT_TYPE));
    answer.text()
}

#[test]
fn the_operators_scrape_counts_requests_by_route_template_and_status_class_and_names_no_agent() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("metrics-seller", b"a paid deliverable");
    let buyer: Party = server.party("metrics-buyer");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Tide tables", 2_500),
        json!({}),
    );
    let delivered = server.buy_and_receive(&buyer, &listing);
    let purchase = delivered["id"].as_str().unwrap().to_owned();
    server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .assert_status(200);
    server
        .get("/api/marketplace/listings/00000000-0000-4000-8000-000000000000")
        .assert_status(404);
    server.get("/no/such/route").assert_status(404);
    // Registrations from one address: the eleventh within the hour is refused.
    let refused = (0..12).find(|n| {
        server
            .post(
                "/api/agents/register",
                &json!({ "name": format!("crowd-{n}") }),
            )
            .status
            == 429
    });
    assert!(refused.is_some(), "the registration limit never refused");

    // Without the operator token, or with another one: the usual JSON 401.
    server.get("/metrics").assert_error(401, "UNAUTHENTICATED");
    server
        .get_auth("/metrics", &buyer.key)
        .assert_error(401, "UNAUTHENTICATED");

    let text = scrape(&server);
    let requests = |method: &str, route: &str, class: &str| {
        value(
            &text,
            &format!(
                r#"bourse_http_requests_total{{method="{method}",route="{route}",status="{class}"}}"#
            ),
        )
        .unwrap_or(0.0)
    };
    assert_eq!(
        requests("GET", "/api/marketplace/listings/{id}", "2xx"),
        1.0,
        "{text}"
    );
    assert_eq!(
        requests("GET", "/api/marketplace/listings/{id}", "4xx"),
        1.0,
        "{text}"
    );
    assert_eq!(requests("any", "unmatched", "4xx"), 1.0, "{text}");
    assert_eq!(
        requests("POST", "/api/marketplace/listings/{id}/purchase", "2xx"),
        1.0,
        "{text}"
    );
    assert_eq!(
        requests("GET", "/api/marketplace/purchases/{id}", "2xx"),
        1.0,
        "{text}"
    );
    // Ten a client may register in an hour (two before the crowd).
    assert_eq!(
        requests("POST", "/api/agents/register", "2xx"),
        10.0,
        "{text}"
    );
    assert_eq!(
        requests("POST", "/api/agents/register", "4xx"),
        1.0,
        "{text}"
    );
    assert_eq!(requests("GET", "/metrics", "4xx"), 2.0, "{text}");
    assert!(
        value(
            &text,
            r#"bourse_http_request_duration_seconds_count{method="GET",route="/api/marketplace/listings/{id}"}"#
        ) == Some(2.0),
        "{text}"
    );
    assert!(
        value(
            &text,
            r#"bourse_http_request_duration_seconds_bucket{method="GET",route="/api/marketplace/listings/{id}",le="+Inf"}"#
        ) == Some(2.0),
        "{text}"
    );
    // What the database holds, sampled at the scrape.
    assert_eq!(
        value(
            &text,
            r#"bourse_purchases{rail="checkout",state="delivered"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, r#"bourse_purchases{rail="free",state="paid"}"#),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "bourse_escrow_held_sales"),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(&text, "bourse_escrow_held_cents").unwrap_or(0.0) > 0.0,
        "{text}"
    );
    assert_eq!(
        value(&text, r#"bourse_callback_deliveries{status="dead"}"#),
        Some(0.0),
        "{text}"
    );
    // The tallies kept in memory.
    assert!(
        value(
            &text,
            r#"bourse_outbound_requests_total{purpose="deliverable",outcome="success"}"#
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{text}"
    );
    assert!(
        value(
            &text,
            r#"bourse_outbound_requests_total{purpose="verify",outcome="success"}"#
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            r#"bourse_rate_limit_refusals_total{limit="register"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(&text, "bourse_store_commits_total").unwrap_or(0.0) > 0.0,
        "{text}"
    );
    assert!(
        value(&text, "bourse_store_write_queue_depth").is_some(),
        "{text}"
    );
    for histogram in [
        "bourse_store_commit_duration_seconds_count",
        "bourse_store_write_group_jobs_count",
        "bourse_store_read_wait_seconds_count",
    ] {
        assert!(
            value(&text, histogram).unwrap_or(0.0) > 0.0,
            "{histogram}: {text}"
        );
    }
    assert!(
        value(&text, "bourse_signed_answer_cache_misses_total").is_some()
            && value(&text, "bourse_signed_answer_cache_hits_total").is_some(),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("bourse_build_info{version=\"") && line.ends_with(" 1")),
        "{text}"
    );
    // No agent, key, handle, listing or purchase appears: labels are route templates and
    // small fixed sets.
    for private in [
        &seller.key,
        &seller.handle,
        &buyer.key,
        &buyer.handle,
        &listing,
        &purchase,
        &server.operator_key(),
    ] {
        assert!(!text.contains(private.as_str()), "{private} in {text}");
    }
    assert!(!text.contains("crowd-"), "{text}");
    promtool_finds_nothing(
        "metrics::the_operators_scrape_counts_requests_by_route_template_and_status_class_and_names_no_agent",
        &text,
    );
}

#[test]
fn with_metrics_public_anyone_may_scrape_and_it_is_never_signed() {
    let server = TestServer::start_with(|config| config.metrics_public = true);
    server.get("/healthz").assert_status(200);
    let answer = server.get("/metrics");
    answer.assert_status(200);
    assert_eq!(answer.header("content-type"), Some(CONTENT_TYPE));
    let text = answer.text();
    assert!(!text.contains("provenance"), "{text}");
    assert_eq!(
        value(
            &text,
            r#"bourse_http_requests_total{method="GET",route="/healthz",status="2xx"}"#
        ),
        Some(1.0),
        "{text}"
    );
    // HEAD is answered as GET, without a body.
    assert_eq!(server.request("HEAD", "/metrics", &[], None).status, 200);
    promtool_finds_nothing(
        "metrics::with_metrics_public_anyone_may_scrape_and_it_is_never_signed",
        &text,
    );
}

#[test]
fn the_serve_flag_opens_the_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let closed = BinServer::spawn(&dir.path().join("closed"), &[]);
    closed
        .client
        .get("/metrics")
        .assert_error(401, "UNAUTHENTICATED");
    closed.terminate();
    let open = BinServer::spawn(&dir.path().join("open"), &["--metrics-public"]);
    open.client.get("/metrics").assert_status(200);
    let (_, stderr) = open.terminate();
    assert!(stderr.contains("--metrics-public"), "{stderr}");
}

/// `promtool check metrics` reads the exposition on stdin: it must exit 0 and say nothing (no
/// format error, no lint finding).
fn promtool_finds_nothing(test: &str, text: &str) {
    let promtool = std::env::var("BOURSE_PROMTOOL")
        .ok()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| "promtool".to_owned());
    let child = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        skip_or_fail(
            test,
            "promtool not found (Debian's `prometheus` package; or set BOURSE_PROMTOOL)",
        );
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && said.trim().is_empty(),
        "promtool check metrics: {}\n{said}\n--- the exposition:\n{text}",
        output.status
    );
}
