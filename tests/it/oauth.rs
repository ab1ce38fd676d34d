//! OAuth for hosted MCP clients, black-box: a person allows a registered client, which calls
//! tools, refreshes (narrowing, racing itself, reuse) and revokes; tokens expire, end with a
//! rotated key, and name their resource; the operator's and the agent's view of grants; and what
//! a token without the message scope may sign.

use serde_json::{Value, json};

use crate::support::TestServer;
use crate::support::mcp::{call, rpc};
use crate::support::oauth::{
    Setup, allow, authorize_page, authorize_params, exchange, oauth_error, pkce, refresh, setup,
    tokens, whoami,
};

#[test]
fn a_person_allows_a_registered_client_which_then_calls_tools_refreshes_and_revokes() {
    let server = TestServer::start();
    let Setup {
        agent,
        key,
        client,
        client_id,
        verifier,
        challenge,
    } = setup(&server, "oauth-person", "page");
    let (key, client_id) = (key.as_str(), client_id.as_str());
    assert!(client.get("client_secret").is_none());
    assert_eq!(client["token_endpoint_auth_method"], "none");

    // The page a person sees: who asks, where they go back to, what it may do.
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
    // Empty and repeated parameters are refused, naming them, on the clients and both grant
    // lists alike.
    for path in [
        "/api/operator/oauth/clients",
        "/api/operator/oauth/grants",
        "/api/agents/me/oauth/grants",
    ] {
        let key = if path.starts_with("/api/agents") {
            server.register("granter")["apiKey"]
                .as_str()
                .unwrap()
                .to_owned()
        } else {
            operator.clone()
        };
        for (query, name) in [
            ("limit=", "limit"),
            ("offset=", "offset"),
            ("limit=1&limit=2", "limit"),
            ("limit=200&limit=200", "limit"),
        ] {
            server
                .get_auth(&format!("{path}?{query}"), &key)
                .assert_invalid_naming(name);
        }
    }
    for query in ["active=", "active=yes", "active=true&active=false"] {
        server
            .get_auth(&format!("/api/operator/oauth/grants?{query}"), &operator)
            .assert_invalid_naming("active");
    }
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
