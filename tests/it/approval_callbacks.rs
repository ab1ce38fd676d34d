//! What follows an owner's decision on a purchase that waited for approval: the buyer's
//! callback URL is told (`purchase.approval_decided`, signed, for approved, denied and expired),
//! and on the Stripe rail an approved purchase opens its Checkout Session as any card purchase
//! (the callback waits for it, to name where to pay).

use jiff::SignedDuration;
use serde_json::{Value, json};

use crate::approvals::{buy_pending, form_token, list};
use crate::messages::{Receiver, wait_status, with_callback};
use crate::support::stripe::{FakeStripe, stripe_seller, stripe_server};
use crate::support::{Party, TestServer};

fn set_policy(server: &TestServer, buyer: &Party) {
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &buyer.key,
            &json!({"approvalThresholdCents": 500, "dailyCents": 1000}),
        )
        .ok();
}

/// Decides the approval page at `path` (`approve` or `deny`).
fn decide(server: &TestServer, path: &str, choice: &str) {
    let token = form_token(&server.get(path).text());
    server
        .post_form(&format!("{path}/{choice}"), &[], &[("token", &token)])
        .assert_status(303);
}

/// The `n`th callback the receiver saw (waiting for it): its event header and payload, whose
/// signature is checked to verify.
#[track_caller]
fn nth_callback(server: &TestServer, receiver: &Receiver, n: usize) -> (String, Value) {
    receiver.wait_for(n + 1);
    let (headers, payload) = receiver.seen.lock().unwrap()[n].clone();
    let verdict = server
        .post("/api/verify-receipt", &json!({"signed": payload}))
        .json();
    assert_eq!(verdict["valid"], true, "{verdict} {payload}");
    let event = headers
        .iter()
        .find(|(name, _)| name == "x-bourse-event")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    (event, payload)
}

#[test]
fn the_buyer_is_called_back_signed_when_its_approval_is_denied_expires_or_is_approved() {
    let server = TestServer::start();
    let receiver = Receiver::start(&[]);
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = with_callback(&server, "buyer", &receiver.url);
    set_policy(&server, &buyer);
    let listing = list(&server, &seller, 900);

    // Denied.
    let (denied, path) = buy_pending(&server, &buyer, &listing);
    decide(&server, &path, "deny");
    let (event, payload) = nth_callback(&server, &receiver, 0);
    assert_eq!(event, "purchase.approval_decided");
    assert_eq!(payload["event"], "purchase.approval_decided");
    assert_eq!(payload["purchaseId"], denied["id"], "{payload}");
    assert_eq!(payload["decision"], "denied");
    assert_eq!(payload["status"], "denied");
    assert_eq!(payload["payUrl"], Value::Null);
    assert!(payload["decidedAt"].is_string());
    let url = payload["purchaseUrl"].as_str().unwrap();
    assert!(url.ends_with(denied["id"].as_str().unwrap()), "{url}");

    // Expired, by the injected clock (the commerce worker or the buyer's poll marks it).
    let (waiting, _) = buy_pending(&server, &buyer, &listing);
    server.clock.advance(SignedDuration::from_hours(24));
    let (_, payload) = nth_callback(&server, &receiver, 1);
    assert_eq!(payload["purchaseId"], waiting["id"], "{payload}");
    assert_eq!(payload["decision"], "expired");
    assert_eq!(payload["status"], "expired");

    // Approved: it waits for payment, and the callback says where to pay.
    let (approved, path) = buy_pending(&server, &buyer, &listing);
    decide(&server, &path, "approve");
    let (_, payload) = nth_callback(&server, &receiver, 2);
    assert_eq!(payload["purchaseId"], approved["id"], "{payload}");
    assert_eq!(payload["decision"], "approved");
    assert_eq!(payload["status"], "pending_payment");
    assert!(payload["payUrl"].is_string(), "{payload}");

    // The deliveries are in the agent's callback list like any other, retried and
    // dead-lettered the same way.
    let delivered = wait_status(&server, &buyer, "delivered", 3);
    assert!(
        delivered
            .iter()
            .all(|c| c["event"] == "purchase.approval_decided"
                && c["messageId"].is_null()
                && c["purchaseId"].is_string()),
        "{delivered:?}"
    );
    // The operator counts them with the message callbacks.
    let metrics = server.get_auth("/metrics", &server.operator_key()).text();
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"bourse_callback_deliveries{status="delivered"} 3"#),
        "{metrics}"
    );
}

#[test]
fn an_approved_card_purchase_opens_its_stripe_checkout_session() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let receiver = Receiver::start(&[]);
    let buyer = with_callback(&server, "buyer", &receiver.url);
    set_policy(&server, &buyer);
    let listing = list(&server, &seller, 900);

    let (purchase, path) = buy_pending(&server, &buyer, &listing);
    assert_eq!(purchase["rail"], "card");
    assert!(
        fake.seen("/v1/checkout/sessions").is_empty(),
        "no session before the decision"
    );
    let id = purchase["id"].as_str().unwrap();
    decide(&server, &path, "approve");
    let approved = server.purchase(&buyer, id);
    assert_eq!(approved["status"], "pending_payment", "{approved}");
    assert!(
        approved["checkoutUrl"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://checkout.stripe.test/")),
        "{approved}"
    );
    let sessions = fake.seen("/v1/checkout/sessions");
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].form["client_reference_id"], id);
    assert_eq!(
        sessions[0].idempotency_key.as_deref(),
        Some(format!("purchase:{id}:checkout").as_str())
    );
    // The callback waited for the session, so it names where to pay.
    let (_, payload) = nth_callback(&server, &receiver, 0);
    assert_eq!(payload["decision"], "approved");
    assert_eq!(payload["payUrl"], approved["checkoutUrl"], "{payload}");
}

#[test]
fn a_waiting_purchase_reserves_nothing_and_an_exclusive_listing_sold_meanwhile_cancels_it() {
    let server = TestServer::start();
    let receiver = Receiver::start(&[]);
    let (seller, _twin) = server.seller("seller", b"rates");
    let buyer = with_callback(&server, "buyer", &receiver.url);
    set_policy(&server, &buyer);
    let base = json!({"title": "One-off survey", "description": "Sold once.", "priceCents": 900, "verticalSlug": "trucking", "consent": true});
    let listing = server.create_listing(&seller, base, json!({"listingType": "exclusive"}));
    let (waiting, path) = buy_pending(&server, &buyer, &listing);

    // Another buyer is not held back by the approval and takes the only copy.
    let other = server.party("other");
    server.buy_and_receive(&other, &listing);

    // Approved after that: nothing is charged, the purchase ends cancelled, and the callback
    // says so.
    decide(&server, &path, "approve");
    let id = waiting["id"].as_str().unwrap();
    let ended = server.purchase(&buyer, id);
    assert_eq!(ended["status"], "cancelled", "{ended}");
    let (_, payload) = nth_callback(&server, &receiver, 0);
    assert_eq!(payload["purchaseId"], id);
    assert_eq!(payload["decision"], "approved");
    assert_eq!(payload["status"], "cancelled");
    assert_eq!(payload["payUrl"], Value::Null);
}
