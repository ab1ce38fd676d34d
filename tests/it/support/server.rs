//! The server running inside the test process, on port 0 with a temp data dir and a manual
//! clock.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use bourse::clock::ManualClock;
use bourse::config::Config;
use bourse::service::{App, Passes, WorkerPasses};
use tempfile::TempDir;
use tokio::sync::oneshot;

use super::{Client, WAIT, wait_until};

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
