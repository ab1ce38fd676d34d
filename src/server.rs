//! The accept loop: one task per connection, HTTP/1.1 keep-alive, graceful drain on shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;

use crate::http::{self, HttpSettings};
use crate::service::{App, replication};

/// A bound server, not yet serving; tests read its address before running it.
pub struct Server {
    listener: TcpListener,
    app: Arc<App>,
    settings: Arc<HttpSettings>,
    grace: Duration,
}

impl Server {
    /// Wraps a bound listener.
    pub fn new(
        listener: TcpListener,
        app: Arc<App>,
        settings: HttpSettings,
        grace: Duration,
    ) -> Server {
        Server {
            listener,
            app,
            settings: Arc::new(settings),
            grace,
        }
    }

    /// The bound address (the real port when bound to port 0).
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The shared application state.
    pub fn app(&self) -> Arc<App> {
        self.app.clone()
    }

    /// Serves until `shutdown` resolves, then stops accepting, drains in-flight requests for at
    /// most the grace period, and checkpoints the database.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let graceful = GracefulShutdown::new();
        let mut tasks = vec![tokio::spawn(flush_counters_every(
            self.app.clone(),
            crate::service::catalog::counters::FLUSH_INTERVAL,
        ))];
        if self.app.follower.is_some() {
            // A follower writes nothing: no workers, only the loop that follows the replica.
            tasks.push(tokio::spawn(replication::follow(self.app.clone())));
            tasks.push(tokio::spawn(replication::release_connections(
                self.app.clone(),
            )));
        } else {
            tasks.push(tokio::spawn(crate::service::messaging::callbacks::worker(
                self.app.clone(),
            )));
            tasks.push(tokio::spawn(crate::service::commerce::payments::worker(
                self.app.clone(),
            )));
            if self.app.store.replicated() {
                tasks.push(tokio::spawn(replication::heartbeat(self.app.clone())));
            }
            if self.app.x402.is_some() {
                tokio::spawn(crate::service::commerce::rails::x402::check_facilitator(
                    self.app.clone(),
                ));
            }
        }
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let _ = stream.set_nodelay(true);
            let app = self.app.clone();
            let settings = self.settings.clone();
            let service = service_fn(move |request| {
                http::handle(app.clone(), settings.clone(), request, peer)
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::debug!(%error, %peer, "connection ended with an error");
                }
            });
        }
        drop(self.listener);
        // Long-polls answer at once instead of holding the drain open.
        self.app.shutdown.send_replace(true);
        tracing::info!("shutting down: draining in-flight requests");
        if tokio::time::timeout(self.grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_secs = self.grace.as_secs(),
                "drain timed out; closing remaining connections"
            );
        }
        for task in tasks {
            task.abort();
        }
        let app = self.app.clone();
        let _ = tokio::task::spawn_blocking(move || {
            app.flush_counters();
            app.store.checkpoint();
        })
        .await;
        tracing::info!("stopped");
    }
}

async fn flush_counters_every(app: Arc<App>, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let app = app.clone();
        let _ = tokio::task::spawn_blocking(move || app.flush_counters()).await;
    }
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled, so a signal sent as soon as the listening line is out (a script
/// or a test that waits for that line) shuts down gracefully instead of killing the process.
/// Must be called inside the runtime.
#[cfg(unix)]
pub fn shutdown_signal() -> impl Future<Output = ()> {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    async fn received(signal: Option<&mut Signal>) {
        match signal {
            Some(signal) => drop(signal.recv().await),
            None => std::future::pending().await,
        }
    }
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    let mut terminate = signal(SignalKind::terminate()).ok();
    async move {
        tokio::select! {
            () = received(interrupt.as_mut()) => {},
            () = received(terminate.as_mut()) => {},
        }
    }
}

/// Resolves on Ctrl-C.
#[cfg(not(unix))]
pub fn shutdown_signal() -> impl Future<Output = ()> {
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
