//! HTTP: routing, request reading, response writing, access logs. Only this module and
//! `server` see hyper's `Request`/`Response`; handlers in `api` get a [`request::Ctx`].

pub mod follower;
pub mod request;
pub mod response;
pub mod router;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use http_body_util::{BodyExt, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use serde_json::Value;

use crate::error::Error;
use crate::service::{App, trust::provenance};
use request::Ctx;
use response::{Body, Reply};

/// Per-server HTTP settings.
pub struct HttpSettings {
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpAddr>,
    /// Longest wait for a request head (enforced by `server`), and again for its body.
    pub read_timeout: std::time::Duration,
}

static REQUEST_COUNTER: AtomicU64 = AtomicU64::new(0);

pub(crate) fn next_request_id() -> String {
    let n = REQUEST_COUNTER.fetch_add(1, Ordering::Relaxed);
    let prefix = *PROCESS_PREFIX;
    format!("req_{prefix:08x}{n:08x}")
}

static PROCESS_PREFIX: std::sync::LazyLock<u32> =
    std::sync::LazyLock::new(|| u32::from_le_bytes(crate::crypto::random_bytes::<4>()));

/// Serves one request: never fails, every error becomes a JSON error response.
pub async fn handle(
    app: Arc<App>,
    settings: Arc<HttpSettings>,
    request: Request<Incoming>,
    peer: SocketAddr,
) -> Result<Response<Body>, std::convert::Infallible> {
    let started = Instant::now();
    let request_id = next_request_id();
    let method = request.method().as_str().to_owned();
    let target = crate::logs::redacted_target(request.uri().path(), request.uri().query());
    let client_ip = client_ip(&request, peer.ip(), &settings.trusted_proxies);
    // The binding that matched, once the router has found one (for the request metrics).
    let mut route = None;

    let mut response = match &app.follower {
        Some(replica) => {
            let uri = request.uri().clone();
            let answer = if follower::is_probe(&uri)
                || (replica.serves()
                    && follower::answers_locally(request.method(), &uri, request.headers()))
            {
                serve(&app, &settings, request, client_ip, &request_id, &mut route).await
            } else {
                Err(Error::ReadOnlyFollower)
            };
            match answer {
                Err(Error::ReadOnlyFollower) => {
                    Ok(follower::to_primary(replica, &uri, &request_id))
                }
                other => other,
            }
        }
        None => serve(&app, &settings, request, client_ip, &request_id, &mut route).await,
    }
    .unwrap_or_else(|error| {
        if error.status() >= 500 {
            tracing::error!(request_id, %error, "request failed");
        }
        response::error(&error, &request_id)
    });
    if let Some(replica) = &app.follower {
        follower::stamp_lag(replica, &mut response);
    }
    let took = started.elapsed();
    app.telemetry
        .request(route, response.status().as_u16(), took);
    tracing::info!(
        target: "access",
        request_id,
        method,
        target,
        status = response.status().as_u16(),
        client = %client_ip,
        micros = took.as_micros() as u64,
    );
    Ok(response)
}

async fn serve(
    app: &Arc<App>,
    settings: &HttpSettings,
    request: Request<Incoming>,
    client_ip: IpAddr,
    request_id: &str,
    route: &mut Option<usize>,
) -> Result<Response<Body>, Error> {
    if request.method() == hyper::Method::OPTIONS
        && router::open_to_any_origin(request.uri().path())
    {
        return Ok(preflight(request_id));
    }
    let matched = router::resolve(request.method().as_str(), request.uri().path())?;
    *route = Some(matched.route);
    let operation = matched.operation;
    if operation.open_to_any_origin() {
        // The OAuth documents and endpoints are read by browser-based MCP clients too: their
        // answers, refusals included, are readable from any origin (no cookies are involved).
        let mut response = serve_matched(app, settings, request, matched, client_ip, request_id)
            .await
            .unwrap_or_else(|error| {
                if error.status() >= 500 {
                    tracing::error!(request_id, %error, "request failed");
                }
                if operation.spec().oauth_shape {
                    response::oauth_error(&error, request_id)
                } else {
                    response::error(&error, request_id)
                }
            });
        let headers = response.headers_mut();
        headers.insert(
            hyper::header::ACCESS_CONTROL_ALLOW_ORIGIN,
            hyper::header::HeaderValue::from_static("*"),
        );
        headers.insert(
            hyper::header::ACCESS_CONTROL_EXPOSE_HEADERS,
            hyper::header::HeaderValue::from_static("www-authenticate, x-request-id"),
        );
        return Ok(response);
    }
    serve_matched(app, settings, request, matched, client_ip, request_id).await
}

/// The answer to a CORS preflight for a path open to any origin.
fn preflight(request_id: &str) -> Response<Body> {
    let mut response = response::build(204, "text/plain; charset=utf-8", Bytes::new(), request_id);
    let headers = response.headers_mut();
    for (name, value) in [
        (hyper::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        (
            hyper::header::ACCESS_CONTROL_ALLOW_METHODS,
            "GET, POST, OPTIONS",
        ),
        (
            hyper::header::ACCESS_CONTROL_ALLOW_HEADERS,
            "authorization, content-type, mcp-protocol-version",
        ),
        (hyper::header::ACCESS_CONTROL_MAX_AGE, "600"),
    ] {
        headers.insert(name, hyper::header::HeaderValue::from_static(value));
    }
    response
}

async fn serve_matched(
    app: &Arc<App>,
    settings: &HttpSettings,
    request: Request<Incoming>,
    matched: router::Matched,
    client_ip: IpAddr,
    request_id: &str,
) -> Result<Response<Body>, Error> {
    let (parts, body) = request.into_parts();
    let limit = settings.max_body_bytes;
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(Error::PayloadTooLarge { limit });
    }
    // A body must arrive in bounded time: a client that trickles one holds no task for long.
    let reading = tokio::time::timeout(settings.read_timeout, Limited::new(body, limit).collect());
    let body: Bytes = match reading.await {
        Err(_) => return Err(Error::RequestTimeout),
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            return Err(Error::PayloadTooLarge { limit });
        }
        Ok(Err(error)) => {
            return Err(Error::InvalidArgument(format!(
                "could not read the body: {error}"
            )));
        }
    };
    let ctx = Ctx {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: request::parse_query(parts.uri.query()),
        headers: parts.headers,
        body,
        client_ip,
        request_id: request_id.to_owned(),
        params: matched.params,
        caller: request::Caller::Anonymous,
    };
    let operation = matched.operation;
    if operation.spec().json && !ctx.body.is_empty() && !ctx.json_content_type() {
        return Err(Error::UnsupportedMediaType(
            "this route reads a JSON body: send it as `Content-Type: application/json`".into(),
        ));
    }
    // A public read whose signed answer is kept: reused while nothing was committed since.
    let kept = (operation.spec().reuse && ctx.method == "GET").then(|| {
        let key = format!("{} {:?}", ctx.path, ctx.query);
        let stamp = crate::service::catalog::signed::database_stamp(app);
        (key, stamp, app.clock.now())
    });
    if let Some((key, stamp, now)) = &kept
        && let Some((body, _)) = app.signed.get(key, *stamp, *now)
    {
        return Ok(response::build(
            200,
            "application/json",
            Bytes::from_owner(body),
            request_id,
        ));
    }
    let reply = if operation.spec().to_completion {
        // Money moves inside: a client that hangs up must not cancel the handler between a
        // payment provider's answer and the write that records it.
        let app = app.clone();
        tokio::spawn(async move { crate::api::dispatch(&app, operation, ctx).await })
            .await
            .map_err(|e| Error::Internal(format!("handler task: {e}")))??
    } else {
        crate::api::dispatch(app, operation, ctx).await?
    };
    let public = operation.is_signed();
    let (reply, extra_headers) = match reply {
        Reply::WithHeaders(inner, headers) => (*inner, headers),
        other => (other, Vec::new()),
    };
    let mut built = match reply {
        Reply::Json(status, Value::Object(body)) if public && (200..300).contains(&status) => {
            let signed: std::sync::Arc<[u8]> = provenance::sign_response(app, body).into();
            if let Some((key, stamp, now)) = kept
                && status == 200
            {
                app.signed.put(&key, stamp, -1, signed.clone(), now);
            }
            response::build(
                status,
                "application/json",
                Bytes::from_owner(signed),
                request_id,
            )
        }
        Reply::Json(status, value) => response::json(status, &value, request_id),
        Reply::Canonical(status, members) if public => {
            let signed = provenance::sign_members(app, members);
            response::build(status, "application/json", Bytes::from(signed), request_id)
        }
        Reply::Canonical(status, members) => {
            let body: serde_json::Map<String, Value> = members
                .into_iter()
                .map(|(key, bytes)| (key, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
                .collect();
            response::json(status, &Value::Object(body), request_id)
        }
        Reply::Bytes(content_type, bytes) => response::build(200, content_type, bytes, request_id),
        Reply::Raw(raw) => {
            let mut built = response::build(raw.status, raw.content_type, raw.body, request_id);
            add_headers(&mut built, raw.headers);
            built
        }
        Reply::Events(writer, headers) => {
            // A small buffer: a writer that outruns a slow reader waits for it.
            let (sender, events) = tokio::sync::mpsc::channel(8);
            tokio::spawn(writer(app.clone(), sender));
            let mut built = response::events(events, request_id);
            for (name, value) in headers {
                if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
                    built.headers_mut().insert(name, value);
                }
            }
            built
        }
        Reply::WithHeaders(..) => {
            return Err(Error::Internal("nested reply headers".into()));
        }
    };
    add_headers(&mut built, extra_headers);
    Ok(built)
}

/// Sets a reply's extra headers on its response; `Set-Cookie` may come more than once.
fn add_headers(response: &mut Response<Body>, headers: Vec<(&'static str, String)>) {
    for (name, value) in headers {
        if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
            if name.eq_ignore_ascii_case("set-cookie") {
                response.headers_mut().append(name, value);
            } else {
                response.headers_mut().insert(name, value);
            }
        }
    }
}

/// The peer address, or for a trusted proxy the right-most untrusted `X-Forwarded-For` entry.
fn client_ip<B>(request: &Request<B>, peer: IpAddr, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let forwarded = request
        .headers()
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|entry| entry.trim().parse::<IpAddr>().ok())
        .collect::<Vec<_>>();
    forwarded
        .into_iter()
        .rev()
        .find(|ip| !trusted.contains(ip))
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies() {
        let request = Request::builder()
            .header("x-forwarded-for", "9.9.9.9, 1.1.1.1, 10.0.0.2")
            .body(())
            .unwrap();
        let proxy: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(client_ip(&request, proxy, &[]), proxy);
        assert_eq!(
            client_ip(&request, proxy, &[proxy]),
            "1.1.1.1".parse::<IpAddr>().unwrap()
        );
    }
}
