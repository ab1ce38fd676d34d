//! Test harness: an in-process server on port 0 with a temp data dir and a manual clock, the
//! real binary for CLI-level checks, a small blocking HTTP client, and the helpers tests share:
//! status assertions that show the body (`Resp::ok`, `Resp::expect`), a bounded `wait_until`,
//! waiting for a background worker's pass, and paying a sandbox checkout.

use std::fmt::Display;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bourse::clock::ManualClock;
use bourse::config::Config;
use bourse::service::{App, Passes, WorkerPasses};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// How long a test waits for something that should happen promptly.
pub const WAIT: Duration = Duration::from_secs(10);

/// What a [`wait_until`] condition answers: `true`, `Some(value)` or `Ok(value)` when it holds;
/// `Err(seen)` says what was seen instead, for the message when time runs out.
pub trait Outcome {
    type Value;
    fn done(self) -> Result<Self::Value, String>;
}

impl Outcome for bool {
    type Value = ();
    fn done(self) -> Result<(), String> {
        if self { Ok(()) } else { Err(String::new()) }
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

impl<T, E: Display> Outcome for Result<T, E> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.map_err(|seen| seen.to_string())
    }
}

/// Polls `condition` until it holds and returns what it answered; panics naming `what` (and
/// the last thing seen) when it still does not hold after `timeout`.
#[track_caller]
pub fn wait_until<O: Outcome>(
    what: &str,
    timeout: Duration,
    mut condition: impl FnMut() -> O,
) -> O::Value {
    let deadline = Instant::now() + timeout;
    loop {
        let seen = match condition().done() {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        if Instant::now() >= deadline {
            if seen.is_empty() {
                panic!("timed out after {timeout:?} waiting until {what}");
            }
            panic!("timed out after {timeout:?} waiting until {what}; last seen: {seen}");
        }
        // The polling interval, not a wait for the thing itself.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a missing optional tool (the official MCP SDK, Chromium for the page screenshots)
/// fails a test instead of skipping it: when `CI` is set (CI runs `.ci/run` with `CI=true`) or
/// `BOURSE_REQUIRE_SDK=1`.
pub fn optional_tools_required() -> bool {
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("BOURSE_REQUIRE_SDK")
}

/// Ends a test whose optional tool is missing: a failure where tools are required (see
/// [`optional_tools_required`]), else a line `SKIPPED <test>: <why>` written to the terminal
/// itself, past the test harness's capture, so a run shows what it did not test.
#[track_caller]
pub fn skip_or_fail(test: &str, why: &str) {
    assert!(
        !optional_tools_required(),
        "{test} cannot run: {why} (a missing tool fails here because CI or BOURSE_REQUIRE_SDK=1 is set)"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {why} (listed as ok, yet it tested nothing)"
    );
}

/// A response as a user sees it.
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The body as text (lossy), for pages and failure messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the status, with the body in the message; returns the response.
    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Resp {
        assert_eq!(self.status, status, "{}", self.text());
        self
    }

    /// Asserts the status, with the body in the message; returns the JSON body.
    #[track_caller]
    pub fn expect(&self, status: u16) -> Value {
        self.assert_status(status).json()
    }

    /// Asserts 200 (exactly), with the body in the message; returns the JSON body.
    #[track_caller]
    pub fn ok(&self) -> Value {
        self.expect(200)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts an error response: status, code, and the documented body shape.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        let body = self.expect(status);
        assert_eq!(body["error"]["code"], code, "{body}");
        assert_eq!(body["error"]["status"], status, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
}

/// `pairs` percent-encoded as a query string or form body.
pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A blocking HTTP client that reports every status instead of failing on 4xx/5xx.
pub struct Client {
    pub base: String,
    agent: ureq::Agent,
    /// The same, answering redirects instead of following them.
    unredirected: ureq::Agent,
}

impl Client {
    pub fn new(base: &str) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build();
        let unredirected = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build();
        Client {
            base: base.to_owned(),
            agent: config.into(),
            unredirected: unredirected.into(),
        }
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        self.send_with(&self.agent, method, path, headers, body)
    }

    /// As [`Client::request`], answering a redirect instead of following it.
    pub fn request_unredirected(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        self.send_with(&self.unredirected, method, path, headers, body)
    }

    fn send_with(
        &self,
        agent: &ureq::Agent,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Resp {
        let url = format!("{}{path}", self.base);
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let result = match body {
            Some(bytes) => {
                let typed = headers
                    .iter()
                    .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
                if !typed {
                    builder = builder.header("content-type", "application/json");
                }
                let request = builder.body(bytes.to_vec()).unwrap();
                agent.run(request)
            }
            None => agent.run(builder.body(()).unwrap()),
        };
        let mut response = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let body = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .unwrap_or_default();
        Resp {
            status,
            headers,
            body,
        }
    }

    /// POSTs an HTML form (`application/x-www-form-urlencoded`) with extra headers; a redirect
    /// is answered, not followed.
    pub fn post_form(&self, path: &str, headers: &[(&str, &str)], pairs: &[(&str, &str)]) -> Resp {
        let body = form_encode(pairs);
        let mut all = vec![("content-type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        self.request_unredirected("POST", path, &all, Some(body.as_bytes()))
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }

    pub fn get_auth(&self, path: &str, key: &str) -> Resp {
        self.request(
            "GET",
            path,
            &[("authorization", &format!("Bearer {key}"))],
            None,
        )
    }

    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.request("POST", path, &[], Some(body.to_string().as_bytes()))
    }

    pub fn send_auth(&self, method: &str, path: &str, key: &str, body: &Value) -> Resp {
        let auth = format!("Bearer {key}");
        self.request(
            method,
            path,
            &[("authorization", &auth)],
            Some(body.to_string().as_bytes()),
        )
    }

    /// Connects an agent's payouts on the sandbox rail (needed for paid listings).
    #[track_caller]
    pub fn onboard(&self, key: &str) {
        let link = self
            .send_auth("POST", "/api/sell/register", key, &serde_json::json!({}))
            .ok();
        let path = self
            .path_of(link["completeUrl"].as_str().unwrap())
            .to_owned();
        self.send_auth("POST", &path, key, &serde_json::json!({}))
            .assert_status(200);
    }

    /// Registers an agent; returns the 201 body.
    #[track_caller]
    pub fn register(&self, name: &str) -> Value {
        self.post("/api/agents/register", &serde_json::json!({ "name": name }))
            .expect(201)
    }

    /// The path of a URL this server handed out.
    #[track_caller]
    pub fn path_of<'a>(&self, url: &'a str) -> &'a str {
        url.strip_prefix(&self.base)
            .unwrap_or_else(|| panic!("{url} is not under {}", self.base))
    }
}

/// A registered agent as a test holds it.
pub struct Party {
    pub key: String,
    pub handle: String,
}

impl Client {
    /// Registers an agent.
    #[track_caller]
    pub fn party(&self, name: &str) -> Party {
        let body = self.register(name);
        Party {
            key: body["apiKey"].as_str().unwrap().to_owned(),
            handle: body["handle"].as_str().unwrap().to_owned(),
        }
    }

    /// Registers a seller with a verified delivery endpoint (an honest twin serving
    /// `deliverable` as text) and connected payouts.
    #[track_caller]
    pub fn seller(
        &self,
        name: &str,
        deliverable: &[u8],
    ) -> (Party, crate::seller_twin::SellerTwin) {
        let seller = self.party(name);
        let twin = crate::seller_twin::SellerTwin::start(
            &self.base,
            deliverable.to_vec(),
            "text/plain",
            crate::seller_twin::Mode::Honest,
        );
        self.send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            &seller.key,
            &serde_json::json!({"url": twin.url}),
        )
        .assert_status(200);
        self.onboard(&seller.key);
        (seller, twin)
    }

    /// Creates a listing from `base` with `extra` fields laid over it; returns its id.
    #[track_caller]
    pub fn create_listing(&self, seller: &Party, base: Value, extra: Value) -> String {
        let mut body = base;
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let created = self
            .send_auth("POST", "/api/marketplace/listings", &seller.key, &body)
            .expect(201);
        created["listing"]["id"].as_str().unwrap().to_owned()
    }

    /// Buys a listing with the buyer's Bearer key.
    pub fn buy(&self, buyer: &Party, listing: &str) -> Resp {
        self.send_auth(
            "POST",
            &format!("/api/marketplace/listings/{listing}/purchase"),
            &buyer.key,
            &serde_json::json!({}),
        )
    }

    /// Pays a pending purchase's sandbox checkout as the checkout page's Pay button does
    /// (its scripted twin, `POST /api/sandbox/checkout/{session}/pay`); asserts 200 and returns
    /// the answer.
    #[track_caller]
    pub fn pay_checkout(&self, pending: &Value) -> Value {
        let session = checkout_session(pending);
        self.post(
            &format!("/api/sandbox/checkout/{session}/pay"),
            &serde_json::json!({}),
        )
        .ok()
    }

    /// Buys a paid listing on the sandbox rail (asserting a pending checkout) and pays the
    /// checkout; returns the purchase as the buy answered it. The next read delivers it.
    #[track_caller]
    pub fn buy_and_pay(&self, buyer: &Party, listing: &str) -> Value {
        let pending = self.buy(buyer, listing).ok();
        assert_eq!(pending["status"], "pending_payment", "{pending}");
        self.pay_checkout(&pending);
        pending
    }

    /// Reads a purchase as its buyer (the read that delivers a paid purchase); asserts 200.
    #[track_caller]
    pub fn purchase(&self, buyer: &Party, id: &str) -> Value {
        self.get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
            .ok()
    }
}

/// The session of a pending purchase's checkout: the last segment of its `checkoutUrl`.
#[track_caller]
pub fn checkout_session(pending: &Value) -> String {
    let url = pending["checkoutUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("no checkoutUrl in {pending}"));
    url.rsplit('/').next().unwrap().to_owned()
}

/// The server running inside the test process.
pub struct TestServer {
    pub client: Client,
    pub clock: Arc<ManualClock>,
    pub data: PathBuf,
    /// The passes of its background workers.
    passes: Arc<WorkerPasses>,
    /// The running server's state (gone once it stops).
    app: Weak<App>,
    _dir: Option<TempDir>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::ops::Deref for TestServer {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl TestServer {
    /// A fresh server with its own temp data dir.
    pub fn start() -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut server = TestServer::start_in(&dir.path().join("data"));
        server._dir = Some(dir);
        server
    }

    /// A fresh server whose configuration `adjust` changes first.
    pub fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::for_tests(dir.path().join("data"));
        adjust(&mut config);
        let mut server = TestServer::start_config(config);
        server._dir = Some(dir);
        server
    }

    /// A server over an existing (or new) data dir, which the caller keeps.
    pub fn start_in(data: &Path) -> TestServer {
        TestServer::start_config(Config::for_tests(data.to_owned()))
    }

    /// As [`TestServer::start_in`], with the configuration `adjust` changes first.
    pub fn start_in_with(data: &Path, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let mut config = Config::for_tests(data.to_owned());
        adjust(&mut config);
        TestServer::start_config(config)
    }

    fn start_config(config: Config) -> TestServer {
        let clock = Arc::new(ManualClock::new("2026-11-21T04:00:00Z".parse().unwrap()));
        let data = config.data_dir.clone();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let server_clock = clock.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let server = bourse::bind(&config, server_clock).await.unwrap();
                let app = server.app();
                addr_tx
                    .send((
                        server.local_addr().unwrap(),
                        app.worker_passes.clone(),
                        Arc::downgrade(&app),
                    ))
                    .unwrap();
                drop(app);
                server
                    .run(async {
                        let _ = shutdown_rx.await;
                    })
                    .await;
            });
        });
        let (addr, passes, app) = addr_rx.recv().expect("server started");
        TestServer {
            client: Client::new(&format!("http://{addr}")),
            clock,
            data,
            passes,
            app,
            _dir: None,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    /// Stops the server and waits for it to finish.
    pub fn stop(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }

    /// Waits until the worker whose passes `which` picks has run a whole pass that began after
    /// this call, so it has acted on everything that happened before: a test that checks that
    /// nothing happened calls this first.
    #[track_caller]
    pub fn worker_pass(&self, what: &str, which: fn(&WorkerPasses) -> &Arc<Passes>) {
        let passes = which(&self.passes);
        let target = passes.after_next_pass();
        wait_until(&format!("the {what} ran a pass"), WAIT, || {
            passes.ended() >= target
        });
    }

    /// Long-polls (inbox reads) under way: each one holds a subscription to the shutdown
    /// signal, taken before it first reads the inbox, until it answers.
    pub fn long_polls(&self) -> usize {
        self.app
            .upgrade()
            .map_or(0, |app| app.shutdown.receiver_count())
    }

    /// The operator bearer token of this instance.
    pub fn operator_key(&self) -> String {
        std::fs::read_to_string(self.data.join("operator.key"))
            .unwrap()
            .trim()
            .to_owned()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

/// The `bourse` binary built for these tests.
pub fn bourse() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bourse"))
}

/// The release binary users run: `BOURSE_RELEASE_BIN` (`.ci/run` sets it to
/// `target/release/bourse` after building it), else the binary under test; the output says which.
pub fn release_binary() -> PathBuf {
    match std::env::var_os("BOURSE_RELEASE_BIN").filter(|path| !path.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "BOURSE_RELEASE_BIN={} is not a file",
                path.display()
            );
            eprintln!("note: testing BOURSE_RELEASE_BIN={}", path.display());
            std::fs::canonicalize(path).unwrap()
        }
        None => {
            let path = PathBuf::from(env!("CARGO_BIN_EXE_bourse"));
            eprintln!(
                "note: testing {} (set BOURSE_RELEASE_BIN to test another build)",
                path.display()
            );
            path
        }
    }
}

/// The real binary serving on port 0; killed on drop.
pub struct BinServer {
    pub child: Child,
    pub client: Client,
    pub listening_line: String,
}

impl BinServer {
    /// Starts `bourse serve --listen 127.0.0.1:0 --data DIR` and waits for its listening line.
    pub fn spawn(data: &Path, extra: &[&str]) -> BinServer {
        BinServer::spawn_with_stderr(data, extra, Stdio::piped())
    }

    /// As [`BinServer::spawn`], its stderr (the access log too) written to `log`: for a server
    /// that answers more requests than a pipe nobody reads can hold.
    pub fn spawn_logged(data: &Path, extra: &[&str], log: &Path) -> BinServer {
        let file = std::fs::File::create(log).unwrap();
        BinServer::spawn_with_stderr(data, extra, Stdio::from(file))
    }

    fn spawn_with_stderr(data: &Path, extra: &[&str], stderr: Stdio) -> BinServer {
        let mut command = bourse();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(extra)
            .stderr(stderr);
        BinServer::start(command)
    }

    /// Runs `command` (a `bourse serve` however it is wrapped: it must exec the server so that
    /// killing the child stops it) and waits for its listening line.
    pub fn start(mut command: Command) -> BinServer {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let line = line.trim_end().to_owned();
        let base = line
            .strip_prefix("bourse listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        BinServer {
            client: Client::new(base),
            listening_line: line.clone(),
            child,
        }
    }

    /// Stops the server with SIGTERM: its exit status and, when it was spawned with piped
    /// stderr, what it wrote there (empty for `spawn_logged`, whose log is the file).
    pub fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        use std::io::Read;
        // A server spawned with its stderr in a log file (`spawn_logged`) has none to read here.
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr).unwrap();
        }
        (status, stderr)
    }
}

impl Drop for BinServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
