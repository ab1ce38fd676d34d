//! A seller's delivery endpoint: answers bourse's signed requests with one file.
//!
//! ```sh
//! cargo run --example seller_endpoint -- --file ./dataset.csv --bourse-url https://bourse.example.com
//! cargo run --example seller_endpoint -- --file ./report.pdf --content-type application/pdf \
//!     --listen 127.0.0.1:8443 --public-key 11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo
//! ```
//!
//! Options: `--file PATH` (required), `--content-type TYPE` (default: guessed from the
//! extension: `.json` application/json, `.csv` text/csv, `.txt` text/plain, otherwise
//! application/octet-stream), `--listen ADDR` (default `127.0.0.1:0`, a free port), and which
//! `--seller-handle A-XXXXXXXX` makes the endpoint answer only requests for that seller (always
//! set it in production: otherwise another agent could verify this URL as its own). The
//! bourse to trust: `--bourse-url URL` (its keys are fetched once from `GET
//! {URL}/api/signing-key`, and again when a request names an unknown key id, to follow a key
//! rotation) or `--public-key B64URL` (one fixed Ed25519 key).
//!
//! It prints one line, `seller endpoint listening on http://IP:PORT`, then serves `POST` on any
//! path. Each body is checked with [`bourse::seller_kit`]: the Ed25519 signature over the
//! canonical JSON, `issuedAt` within 300 s of this machine's clock, and a known type.
//! - `bourse.verify` → 200 `{"challenge": <the same value>}` (proves you own the URL);
//! - `bourse.fingerprint` and `bourse.delivery` → 200 with the file's bytes, read fresh from
//!   disk on every request (so editing the file changes the deliverable), and its content type;
//! - anything else → 401 (bad or missing signature) or 400 (malformed, stale, unknown type)
//!   with `{"error": "..."}`.
//!
//! One line per request goes to stderr. Stop it with Ctrl-C or SIGTERM (it then exits 0).
//!
//! In production, run it behind a TLS terminator (a reverse proxy with a certificate): bourse
//! only dials `https://` delivery URLs, unless the bourse server runs with
//! `--allow-loopback-outbound` (local testing).

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bourse::seller_kit::{self, Keys, RefusalKind, SignedRequest};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::TcpListener;

const USAGE: &str = "usage: seller_endpoint --file PATH [--content-type TYPE] \
[--listen 127.0.0.1:0] [--seller-handle A-XXXXXXXX] (--bourse-url URL | --public-key B64URL)";

/// Refetches of the key set triggered by unknown key ids are at most this frequent, so
/// unsigned junk cannot turn the endpoint into a request amplifier against bourse.
const REFETCH_INTERVAL: Duration = Duration::from_secs(5);

enum KeySource {
    Bourse(String),
    PublicKey(String),
}

struct Options {
    file: PathBuf,
    content_type: String,
    listen: SocketAddr,
    source: KeySource,
    /// The seller's own handle: requests for any other handle are refused.
    seller_handle: Option<String>,
}

struct State {
    options: Options,
    keys: RwLock<Keys>,
    last_fetch: Mutex<Instant>,
}

fn parse_args() -> Result<Options, String> {
    let mut file = None;
    let mut content_type = None;
    let mut listen: SocketAddr = "127.0.0.1:0".parse().expect("a valid default");
    let mut bourse_url = None;
    let mut public_key = None;
    let mut seller_handle = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.into());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--file" => file = Some(PathBuf::from(value)),
            "--content-type" => content_type = Some(value),
            "--listen" => {
                listen = value
                    .parse()
                    .map_err(|e| format!("--listen {value}: {e}"))?;
            }
            "--bourse-url" => bourse_url = Some(value),
            "--public-key" => public_key = Some(value),
            "--seller-handle" => seller_handle = Some(value),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let file = file.ok_or("--file is required")?;
    let source = match (bourse_url, public_key) {
        (Some(url), None) => KeySource::Bourse(url),
        (None, Some(key)) => KeySource::PublicKey(key),
        _ => return Err("give exactly one of --bourse-url and --public-key".into()),
    };
    let content_type = content_type.unwrap_or_else(|| guess_content_type(&file).to_owned());
    if hyper::header::HeaderValue::from_str(&content_type).is_err() {
        return Err(format!(
            "--content-type {content_type:?} is not a valid header value"
        ));
    }
    if seller_handle.is_none() {
        eprintln!(
            "warning: without --seller-handle this endpoint answers for any seller; pass your handle in production"
        );
    }
    Ok(Options {
        file,
        content_type,
        listen,
        source,
        seller_handle,
    })
}

fn guess_content_type(path: &std::path::Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("json") => "application/json",
        Some("csv") => "text/csv",
        Some("txt") => "text/plain",
        _ => "application/octet-stream",
    }
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("seller_endpoint: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Err(error) = std::fs::metadata(&options.file) {
        eprintln!("seller_endpoint: {}: {error}", options.file.display());
        return ExitCode::from(2);
    }
    let keys = match &options.source {
        KeySource::Bourse(url) => match Keys::fetch(url) {
            Ok(keys) => keys,
            Err(error) => {
                eprintln!("seller_endpoint: {error}");
                return ExitCode::FAILURE;
            }
        },
        KeySource::PublicKey(key) => Keys::from_public_key(key),
    };
    let state = Arc::new(State {
        options,
        keys: RwLock::new(keys),
        last_fetch: Mutex::new(Instant::now()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(serve(state)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("seller_endpoint: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(state: Arc<State>) -> std::io::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let listener = TcpListener::bind(state.options.listen).await?;
    let addr = listener.local_addr()?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "seller endpoint listening on http://{addr}")?;
    stdout.flush()?;
    drop(stdout);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    eprintln!("accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = terminate.recv() => return Ok(()),
        };
        let state = state.clone();
        let service = service_fn(move |request| handle(state.clone(), request, peer));
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(30))
            .serve_connection(TokioIo::new(stream), service);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}

type Reply = Response<Full<Bytes>>;

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
    peer: SocketAddr,
) -> Result<Reply, Infallible> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let (reply, what) = answer(&state, request).await;
    eprintln!(
        "{} {peer} {method} {path} -> {} {what}",
        jiff::Timestamp::now(),
        reply.status().as_u16()
    );
    Ok(reply)
}

/// The reply and a short description for the log line.
async fn answer(state: &State, request: Request<Incoming>) -> (Reply, String) {
    if request.method() != Method::POST {
        let mut reply = error(StatusCode::METHOD_NOT_ALLOWED, "only POST is served");
        reply
            .headers_mut()
            .insert(ALLOW, "POST".parse().expect("a valid header"));
        return (reply, "not POST".into());
    }
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > seller_kit::MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let body = match Limited::new(request.into_body(), seller_kit::MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return too_large(),
    };
    let verified = match verify(state, &body).await {
        Ok(verified) => verified,
        Err(refusal) => {
            let status = StatusCode::from_u16(refusal.status()).expect("400 or 401");
            return (error(status, &refusal.message), refusal.message);
        }
    };
    let what = format!("{} for {}", verified.type_name(), verified.seller_handle());
    match verified {
        SignedRequest::Verify { challenge, .. } => {
            let body = json!({ "challenge": challenge }).to_string();
            (reply(StatusCode::OK, "application/json", body.into()), what)
        }
        SignedRequest::Fingerprint { .. } | SignedRequest::Delivery { .. } => {
            let file = state.options.file.clone();
            let read = tokio::task::spawn_blocking(move || std::fs::read(file)).await;
            match read.unwrap_or_else(|e| Err(std::io::Error::other(e))) {
                Ok(bytes) => {
                    let what = format!("{what}: {} bytes", bytes.len());
                    let mut reply =
                        reply(StatusCode::OK, &state.options.content_type, bytes.into());
                    reply
                        .headers_mut()
                        .insert(CACHE_CONTROL, "no-store".parse().expect("a valid header"));
                    (reply, what)
                }
                Err(e) => {
                    let message = format!("cannot read the deliverable: {e}");
                    (error(StatusCode::INTERNAL_SERVER_ERROR, &message), message)
                }
            }
        }
    }
}

/// Verifies with the current keys; on an unknown key id, refetches them once (when they come
/// from a bourse URL and were not fetched within [`REFETCH_INTERVAL`]) and tries again.
async fn verify(state: &State, body: &[u8]) -> Result<SignedRequest, seller_kit::Refusal> {
    let check = |state: &State| {
        let keys = state.keys.read().expect("keys lock");
        let now = jiff::Timestamp::now();
        match &state.options.seller_handle {
            Some(handle) => {
                seller_kit::check_request_for(body, &keys, now, seller_kit::MAX_SKEW, handle)
            }
            None => seller_kit::check_request(body, &keys, now, seller_kit::MAX_SKEW),
        }
    };
    let refusal = match check(state) {
        Ok(request) => return Ok(request),
        Err(refusal) => refusal,
    };
    let KeySource::Bourse(url) = &state.options.source else {
        return Err(refusal);
    };
    if refusal.kind != RefusalKind::UnknownKey {
        return Err(refusal);
    }
    {
        let mut last = state.last_fetch.lock().expect("fetch lock");
        if last.elapsed() < REFETCH_INTERVAL {
            return Err(refusal);
        }
        *last = Instant::now();
    }
    let url = url.clone();
    match tokio::task::spawn_blocking(move || Keys::fetch(&url)).await {
        Ok(Ok(keys)) => {
            eprintln!("refetched bourse's signing keys after an unknown key id");
            *state.keys.write().expect("keys lock") = keys;
            check(state)
        }
        Ok(Err(error)) => {
            eprintln!("cannot refetch bourse's signing keys: {error}");
            Err(refusal)
        }
        Err(_) => Err(refusal),
    }
}

fn reply(status: StatusCode, content_type: &str, body: Bytes) -> Reply {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, content_type)
        .body(Full::new(body))
        .expect("the content type was checked at startup")
}

fn error(status: StatusCode, message: &str) -> Reply {
    let body = json!({ "error": message }).to_string();
    reply(status, "application/json", body.into())
}

fn too_large() -> (Reply, String) {
    let message = format!(
        "the body is larger than {} bytes",
        seller_kit::MAX_BODY_BYTES
    );
    (error(StatusCode::PAYLOAD_TOO_LARGE, &message), message)
}
