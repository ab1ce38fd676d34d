//! The HTML pages as a browser renders them: each page state is driven through the HTTP API,
//! opened in headless Chromium (Debian's `chromium`), its rendered DOM checked for what a person
//! looks for, and a screenshot saved under `<target>/page-screens/` for a person to look at.
//!
//! Chromium is found at `BOURSE_CHROMIUM`, else `/usr/bin/chromium`, else `chromium` on `PATH`;
//! without it these tests skip, or fail where tools are required (see `skip_or_fail`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::{Party, TestServer, checkout_session, exit_within, form_encode, skip_or_fail};

/// How long one Chromium run may take before it is killed.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);
const DESKTOP: (u32, u32) = (1280, 900);
const PHONE: (u32, u32) = (390, 844);

/// Headless Chromium, one fresh profile per run.
pub(crate) struct Browser {
    pub(crate) exe: PathBuf,
}

impl Browser {
    /// The browser, or `None` after reporting the test as skipped (or failing it where tools are
    /// required).
    pub(crate) fn find(test: &str) -> Option<Browser> {
        if let Some(named) = std::env::var_os("BOURSE_CHROMIUM").filter(|v| !v.is_empty()) {
            let exe = PathBuf::from(named);
            assert!(
                exe.is_file(),
                "BOURSE_CHROMIUM={} is not a file",
                exe.display()
            );
            return Some(Browser { exe });
        }
        let on_path = || {
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
                .map(|dir| dir.join("chromium"))
                .find(|exe| exe.is_file())
        };
        match Some(PathBuf::from("/usr/bin/chromium"))
            .filter(|exe| exe.is_file())
            .or_else(on_path)
        {
            Some(exe) => Some(Browser { exe }),
            None => {
                skip_or_fail(test, "chromium not found (set BOURSE_CHROMIUM)");
                None
            }
        }
    }

    /// Runs Chromium on `url` with `args`, killed (with its whole process group) if it outlasts
    /// [`BROWSER_TIMEOUT`]; returns what it wrote to stdout. Without `scripts`, its profile
    /// blocks JavaScript as a person's browser set so does.
    fn run(&self, args: &[String], url: &str, scripts: bool) -> String {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        if !scripts {
            // The content setting, not `--blink-settings=scriptEnabled=false`: that one also
            // stops headless Chromium's own DOM dump and screenshot, which then write nothing.
            let profile = dir.path().join("profile").join("Default");
            std::fs::create_dir_all(&profile).unwrap();
            std::fs::write(
                profile.join("Preferences"),
                r#"{"profile":{"default_content_setting_values":{"javascript":2}}}"#,
            )
            .unwrap();
        }
        let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
        let mut child = Command::new(&self.exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .args(args)
            .arg(url)
            // Chromium's own singleton directory goes where the test removes it, not into /tmp
            // for good.
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            // Its own process group, so a run past its time is ended with every helper process.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.exe.display()));
        let Some(status) = exit_within(&mut child, BROWSER_TIMEOUT) else {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.wait();
            panic!(
                "chromium {args:?} {url} still running after {BROWSER_TIMEOUT:?}; stderr:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        };
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        assert!(
            status.success(),
            "chromium {args:?} {url}: {status}; stderr:\n{stderr}"
        );
        std::fs::read_to_string(&out).unwrap()
    }

    /// The DOM after Chromium has loaded and rendered `url`.
    fn dom(&self, url: &str) -> String {
        self.dump(url, true)
    }

    /// As [`Browser::dom`], with JavaScript blocked in the browser.
    fn dom_without_scripts(&self, url: &str) -> String {
        self.dump(url, false)
    }

    fn dump(&self, url: &str, scripts: bool) -> String {
        let dom = self.run(&["--dump-dom".to_owned()], url, scripts);
        assert!(dom.contains("<body"), "no document from {url}: {dom:?}");
        dom
    }

    /// Checks that a browser run without scripts does block them: a page whose script would
    /// change its text keeps its text.
    fn assert_scripts_blocked(&self) {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("script.html");
        std::fs::write(
            &page,
            "<!doctype html><p id=\"said\">static</p><script>document.getElementById('said').textContent='scripted'</script>",
        )
        .unwrap();
        let url = format!("file://{}", page.display());
        assert!(self.dom(&url).contains(">scripted</p>"), "scripts run here");
        assert!(
            self.dom_without_scripts(&url).contains(">static</p>"),
            "scripts are blocked without them"
        );
    }

    /// Saves a screenshot of `url` at `size` as `<target>/page-screens/<name>.png` and checks it
    /// is a PNG of that size with something drawn.
    fn screenshot(&self, url: &str, name: &str, size: (u32, u32)) -> PathBuf {
        self.capture(url, name, size, true)
    }

    /// As [`Browser::screenshot`], with JavaScript blocked.
    fn screenshot_without_scripts(&self, url: &str, name: &str, size: (u32, u32)) -> PathBuf {
        self.capture(url, name, size, false)
    }

    fn capture(
        &self,
        url: &str,
        name: &str,
        (width, height): (u32, u32),
        scripts: bool,
    ) -> PathBuf {
        let path = screens_dir().join(format!("{name}.png"));
        let _ = std::fs::remove_file(&path);
        self.run(
            &[
                format!("--screenshot={}", path.display()),
                format!("--window-size={width},{height}"),
            ],
            url,
            scripts,
        );
        let png = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("no screenshot {} of {url}: {e}", path.display()));
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 24,
            "{} is not a PNG",
            path.display()
        );
        let dimension = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
        assert_eq!(
            (dimension(16), dimension(20)),
            (width, height),
            "{}",
            path.display()
        );
        // A blank page compresses to a few kilobytes; text and controls do not.
        assert!(
            png.len() > 8_000,
            "{} is nearly empty ({} bytes)",
            path.display(),
            png.len()
        );
        path
    }
}

/// `<target>/page-screens`, next to the binaries this build made (so `CARGO_TARGET_DIR` is
/// followed).
fn screens_dir() -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_bourse"));
    let dir = binary
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")))
        .join("page-screens");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What every page has, whatever its state: a title, the mobile viewport, and no scripts or
/// external resources.
#[track_caller]
fn assert_a_page(dom: &str, name: &str) {
    assert!(
        dom.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"),
        "{name}: no viewport meta tag: {dom}"
    );
    assert!(dom.contains("<title>"), "{name}: no title: {dom}");
    assert!(dom.contains("<h1>"), "{name}: no heading: {dom}");
    assert!(!dom.contains("<script"), "{name}: has a script: {dom}");
    for external in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!dom.contains(external), "{name}: loads {external}…: {dom}");
    }
}

/// Nothing left to press: no form, button or input of any kind.
#[track_caller]
fn assert_no_actions(dom: &str, name: &str) {
    for control in ["<form", "<button", "<input", "type=\"submit\""] {
        assert!(
            !dom.contains(control),
            "{name}: {control} once there is an outcome: {dom}"
        );
    }
}

/// The opening tag of the element with `id`.
#[track_caller]
fn tag_with_id<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!(" id=\"{id}\""))
        .unwrap_or_else(|| panic!("no element #{id}: {dom}"));
    let start = dom[..at].rfind('<').unwrap();
    let end = at + dom[at..].find('>').unwrap();
    &dom[start..=end]
}

/// The text of the element with `id` (up to its first child tag or its end).
#[track_caller]
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let tag = tag_with_id(dom, id);
    let from = dom.find(tag).unwrap() + tag.len();
    let rest = &dom[from..];
    &rest[..rest.find('<').unwrap_or(rest.len())]
}

/// A submit button with `id` in a form that posts to `action`.
#[track_caller]
fn assert_post_button(dom: &str, id: &str, action: &str) {
    let tag = tag_with_id(dom, id);
    assert!(
        tag.starts_with("<button") && tag.contains("type=\"submit\""),
        "#{id} is not a submit button: {tag}"
    );
    let at = dom.find(tag).unwrap();
    let form = &dom[dom[..at].rfind("<form").expect("the button is in a form")..at];
    assert!(
        form.contains("method=\"post\"") && form.contains(&format!("action=\"{action}\"")),
        "#{id} does not post to {action}: {form}"
    );
}

/// Submits a page's form as a browser does (urlencoded POST) and answers where its 303 sends
/// the browser back to.
#[track_caller]
fn submit(server: &TestServer, action: &str) -> String {
    let answer = server.post_form(action, &[], &[]);
    assert_eq!(answer.status, 303, "{}", answer.text());
    let location = answer.header("location").unwrap().to_owned();
    format!("{}{location}", server.base)
}

/// The state a checkout page shows, its sentence, and the listing's particulars on it.
#[track_caller]
fn assert_checkout(dom: &str, name: &str, state: &str, sentence: &str, listing: &Listing) {
    assert_a_page(dom, name);
    assert!(
        tag_with_id(dom, "state").contains(&format!("data-state=\"{state}\"")),
        "{name}: {dom}"
    );
    assert!(
        text_of(dom, "state").starts_with(sentence),
        "{name}: the sentence for {state} is {:?}",
        text_of(dom, "state")
    );
    assert_eq!(text_of(dom, "title"), listing.title, "{name}");
    assert_eq!(text_of(dom, "seller"), listing.seller_code, "{name}");
    assert_eq!(text_of(dom, "amount"), listing.amount, "{name}");
}

struct Listing {
    id: String,
    title: &'static str,
    seller_code: String,
    amount: &'static str,
}

/// A listing priced over a thousand dollars by a seller with connected payouts.
fn paid_listing(server: &TestServer, seller: &Party) -> Listing {
    let title = "Port congestion index";
    let id = server.create_listing(
        seller,
        json!({"title": title, "description": "Daily congestion at 40 ports.", "priceCents": 125_000, "verticalSlug": "trucking", "consent": true}),
        json!({}),
    );
    let detail = server.get(&format!("/api/marketplace/listings/{id}")).ok();
    let seller_code = detail["listing"]["sellerName"]
        .as_str()
        .unwrap_or_else(|| panic!("no seller code: {detail}"))
        .to_owned();
    Listing {
        id,
        title,
        seller_code,
        amount: "$1,250.00",
    }
}

#[test]
fn checkout_pages_in_a_browser_for_every_state() {
    let Some(browser) = Browser::find("checkout_pages_in_a_browser_for_every_state") else {
        return;
    };
    let server = TestServer::start();
    let (seller, _twin) = server.seller("page-seller", b"congestion figures");
    let listing = paid_listing(&server, &seller);
    let checkout = |buyer: &str| {
        let pending = server.buy(&server.party(buyer), &listing.id).ok();
        assert_eq!(pending["status"], "pending_payment", "{pending}");
        (
            pending["checkoutUrl"].as_str().unwrap().to_owned(),
            checkout_session(&pending),
        )
    };

    // Open: the primary Pay action names the amount; Cancel is the secondary one.
    let (open_url, session) = checkout("buyer-paying");
    let open = browser.dom(&open_url);
    assert_checkout(
        &open,
        "checkout-open",
        "open",
        "Waiting for payment.",
        &listing,
    );
    let pay = format!("/sandbox/checkout/{session}/pay");
    assert_post_button(&open, "pay", &pay);
    assert!(
        tag_with_id(&open, "pay").contains("class=\"primary\""),
        "Pay is the primary action: {open}"
    );
    assert_eq!(text_of(&open, "pay"), "Pay $1,250.00");
    assert_post_button(
        &open,
        "cancel",
        &format!("/sandbox/checkout/{session}/cancel"),
    );
    assert!(!tag_with_id(&open, "cancel").contains("primary"));
    assert!(
        open.find("id=\"pay\"") < open.find("id=\"cancel\""),
        "Pay comes first"
    );
    // Without scripts the page is the same page, its buttons plain forms.
    browser.assert_scripts_blocked();
    let plain = browser.dom_without_scripts(&open_url);
    assert_checkout(
        &plain,
        "checkout-open-noscript",
        "open",
        "Waiting for payment.",
        &listing,
    );
    assert_post_button(&plain, "pay", &pay);
    browser.screenshot(&open_url, "checkout-open", DESKTOP);
    browser.screenshot(&open_url, "checkout-open-phone", PHONE);
    browser.screenshot_without_scripts(&open_url, "checkout-open-noscript", DESKTOP);

    // Paid, as the browser lands after pressing Pay: the outcome, and nothing left to press.
    let paid_url = submit(&server, &pay);
    assert!(paid_url.ends_with("?done=paid"), "{paid_url}");
    let paid = browser.dom(&paid_url);
    assert_checkout(&paid, "checkout-paid", "paid", "Paid.", &listing);
    assert!(
        tag_with_id(&paid, "result").contains("data-outcome=\"done:paid\""),
        "{paid}"
    );
    assert!(text_of(&paid, "result").starts_with("Payment recorded"));
    assert_no_actions(&paid, "checkout-paid");
    browser.screenshot(&paid_url, "checkout-paid", DESKTOP);
    browser.screenshot(&paid_url, "checkout-paid-phone", PHONE);
    // The same checkout opened later from its link.
    assert_no_actions(&browser.dom(&open_url), "checkout-paid-later");

    // Cancelled with the page's Cancel button.
    let (cancel_url, session) = checkout("buyer-cancelling");
    let cancelled_url = submit(&server, &format!("/sandbox/checkout/{session}/cancel"));
    assert!(cancelled_url.starts_with(&cancel_url), "{cancelled_url}");
    let cancelled = browser.dom(&cancelled_url);
    assert_checkout(
        &cancelled,
        "checkout-cancelled",
        "cancelled",
        "This checkout was cancelled; nothing was charged.",
        &listing,
    );
    assert!(text_of(&cancelled, "result").starts_with("Checkout cancelled"));
    assert_no_actions(&cancelled, "checkout-cancelled");
    browser.screenshot(&cancelled_url, "checkout-cancelled", DESKTOP);

    // Expired: the sandbox clock moves past the checkout's half hour.
    let (expired_url, _) = checkout("buyer-waiting");
    let moved = server
        .send_auth(
            "POST",
            "/api/sandbox/clock",
            &server.operator_key(),
            &json!({"advanceSeconds": 31 * 60}),
        )
        .ok();
    assert_eq!(moved["expiredCheckouts"], 1, "{moved}");
    let expired = browser.dom(&expired_url);
    assert_checkout(
        &expired,
        "checkout-expired",
        "expired",
        "This checkout expired before it was paid; nothing was charged.",
        &listing,
    );
    assert_no_actions(&expired, "checkout-expired");
    browser.screenshot(&expired_url, "checkout-expired", DESKTOP);

    // A link that names no checkout.
    let unknown_url = format!("{}/sandbox/checkout/cs_unknown", server.base);
    let unknown = browser.dom(&unknown_url);
    assert_a_page(&unknown, "checkout-unknown");
    assert!(
        tag_with_id(&unknown, "status").contains("data-status=\"unknown\""),
        "{unknown}"
    );
    assert_eq!(
        text_of(&unknown, "status"),
        "This checkout does not exist: check the link you were given."
    );
    assert_no_actions(&unknown, "checkout-unknown");
    browser.screenshot(&unknown_url, "checkout-unknown", DESKTOP);
}

#[test]
fn onboarding_pages_in_a_browser_before_and_after_completion() {
    let Some(browser) = Browser::find("onboarding_pages_in_a_browser_before_and_after_completion")
    else {
        return;
    };
    let server = TestServer::start();
    let seller = server.party("onboarding-seller");
    let link = server
        .send_auth("POST", "/api/sell/register", &seller.key, &json!({}))
        .ok();
    let url = link["onboardingUrl"].as_str().unwrap().to_owned();
    let id = url.rsplit('/').next().unwrap().to_owned();
    let complete = format!("/sandbox/connect/{id}/complete");

    for (dom, name) in [
        (browser.dom(&url), "onboarding-pending"),
        (
            browser.dom_without_scripts(&url),
            "onboarding-pending-noscript",
        ),
    ] {
        assert_a_page(&dom, name);
        assert!(
            tag_with_id(&dom, "state").contains("data-state=\"pending\""),
            "{name}: {dom}"
        );
        assert!(text_of(&dom, "state").starts_with("Sandbox onboarding: one click connects"));
        assert_post_button(&dom, "complete", &complete);
        assert!(tag_with_id(&dom, "complete").contains("class=\"primary\""));
        assert_eq!(text_of(&dom, "complete"), "Complete onboarding");
    }
    browser.screenshot(&url, "onboarding-pending", DESKTOP);
    browser.screenshot(&url, "onboarding-pending-phone", PHONE);

    let done_url = submit(&server, &complete);
    assert!(done_url.ends_with("?done=complete"), "{done_url}");
    let done = browser.dom(&done_url);
    assert_a_page(&done, "onboarding-complete");
    assert!(
        tag_with_id(&done, "state").contains("data-state=\"complete\""),
        "{done}"
    );
    assert_eq!(
        text_of(&done, "state"),
        "Payouts are connected: this seller can sell paid listings."
    );
    assert!(text_of(&done, "result").starts_with("Payouts connected"));
    assert_eq!(text_of(&done, "status"), "complete");
    assert_no_actions(&done, "onboarding-complete");
    browser.screenshot(&done_url, "onboarding-complete", DESKTOP);
    // Opened again later from its link: still complete, nothing to press.
    let later = browser.dom(&url);
    assert!(later.contains("data-state=\"complete\""), "{later}");
    assert_no_actions(&later, "onboarding-complete-later");
}

#[test]
fn disclosures_in_a_browser_with_a_single_day_of_sellers() {
    let Some(browser) = Browser::find("disclosures_in_a_browser_with_a_single_day_of_sellers")
    else {
        return;
    };
    let server = TestServer::start();
    let (seller, _twin) = server.seller("first-seller", b"x");
    server.create_listing(
        &seller,
        json!({"title": "Tide tables", "description": "Hourly tides.", "priceCents": 0, "consent": true}),
        json!({}),
    );
    // The participation snapshot is taken once a day: the next day shows the first one.
    server.clock.advance(jiff::SignedDuration::from_hours(24));
    let url = format!("{}/disclosures", server.base);
    let dom = browser.dom(&url);
    assert_a_page(&dom, "disclosures");
    // Amounts over a thousand dollars are grouped.
    for amount in ["$20.00", "$49,999.99", "$50,000.00"] {
        assert!(dom.contains(amount), "disclosures lack {amount}: {dom}");
    }
    let svg = &dom[dom.find("<svg").expect("a chart")..dom.find("</svg>").unwrap()];
    assert_eq!(
        svg.matches("<circle").count(),
        1,
        "one point per day: {svg}"
    );
    assert!(
        svg.contains("<title>2026-11-21: 1</title>"),
        "the point names its day and value: {svg}"
    );
    assert!(
        svg.contains(">1</text>"),
        "the value is written on the chart: {svg}"
    );
    assert_eq!(
        svg.matches(">2026-11-21</text>").count(),
        1,
        "the single day is labelled once: {svg}"
    );
    for link in ["/api/meta", "/api/fees", "/llms.txt"] {
        assert!(
            dom.contains(&format!("<a href=\"{link}\">")),
            "no link to {link}: {dom}"
        );
    }
    browser.screenshot(&url, "disclosures", (1280, 1700));
    browser.screenshot(&url, "disclosures-phone", (390, 2400));
}

#[test]
fn front_and_authorization_pages_in_a_browser() {
    let Some(browser) = Browser::find("front_and_authorization_pages_in_a_browser") else {
        return;
    };
    let server = TestServer::start();
    let url = format!("{}/", server.base);
    let front = browser.dom(&url);
    assert_a_page(&front, "front");
    for id in ["agents", "listings", "verticals"] {
        assert!(
            text_of(&front, id)
                .chars()
                .all(|c| c.is_ascii_digit() || c == ','),
            "#{id} is a count: {front}"
        );
    }
    for link in ["/llms.txt", "/disclosures", "/api/marketplace/listings"] {
        assert!(
            front.contains(&format!("<a href=\"{link}\">")),
            "no link to {link}"
        );
    }
    browser.screenshot(&url, "front", DESKTOP);
    browser.screenshot(&url, "front-phone", PHONE);

    let client = server
        .post(
            "/oauth/register",
            &json!({"client_name": "Test Assistant", "redirect_uris": ["http://127.0.0.1:33418/callback"], "token_endpoint_auth_method": "none"}),
        )
        .expect(201);
    let query = form_encode(&[
        ("response_type", "code"),
        ("client_id", client["client_id"].as_str().unwrap()),
        ("redirect_uri", "http://127.0.0.1:33418/callback"),
        ("state", "st-1"),
        // RFC 7636's example S256 challenge.
        (
            "code_challenge",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        ),
        ("code_challenge_method", "S256"),
        ("scope", "read message spend"),
    ]);
    let url = format!("{}/oauth/authorize?{query}", server.base);
    for (dom, name) in [
        (browser.dom(&url), "authorize"),
        (browser.dom_without_scripts(&url), "authorize-noscript"),
    ] {
        assert_a_page(&dom, name);
        assert!(
            text_of(&dom, "client").contains("An app calling itself"),
            "{name}: {dom}"
        );
        assert_post_button(&dom, "allow", "/oauth/authorize");
        assert_post_button(&dom, "deny", "/oauth/authorize");
        assert!(tag_with_id(&dom, "allow").contains("class=\"primary\""));
        assert!(
            dom.contains("value=\"spend\">"),
            "{name}: spending is offered unticked: {dom}"
        );
    }
    browser.screenshot(&url, "authorize", DESKTOP);
    browser.screenshot(&url, "authorize-phone", PHONE);
}
