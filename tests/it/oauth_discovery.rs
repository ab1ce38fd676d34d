//! OAuth discovery for hosted MCP clients: from a 401 to the protected-resource and
//! authorization-server metadata, CORS for browser clients, the API catalog and server.json, and
//! `/mcp`, which wants a credential from the first request.

use serde_json::json;

use crate::support::TestServer;
use crate::support::mcp::rpc;
use crate::support::oauth::{
    REDIRECT, Setup, authorize_params, location_query, param, setup, whoami,
};

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
        ..
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
