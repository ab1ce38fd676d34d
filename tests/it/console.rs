//! The operator console: signing in with the operator key, the session cookie and its expiry,
//! the anti-forgery token on every form, the limit on failed sign-ins, the guarded headers of
//! every page, and the overview's figures.

use jiff::SignedDuration;

use crate::support::console::{Console, cookie_value, set_cookies, sign_in_form, try_sign_in};
use crate::support::{Resp, TestServer};

/// The headers every console answer carries.
#[track_caller]
fn assert_guarded(response: &Resp) {
    let csp = response
        .header("content-security-policy")
        .unwrap_or_default();
    for part in [
        "default-src 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "style-src 'sha256-",
    ] {
        assert!(csp.contains(part), "CSP {csp:?} lacks {part}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("script-src"),
        "{csp}"
    );
    assert_eq!(response.header("x-frame-options"), Some("DENY"));
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(response.header("referrer-policy"), Some("no-referrer"));
}

#[test]
fn signing_in_sets_a_strict_http_only_session_cookie_and_never_echoes_the_key() {
    let server = TestServer::start();
    let key = server.operator_key();
    // Every console page sends a browser without a session to sign in.
    let anonymous = server.request_unredirected("GET", "/console", &[], None);
    assert_eq!(anonymous.status, 303);
    assert_eq!(
        anonymous.header("location"),
        Some("/console/sign-in?expired=1")
    );
    assert_guarded(&anonymous);

    let page = server.get("/console/sign-in");
    assert_guarded(&page);
    let text = page.text();
    assert!(text.contains("type=\"password\" name=\"key\""), "{text}");
    assert!(!text.contains("<script"), "{text}");
    let form_cookie = set_cookies(&page)
        .into_iter()
        .find(|c| c.starts_with("bourse_console_sign_in="))
        .unwrap()
        .to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(form_cookie.contains(flag), "{form_cookie}");
    }

    let answer = try_sign_in(&server, &key);
    assert_eq!(answer.status, 303, "{}", answer.text());
    assert_eq!(answer.header("location"), Some("/console"));
    assert_guarded(&answer);
    let session = set_cookies(&answer)
        .into_iter()
        .find(|c| c.starts_with("bourse_console="))
        .unwrap()
        .to_owned();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(session.contains(flag), "{session}");
    }
    assert!(!session.contains("Secure"), "plain http: {session}");
    assert!(!session.contains(&key), "the cookie is not the key");
    // The sign-in form's own token is spent.
    assert_eq!(
        cookie_value(&answer, "bourse_console_sign_in").as_deref(),
        Some("")
    );

    let console = Console::sign_in(&server, &key);
    let overview = console.get(&server, "/console");
    assert_eq!(overview.status, 200);
    assert_guarded(&overview);
    let text = overview.text();
    assert!(!text.contains(&key), "the key is never shown");
    assert!(text.contains("action=\"/console/sign-out\""), "{text}");

    // A wrong key: 401, the field empty, the key typed not shown back.
    let wrong = try_sign_in(&server, "not-the-operator-key-1234");
    assert_eq!(wrong.status, 401);
    assert_guarded(&wrong);
    assert!(!wrong.text().contains("not-the-operator-key-1234"));
    assert!(cookie_value(&wrong, "bourse_console").is_none());
}

#[test]
fn the_session_cookie_is_secure_under_an_https_public_url() {
    let server = TestServer::start_with(|config| {
        config.public_url = Some("https://market.example".into());
    });
    let answer = try_sign_in(&server, &server.operator_key());
    assert_eq!(answer.status, 303, "{}", answer.text());
    let session = set_cookies(&answer)
        .into_iter()
        .find(|c| c.starts_with("bourse_console="))
        .unwrap()
        .to_owned();
    assert!(session.contains("; Secure"), "{session}");
}

#[test]
fn a_form_without_its_token_or_with_another_sessions_is_403_and_changes_nothing() {
    let server = TestServer::start();
    let key = server.operator_key();
    let mine = Console::sign_in(&server, &key);
    let theirs = Console::sign_in(&server, &key);
    assert_ne!(mine.csrf, theirs.csrf);

    let bare = mine.post_raw(&server, "/console/sign-out", &[]);
    assert_eq!(bare.status, 403, "{}", bare.text());
    assert_guarded(&bare);
    let foreign = mine.post_raw(&server, "/console/sign-out", &[("csrf", &theirs.csrf)]);
    assert_eq!(foreign.status, 403, "{}", foreign.text());
    // Neither signed anyone out.
    assert_eq!(mine.get(&server, "/console").status, 200);
    assert_eq!(theirs.get(&server, "/console").status, 200);

    // The sign-in form without its own token signs nobody in.
    let (token, _) = sign_in_form(&server);
    let unbound = server.post_form("/console/sign-in", &[], &[("csrf", &token), ("key", &key)]);
    assert_eq!(unbound.status, 403, "{}", unbound.text());
    assert!(cookie_value(&unbound, "bourse_console").is_none());

    // Signing out with the token ends that session alone.
    let out = mine.post(&server, "/console/sign-out", &[]);
    assert_eq!(out.status, 303, "{}", out.text());
    assert_eq!(
        out.header("location"),
        Some("/console/sign-in?signed_out=1")
    );
    assert_eq!(cookie_value(&out, "bourse_console").as_deref(), Some(""));
    let after = mine.get(&server, "/console");
    assert_eq!(after.status, 303);
    assert_eq!(after.header("location"), Some("/console/sign-in?expired=1"));
    // A form of an ended session changes nothing either: it is sent to sign in.
    assert_eq!(mine.post(&server, "/console/sign-out", &[]).status, 303);
    assert_eq!(theirs.get(&server, "/console").status, 200);
}

#[test]
fn failed_sign_ins_are_limited_per_client_with_retry_after() {
    let server = TestServer::start();
    let key = server.operator_key();
    for _ in 0..5 {
        assert_eq!(try_sign_in(&server, "wrong-key-wrong-key").status, 401);
    }
    // Over the limit even the right key is refused, so guessing gains nothing.
    for attempt in ["wrong-key-wrong-key", key.as_str()] {
        let limited = try_sign_in(&server, attempt);
        assert_eq!(limited.status, 429, "{}", limited.text());
        assert_guarded(&limited);
        let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=900).contains(&retry), "{retry}");
        assert!(cookie_value(&limited, "bourse_console").is_none());
    }
    server.clock.advance(SignedDuration::from_mins(15));
    Console::sign_in(&server, &key);
}

#[test]
fn a_stale_session_is_sent_to_sign_in_idle_or_absolute() {
    let server = TestServer::start();
    let key = server.operator_key();
    let idle = Console::sign_in(&server, &key);
    server.clock.advance(SignedDuration::from_mins(29));
    assert_eq!(idle.get(&server, "/console").status, 200, "still fresh");
    server.clock.advance(SignedDuration::from_mins(30));
    let stale = idle.get(&server, "/console");
    assert_eq!(stale.status, 303);
    assert_eq!(stale.header("location"), Some("/console/sign-in?expired=1"));
    let form = idle.post(&server, "/console/sign-out", &[]);
    assert_eq!(form.header("location"), Some("/console/sign-in?expired=1"));

    // Busy all along, a session still ends 12 hours after signing in.
    let busy = Console::sign_in(&server, &key);
    for _ in 0..(12 * 3 - 1) {
        server.clock.advance(SignedDuration::from_mins(20));
        assert_eq!(busy.get(&server, "/console").status, 200);
    }
    server.clock.advance(SignedDuration::from_mins(20));
    assert_eq!(busy.get(&server, "/console").status, 303);
}

#[test]
fn the_overview_shows_the_counts_of_api_stats_and_its_charts() {
    let server = TestServer::start();
    server.register("console-overview-agent");
    let stats = server.get("/api/stats").ok();
    let console = Console::sign_in(&server, &server.operator_key());
    let page = console.get(&server, "/console");
    let text = page.text();
    for (id, member) in [
        ("count-agents", "totalAgents"),
        ("count-listings", "totalListings"),
        ("count-sales", "totalSales"),
    ] {
        let shown = format!("id=\"{id}\">{}</dd>", stats[member]);
        assert!(text.contains(&shown), "{shown} in {text}");
    }
    for chart in ["chart-sales", "chart-messages", "chart-escrow"] {
        assert!(
            text.contains(&format!("<figure id=\"{chart}\">")),
            "{chart}"
        );
    }
    assert_eq!(text.matches("<svg").count(), 3);
    assert!(text.contains("id=\"version\">"), "{text}");
    assert!(text.contains("id=\"role\">single</td>"), "{text}");
    assert!(
        text.contains("sandbox rail"),
        "the sandbox is a warning: {text}"
    );
}

#[test]
fn agents_are_found_by_handle_name_or_display_name_and_a_forced_rotation_ends_the_old_key() {
    let server = TestServer::start();
    let agent = server.party("Console Findable");
    let other = server.party("Someone Else");
    let console = Console::sign_in(&server, &server.operator_key());

    let found = console.get(&server, "/console/agents?q=findable").text();
    assert!(found.contains(&format!(">{}</a>", agent.handle)), "{found}");
    assert!(!found.contains(&other.handle), "{found}");
    let by_handle = console
        .get(
            &server,
            &format!("/console/agents?q={}", agent.handle.to_lowercase()),
        )
        .text();
    assert!(by_handle.contains(&agent.handle), "{by_handle}");

    let page = console.get(&server, &format!("/console/agents/{}", agent.handle));
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(
        page.text().contains("id=\"created\">2026-11-21T04:00:00"),
        "{}",
        page.text()
    );
    assert_eq!(
        console.get(&server, "/console/agents/no-such-agent").status,
        404
    );

    // Without the token nothing happens; with it the old key stops at once.
    let path = format!("/console/agents/{}/rotate-key", agent.handle);
    assert_eq!(console.post_raw(&server, &path, &[]).status, 403);
    server.get_auth("/api/agents/me", &agent.key).ok();
    let rotated = console.post(&server, &path, &[]);
    assert_eq!(rotated.status, 200, "{}", rotated.text());
    let text = rotated.text();
    let at = text.find("id=\"new-key\">").unwrap() + "id=\"new-key\">".len();
    let new_key = text[at..].split('<').next().unwrap().to_owned();
    assert!(new_key.starts_with("svc_live_"), "{new_key}");
    server
        .get_auth("/api/agents/me", &agent.key)
        .assert_error(401, "UNAUTHENTICATED");
    let me = server.get_auth("/api/agents/me", &new_key).ok();
    assert_eq!(me["handle"], agent.handle.as_str());
}

#[test]
fn a_listing_shows_its_signed_history_and_the_operator_deactivates_it_with_a_reason() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Console Seller", b"rows");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Console moderated dataset", 0),
        serde_json::json!({}),
    );
    let console = Console::sign_in(&server, &server.operator_key());

    let found = console
        .get(&server, "/console/listings?q=moderated&vertical=&sort=")
        .text();
    assert!(
        found.contains(&format!("/console/listings/{listing}")),
        "{found}"
    );
    let refused = console.get(&server, "/console/listings?sort=sideways");
    assert_eq!(refused.status, 400, "{}", refused.text());

    let page = console
        .get(&server, &format!("/console/listings/{listing}"))
        .text();
    assert!(page.contains("<li id=\"version-1\">"), "{page}");
    assert!(page.contains("Signature digest <code>sha256:"), "{page}");

    let path = format!("/console/listings/{listing}/deactivate");
    let forged = console.post_raw(&server, &path, &[("reason", "spam")]);
    assert_eq!(forged.status, 403);
    let no_reason = console.post(&server, &path, &[("reason", "  ")]);
    assert_eq!(no_reason.status, 400, "{}", no_reason.text());
    let detail = server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .ok();
    assert_eq!(detail["listing"]["active"], true, "nothing changed yet");

    let done = console.post(&server, &path, &[("reason", "Misleading title")]);
    assert_eq!(done.status, 303, "{}", done.text());
    assert_eq!(
        done.header("location").unwrap(),
        format!("/console/listings/{listing}?done=deactivated")
    );
    let history = server
        .get(&format!("/api/marketplace/listings/{listing}/history"))
        .ok();
    let last = history["entries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["reason"], "Misleading title");
    assert_eq!(last["by"], "operator");
    assert_eq!(last["changes"]["active"]["to"], false);
    // The entry verifies like any other.
    let verified = server
        .post(
            "/api/verify-receipt",
            &serde_json::json!({ "signed": last }),
        )
        .ok();
    assert_eq!(verified["valid"], true, "{verified}");
    let page = console
        .get(
            &server,
            &format!("/console/listings/{listing}?done=deactivated"),
        )
        .text();
    assert!(page.contains("by the operator"), "{page}");
    assert!(page.contains("Misleading title"), "{page}");
    assert!(page.contains("id=\"inactive\""), "{page}");
}

#[test]
fn purchases_are_listed_by_state_and_rail_with_the_escrow_queue() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Console Paid Seller", b"rows");
    let buyer = server.party("Console Buyer");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Console paid dataset", 2_500),
        serde_json::json!({}),
    );
    let delivered = server.buy_and_receive(&buyer, &listing);
    let console = Console::sign_in(&server, &server.operator_key());
    let page = console.get(&server, "/console/purchases");
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    let id = delivered["id"].as_str().unwrap();
    let escrow = &text[text.find("id=\"escrow\"").unwrap()..text.find("Every purchase").unwrap()];
    assert!(escrow.contains(id), "the held sale is queued: {escrow}");
    // No rail gives the operator a refund or shipment (the REST operator API has none): the
    // page says who acts on each rail, lists refunds owed, and offers no such form.
    for rail in ["free", "checkout", "card", "x402_usdc_base"] {
        assert!(
            text.contains(&format!("<th scope=\"row\">{rail}</th>")),
            "{text}"
        );
    }
    assert!(text.contains("id=\"no-operator-actions\""), "{text}");
    assert!(text.contains("0 refunds made; 0 owed."), "{text}");
    assert!(
        !text.contains("method=\"post\" action=\"/console/purchases"),
        "{text}"
    );
    let by_state = console
        .get(&server, "/console/purchases?status=delivered&rail=checkout")
        .text();
    assert!(by_state.contains(id), "{by_state}");
    let other = console
        .get(&server, "/console/purchases?status=expired")
        .text();
    let listed = &other[other.find("Every purchase").unwrap()..];
    assert!(!listed.contains(id), "{listed}");
    assert_eq!(
        console.get(&server, "/console/purchases?rail=cash").status,
        400
    );
}

#[test]
fn the_catalogue_for_people_searches_with_a_get_form_and_shows_a_listing_with_its_history() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Market Seller", b"rows");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Market tidal gauges", 0),
        serde_json::json!({}),
    );
    let page = server.get("/market?q=tidal&vertical=&sort=");
    assert_eq!(page.status, 200, "{}", page.text());
    assert_guarded(&page);
    let text = page.text();
    assert!(!text.contains("<script"), "{text}");
    assert!(text.contains("method=\"get\" action=\"/market\""), "{text}");
    assert!(
        text.contains(&format!("href=\"/market/listings/{listing}\"")),
        "{text}"
    );
    assert!(
        text.contains("id=\"json-twin\" href=\"/api/marketplace/listings?q=tidal\""),
        "{text}"
    );
    let vertical = server.get("/market?vertical=research-data").text();
    assert!(
        vertical.contains(&format!("/market/listings/{listing}")),
        "{vertical}"
    );
    assert_eq!(server.get("/market?sort=sideways").status, 400);

    let page = server.get(&format!("/market/listings/{listing}"));
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    for part in [
        "<h1>Market tidal gauges</h1>",
        "id=\"preview\"",
        "<h2>License:",
        "<li id=\"version-1\">",
        &format!("href=\"/api/marketplace/listings/{listing}\""),
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let unknown = server.get("/market/listings/00000000-0000-4000-8000-000000000000");
    assert_eq!(unknown.status, 404);
    assert!(unknown.text().contains("role=\"alert\""));
}

#[test]
fn the_overview_counts_todays_held_sale_in_the_escrow_chart() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Escrow Chart Seller", b"rows");
    let buyer = server.party("Escrow Chart Buyer");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Escrow chart dataset", 2_000),
        serde_json::json!({}),
    );
    server.buy_and_receive(&buyer, &listing);
    let console = Console::sign_in(&server, &server.operator_key());
    let text = console.get(&server, "/console").text();
    let escrow = &text[text.find("<figure id=\"chart-escrow\">").unwrap()..];
    assert!(!escrow.contains("all zero"), "{escrow}");
    assert!(
        escrow.contains("<th scope=\"row\">2026-11-21</th><td>$"),
        "{escrow}"
    );
}

#[test]
fn the_operator_revokes_oauth_grants_and_clients_from_the_console() {
    use crate::support::oauth::{tokens, whoami};
    let server = TestServer::start();
    let (issued, client_id, _) = tokens(&server, &["read"]);
    let access = issued["access_token"].as_str().unwrap();
    assert_eq!(whoami(&server, access).status, 200);
    let console = Console::sign_in(&server, &server.operator_key());
    let page = console.get(&server, "/console/oauth").text();
    assert!(page.contains(&client_id), "{page}");
    let at = page.find("action=\"/console/oauth/grants/").unwrap() + "action=\"".len();
    let revoke = page[at..].split('"').next().unwrap().to_owned();
    assert_eq!(console.post_raw(&server, &revoke, &[]).status, 403);
    assert_eq!(whoami(&server, access).status, 200, "nothing changed");
    let done = console.post(&server, &revoke, &[]);
    assert_eq!(done.header("location"), Some("/console/oauth?done=grant"));
    assert_eq!(whoami(&server, access).status, 401);
    let done = console.post(
        &server,
        "/console/oauth/clients/revoke",
        &[("client_id", &client_id)],
    );
    assert_eq!(
        done.header("location"),
        Some("/console/oauth?done=client"),
        "{}",
        done.text()
    );
    let page = console.get(&server, "/console/oauth").text();
    assert!(
        !page.contains(&format!("id=\"revoke-client-{client_id}\"")),
        "{page}"
    );
}

#[test]
fn the_sandbox_page_moves_the_clock_and_pays_or_cancels_open_checkouts() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Sandbox Page Seller", b"rows");
    let buyer = server.party("Sandbox Page Buyer");
    let listing = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Sandbox page dataset", 1_500),
        serde_json::json!({"listingType": "limited", "maxCopies": 5}),
    );
    let first = server.buy(&buyer, &listing).ok();
    let second = server.buy(&buyer, &listing).ok();
    let console = Console::sign_in(&server, &server.operator_key());
    let before = server.get("/api/sandbox/clock").ok();
    assert!(before["provenance"].is_object(), "{before}");

    let page = console.get(&server, "/console/sandbox").text();
    for pending in [&first, &second] {
        let session = crate::support::checkout_session(pending);
        assert!(
            page.contains(&format!("/console/sandbox/checkouts/{session}/pay")),
            "{page}"
        );
    }
    let pay = format!(
        "/console/sandbox/checkouts/{}/pay",
        crate::support::checkout_session(&first)
    );
    assert_eq!(console.post_raw(&server, &pay, &[]).status, 403);
    let done = console.post(&server, &pay, &[]);
    assert_eq!(
        done.header("location"),
        Some("/console/sandbox?done=paid"),
        "{}",
        done.text()
    );
    let cancel = format!(
        "/console/sandbox/checkouts/{}/cancel",
        crate::support::checkout_session(&second)
    );
    let done = console.post(&server, &cancel, &[]);
    assert_eq!(
        done.header("location"),
        Some("/console/sandbox?done=cancelled")
    );
    let paid = server.purchase(&buyer, first["id"].as_str().unwrap());
    assert_eq!(paid["status"], "delivered", "{paid}");
    let cancelled_pay = cancel.replace("/cancel", "/pay");
    let again = console.post(&server, &cancelled_pay, &[]);
    assert_eq!(again.status, 409, "a cancelled checkout: {}", again.text());

    let moved = console.post(&server, "/console/sandbox/clock", &[("advance", "86400")]);
    assert_eq!(
        moved.header("location"),
        Some("/console/sandbox?done=clock"),
        "{}",
        moved.text()
    );
    let after = server.get("/api/sandbox/clock").ok();
    assert!(
        after["now"].as_str() > before["now"].as_str(),
        "{before} → {after}"
    );
    // The test server's one manual clock is also its wall clock: a day later, sign in again.
    let console = Console::sign_in(&server, &server.operator_key());
    assert_eq!(
        console
            .post(&server, "/console/sandbox/clock", &[("advance", "0")])
            .status,
        400
    );
    // The test server's manual clock cannot go back to real time: CLOCK_FIXED, as on the API.
    let reset = console.post(&server, "/console/sandbox/clock", &[("reset", "true")]);
    assert_eq!(reset.status, 409, "{}", reset.text());
}

#[test]
fn fees_are_announced_from_the_console_under_the_notice_rule() {
    let server = TestServer::start();
    // Past the rate lock, as the API's own test does.
    server.clock.advance(SignedDuration::from_hours(24 * 240)); // 2027-07-19
    let console = Console::sign_in(&server, &server.operator_key());
    let page = console.get(&server, "/console/fees").text();
    assert!(page.contains("<h2>In force: version 1</h2>"), "{page}");
    let announce = |effective: &str| {
        console.post(
            &server,
            "/console/fees",
            &[
                ("effective_from", effective),
                ("schedule", r#"{"standardBps": 450}"#),
                ("note", "lower standard rate"),
            ],
        )
    };
    let early = announce("2027-08-01");
    assert_eq!(early.status, 422, "{}", early.text());
    assert!(early.text().contains("role=\"alert\""));
    assert!(
        server.get("/api/fees").json()["announced"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let bad = console.post(
        &server,
        "/console/fees",
        &[("effective_from", "2027-10-01"), ("schedule", "[1]")],
    );
    assert_eq!(bad.status, 400, "{}", bad.text());
    let done = announce("2027-10-01");
    assert_eq!(
        done.header("location"),
        Some("/console/fees?done=announced"),
        "{}",
        done.text()
    );
    let fees = server.get("/api/fees").json();
    assert_eq!(fees["announced"][0]["effectiveFrom"], "2027-10-01");
    assert_eq!(fees["announced"][0]["note"], "lower standard rate");
}

#[test]
fn the_sandbox_section_is_linked_only_when_the_payment_mode_is_sandbox() {
    let sandbox = TestServer::start();
    let console = Console::sign_in(&sandbox, &sandbox.operator_key());
    let page = console.get(&sandbox, "/console").text();
    assert!(page.contains("<a href=\"/console/sandbox\""), "{page}");

    let fake = crate::support::stripe::FakeStripe::start();
    let stripe = crate::support::stripe::stripe_server(&fake);
    let console = Console::sign_in(&stripe, &stripe.operator_key());
    for path in ["/console", "/console/purchases", "/console/inquiries"] {
        let page = console.get(&stripe, path);
        assert_eq!(page.status, 200, "{path}: {}", page.text());
        let text = page.text();
        assert!(text.contains("<a href=\"/console/fees\""), "{text}");
        assert!(!text.contains("/console/sandbox"), "{path}: {text}");
    }
    assert_eq!(console.get(&stripe, "/console/sandbox").status, 404);
}
