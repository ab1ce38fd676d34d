//! The sandbox payment rail: onboarding, checkout, reservations, escrow, shipment, fees.

use serde_json::{Value, json};

use crate::seller_twin::{Mode, SellerTwin};
use crate::support::{Party, TestServer, checkout_session};

fn advance(server: &TestServer, seconds: i64) -> Value {
    server
        .send_auth(
            "POST",
            "/api/sandbox/clock",
            &server.operator_key(),
            &json!({"advanceSeconds": seconds}),
        )
        .ok()
}

fn dashboard(server: &TestServer, seller: &Party) -> Value {
    server.get_auth("/api/sell/dashboard", &seller.key).json()
}

fn list(server: &TestServer, seller: &Party, price: i64, extra: Value) -> String {
    let base = json!({"title": "Freight rates", "description": "Weekly freight.", "priceCents": price, "verticalSlug": "trucking", "consent": true});
    server.create_listing(seller, base, extra)
}

#[test]
fn a_paid_listing_needs_connected_payouts() {
    let server = TestServer::start();
    let seller = server.party("unconnected");
    let twin = SellerTwin::start(&server.base, b"x".to_vec(), "text/plain", Mode::Honest);
    server.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        &seller.key,
        &json!({"url": twin.url}),
    );
    let body = json!({"title": "Paid", "description": "d", "priceCents": 2500, "consent": true});
    server
        .send_auth("POST", "/api/marketplace/listings", &seller.key, &body)
        .assert_error(409, "PAYOUTS_NOT_CONNECTED");
    let link = server
        .send_auth("POST", "/api/sell/register", &seller.key, &json!({}))
        .json();
    assert_eq!(link["status"], "pending");
    let page = server.get(server.path_of(link["onboardingUrl"].as_str().unwrap()));
    assert!(
        page.assert_status(200)
            .text()
            .contains("Complete onboarding")
    );
    server.onboard(&seller.key);
    assert_eq!(
        server
            .send_auth("POST", "/api/sell/register", &seller.key, &json!({}))
            .json()["status"],
        "complete"
    );
    server
        .send_auth("POST", "/api/marketplace/listings", &seller.key, &body)
        .assert_status(201);
}

#[test]
fn checkout_pay_poll_deliver_then_escrow_releases_on_the_clock() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"paid deliverable");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 10_000, json!({}));
    let pending = server.buy(&buyer, &listing).json();
    assert_eq!(pending["status"], "pending_payment");
    assert_eq!(pending["delivery"], Value::Null, "nothing before payment");
    let checkout = pending["checkoutUrl"].as_str().unwrap();
    let html = server
        .get(server.path_of(checkout))
        .assert_status(200)
        .text();
    let session = checkout_session(&pending);
    assert!(
        html.contains("$100.00") && html.contains(&format!("/api/sandbox/checkout/{session}/pay")),
        "{html}"
    );

    let verify = format!("/api/svcpay/receipts/{session}/verify");
    let open = server.get(&verify).json();
    assert_eq!(open["paid"], false, "{open}");
    assert_eq!(open["verification"]["valid"], true);

    server.pay_checkout(&pending);
    let checked = server.get(&verify).json();
    assert!(
        checked["provenance"]["receipt"].is_object(),
        "public and signed"
    );
    assert_eq!(checked["paid"], true);
    assert_eq!(checked["purchaseId"], pending["id"]);
    assert_eq!(checked["receipt"]["status"], "paid");
    assert_eq!(checked["verification"]["valid"], true, "{checked}");
    server
        .get("/api/svcpay/receipts/no-such-session/verify")
        .assert_error(404, "NOT_FOUND");
    assert_eq!(
        server
            .post(&format!("/api/sandbox/checkout/{session}/pay"), &json!({}))
            .status,
        200,
        "paying twice is harmless"
    );
    let polled = server.purchase(&buyer, pending["id"].as_str().unwrap());
    assert_eq!(polled["status"], "delivered");
    assert_eq!(polled["delivery"]["content"], "paid deliverable");
    assert_eq!(
        polled["receipt"]["status"], "paid",
        "the receipt is re-signed at payment"
    );
    assert_eq!(
        server
            .post("/api/verify-receipt", &json!({"signed": polled["receipt"]}))
            .json()["valid"],
        true
    );

    let sales = &dashboard(&server, &seller)["sales"];
    assert_eq!(sales["count"], 1);
    assert_eq!(sales["heldCents"], polled["sellerNetCents"]);
    assert_eq!(sales["releasedCents"], 0);
    // The operator's view of the money: one row held, not yet due.
    server
        .get("/api/operator/payments")
        .assert_error(401, "UNAUTHENTICATED");
    server
        .get_auth("/api/operator/payments", &buyer.key)
        .assert_error(401, "UNAUTHENTICATED");
    let operator = |server: &TestServer| {
        server
            .get_auth("/api/operator/payments", &server.operator_key())
            .json()
    };
    let view = operator(&server);
    assert_eq!(view["rail"], "sandbox");
    assert_eq!(view["x402Configured"], false);
    assert_eq!(
        view["escrow"],
        json!({"heldRows": 1, "heldSellerNetCents": polled["sellerNetCents"], "dueRows": 0})
    );
    assert_eq!(view["openCheckouts"], 0);
    assert_eq!(view["failingPayouts"], json!([]));
    assert_eq!(view["pendingRefunds"], json!([]));
    assert!(view.get("provenance").is_none(), "private to the operator");
    assert_eq!(
        advance(&server, 6 * 24 * 3600)["releasedRows"],
        0,
        "not before the escrow clock has run"
    );
    assert_eq!(advance(&server, 24 * 3600)["releasedRows"], 1);
    let sales = &dashboard(&server, &seller)["sales"];
    assert_eq!(
        (sales["heldCents"].clone(), sales["releasedCents"].clone()),
        (json!(0), polled["sellerNetCents"].clone())
    );
    assert_eq!(operator(&server)["escrow"]["heldRows"], 0);
    // An open checkout shows as one.
    let other = list(&server, &seller, 500, json!({}));
    assert_eq!(
        server.buy(&buyer, &other).json()["status"],
        "pending_payment"
    );
    assert_eq!(operator(&server)["openCheckouts"], 1);
}

#[test]
fn cancel_and_expiry_free_an_exclusive_reservation() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"paid deliverable");
    let [a, b] = server.parties(["a", "b"]);
    let listing = list(&server, &seller, 5_000, json!({"listingType": "exclusive"}));
    let first = server.buy(&a, &listing).json();
    server
        .buy(&b, &listing)
        .assert_error(409, "LISTING_UNAVAILABLE");
    let session = checkout_session(&first);
    assert_eq!(
        server
            .post(
                &format!("/api/sandbox/checkout/{session}/cancel"),
                &json!({})
            )
            .json()["status"],
        "cancelled"
    );
    server
        .post(&format!("/api/sandbox/checkout/{session}/pay"), &json!({}))
        .assert_error(409, "CHECKOUT_CLOSED");

    let second = server.buy(&b, &listing).json();
    assert_eq!(second["status"], "pending_payment");
    server
        .buy(&a, &listing)
        .assert_error(409, "LISTING_UNAVAILABLE");
    assert_eq!(advance(&server, 31 * 60)["expiredCheckouts"], 1);
    let id = second["id"].as_str().unwrap();
    assert_eq!(
        server
            .get_auth(&format!("/api/marketplace/purchases/{id}"), &b.key)
            .json()["status"],
        "expired"
    );
    server.buy_and_pay(&a, &listing);
    let detail = server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .json();
    assert_eq!(
        (
            detail["listing"]["exclusiveSold"].clone(),
            detail["listing"]["active"].clone()
        ),
        (json!(true), json!(false))
    );
}

#[test]
fn physical_orders_wait_for_shipment_before_escrow_runs() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"paid deliverable");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 9_000, json!({"physical": true}));
    let delivered = server.buy_and_receive(&buyer, &listing);
    let id = delivered["id"].as_str().unwrap();
    assert_eq!(delivered["status"], "delivered");
    assert_eq!(
        advance(&server, 30 * 24 * 3600)["releasedRows"],
        0,
        "unshipped: the escrow clock has not started"
    );

    let orders = dashboard(&server, &seller)["orders"].clone();
    assert_eq!(
        orders[0]["purchaseId"], id,
        "the seller finds the order to ship"
    );
    assert_eq!(orders[0]["physical"], true);
    let ship = |who: &Party| {
        server.send_auth(
            "POST",
            &format!("/api/marketplace/purchases/{id}/ship"),
            &who.key,
            &json!({"carrier": "UPS", "tracking": "1Z999"}),
        )
    };
    ship(&buyer).assert_error(403, "NOT_SELLER");
    ship(&seller).assert_status(200);
    assert_eq!(advance(&server, 7 * 24 * 3600)["releasedRows"], 1);
}

#[test]
fn a_restart_in_the_middle_of_a_held_escrow_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = TestServer::start_in(&data);
    let (seller, twin) = server.seller("seller", b"paid deliverable");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 4_000, json!({}));
    server.buy_and_receive(&buyer, &listing);
    let held = dashboard(&server, &seller)["sales"]["heldCents"].clone();
    assert!(held.as_i64().unwrap() > 0);
    server.stop();
    drop(twin);

    let server = TestServer::start_in(&data);
    assert_eq!(dashboard(&server, &seller)["sales"]["heldCents"], held);
    assert_eq!(advance(&server, 7 * 24 * 3600 + 1)["releasedRows"], 1);
    assert_eq!(dashboard(&server, &seller)["sales"]["releasedCents"], held);
}

#[test]
fn fees_follow_the_schedule_and_the_first_sale_in_an_empty_vertical_claims_founding_fill() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"paid deliverable");
    let buyer = server.party("buyer");
    let first = list(&server, &seller, 10_000, json!({}));
    let second = list(&server, &seller, 10_000, json!({}));
    let pay = |listing: &str| server.buy_and_receive(&buyer, listing);
    let founding = pay(&first);
    assert_eq!(
        (
            founding["platformFeeCents"].clone(),
            founding["sellerNetCents"].clone()
        ),
        (json!(0), json!(10_000))
    );
    let standard = pay(&second);
    assert_eq!(
        standard["platformFeeCents"], 500,
        "5% once the vertical has commerce"
    );
    assert_eq!(standard["feeBps"], 500);
    assert_eq!(standard["scheduleVersion"], 1);
    let micro = list(&server, &seller, 1_999, json!({}));
    assert_eq!(pay(&micro)["platformFeeCents"], 0, "under $20 pays no fee");
    let stats = server.get("/api/marketplace/stats").json();
    assert_eq!(
        (
            stats["totalSales"].clone(),
            stats["platformFeeCents"].clone()
        ),
        (json!(3), json!(500))
    );
    assert!(
        server
            .get("/api/stats")
            .json()
            .get("platformFeeCents")
            .is_none(),
        "only the marketplace stats carry fees"
    );
}

/// Clicks the button `button` of the HTML page at `page` the way a browser without scripts
/// does: submits its form (POST, urlencoded, empty) and follows the 303 back to the page;
/// returns the page shown.
fn click(server: &TestServer, page: &str, button: &str) -> String {
    let html = server.get(page).text();
    let at = html
        .find(&format!("<button id=\"{button}\""))
        .unwrap_or_else(|| panic!("no button {button} in {html}"));
    let form = html[..at].rfind("<form").expect("the button is in a form");
    let tag = &html[form..at];
    assert!(tag.contains("method=\"post\""), "{tag}");
    let action = tag
        .split("action=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .replace("&amp;", "&");
    // The client follows the 303 with a GET, as a browser does.
    server
        .request(
            "POST",
            &action,
            &[("content-type", "application/x-www-form-urlencoded")],
            Some(b""),
        )
        .assert_status(200)
        .text()
}

#[test]
fn the_checkout_and_onboarding_buttons_work_in_a_browser_without_scripts() {
    let server = TestServer::start();
    let seller = server.party("seller");
    let twin = SellerTwin::start(
        &server.base,
        b"page bytes".to_vec(),
        "text/plain",
        Mode::Honest,
    );
    server.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        &seller.key,
        &json!({"url": twin.url}),
    );
    let link = server
        .send_auth("POST", "/api/sell/register", &seller.key, &json!({}))
        .json();
    let onboarding = server
        .path_of(link["onboardingUrl"].as_str().unwrap())
        .to_owned();
    let done = click(&server, &onboarding, "complete");
    assert!(done.contains("data-outcome=\"done:complete\""), "{done}");
    assert!(
        done.contains("Payouts connected"),
        "a sentence, not a code: {done}"
    );
    assert!(
        !done.contains("<button"),
        "nothing left to click once connected: {done}"
    );
    assert!(!done.contains("<script"), "no scripts needed");

    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 2_500, json!({}));
    let pending = server.buy(&buyer, &listing).json();
    let checkout = server
        .path_of(pending["checkoutUrl"].as_str().unwrap())
        .to_owned();
    let open = server.get(&checkout).text();
    assert!(open.contains("data-state=\"open\""), "{open}");
    assert!(
        open.contains("Pay $25.00"),
        "the amount on the primary action: {open}"
    );
    let paid = click(&server, &checkout, "pay");
    assert!(paid.contains("data-outcome=\"done:paid\""), "{paid}");
    assert!(
        paid.contains("Payment recorded"),
        "a sentence, not a code: {paid}"
    );
    assert!(paid.contains("<span id=\"status\">paid</span>"), "{paid}");
    assert!(
        !paid.contains("<button"),
        "no live buttons once paid: {paid}"
    );
    let polled = server.purchase(&buyer, pending["id"].as_str().unwrap());
    assert_eq!(polled["status"], "delivered");
    assert_eq!(polled["delivery"]["content"], "page bytes");

    // An id that cannot exist never reaches a Location header.
    server
        .request(
            "POST",
            "/sandbox/checkout/%2F%2Fevil.example/pay",
            &[],
            Some(b""),
        )
        .assert_error(404, "NOT_FOUND");

    // Cancelling a paid checkout (a stale tab's button) is refused, and the page says why.
    let refused = server
        .request(
            "POST",
            &format!("{checkout}/cancel"),
            &[("content-type", "application/x-www-form-urlencoded")],
            Some(b""),
        )
        .assert_status(200)
        .text();
    assert!(
        refused.contains("data-outcome=\"refused:CHECKOUT_CLOSED\""),
        "{refused}"
    );
    assert!(refused.contains("already closed"), "{refused}");
    // An unknown checkout is a page too.
    let unknown = server.get("/sandbox/checkout/cs_unknown");
    assert_eq!(unknown.status, 404);
    assert!(unknown.text().contains("No such checkout"));
}
