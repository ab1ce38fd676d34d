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
    "/api/marketplace/purchases",
];

/// Headers that carry a credential or a payment.
const CREDENTIAL_HEADERS: &[&str] = &["x-purchase-token", "payment-signature", "x-payment"];

/// Query parameters that carry a credential.
const CREDENTIAL_PARAMETERS: &[&str] = &["api_key", "purchase_token"];

/// The probes and the metrics, answered by every server about itself.
const PROBES: &[&str] = &["/healthz", "/readyz", "/metrics"];

/// Whether a request is a probe (or the metrics scrape), which a follower always answers
/// itself (a follower that cannot serve says so there).
pub fn is_probe(uri: &Uri) -> bool {
    PROBES.contains(&uri.path())
}

/// Whether a follower answers this request from its replica: a CORS preflight (headers only),
/// or a GET or HEAD without a credential (`Authorization`, a purchase token or payment header,
/// an `api_key` or `purchase_token` query parameter) on a path outside [`PRIMARY_ONLY`].
/// Anything else goes to the primary, and so does a request whose handler turns out to need a
/// write (`Error::ReadOnlyFollower`).
pub fn answers_locally(method: &Method, uri: &Uri, headers: &HeaderMap) -> bool {
    if *method == Method::OPTIONS {
        return true;
    }
    let path = uri.path();
    let credential_in_query = uri.query().unwrap_or_default().split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or_default();
        let name = super::router::percent_decode_with(name, true);
        CREDENTIAL_PARAMETERS.contains(&name.as_str())
    });
    matches!(*method, Method::GET | Method::HEAD)
        && !headers.contains_key(AUTHORIZATION)
        && !CREDENTIAL_HEADERS
            .iter()
            .any(|name| headers.contains_key(*name))
        && !credential_in_query
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
        assert!(!local(Method::GET, "/api/x?a=1&api%5Fkey=svc_1", false));
        assert!(local(
            Method::GET,
            "/api/marketplace/listings?q=api_key",
            false
        ));
        assert!(!local(Method::GET, "/api/marketplace/purchases/P-1", false));
        assert!(
            local(Method::OPTIONS, "/mcp", false),
            "a preflight is headers only"
        );
        assert!(!local(Method::DELETE, "/api/mcp", false));
    }

    #[test]
    fn the_probes_and_the_metrics_are_answered_about_the_follower_itself() {
        for path in ["/healthz", "/readyz", "/metrics"] {
            assert!(is_probe(&path.parse().unwrap()), "{path}");
        }
        assert!(!is_probe(&"/metrics/x".parse().unwrap()));
    }
}
