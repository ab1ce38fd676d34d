//! OAuth for hosted MCP clients, black-box: discovery, registration (both methods), the
//! authorization page submitted as a browser would, tokens on `/api/mcp`, refresh rotation,
//! revocation, the operator's view, and the refusals (wrong PKCE verifier, reused code, redirect
//! mismatch, foreign resource, expired token, rotated key, missing scope).

use std::io::{Read, Write};
use std::net::TcpListener;

use base64::Engine;
use bourse::http::request::parse_query;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::mcp::{call, rpc};
use crate::support::{Resp, TestServer, form_encode};

const REDIRECT: &str = "http://127.0.0.1:33418/callback";

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A PKCE pair: (verifier, S256 challenge).
fn pkce(seed: &str) -> (String, String) {
    let verifier = format!("{seed}-{}", "v".repeat(50));
    let challenge = b64url(&Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn register_client(server: &TestServer, extra: Value) -> Value {
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

/// An agent, a registered public client and a PKCE pair: what most tests start from.
struct Setup {
    key: String,
    client_id: String,
    verifier: String,
    challenge: String,
}

fn setup(server: &TestServer, agent: &str, seed: &str) -> Setup {
    let key = server.register(agent)["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let client_id = register_client(server, json!({}))["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (verifier, challenge) = pkce(seed);
    Setup {
        key,
        client_id,
        verifier,
        challenge,
    }
}

/// The query of a redirect's `Location`, decoded.
fn location_query(response: &Resp) -> Vec<(String, String)> {
    assert_eq!(response.status, 303, "{}", response.text());
    let location = response.header("location").unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    parse_query(location.split_once('?').map(|(_, query)| query))
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// The authorization request's parameters.
fn authorize_params<'a>(
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
fn authorize_page(server: &TestServer, params: &[(&str, &str)]) -> Resp {
    server.request_unredirected(
        "GET",
        &format!("/oauth/authorize?{}", form_encode(params)),
        &[],
        None,
    )
}

/// Submits the page's form as a browser would: the request's parameters, the ticked grants,
/// the API key and Allow. Returns the code.
fn allow(
    server: &TestServer,
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

fn exchange(server: &TestServer, client_id: &str, code: &str, verifier: &str) -> Resp {
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

fn oauth_error(response: &Resp, status: u16, error: &str) {
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
fn refresh(server: &TestServer, client_id: &str, token: &str, extra: &[(&str, &str)]) -> Resp {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", client_id),
    ];
    form.extend_from_slice(extra);
    server.post_form("/oauth/token", &[], &form)
}

/// The hidden inputs of a page's form, as a browser would send them.
fn hidden_inputs(html: &str) -> Vec<(String, String)> {
    let attribute = |tag: &str, name: &str| -> Option<String> {
        let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
        let value = tag[at..].split('"').next()?;
        Some(
            value
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        )
    };
    html.split("<input")
        .skip(1)
        .filter_map(|tag| {
            let tag = tag.split('>').next()?;
            (attribute(tag, "type")? == "hidden")
                .then(|| Some((attribute(tag, "name")?, attribute(tag, "value")?)))?
        })
        .collect()
}

/// A whoami over MCP with this Bearer credential.
fn whoami(server: &TestServer, token: &str) -> Resp {
    rpc(
        server,
        Some(token),
        "tools/call",
        json!({"name": "agent_whoami", "arguments": {}}),
    )
}

/// Registers a client and an agent, and runs the flow to tokens with these grants.
fn tokens(server: &TestServer, grants: &[&str]) -> (Value, String, String) {
    let agent = server.register("oauth-owner");
    let key = agent["apiKey"].as_str().unwrap().to_owned();
    let client = register_client(server, json!({}));
    let client_id = client["client_id"].as_str().unwrap().to_owned();
    let (verifier, challenge) = pkce("flow");
    let code = allow(
        server,
        &client_id,
        &challenge,
        "read message sell spend",
        grants,
        &key,
    );
    let tokens = exchange(server, &client_id, &code, &verifier).expect(200);
    (tokens, client_id, key)
}

#[test]
fn discovery_points_a_client_from_a_401_to_the_authorization_server() {
    let server = TestServer::start();
    let denied = rpc(
        &server,
        None,
        "tools/call",
        json!({"name": "agent_whoami", "arguments": {}}),
    );
    assert_eq!(denied.status, 401);
    let challenge = denied.header("www-authenticate").unwrap();
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource/api/mcp",
        server.base
    );
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata_url}\""))
            && challenge.contains("scope=\"read message sell\""),
        "{challenge}"
    );
    let resource = server.get(server.path_of(&metadata_url)).expect(200);
    assert_eq!(resource["resource"], format!("{}/api/mcp", server.base));
    assert_eq!(resource["authorization_servers"], json!([server.base]));
    assert_eq!(resource["bearer_methods_supported"], json!(["header"]));
    assert!(resource.get("provenance").is_none());
    let root = server
        .get("/.well-known/oauth-protected-resource")
        .expect(200);
    assert_eq!(root["resource"], server.base);
    let issuer = server
        .get("/.well-known/oauth-authorization-server")
        .expect(200);
    assert_eq!(issuer["issuer"], server.base);
    assert_eq!(issuer["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(issuer["client_id_metadata_document_supported"], true);
    assert_eq!(
        issuer["token_endpoint"],
        format!("{}/oauth/token", server.base)
    );
    // A presented but unknown token says so in the challenge.
    let bad = whoami(&server, "bmat_unknown");
    assert_eq!(bad.status, 401);
    assert!(
        bad.header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\"")
    );

    // Browser-based clients may read the OAuth documents and endpoints from any origin.
    let preflight = server.request(
        "OPTIONS",
        "/oauth/token",
        &[
            ("origin", "http://localhost:6274"),
            ("access-control-request-method", "POST"),
        ],
        None,
    );
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    assert!(
        preflight
            .header("access-control-allow-headers")
            .unwrap()
            .contains("authorization")
    );
    let refused = server.post_form("/oauth/token", &[], &[("grant_type", "password")]);
    assert_eq!(refused.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        server
            .get("/.well-known/oauth-authorization-server")
            .header("access-control-allow-origin"),
        Some("*")
    );
    // The MCP endpoints answer browser clients of the origins they accept, and only those.
    let allowed = [
        ("origin", "http://localhost:6274"),
        ("access-control-request-method", "POST"),
    ];
    let preflight = server.request("OPTIONS", "/api/mcp", &allowed, None);
    assert_eq!(preflight.status, 204);
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert!(
        preflight
            .header("access-control-allow-headers")
            .unwrap()
            .contains("mcp-protocol-version")
    );
    let foreign = [("origin", "https://evil.example")];
    assert_eq!(
        server.request("OPTIONS", "/mcp", &foreign, None).status,
        403
    );
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "agent_whoami", "arguments": {}}});
    let unauthorized = server.request(
        "POST",
        "/api/mcp",
        &[
            ("origin", "http://localhost:6274"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        Some(call.to_string().as_bytes()),
    );
    assert_eq!(unauthorized.status, 401);
    assert_eq!(
        unauthorized.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert!(
        unauthorized
            .header("access-control-expose-headers")
            .unwrap()
            .contains("www-authenticate")
    );
    // Other routes stay as they were: no CORS, and OPTIONS is 405.
    assert_eq!(
        server
            .request("OPTIONS", "/api/agents/me", &[], None)
            .status,
        405
    );
    assert!(
        server
            .get("/api/stats")
            .header("access-control-allow-origin")
            .is_none()
    );

    let catalog = server.get("/.well-known/api-catalog");
    catalog.assert_status(200);
    assert!(
        catalog
            .header("content-type")
            .unwrap()
            .starts_with("application/linkset+json")
    );
    let links = catalog.json()["linkset"].clone();
    let text = links.to_string();
    for path in [
        "/openapi.json",
        "/llms.txt",
        "/api/mcp",
        "/.well-known/oauth-protected-resource/api/mcp",
        "/server.json",
    ] {
        assert!(
            text.contains(&format!("{}{path}", server.base)),
            "{path}: {text}"
        );
    }
    let registry = server.get("/server.json").expect(200);
    assert_eq!(registry["name"], "local.bourse/bourse");
    assert_eq!(registry["remotes"][0]["type"], "streamable-http");
    assert_eq!(
        registry["remotes"][0]["url"],
        format!("{}/mcp", server.base)
    );
    assert!(registry["description"].as_str().unwrap().len() <= 100);
}

#[test]
fn a_person_allows_a_registered_client_which_then_calls_tools_refreshes_and_revokes() {
    let server = TestServer::start();
    let agent = server.register("oauth-person");
    let key = agent["apiKey"].as_str().unwrap();
    let client = register_client(&server, json!({}));
    let client_id = client["client_id"].as_str().unwrap();
    assert!(client.get("client_secret").is_none());
    assert_eq!(client["token_endpoint_auth_method"], "none");

    // The page a person sees: who asks, where they go back to, what it may do.
    let (verifier, challenge) = pkce("page");
    let params = authorize_params(client_id, &challenge, "read message spend");
    let page = authorize_page(&server, &params);
    page.assert_status(200);
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    let html = page.text();
    assert!(
        html.contains("Test Assistant") && html.contains("127.0.0.1:33418"),
        "{html}"
    );
    assert!(html.contains("value=\"read\" checked") && html.contains("value=\"message\" checked"));
    assert!(
        html.contains("value=\"spend\">"),
        "spend is offered unticked: {html}"
    );
    assert!(
        !html.contains("value=\"sell\""),
        "only what was asked is offered"
    );

    // Allow with read and message (spend left unticked).
    let code = allow(
        &server,
        client_id,
        &challenge,
        "read message spend",
        &["read", "message"],
        key,
    );
    let issued = exchange(&server, client_id, &code, &verifier);
    assert_eq!(issued.header("cache-control"), Some("no-store"));
    let issued = issued.expect(200);
    assert_eq!(issued["token_type"], "Bearer");
    assert_eq!(issued["expires_in"], 3600);
    assert_eq!(issued["scope"], "read message");
    let access = issued["access_token"].as_str().unwrap();
    assert!(access.starts_with("bmat_"));

    // The token reaches the same tools as the key, for the same agent.
    let me = call(&server, Some(access), "agent_whoami", json!({}));
    assert_eq!(me["structuredContent"]["handle"], agent["handle"], "{me}");
    // An api_key argument naming the same agent is accepted; another agent's is refused.
    let other = server.register("someone-else");
    let mismatch = call(
        &server,
        Some(access),
        "get_purchase",
        json!({"purchase_id": "00000000-0000-4000-8000-000000000000", "api_key": other["apiKey"]}),
    );
    assert_eq!(mismatch["isError"], true);
    assert!(
        mismatch.to_string().contains("API_KEY_MISMATCH"),
        "{mismatch}"
    );
    // Spending was not ticked: buying is refused with 403 and the scope to ask for.
    let refused = rpc(
        &server,
        Some(access),
        "tools/call",
        json!({"name": "buy_data", "arguments": {"listing_id": "00000000-0000-4000-8000-000000000000"}}),
    );
    assert_eq!(refused.status, 403, "{}", refused.text());
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"read message spend\""),
        "{challenge}"
    );
    assert_eq!(
        refused.json()["error"]["data"]["code"],
        "INSUFFICIENT_SCOPE"
    );
    // Public tools need no scope.
    call(&server, Some(access), "about_marketplace", json!({}));

    // Refresh: a new pair; the old refresh token is good once, and reusing it ends the grant.
    let refresh_token = issued["refresh_token"].as_str().unwrap();
    let refreshed = refresh(&server, client_id, refresh_token, &[]).expect(200);
    let access2 = refreshed["access_token"].as_str().unwrap();
    assert_ne!(access2, access);
    assert_eq!(whoami(&server, access2).status, 200);
    let widened = refresh(
        &server,
        client_id,
        refreshed["refresh_token"].as_str().unwrap(),
        &[("scope", "read spend")],
    );
    oauth_error(&widened, 400, "invalid_scope");
    // Past the grace of a client racing itself, a second use is reuse.
    server.clock.advance(jiff::SignedDuration::from_secs(31));
    let reused = refresh(&server, client_id, refresh_token, &[]);
    oauth_error(&reused, 400, "invalid_grant");
    assert_eq!(
        whoami(&server, access2).status,
        401,
        "reuse revoked the grant"
    );

    // Revocation (RFC 7009) of an access token from a fresh grant.
    let (verifier, challenge) = pkce("again");
    let code = allow(&server, client_id, &challenge, "read", &["read"], key);
    let fresh = exchange(&server, client_id, &code, &verifier).expect(200);
    let token = fresh["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, token).status, 200);
    server
        .post_form(
            "/oauth/revoke",
            &[],
            &[("token", token), ("client_id", client_id)],
        )
        .expect(200);
    assert_eq!(whoami(&server, token).status, 401);
    server
        .post_form(
            "/oauth/revoke",
            &[],
            &[("token", "bmat_nothing"), ("client_id", client_id)],
        )
        .expect(200);
}

#[test]
fn refusals_wrong_verifier_reused_code_redirect_mismatch_foreign_resource_and_deny() {
    let server = TestServer::start();
    let Setup {
        key,
        client_id,
        verifier,
        challenge,
    } = setup(&server, "oauth-refusals", "neg");
    let (key, client_id) = (key.as_str(), client_id.as_str());

    // A redirect URI the client did not register: shown to the person, never redirected to.
    let mut params = authorize_params(client_id, &challenge, "read");
    params[2] = ("redirect_uri", "https://attacker.example/cb");
    let page = authorize_page(&server, &params);
    assert_eq!(page.status, 400);
    assert!(page.header("location").is_none());
    assert!(
        page.text()
            .contains("not one that Test Assistant registered")
    );
    // An unknown client likewise.
    let params = authorize_params("bmc_unknown", &challenge, "read");
    let page = authorize_page(&server, &params);
    assert_eq!(page.status, 400);
    // Without PKCE, or with another method: the client hears it through its redirect.
    let mut params = authorize_params(client_id, &challenge, "read");
    params[5] = ("code_challenge_method", "plain");
    let query = location_query(&authorize_page(&server, &params));
    assert_eq!(param(&query, "error"), Some("invalid_request"));
    assert_eq!(param(&query, "state"), Some("st-123"));
    // A resource that is not this server.
    let mut params = authorize_params(client_id, &challenge, "read");
    params.push(("resource", "https://other.example/mcp"));
    let query = location_query(&authorize_page(&server, &params));
    assert_eq!(param(&query, "error"), Some("invalid_target"));
    // An unknown scope.
    // Scope names this server does not know are ignored (hosted clients send their own).
    let params = authorize_params(client_id, &challenge, "claudeai read");
    let page = authorize_page(&server, &params);
    page.assert_status(200);
    assert!(
        page.text().contains("value=\"read\" checked")
            && !page.text().contains("value=\"message\"")
    );
    // A redirect URI that only looks like a registered loopback one: shown, never redirected to.
    for trick in [
        "http://127.0.0.1:33418@attacker.example/callback",
        "http://127.0.0.1:1@attacker.example/callback",
        "http://127.0.0.1:33418\\@attacker.example/callback",
    ] {
        let mut params = authorize_params(client_id, &challenge, "read");
        params[2] = ("redirect_uri", trick);
        params[0] = ("response_type", "token");
        let page = authorize_page(&server, &params);
        assert_eq!(page.status, 400, "{trick}");
        assert!(page.header("location").is_none(), "{trick}");
    }

    // Deny.
    let mut form = authorize_params(client_id, &challenge, "read");
    form.extend([("grant", "read"), ("api_key", key), ("decision", "deny")]);
    let query = location_query(&server.post_form("/oauth/authorize", &[], &form));
    assert_eq!(param(&query, "error"), Some("access_denied"));
    // A wrong key re-shows the page; nothing is granted.
    let mut form = authorize_params(client_id, &challenge, "read");
    form.extend([
        ("grant", "read"),
        ("api_key", "svc_live_wrong"),
        ("decision", "allow"),
    ]);
    let wrong = server.post_form("/oauth/authorize", &[], &form);
    assert_eq!(wrong.status, 400);
    assert!(wrong.text().contains("unknown or was rotated"));

    // Wrong PKCE verifier, then the right one, then the same code again.
    let code = allow(&server, client_id, &challenge, "read", &["read"], key);
    let (wrong_verifier, _) = pkce("other");
    oauth_error(
        &exchange(&server, client_id, &code, &wrong_verifier),
        400,
        "invalid_grant",
    );
    // The failed attempt used the code up.
    oauth_error(
        &exchange(&server, client_id, &code, &verifier),
        400,
        "invalid_grant",
    );
    let code = allow(&server, client_id, &challenge, "read", &["read"], key);
    let tokens = exchange(&server, client_id, &code, &verifier).expect(200);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, access).status, 200);
    oauth_error(
        &exchange(&server, client_id, &code, &verifier),
        400,
        "invalid_grant",
    );
    assert_eq!(
        whoami(&server, access).status,
        401,
        "a reused code revokes what it granted"
    );

    // Redirect URI mismatch at the token endpoint; a foreign resource there.
    let code = allow(&server, client_id, &challenge, "read", &["read"], key);
    let mismatch = server.post_form(
        "/oauth/token",
        &[],
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:33418/other"),
            ("code_verifier", &verifier),
            ("client_id", client_id),
        ],
    );
    oauth_error(&mismatch, 400, "invalid_grant");
    let code = allow(&server, client_id, &challenge, "read", &["read"], key);
    let foreign = server.post_form(
        "/oauth/token",
        &[],
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
            ("client_id", client_id),
            ("resource", "https://other.example/mcp"),
        ],
    );
    oauth_error(&foreign, 400, "invalid_target");
    // Another client cannot redeem this client's code.
    let code = allow(&server, client_id, &challenge, "read", &["read"], key);
    let thief = register_client(&server, json!({"client_name": "Thief"}));
    let stolen = exchange(
        &server,
        thief["client_id"].as_str().unwrap(),
        &code,
        &verifier,
    );
    oauth_error(&stolen, 400, "invalid_grant");
    // Bad requests to the token endpoint.
    oauth_error(
        &server.post("/oauth/token", &json!({"grant_type": "authorization_code"})),
        400,
        "invalid_request",
    );
    oauth_error(
        &server.post_form(
            "/oauth/token",
            &[],
            &[("grant_type", "password"), ("client_id", client_id)],
        ),
        400,
        "unsupported_grant_type",
    );
    oauth_error(
        &server.post_form("/oauth/token", &[], &[("grant_type", "refresh_token")]),
        401,
        "invalid_client",
    );
    // Registration refusals.
    oauth_error(
        &server.post(
            "/oauth/register",
            &json!({"redirect_uris": ["http://example.com/cb"]}),
        ),
        400,
        "invalid_redirect_uri",
    );
    oauth_error(
        &server.post(
            "/oauth/register",
            &json!({"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}),
        ),
        400,
        "invalid_client_metadata",
    );
}

#[test]
fn tokens_expire_and_rotating_the_api_key_revokes_them() {
    let server = TestServer::start();
    let (issued, client_id, key) = tokens(&server, &["read"]);
    let access = issued["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, access).status, 200);
    server.clock.advance(jiff::SignedDuration::from_mins(61));
    let expired = whoami(&server, access);
    assert_eq!(expired.status, 401);
    assert!(expired.text().contains("expired"), "{}", expired.text());
    // The refresh token still works after the access token expired.
    let refreshed = refresh(
        &server,
        &client_id,
        issued["refresh_token"].as_str().unwrap(),
        &[],
    )
    .expect(200);
    let access = refreshed["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, access).status, 200);
    // Rotating the API key ends every grant of the agent.
    server
        .send_auth("POST", "/api/agents/keys/revoke", &key, &json!({}))
        .assert_status(200);
    assert_eq!(whoami(&server, access).status, 401);
    let refresh_after = refresh(
        &server,
        &client_id,
        refreshed["refresh_token"].as_str().unwrap(),
        &[],
    );
    oauth_error(&refresh_after, 400, "invalid_grant");
    // The operator sees the grant and why it ended.
    let operator = server.operator_key();
    let grants = server
        .get_auth("/api/operator/oauth/grants", &operator)
        .expect(200);
    assert_eq!(
        grants["grants"][0]["revokedBy"], "API key rotated",
        "{grants}"
    );
}

#[test]
fn the_operator_lists_and_revokes_clients_and_grants() {
    let server = TestServer::start();
    let (issued, client_id, _) = tokens(&server, &["read", "message"]);
    let access = issued["access_token"].as_str().unwrap();
    let operator = server.operator_key();
    server
        .get_auth("/api/operator/oauth/grants", "svc_live_nope")
        .assert_error(401, "UNAUTHENTICATED");
    let clients = server
        .get_auth("/api/operator/oauth/clients", &operator)
        .expect(200);
    assert_eq!(clients["clients"][0]["clientId"], client_id.as_str());
    let grants = server
        .get_auth("/api/operator/oauth/grants?active=true", &operator)
        .expect(200);
    assert_eq!(grants["total"], 1);
    assert_eq!(grants["grants"][0]["scopes"], json!(["read", "message"]));
    let grant_id = grants["grants"][0]["id"].as_str().unwrap();
    server
        .send_auth(
            "POST",
            &format!("/api/operator/oauth/grants/{grant_id}/revoke"),
            &operator,
            &json!({}),
        )
        .expect(200);
    assert_eq!(whoami(&server, access).status, 401);
    server
        .send_auth(
            "POST",
            &format!("/api/operator/oauth/grants/{grant_id}/revoke"),
            &operator,
            &json!({}),
        )
        .assert_error(409, "ALREADY_REVOKED");
    // An agent sees and ends its own grants, and no one else's.
    let (mine, _, owner_key) = tokens(&server, &["read"]);
    let own = server
        .get_auth("/api/agents/me/oauth/grants?active=true", &owner_key)
        .expect(200);
    assert_eq!(own["total"], 1, "{own}");
    let own_id = own["grants"][0]["id"].as_str().unwrap().to_owned();
    let stranger = server.register("stranger")["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        server
            .get_auth("/api/agents/me/oauth/grants", &stranger)
            .expect(200)["total"],
        0
    );
    server
        .send_auth(
            "POST",
            &format!("/api/agents/me/oauth/grants/{own_id}/revoke"),
            &stranger,
            &json!({}),
        )
        .assert_error(404, "NOT_FOUND");
    server
        .send_auth(
            "POST",
            &format!("/api/agents/me/oauth/grants/{own_id}/revoke"),
            &owner_key,
            &json!({}),
        )
        .expect(200);
    assert_eq!(
        whoami(&server, mine["access_token"].as_str().unwrap()).status,
        401
    );

    // Revoking the client refuses it on the page and at the token endpoint.
    server
        .send_auth(
            "POST",
            "/api/operator/oauth/clients/revoke",
            &operator,
            &json!({"clientId": client_id}),
        )
        .expect(200);
    let (_, challenge) = pkce("revoked");
    let params = authorize_params(&client_id, &challenge, "read");
    let page = authorize_page(&server, &params);
    assert_eq!(page.status, 400);
    assert!(page.text().contains("revoked"));
}

#[test]
fn a_new_agent_registered_on_the_page_gets_its_key_once_and_the_client_its_code() {
    let server = TestServer::start();
    let client = register_client(
        &server,
        json!({"token_endpoint_auth_method": "client_secret_basic"}),
    );
    let client_id = client["client_id"].as_str().unwrap();
    let secret = client["client_secret"].as_str().unwrap();
    let (verifier, challenge) = pkce("newagent");
    let mut form = authorize_params(client_id, &challenge, "read");
    form.extend([
        ("grant", "read"),
        ("new_agent_name", "Made on the page"),
        ("decision", "allow"),
    ]);
    let created = server.post_form("/oauth/authorize", &[], &form);
    created.assert_status(200);
    let html = created.text();
    let key = html
        .split("<code id=\"api-key\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap();
    assert!(key.starts_with("svc_live_"), "{html}");
    // Continue allows the app as the new agent: the form carries the request and the key.
    let fields = hidden_inputs(&html);
    assert!(
        fields
            .iter()
            .any(|(name, value)| name == "api_key" && value == key)
    );
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.push(("decision", "allow"));
    let query = location_query(&server.post_form("/oauth/authorize", &[], &form));
    let code = param(&query, "code").unwrap();
    // A confidential client authenticates with HTTP Basic; without it, it is refused.
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
    ];
    let mut with_id = pairs.to_vec();
    with_id.push(("client_id", client_id));
    oauth_error(
        &server.post_form("/oauth/token", &[], &with_id),
        401,
        "invalid_client",
    );
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"))
    );
    let tokens = server
        .post_form("/oauth/token", &[("authorization", &basic)], &pairs)
        .expect(200);
    let me = call(
        &server,
        tokens["access_token"].as_str(),
        "agent_whoami",
        json!({}),
    );
    assert_eq!(me["structuredContent"]["name"], "Made on the page");
    // The key shown once is the agent's own.
    assert_eq!(whoami(&server, key).status, 200);
}

/// Serves one JSON document at `/client.json` for as many requests as come.
fn serve_document(doc: impl Fn(&str) -> Value + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{base}/client.json");
    let own = url.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = doc(&own).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_client_id_metadata_document_is_fetched_checked_and_used() {
    let server = TestServer::start();
    let agent = server.register("cimd-owner");
    let key = agent["apiKey"].as_str().unwrap();
    let url = serve_document(
        |own| json!({"client_id": own, "client_name": "Doc Client", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}),
    );
    let (verifier, challenge) = pkce("cimd");
    let params = authorize_params(&url, &challenge, "read");
    let page = authorize_page(&server, &params);
    page.assert_status(200);
    assert!(page.text().contains("Doc Client") && page.text().contains("described at"));
    let code = allow(&server, &url, &challenge, "read", &["read"], key);
    let tokens = exchange(&server, &url, &code, &verifier).expect(200);
    assert_eq!(
        whoami(&server, tokens["access_token"].as_str().unwrap()).status,
        200
    );

    // A document that names another client id is refused on the page.
    let liar = serve_document(
        |_| json!({"client_id": "https://someone-else.example/client.json", "redirect_uris": [REDIRECT]}),
    );
    let params = authorize_params(&liar, &challenge, "read");
    let page = authorize_page(&server, &params);
    assert_eq!(page.status, 400);
    assert!(page.text().contains("must name itself"), "{}", page.text());
}

#[test]
fn a_token_issued_for_another_resource_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = TestServer::start_in(&data);
    let (issued, _, _) = tokens(&server, &["read"]);
    let access = issued["access_token"].as_str().unwrap().to_owned();
    assert_eq!(whoami(&server, &access).status, 200);
    server.stop();
    // The same database now serves another resource: the token names the old one.
    let moved = TestServer::start_in_with(&data, |config| {
        config.public_url = Some("https://market.example.com".into());
    });
    let refused = whoami(&moved, &access);
    assert_eq!(refused.status, 401);
    assert!(
        refused.text().contains("was issued for") && refused.text().contains("market.example.com"),
        "{}",
        refused.text()
    );
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
}

#[test]
fn refresh_narrows_scopes_tolerates_a_concurrent_repeat_and_keeps_a_token_a_bad_request_spent_nothing()
 {
    let server = TestServer::start();
    let (issued, client_id, _) = tokens(&server, &["read", "message"]);
    let first = issued["refresh_token"].as_str().unwrap();
    // A refresh naming a foreign resource is refused and spends nothing.
    let foreign = refresh(
        &server,
        &client_id,
        first,
        &[("resource", "https://other.example/mcp")],
    );
    oauth_error(&foreign, 400, "invalid_target");
    // Narrowing to read: the new access token no longer sends messages.
    let narrowed = refresh(&server, &client_id, first, &[("scope", "read")]).expect(200);
    assert_eq!(narrowed["scope"], "read");
    let access = narrowed["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, access).status, 200);
    let send = rpc(
        &server,
        Some(access),
        "tools/call",
        json!({"name": "agent_send_message", "arguments": {"handle": "A-NOBODY00", "clientMessageId": "n-1", "body": "hi"}}),
    );
    assert_eq!(send.status, 403, "{}", send.text());
    // ... and cannot widen back with its refresh token.
    let widen = refresh(
        &server,
        &client_id,
        narrowed["refresh_token"].as_str().unwrap(),
        &[("scope", "read message")],
    );
    oauth_error(&widen, 400, "invalid_scope");
    // The first refresh token again, within seconds (a client racing itself): a new pair.
    refresh(&server, &client_id, first, &[]).expect(200);
    // Half a minute later it is reuse: the grant ends.
    server.clock.advance(jiff::SignedDuration::from_secs(31));
    oauth_error(
        &refresh(&server, &client_id, first, &[]),
        400,
        "invalid_grant",
    );
    assert_eq!(whoami(&server, access).status, 401);
}

#[test]
fn a_redirect_uri_left_out_of_the_request_may_be_left_out_of_the_exchange() {
    let server = TestServer::start();
    let Setup {
        key,
        client_id,
        verifier,
        challenge,
    } = setup(&server, "oauth-short", "short");
    let (key, client_id) = (key.as_str(), client_id.as_str());
    let mut form: Vec<(&str, &str)> = authorize_params(client_id, &challenge, "read")
        .into_iter()
        .filter(|(name, _)| *name != "redirect_uri")
        .collect();
    form.extend([("grant", "read"), ("api_key", key), ("decision", "allow")]);
    let query = location_query(&server.post_form("/oauth/authorize", &[], &form));
    let code = param(&query, "code").unwrap();
    server
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("code_verifier", &verifier),
                ("client_id", client_id),
            ],
        )
        .expect(200);
}

#[test]
fn the_hosted_clients_endpoint_wants_a_credential_from_the_first_request() {
    let server = TestServer::start();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let body = initialize.to_string();
    let headers = [("mcp-protocol-version", "2025-11-25")];
    // /api/mcp answers initialize without a credential; /mcp answers 401 and points at its metadata.
    assert_eq!(
        server
            .request("POST", "/api/mcp", &headers, Some(body.as_bytes()))
            .status,
        200
    );
    let refused = server.request("POST", "/mcp", &headers, Some(body.as_bytes()));
    assert_eq!(refused.status, 401, "{}", refused.text());
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            server.base
        )),
        "{challenge}"
    );
    assert_eq!(refused.json()["id"], 1);
    assert_eq!(server.get("/mcp").status, 401);
    let metadata = server
        .get("/.well-known/oauth-protected-resource/mcp")
        .expect(200);
    assert_eq!(metadata["resource"], format!("{}/mcp", server.base));
    // A token bound to /mcp works there (and on /api/mcp); so does an API key.
    let Setup {
        key,
        client_id,
        verifier,
        challenge,
    } = setup(&server, "hosted", "hosted");
    let (key, client_id) = (key.as_str(), client_id.as_str());
    let resource = format!("{}/mcp", server.base);
    let mut form = authorize_params(client_id, &challenge, "read");
    form.extend([
        ("resource", resource.as_str()),
        ("grant", "read"),
        ("api_key", key),
        ("decision", "allow"),
    ]);
    let query = location_query(&server.post_form("/oauth/authorize", &[], &form));
    let code = param(&query, "code").unwrap();
    let tokens = server
        .post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", &verifier),
                ("client_id", client_id),
                ("resource", &resource),
            ],
        )
        .expect(200);
    let access = tokens["access_token"].as_str().unwrap();
    let initialize_with = |credential: &str| {
        let bearer = format!("Bearer {credential}");
        let headers = [
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", bearer.as_str()),
        ];
        server
            .request("POST", "/mcp", &headers, Some(body.as_bytes()))
            .status
    };
    assert_eq!(initialize_with(access), 200);
    assert_eq!(whoami(&server, access).status, 200);
    assert_eq!(initialize_with(key), 200);
}

#[test]
fn a_token_without_message_scope_does_not_sign_an_inquiry_with_the_agents_name() {
    let server = TestServer::start();
    let (reader, _, _) = tokens(&server, &["read"]);
    let (speaker, _, _) = tokens(&server, &["read", "message"]);
    for (token, subject) in [(&reader, "from a reader"), (&speaker, "from a speaker")] {
        let result = call(
            &server,
            token["access_token"].as_str(),
            "contact_marketplace",
            json!({"subject": subject, "message": "Hello from a hosted client."}),
        );
        assert_ne!(result["isError"], true, "{result}");
    }
    let operator = server.operator_key();
    let inquiries = server
        .get_auth("/api/operator/inquiries", &operator)
        .expect(200);
    let agent_of = |subject: &str| {
        inquiries["inquiries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["subject"] == subject)
            .map(|i| i["agentId"].clone())
            .unwrap()
    };
    assert_eq!(agent_of("from a reader"), Value::Null);
    assert!(agent_of("from a speaker").is_string());
}
