//! The accept loop: one task per connection, HTTP/1.1 keep-alive, graceful drain on shutdown.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

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
            tasks.push(tokio::spawn(crate::service::trust::log::publisher(
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
            let read_timeout = settings.read_timeout;
            let (stream, closing) = Watched::new(stream);
            let service = service_fn(move |request| {
                http::handle(app.clone(), settings.clone(), request, peer)
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                let ended = connection.await;
                let timed_out = match &ended {
                    Err(error) => {
                        tracing::debug!(%error, %peer, "connection ended with an error");
                        error.is_timeout()
                    }
                    Ok(()) => false,
                };
                let Ok(closing) = closing.await else {
                    return;
                };
                if closing.refused.is_some() || (closing.head_started && timed_out) {
                    answer_unread_head(closing).await;
                } else {
                    linger(closing.stream).await;
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

/// A connection's socket, watched for the two cases where hyper answers on its own, which it does
/// without a body: a request head it cannot parse (it writes a bare 400, 414 or 431 and closes)
/// and a head that stops arriving (its header-read timeout: it closes without a word). In both
/// the socket comes back to the connection's task, which answers the usual JSON error instead
/// (`answer_unread_head`). Every other socket comes back too when hyper lets it go, for a
/// lingering close ([`linger`]): an answer sent before the request's body was read (413, 408,
/// 404 …) must reach a client that writes its whole body before it reads.
struct Watched {
    stream: Option<TcpStream>,
    /// The first bytes read since the last write, to tell the start of a request head from the
    /// rest of a body hyper drains after answering.
    since_write: [u8; 8],
    since_write_len: usize,
    /// The status of hyper's own answer, which was swallowed to be answered properly.
    refused: Option<u16>,
    give_back: Option<oneshot::Sender<Closing>>,
}

/// The socket of a connection hyper let go, and what was left unanswered: the status of its
/// own refusal of a head (400, 414, 431), and whether a request head had started arriving (so a
/// timeout is a head that did not arrive in time, not an idle keep-alive connection).
struct Closing {
    stream: TcpStream,
    refused: Option<u16>,
    head_started: bool,
}

impl Watched {
    fn new(stream: TcpStream) -> (Watched, oneshot::Receiver<Closing>) {
        let (give_back, unread) = oneshot::channel();
        let watched = Watched {
            stream: Some(stream),
            since_write: [0; 8],
            since_write_len: 0,
            refused: None,
            give_back: Some(give_back),
        };
        (watched, unread)
    }

    fn stream(&mut self) -> Pin<&mut TcpStream> {
        Pin::new(
            self.stream
                .as_mut()
                .expect("the stream leaves only on drop"),
        )
    }

    /// Whether a request head has started arriving since the last write.
    fn reading_head(&self) -> bool {
        starts_a_request(&self.since_write[..self.since_write_len])
    }

    /// Whether the bytes hyper is writing are its own answer to a refused head (to be swallowed
    /// and recorded), the first time it starts writing one.
    fn swallows(&mut self, first: &[u8]) -> bool {
        if self.refused.is_none() {
            self.refused = bare_refusal(first);
        }
        self.refused.is_some()
    }

    fn record_read(&mut self, bytes: &[u8]) {
        let room = self.since_write.len() - self.since_write_len;
        let taken = room.min(bytes.len());
        self.since_write[self.since_write_len..self.since_write_len + taken]
            .copy_from_slice(&bytes[..taken]);
        self.since_write_len += taken;
    }

    fn wrote(&mut self, polled: &Poll<io::Result<usize>>) {
        if matches!(polled, Poll::Ready(Ok(n)) if *n > 0) {
            self.since_write_len = 0;
        }
    }
}

/// Whether bytes read on a connection start a request line: optional blank lines (RFC 9112
/// §2.2), then a method token in capitals, then a space (or nothing more yet).
fn starts_a_request(bytes: &[u8]) -> bool {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b'\r' | b'\n'))
        .unwrap_or(bytes.len());
    let rest = &bytes[start..];
    let method = rest.iter().take_while(|b| b.is_ascii_uppercase()).count();
    method > 0 && rest.get(method).is_none_or(|&b| b == b' ')
}

/// The status of hyper's own answer to a head it could not parse: a 400, 414 or 431 with an
/// empty body and none of the headers every answer of bourse carries. `None` for anything else
/// (our own answers, `100 Continue`).
fn bare_refusal(head: &[u8]) -> Option<u16> {
    let status: u16 = std::str::from_utf8(head.strip_prefix(b"HTTP/1.1 ")?.get(..3)?)
        .ok()?
        .parse()
        .ok()?;
    let head = head.to_ascii_lowercase();
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    (matches!(status, 400 | 414 | 431)
        && has(b"\r\ncontent-length: 0\r\n")
        && !has(b"\r\nx-request-id:"))
    .then_some(status)
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let (Some(stream), Some(give_back)) = (self.stream.take(), self.give_back.take()) {
            let _ = give_back.send(Closing {
                stream,
                refused: self.refused,
                head_started: self.reading_head(),
            });
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = self.stream().poll_read(cx, buf);
        if self.since_write_len < self.since_write.len() {
            self.record_read(&buf.filled()[before..]);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.swallows(buf) {
            return Poll::Ready(Ok(buf.len()));
        }
        let polled = self.stream().poll_write(cx, buf);
        self.wrote(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        if self.swallows(first) {
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        let polled = self.stream().poll_write_vectored(cx, bufs);
        self.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(TcpStream::is_write_vectored)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.refused.is_some() {
            return Poll::Ready(Ok(()));
        }
        self.stream().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.refused.is_some() {
            return Poll::Ready(Ok(()));
        }
        self.stream().poll_shutdown(cx)
    }
}

/// Answers a request head hyper refused (its status) or gave up waiting for (408) with the usual
/// JSON error, then closes as [`linger`] does. Bounded: a peer that reads nothing is dropped
/// after 5 s.
async fn answer_unread_head(closing: Closing) {
    let Closing {
        mut stream,
        refused,
        ..
    } = closing;
    let error = match refused {
        Some(status) => crate::error::Error::UnreadableHead { status },
        None => crate::error::Error::RequestTimeout,
    };
    let status = error.status();
    let request_id = http::next_request_id();
    let body = http::response::error_body(&error, &request_id).to_string();
    let reason = hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         x-request-id: {request_id}\r\nconnection: close\r\ncache-control: no-store\r\n\r\n{body}",
        body.len()
    );
    let written = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = stream.write_all(answer.as_bytes()).await;
    })
    .await;
    if written.is_ok() {
        linger(stream).await;
    }
}

/// The longest a closing connection keeps reading, in all.
const LINGER_TOTAL: Duration = Duration::from_secs(10);
/// The longest it waits for the next bytes (a client that neither sends nor closes).
const LINGER_IDLE: Duration = Duration::from_secs(2);
/// The most it reads and discards.
const LINGER_BYTES: usize = 64 << 20;

/// Closes a connection without destroying what was just sent: closing a socket with unread bytes
/// in it resets the connection, and a client still writing its request (Python's `http.client`
/// writes the whole body before reading, as `urllib` and `requests` do) loses the answer to the
/// reset. So, as nginx's lingering close does: the write side is shut (the answer is followed by
/// end-of-stream), then what the client still sends is read and discarded until it closes, for
/// at most [`LINGER_TOTAL`] and [`LINGER_BYTES`], and [`LINGER_IDLE`] between reads. A client
/// that already closed costs one read.
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let _ = tokio::time::timeout(LINGER_TOTAL, async {
        let mut sink = vec![0u8; 16 * 1024];
        let mut left = LINGER_BYTES;
        while left > 0 {
            match tokio::time::timeout(LINGER_IDLE, stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
    })
    .await;
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

#[cfg(test)]
mod tests {
    use super::{bare_refusal, starts_a_request};

    #[test]
    fn the_start_of_a_request_is_told_from_the_rest_of_a_body() {
        for start in [&b"G"[..], b"GET", b"POST /x", b"\r\nGET ", b"DELETE /a"] {
            assert!(starts_a_request(start), "{start:?}");
        }
        for other in [&b""[..], b"\r\n", b"{\"a\":", b"get /", b"GET/", b"1234"] {
            assert!(!starts_a_request(other), "{other:?}");
        }
    }

    #[test]
    fn only_hypers_bare_refusals_are_swallowed() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(bare_refusal(bare), Some(431));
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-request-id: r\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(bare_refusal(ours), None);
        assert_eq!(bare_refusal(b"HTTP/1.1 100 Continue\r\n\r\n"), None);
        assert_eq!(
            bare_refusal(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 57\r\n\r\n"),
            None
        );
    }
}
