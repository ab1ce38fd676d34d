//! The Prometheus metrics of one server (`GET /metrics`): a recorder of its own (no global one,
//! so tests run many servers in one process), the handles the hot paths touch, and the text
//! exposition. A neutral module, like `assets`: the HTTP edge counts requests here, the store
//! records its writer's groups and its readers' waits through the [`StoreMeters`] it is given,
//! and the service sets what is sampled at scrape time (database counts, in-memory tallies)
//! before [`Telemetry::render`].
//!
//! Names follow Prometheus' conventions: the `bourse_` prefix, base units (`_seconds`), `_total`
//! on counters, and labels of small fixed sets only (a route template, never a path, an agent,
//! a key or a listing).

use std::sync::OnceLock;
use std::time::Duration;

use ::metrics::{Counter, Gauge, Histogram, Key, Label, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};

use crate::operations::Operation;

/// The content type of the exposition (Prometheus' text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency buckets for an HTTP server, in seconds: 0.5 ms to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The store's waits and commits are shorter: 50 µs to 10 s.
const STORE_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 10.0,
];

/// Jobs committed together by the writer (at most 256).
const GROUP_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// The status classes a request is counted under.
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// Every metric: name, kind, unit and help text (described once, so each has `# HELP`).
const DESCRIBED: &[(&str, Kind, &str)] = &[
    (
        REQUESTS,
        Kind::Counter,
        "HTTP requests answered, by method, route template and status class.",
    ),
    (
        DURATION,
        Kind::Histogram,
        "Time to answer an HTTP request (to its head, for a stream), by method and route template.",
    ),
    (
        "bourse_store_write_queue_depth",
        Kind::Gauge,
        "Write jobs queued for the writer thread and not yet taken.",
    ),
    (
        "bourse_store_write_group_jobs",
        Kind::Histogram,
        "Write jobs committed together in one transaction (group commit).",
    ),
    (
        "bourse_store_commit_duration_seconds",
        Kind::Histogram,
        "Time from BEGIN IMMEDIATE to the COMMIT of one group of write jobs.",
    ),
    (
        "bourse_store_commits_total",
        Kind::Counter,
        "Write transactions committed since start.",
    ),
    (
        "bourse_store_read_wait_seconds",
        Kind::Histogram,
        "Time a read waited in the queue before a reader thread took it.",
    ),
    (
        "bourse_signed_answer_cache_hits_total",
        Kind::Counter,
        "Public answers served from the kept signed answers.",
    ),
    (
        "bourse_signed_answer_cache_misses_total",
        Kind::Counter,
        "Lookups of a kept signed answer that found none still good.",
    ),
    (
        "bourse_outbound_requests_total",
        Kind::Counter,
        "Calls to users' URLs (deliverables, endpoint verification, callbacks), by purpose and outcome.",
    ),
    (
        "bourse_callback_attempts_total",
        Kind::Counter,
        "Push callback attempts, by what became of the delivery (delivered, retry, dead).",
    ),
    (
        "bourse_callback_deliveries",
        Kind::Gauge,
        "Push callback deliveries by status; dead is the dead-letter queue.",
    ),
    (
        "bourse_purchases",
        Kind::Gauge,
        "Purchases by rail and state.",
    ),
    (
        "bourse_escrow_held_sales",
        Kind::Gauge,
        "Sales whose money is held in escrow.",
    ),
    (
        "bourse_escrow_held_cents",
        Kind::Gauge,
        "Seller net held in escrow, in cents (USD).",
    ),
    (
        "bourse_rate_limit_refusals_total",
        Kind::Counter,
        "Requests refused by a rate limit, by limit.",
    ),
    (
        "bourse_follower_lag_seconds",
        Kind::Gauge,
        "A follower's replication lag: now minus the newest primary heartbeat in its replica.",
    ),
    (
        "bourse_build_info",
        Kind::Gauge,
        "Always 1; the labels name the build.",
    ),
];

const REQUESTS: &str = "bourse_http_requests_total";
const DURATION: &str = "bourse_http_request_duration_seconds";

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// What the store records on its threads.
#[derive(Clone)]
pub struct StoreMeters {
    /// Jobs per committed group.
    pub group_jobs: Histogram,
    /// BEGIN to COMMIT of a group.
    pub commit_seconds: Histogram,
    /// Queue wait of a read.
    pub read_wait_seconds: Histogram,
}

/// The per-route handles, registered on first use so only routes that were called are shown.
struct RouteMeters {
    method: &'static str,
    route: &'static str,
    classes: [OnceLock<Counter>; 5],
    duration: OnceLock<Histogram>,
}

/// The metrics of one server.
pub struct Telemetry {
    recorder: PrometheusRecorder,
    /// One per REST binding, in `Operation::routes` order (the router's), then one for
    /// requests that matched no route.
    routes: Box<[RouteMeters]>,
    callback_attempts: [Counter; 3],
}

static METADATA: Metadata<'static> =
    Metadata::new("bourse", ::metrics::Level::INFO, Some(module_path!()));

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry::new()
    }
}

impl Telemetry {
    /// A recorder with every metric described and the histograms' buckets set.
    ///
    /// # Panics
    /// Never: the bucket lists are not empty.
    pub fn new() -> Telemetry {
        let recorder = PrometheusBuilder::new()
            .set_buckets(LATENCY_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Prefix("bourse_store_".into()), STORE_BUCKETS)
            })
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full("bourse_store_write_group_jobs".into()),
                    GROUP_BUCKETS,
                )
            })
            .expect("bucket lists are not empty")
            .build_recorder();
        for (name, kind, help) in DESCRIBED {
            let unit = name.ends_with("_seconds").then_some(Unit::Seconds);
            let (name, help) = ((*name).into(), (*help).into());
            match kind {
                Kind::Counter => recorder.describe_counter(name, unit, help),
                Kind::Gauge => recorder.describe_gauge(name, unit, help),
                Kind::Histogram => recorder.describe_histogram(name, unit, help),
            }
        }
        let routes = Operation::routes()
            .map(|(method, route, _)| (method, route))
            .chain([("any", "unmatched")])
            .map(|(method, route)| RouteMeters {
                method,
                route,
                classes: Default::default(),
                duration: OnceLock::new(),
            })
            .collect();
        let callback_attempts = ["delivered", "retry", "dead"].map(|outcome| {
            recorder.register_counter(
                &Key::from_parts(
                    "bourse_callback_attempts_total",
                    vec![Label::from_static_parts("outcome", outcome)],
                ),
                &METADATA,
            )
        });
        Telemetry {
            recorder,
            routes,
            callback_attempts,
        }
    }

    /// Sets `bourse_build_info` (always 1) with this build's version and its schema version.
    pub fn build_info(&self, schema: i32) {
        self.gauge(
            "bourse_build_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("schema", &schema.to_string()),
            ],
        )
        .set(1.0);
    }

    /// Counts one answered request: `route` is the router's index of the binding that matched
    /// (`None` when none did). Touches two atomics once the route's handles exist.
    pub fn request(&self, route: Option<usize>, status: u16, took: Duration) {
        let meters = &self.routes[route
            .unwrap_or(self.routes.len() - 1)
            .min(self.routes.len() - 1)];
        let class = usize::from((status / 100).clamp(1, 5) - 1);
        meters.classes[class]
            .get_or_init(|| {
                self.recorder.register_counter(
                    &Key::from_parts(
                        REQUESTS,
                        vec![
                            Label::from_static_parts("method", meters.method),
                            Label::from_static_parts("route", meters.route),
                            Label::from_static_parts("status", CLASSES[class]),
                        ],
                    ),
                    &METADATA,
                )
            })
            .increment(1);
        meters
            .duration
            .get_or_init(|| {
                self.recorder.register_histogram(
                    &Key::from_parts(
                        DURATION,
                        vec![
                            Label::from_static_parts("method", meters.method),
                            Label::from_static_parts("route", meters.route),
                        ],
                    ),
                    &METADATA,
                )
            })
            .record(took.as_secs_f64());
    }

    /// The handles the store records through.
    pub fn store_meters(&self) -> StoreMeters {
        StoreMeters {
            group_jobs: self.histogram("bourse_store_write_group_jobs"),
            commit_seconds: self.histogram("bourse_store_commit_duration_seconds"),
            read_wait_seconds: self.histogram("bourse_store_read_wait_seconds"),
        }
    }

    /// Counts a push callback attempt by what became of its delivery.
    pub fn callback_attempt(&self, outcome: CallbackOutcome) {
        self.callback_attempts[outcome as usize].increment(1);
    }

    /// A gauge set at scrape time.
    pub fn gauge(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Gauge {
        self.recorder
            .register_gauge(&Key::from_parts(name, to_labels(labels)), &METADATA)
    }

    /// A counter whose total is kept elsewhere and copied in at scrape time.
    pub fn counter(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Counter {
        self.recorder
            .register_counter(&Key::from_parts(name, to_labels(labels)), &METADATA)
    }

    fn histogram(&self, name: &'static str) -> Histogram {
        self.recorder
            .register_histogram(&Key::from_static_name(name), &METADATA)
    }

    /// Folds the histograms' recorded samples into their buckets, so memory stays bounded
    /// between scrapes (the server calls it every few seconds).
    pub fn upkeep(&self) {
        self.recorder.handle().run_upkeep();
    }

    /// The exposition, in Prometheus' text format.
    pub fn render(&self) -> String {
        self.recorder.handle().render()
    }
}

/// What became of a delivery after a callback attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallbackOutcome {
    Delivered = 0,
    Retry = 1,
    Dead = 2,
}

fn to_labels(labels: &[(&'static str, &str)]) -> Vec<Label> {
    labels
        .iter()
        .map(|(key, value)| Label::new(*key, (*value).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_line_up_with_the_router_and_requests_render_by_template_and_class() {
        let telemetry = Telemetry::new();
        telemetry.build_info(10);
        let index = Operation::routes()
            .position(|(method, route, _)| {
                method == "GET" && route == "/api/marketplace/listings/{id}"
            })
            .unwrap();
        telemetry.request(Some(index), 200, Duration::from_millis(3));
        telemetry.request(Some(index), 404, Duration::from_millis(1));
        telemetry.request(None, 404, Duration::from_micros(200));
        let text = telemetry.render();
        assert!(
            text.contains(
                r#"bourse_http_requests_total{method="GET",route="/api/marketplace/listings/{id}",status="2xx"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"route="unmatched",status="4xx"} 1"#),
            "{text}"
        );
        assert!(
            text.contains("# HELP bourse_http_request_duration_seconds "),
            "{text}"
        );
        assert!(text.contains(r#"bourse_http_request_duration_seconds_bucket{method="GET",route="/api/marketplace/listings/{id}",le="0.005"} 2"#), "{text}");
        assert!(text.contains(r#"bourse_build_info{version=""#), "{text}");
    }
}
