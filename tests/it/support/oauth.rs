//! OAuth as a hosted MCP client drives it: registering a client, a PKCE pair, the
//! authorization page submitted as a browser would (Allow with the ticked grants), the code
//! exchanged for tokens, refresh, and the errors the endpoints answer.

use base64::Engine;
use bourse::http::request::parse_query;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::mcp::rpc;
use super::{Client, Resp, form_encode};

pub const REDIRECT: &str = "http://127.0.0.1:33418/callback";

pub fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A PKCE pair: (verifier, S256 challenge).
pub fn pkce(seed: &str) -> (String, String) {
    let verifier = format!("{seed}-{}", "v".repeat(50));
    let challenge = b64url(&Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

pub fn register_client(server: &Client, extra: Value) -> Value {
    let mut metadata = json!({
        "client_name": "Test Assistant",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
    });
    for (key, value) in extra.as_object().unwrap() {
        metadata[key] = value.clone();
    }
    server.post("/oauth/register", &metadata).expect(201)
}

/// An agent, a registered public client and a PKCE pair: what most OAuth tests start from.
pub struct Setup {
    /// The agent's registration (the 201 body).
    pub agent: Value,
    pub key: String,
    /// The client's registration (the 201 body).
    pub client: Value,
    pub client_id: String,
    pub verifier: String,
    pub challenge: String,
}

/// Registers the agent `agent` and a public client, and makes a PKCE pair from `seed`.
pub fn setup(server: &Client, agent: &str, seed: &str) -> Setup {
    let agent = server.register(agent);
    let key = agent["apiKey"].as_str().unwrap().to_owned();
    let client = register_client(server, json!({}));
    let client_id = client["client_id"].as_str().unwrap().to_owned();
    let (verifier, challenge) = pkce(seed);
    Setup {
        agent,
        key,
        client,
        client_id,
        verifier,
        challenge,
    }
}

impl Setup {
    /// The person allows this client on the authorization page, as this agent, with `grants`
    /// ticked; returns the code.
    pub fn allow(&self, server: &Client, scope: &str, grants: &[&str]) -> String {
        allow(
            server,
            &self.client_id,
            &self.challenge,
            scope,
            grants,
            &self.key,
        )
    }

    /// Exchanges `code` for tokens as this client, with its verifier.
    pub fn exchange(&self, server: &Client, code: &str) -> Resp {
        exchange(server, &self.client_id, code, &self.verifier)
    }
}

/// The query of a redirect's `Location`, decoded.
pub fn location_query(response: &Resp) -> Vec<(String, String)> {
    assert_eq!(response.status, 303, "{}", response.text());
    let location = response.header("location").unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    parse_query(location.split_once('?').map(|(_, query)| query))
}

pub fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// The authorization request's parameters.
pub fn authorize_params<'a>(
    client_id: &'a str,
    challenge: &'a str,
    scope: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("state", "st-123"),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("scope", scope),
    ]
}

/// `GET /oauth/authorize` as a browser would send it, without following a redirect.
pub fn authorize_page(server: &Client, params: &[(&str, &str)]) -> Resp {
    server.request_unredirected(
        "GET",
        &format!("/oauth/authorize?{}", form_encode(params)),
        &[],
        None,
    )
}

/// Submits the page's form as a browser would: the request's parameters, the ticked grants,
/// the API key and Allow. Returns the code.
pub fn allow(
    server: &Client,
    client_id: &str,
    challenge: &str,
    scope: &str,
    grants: &[&str],
    api_key: &str,
) -> String {
    let mut form = authorize_params(client_id, challenge, scope);
    form.extend(grants.iter().map(|grant| ("grant", *grant)));
    form.push(("api_key", api_key));
    form.push(("decision", "allow"));
    let response = server.post_form("/oauth/authorize", &[], &form);
    let query = location_query(&response);
    assert_eq!(param(&query, "state"), Some("st-123"));
    assert_eq!(param(&query, "iss"), Some(server.base.as_str()));
    param(&query, "code").unwrap().to_owned()
}

pub fn exchange(server: &Client, client_id: &str, code: &str, verifier: &str) -> Resp {
    server.post_form(
        "/oauth/token",
        &[],
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("client_id", client_id),
            ("resource", &format!("{}/api/mcp", server.base)),
        ],
    )
}

pub fn oauth_error(response: &Resp, status: u16, error: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let body = response.json();
    assert_eq!(body["error"], error, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );
}

/// Exchanges a refresh token (with extra form fields).
pub fn refresh(server: &Client, client_id: &str, token: &str, extra: &[(&str, &str)]) -> Resp {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client_id),
    ];
    form.extend_from_slice(extra);
    server.post_form("/oauth/token", &[], &form)
}

/// A whoami over MCP with this Bearer credential.
pub fn whoami(server: &Client, token: &str) -> Resp {
    rpc(
        server,
        Some(token),
        "tools/call",
        json!({"name": "agent_whoami", "arguments": {}}),
    )
}

/// An agent and a client that it allowed with `grants`: (tokens, client id, agent key).
pub fn tokens(server: &Client, grants: &[&str]) -> (Value, String, String) {
    let setup = setup(server, "oauth-owner", "flow");
    let code = setup.allow(server, "read message sell spend", grants);
    let tokens = setup.exchange(server, &code).expect(200);
    (tokens, setup.client_id, setup.key)
}
