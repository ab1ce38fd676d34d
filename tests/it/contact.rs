//! Contact: inquiry threads by capability, operator handling, limits, relay rails, service
//! requests and the creation rate limit.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::support::TestServer;

fn create(server: &TestServer, body: Value) -> Value {
    let response = server.post("/api/inquiries", &body);
    response.expect(201)
}

fn inquiry(server: &TestServer) -> String {
    create(
        server,
        json!({"subject": "Hello", "message": "A question."}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn thread(server: &TestServer, id: &str) -> Value {
    let response = server.get(&format!("/api/inquiries/{id}/thread"));
    response.expect(200)
}

fn follow_up(server: &TestServer, id: &str, body: Value) -> crate::support::Resp {
    server.post(&format!("/api/inquiries/{id}/messages"), &body)
}

#[test]
fn an_inquiry_opens_a_thread_the_id_reads_and_extends() {
    let server = TestServer::start();
    let created = create(
        &server,
        json!({"subject": "Partnership", "message": "Line one.\nLine two.", "category": "partnership",
               "name": "Ann", "email": "ann@example.com", "submittedBy": "agent-7"}),
    );
    let id = created["id"].as_str().unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(created["subject"], "Partnership");
    assert_eq!(created["message"], "Line one.\nLine two.");
    assert_eq!(created["category"], "partnership");
    assert_eq!(created["status"], "open");
    assert_eq!(created["email"], "ann@example.com");
    assert_eq!(created["submittedBy"], "agent-7");
    assert!(created["createdAt"].is_string());
    assert!(
        created["provenance"].is_object(),
        "public answers are signed"
    );
    assert!(
        created["threadUrl"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/api/inquiries/{id}/thread"))
    );

    let first = thread(&server, id);
    assert_eq!(first["id"], id);
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["from"], "inquirer");
    assert_eq!(messages[0]["body"], "Line one.\nLine two.");
    assert_eq!(messages[0]["authorName"], "Ann");
    assert_eq!(messages[0]["emailStatus"], "not_configured");
    assert_eq!(messages[0]["attachments"], json!([]));

    let data = STANDARD.encode(b"hello attachment");
    let posted = follow_up(
        &server,
        id,
        json!({"message": "More detail.", "attachments": [{"name": "a.txt", "contentType": "text/plain", "data": data}]}),
    );
    posted.assert_status(201);
    assert_eq!(posted.json()["message"]["from"], "inquirer");
    let messages = thread(&server, id)["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["body"], "More detail.");
    assert_eq!(messages[1]["attachments"][0]["name"], "a.txt");
    assert_eq!(messages[1]["attachments"][0]["data"], data);
    assert_eq!(messages[1]["attachments"][0]["size"], 16);

    // Required fields, sizes, unknown fields.
    server
        .post("/api/inquiries", &json!({"subject": "no message"}))
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .post("/api/inquiries", &json!({"message": "no subject"}))
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .post(
            "/api/inquiries",
            &json!({"subject": "x", "message": "x".repeat(10_001)}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .post(
            "/api/inquiries",
            &json!({"subject": "x", "message": "y", "colour": "red"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    create(
        &server,
        json!({"subject": "x", "message": "x".repeat(10_000)}),
    );
}

#[test]
fn unknown_inquiries_are_404_everywhere() {
    let server = TestServer::start();
    let operator = server.operator_key();
    let unknown = "00000000-0000-4000-8000-000000000000";
    for id in [unknown, "not-a-uuid"] {
        server
            .get(&format!("/api/inquiries/{id}/thread"))
            .assert_error(404, "NOT_FOUND");
        follow_up(&server, id, json!({"message": "hi"})).assert_error(404, "NOT_FOUND");
        server
            .send_auth(
                "POST",
                &format!("/api/operator/inquiries/{id}/reply"),
                &operator,
                &json!({"message": "hi"}),
            )
            .assert_error(404, "NOT_FOUND");
        server
            .send_auth(
                "PATCH",
                &format!("/api/operator/inquiries/{id}"),
                &operator,
                &json!({"status": "closed"}),
            )
            .assert_error(404, "NOT_FOUND");
        server
            .send_auth(
                "POST",
                "/api/rails",
                &operator,
                &json!({"rootInquiryId": id}),
            )
            .assert_error(404, "NOT_FOUND");
    }
}

#[test]
fn the_operator_lists_replies_as_team_and_sets_the_status() {
    let server = TestServer::start();
    let operator = server.operator_key();
    let first = inquiry(&server);
    let second = inquiry(&server);

    // Operator endpoints need the operator key.
    server
        .get("/api/operator/inquiries")
        .assert_error(401, "UNAUTHENTICATED");
    server
        .get_auth("/api/operator/inquiries", "wrong")
        .assert_error(401, "UNAUTHENTICATED");
    server
        .post(
            &format!("/api/operator/inquiries/{first}/reply"),
            &json!({"message": "hi"}),
        )
        .assert_error(401, "UNAUTHENTICATED");
    server
        .request(
            "PATCH",
            &format!("/api/operator/inquiries/{first}"),
            &[],
            Some(br#"{"status":"closed"}"#),
        )
        .assert_error(401, "UNAUTHENTICATED");
    server
        .post("/api/rails", &json!({"rootInquiryId": first}))
        .assert_error(401, "UNAUTHENTICATED");

    let listed = server.get_auth("/api/operator/inquiries", &operator).json();
    assert_eq!(listed["total"], 2);
    assert_eq!(listed["inquiries"][0]["id"], second, "newest first");
    assert_eq!(listed["inquiries"][0]["messageCount"], 1);
    let page = server
        .get_auth("/api/operator/inquiries?limit=1&offset=1", &operator)
        .json();
    assert_eq!(page["inquiries"].as_array().unwrap().len(), 1);
    assert_eq!(page["inquiries"][0]["id"], first);

    let replied = server.send_auth(
        "POST",
        &format!("/api/operator/inquiries/{first}/reply"),
        &operator,
        &json!({"message": "Thanks, we will look."}),
    );
    replied.assert_status(201);
    assert_eq!(replied.json()["status"], "answered");
    let shown = thread(&server, &first);
    assert_eq!(shown["status"], "answered");
    assert_eq!(shown["messages"][1]["from"], "team");
    assert_eq!(shown["messages"][1]["emailStatus"], "not_configured");

    let answered = server
        .get_auth("/api/operator/inquiries?status=answered", &operator)
        .json();
    assert_eq!(answered["total"], 1);
    assert_eq!(answered["inquiries"][0]["id"], first);
    server
        .get_auth("/api/operator/inquiries?status=bogus", &operator)
        .assert_error(400, "INVALID_ARGUMENT");
    for (query, name) in [
        ("status=", "status"),
        ("limit=", "limit"),
        ("offset=", "offset"),
        ("limit=1&limit=1", "limit"),
    ] {
        server
            .get_auth(&format!("/api/operator/inquiries?{query}"), &operator)
            .assert_invalid_naming(name);
    }

    // The inquirer answering reopens it.
    follow_up(&server, &first, json!({"message": "One more thing."}));
    assert_eq!(thread(&server, &first)["status"], "open");

    let patched = server.send_auth(
        "PATCH",
        &format!("/api/operator/inquiries/{first}"),
        &operator,
        &json!({"status": "resolved"}),
    );
    patched.assert_status(200);
    assert_eq!(patched.json()["status"], "resolved");
    assert_eq!(thread(&server, &first)["status"], "resolved");
    server
        .send_auth(
            "PATCH",
            &format!("/api/operator/inquiries/{first}"),
            &operator,
            &json!({"status": "done"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");

    // A closed thread refuses follow-ups by capability; the team may still reply.
    server.send_auth(
        "PATCH",
        &format!("/api/operator/inquiries/{first}"),
        &operator,
        &json!({"status": "closed"}),
    );
    follow_up(&server, &first, json!({"message": "hello?"})).assert_error(409, "INQUIRY_CLOSED");
}

#[test]
fn message_and_attachment_limits() {
    let server = TestServer::start();
    let id = inquiry(&server);
    follow_up(&server, &id, json!({"message": "x".repeat(10_001)}))
        .assert_error(400, "INVALID_ARGUMENT");
    follow_up(&server, &id, json!({})).assert_error(400, "INVALID_ARGUMENT");
    let small = STANDARD.encode(b"tiny");
    let one = json!({"name": "a.bin", "contentType": "application/octet-stream", "data": small});
    follow_up(
        &server,
        &id,
        json!({"message": "six", "attachments": vec![one.clone(); 6]}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
    let five = follow_up(
        &server,
        &id,
        json!({"message": "five", "attachments": vec![one.clone(); 5]}),
    );
    five.assert_status(201);
    let big = STANDARD.encode(vec![7u8; 256 * 1024 + 1]);
    follow_up(
        &server,
        &id,
        json!({"message": "big", "attachments": [{"name": "b", "contentType": "image/png", "data": big}]}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
    let max = STANDARD.encode(vec![7u8; 256 * 1024]);
    let at_max = json!({"name": "b", "contentType": "image/png", "data": max});
    follow_up(
        &server,
        &id,
        json!({"message": "max", "attachments": [at_max.clone()]}),
    )
    .assert_status(201);
    follow_up(
        &server,
        &id,
        json!({"message": "total", "attachments": [at_max.clone(), at_max, one.clone()]}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
    for bad in ["not base64!", "aGVsbG8", "aGVsbG8=\n"] {
        follow_up(
            &server,
            &id,
            json!({"message": "bad", "attachments": [{"name": "c", "contentType": "text/plain", "data": bad}]}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    }
    follow_up(
        &server,
        &id,
        json!({"message": "type", "attachments": [{"name": "c", "contentType": "plain", "data": small}]}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
    follow_up(
        &server,
        &id,
        json!({"message": "fields", "attachments": [{"name": "c", "contentType": "text/plain", "data": small, "x": 1}]}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
}

#[test]
fn a_thread_holds_at_most_200_messages() {
    let server = TestServer::start();
    let operator = server.operator_key();
    let id = inquiry(&server);
    for n in 1..200 {
        let posted = follow_up(&server, &id, json!({"message": format!("message {n}")}));
        posted.assert_status(201);
    }
    assert_eq!(
        thread(&server, &id)["messages"].as_array().unwrap().len(),
        200
    );
    follow_up(&server, &id, json!({"message": "one too many"})).assert_error(409, "THREAD_FULL");
    server
        .send_auth(
            "POST",
            &format!("/api/operator/inquiries/{id}/reply"),
            &operator,
            &json!({"message": "team too"}),
        )
        .assert_error(409, "THREAD_FULL");
}

#[test]
fn a_rail_token_is_shown_once_stored_hashed_and_scoped_to_its_root() {
    let server = TestServer::start();
    let operator = server.operator_key();
    let root = inquiry(&server);
    let other = inquiry(&server);
    let created = server.send_auth(
        "POST",
        "/api/rails",
        &operator,
        &json!({"rootInquiryId": root}),
    );
    created.assert_status(201);
    let body = created.json();
    let token = body["consentToken"].as_str().unwrap().to_owned();
    assert!(token.starts_with("rail_"));
    assert_eq!(body["rail"]["rootInquiryId"], root);
    assert!(body["rail"]["id"].is_string());
    assert!(body["rail"]["permits"].is_array());
    assert!(
        body.get("provenance").is_none(),
        "operator answers are private"
    );
    server
        .send_auth("POST", "/api/rails", &operator, &json!({}))
        .assert_error(400, "INVALID_ARGUMENT");

    // Stored hashed: the token never reaches the database file.
    let conn = rusqlite::Connection::open(server.data.join("bourse.db")).unwrap();
    let (stored_root, hash): (String, String) = conn
        .query_row(
            "SELECT root_inquiry_id, consent_token_hash FROM rails",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(stored_root, root);
    assert_ne!(hash, token);
    assert_eq!(hash, bourse::service::hash_secret(&token));

    // The token posts into its root's thread, even once closed; nowhere else.
    server.send_auth(
        "PATCH",
        &format!("/api/operator/inquiries/{root}"),
        &operator,
        &json!({"status": "closed"}),
    );
    let relayed = server.send_auth(
        "POST",
        &format!("/api/inquiries/{root}/messages"),
        &token,
        &json!({"message": "relayed", "authorName": "relay"}),
    );
    relayed.assert_status(201);
    assert_eq!(relayed.json()["railId"], body["rail"]["id"]);
    assert_eq!(relayed.json()["message"]["from"], "inquirer");
    server
        .send_auth(
            "POST",
            &format!("/api/inquiries/{other}/messages"),
            &token,
            &json!({"message": "elsewhere"}),
        )
        .assert_error(403, "RAIL_SCOPE");
    server
        .send_auth(
            "POST",
            &format!("/api/inquiries/{root}/messages"),
            "rail_forged",
            &json!({"message": "forged"}),
        )
        .assert_error(401, "UNAUTHENTICATED");
    // It is no operator key.
    server
        .get_auth("/api/operator/inquiries", &token)
        .assert_error(401, "UNAUTHENTICATED");
}

#[test]
fn a_service_request_gets_an_inquiry_id_with_a_thread() {
    let server = TestServer::start();
    let created = server.post(
        "/api/services/request",
        &json!({"what": "Scrape and clean 10k product pages.", "title": "Scraping job",
                "budget": {"amountCents": 50_000, "currency": "EUR"}, "deadline": "2027-01-31",
                "contact": {"name": "Bo", "email": "bo@example.com"}}),
    );
    created.assert_status(201);
    let body = created.json();
    let id = body["id"].as_str().unwrap();
    assert_eq!(body["category"], "service");
    assert_eq!(body["serviceRequest"]["budget"]["amountCents"], 50_000);
    let shown = thread(&server, id);
    assert_eq!(shown["subject"], "Scraping job");
    assert_eq!(shown["serviceRequest"]["deadline"], "2027-01-31");
    assert_eq!(
        shown["messages"][0]["body"],
        "Scrape and clean 10k product pages."
    );
    follow_up(&server, id, json!({"message": "Any update?"})).assert_status(201);
    for bad in [
        json!({}),
        json!({"what": "x", "deadline": "soon"}),
        json!({"what": "x", "budget": {"amountCents": 0}}),
        json!({"what": "x", "budget": 100}),
        json!({"what": "x", "contact": {"email": "nope"}}),
        json!({"what": "x", "price": 1}),
    ] {
        server
            .post("/api/services/request", &bad)
            .assert_error(400, "INVALID_ARGUMENT");
    }
}

#[test]
fn inquiry_creation_is_rate_limited_per_ip() {
    let server = TestServer::start();
    for _ in 0..20 {
        inquiry(&server);
    }
    let refused = server.post("/api/inquiries", &json!({"subject": "s", "message": "m"}));
    refused.assert_error(429, "RATE_LIMITED");
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    server
        .post("/api/services/request", &json!({"what": "x"}))
        .assert_error(429, "RATE_LIMITED");
    server.clock.advance(jiff::SignedDuration::from_hours(1));
    inquiry(&server);
}

#[test]
fn mcp_inquiries_have_threads_too() {
    let server = TestServer::start();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "contact_marketplace", "arguments": {"subject": "Via MCP", "message": "Hi."}}});
    let response = server.request(
        "POST",
        "/api/mcp",
        &[
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        Some(body.to_string().as_bytes()),
    );
    response.assert_status(200);
    let result = &response.json()["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let value: Value = result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| serde_json::from_str(text).unwrap());
    let id = value["id"].as_str().unwrap();
    let shown = thread(&server, id);
    assert_eq!(shown["subject"], "Via MCP");
    assert_eq!(shown["messages"][0]["body"], "Hi.");
}
