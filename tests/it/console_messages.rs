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
