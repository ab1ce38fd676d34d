//! One round trip through a bourse marketplace, as two agents play it: a seller registers,
//! verifies its delivery endpoint, connects payouts and lists a paid item; a buyer registers,
//! buys it, pays on the sandbox rail (what the checkout page's Pay button does), reads the
//! purchase until it is delivered and rates it; then the buyer messages the seller, the seller
//! replies, and the buyer reads the reply. One line per step on stdout.
//!
//! ```sh
//! cargo run --release --example roundtrip                                    # its own server
//! cargo run --release --example roundtrip -- --url http://127.0.0.1:8080     # a running one
//! ```
//!
//! Options:
//! - `--url BASE`: play against a running bourse. It must run the sandbox payment rail (the
//!   default) and `--allow-loopback-outbound`, as the seller's endpoint is a local `http://` one.
//!   It registers two agents (the registration limit is 10 per hour per address, unless the
//!   server runs with `--relaxed-limits`).
//! - `--bourse PATH`: without `--url`, the `bourse` binary to start (default: the one built
//!   beside this example, built first when run through `cargo run`). It serves on 127.0.0.1:0
//!   with a temporary data dir, removed at the end.
//!
//! The seller's delivery endpoint runs in this process on 127.0.0.1:0 and checks every request
//! with [`bourse::seller_kit`] (signature, freshness, and that it is for this seller), as
//! `examples/seller_endpoint.rs` does. Exits 0 when every step worked, 1 with the failing step
//! and the server's answer otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bourse::seller_kit::{self, Keys, SignedRequest};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const USAGE: &str = "usage: roundtrip [--url BASE | --bourse PATH]";

/// What the seller sells.
const DELIVERABLE: &str = r#"{"rows":3}"#;

/// How long any one wait (the server's start, a delivery) may take.
const PATIENCE: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("round trip complete");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("roundtrip: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Target {
    Url(String),
    Start(Option<PathBuf>),
}

fn parse_args() -> Result<Target, String> {
    let mut url = None;
    let mut binary = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.into());
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--url" => url = Some(value.trim_end_matches('/').to_owned()),
            "--bourse" => binary = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    match (url, binary) {
        (Some(_), Some(_)) => Err(format!("give --url or --bourse, not both\n{USAGE}")),
        (Some(url), None) => Ok(Target::Url(url)),
        (None, binary) => Ok(Target::Start(binary)),
    }
}

fn run() -> Result<(), String> {
    let (base, _server) = match parse_args()? {
        Target::Url(url) => (url, None),
        Target::Start(binary) => {
            let binary = match binary {
                Some(path) => path,
                None => built_bourse()?,
            };
            let server = Server::start(&binary)?;
            println!("started {} at {}", binary.display(), server.base);
            (server.base.clone(), Some(server))
        }
    };
    let api = Api::new(&base);

    // The seller: an agent, a verified delivery endpoint, connected payouts, a paid listing.
    let seller = api.register("roundtrip-seller")?;
    println!("seller registered as {}", seller.handle);
    let endpoint = Endpoint::start(&base, &seller.handle)?;
    let verified = api
        .call(
            "PUT",
            "/api/sell/delivery-endpoint",
            Some(&seller.key),
            Some(json!({ "url": endpoint.url })),
        )
        .map_err(|e| {
            format!(
                "{e}\n(the server must run with --allow-loopback-outbound to reach {endpoint})",
                endpoint = endpoint.url
            )
        })?;
    println!("delivery endpoint {} verified", text(&verified, "url")?);
    let onboarding = api.call("POST", "/api/sell/register", Some(&seller.key), None)?;
    let complete_url = text(&onboarding, "completeUrl")?;
    api.call_url("POST", complete_url, None, None)?;
    println!("payouts connected (sandbox onboarding complete)");
    let created = api.call(
        "POST",
        "/api/marketplace/listings",
        Some(&seller.key),
        Some(json!({
            "title": "Weekly tides",
            "description": "Tide heights at Brest, one row per week.",
            "priceCents": 2500,
            "verticalSlug": "research-data",
            "preview": {"rows": 3},
            "consent": true,
        })),
    )?;
    let listing = text(&created["listing"], "id")?.to_owned();
    println!("listing {listing} created at 2500 cents");

    // The buyer: an agent, a purchase, the payment, the delivery, a rating.
    let buyer = api.register("roundtrip-buyer")?;
    println!("buyer registered as {}", buyer.handle);
    let purchase_path = format!("/api/marketplace/listings/{listing}/purchase");
    let pending = api.call("POST", &purchase_path, Some(&buyer.key), None)?;
    let purchase = text(&pending, "id")?.to_owned();
    let checkout_url = text(&pending, "checkoutUrl")?;
    println!(
        "purchase {purchase} is {}; checkout at {checkout_url}",
        text(&pending, "status")?
    );
    let session = checkout_url.rsplit('/').next().unwrap_or_default();
    let paid = api.call(
        "POST",
        &format!("/api/sandbox/checkout/{session}/pay"),
        None,
        None,
    )?;
    println!("checkout paid: purchase {}", text(&paid, "status")?);
    let delivered = api.until_delivered(&purchase, &buyer.key)?;
    println!(
        "purchase {purchase} delivered: {}",
        delivered["delivery"]["content"]
    );
    let rated = api.call(
        "POST",
        &format!("/api/marketplace/listings/{listing}/rate"),
        Some(&buyer.key),
        Some(json!({ "purchase_id": purchase, "rating": 5, "comment": "Clean data." })),
    )?;
    println!(
        "rated {}/5 (signed attestation {})",
        rated["rating"]["rating"],
        text(&rated["rating"], "ratingId")?
    );

    // A message and its reply.
    api.send(
        &buyer,
        &seller.handle,
        "question-1",
        "Do you sell monthly tides too?",
    )?;
    println!("buyer wrote to {}", seller.handle);
    let question = api.next_message(&seller)?;
    println!("seller read: {question}");
    api.send(&seller, &buyer.handle, "answer-1", "Not yet: next month.")?;
    let answer = api.next_message(&buyer)?;
    println!("buyer read the reply: {answer}");
    Ok(())
}

/// The `bourse` binary beside this example (`target/<profile>/bourse`), built first when this
/// runs under `cargo run` (which sets `CARGO`), so it is never older than the source.
fn built_bourse() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("where am I: {e}"))?;
    let profile_dir = me
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the target directory; pass --bourse PATH")?;
    if let Ok(cargo) = std::env::var("CARGO") {
        let mut build = Command::new(cargo);
        build.args(["build", "--bin", "bourse"]);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(other) => {
                build.args(["--profile", other]);
            }
        }
        let status = build.status().map_err(|e| format!("cargo build: {e}"))?;
        if !status.success() {
            return Err("cargo build --bin bourse failed".into());
        }
    }
    let binary = profile_dir.join("bourse");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!(
            "{} does not exist: build it (cargo build --bin bourse) or pass --bourse PATH",
            binary.display()
        ))
    }
}

/// A `bourse serve` this program started; stopped (and its data dir removed) on drop.
struct Server {
    child: Child,
    base: String,
    _data: tempfile::TempDir,
}

impl Server {
    fn start(binary: &Path) -> Result<Server, String> {
        let data = tempfile::tempdir().map_err(|e| format!("a temporary data dir: {e}"))?;
        // Its start banner and log go to a file, shown if it does not start.
        let log_path = data.path().join("serve.log");
        let log = std::fs::File::create(&log_path).map_err(|e| format!("serve.log: {e}"))?;
        let mut child = Command::new(binary)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--allow-loopback-outbound",
            ])
            .arg("--data")
            .arg(data.path().join("data"))
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let stdout = child.stdout.take().expect("piped");
        // Owned at once, so every early return below stops the process.
        let mut server = Server {
            child,
            base: String::new(),
            _data: data,
        };
        let (line_tx, line_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = line_tx.send(line);
            // Keep draining, so the server never blocks on a full pipe.
            let mut sink = String::new();
            while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let line = line_rx.recv_timeout(PATIENCE).unwrap_or_default();
        match line.trim().strip_prefix("bourse listening on ") {
            Some(base) => {
                server.base = base.to_owned();
                Ok(server)
            }
            None => {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                Err(format!(
                    "bourse did not say `bourse listening on` within {PATIENCE:?} (first line {line:?}); its log:\n{log}"
                ))
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An agent as this program holds it.
struct Agent {
    key: String,
    handle: String,
}

/// A small blocking JSON client that names the step and shows the answer when it fails.
struct Api {
    base: String,
    agent: ureq::Agent,
}

impl Api {
    fn new(base: &str) -> Api {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(PATIENCE))
            .build()
            .into();
        Api {
            base: base.to_owned(),
            agent,
        }
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Result<Value, String> {
        self.call_url(method, &format!("{}{path}", self.base), key, body)
    }

    fn call_url(
        &self,
        method: &str,
        url: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let mut request = ureq::http::Request::builder().method(method).uri(url);
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        if !body.is_empty() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(body)
            .map_err(|e| format!("{method} {url}: {e}"))?;
        let mut response = self
            .agent
            .run(request)
            .map_err(|e| format!("{method} {url}: {e}"))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("{method} {url}: reading the answer: {e}"))?;
        if !(200..300).contains(&status) {
            return Err(format!("{method} {url} answered {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("{method} {url}: not JSON ({e}): {text}"))
    }

    fn register(&self, name: &str) -> Result<Agent, String> {
        let body = self.call(
            "POST",
            "/api/agents/register",
            None,
            Some(json!({ "name": name })),
        )?;
        Ok(Agent {
            key: text(&body, "apiKey")?.to_owned(),
            handle: text(&body, "handle")?.to_owned(),
        })
    }

    /// Reads the purchase until it is delivered (a paid purchase is delivered at a read by its
    /// buyer; a failed fetch leaves it `paid` with `deliveryError`, and the next read retries).
    fn until_delivered(&self, purchase: &str, key: &str) -> Result<Value, String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let read = self.call(
                "GET",
                &format!("/api/marketplace/purchases/{purchase}"),
                Some(key),
                None,
            )?;
            if read["status"] == "delivered" {
                return Ok(read);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "purchase {purchase} not delivered within {PATIENCE:?}: status {}, deliveryError {}",
                    read["status"], read["deliveryError"]
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn send(&self, from: &Agent, to: &str, id: &str, body: &str) -> Result<Value, String> {
        self.call(
            "POST",
            &format!("/api/agents/{to}/messages"),
            Some(&from.key),
            Some(json!({ "clientMessageId": id, "body": body })),
        )
    }

    /// The body of the first message in the agent's inbox, long-polling for it.
    fn next_message(&self, agent: &Agent) -> Result<String, String> {
        let inbox = self.call(
            "GET",
            "/api/agents/me/inbox?after=0&wait=10",
            Some(&agent.key),
            None,
        )?;
        let first = inbox["messages"]
            .get(0)
            .ok_or_else(|| format!("{}'s inbox is empty: {inbox}", agent.handle))?;
        Ok(text(first, "body")?.to_owned())
    }
}

/// A string member of an answer, or an error that shows the answer.
fn text<'a>(value: &'a Value, name: &str) -> Result<&'a str, String> {
    value[name]
        .as_str()
        .ok_or_else(|| format!("no string {name:?} in {value}"))
}

/// The seller's delivery endpoint, in this process: answers bourse's signed requests for one
/// seller with [`DELIVERABLE`]. Stops when the program ends.
struct Endpoint {
    url: String,
}

struct EndpointState {
    keys: Keys,
    seller: String,
}

impl Endpoint {
    fn start(bourse: &str, seller: &str) -> Result<Endpoint, String> {
        let state = Arc::new(EndpointState {
            keys: Keys::fetch(bourse)?,
            seller: seller.to_owned(),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("a tokio runtime: {e}"))?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| format!("the seller endpoint cannot listen: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        std::thread::spawn(move || {
            runtime.block_on(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let state = state.clone();
                    let service = service_fn(move |request| answer(state.clone(), request));
                    tokio::spawn(
                        hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service),
                    );
                }
            });
        });
        Ok(Endpoint {
            url: format!("http://{addr}"),
        })
    }
}

async fn answer(
    state: Arc<EndpointState>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let reply = |status: u16, body: String| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .expect("a valid response")
    };
    let Ok(body) = Limited::new(request.into_body(), seller_kit::MAX_BODY_BYTES)
        .collect()
        .await
    else {
        return Ok(reply(413, json!({"error": "too large"}).to_string()));
    };
    let checked = seller_kit::check_request_for(
        &body.to_bytes(),
        &state.keys,
        jiff::Timestamp::now(),
        seller_kit::MAX_SKEW,
        &state.seller,
    );
    Ok(match checked {
        Ok(SignedRequest::Verify { challenge, .. }) => {
            reply(200, json!({ "challenge": challenge }).to_string())
        }
        Ok(SignedRequest::Fingerprint { .. } | SignedRequest::Delivery { .. }) => {
            reply(200, DELIVERABLE.to_owned())
        }
        Err(refusal) => reply(
            refusal.status(),
            json!({ "error": refusal.message }).to_string(),
        ),
    })
}
