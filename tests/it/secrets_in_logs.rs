//! Secrets never reach the logs: every credential bourse issues or accepts, sent in a query, a
//! header, a JSON body and a form, at the most verbose log level, is absent from everything the
//! server printed.

use std::process::Stdio;

use bourse::logs::SECRET_PREFIXES;
use serde_json::json;

use crate::support::oauth::{self, REDIRECT};
use crate::support::{BinServer, bourse};

#[test]
fn no_secret_reaches_any_log_line_at_any_level() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut command = bourse();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .env("BOURSE_LOG", "trace")
        .stderr(Stdio::piped());
    let server = BinServer::start(command);
    let client = &server.client;

    // Real secrets, as the server issued them.
    let setup = oauth::setup(client, "log-owner", "logs");
    let code = setup.allow(client, "read", &["read"]);
    let tokens = setup.exchange(client, &code).expect(200);
    let confidential = oauth::register_client(
        client,
        json!({"token_endpoint_auth_method": "client_secret_post"}),
    );
    let operator = std::fs::read_to_string(data.join("operator.key")).unwrap();
    let mut secrets: Vec<(&str, String)> = vec![
        ("api_key", setup.key.clone()),
        ("code", code.clone()),
        ("code_verifier", setup.verifier.clone()),
        (
            "access_token",
            tokens["access_token"].as_str().unwrap().to_owned(),
        ),
        (
            "refresh_token",
            tokens["refresh_token"].as_str().unwrap().to_owned(),
        ),
        (
            "client_secret",
            confidential["client_secret"].as_str().unwrap().to_owned(),
        ),
        ("operator_key", operator.trim().to_owned()),
    ];
    // Shaped as the server mints them, never issued: still kept out.
    secrets.push(("purchase_token", format!("x402_{}", "p".repeat(32))));
    secrets.push(("token", format!("bmat_{}", "t".repeat(43))));
    secrets.push(("session", format!("cs_{}", "s".repeat(32))));

    for (name, secret) in &secrets {
        // In a query, on a public read, the OAuth token endpoint and MCP.
        client.get(&format!("/api/agents?{name}={secret}"));
        client.post_form(&format!("/oauth/token?{name}={secret}"), &[], &[]);
        client.request(
            "POST",
            &format!("/api/mcp?{name}={secret}"),
            &[("content-type", "application/json")],
            Some(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        );
        // In headers.
        let bearer = format!("Bearer {secret}");
        client.request(
            "GET",
            "/api/agents/me",
            &[("authorization", &bearer), ("x-api-key", secret)],
            None,
        );
        // In a JSON body: as the key of a body-key route, and as values the server judges.
        client.post(
            "/api/marketplace/listings",
            &json!({"api_key": secret, "title": secret, "unknown": secret}),
        );
        client.post("/api/verify-receipt", &json!({"receipt": secret}));
        // In forms: the token, revocation and authorization endpoints.
        client.post_form(
            "/oauth/token",
            &[],
            &[
                ("grant_type", "authorization_code"),
                ("code", secret),
                ("code_verifier", secret),
                ("client_id", &setup.client_id),
                ("client_secret", secret),
                ("redirect_uri", REDIRECT),
            ],
        );
        client.post_form(
            "/oauth/token",
            &[],
            &[("grant_type", "refresh_token"), ("refresh_token", secret)],
        );
        client.post_form("/oauth/revoke", &[], &[("token", secret)]);
        client.post_form(
            "/oauth/authorize",
            &[],
            &[("api_key", secret), ("decision", "allow")],
        );
        // In a path, where a capability goes: a secret the server minted is recognised by its
        // prefix (a client's own verifier in a path is not something it can know).
        if SECRET_PREFIXES
            .iter()
            .any(|prefix| secret.starts_with(prefix))
        {
            client.get(&format!("/sandbox/checkout/{secret}"));
            client.get(&format!("/api/marketplace/purchases/{secret}"));
        }
    }

    let (status, log) = server.terminate();
    assert!(status.success());
    assert!(
        log.lines().count() > secrets.len() * 10,
        "the server logged too little for this test to mean anything:\n{log}"
    );
    for (name, secret) in &secrets {
        assert!(
            !log.contains(secret.as_str()),
            "the {name} reached the log:\n{}",
            log.lines()
                .filter(|line| line.contains(secret.as_str()))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    assert!(log.contains("api_key=REDACTED") && log.contains("code_verifier=REDACTED"));
}
