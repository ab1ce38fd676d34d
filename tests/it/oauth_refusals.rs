//! What the OAuth endpoints refuse: a wrong PKCE verifier, a reused code, a redirect mismatch,
//! a foreign resource, Deny, a wrong key, bad token requests and bad registrations.

use serde_json::{Value, json};

use crate::support::TestServer;
use crate::support::oauth::{
    REDIRECT, Setup, authorize_page, authorize_params, exchange, location_query, oauth_error,
    param, pkce, register_client, setup, whoami,
};

#[test]
fn refusals_wrong_verifier_reused_code_redirect_mismatch_foreign_resource_and_deny() {
    let server = TestServer::start();
    let setup = setup(&server, "oauth-refusals", "neg");
    let Setup {
        key,
        client_id,
        verifier,
        challenge,
        ..
    } = &setup;
    let (key, client_id) = (key.as_str(), client_id.as_str());

    // A redirect URI the client did not register: shown to the person, never redirected to.
    let mut params = authorize_params(client_id, challenge, "read");
    params[2] = ("redirect_uri", "https://attacker.example/cb");
    let page = authorize_page(&server, &params);
    assert_eq!(page.status, 400);
    assert!(page.header("location").is_none());
    assert!(
        page.text()
            .contains("not one that Test Assistant registered")
    );
    // An unknown client likewise.
    let params = authorize_params("bmc_unknown", challenge, "read");
    let page = authorize_page(&server, &params);
    assert_eq!(page.status, 400);
    // Without PKCE, or with another method: the client hears it through its redirect.
    let mut params = authorize_params(client_id, challenge, "read");
    params[5] = ("code_challenge_method", "plain");
    let query = location_query(&authorize_page(&server, &params));
    assert_eq!(param(&query, "error"), Some("invalid_request"));
    assert_eq!(param(&query, "state"), Some("st-123"));
    // A resource that is not this server.
    let mut params = authorize_params(client_id, challenge, "read");
    params.push(("resource", "https://other.example/mcp"));
    let query = location_query(&authorize_page(&server, &params));
    assert_eq!(param(&query, "error"), Some("invalid_target"));
    // An unknown scope.
    // Scope names this server does not know are ignored (hosted clients send their own).
    let params = authorize_params(client_id, challenge, "claudeai read");
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
        let mut params = authorize_params(client_id, challenge, "read");
        params[2] = ("redirect_uri", trick);
        params[0] = ("response_type", "token");
        let page = authorize_page(&server, &params);
        assert_eq!(page.status, 400, "{trick}");
        assert!(page.header("location").is_none(), "{trick}");
    }

    // Deny.
    let mut form = authorize_params(client_id, challenge, "read");
    form.extend([("grant", "read"), ("api_key", key), ("decision", "deny")]);
    let query = location_query(&server.post_form("/oauth/authorize", &[], &form));
    assert_eq!(param(&query, "error"), Some("access_denied"));
    // A wrong key re-shows the page; nothing is granted.
    let mut form = authorize_params(client_id, challenge, "read");
    form.extend([
        ("grant", "read"),
        ("api_key", "svc_live_wrong"),
        ("decision", "allow"),
    ]);
    let wrong = server.post_form("/oauth/authorize", &[], &form);
    assert_eq!(wrong.status, 400);
    assert!(wrong.text().contains("unknown or was rotated"));

    // Wrong PKCE verifier, then the right one, then the same code again.
    let code = setup.allow(&server, "read", &["read"]);
    let (wrong_verifier, _) = pkce("other");
    oauth_error(
        &exchange(&server, client_id, &code, &wrong_verifier),
        400,
        "invalid_grant",
    );
    // The failed attempt used the code up.
    oauth_error(
        &exchange(&server, client_id, &code, verifier),
        400,
        "invalid_grant",
    );
    let code = setup.allow(&server, "read", &["read"]);
    let tokens = exchange(&server, client_id, &code, verifier).expect(200);
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, access).status, 200);
    oauth_error(
        &exchange(&server, client_id, &code, verifier),
        400,
        "invalid_grant",
    );
    assert_eq!(
        whoami(&server, access).status,
        401,
        "a reused code revokes what it granted"
    );

    // Redirect URI mismatch at the token endpoint; a foreign resource there.
    let code = setup.allow(&server, "read", &["read"]);
    let mismatch = server.post_form(
        "/oauth/token",
        &[],
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:33418/other"),
            ("code_verifier", verifier),
            ("client_id", client_id),
        ],
    );
    oauth_error(&mismatch, 400, "invalid_grant");
    let code = setup.allow(&server, "read", &["read"]);
    let foreign = server.post_form(
        "/oauth/token",
        &[],
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
            ("client_id", client_id),
            ("resource", "https://other.example/mcp"),
        ],
    );
    oauth_error(&foreign, 400, "invalid_target");
    // Another client cannot redeem this client's code.
    let code = setup.allow(&server, "read", &["read"]);
    let thief = register_client(&server, json!({"client_name": "Thief"}));
    let stolen = exchange(
        &server,
        thief["client_id"].as_str().unwrap(),
        &code,
        verifier,
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

/// Registration holds `client_name` and `client_uri` to the patterns the contract states: a
/// name on one line with nothing invisible, a URI that is `https://` without whitespace or
/// control characters, at most 2000 characters (not bytes) as `maxLength` counts.
#[test]
fn registration_refuses_what_the_metadata_patterns_refuse_and_nothing_else() {
    let server = TestServer::start();
    let document: Value = serde_json::from_str(include_str!("../../assets/openapi.json")).unwrap();
    let metadata = &document["components"]["schemas"]["OAuthClientMetadata"]["properties"];
    let register = |extra: Value| {
        let mut body = json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        server.post("/oauth/register", &body)
    };
    let matches = |field: &str, value: &str| {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&metadata[field])
            .unwrap()
            .is_valid(&json!(value))
    };
    for name in [
        "a\u{1}b",
        " ",
        "a\u{200B}b",
        "a\u{202E}b",
        "a\u{E0001}",
        "a\u{F0000}",
    ] {
        assert!(!matches("client_name", name), "{name:?}");
        oauth_error(
            &register(json!({"client_name": name})),
            400,
            "invalid_client_metadata",
        );
    }
    let long_uri = format!("https://example.com/{}", "é".repeat(1980));
    for uri in [
        "https://example.com/a b",
        "https://example.com/\u{85}",
        "HTTPS://example.com",
    ] {
        assert!(!matches("client_uri", uri), "{uri:?}");
        oauth_error(
            &register(json!({"client_uri": uri})),
            400,
            "invalid_client_metadata",
        );
    }
    for (name, uri) in [(" Tool é😀 ", long_uri.as_str()), ("T", "https://x")] {
        assert!(matches("client_name", name) && matches("client_uri", uri));
        register(json!({"client_name": name, "client_uri": uri})).assert_status(201);
    }
    // Redirect URIs: the pattern admits exactly what the server registers.
    let redirect = |uri: &str| {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&metadata["redirect_uris"]["items"])
            .unwrap()
            .is_valid(&json!(uri))
    };
    for uri in [
        "com.example.app:/cb",
        "com.example.app://cb/x",
        "k.app:*",
        "hTTP://[::1]:993/x",
        "https://[::1]/cb",
        "https://[2001:DB8::7:1]:8443/cb",
        "com.example.app://[1::]/cb",
        "com.example.app://h:65535/cb",
        "http://localhost:1/cb",
        "https://host:8443/cb?x=1",
    ] {
        assert!(redirect(uri), "{uri}");
        server
            .post("/oauth/register", &json!({"redirect_uris": [uri]}))
            .assert_status(201);
    }
    for uri in [
        "https://[ab/cb",
        "--k.app:*",
        "0.a:/x",
        "https://a]b/cb",
        "https://a[b]/cb",
        "https://[0\u{e9}]/cb",
        "HTTPS://[0]",
        "http://127.0.0.1:79017680/cb",
        "https://x:08443/cb",
        "https://x:+443/cb",
        "https://a:b:443/cb",
        "https://[::1]x/cb",
        "com.example.app://h:0/cb",
        "https://[::ffff:10.0.0.1]/cb",
        "https://[1:2:3:4:5:6:7:8:9]/cb",
        "com.example.app://[x]/cb",
        "https://a@b/cb",
        "https://host:/cb",
        "http://example.com/cb",
        "com.example.app://a%20b/cb",
        "app:/cb",
    ] {
        assert!(!redirect(uri), "{uri}");
        oauth_error(
            &server.post("/oauth/register", &json!({"redirect_uris": [uri]})),
            400,
            "invalid_redirect_uri",
        );
    }
}

/// Registration takes a redirect URI with characters a URI cannot hold (an IRI: `é`, `<`, a
/// bracket in a path); the browser is sent back to it as a URI, those characters
/// percent-encoded, so `Location` is always a URI, as its schema's `format: uri` says (found by
/// schema fuzzing).
#[test]
fn a_redirect_back_to_an_iri_is_sent_as_a_uri() {
    let server = TestServer::start();
    let is_uri = jsonschema::options()
        .should_validate_formats(true)
        .build(&json!({"type": "string", "format": "uri"}))
        .unwrap();
    // The validator knows an IRI from a URI.
    assert!(!is_uri.is_valid(&json!("https://ex\u{e4}mple/cb<1>")));
    for (iri, sent) in [
        (
            "https://client.ex\u{e4}mple/cb<1>",
            "https://client.ex%C3%A4mple/cb%3C1%3E",
        ),
        (
            "com.example.app:/cb?u=https://[x]",
            "com.example.app:/cb?u=https://%5Bx%5D",
        ),
        (
            "https://[2001:db8::1]:8443/[p]%zz",
            "https://[2001:db8::1]:8443/%5Bp%5D%25zz",
        ),
    ] {
        let client = register_client(&server, json!({"redirect_uris": [iri]}));
        let client_id = client["client_id"].as_str().unwrap();
        let mut params = authorize_params(client_id, "x", "read");
        params[2] = ("redirect_uri", iri);
        params[5] = ("code_challenge_method", "plain");
        let answer = authorize_page(&server, &params);
        assert_eq!(answer.status, 303, "{iri}: {}", answer.text());
        let location = answer.header("location").unwrap();
        let (base, query) = location.split_once("&error=").unwrap_or_else(|| {
            location
                .split_once("?error=")
                .unwrap_or_else(|| panic!("{location}"))
        });
        assert_eq!(base, sent);
        assert!(is_uri.is_valid(&json!(location)), "{location}");
        let query = bourse::http::request::parse_query(Some(&format!("error={query}")));
        assert_eq!(param(&query, "error"), Some("invalid_request"));
        assert_eq!(param(&query, "state"), Some("st-123"));
    }
}
