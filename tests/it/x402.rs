//! The `x402_usdc_base` rail against an in-process fake facilitator: the 402 challenge (v2
//! header, v1 body), v2 and v1 retries, refused and failed payments, anonymous buyers and their
//! purchase token, fees (never founding fill) and the ledger rail.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bourse::config::X402Settings;
use serde_json::{Value, json};

use crate::seller_twin::SellerTwin;
use crate::support::{Party, Resp, TestServer, WAIT, wait_until};

const PAY_TO: &str = "0x1111111111111111111111111111111111111111";
const USDC_BASE: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PAYER: &str = "0x2222222222222222222222222222222222222222";

/// A scripted facilitator: answers `/verify` and `/settle` with the scripted status and JSON
/// (or text), and records every request as `(path, body)`.
struct Facilitator {
    url: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    script: Arc<Mutex<Script>>,
}

#[derive(Clone)]
struct Script {
    verify: (u16, String),
    settle: (u16, String),
}

impl Facilitator {
    fn start() -> Facilitator {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(Script {
            verify: (200, json!({"isValid": true, "payer": PAYER}).to_string()),
            settle: (
                200,
                json!({"success": true, "transaction": "0xfeed01", "network": "eip155:8453", "payer": PAYER})
                    .to_string(),
            ),
        }));
        let (seen, scripted) = (requests.clone(), script.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .to_owned();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if path == "/supported" {
                    // Asked once when the server starts; not one of the recorded payment calls.
                    let kinds = json!({"kinds": [
                        {"x402Version": 2, "scheme": "exact", "network": "eip155:8453"},
                        {"x402Version": 1, "scheme": "exact", "network": "base"},
                        {"x402Version": 2, "scheme": "exact", "network": "eip155:84532"},
                    ]})
                    .to_string();
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{kinds}",
                        kinds.len()
                    );
                    let _ = stream.write_all(reply.as_bytes());
                    continue;
                }
                seen.lock().unwrap().push((path.clone(), body));
                let script = scripted.lock().unwrap().clone();
                let (status, answer) = if path.ends_with("/settle") {
                    script.settle
                } else {
                    script.verify
                };
                // `{n}` in an answer becomes the request's number (unique transactions).
                let answer = answer.replace("{n}", &seen.lock().unwrap().len().to_string());
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        Facilitator {
            url,
            requests,
            script,
        }
    }

    fn verify(&self, status: u16, answer: Value) {
        self.script.lock().unwrap().verify = (status, answer.to_string());
    }

    fn settle(&self, status: u16, answer: Value) {
        self.script.lock().unwrap().settle = (status, answer.to_string());
    }

    fn settle_text(&self, status: u16, text: &str) {
        self.script.lock().unwrap().settle = (status, text.to_owned());
    }

    fn verify_text(&self, status: u16, text: &str) {
        self.script.lock().unwrap().verify = (status, text.to_owned());
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }

    fn paths(&self) -> Vec<String> {
        self.requests().into_iter().map(|(p, _)| p).collect()
    }
}

/// A server with x402 configured against `facilitator`.
fn server_with(facilitator: &Facilitator) -> TestServer {
    let url = facilitator.url.clone();
    TestServer::start_with(move |config| {
        config.x402 = Some(X402Settings {
            pay_to: PAY_TO.into(),
            facilitator_url: url,
            network: "eip155:8453".into(),
        });
    })
}

/// What the x402 tests start from: a server whose x402 rail pays through its own scripted
/// facilitator, and a seller whose endpoint (an honest twin) delivers `deliverable`. Returns
/// `(facilitator, server, seller, twin)`; keep the twin for as long as the seller sells.
fn x402_market(deliverable: &[u8]) -> (Facilitator, TestServer, Party, SellerTwin) {
    let facilitator = Facilitator::start();
    let server = server_with(&facilitator);
    let (seller, twin) = server.seller("seller", deliverable);
    (facilitator, server, seller, twin)
}

/// An exclusive $25 trucking listing of `seller`: one buyer only.
fn exclusive_listing(server: &TestServer, seller: &Party) -> String {
    list(
        server,
        seller,
        2_500,
        "trucking",
        json!({"listingType": "exclusive"}),
    )
}

/// The v2 payment requirements a listing's 402 challenge accepts (its first `accepts`).
fn what_the_challenge_accepts(server: &TestServer, listing: &str) -> Value {
    required(&attempt(server, listing, &[]))["accepts"][0].clone()
}

fn list(server: &TestServer, seller: &Party, price: i64, vertical: &str, extra: Value) -> String {
    let base = json!({"title": "Port congestion", "description": "Daily berth waits.", "priceCents": price, "verticalSlug": vertical, "consent": true});
    server.create_listing(seller, base, extra)
}

fn purchase_path(listing: &str) -> String {
    format!("/api/marketplace/listings/{listing}/purchase")
}

fn b64(value: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(value.to_string())
}

fn unb64(text: &str) -> Value {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("not base64 ({e}): {text}"));
    serde_json::from_slice(&bytes).unwrap()
}

/// An anonymous purchase attempt with optional extra headers.
fn attempt(server: &TestServer, listing: &str, headers: &[(&str, &str)]) -> Resp {
    server.request("POST", &purchase_path(listing), headers, Some(b"{}"))
}

/// The decoded v2 `PAYMENT-REQUIRED` header of a 402.
fn required(resp: &Resp) -> Value {
    resp.assert_status(402);
    unb64(resp.header("payment-required").expect("PAYMENT-REQUIRED"))
}

fn authorization() -> Value {
    json!({
        "signature": format!("0x{}", "ab".repeat(65)),
        "authorization": {
            "from": PAYER, "to": PAY_TO, "value": "250000",
            "validAfter": "0", "validBefore": "9999999999",
            "nonce": format!("0x{}", "cd".repeat(32)),
        }
    })
}

/// A v2 `PAYMENT-SIGNATURE` value accepting `accepted`.
fn v2_payment(accepted: &Value) -> String {
    b64(&json!({
        "x402Version": 2,
        "accepted": accepted,
        "payload": authorization(),
    }))
}

#[test]
fn x402_challenge_has_the_v2_header_and_the_v1_body() {
    let (facilitator, server, seller, _twin) = x402_market(b"berths");
    let listing = list(&server, &seller, 2_500, "trucking", json!({}));
    let challenge = attempt(&server, &listing, &[]);
    let header = required(&challenge);
    let resource = format!("{}{}", server.base, purchase_path(&listing));
    assert_eq!(header["x402Version"], 2);
    assert!(header["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(
        header["resource"],
        json!({"url": resource, "description": "Port congestion", "mimeType": "application/json",
            "serviceName": "Port congestion", "tags": ["trucking", "services"]})
    );
    assert_eq!(
        header["accepts"],
        json!([{
            "scheme": "exact", "network": "eip155:8453", "amount": "25000000", "asset": USDC_BASE,
            "payTo": PAY_TO, "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"},
        }])
    );
    let body = challenge.json();
    assert_eq!(body["x402Version"], 1);
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(
        body["accepts"],
        json!([{
            "scheme": "exact", "network": "base", "maxAmountRequired": "25000000", "asset": USDC_BASE,
            "payTo": PAY_TO, "resource": resource, "description": "Port congestion",
            "mimeType": "application/json", "maxTimeoutSeconds": 300,
            "extra": {"name": "USD Coin", "version": "2"},
        }])
    );
    assert!(
        facilitator.requests().is_empty(),
        "a challenge calls nobody"
    );

    // A keyed buyer asking for the rail gets the same challenge; without it, the checkout.
    let buyer = server.party("buyer");
    let keyed = server.send_auth(
        "POST",
        &purchase_path(&listing),
        &buyer.key,
        &json!({"rail": "x402_usdc_base"}),
    );
    assert_eq!(required(&keyed)["accepts"], header["accepts"]);
    server
        .send_auth(
            "POST",
            &purchase_path(&listing),
            &buyer.key,
            &json!({"rail": "bitcoin"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    let explicit = server.send_auth(
        "POST",
        &purchase_path(&listing),
        &buyer.key,
        &json!({"rail": "checkout"}),
    );
    assert_eq!(explicit.ok()["status"], "pending_payment");

    // Free listings still need a key; /api/meta names the rail.
    let free = list(&server, &seller, 0, "trucking", json!({}));
    attempt(&server, &free, &[]).assert_error(401, "UNAUTHENTICATED");
    let meta = server.get("/api/meta").json();
    assert_eq!(meta["rails"]["x402"]["configured"], true);
    assert_eq!(meta["rails"]["x402"]["network"], "eip155:8453");
    assert_eq!(meta["rails"]["x402"]["payTo"], PAY_TO);
}

#[test]
fn x402_v2_payment_settles_delivers_and_the_anonymous_buyer_polls_with_its_token() {
    let marker = "BERTH-WAITS-x402-delivered";
    let (facilitator, server, seller, _twin) = x402_market(marker.as_bytes());
    // The first paid sale of a fresh vertical: founding fill on an identified rail, never here.
    let listing = list(&server, &seller, 2_500, "trucking", json!({}));
    let accepted = what_the_challenge_accepts(&server, &listing);
    let payment = v2_payment(&accepted);
    let sold = attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)]);
    let purchase = sold.ok();
    let settlement = unb64(sold.header("payment-response").expect("PAYMENT-RESPONSE"));
    assert_eq!(
        settlement,
        json!({"success": true, "transaction": "0xfeed01", "network": "eip155:8453", "payer": PAYER})
    );
    assert!(
        purchase.get("provenance").is_none(),
        "a purchase answers its buyer alone"
    );
    assert_eq!(purchase["status"], "delivered");
    assert_eq!(purchase["rail"], "x402_usdc_base");
    assert_eq!(purchase["buyerHandle"], Value::Null);
    assert_eq!(purchase["delivery"]["content"], marker);
    assert_eq!(purchase["amountCents"], 2_500);
    assert_eq!(purchase["feeBps"], 500, "x402 never claims founding fill");
    assert_eq!(purchase["platformFeeCents"], 125);
    assert_eq!(purchase["payment"]["transaction"], "0xfeed01");
    assert_eq!(purchase["payment"]["payer"], PAYER);
    let token = purchase["purchaseToken"].as_str().unwrap().to_owned();
    assert!(token.starts_with("x402_") && token.len() > 30, "{token}");

    // The facilitator saw verify then settle, with our requirements and the buyer's payload.
    let requests = facilitator.requests();
    assert_eq!(facilitator.paths(), ["/verify", "/settle"]);
    for (_, body) in &requests {
        assert_eq!(body["x402Version"], 2);
        assert_eq!(body["paymentRequirements"], accepted);
        assert_eq!(body["paymentPayload"], unb64(&payment));
    }

    // Ledger rail `wallet`, shown on the demand ledger and the seller's dashboard.
    let demand = server.get("/api/proof/demand").json();
    let row = demand["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["amountCents"] == 2_500)
        .unwrap()
        .clone();
    assert_eq!(row["rail"], "wallet");
    assert_eq!(row["platformFeeCents"], 125);
    assert_eq!(row["status"], "held");
    let dashboard = server.get_auth("/api/sell/dashboard", &seller.key).json();
    assert!(dashboard.to_string().contains("2500"), "{dashboard}");

    // The anonymous buyer polls with its token (query or header); others cannot.
    let id = purchase["id"].as_str().unwrap();
    let path = format!("/api/marketplace/purchases/{id}");
    let polled = server.get(&format!("{path}?purchase_token={token}")).ok();
    assert_eq!(polled["status"], "delivered");
    assert_eq!(polled["delivery"]["content"], marker);
    let by_header = server.request("GET", &path, &[("X-Purchase-Token", &token)], None);
    assert_eq!(by_header.ok()["id"], id);
    server
        .get(&format!("{path}?purchase_token=x402_wrong"))
        .assert_error(403, "NOT_BUYER");
    server.get(&path).assert_error(401, "UNAUTHENTICATED");
    let stranger = server.party("stranger");
    server
        .get_auth(&path, &stranger.key)
        .assert_error(403, "NOT_BUYER");
    let verified = server
        .get(&format!("/api/svcpay/receipts/{token}/verify"))
        .ok();
    assert_eq!(verified["purchaseId"], id);
    assert_eq!(verified["paid"], true);
    assert_eq!(verified["verification"]["valid"], true);

    // Control: on the identified checkout rail the first paid sale of a fresh vertical claims
    // founding fill; in the vertical the x402 sale opened, the next sale pays the standard fee.
    let buyer = server.party("buyer");
    let pay_by_checkout = |listing: &str| server.buy_and_receive(&buyer, listing);
    let fresh = list(&server, &seller, 2_500, "music", json!({}));
    assert_eq!(
        pay_by_checkout(&fresh)["feeBps"],
        0,
        "founding fill on an identified rail"
    );
    let after = list(&server, &seller, 2_500, "trucking", json!({}));
    assert_eq!(
        pay_by_checkout(&after)["feeBps"],
        500,
        "the x402 sale counted as commerce"
    );

    // The same transaction cannot buy a second listing.
    let other = exclusive_listing(&server, &seller);
    let accepted = what_the_challenge_accepts(&server, &other);
    attempt(
        &server,
        &other,
        &[("PAYMENT-SIGNATURE", &v2_payment(&accepted))],
    )
    .assert_error(409, "PAYMENT_ALREADY_USED");
    let detail = server
        .get(&format!("/api/marketplace/listings/{other}"))
        .json();
    assert_eq!(detail["listing"]["active"], true, "{detail}");
    assert_eq!(
        attempt(&server, &other, &[]).status,
        402,
        "the exclusive listing is free again"
    );

    // At escrow release the wallet row is released in place: the USDC went to the operator's
    // wallet, so the operator's payments view lists what the seller is owed.
    let operator = server.operator_key();
    server
        .send_auth(
            "POST",
            "/api/sandbox/clock",
            &operator,
            &json!({"advanceSeconds": 8 * 24 * 3600}),
        )
        .assert_status(200);
    // (The start-up check runs beside the server: wait for its answer.)
    let view = wait_until("the facilitator's answer is shown", WAIT, || {
        let view = server.get_auth("/api/operator/payments", &operator).ok();
        if view["x402Facilitator"].is_null() {
            Err(view)
        } else {
            Ok(view)
        }
    });
    assert_eq!(view["x402Configured"], true);
    // The facilitator was asked at start which kinds it supports: this network, v1 and v2.
    assert_eq!(view["x402Facilitator"]["versions"], json!([1, 2]), "{view}");
    assert_eq!(view["x402Facilitator"]["error"], Value::Null);
    assert_eq!(
        view["walletReleased"],
        json!([{"sellerHandle": seller.handle, "sales": 1, "sellerNetCents": 2_375}])
    );
    assert_eq!(view["escrow"]["heldRows"], 0);
}

#[test]
fn x402_v1_payment_answers_x_payment_response() {
    let (facilitator, server, seller, _twin) = x402_market(b"v1 bytes");
    let listing = list(&server, &seller, 3_000, "trucking", json!({}));
    let offered = attempt(&server, &listing, &[]).json()["accepts"][0].clone();
    facilitator.settle(
        200,
        json!({"success": true, "transaction": "0xbeef02", "network": "base", "payer": PAYER}),
    );
    let payment = b64(&json!({
        "x402Version": 1, "scheme": "exact", "network": "base", "payload": authorization(),
    }));
    let sold = attempt(&server, &listing, &[("X-PAYMENT", &payment)]);
    let purchase = sold.ok();
    assert!(sold.header("payment-response").is_none());
    let settlement = unb64(
        sold.header("x-payment-response")
            .expect("X-PAYMENT-RESPONSE"),
    );
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["transaction"], "0xbeef02");
    assert_eq!(settlement["network"], "base");
    assert_eq!(purchase["delivery"]["content"], "v1 bytes");
    for (_, body) in facilitator.requests() {
        assert_eq!(body["x402Version"], 1);
        assert_eq!(body["paymentRequirements"], offered);
        assert_eq!(body["paymentRequirements"]["maxAmountRequired"], "30000000");
    }

    // A keyed x402 buyer keeps its identity and reads with its key as usual.
    let buyer = server.party("buyer");
    facilitator.settle(
        200,
        json!({"success": true, "transaction": "0xbeef03", "network": "base", "payer": PAYER}),
    );
    let keyed = server.request(
        "POST",
        &purchase_path(&listing),
        &[
            ("authorization", &format!("Bearer {}", buyer.key)),
            ("X-PAYMENT", &payment),
        ],
        Some(json!({"rail": "x402_usdc_base"}).to_string().as_bytes()),
    );
    let bought = keyed.ok();
    assert_eq!(bought["buyerHandle"], buyer.handle);
    let id = bought["id"].as_str().unwrap();
    let read = server.get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key);
    assert_eq!(read.ok()["delivery"]["content"], "v1 bytes");
}

#[test]
fn x402_refused_and_failed_payments_sell_nothing() {
    let (facilitator, server, seller, _twin) = x402_market(b"exclusive bytes");
    let listing = exclusive_listing(&server, &seller);
    let accepted = what_the_challenge_accepts(&server, &listing);
    let payment = v2_payment(&accepted);
    let detail_path = format!("/api/marketplace/listings/{listing}");

    // Verify says no (even as a non-2xx): 402 with the reason, no settle, nothing sold.
    facilitator.verify(
        400,
        json!({"isValid": false, "invalidReason": "insufficient_funds", "payer": PAYER}),
    );
    let refused = attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)]);
    let header = required(&refused);
    assert!(
        header["error"]
            .as_str()
            .unwrap()
            .contains("insufficient_funds"),
        "{header}"
    );
    assert_eq!(facilitator.paths(), ["/verify"]);
    let detail = server.get(&detail_path).json();
    assert_eq!(detail["listing"]["active"], true);
    assert_eq!(detail["listing"]["purchaseCount"], 0, "{detail}");

    // Settle fails: 402 with PAYMENT-RESPONSE success false; the reservation is freed.
    facilitator.verify(200, json!({"isValid": true}));
    facilitator.settle(
        200,
        json!({"success": false, "errorReason": "invalid_transaction_state", "transaction": "", "network": "eip155:8453"}),
    );
    let failed = attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)]);
    required(&failed);
    let settlement = unb64(failed.header("payment-response").expect("PAYMENT-RESPONSE"));
    assert_eq!(
        settlement,
        json!({"success": false, "errorReason": "invalid_transaction_state", "network": "eip155:8453", "transaction": ""})
    );
    assert_eq!(server.get(&detail_path).json()["listing"]["active"], true);

    // A settlement whose outcome is unknown is 502, and the reservation is kept (the money may
    // have moved) until it expires.
    facilitator.settle_text(503, "down");
    attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)])
        .assert_error(502, "FACILITATOR_UNAVAILABLE");
    attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)])
        .assert_error(409, "LISTING_UNAVAILABLE");
    server.clock.advance(jiff::SignedDuration::from_secs(361));
    // A verify that cannot be answered is 502; nothing is reserved.
    facilitator.verify_text(500, "<html>oops</html>");
    attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)])
        .assert_error(502, "FACILITATOR_UNAVAILABLE");

    // The exclusive listing is free again: the next good payment buys it.
    facilitator.verify(200, json!({"isValid": true}));
    facilitator.settle(
        200,
        json!({"success": true, "transaction": "0xfeed03", "network": "eip155:8453"}),
    );
    let sold = attempt(&server, &listing, &[("PAYMENT-SIGNATURE", &payment)]).ok();
    assert_eq!(sold["status"], "delivered");
    assert_eq!(
        sold["payment"]["payer"], PAYER,
        "payer from the authorization"
    );
    attempt(&server, &listing, &[]).assert_error(409, "LISTING_UNAVAILABLE");
}

#[test]
fn x402_malformed_and_mismatched_payments() {
    let (facilitator, server, seller, _twin) = x402_market(b"bytes");
    let listing = list(&server, &seller, 2_500, "trucking", json!({}));
    let accepted = what_the_challenge_accepts(&server, &listing);
    let not_json = base64::engine::general_purpose::STANDARD.encode("not json");
    let v1_in_v2 =
        b64(&json!({"x402Version": 1, "scheme": "exact", "network": "base", "payload": {}}));
    for (name, value) in [
        ("PAYMENT-SIGNATURE", "%%% not base64 %%%"),
        ("PAYMENT-SIGNATURE", not_json.as_str()),
        ("PAYMENT-SIGNATURE", v1_in_v2.as_str()),
        ("X-PAYMENT", v2_payment(&accepted).as_str()),
    ] {
        attempt(&server, &listing, &[(name, value)]).assert_error(400, "INVALID_PAYMENT");
    }
    let mut cheaper = accepted.clone();
    cheaper["amount"] = "1".into();
    let mismatched = attempt(
        &server,
        &listing,
        &[("PAYMENT-SIGNATURE", &v2_payment(&cheaper))],
    );
    let header = required(&mismatched);
    assert!(
        header["error"].as_str().unwrap().contains("amount"),
        "{header}"
    );
    let mut elsewhere = accepted.clone();
    elsewhere["payTo"] = "0x3333333333333333333333333333333333333333".into();
    required(&attempt(
        &server,
        &listing,
        &[("PAYMENT-SIGNATURE", &v2_payment(&elsewhere))],
    ));
    assert!(
        facilitator.requests().is_empty(),
        "nothing reaches the facilitator"
    );
}

#[test]
fn without_x402_configured_purchases_need_a_key_and_the_rail_is_unavailable() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"bytes");
    let buyer = server.party("buyer");
    let listing = list(&server, &seller, 2_500, "trucking", json!({}));
    attempt(&server, &listing, &[]).assert_error(401, "UNAUTHENTICATED");
    server
        .send_auth(
            "POST",
            &purchase_path(&listing),
            &buyer.key,
            &json!({"rail": "x402_usdc_base"}),
        )
        .assert_error(409, "RAIL_UNAVAILABLE");
    attempt(&server, &listing, &[("PAYMENT-SIGNATURE", "e30=")])
        .assert_error(409, "RAIL_UNAVAILABLE");
    assert_eq!(
        server.get("/api/meta").json()["rails"]["x402"]["configured"],
        false
    );
}

#[test]
fn x402_concurrent_anonymous_buyers_of_an_exclusive_listing_one_wins() {
    let (facilitator, server, seller, _twin) = x402_market(b"only once");
    let listing = exclusive_listing(&server, &seller);
    let accepted = what_the_challenge_accepts(&server, &listing);
    facilitator.settle(
        200,
        json!({"success": true, "transaction": "0xtx{n}", "network": "eip155:8453"}),
    );
    let payment = v2_payment(&accepted);
    let threads: Vec<_> = (0..5)
        .map(|_| {
            let (base, path, payment) = (
                server.base.clone(),
                purchase_path(&listing),
                payment.clone(),
            );
            std::thread::spawn(move || {
                crate::support::Client::new(&base)
                    .request(
                        "POST",
                        &path,
                        &[("PAYMENT-SIGNATURE", &payment)],
                        Some(b"{}"),
                    )
                    .status
            })
        })
        .collect();
    let mut statuses: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409, 409, 409, 409]);
    let settles = facilitator
        .paths()
        .iter()
        .filter(|p| p.as_str() == "/settle")
        .count();
    assert_eq!(
        settles, 1,
        "money moves only for the buyer holding the reservation"
    );
}

#[path = "x402_a2a.rs"]
mod a2a;

#[test]
fn x402_a_keyed_buyers_spending_policy_refuses_before_settlement_and_nothing_is_charged() {
    let (facilitator, server, seller, _twin) = x402_market(b"berth waits");
    let buyer = server.party("capped-buyer");
    let listing = list(&server, &seller, 2_500, "trucking", json!({}));
    let accepted = what_the_challenge_accepts(&server, &listing);
    let bearer = format!("Bearer {}", buyer.key);
    let policy = |body: Value| {
        server
            .send_auth("PUT", "/api/agents/me/spending-policy", &buyer.key, &body)
            .assert_status(200);
    };
    let pay = || {
        let payment = v2_payment(&accepted);
        attempt(
            &server,
            &listing,
            &[("authorization", &bearer), ("PAYMENT-SIGNATURE", &payment)],
        )
    };
    policy(json!({"rails": ["checkout"]}));
    pay().assert_error(403, "RAIL_NOT_ALLOWED");
    policy(json!({"dailyCents": 2_000}));
    let refused = pay();
    refused.assert_error(403, "SPEND_LIMIT_EXCEEDED");
    assert_eq!(refused.json()["error"]["limit"]["name"], "daily");
    assert_eq!(refused.json()["error"]["limit"]["requestedCents"], 2_500);
    assert!(
        !facilitator.paths().iter().any(|path| path == "/settle"),
        "nothing is settled: {:?}",
        facilitator.paths()
    );
    // Within the cap the x402 price counts at its cents value.
    policy(json!({"dailyCents": 2_500, "rails": ["x402_usdc_base"]}));
    assert_eq!(pay().ok()["status"], "delivered");
    let spent = server.get_auth("/api/agents/me/spending", &buyer.key).ok();
    assert_eq!(spent["daily"]["spentCents"], 2_500);
    assert_eq!(spent["daily"]["leftCents"], 0);
}

#[test]
fn x402_fifty_concurrent_purchases_against_a_cap_that_allows_ten_settle_exactly_ten() {
    let (facilitator, server, seller, _twin) = x402_market(b"rates");
    let buyer = server.party("capped-buyer");
    let listing = list(&server, &seller, 100, "trucking", json!({}));
    let accepted = what_the_challenge_accepts(&server, &listing);
    // Every settlement answers a transaction of its own: a reused one is refused as such.
    facilitator.settle(
        200,
        json!({"success": true, "transaction": "0xtx{n}", "network": "eip155:8453", "payer": PAYER}),
    );
    server
        .send_auth(
            "PUT",
            "/api/agents/me/spending-policy",
            &buyer.key,
            &json!({"dailyCents": 1_000}),
        )
        .assert_status(200);
    let (base, path) = (server.base.clone(), purchase_path(&listing));
    let (bearer, payment) = (format!("Bearer {}", buyer.key), v2_payment(&accepted));
    let answers = crate::support::all_at_once("fifty x402 purchases", 50, WAIT * 6, move |_| {
        let response = crate::support::Client::new(&base).request(
            "POST",
            &path,
            &[("authorization", &bearer), ("PAYMENT-SIGNATURE", &payment)],
            Some(b"{}"),
        );
        (response.status, response.json())
    });
    let mut transactions: Vec<&str> = answers
        .iter()
        .filter(|(status, _)| *status == 200)
        .filter_map(|(_, body)| body["payment"]["transaction"].as_str())
        .collect();
    let capped = answers
        .iter()
        .filter(|(status, body)| *status == 403 && body["error"]["code"] == "SPEND_LIMIT_EXCEEDED")
        .count();
    assert_eq!((transactions.len(), capped), (10, 40), "{answers:?}");
    transactions.sort_unstable();
    transactions.dedup();
    assert_eq!(
        transactions.len(),
        10,
        "one transaction each: {transactions:?}"
    );
    // Money moved for the ten only: nothing was settled for a refused purchase.
    let settled: Vec<String> = facilitator
        .requests()
        .into_iter()
        .filter(|(path, _)| path == "/settle")
        .map(|(_, body)| body.to_string())
        .collect();
    assert_eq!(settled.len(), 10, "{settled:?}");
    let spent = server.get_auth("/api/agents/me/spending", &buyer.key).ok();
    assert_eq!(spent["daily"]["spentCents"], 1_000);
    assert_eq!(spent["daily"]["leftCents"], 0);
}
