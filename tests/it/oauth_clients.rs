//! The kinds of OAuth client and request the authorization server takes: a confidential client
//! with a new agent registered on the page, a client ID metadata document, and a request that
//! leaves its redirect URI out.

use std::io::{Read, Write};
use std::net::TcpListener;

use base64::Engine;
use serde_json::{Value, json};

use crate::support::TestServer;
use crate::support::mcp::call;
use crate::support::oauth::{
    REDIRECT, Setup, allow, authorize_page, authorize_params, exchange, location_query,
    oauth_error, param, pkce, register_client, setup, whoami,
};

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
fn a_redirect_uri_left_out_of_the_request_may_be_left_out_of_the_exchange() {
    let server = TestServer::start();
    let Setup {
        key,
        client_id,
        verifier,
        challenge,
        ..
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

/// What one address can make bourse dial before it holds any credential is bounded: 5 client
/// metadata documents a minute (60 from everyone together; 10 a minute per host), counted before
/// the fetch, so the sixth document's server is never asked. A document already fetched is
/// kept an hour and costs nothing.
#[test]
fn one_address_makes_bourse_fetch_at_most_five_client_documents_a_minute() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = TestServer::start();
    let (_, challenge) = pkce("limits");
    let asked: Vec<Arc<AtomicUsize>> = (0..6).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let urls: Vec<String> = asked
        .iter()
        .map(|count| {
            let count = count.clone();
            serve_document(move |own| {
                count.fetch_add(1, Ordering::SeqCst);
                json!({"client_id": own, "client_name": "Doc", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
            })
        })
        .collect();
    for url in &urls[..5] {
        authorize_page(&server, &authorize_params(url, &challenge, "read")).assert_status(200);
    }
    // Again: kept, not fetched again, not counted.
    authorize_page(&server, &authorize_params(&urls[0], &challenge, "read")).assert_status(200);
    let refused = authorize_page(&server, &authorize_params(&urls[5], &challenge, "read"));
    refused.assert_error(429, "RATE_LIMITED");
    assert!(refused.header("retry-after").is_some());
    let counts: Vec<usize> = asked.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert_eq!(counts, [1, 1, 1, 1, 1, 0], "documents fetched per server");
}
