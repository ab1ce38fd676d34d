//! The Stripe rail against a local fake Stripe (no network): Connect Express onboarding,
//! Checkout Sessions with idempotency keys, signed webhooks, and the transfer at escrow release.

use bourse::clock::Clock;
use bourse::service::commerce::rails::stripe::{hex, hmac_sha256};
use serde_json::{Value, json};

use crate::support::stripe::{
    FakeStripe, WEBHOOK_SECRET, agent_id, deliver, event, stripe_seller, stripe_server, wait_seen,
};
use crate::support::{Party, TestServer, WAIT, wait_until};

fn list(server: &TestServer, seller: &Party, price: i64, extra: Value) -> String {
    let base = json!({"title": "Tide tables", "description": "Hourly tides.", "priceCents": price, "verticalSlug": "research-data", "consent": true});
    server.create_listing(seller, base, extra)
}

/// The operator's payments view.
fn operator_payments(server: &TestServer) -> Value {
    server
        .get_auth("/api/operator/payments", &server.operator_key())
        .ok()
}

/// Polls the operator's payments view until `check` holds (the commerce worker runs every
/// second).
#[track_caller]
fn wait_operator(server: &TestServer, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_until(what, WAIT, || {
        let view = operator_payments(server);
        if check(&view) { Ok(view) } else { Err(view) }
    })
}

/// Polls the seller's dashboard until `check` holds.
#[track_caller]
fn wait_dashboard(
    server: &TestServer,
    seller: &Party,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(what, WAIT, || {
        let dashboard = server.get_auth("/api/sell/dashboard", &seller.key).ok();
        if check(&dashboard) {
            Ok(dashboard)
        } else {
            Err(dashboard)
        }
    })
}

#[test]
fn stripe_checkout_signed_webhook_delivery_and_transfer_at_release() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let listing = list(&server, &seller, 2500, json!({}));
    let buyer = server.party("buyer");

    let purchase = server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{listing}/purchase"),
            &buyer.key,
            &json!({"email": "buyer@example.com"}),
        )
        .ok();
    assert_eq!(purchase["status"], "pending_payment");
    assert_eq!(purchase["rail"], "card");
    assert_eq!(
        purchase["checkoutUrl"],
        "https://checkout.stripe.test/c/pay/cs_test_1"
    );
    let id = purchase["id"].as_str().unwrap().to_owned();
    let sessions = fake.seen("/v1/checkout/sessions");
    assert_eq!(sessions.len(), 1);
    let form = &sessions[0].form;
    assert_eq!(
        sessions[0].idempotency_key.as_deref(),
        Some(format!("purchase:{id}:checkout").as_str())
    );
    assert_eq!(form["mode"], "payment");
    assert_eq!(form["line_items[0][price_data][unit_amount]"], "2500");
    assert_eq!(form["line_items[0][price_data][currency]"], "usd");
    assert_eq!(form["client_reference_id"], id);
    assert_eq!(form["payment_intent_data[transfer_group]"], id);
    assert_eq!(form["customer_email"], "buyer@example.com");
    let expires: i64 = form["expires_at"].parse().unwrap();
    let now = server.clock.now().as_second();
    assert!(
        (now + 30 * 60..=now + 24 * 3600).contains(&expires),
        "Stripe accepts 30 min to 24 h"
    );
    assert!(
        !form.contains_key("payment_intent_data[transfer_data][destination]"),
        "separate charges and transfers: the platform holds the money"
    );

    let paid = event(
        "evt_paid",
        "checkout.session.completed",
        json!({"id": "cs_test_1", "object": "checkout.session", "payment_status": "paid", "payment_intent": "pi_test1", "client_reference_id": id}),
    );
    // Forged, stale and unsigned deliveries change nothing.
    deliver(&server, &paid, "whsec_wrong", 0).assert_error(400, "STRIPE_SIGNATURE_INVALID");
    deliver(&server, &paid, WEBHOOK_SECRET, -301).assert_error(400, "STRIPE_SIGNATURE_STALE");
    server
        .request(
            "POST",
            "/api/webhooks/stripe",
            &[],
            Some(paid.to_string().as_bytes()),
        )
        .assert_error(400, "STRIPE_SIGNATURE_MISSING");
    let pending = server
        .get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
        .json();
    assert_eq!(pending["status"], "pending_payment");

    // Signed with several v1 values (secret rotation): any match is enough.
    let body = paid.to_string();
    let t = server.clock.now().as_second();
    let good = hex(&hmac_sha256(
        WEBHOOK_SECRET.as_bytes(),
        format!("{t}.{body}").as_bytes(),
    ));
    let handled = server.request(
        "POST",
        "/api/webhooks/stripe",
        &[(
            "stripe-signature",
            &format!("t={t},v1={},v1={good}", "0".repeat(64)),
        )],
        Some(body.as_bytes()),
    );
    assert_eq!(handled.ok()["handled"], "paid");
    let duplicate = deliver(&server, &paid, WEBHOOK_SECRET, 0);
    assert_eq!(duplicate.json()["handled"], "duplicate");

    let delivered = server
        .get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
        .json();
    assert_eq!(delivered["status"], "delivered");
    assert_eq!(delivered["delivery"]["content"], "the paid bytes");
    assert_eq!(delivered["checkoutUrl"], Value::Null);
    let receipt = server.get("/api/svcpay/receipts/cs_test_1/verify").json();
    assert_eq!(receipt["verification"]["valid"], true, "{receipt}");
    // The first paid sale in an empty vertical claims founding fill on the card rail.
    assert_eq!(delivered["feeBps"], 0);
    assert_eq!(delivered["sellerNetCents"], 2500);

    let dashboard = server.get_auth("/api/sell/dashboard", &seller.key).json();
    assert_eq!(
        dashboard["sales"]["count"], 1,
        "the duplicate event sold nothing more"
    );
    assert_eq!(dashboard["sales"]["heldCents"], 2500);

    // Escrow: at release the first transfer is refused (no available balance), the row stays
    // held, and the retry under the next idempotency key moves the money.
    fake.set(|s| s.transfer_failures = 1);
    server
        .clock
        .advance(jiff::SignedDuration::from_secs(7 * 24 * 3600 + 1));
    wait_seen(&fake, "/v1/transfers", 1);
    let held = server.get_auth("/api/sell/dashboard", &seller.key).json();
    assert_eq!(
        held["sales"]["heldCents"], 2500,
        "a refused transfer keeps the money held"
    );
    // The operator sees the payout that failed, and when it is tried again.
    let failing = wait_operator(&server, "one payout is failing", |p| {
        p["failingPayouts"].as_array().unwrap().len() == 1
    });
    let payout = &failing["failingPayouts"][0];
    assert_eq!(payout["purchaseId"], id);
    assert_eq!(payout["sellerNetCents"], 2500);
    assert_eq!(payout["refusedAttempts"], 1);
    assert_eq!(
        payout["error"],
        "Stripe refused (HTTP 400): insufficient available funds"
    );
    assert!(payout["retryAt"].is_string());
    assert_eq!(failing["rail"], "stripe");
    assert_eq!(failing["escrow"]["heldRows"], 1);
    assert_eq!(failing["escrow"]["dueRows"], 1);
    server.clock.advance(jiff::SignedDuration::from_secs(61));
    let released = wait_dashboard(&server, &seller, "the sale is released", |d| {
        d["sales"]["releasedCents"] == 2500
    });
    assert_eq!(released["sales"]["releasedCents"], 2500);
    assert_eq!(released["sales"]["heldCents"], 0);
    let settled = operator_payments(&server);
    assert_eq!(settled["failingPayouts"], json!([]));
    assert_eq!(settled["escrow"]["heldRows"], 0);
    let transfers = fake.seen("/v1/transfers");
    assert_eq!(transfers.len(), 2, "{transfers:?}");
    for (n, transfer) in transfers.iter().enumerate() {
        assert_eq!(
            transfer.idempotency_key.as_deref(),
            Some(format!("purchase:{id}:transfer:{n}").as_str())
        );
        assert_eq!(transfer.form["amount"], "2500");
        assert_eq!(transfer.form["currency"], "usd");
        assert_eq!(transfer.form["destination"], "acct_test1");
        assert_eq!(transfer.form["transfer_group"], id);
        // Tied to the buyer's charge (the PaymentIntent's latest_charge).
        assert_eq!(transfer.form["source_transaction"], "ch_test1");
    }
    // Released rows are not paid out again: a whole pass of the worker's Stripe part after
    // the clock moved on makes no transfer.
    server.clock.advance(jiff::SignedDuration::from_secs(3600));
    server.worker_pass("commerce worker's Stripe part", |w| &w.stripe);
    assert_eq!(fake.seen("/v1/transfers").len(), 2);
    server.stop();
}

#[test]
fn expired_sessions_and_failed_session_creation_free_the_reservation() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let listing = list(&server, &seller, 2500, json!({"listingType": "exclusive"}));
    let first = server.party("first");
    let second = server.party("second");

    let pending = server.buy(&first, &listing).json();
    assert_eq!(pending["status"], "pending_payment");
    server
        .buy(&second, &listing)
        .assert_error(409, "LISTING_UNAVAILABLE");
    let expired = deliver(
        &server,
        &event(
            "evt_expired",
            "checkout.session.expired",
            json!({"id": "cs_test_1", "object": "checkout.session", "payment_status": "unpaid"}),
        ),
        WEBHOOK_SECRET,
        0,
    );
    assert_eq!(expired.json()["handled"], "checkout_ended");
    let id = pending["id"].as_str().unwrap();
    assert_eq!(
        server
            .get_auth(&format!("/api/marketplace/purchases/{id}"), &first.key)
            .json()["status"],
        "expired"
    );

    // Stripe failing to open a session: 502, and nothing stays reserved.
    fake.set(|s| s.checkout_down = true);
    server
        .buy(&second, &listing)
        .assert_error(502, "STRIPE_ERROR");
    fake.set(|s| s.checkout_down = false);
    let retry = server.buy(&second, &listing).ok();
    assert_eq!(retry["status"], "pending_payment");

    // Events for objects bourse does not know, and kinds it does not handle, are acknowledged.
    let unknown = deliver(
        &server,
        &event(
            "evt_other",
            "checkout.session.completed",
            json!({"id": "cs_elsewhere", "payment_status": "paid"}),
        ),
        WEBHOOK_SECRET,
        0,
    );
    assert_eq!(unknown.json()["handled"], "unknown_object");
    let ignored = deliver(
        &server,
        &event("evt_charge", "charge.refunded", json!({"id": "ch_1"})),
        WEBHOOK_SECRET,
        0,
    );
    assert_eq!(ignored.json()["handled"], "ignored");
    // The documented example, signed, is accepted as sent.
    let document = server.get("/openapi.json").json();
    let example = &document["paths"]["/api/webhooks/stripe"]["post"]["requestBody"]["content"]["application/json"]
        ["example"];
    let documented = deliver(&server, example, WEBHOOK_SECRET, 0).ok();
    assert_eq!(documented["handled"], "unknown_object");
    // A live-mode event reaching a test-mode server (Connect endpoints get both) is ignored.
    let mut live = event(
        "evt_live",
        "checkout.session.completed",
        json!({"id": "cs_test_2", "payment_status": "paid"}),
    );
    live["livemode"] = json!(true);
    assert_eq!(
        deliver(&server, &live, WEBHOOK_SECRET, 0).json()["handled"],
        "ignored_other_mode"
    );
    server.stop();
}

#[test]
fn the_sandbox_rail_is_off_on_a_stripe_server_and_the_webhook_is_off_on_a_sandbox_one() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    assert_eq!(
        server.get("/api/meta").json()["rails"]["default"],
        "card (Stripe Checkout on this instance)"
    );
    server
        .get("/sandbox/checkout/cs_x")
        .assert_error(404, "NOT_FOUND");
    server
        .post("/api/sandbox/checkout/cs_x/pay", &json!({}))
        .assert_error(404, "NOT_FOUND");
    server
        .post("/api/sandbox/clock", &json!({"advanceSeconds": 5}))
        .assert_error(404, "NOT_FOUND");
    server.stop();

    let sandbox = TestServer::start();
    sandbox
        .post("/api/webhooks/stripe", &json!({}))
        .assert_error(404, "NOT_FOUND");
    sandbox
        .get("/sell/connect/abc")
        .assert_error(404, "NOT_FOUND");
    sandbox.stop();
}

#[test]
fn a_payment_that_races_the_expiry_is_kept_while_the_listing_is_free_else_refunded() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let exclusive = list(&server, &seller, 2500, json!({"listingType": "exclusive"}));
    let open = list(&server, &seller, 3000, json!({}));
    let late = server.party("late");
    let other = server.party("other");

    let kept = server.buy(&late, &open).json();
    let lost = server.buy(&late, &exclusive).json();
    // Both checkouts expire locally (the window is at least 35 minutes on this rail).
    server
        .clock
        .advance(jiff::SignedDuration::from_secs(35 * 60 + 1));
    let winner = server.buy(&other, &exclusive).json();
    assert_eq!(winner["status"], "pending_payment");

    let paid = |event_id: &str, session: &str, intent: &str| {
        deliver(
            &server,
            &event(
                event_id,
                "checkout.session.completed",
                json!({"id": session, "payment_status": "paid", "payment_intent": intent}),
            ),
            WEBHOOK_SECRET,
            0,
        )
        .json()["handled"]
            .clone()
    };
    assert_eq!(paid("evt_kept", "cs_test_1", "pi_kept"), "paid");
    let id = kept["id"].as_str().unwrap();
    assert_eq!(
        server
            .get_auth(&format!("/api/marketplace/purchases/{id}"), &late.key)
            .json()["status"],
        "delivered"
    );
    // The payment for the lost exclusive is owed back. Stripe first rate-limits the refund (no
    // answer saved: the same key again), then refuses it (the next key), then makes it.
    fake.set(|s| {
        s.refund_failures = vec![
            (429, json!({"error": {"message": "too many requests", "type": "rate_limit_error"}})),
            (400, json!({"error": {"message": "insufficient balance", "code": "balance_insufficient"}})),
        ]
    });
    assert_eq!(paid("evt_lost", "cs_test_2", "pi_lost"), "refund_pending");
    let id = lost["id"].as_str().unwrap();
    let read = || {
        server
            .get_auth(&format!("/api/marketplace/purchases/{id}"), &late.key)
            .json()
    };
    let purchase = read();
    assert_eq!(purchase["status"], "expired");
    assert_eq!(purchase["refund"]["status"], "pending");
    assert_eq!(purchase["refund"]["amountCents"], 2500);
    assert_eq!(purchase["refund"]["paymentRef"], "pi_lost");
    // The same event again changes nothing.
    assert_eq!(paid("evt_lost", "cs_test_2", "pi_lost"), "duplicate");
    let owed = operator_payments(&server);
    assert_eq!(
        owed["pendingRefunds"].as_array().unwrap().len(),
        1,
        "{owed}"
    );
    assert_eq!(owed["pendingRefunds"][0]["purchaseId"], id);
    assert_eq!(owed["pendingRefunds"][0]["paymentRef"], "pi_lost");
    assert_eq!(owed["pendingRefunds"][0]["amountCents"], 2500);
    assert_eq!(owed["pendingRefunds"][0]["refusedAttempts"], 0);
    assert_eq!(
        owed["pendingRefunds"][0]["error"],
        "Stripe refused (HTTP 429): too many requests"
    );
    assert_eq!(owed["refundsMade"], 0);
    // The commerce worker retries: after a minute under the same key, then two minutes later
    // under the next one.
    server.clock.advance(jiff::SignedDuration::from_secs(61));
    assert_eq!(wait_seen(&fake, "/v1/refunds", 2).len(), 2);
    // Stripe has seen the retry; the worker records its refusal (and the backoff, from the clock
    // as it is now) when that pass ends, so the clock moves on only after it.
    server.worker_pass("commerce worker's Stripe part", |w| &w.stripe);
    server.clock.advance(jiff::SignedDuration::from_secs(121));
    let refunds = wait_seen(&fake, "/v1/refunds", 3);
    let keys: Vec<_> = refunds
        .iter()
        .map(|r| r.idempotency_key.clone().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "payment:pi_lost:refund:0",
            "payment:pi_lost:refund:0",
            "payment:pi_lost:refund:1"
        ]
    );
    assert!(
        refunds
            .iter()
            .all(|r| r.form["payment_intent"] == "pi_lost")
    );
    let purchase = wait_until("the refund is made", WAIT, || {
        let purchase = read();
        if purchase["refund"]["status"] == "refunded" {
            Ok(purchase)
        } else {
            Err(purchase)
        }
    });
    assert_eq!(purchase["refund"]["status"], "refunded");
    assert_eq!(purchase["refund"]["refundRef"], "re_test1");
    assert_eq!(purchase["status"], "expired");
    let settled = operator_payments(&server);
    assert_eq!(settled["pendingRefunds"], json!([]));
    assert_eq!(settled["refundsMade"], 1);
    server.stop();
}

#[test]
fn serve_refuses_incomplete_payment_settings() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    for (args, says) in [
        (
            vec!["--payments", "stripe"],
            "--payments stripe needs --stripe-secret-key",
        ),
        (
            vec!["--payments", "stripe", "--stripe-secret-key", "sk_test_123"],
            "--stripe-webhook-secret",
        ),
        (
            vec!["--stripe-secret-key", "sk_test_123"],
            "need --payments stripe",
        ),
        (
            vec![
                "--x402-pay-to",
                "0x0000000000000000000000000000000000000001",
            ],
            "--x402-facilitator-url",
        ),
    ] {
        let output = crate::support::bourse()
            .args(["serve", "--listen", "127.0.0.1:0", "--data", data])
            .args(&args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_payment_confirmed_before_the_session_id_is_stored_is_matched_by_its_purchase_id() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let listing = list(&server, &seller, 2500, json!({}));
    let buyer = server.party("buyer");
    let (release_checkout, gate) = std::sync::mpsc::channel();
    fake.set(|s| s.checkout_gate = Some(gate));
    let buying = {
        let client = crate::support::Client::new(&server.base);
        let key = buyer.key.clone();
        let path = format!("/api/marketplace/listings/{listing}/purchase");
        std::thread::spawn(move || client.send_auth("POST", &path, &key, &json!({})))
    };
    let purchase_id =
        wait_seen(&fake, "/v1/checkout/sessions", 1)[0].form["client_reference_id"].clone();
    // Stripe confirms the payment while bourse still waits for the session's answer.
    let early = deliver(
        &server,
        &event(
            "evt_early",
            "checkout.session.completed",
            json!({"id": "cs_test_1", "payment_status": "paid", "payment_intent": "pi_early", "client_reference_id": purchase_id}),
        ),
        WEBHOOK_SECRET,
        0,
    );
    assert_eq!(early.json()["handled"], "paid");
    // Only now does Stripe answer the session creation.
    release_checkout.send(()).unwrap();
    buying.join().unwrap().assert_status(200);
    let read = server
        .get_auth(
            &format!("/api/marketplace/purchases/{purchase_id}"),
            &buyer.key,
        )
        .json();
    assert_eq!(read["status"], "delivered");
    server.stop();
}

#[test]
fn prices_stripe_cannot_charge_and_malformed_emails_are_refused_before_anything_is_reserved() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let cheap = list(&server, &seller, 49, json!({}));
    let fine = list(&server, &seller, 50, json!({"listingType": "exclusive"}));
    let buyer = server.party("buyer");
    server
        .buy(&buyer, &cheap)
        .assert_error(422, "PRICE_OUT_OF_RANGE_FOR_RAIL");
    server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{fine}/purchase"),
            &buyer.key,
            &json!({"email": "not an address"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    assert!(fake.seen("/v1/checkout/sessions").is_empty());
    let bought = server.buy(&buyer, &fine);
    assert_eq!(
        bought.json()["status"],
        "pending_payment",
        "nothing was reserved before"
    );
    server.stop();
}

#[test]
fn a_transfer_keeps_its_parameters_under_a_key_and_goes_without_the_charge_when_it_cannot_be_read()
{
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let (seller, _twin) = stripe_seller(&server, &fake);
    let listing = list(&server, &seller, 2500, json!({}));
    let buyer = server.party("buyer");
    let id = server.buy(&buyer, &listing).json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let paid = event(
        "evt_paid",
        "checkout.session.completed",
        json!({"id": "cs_test_1", "payment_status": "paid", "payment_intent": "pi_test9", "client_reference_id": id}),
    );
    assert_eq!(
        deliver(&server, &paid, WEBHOOK_SECRET, 0).json()["handled"],
        "paid"
    );
    let path = format!("/api/marketplace/purchases/{id}");
    assert_eq!(
        server.get_auth(&path, &buyer.key).json()["status"],
        "delivered"
    );

    // The key may not read PaymentIntents: the transfer goes without source_transaction. Stripe
    // first answers with an idempotency error (this key was used with other parameters): the
    // first request under it may have moved money, so the key is kept, never moved on.
    fake.set(|s| {
        s.intents_forbidden = true;
        s.transfer_answers = vec![(
            400,
            json!({"error": {"type": "idempotency_error", "message": "Keys for idempotent requests can only be used with the same parameters they were first used with."}}),
        )];
    });
    server
        .clock
        .advance(jiff::SignedDuration::from_secs(7 * 24 * 3600 + 1));
    let stuck = wait_operator(&server, "the payout is failing", |p| {
        p["failingPayouts"].as_array().unwrap().len() == 1
    });
    let payout = &stuck["failingPayouts"][0];
    assert_eq!(payout["refusedAttempts"], 0, "{payout}");
    assert!(
        payout["error"]
            .as_str()
            .unwrap()
            .contains("same parameters"),
        "{payout}"
    );
    // Retried an hour later, under the same key and with the same parameters.
    fake.set(|s| s.intents_forbidden = false);
    server.clock.advance(jiff::SignedDuration::from_secs(3601));
    let released = wait_dashboard(&server, &seller, "the sale is released", |d| {
        d["sales"]["releasedCents"] == 2500
    });
    assert_eq!(released["sales"]["heldCents"], 0);
    let transfers = fake.seen("/v1/transfers");
    assert_eq!(transfers.len(), 2, "{transfers:?}");
    for transfer in &transfers {
        assert_eq!(
            transfer.idempotency_key.as_deref(),
            Some(format!("purchase:{id}:transfer:0").as_str())
        );
        assert!(
            !transfer.form.contains_key("source_transaction"),
            "the choice made before the first request is kept: {transfer:?}"
        );
    }
    assert_eq!(fake.seen("/v1/payment_intents").len(), 1, "read once");
    server.stop();
}

#[test]
fn become_seller_details_start_the_stripe_onboarding_form() {
    let fake = FakeStripe::start();
    let server = stripe_server(&fake);
    let seller = server.party("seller");
    let body = json!({"name": "Tide Data Co", "email": "payouts@tide.example"});
    let first = server
        .send_auth("POST", "/api/sell/register", &seller.key, &body)
        .ok();
    assert_eq!(first["accountId"], "acct_test1");
    let id = agent_id(&server, &seller);
    let sent = fake.seen("/v1/accounts");
    let created: Vec<_> = sent.iter().filter(|s| s.path == "/v1/accounts").collect();
    assert_eq!(created.len(), 1);
    // The account is created with the same parameters under the same key as without details,
    // so a retry after a lost answer finds the same account.
    assert_eq!(
        created[0].idempotency_key.as_deref(),
        Some(format!("agent:{id}:account").as_str())
    );
    assert!(!created[0].form.contains_key("email"));
    let prefilled: Vec<_> = sent
        .iter()
        .filter(|s| s.method == "POST" && s.path == "/v1/accounts/acct_test1")
        .collect();
    assert_eq!(prefilled.len(), 1, "{sent:?}");
    assert_eq!(prefilled[0].form["email"], "payouts@tide.example");
    assert_eq!(prefilled[0].form["business_profile[name]"], "Tide Data Co");
    assert!(
        prefilled[0]
            .idempotency_key
            .as_deref()
            .is_some_and(|key| key.starts_with(&format!("agent:{id}:account:prefill:")))
    );
    // Asking again reuses the account and sends nothing more to it.
    server
        .send_auth("POST", "/api/sell/register", &seller.key, &body)
        .ok();
    assert_eq!(
        fake.seen("/v1/accounts")
            .iter()
            .filter(|s| s.method == "POST")
            .count(),
        2
    );
    // Unknown fields are refused, named.
    server
        .send_auth(
            "POST",
            "/api/sell/register",
            &seller.key,
            &json!({"nmae": "x"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    // Every call pins the API version whose shapes bourse parses.
    for seen in fake.seen("/v1/") {
        assert_eq!(
            seen.stripe_version.as_deref(),
            Some("2023-08-16"),
            "{seen:?}"
        );
    }
}
