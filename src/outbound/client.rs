//! The request/response client: [`Client`] (one shared ureq agent that dials through the
//! vetting resolver, with no proxy, no redirects and no pooling), its [`Timeouts`], the bounded
//! [`Response`], and the mapping of ureq's errors to [`OutboundError`].

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ureq::Agent;
use ureq::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use ureq::unversioned::transport::DefaultConnector;

use super::OutboundError;
use super::policy::{Policy, check_url};
use super::resolver::{ResolveFailure, VettingResolver};

/// Deadlines for one outbound request.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// Name resolution.
    pub resolve: Duration,
    /// TCP connect plus TLS handshake.
    pub connect: Duration,
    /// The whole request, from resolution to the end of the response body.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            resolve: Duration::from_secs(5),
            connect: Duration::from_secs(5),
            total: Duration::from_secs(15),
        }
    }
}

/// A response with any status except 3xx.
#[derive(Debug)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, when present and valid text.
    pub content_type: Option<String>,
    /// The body, at most `max_body` bytes.
    pub body: Vec<u8>,
}

/// What became of an outbound call, as the metrics count it.
pub const OUTCOMES: [&str; 10] = [
    "success",
    "http_error",
    "redirect",
    "too_large",
    "invalid_url",
    "denied",
    "dns",
    "connect",
    "timeout",
    "io",
];

/// The one outbound client. Blocking: callers run it on a blocking thread.
#[derive(Clone, Debug)]
pub struct Client {
    agent: Agent,
    policy: Policy,
    /// Calls by outcome (indexes of [`OUTCOMES`]), shared by the clones of this client.
    outcomes: Arc<[AtomicU64; OUTCOMES.len()]>,
}

impl Client {
    /// Builds the client: vetting resolver, no proxy, no redirects, deadlines set.
    pub fn new(policy: Policy, timeouts: Timeouts) -> Client {
        let config = Agent::config_builder()
            // Mandatory: an env proxy would resolve the target itself, skipping the resolver.
            .proxy(None)
            .max_redirects(0)
            .https_only(!policy.allow_loopback)
            .http_status_as_error(false)
            .timeout_resolve(Some(timeouts.resolve))
            .timeout_connect(Some(timeouts.connect))
            .timeout_global(Some(timeouts.total))
            .user_agent("bourse/1.0")
            // No connection reuse: each call resolves, vets and dials afresh. Calls go to many
            // hosts at a low rate, and a pooled connection the peer already closed would turn a
            // healthy attempt into a failed one.
            .max_idle_connections(0)
            .max_idle_connections_per_host(0)
            .build();
        let agent = Agent::with_parts(config, DefaultConnector::new(), VettingResolver { policy });
        Client {
            agent,
            policy,
            outcomes: Arc::default(),
        }
    }

    /// Calls made so far, by outcome.
    pub fn outcomes(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        OUTCOMES
            .iter()
            .zip(self.outcomes.iter())
            .map(|(name, n)| (*name, n.load(Ordering::Relaxed)))
    }

    /// Counts a call's outcome and hands it back.
    fn tally(&self, result: Result<Response, OutboundError>) -> Result<Response, OutboundError> {
        let index = match &result {
            Ok(response) if (200..300).contains(&response.status) => 0,
            Ok(_) => 1,
            Err(OutboundError::Redirect(_)) => 2,
            Err(OutboundError::TooLarge { .. }) => 3,
            Err(OutboundError::InvalidUrl(_)) => 4,
            Err(OutboundError::Denied { .. }) => 5,
            Err(OutboundError::Dns(_)) => 6,
            Err(OutboundError::Connect(_)) => 7,
            Err(OutboundError::Timeout) => 8,
            Err(OutboundError::Io(_)) => 9,
        };
        self.outcomes[index].fetch_add(1, Ordering::Relaxed);
        result
    }

    /// The policy this client enforces.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// POSTs a JSON body and returns the response (any status except 3xx, which is
    /// `Err(Redirect)`), reading at most `max_body` bytes of body (more is `Err(TooLarge)`).
    ///
    /// # Errors
    ///
    /// See [`OutboundError`]; [`OutboundError::is_transient`] tells whether to retry.
    pub fn post_json(
        &self,
        url: &str,
        body: &[u8],
        extra_headers: &[(&str, &str)],
        max_body: usize,
    ) -> Result<Response, OutboundError> {
        self.tally(self.send_json(url, body, extra_headers, max_body))
    }

    fn send_json(
        &self,
        url: &str,
        body: &[u8],
        extra_headers: &[(&str, &str)],
        max_body: usize,
    ) -> Result<Response, OutboundError> {
        let url = check_url(url, self.policy)?;
        let mut request = self
            .agent
            .post(&url)
            .header(CONTENT_TYPE, "application/json");
        for (name, value) in extra_headers {
            // Validated here so that a bad header is a permanent error, not a transport one.
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                OutboundError::InvalidUrl(format!("invalid request header {name:?}"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                OutboundError::InvalidUrl(format!("invalid value for header {name}"))
            })?;
            request = request.header(name, value);
        }
        read_response(request.send(body), max_body)
    }

    /// GETs `url` asking for JSON, with the same rules as [`Client::post_json`] (3xx is
    /// `Err(Redirect)`, a body over `max_body` is `Err(TooLarge)`).
    ///
    /// # Errors
    ///
    /// See [`OutboundError`].
    pub fn get_json(&self, url: &str, max_body: usize) -> Result<Response, OutboundError> {
        let fetched = check_url(url, self.policy).and_then(|url| {
            let request = self.agent.get(&url).header("accept", "application/json");
            read_response(request.call(), max_body)
        });
        self.tally(fetched)
    }
}

/// Reads a response of either method: any status except 3xx, at most `max_body` bytes.
fn read_response(
    sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    max_body: usize,
) -> Result<Response, OutboundError> {
    let mut response = sent.map_err(map_ureq_error)?;
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        return Err(OutboundError::Redirect(status));
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);

    // ureq's limit counts the bytes on the wire (before gzip decoding) and fails even at EOF
    // once exactly `limit` bytes were read, hence `+ 1`; the `take` bounds the decoded bytes.
    let cap = (max_body as u64).saturating_add(1);
    let mut reader = response
        .body_mut()
        .with_config()
        .limit(cap)
        .reader()
        .take(cap);
    let mut buf = Vec::new();
    match reader.read_to_end(&mut buf) {
        Ok(_) => {}
        Err(e) => {
            return Err(match ureq::Error::from(e) {
                ureq::Error::BodyExceedsLimit(_) => OutboundError::TooLarge { limit: max_body },
                other => map_ureq_error(other),
            });
        }
    }
    if buf.len() > max_body {
        return Err(OutboundError::TooLarge { limit: max_body });
    }
    Ok(Response {
        status,
        content_type,
        body: buf,
    })
}

/// Maps ureq's errors to the public ones, with short messages and no internals.
pub(super) fn map_ureq_error(err: ureq::Error) -> OutboundError {
    match err {
        ureq::Error::Other(inner) => match inner.downcast::<ResolveFailure>() {
            Ok(failure) => match *failure {
                ResolveFailure::Denied { host, reason } => OutboundError::Denied { host, reason },
                ResolveFailure::Dns(msg) => OutboundError::Dns(msg),
            },
            Err(other) => OutboundError::Io(other.to_string()),
        },
        ureq::Error::HostNotFound => OutboundError::Dns("the host name did not resolve".to_owned()),
        ureq::Error::Timeout(_) => OutboundError::Timeout,
        ureq::Error::Io(e) => map_io_error(&e),
        ureq::Error::ConnectionFailed => OutboundError::Connect("connection failed".to_owned()),
        ureq::Error::Tls(msg) => OutboundError::Connect(format!("TLS failure: {msg}")),
        ureq::Error::Rustls(e) => OutboundError::Connect(format!("TLS failure: {e}")),
        ureq::Error::TlsRequired => OutboundError::Connect("TLS required".to_owned()),
        ureq::Error::BadUri(msg) => OutboundError::InvalidUrl(msg),
        ureq::Error::RequireHttpsOnly(_) => {
            OutboundError::InvalidUrl("the URL must use https".to_owned())
        }
        ureq::Error::Http(_) => {
            OutboundError::InvalidUrl("the request could not be built".to_owned())
        }
        ureq::Error::BodyExceedsLimit(n) => OutboundError::TooLarge {
            limit: usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX),
        },
        ureq::Error::Protocol(e) => OutboundError::Io(format!("invalid HTTP response: {e}")),
        ureq::Error::LargeResponseHeader(..) => {
            OutboundError::Io("the response headers are too large".to_owned())
        }
        other => OutboundError::Io(other.to_string()),
    }
}

fn map_io_error(e: &io::Error) -> OutboundError {
    use io::ErrorKind as K;
    match e.kind() {
        K::TimedOut | K::WouldBlock => OutboundError::Timeout,
        K::ConnectionRefused => OutboundError::Connect("connection refused".to_owned()),
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
            OutboundError::Connect("connection reset".to_owned())
        }
        K::HostUnreachable | K::NetworkUnreachable | K::AddrNotAvailable | K::NotConnected => {
            OutboundError::Connect("host unreachable".to_owned())
        }
        K::UnexpectedEof => OutboundError::Io("the connection closed early".to_owned()),
        _ => OutboundError::Io(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread;
    use std::time::Instant;

    use super::*;
    use crate::outbound::policy::{DEV, LOOPBACK, STRICT};

    /// A one-shot HTTP server on 127.0.0.1: answers the first connection with `response` and
    /// hands back the raw request. Never binds anything but loopback.
    struct OneShot {
        port: u16,
        handle: thread::JoinHandle<Option<Vec<u8>>>,
    }

    impl OneShot {
        fn start(response: Vec<u8>) -> OneShot {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            listener.set_nonblocking(true).unwrap();
            let handle = thread::spawn(move || {
                let give_up = Instant::now() + Duration::from_secs(10);
                let (mut stream, _) = loop {
                    match listener.accept() {
                        Ok(conn) => break conn,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            if Instant::now() > give_up {
                                return None;
                            }
                            thread::sleep(Duration::from_millis(5));
                        }
                        Err(e) => panic!("accept: {e}"),
                    }
                };
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let request = read_request(&mut stream);
                let _ = stream.write_all(&response);
                let _ = stream.flush();
                Some(request)
            });
            OneShot { port, handle }
        }

        fn join(self) -> Option<Vec<u8>> {
            self.handle.join().unwrap()
        }
    }

    /// Reads the request head and a `content-length` body.
    fn read_request(stream: &mut std::net::TcpStream) -> Vec<u8> {
        let mut data = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse::<usize>().unwrap())
                    .unwrap_or(0);
                if data.len() >= end + 4 + length {
                    return data;
                }
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return data,
                Ok(n) => data.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn http_response(status: &str, extra: &str, body: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn quick() -> Timeouts {
        Timeouts {
            resolve: Duration::from_secs(2),
            connect: Duration::from_secs(2),
            total: Duration::from_secs(5),
        }
    }

    #[test]
    fn post_to_loopback_in_dev_mode() {
        let server = OneShot::start(http_response(
            "202 Accepted",
            "content-type: application/json\r\n",
            r#"{"ok":true}"#,
        ));
        let client = Client::new(DEV, quick());
        assert!(client.policy().allow_loopback);
        let url = format!("http://127.0.0.1:{}/hook?x=1", server.port);
        let response = client
            .post_json(
                &url,
                br#"{"event":"ping"}"#,
                &[("webhook-id", "msg_1")],
                1024,
            )
            .unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(response.content_type.as_deref(), Some("application/json"));
        assert_eq!(response.body, br#"{"ok":true}"#);

        let request = String::from_utf8(server.join().unwrap()).unwrap();
        let lower = request.to_ascii_lowercase();
        assert!(
            request.starts_with("POST /hook?x=1 HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            lower.contains("content-type: application/json\r\n"),
            "{request}"
        );
        assert!(lower.contains("webhook-id: msg_1\r\n"), "{request}");
        assert!(lower.contains("user-agent: bourse/1.0\r\n"), "{request}");
        assert!(request.ends_with(r#"{"event":"ping"}"#), "{request}");
    }

    #[test]
    fn error_statuses_are_responses() {
        let server = OneShot::start(http_response("500 Internal Server Error", "", "boom"));
        let client = Client::new(DEV, quick());
        let url = format!("http://127.0.0.1:{}/", server.port);
        let response = client.post_json(&url, b"{}", &[], 1024).unwrap();
        assert_eq!(response.status, 500);
        assert_eq!(response.content_type, None);
        assert_eq!(response.body, b"boom");
        server.join().unwrap();
    }

    #[test]
    fn redirects_are_failures() {
        for status in [
            "302 Found",
            "307 Temporary Redirect",
            "308 Permanent Redirect",
        ] {
            let server = OneShot::start(http_response(
                status,
                "location: http://127.0.0.1:1/\r\n",
                "",
            ));
            let client = Client::new(DEV, quick());
            let url = format!("http://127.0.0.1:{}/", server.port);
            let code: u16 = status[..3].parse().unwrap();
            match client.post_json(&url, b"{}", &[], 1024) {
                Err(OutboundError::Redirect(c)) => assert_eq!(c, code),
                other => panic!("{status}: expected Redirect, got {other:?}"),
            }
            server.join().unwrap();
        }
    }

    #[test]
    fn body_cap() {
        let body = "x".repeat(100);
        let server = OneShot::start(http_response("200 OK", "", &body));
        let client = Client::new(DEV, quick());
        let url = format!("http://127.0.0.1:{}/", server.port);
        match client.post_json(&url, b"{}", &[], 99) {
            Err(OutboundError::TooLarge { limit }) => assert_eq!(limit, 99),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        server.join().unwrap();

        // Exactly at the cap is fine.
        let server = OneShot::start(http_response("200 OK", "", &body));
        let url = format!("http://127.0.0.1:{}/", server.port);
        let response = client.post_json(&url, b"{}", &[], 100).unwrap();
        assert_eq!(response.body.len(), 100);
        server.join().unwrap();
    }

    #[test]
    fn strict_policy_never_dials_loopback() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = Client::new(STRICT, quick());
        assert!(!client.policy().allow_loopback);

        let result = client.post_json(&format!("http://127.0.0.1:{port}/"), b"{}", &[], 1024);
        assert!(
            matches!(result, Err(OutboundError::InvalidUrl(_))),
            "{result:?}"
        );

        let result = client.post_json(&format!("https://127.0.0.1:{port}/"), b"{}", &[], 1024);
        assert!(
            matches!(
                result,
                Err(OutboundError::Denied {
                    reason: LOOPBACK,
                    ..
                })
            ),
            "{result:?}"
        );

        let result = client.post_json(
            &format!("https://[::ffff:127.0.0.1]:{port}/"),
            b"{}",
            &[],
            1024,
        );
        assert!(
            matches!(result, Err(OutboundError::Denied { .. })),
            "{result:?}"
        );

        // A name goes through the vetting resolver, which refuses every loopback address.
        let result = client.post_json(&format!("https://localhost:{port}/"), b"{}", &[], 1024);
        match result {
            Err(OutboundError::Denied { host, reason }) => {
                assert_eq!(host, "localhost");
                assert_eq!(reason, LOOPBACK);
            }
            other => panic!("expected Denied, got {other:?}"),
        }

        // Nothing reached the listener: a completed TCP handshake would be waiting in the backlog.
        match listener.accept() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            other => panic!("the listener was contacted: {other:?}"),
        }
    }

    #[test]
    fn refused_connection_is_transient() {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = Client::new(DEV, quick());
        let result = client.post_json(&format!("http://127.0.0.1:{port}/"), b"{}", &[], 1024);
        match result {
            Err(e @ OutboundError::Connect(_)) => assert!(e.is_transient()),
            other => panic!("expected Connect, got {other:?}"),
        }
    }

    #[test]
    fn silent_server_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_server = Arc::clone(&stop);
        let server = thread::spawn(move || {
            // Accept and hold the connection without answering.
            let (stream, _) = listener.accept().unwrap();
            while !stop_server.load(Ordering::SeqCst) {
                thread::sleep(Duration::from_millis(10));
            }
            drop(stream);
        });
        let timeouts = Timeouts {
            resolve: Duration::from_secs(1),
            connect: Duration::from_secs(1),
            total: Duration::from_millis(500),
        };
        let client = Client::new(DEV, timeouts);
        let started = Instant::now();
        let result = client.post_json(&format!("http://127.0.0.1:{port}/"), b"{}", &[], 1024);
        assert!(matches!(result, Err(OutboundError::Timeout)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
        server.join().unwrap();
    }

    /// A gzip member whose deflate stream (fixed Huffman) is one `x` followed by `copies`
    /// back-references of 258 bytes: tiny on the wire, `1 + 258 * copies` bytes decoded.
    fn gzip_bomb(copies: usize) -> (Vec<u8>, usize) {
        struct Bits {
            out: Vec<u8>,
            acc: u32,
            n: u32,
        }
        impl Bits {
            // Deflate packs bits LSB first; Huffman codes go in MSB first.
            fn put(&mut self, value: u32, count: u32) {
                for i in 0..count {
                    self.acc |= ((value >> i) & 1) << self.n;
                    self.n += 1;
                    if self.n == 8 {
                        self.out.push(self.acc as u8);
                        self.acc = 0;
                        self.n = 0;
                    }
                }
            }
            fn code(&mut self, code: u32, count: u32) {
                for i in (0..count).rev() {
                    self.put((code >> i) & 1, 1);
                }
            }
        }
        let mut bits = Bits {
            out: Vec::new(),
            acc: 0,
            n: 0,
        };
        bits.put(1, 1); // BFINAL
        bits.put(1, 2); // BTYPE = fixed Huffman
        bits.code(0x30 + u32::from(b'x'), 8); // literal 'x'
        for _ in 0..copies {
            bits.code(0xc0 + (285 - 280), 8); // length 258
            bits.code(0, 5); // distance 1
        }
        bits.code(0, 7); // end of block
        if bits.n > 0 {
            bits.out.push(bits.acc as u8);
        }
        let decoded_len = 1 + 258 * copies;
        let crc = {
            let mut crc = 0xffff_ffffu32;
            for _ in 0..decoded_len {
                crc ^= u32::from(b'x');
                for _ in 0..8 {
                    crc = if crc & 1 == 1 {
                        (crc >> 1) ^ 0xedb8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        };
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        gz.extend_from_slice(&bits.out);
        gz.extend_from_slice(&crc.to_le_bytes());
        gz.extend_from_slice(&(decoded_len as u32).to_le_bytes());
        (gz, decoded_len)
    }

    #[test]
    fn body_cap_counts_decoded_bytes() {
        let (gz, decoded_len) = gzip_bomb(40);
        assert!(gz.len() < 200 && decoded_len > 10_000);
        let respond = |gz: &[u8]| {
            let mut response = format!(
                "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n",
                gz.len()
            )
            .into_bytes();
            response.extend_from_slice(gz);
            response
        };
        let client = Client::new(DEV, quick());

        // Sanity: with room to spare the stream decodes to the expected bytes.
        let server = OneShot::start(respond(&gz));
        let url = format!("http://127.0.0.1:{}/", server.port);
        let response = client.post_json(&url, b"{}", &[], 20_000).unwrap();
        assert_eq!(response.body, vec![b'x'; decoded_len]);
        server.join().unwrap();

        // Few bytes on the wire, many decoded: still refused.
        let server = OneShot::start(respond(&gz));
        let url = format!("http://127.0.0.1:{}/", server.port);
        match client.post_json(&url, b"{}", &[], 1_000) {
            Err(OutboundError::TooLarge { limit }) => assert_eq!(limit, 1_000),
            other => panic!("expected TooLarge, got {other:?}"),
        }
        server.join().unwrap();
    }

    #[test]
    fn bad_header_is_permanent() {
        let client = Client::new(DEV, quick());
        let result = client.post_json("http://127.0.0.1:9/", b"{}", &[("bad header", "x")], 1024);
        assert!(
            matches!(result, Err(OutboundError::InvalidUrl(_))),
            "{result:?}"
        );
    }
}
