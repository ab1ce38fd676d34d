//! The console and the catalogue in headless Chromium, driven over the DevTools protocol
//! (`tests/browser/cdp.py`, standard-library Python): every page signed in, at desktop and
//! phone widths, with no horizontal scrolling at phone width; axe-core run inside each page
//! with no serious or critical violation; actions performed through their forms as a person
//! would, and forms sent the wrong way (without their anti-forgery token, or after the session
//! was signed out in another tab) refused with nothing changed; screenshots under `<target>/page-screens/console/`, or, with
//! `BOURSE_UPDATE_SCREENSHOTS=1`, the README's under `docs/screenshots/`.
//!
//! Needs Chromium (as `pages_browser`), `python3` and axe-core (`BOURSE_AXE`, installed by
//! `.ci/test-tools` into `target/axe`); without them it skips, or fails where tools are required.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::pages_browser::Browser;
use crate::support::console::Console;
use crate::support::{TestServer, exit_within, skip_or_fail};

const TEST: &str =
    "console_browser::every_console_and_catalogue_page_renders_is_accessible_and_its_forms_work";

fn axe() -> Option<PathBuf> {
    let path = std::env::var_os("BOURSE_AXE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/axe/node_modules/axe-core/axe.min.js")
        });
    path.is_file().then_some(path)
}

/// Runs the driver with `plan`; returns its report.
fn drive(plan: &Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/browser/cdp.py");
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new("python3")
        .arg(&script)
        // Chromium's own singleton directory (and the driver's temporary files) go where the
        // test removes them, not into /tmp for good.
        .env("TMPDIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(plan.to_string().as_bytes())
        .unwrap();
    let status = exit_within(&mut child, Duration::from_secs(300)).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("the browser driver outlasted 300 s")
    });
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "driver: {status}\n{stderr}");
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

#[test]
fn every_console_and_catalogue_page_renders_is_accessible_and_its_forms_work() {
    let Some(browser) = Browser::find(TEST) else {
        return;
    };
    let Some(axe) = axe() else {
        skip_or_fail(
            TEST,
            "axe-core not found (run .ci/test-tools or set BOURSE_AXE)",
        );
        return;
    };
    if Command::new("python3").arg("--version").output().is_err() {
        skip_or_fail(TEST, "python3 not found");
        return;
    }
    let server = TestServer::start();
    let (seller, _twin) = server.seller("Tidewater Data", b"rows");
    let buyer = server.party("Harbour Analytics");
    let paid = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Tide gauge readings 2026", 2_500),
        json!({}),
    );
    let free = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Coastal buoy index", 0),
        json!({}),
    );
    // Kept active through a forged form and a form of a signed-out session.
    let kept = server.create_listing(
        &seller,
        crate::support::catalog::listing_body("Harbour mooring survey", 0),
        json!({}),
    );
    server.buy_and_receive(&buyer, &paid);
    let seller_code = server
        .get(&format!("/api/marketplace/listings/{paid}"))
        .ok()["listing"]["sellerName"]
        .as_str()
        .unwrap()
        .to_owned();
    // What the other actions act on: an agent whose key is forced, a dead letter, an inquiry
    // to answer, an OAuth client with a grant, and two open checkouts.
    let rotated = server.party("Quayside Robotics");
    let gone = crate::messages::Receiver::start(&[410]);
    let sender = server.party("Pier Relay");
    let hooked = crate::messages::with_callback(&server, "Pier Receiver", &gone.url);
    crate::messages::send(&server, &sender, &hooked.handle, "gone", "a private body");
    gone.wait_for(1);
    crate::messages::wait_status(&server, &hooked, "dead", 1);
    let (issued, _, _) = crate::support::oauth::tokens(&server, &["read"]);
    let access = issued["access_token"].as_str().unwrap().to_owned();
    let (payer, canceller) = (server.party("Dockside Buyer"), server.party("Wharf Buyer"));
    let to_pay = server.buy(&payer, &paid).ok();
    let to_cancel = server.buy(&canceller, &paid).ok();
    let console = Console::sign_in(&server, &server.operator_key());
    let cookie = console.cookie.split_once('=').unwrap().1.to_owned();

    // The README's screenshots are rewritten only when asked (`BOURSE_UPDATE_SCREENSHOTS=1`), so
    // a test run leaves the tree as it was; otherwise they go beside the other page screens.
    let shots = if std::env::var_os("BOURSE_UPDATE_SCREENSHOTS").is_some_and(|v| v == "1") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots")
    } else {
        let binary = std::path::Path::new(env!("CARGO_BIN_EXE_bourse"));
        binary
            .parent()
            .and_then(std::path::Path::parent)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
            .join("page-screens/console")
    };
    std::fs::create_dir_all(&shots).unwrap();
    let base = &server.base;
    let page = |name: &str, path: &str| json!({"name": name, "url": format!("{base}{path}")});
    let mut pages = vec![
        page("console-overview", "/console"),
        page("console-agents", "/console/agents"),
        page(
            "console-agent",
            &format!("/console/agents/{}", seller.handle),
        ),
        page("console-listings", "/console/listings"),
        page("console-purchases", "/console/purchases"),
        page("console-messages", "/console/messages"),
        page("console-inquiries", "/console/inquiries"),
        page("console-oauth", "/console/oauth"),
        page("console-fees", "/console/fees"),
        page("console-sandbox", "/console/sandbox"),
        page("market", "/market"),
        page("market-listing", &format!("/market/listings/{paid}")),
        page("market-seller", &format!("/market/sellers/{seller_code}")),
    ];
    // The moderation form, filled and sent by the browser: its anti-forgery token is the page's.
    pages.push(json!({
        "name": "console-listing",
        "url": format!("{base}/console/listings/{free}"),
        "act": "document.getElementById('reason').value = 'Duplicate of another listing'; document.getElementById('deactivate').click()",
        "expect": "Deactivated",
    }));
    // A relay rail approved from an inquiry's thread: the page that shows its token once.
    let inquiry = server
        .post(
            "/api/inquiries",
            &json!({"subject": "Relay for a partner", "message": "Please relay our follow-ups."}),
        )
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    pages.push(json!({
        "name": "console-relay-rail",
        "url": format!("{base}/console/inquiries/{inquiry}"),
        "act": "document.getElementById('approve-rail').click()",
        "expect": "Relay rail approved",
    }));
    // Every other console action, through its form (before the stale-form step signs out).
    let answered = server
        .post(
            "/api/inquiries",
            &json!({"subject": "Missing invoice", "message": "Where is the invoice for March?"}),
        )
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let click = |selector: &str| format!("document.querySelector('{selector}').click()");
    for (name, path, act, expect) in [
        (
            "console-force-key",
            format!("/console/agents/{}", rotated.handle),
            click("#rotate-key"),
            "The new key, shown",
        ),
        (
            "console-replay",
            "/console/messages?status=dead".to_owned(),
            click("[id^=replay-]"),
            "Replayed:",
        ),
        (
            "console-inquiry-reply",
            format!("/console/inquiries/{answered}"),
            format!(
                "document.getElementById('message').value = 'It is on its way.'; {}",
                click("#reply")
            ),
            "Answer posted as the team.",
        ),
        (
            "console-inquiry-status",
            format!("/console/inquiries/{answered}"),
            format!(
                "const s = document.getElementById('status'); s.selectedIndex = (s.selectedIndex + 1) % s.options.length; {}",
                click("#set-status")
            ),
            "Status changed.",
        ),
        (
            "console-oauth-grant",
            "/console/oauth".to_owned(),
            click("[id^=revoke-grant-]"),
            "Grant revoked",
        ),
        (
            "console-oauth-client",
            "/console/oauth".to_owned(),
            click("[id^=revoke-client-]"),
            "Client revoked",
        ),
        (
            "console-sandbox-pay",
            "/console/sandbox".to_owned(),
            click(&format!("#pay-{}", to_pay["id"].as_str().unwrap())),
            "Checkout paid.",
        ),
        (
            "console-sandbox-cancel",
            "/console/sandbox".to_owned(),
            click(&format!("#cancel-{}", to_cancel["id"].as_str().unwrap())),
            "Checkout cancelled.",
        ),
    ] {
        pages.push(
            json!({"name": name, "url": format!("{base}{path}"), "act": act, "expect": expect}),
        );
    }
    // A form posted without its anti-forgery token (the hidden input taken out of the page,
    // then the form sent by the browser): a 403 page, and nothing changed.
    let fill = "document.getElementById('reason').value = 'Not the operator';";
    pages.push(json!({
        "name": "console-forged-form",
        "url": format!("{base}/console/listings/{kept}"),
        "act": format!("{fill} document.getElementById('deactivate').form.querySelector('input[name=csrf]').remove(); document.getElementById('deactivate').click()"),
        "expect": "did not carry this session's anti-forgery token",
    }));
    // A form drawn while signed in, sent after the session was signed out in another tab (the
    // browser still sending the old cookie): refused by a redirect to sign in, nothing changed.
    pages.push(json!({
        "name": "console-stale-form",
        "url": format!("{base}/console/listings/{kept}"),
        "elsewhere": {
            "url": format!("{base}/console"),
            "act": "document.getElementById('sign-out').click()",
            "expect": "You are signed out.",
        },
        "restoreCookie": true,
        "act": format!("{fill} document.getElementById('deactivate').click()"),
        "expect": "Sign in",
    }));
    let plan = json!({
        "chromium": browser.exe,
        "axe": axe,
        "out": shots,
        "cookie": {"name": "bourse_console", "value": cookie, "url": format!("{base}/console")},
        "pages": pages,
    });
    let report = drive(&plan);
    let pages = report["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 25, "{report}");
    for entry in pages {
        let name = entry["name"].as_str().unwrap();
        assert!(
            !entry["title"].as_str().unwrap().starts_with("Sign in"),
            "{name} was shown signed in: {entry}"
        );
        let serious: Vec<&Value> = entry["violations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
            .collect();
        assert!(serious.is_empty(), "{name}: axe-core found {serious:?}");
        assert!(
            entry["scrollWidthPhone"].as_i64().unwrap() <= 390,
            "{name} scrolls sideways at phone width: {entry}"
        );
        for size in ["desktop", "phone"] {
            let png = std::fs::read(shots.join(format!("{name}-{size}.png"))).unwrap();
            assert!(
                png.starts_with(b"\x89PNG") && png.len() > 8_000,
                "{name}-{size}"
            );
        }
        if entry["acted"] == true {
            assert_eq!(entry["found"], true, "{name}: the form's outcome: {entry}");
        }
    }
    // The browser's moderation is in the signed history, marked as the operator's.
    let history = server
        .get(&format!("/api/marketplace/listings/{free}/history"))
        .ok();
    let last = history["entries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["by"], "operator");
    assert_eq!(last["reason"], "Duplicate of another listing");
    let outcome = |name: &str| -> &Value {
        pages
            .iter()
            .find(|entry| entry["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {report}"))
    };
    let forged = outcome("console-forged-form");
    assert_eq!(forged["statuses"], json!([403]), "{forged}");
    let stale = outcome("console-stale-form");
    assert_eq!(
        stale["elsewhereFound"], true,
        "signed out in another tab: {stale}"
    );
    assert_eq!(stale["statuses"], json!([303, 200]), "{stale}");
    assert!(
        stale["finalUrl"]
            .as_str()
            .unwrap()
            .contains("/console/sign-in"),
        "{stale}"
    );
    // Neither changed the listing: still active, still its first version.
    let listing = server
        .get(&format!("/api/marketplace/listings/{kept}"))
        .ok();
    assert_eq!(listing["listing"]["active"], true, "{listing}");
    let history = server
        .get(&format!("/api/marketplace/listings/{kept}/history"))
        .ok();
    assert_eq!(history["entries"].as_array().unwrap().len(), 1, "{history}");
    // The browser signed its session out.
    assert_eq!(console.get(&server, "/console").status, 303);
    // What the other forms did, as the API sees it.
    assert_eq!(server.get_auth("/api/agents/me", &rotated.key).status, 401);
    assert_eq!(
        crate::support::oauth::whoami(&server, &access).status,
        401,
        "the revoked grant's token"
    );
    let paid_by = server.purchase(&payer, to_pay["id"].as_str().unwrap());
    assert_eq!(paid_by["status"], "delivered", "{paid_by}");
    let cancelled = server.purchase(&canceller, to_cancel["id"].as_str().unwrap());
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let thread = server
        .get(&format!("/api/inquiries/{answered}/thread"))
        .json();
    assert!(thread.to_string().contains("It is on its way."), "{thread}");

    // The fee announcement, past the rate lock, and the sandbox clock moved on (a session of
    // their own: this server's test clock is also its wall clock, so moving it ends sessions;
    // `bourse serve`'s sandbox clock does not). "Back to real time" needs that sandbox clock:
    // `it::console` checks it over HTTP.
    server
        .clock
        .advance(jiff::SignedDuration::from_hours(24 * 240));
    let console = Console::sign_in(&server, &server.operator_key());
    let cookie = console.cookie.split_once('=').unwrap().1.to_owned();
    let plan = json!({
        "chromium": browser.exe,
        "axe": axe,
        "out": shots,
        "cookie": {"name": "bourse_console", "value": cookie, "url": format!("{base}/console")},
        "pages": [{
            "name": "console-fees-announce",
            "url": format!("{base}/console/fees"),
            "act": "document.getElementById('effective').value = '2027-10-01'; document.getElementById('schedule').value = '{\"standardBps\": 450}'; document.getElementById('announce').click()",
            "expect": "Announced:",
        }, {
            "name": "console-sandbox-advance",
            "url": format!("{base}/console/sandbox"),
            "act": "document.getElementById('advance-clock').click()",
            // Moved by 7 days, this server's wall clock ends the session: the form's 303 goes
            // to the sandbox page, which sends the browser to sign in again.
            "expect": "Your console session ended",
        }],
    });
    let before = server.get("/api/sandbox/clock").json()["now"].clone();
    let report = drive(&plan);
    let (announce, advance) = (&report["pages"][0], &report["pages"][1]);
    assert_eq!(announce["found"], true, "{report}");
    assert_eq!(announce["statuses"], json!([303, 200]), "{announce}");
    assert_eq!(advance["found"], true, "{report}");
    assert_eq!(advance["statuses"], json!([303, 303, 200]), "{advance}");
    let after = server.get("/api/sandbox/clock").json()["now"].clone();
    assert_ne!(before, after, "the clock moved");
    let announced = server.get("/api/fees").json()["announced"].clone();
    assert_eq!(announced.as_array().map(Vec::len), Some(1), "{announced}");
}
