//! Spending controls on the Stripe rail (against the local fake Stripe): concurrent purchases
//! against a cap open exactly the checkouts it allows, and a refunded payment leaves the
//! buyer's budget given back.

use serde_json::{Value, json};

use crate::support::stripe::{
    FakeStripe, WEBHOOK_SECRET, deliver, event, stripe_seller, stripe_server,
};
use crate::support::{Party, TestServer, WAIT, all_at_once, checkout_session, wait_until};

fn list(server: &TestServer, seller: &Party, price: i64, extra: Value) -> String {
    let base = json!({"title": "Tide tables", "description": "Hourly tides.", "priceCents": price, "verticalSlug": "research-data", "consent": true});
    server.create_listing(seller, base, extra)
}

#[test]
fn stripe_fifty_concurrent_purchases_against_a_cap_that_allows_ten_open_exactly_ten_checkouts() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let listing = list(&server, &seller, 100, json!({}));
    let buyer = server.party("buyer");
    super::set_policy(&server, &buyer, json!({"dailyCents": 1_000}));
    let (base, key) = (server.base.clone(), buyer.key.clone());
    let path = format!("/api/marketplace/listings/{listing}/purchase");
    let answers = all_at_once("fifty Stripe purchases", 50, WAIT * 6, move |_| {
        let response =
            crate::support::Client::new(&base).send_auth("POST", &path, &key, &json!({}));
        (response.status, response.json())
    });
    let opened: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 200)
        .map(|(_, body)| body)
        .collect();
    let capped = answers
        .iter()
        .filter(|(status, body)| *status == 403 && body["error"]["code"] == "SPEND_LIMIT_EXCEEDED")
        .count();
    assert_eq!((opened.len(), capped), (10, 40), "{answers:?}");
    assert!(
        opened
            .iter()
            .all(|body| body["status"] == "pending_payment"),
        "{opened:?}"
    );
    // Stripe was asked for the ten checkouts only.
    assert_eq!(fake.seen("/v1/checkout/sessions").len(), 10);
    let now = super::spending(&server, &buyer);
    assert_eq!(now["daily"]["spentCents"], 1_000);
    assert_eq!(now["daily"]["leftCents"], 0);
    server.stop();
}

/// bourse refunds one kind of payment: a card payment that arrives after its checkout ended
/// and whose listing can no longer be sold (the purchase stays `expired`). A paid purchase is
/// never refunded by bourse (`charge.refunded` is acknowledged and ignored).
#[test]
fn a_payment_refunded_after_its_checkout_ended_gives_its_amount_back_for_good() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let exclusive = list(&server, &seller, 2_500, json!({"listingType": "exclusive"}));
    let open = list(&server, &seller, 2_500, json!({}));
    let buyer = server.party("buyer");
    let other = server.party("other");
    super::set_policy(&server, &buyer, json!({"dailyCents": 2_500}));

    let lost = server.buy(&buyer, &exclusive).ok();
    let held = super::spending(&server, &buyer);
    assert_eq!(held["daily"]["spentCents"], 2_500, "an open checkout holds");
    assert_eq!(held["daily"]["leftCents"], 0);
    super::refused(&server, &buyer, &open, "SPEND_LIMIT_EXCEEDED");

    // The checkout ends unpaid and someone else takes the exclusive listing; then the buyer's
    // payment arrives: it cannot buy anything, so it is refunded.
    server
        .clock
        .advance(jiff::SignedDuration::from_secs(35 * 60 + 1));
    server.buy(&other, &exclusive).ok();
    let late = deliver(
        &server,
        &event(
            "evt_late",
            "checkout.session.completed",
            json!({"id": checkout_session(&lost), "payment_status": "paid", "payment_intent": "pi_late"}),
        ),
        WEBHOOK_SECRET,
        0,
    )
    .ok();
    assert!(
        ["refund_pending", "refunded"].contains(&late["handled"].as_str().unwrap_or("")),
        "{late}"
    );
    let id = lost["id"].as_str().unwrap();
    let purchase = wait_until("the late payment is refunded", WAIT, || {
        let purchase = server
            .get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
            .ok();
        if purchase["refund"]["status"] == "refunded" {
            Ok(purchase)
        } else {
            Err(purchase)
        }
    });
    assert_eq!(purchase["status"], "expired");
    assert_eq!(purchase["refund"]["amountCents"], 2_500);

    // The amount is back in the budget and the payment takes none of it again.
    let back = super::spending(&server, &buyer);
    assert_eq!(back["daily"]["spentCents"], 0, "{back}");
    assert_eq!(back["daily"]["leftCents"], 2_500);
    assert_eq!(server.buy(&buyer, &open).ok()["status"], "pending_payment");
    let now = super::spending(&server, &buyer);
    assert_eq!(now["daily"]["spentCents"], 2_500);
    assert_eq!(now["daily"]["leftCents"], 0);
    server.stop();
}
