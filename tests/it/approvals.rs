//! Approval above a threshold: a purchase over the buyer's approval threshold waits in
//! `pending_approval` (202 with the owner's approval URL, its amount held) until the owner
//! approves (it goes on to checkout), denies, or lets it expire (the amount comes back).

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::seller_twin::SellerTwin;
use crate::support::{Party, TestServer};

pub(crate) fn list(server: &TestServer, seller: &Party, price: i64) -> String {
    let base = json!({"title": "Freight rates", "description": "Weekly freight.", "priceCents": price, "verticalSlug": "trucking", "consent": true});
    server.create_listing(seller, base, json!({}))
}

fn spending(server: &TestServer, agent: &Party) -> Value {
    server.get_auth("/api/agents/me/spending", &agent.key).ok()
}

/// Buys above the threshold: asserts 202 `pending_approval`; returns the purchase and the
/// approval page's path.
#[track_caller]
pub(crate) fn buy_pending(server: &TestServer, buyer: &Party, listing: &str) -> (Value, String) {
    let purchase = server.buy(buyer, listing).expect(202);
    assert_eq!(purchase["status"], "pending_approval", "{purchase}");
    let url = purchase["approvalUrl"].as_str().expect("approvalUrl");
    let path = server.path_of(url).to_owned();
    assert!(!path.contains(purchase["id"].as_str().unwrap()));
    (purchase, path)
}

/// The anti-forgery token in the approval page's form.
pub(crate) fn form_token(page: &str) -> String {
    let at = page.find("name=\"token\" value=\"").expect("a token field") + 20;
    page[at..].split('"').next().unwrap().to_owned()
}

fn state(page: &str) -> String {
    let at = page.find("data-state=\"").expect("a state") + 12;
    page[at..].split('"').next().unwrap().to_owned()
}

fn setup(server: &TestServer) -> (SellerTwin, Party, String) {
    let (seller, twin) = server.seller("seller", b"rates");
    let buyer = server.party("buyer");
    let listing = list(server, &seller, 900);
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &buyer.key,
            &json!({"approvalThresholdCents": 500, "dailyCents": 1000}),
        )
        .ok();
    (twin, buyer, listing)
}

#[test]
fn an_approved_purchase_goes_on_to_checkout_and_the_form_is_single_use_and_forgery_proof() {
    let server = TestServer::start();
    let (_twin, buyer, listing) = setup(&server);
    let (purchase, path) = buy_pending(&server, &buyer, &listing);
    let id = purchase["id"].as_str().unwrap();
    // Its amount is held while it waits, and it is listed as an open approval.
    let held = spending(&server, &buyer);
    assert_eq!(held["daily"]["spentCents"], 900);
    assert_eq!(held["pendingApprovals"][0]["purchaseId"], id);
    // The daily cap counts it: a second one does not fit.
    server
        .buy(&buyer, &listing)
        .assert_error(403, "SPEND_LIMIT_EXCEEDED");
    // The buyer polls it as any purchase.
    assert_eq!(server.purchase(&buyer, id)["status"], "pending_approval");

    let page = server.get(&path).text();
    assert_eq!(state(&page), "open");
    assert!(page.contains("$9.00") && page.contains("buyer"), "{page}");
    // A form without the page's token is refused and changes nothing.
    server
        .post_form(&format!("{path}/approve"), &[], &[])
        .assert_error(403, "FORM_TOKEN_INVALID");
    server
        .post_form(&format!("{path}/approve"), &[], &[("token", "forged")])
        .assert_error(403, "FORM_TOKEN_INVALID");
    assert_eq!(server.purchase(&buyer, id)["status"], "pending_approval");

    let token = form_token(&page);
    server
        .post_form(&format!("{path}/approve"), &[], &[("token", &token)])
        .assert_status(303);
    let approved = server.purchase(&buyer, id);
    assert_eq!(approved["status"], "pending_payment", "{approved}");
    assert_eq!(state(&server.get(&path).text()), "approved");
    // Single use: a second decision shows the decision and changes nothing.
    server
        .post_form(&format!("{path}/deny"), &[], &[("token", &token)])
        .assert_status(303);
    assert_eq!(state(&server.get(&path).text()), "approved");
    // It goes on as a purchase under the threshold: the buyer pays its checkout.
    server.pay_checkout(&approved);
    assert_eq!(server.purchase(&buyer, id)["status"], "delivered");
    assert!(
        spending(&server, &buyer)["pendingApprovals"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_denied_or_expired_approval_refuses_the_purchase_and_gives_its_amount_back() {
    let server = TestServer::start();
    let (_twin, buyer, listing) = setup(&server);
    let (denied, path) = buy_pending(&server, &buyer, &listing);
    let token = form_token(&server.get(&path).text());
    server
        .post_form(&format!("{path}/deny"), &[], &[("token", &token)])
        .assert_status(303);
    assert_eq!(
        server.purchase(&buyer, denied["id"].as_str().unwrap())["status"],
        "denied"
    );
    assert_eq!(state(&server.get(&path).text()), "denied");
    assert_eq!(spending(&server, &buyer)["daily"]["spentCents"], 0);

    // Undecided, it expires after the policy's time (24 hours by default).
    let (waiting, path) = buy_pending(&server, &buyer, &listing);
    assert_eq!(spending(&server, &buyer)["daily"]["spentCents"], 900);
    server.clock.advance(SignedDuration::from_hours(24));
    let id = waiting["id"].as_str().unwrap();
    assert_eq!(server.purchase(&buyer, id)["status"], "expired");
    assert_eq!(state(&server.get(&path).text()), "expired");
    assert_eq!(spending(&server, &buyer)["daily"]["spentCents"], 0);
    let token = form_token_or_empty(&server.get(&path).text());
    assert!(token.is_empty());
}

fn form_token_or_empty(page: &str) -> String {
    if page.contains("name=\"token\"") {
        form_token(page)
    } else {
        String::new()
    }
}
