//! A local fake Stripe (no network) and what the Stripe-rail tests share: a server configured
//! against it, events signed as Stripe signs them, and a seller onboarded through Connect Express.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bourse::clock::Clock;
use bourse::config::{Payments, StripeSettings};
use bourse::http::router::percent_decode_with;
use bourse::service::commerce::rails::stripe::{hex, hmac_sha256};
use serde_json::{Value, json};

use super::{Party, Resp, TestServer, WAIT, wait_until};
use crate::seller_twin::{Mode, SellerTwin};

pub const WEBHOOK_SECRET: &str = "whsec_local_test_secret";

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    pub authorization: Option<String>,
    pub stripe_version: Option<String>,
    pub form: HashMap<String, String>,
}

#[derive(Default)]
pub struct State {
    pub seen: Vec<Seen>,
    pub payouts_enabled: bool,
    pub transfer_failures: usize,
    /// Answers to the next refund requests, before they succeed.
    pub refund_failures: Vec<(u16, Value)>,
    /// Answers to the next transfer requests, before the usual ones.
    pub transfer_answers: Vec<(u16, Value)>,
    /// The key cannot read PaymentIntents (a restricted key without that permission).
    pub intents_forbidden: bool,
    pub checkout_down: bool,
    /// Stripe answering a session creation late: the answer waits until the test sends on
    /// (or drops) the other end of this channel.
    pub checkout_gate: Option<std::sync::mpsc::Receiver<()>>,
    pub sessions: usize,
    /// Idempotency: the first answer to a key is replayed, as Stripe does.
    pub answered: HashMap<String, (u16, Value)>,
}

/// A fake Stripe API on 127.0.0.1: answers the calls bourse makes and records them.
pub struct FakeStripe {
    pub url: String,
    pub state: Arc<Mutex<State>>,
}

impl FakeStripe {
    pub fn start() -> FakeStripe {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let state = shared.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or_default().to_owned();
                    let path = parts.next().unwrap_or_default().to_owned();
                    let mut headers = HashMap::new();
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = header.split_once(':') {
                            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                        }
                    }
                    let length: usize = headers
                        .get("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let form = String::from_utf8_lossy(&body)
                        .split('&')
                        .filter_map(|pair| pair.split_once('='))
                        .map(|(k, v)| (percent_decode_with(k, true), percent_decode_with(v, true)))
                        .collect();
                    let seen = Seen {
                        method,
                        path,
                        idempotency_key: headers.get("idempotency-key").cloned(),
                        authorization: headers.get("authorization").cloned(),
                        stripe_version: headers.get("stripe-version").cloned(),
                        form,
                    };
                    let slow = seen.path == "/v1/checkout/sessions";
                    let (status, answer) = answer(&state, seen);
                    let gate = if slow {
                        state.lock().unwrap().checkout_gate.take()
                    } else {
                        None
                    };
                    if let Some(gate) = gate {
                        // A late peer, on purpose: bourse must cope with Stripe answering after
                        // something else happened. Bounded, in case the test never releases it.
                        let _ = gate.recv_timeout(Duration::from_secs(60));
                    }
                    let text = answer.to_string();
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    );
                });
            }
        });
        FakeStripe { url, state }
    }

    pub fn seen(&self, path_prefix: &str) -> Vec<Seen> {
        let state = self.state.lock().unwrap();
        state
            .seen
            .iter()
            .filter(|s| s.path.starts_with(path_prefix))
            .cloned()
            .collect()
    }

    pub fn set(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state.lock().unwrap());
    }
}

pub fn answer(state: &Mutex<State>, seen: Seen) -> (u16, Value) {
    let mut state = state.lock().unwrap();
    state.seen.push(seen.clone());
    if seen.authorization.as_deref() != Some("Bearer sk_test_123") {
        return (401, json!({"error": {"message": "bad key"}}));
    }
    if let Some(replay) = seen
        .idempotency_key
        .as_ref()
        .and_then(|k| state.answered.get(k))
    {
        return replay.clone();
    }
    let reply = match (seen.method.as_str(), seen.path.as_str()) {
        ("POST", "/v1/accounts") => (
            200,
            json!({"id": "acct_test1", "object": "account", "payouts_enabled": false}),
        ),
        ("POST", "/v1/accounts/acct_test1") => (
            200,
            json!({"id": "acct_test1", "object": "account", "payouts_enabled": false}),
        ),
        ("GET", "/v1/accounts/acct_test1") => (
            200,
            json!({"id": "acct_test1", "object": "account", "payouts_enabled": state.payouts_enabled}),
        ),
        ("POST", "/v1/account_links") => (
            200,
            json!({"object": "account_link", "url": "https://connect.stripe.test/setup/acct_test1", "expires_at": 1_795_000_000}),
        ),
        ("POST", "/v1/checkout/sessions") if state.checkout_down => {
            (500, json!({"error": {"message": "something went wrong"}}))
        }
        ("POST", "/v1/checkout/sessions") => {
            state.sessions += 1;
            let id = format!("cs_test_{}", state.sessions);
            (
                200,
                json!({"id": id, "object": "checkout.session", "url": format!("https://checkout.stripe.test/c/pay/{id}"), "status": "open", "payment_status": "unpaid"}),
            )
        }
        ("POST", "/v1/transfers") if !state.transfer_answers.is_empty() => {
            state.transfer_answers.remove(0)
        }
        ("POST", "/v1/transfers") if state.transfer_failures > 0 => {
            state.transfer_failures -= 1;
            (
                400,
                json!({"error": {"message": "insufficient available funds"}}),
            )
        }
        ("POST", "/v1/transfers") => (200, json!({"id": "tr_test1", "object": "transfer"})),
        ("GET", path) if path.starts_with("/v1/payment_intents/") && state.intents_forbidden => (
            403,
            json!({"error": {"type": "invalid_request_error", "message": "The provided key does not have the required permissions"}}),
        ),
        ("GET", path) if path.starts_with("/v1/payment_intents/pi_") => {
            let intent = &path["/v1/payment_intents/".len()..];
            (
                200,
                json!({"id": intent, "object": "payment_intent", "status": "succeeded", "latest_charge": format!("ch_{}", &intent[3..])}),
            )
        }
        ("POST", "/v1/refunds") if !state.refund_failures.is_empty() => {
            state.refund_failures.remove(0)
        }
        ("POST", "/v1/refunds") => (200, json!({"id": "re_test1", "object": "refund"})),
        _ => (
            404,
            json!({"error": {"message": "unrecognized request URL"}}),
        ),
    };
    // As Stripe: a request refused before it ran (rate limited, key in use, parameters that
    // differ from the key's first request) saves no answer.
    let ran = !matches!(reply.0, 409 | 429) && reply.1["error"]["type"] != "idempotency_error";
    if let Some(key) = seen.idempotency_key.filter(|_| ran) {
        state.answered.insert(key, reply.clone());
    }
    reply
}

pub fn stripe_server(fake: &FakeStripe) -> TestServer {
    let api_base = fake.url.clone();
    TestServer::start_with(move |config| {
        config.payments = Payments::Stripe(StripeSettings {
            secret_key: "sk_test_123".into(),
            // The platform endpoint's and the Connect endpoint's secrets.
            webhook_secret: format!("whsec_connect_endpoint,{WEBHOOK_SECRET}"),
            api_base,
        });
    })
}

/// Posts an event signed as Stripe signs it, `t` = the server's clock + `offset`.
pub fn deliver(server: &TestServer, event: &Value, secret: &str, offset: i64) -> Resp {
    let body = event.to_string();
    let t = server.clock.now().as_second() + offset;
    let v1 = hex(&hmac_sha256(
        secret.as_bytes(),
        format!("{t}.{body}").as_bytes(),
    ));
    server.request(
        "POST",
        "/api/webhooks/stripe",
        &[("stripe-signature", &format!("t={t},v1={v1}"))],
        Some(body.as_bytes()),
    )
}

pub fn event(id: &str, kind: &str, object: Value) -> Value {
    json!({"id": id, "object": "event", "type": kind, "livemode": false, "data": {"object": object}})
}

/// A seller with a verified endpoint whose Stripe payouts are enabled.
pub fn stripe_seller(server: &TestServer, fake: &FakeStripe) -> (Party, SellerTwin) {
    let seller = server.party("seller");
    let twin = SellerTwin::start(
        &server.base,
        b"the paid bytes".to_vec(),
        "text/plain",
        Mode::Honest,
    );
    server
        .send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            &seller.key,
            &json!({"url": twin.url}),
        )
        .assert_status(200);
    let first = server
        .send_auth("POST", "/api/sell/register", &seller.key, &json!({}))
        .ok();
    assert_eq!(first["rail"], "stripe");
    assert_eq!(first["status"], "pending");
    assert_eq!(first["accountId"], "acct_test1");
    assert_eq!(
        first["onboardingUrl"],
        "https://connect.stripe.test/setup/acct_test1"
    );
    let links = fake.seen("/v1/account_links");
    assert_eq!(links[0].form["type"], "account_onboarding");
    assert_eq!(links[0].form["account"], "acct_test1");
    let back = links[0].form["return_url"].clone();
    assert!(back.starts_with(&format!("{}/sell/connect/", server.base)));
    assert_eq!(links[0].form["refresh_url"], back);
    // Back from Stripe before finishing: the page sends the browser to a fresh link.
    let browser: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into();
    let returned = browser.get(&back).call().unwrap();
    assert_eq!(returned.status().as_u16(), 303);
    assert_eq!(
        returned.headers()["location"],
        "https://connect.stripe.test/setup/acct_test1"
    );

    // Listing needs connected payouts until Stripe says so.
    let body = json!({"title": "Tide tables", "description": "Hourly tides.", "priceCents": 2500, "verticalSlug": "research-data", "consent": true});
    server
        .send_auth("POST", "/api/marketplace/listings", &seller.key, &body)
        .assert_error(409, "PAYOUTS_NOT_CONNECTED");
    fake.set(|s| s.payouts_enabled = true);
    let updated = deliver(
        server,
        &event(
            "evt_account",
            "account.updated",
            json!({"id": "acct_test1", "object": "account", "payouts_enabled": true}),
        ),
        WEBHOOK_SECRET,
        0,
    );
    assert_eq!(updated.ok()["handled"], "account_updated");
    let again = server
        .send_auth("POST", "/api/sell/register", &seller.key, &json!({}))
        .json();
    assert_eq!(again["status"], "complete");
    let mut done = browser.get(&back).call().unwrap();
    assert_eq!(done.status().as_u16(), 200);
    assert!(
        done.body_mut()
            .read_to_string()
            .unwrap()
            .contains("Payouts connected")
    );
    assert_eq!(again["onboardingUrl"], Value::Null);
    let accounts = fake.seen("/v1/accounts");
    let created: Vec<_> = accounts.iter().filter(|s| s.method == "POST").collect();
    assert_eq!(created.len(), 1, "one Connect account per seller");
    assert_eq!(created[0].form["type"], "express");
    assert_eq!(
        created[0].idempotency_key.as_deref(),
        Some(format!("agent:{}:account", agent_id(server, &seller)).as_str())
    );
    (seller, twin)
}

pub fn agent_id(server: &TestServer, party: &Party) -> String {
    server.get_auth("/api/agents/me", &party.key).json()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits until the fake has seen at least `n` requests under `path_prefix`; returns them all.
#[track_caller]
pub fn wait_seen(fake: &FakeStripe, path_prefix: &str, n: usize) -> Vec<Seen> {
    wait_until(
        &format!("Stripe saw {n} {path_prefix} requests"),
        WAIT,
        || {
            let seen = fake.seen(path_prefix);
            if seen.len() >= n {
                Ok(seen)
            } else {
                Err(format!("{seen:?}"))
            }
        },
    )
}
