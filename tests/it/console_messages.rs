//! The console's messages section: delivery outcomes and dead letters, never a body, and the
//! replay of a dead letter through its form.

use serde_json::json;

use crate::messages::{Receiver, send, wait_status, with_callback};
use crate::support::TestServer;
use crate::support::console::Console;

#[test]
fn the_console_shows_dead_letters_without_bodies_and_replays_them() {
    let server = TestServer::start();
    let gone = Receiver::start(&[410]);
    let a = server.party("console-sender");
    let c = with_callback(&server, "console-receiver", &gone.url);
    send(&server, &a, &c.handle, "gone", "a private body");
    gone.wait_for(1);
    let dead = wait_status(&server, &c, "dead", 1);
    let id = dead[0]["id"].as_str().unwrap();

    let console = Console::sign_in(&server, &server.operator_key());
    let page = console.get(&server, "/console/messages?status=dead");
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(!text.contains("a private body"), "never a body: {text}");
    assert!(text.contains("1 dead letters"), "{text}");
    let replay = format!("/console/messages/callbacks/{id}/replay");
    assert!(text.contains(&replay), "{text}");
    assert_eq!(
        console.get(&server, "/console/messages?status=lost").status,
        400
    );

    let healthy = Receiver::start(&[]);
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            &c.key,
            &json!({"callbackUrl": healthy.url}),
        )
        .assert_status(200);
    assert_eq!(console.post_raw(&server, &replay, &[]).status, 403);
    let done = console.post(&server, &replay, &[]);
    assert_eq!(
        done.header("location"),
        Some("/console/messages?done=replayed"),
        "{}",
        done.text()
    );
    healthy.wait_for(1);
    wait_status(&server, &c, "delivered", 1);
    let again = console.post(&server, &replay, &[]);
    assert_eq!(again.status, 409, "no longer dead: {}", again.text());
}

#[test]
fn the_console_answers_an_inquiry_as_the_team_and_changes_its_status() {
    let server = TestServer::start();
    let created = server
        .post(
            "/api/inquiries",
            &json!({"subject": "Console question", "message": "Can I list satellite data?"}),
        )
        .expect(201);
    let id = created["id"].as_str().unwrap().to_owned();
    let console = Console::sign_in(&server, &server.operator_key());
    let list = console.get(&server, "/console/inquiries").text();
    assert!(list.contains(&format!("/console/inquiries/{id}")), "{list}");
    let page = console
        .get(&server, &format!("/console/inquiries/{id}"))
        .text();
    assert!(page.contains("Can I list satellite data?"), "{page}");

    let reply = format!("/console/inquiries/{id}/reply");
    assert_eq!(
        console
            .post_raw(&server, &reply, &[("message", "x")])
            .status,
        403
    );
    assert_eq!(
        console.post(&server, &reply, &[("message", " ")]).status,
        400
    );
    let done = console.post(
        &server,
        &reply,
        &[("message", "Yes, under the geo vertical.")],
    );
    assert_eq!(
        done.header("location").unwrap(),
        format!("/console/inquiries/{id}?done=replied"),
        "{}",
        done.text()
    );
    let status = format!("/console/inquiries/{id}/status");
    assert_eq!(
        console.post(&server, &status, &[("status", "lost")]).status,
        400
    );
    let done = console.post(&server, &status, &[("status", "resolved")]);
    assert_eq!(done.status, 303, "{}", done.text());
    let thread = server.get(&format!("/api/inquiries/{id}/thread")).ok();
    assert_eq!(thread["status"], "resolved", "{thread}");
    let messages = thread["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["body"] == "Yes, under the geo vertical." && m["from"] == "team"),
        "{thread}"
    );
}

#[test]
fn the_console_approves_a_relay_rail_whose_token_is_shown_once_and_posts_into_that_thread_only() {
    let server = TestServer::start();
    let opened = |subject: &str| {
        server
            .post(
                "/api/inquiries",
                &json!({"subject": subject, "message": "Please relay this for us."}),
            )
            .expect(201)["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (id, other) = (opened("Relay root"), opened("Another thread"));
    let console = Console::sign_in(&server, &server.operator_key());
    let path = format!("/console/inquiries/{id}/rails");
    let page = console
        .get(&server, &format!("/console/inquiries/{id}"))
        .text();
    assert!(page.contains(&format!("action=\"{path}\"")), "{page}");
    assert_eq!(console.post_raw(&server, &path, &[]).status, 403);
    let missing = "/console/inquiries/00000000-0000-4000-8000-000000000000/rails";
    assert_eq!(console.post(&server, missing, &[]).status, 404);

    let done = console.post(&server, &path, &[]);
    assert_eq!(done.status, 200, "{}", done.text());
    assert_eq!(done.header("cache-control"), Some("no-store"));
    let text = done.text();
    let start = text.find("id=\"consent-token\">").unwrap() + "id=\"consent-token\">".len();
    let token = &text[start..start + text[start..].find('<').unwrap()];
    assert!(token.starts_with("rail_"), "{text}");
    // Shown once: the thread's page does not carry it again.
    let again = console
        .get(&server, &format!("/console/inquiries/{id}"))
        .text();
    assert!(!again.contains(token), "{again}");

    // The token posts into its root thread, closed or not, and nowhere else.
    let status = format!("/console/inquiries/{id}/status");
    assert_eq!(
        console
            .post(&server, &status, &[("status", "closed")])
            .status,
        303
    );
    server
        .send_auth(
            "POST",
            &format!("/api/inquiries/{id}/messages"),
            token,
            &json!({"message": "Relayed follow-up."}),
        )
        .assert_status(201);
    server
        .send_auth(
            "POST",
            &format!("/api/inquiries/{other}/messages"),
            token,
            &json!({"message": "Not here."}),
        )
        .assert_status(403);
}

#[test]
fn the_sandbox_page_feeds_what_agents_do_and_counts_messages_without_bodies() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Feed Seller", b"rows");
    let buyer = server.party("Feed Buyer");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Feed tidal dataset", 1_500),
        json!({}),
    );
    server.buy(&buyer, &listing).ok();
    send(
        &server,
        &buyer,
        &seller.handle,
        "hello",
        "a private feed body",
    );

    let console = Console::sign_in(&server, &server.operator_key());
    let page = console.get(&server, "/console/sandbox");
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(!text.contains("<script"), "no script: {text}");
    assert!(!text.contains("http-equiv"), "no automatic reload: {text}");
    assert!(
        text.contains("id=\"refresh\" href=\"/console/sandbox#activity\""),
        "{text}"
    );
    let feed = &text[text.find("id=\"feed\"").unwrap()..];
    for what in ["listing created", "purchase opened"] {
        assert!(feed.contains(what), "{what}: {feed}");
    }
    assert!(feed.contains("Feed tidal dataset"), "{feed}");
    // The reference samples the instance seeds itself are not something an agent did.
    assert!(!feed.contains("Reference sample"), "{feed}");
    assert!(feed.contains(&buyer.handle), "{feed}");
    assert!(
        text.contains("1 messages accepted in the last hour"),
        "{text}"
    );
    assert!(
        !text.contains("a private feed body"),
        "never a body: {text}"
    );
}

#[test]
fn an_agents_console_page_shows_its_messages_in_the_rate_limit_window() {
    let server = TestServer::start();
    let a = server.party("limited-sender");
    let b = server.party("limited-receiver");
    send(&server, &a, &b.handle, "one", "first private body");
    send(&server, &a, &b.handle, "two", "second private body");
    let console = Console::sign_in(&server, &server.operator_key());
    let page = console
        .get(&server, &format!("/console/agents/{}", a.handle))
        .text();
    assert!(
        page.contains("New messages: 2 of 30 in the last minute"),
        "{page}"
    );
    assert!(!page.contains("private body"), "{page}");
    let other = console
        .get(&server, &format!("/console/agents/{}", b.handle))
        .text();
    assert!(other.contains("New messages: 0 of 30"), "{other}");
}
