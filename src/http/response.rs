//! Turning handler results into HTTP responses. The error body is produced here and only here.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use crate::error::Error;

/// The body type of every response: whole bytes, or server-sent events as a handler writes
/// them ([`Reply::Events`]).
pub type Body = http_body_util::Either<Full<Bytes>, Events>;

/// A body of server-sent events: each chunk as its writer sends it; the body ends when the
/// writer is done (drops its sender).
pub struct Events(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for Events {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(hyper::body::Frame::data(bytes))))
    }
}

/// What writes an event stream: given the app and a sender, it sends events until it returns.
pub type EventWriter = Box<
    dyn FnOnce(
            std::sync::Arc<crate::service::App>,
            tokio::sync::mpsc::Sender<Bytes>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send,
>;

/// What a handler returns on success.
pub enum Reply {
    /// JSON; objects with a 2xx status get the signed provenance block.
    Json(u16, Value),
    /// A 2xx JSON object given as canonical top-level members (signed like `Json`).
    Canonical(u16, crate::service::trust::provenance::CanonicalMembers),
    /// Raw bytes with a content type (embedded documents).
    Bytes(&'static str, Bytes),
    /// A response sent exactly as built: any status, body and extra headers, never signed
    /// (protocol bodies such as JSON-RPC, whose shape is not ours to extend).
    Raw(RawReply),
    /// `200 text/event-stream`: the events `writer` sends (run on its own task), with extra
    /// headers; never signed.
    Events(EventWriter, Vec<(&'static str, String)>),
    /// Another reply with extra response headers (the x402 `PAYMENT-REQUIRED` /
    /// `PAYMENT-RESPONSE`); status, body and signing are the inner reply's.
    WithHeaders(Box<Reply>, Vec<(&'static str, String)>),
}

/// The parts of a [`Reply::Raw`].
pub struct RawReply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Bytes,
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    /// 200 with JSON.
    pub fn ok(value: Value) -> Reply {
        Reply::Json(200, value)
    }

    /// A typed answer as JSON (signed like [`Reply::Json`] where the operation is).
    ///
    /// # Errors
    /// The answer does not serialize (a bug: answers are plain data).
    pub fn answer(status: u16, answer: &impl serde::Serialize) -> crate::error::Result<Reply> {
        Ok(Reply::Json(status, to_json(answer)?))
    }

    /// JSON written straight from a typed answer, without building a `Value` first: for
    /// answers outside the signed surface (it is sent as built, like [`Reply::Raw`]).
    pub fn serialized(status: u16, answer: &impl serde::Serialize) -> Reply {
        Reply::Raw(RawReply {
            status,
            content_type: "application/json",
            body: Bytes::from(serde_json::to_vec(answer).unwrap_or_default()),
            headers: Vec::new(),
        })
    }

    /// This reply with extra response headers.
    pub fn with_headers(self, headers: Vec<(&'static str, String)>) -> Reply {
        if headers.is_empty() {
            return self;
        }
        Reply::WithHeaders(Box::new(self), headers)
    }
}

/// A typed answer as a JSON value, for a face that adds to it or wraps it (MCP results, signed
/// replies).
///
/// # Errors
/// The answer does not serialize (a bug: answers are plain data).
pub fn to_json(answer: &impl serde::Serialize) -> crate::error::Result<Value> {
    serde_json::to_value(answer).map_err(|e| Error::Internal(format!("an answer as JSON: {e}")))
}

/// Builds a response with the request id header.
pub fn build(status: u16, content_type: &str, body: Bytes, request_id: &str) -> Response<Body> {
    let mut response = Response::new(http_body_util::Either::Left(Full::new(body)));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(content_type).expect("static content type"),
    );
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", value);
    }
    response
}

/// A `200 text/event-stream` response whose events come from `events`.
pub fn events(events: tokio::sync::mpsc::Receiver<Bytes>, request_id: &str) -> Response<Body> {
    let mut response = Response::new(http_body_util::Either::Right(Events(events)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", value);
    }
    response
}

/// JSON response.
pub fn json(status: u16, value: &Value, request_id: &str) -> Response<Body> {
    let bytes = serde_json::to_vec(value).expect("a Value always serializes");
    build(status, "application/json", Bytes::from(bytes), request_id)
}

/// An error of an OAuth endpoint in OAuth's shape `{"error", "error_description"}` (RFC 6749
/// §5.2): an [`Error::OAuth`] with its own code, any other error (a rate limit, an oversized
/// body, a failure of bourse) with the nearest OAuth code and its own status.
pub fn oauth_error(error: &Error, request_id: &str) -> Response<Body> {
    let status = error.status();
    let code = match error {
        Error::OAuth { error: code, .. } => code.as_str(),
        Error::RateLimited { .. } | Error::Unavailable { .. } | Error::Busy { .. } => {
            "temporarily_unavailable"
        }
        _ if status >= 500 => "server_error",
        _ => "invalid_request",
    };
    let body = json!({ "error": code, "error_description": error.public_message() });
    let mut response = json(status, &body, request_id);
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    match error {
        Error::OAuth { .. } if status == 401 => {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"oauth\""),
            );
        }
        _ => {}
    }
    if let Some(seconds) = error.retry_after_secs() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// The body of an error answer: `{"error":{"code","message","status"}}`, and `requestId` on a
/// 5xx. Also what `server` writes itself for a request head hyper gave up on.
pub fn error_body(error: &Error, request_id: &str) -> Value {
    let status = error.status();
    let mut body = json!({
        "error": { "code": error.code(), "message": error.public_message(), "status": status }
    });
    if status >= 500 {
        body["error"]["requestId"] = request_id.into();
    }
    if let Some(limit) = error.spend_limit() {
        body["error"]["limit"] = serde_json::to_value(limit).unwrap_or(Value::Null);
    }
    body
}

/// The one mapping from [`Error`] to an HTTP response:
/// `{"error":{"code","message","status"}}` plus `WWW-Authenticate`, `Allow` or `Retry-After`.
pub fn error(error: &Error, request_id: &str) -> Response<Body> {
    let status = error.status();
    if let Error::OAuth { .. } = error {
        return oauth_error(error, request_id);
    }
    let mut response = json(status, &error_body(error, request_id), request_id);
    let headers = response.headers_mut();
    match error {
        Error::Unauthenticated(_) => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        Error::MethodNotAllowed { allow } => {
            if let Ok(value) = HeaderValue::from_str(&allow.join(", ")) {
                headers.insert(header::ALLOW, value);
            }
        }
        _ => {}
    }
    if let Some(seconds) = error.retry_after_secs() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
