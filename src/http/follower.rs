//! A read-only follower at the HTTP edge: which requests it answers itself, the redirect to the
//! primary for the others, and the lag header on everything it answers.

use hyper::header::{AUTHORIZATION, HeaderValue, LOCATION};
use hyper::{HeaderMap, Method, Response, Uri};
use serde_json::json;

use super::response::{self, Body};
use crate::service::replication::Follower;

/// The header carrying a follower's replication lag in seconds (`unknown` before it has seen a
/// heartbeat).
pub const LAG_HEADER: &str = "bourse-replica-lag";

/// Paths only the primary answers even when read: sessions, long-polls, OAuth, operator pages,
/// pages whose forms write, and anything about the caller.
const PRIMARY_ONLY: &[&str] = &[
    "/api/mcp",
    "/mcp",
    "/oauth",
    "/.well-known/oauth-authorization-server",
    "/api/agents/me",
    "/api/operator",
    "/api/sandbox",
    "/sandbox",
    "/sell",
];

/// Whether a follower answers this request from its replica: a safe method, no credential (a
/// header or an `api_key` / `purchase_token` in the query), and a path outside
/// [`PRIMARY_ONLY`]. Anything else goes to the primary, and so does a request whose handler
/// turns out to need a write (`Error::ReadOnlyFollower`).
pub fn answers_locally(method: &Method, uri: &Uri, headers: &HeaderMap) -> bool {
    let path = uri.path();
    let query = uri.query().unwrap_or_default();
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        && !headers.contains_key(AUTHORIZATION)
        && !query.contains("api_key")
        && !query.contains("purchase_token")
        && !PRIMARY_ONLY.iter().any(|prefix| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

/// 307 to the same path and query on the primary: the method and body are kept, so a client
/// that follows redirects sends its write there.
pub fn to_primary(follower: &Follower, uri: &Uri, request_id: &str) -> Response<Body> {
    let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
    let location = follower.primary_url(path_and_query);
    let mut answer = response::json(
        307,
        &json!({
            "primary": location,
            "message": "this server is a read-only follower; send this request to its primary"
        }),
        request_id,
    );
    if let Ok(value) = HeaderValue::from_str(&location) {
        answer.headers_mut().insert(LOCATION, value);
    }
    answer
}

/// Adds the lag header to a follower's answer.
pub fn stamp_lag(follower: &Follower, answer: &mut Response<Body>) {
    let lag = follower
        .lag_seconds()
        .map_or_else(|| "unknown".to_owned(), |seconds| format!("{seconds:.3}"));
    if let Ok(value) = HeaderValue::from_str(&lag) {
        answer.headers_mut().insert(LAG_HEADER, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(method: Method, uri: &str, authorized: bool) -> bool {
        let mut headers = HeaderMap::new();
        if authorized {
            headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        }
        answers_locally(&method, &uri.parse().unwrap(), &headers)
    }

    #[test]
    fn public_reads_stay_and_everything_else_goes_to_the_primary() {
        assert!(local(Method::GET, "/api/marketplace/listings?q=x", false));
        assert!(local(Method::GET, "/api/marketplace/listings/L-1", false));
        assert!(local(Method::HEAD, "/disclosures", false));
        assert!(
            local(Method::GET, "/api/mcpx", false),
            "a prefix is a whole segment"
        );
        assert!(!local(Method::POST, "/api/marketplace/listings", false));
        assert!(!local(Method::GET, "/api/marketplace/listings", true));
        assert!(!local(Method::GET, "/api/agents/me/inbox", false));
        assert!(!local(Method::GET, "/mcp", false));
        assert!(!local(Method::GET, "/oauth/authorize?x=1", false));
        assert!(!local(Method::GET, "/api/x?api_key=svc_1", false));
        assert!(!local(Method::DELETE, "/api/mcp", false));
    }
}
