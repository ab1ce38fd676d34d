//! The Stripe rail's wire: a small form-encoded client for the few calls bourse makes, and the
//! verification of `Stripe-Signature` on incoming webhooks.
//!
//! Money model: separate charges and transfers. The buyer pays bourse's platform account
//! through a Checkout Session (`transfer_group` = the purchase id); at escrow release bourse
//! transfers the seller's net to the seller's Connect Express account (`POST /v1/transfers`).
//! Until then the money is held by the platform, which is what the escrow clock needs.
//!
//! Every POST carries an `Idempotency-Key` derived from local ids (`agent:<id>:account`,
//! `purchase:<id>:checkout`, `purchase:<id>:transfer:<n>`), so a retry after a crash or a
//! timeout never creates a second object. The API base is the operator's own setting (Stripe,
//! or a local fake in tests), not user input, so this client is not the SSRF-guarded one; it
//! still follows no redirects and reads no proxy settings.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::payments::{self, RAIL_STRIPE};
use super::{App, purchases};
use crate::clock::{rfc3339, rfc3339_after};
use crate::config::StripeSettings;
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::store::agents::AgentRow;
use crate::store::payments::{self as store, AccountKey};
use crate::store::purchases::PurchaseRow;

/// Why a Stripe call failed.
#[derive(Debug)]
pub enum Failure {
    /// Stripe answered with an error (its HTTP status, message, `error.code` and `error.type`).
    Api {
        status: u16,
        message: String,
        code: Option<String>,
        kind: Option<String>,
    },
    /// No answer (connection, timeout, unreadable body): the outcome is unknown, so a retry
    /// must reuse the same idempotency key.
    Transport(String),
    /// Not sent: something it needs is missing (the seller has no Stripe account).
    NotSent(String),
}

impl Failure {
    /// What happened, for the operator (kept with the retried payout or refund).
    fn describe(&self) -> String {
        match self {
            Failure::Api {
                status,
                message,
                code,
                ..
            } => match code {
                Some(code) => format!("Stripe refused (HTTP {status}, {code}): {message}"),
                None => format!("Stripe refused (HTTP {status}): {message}"),
            },
            Failure::Transport(message) => format!("no answer from Stripe: {message}"),
            Failure::NotSent(message) => format!("not sent: {message}"),
        }
    }
}

impl From<Failure> for Error {
    fn from(failure: Failure) -> Error {
        match failure {
            Failure::Api {
                status, message, ..
            } => {
                tracing::warn!(status, %message, "Stripe refused a request");
                Error::BadGateway {
                    code: "STRIPE_ERROR",
                    message: format!(
                        "the payment provider refused the request (HTTP {status}); the operator's log has the detail"
                    ),
                }
            }
            Failure::Transport(message) | Failure::NotSent(message) => Error::BadGateway {
                code: "STRIPE_UNAVAILABLE",
                message: format!("Stripe could not be reached: {message}"),
            },
        }
    }
}

/// A client for one Stripe account.
pub struct Client {
    agent: ureq::Agent,
    settings: StripeSettings,
}

impl Client {
    /// A client with deadlines, no redirects and no proxy.
    pub fn new(settings: StripeSettings) -> Client {
        let config = ureq::Agent::config_builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(30)))
            .user_agent("bourse/1.0")
            .build();
        Client {
            agent: config.new_agent(),
            settings,
        }
    }

    /// The webhook endpoints' signing secrets (comma-separated in the setting: the platform
    /// endpoint and the Connect endpoint each have their own).
    pub fn webhook_secrets(&self) -> Vec<&str> {
        self.settings
            .webhook_secret
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// Whether the key is a live-mode key (events of the other mode are ignored).
    pub fn livemode(&self) -> bool {
        self.settings.secret_key.contains("_live_")
    }

    /// `POST {api_base}{path}`, form-encoded, with an idempotency key (blocking).
    ///
    /// # Errors
    /// [`Failure`].
    pub fn post(
        &self,
        path: &str,
        params: &[(&str, String)],
        idempotency_key: &str,
    ) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.settings.api_base);
        let response = self
            .agent
            .post(&url)
            .header(
                "authorization",
                format!("Bearer {}", self.settings.secret_key),
            )
            .header("idempotency-key", idempotency_key)
            .send_form(params.iter().map(|(k, v)| (*k, v.as_str())));
        read(response)
    }

    /// `GET {api_base}{path}` (blocking).
    ///
    /// # Errors
    /// [`Failure`].
    pub fn get(&self, path: &str) -> Result<Value, Failure> {
        let url = format!("{}{path}", self.settings.api_base);
        let response = self
            .agent
            .get(&url)
            .header(
                "authorization",
                format!("Bearer {}", self.settings.secret_key),
            )
            .call();
        read(response)
    }
}

fn read(
    response: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<Value, Failure> {
    let mut response = response.map_err(|e| Failure::Transport(e.to_string()))?;
    let status = response.status().as_u16();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_vec()
        .map_err(|e| Failure::Transport(format!("unreadable answer (HTTP {status}): {e}")))?;
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::Transport(format!("answer is not JSON (HTTP {status}): {e}")))?;
    if (200..300).contains(&status) {
        return Ok(body);
    }
    let error = &body["error"];
    Err(Failure::Api {
        status,
        message: error["message"].as_str().unwrap_or("no message").to_owned(),
        code: error["code"].as_str().map(str::to_owned),
        kind: error["type"].as_str().map(str::to_owned),
    })
}

/// Runs a blocking Stripe call off the async executor.
///
/// # Errors
/// The call's [`Failure`], or a transport failure when the task dies.
pub async fn call<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Failure> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(Failure::Transport(format!("task: {e}"))))
}

/// The USD amounts Stripe Checkout accepts, in cents.
pub const MIN_AMOUNT_CENTS: i64 = 50;
pub const MAX_AMOUNT_CENTS: i64 = 99_999_999;

/// Refuses a price Stripe Checkout cannot charge, before anything is reserved.
///
/// # Errors
/// `PRICE_OUT_OF_RANGE_FOR_RAIL` (422).
pub fn check_amount(cents: i64) -> Result<()> {
    if (MIN_AMOUNT_CENTS..=MAX_AMOUNT_CENTS).contains(&cents) {
        return Ok(());
    }
    Err(Error::Unprocessable {
        code: "PRICE_OUT_OF_RANGE_FOR_RAIL",
        message: format!(
            "Stripe Checkout charges from {MIN_AMOUNT_CENTS} to {MAX_AMOUNT_CENTS} cents; this listing's price cannot be paid by card here"
        ),
    })
}

/// How far a webhook's timestamp may be from now, as Stripe's libraries default.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// Checks `Stripe-Signature` (`t=<unix>,v1=<hex>[,v1=…]`) over the raw body: HMAC-SHA256 keyed
/// with the whole `whsec_…` string, over `<t>.<body>`; any `v1` may match any of the secrets
/// (secret rotation, several endpoints); compared in constant time; `t` within the tolerance of
/// `now_unix`.
///
/// # Errors
/// 400 `STRIPE_SIGNATURE_MISSING`, `STRIPE_SIGNATURE_INVALID` (malformed or no match) or
/// `STRIPE_SIGNATURE_STALE`.
pub fn verify_signature(
    header: Option<&str>,
    body: &[u8],
    secrets: &[&str],
    now_unix: i64,
) -> Result<()> {
    let refuse = |code: &'static str, message: &str| Error::BadRequest {
        code,
        message: message.to_owned(),
    };
    let header = header.ok_or_else(|| {
        refuse(
            "STRIPE_SIGNATURE_MISSING",
            "the Stripe-Signature header is missing",
        )
    })?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value),
            _ => {}
        }
    }
    let (Some(t), false) = (timestamp, signatures.is_empty()) else {
        return Err(refuse(
            "STRIPE_SIGNATURE_INVALID",
            "Stripe-Signature needs t=<unix seconds> and at least one v1=<hex>",
        ));
    };
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    let expected: Vec<String> = secrets
        .iter()
        .map(|secret| hex(&hmac_sha256(secret.as_bytes(), &signed)))
        .collect();
    let matched = signatures.iter().any(|candidate| {
        expected
            .iter()
            .any(|e| constant_time_eq(candidate.as_bytes(), e.as_bytes()))
    });
    if !matched {
        return Err(refuse(
            "STRIPE_SIGNATURE_INVALID",
            "no v1 signature matches this body and the webhook secret",
        ));
    }
    if (now_unix - t).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err(refuse(
            "STRIPE_SIGNATURE_STALE",
            "the signature's timestamp is more than 300 s from now",
        ));
    }
    Ok(())
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `POST /api/sell/register` on the Stripe rail: creates the seller's Connect Express account
/// once (`agent:<id>:account`), reads its state, and answers a fresh onboarding link until
/// Stripe reports payouts enabled.
///
/// # Errors
/// `STRIPE_ERROR` / `STRIPE_UNAVAILABLE` (502); database failure.
pub async fn register_seller(app: &App, client: Arc<Client>, agent: &AgentRow) -> Result<Value> {
    let agent_id = agent.id.clone();
    let existing = app
        .store
        .read(move |conn| store::account_of(conn, &agent_id))
        .await?
        .filter(|a| a.rail == RAIL_STRIPE && a.account_ref.is_some());
    let account = match existing {
        Some(account) => account,
        None => {
            let (c, handle, key) = (
                client.clone(),
                agent.handle.clone(),
                format!("agent:{}:account", agent.id),
            );
            let created = call(move || {
                c.post(
                    "/v1/accounts",
                    &[
                        ("type", "express".into()),
                        ("capabilities[transfers][requested]", "true".into()),
                        ("metadata[bourse_handle]", handle),
                    ],
                    &key,
                )
            })
            .await?;
            let reference = object_id(&created, "acct_")?;
            let (agent_id, fresh, now) =
                (agent.id.clone(), payments::new_onboarding_id(), app.now());
            app.store
                .write(move |tx| {
                    store::open_account(tx, &agent_id, &fresh, RAIL_STRIPE, Some(&reference), &now)
                })
                .await?
        }
    };
    let reference = account.account_ref.clone().unwrap_or_default();
    let complete = sync_account(app, &client, &reference).await?;
    let link = if complete {
        None
    } else {
        Some(account_link(app, &client, &account.onboarding_id, &reference).await?)
    };
    Ok(json!({
        "rail": RAIL_STRIPE,
        "status": if complete { "complete" } else { "pending" },
        "accountId": reference,
        "onboardingUrl": link.as_ref().map(|l| l.0.clone()),
        "onboardingUrlExpiresAt": link.and_then(|l| l.1),
        "note": if complete {
            "payouts are connected: paid listings can be sold"
        } else {
            "open onboardingUrl (single use, short-lived) to finish Stripe onboarding; call again for a fresh link"
        },
    }))
}

/// Reads the account from Stripe and stores whether its payouts are enabled.
async fn sync_account(app: &App, client: &Arc<Client>, reference: &str) -> Result<bool> {
    let (c, path) = (client.clone(), format!("/v1/accounts/{reference}"));
    let account = call(move || c.get(&path)).await?;
    let complete = account["payouts_enabled"].as_bool() == Some(true);
    let (reference, now) = (reference.to_owned(), app.now());
    app.store
        .write(move |tx| {
            store::set_account_status(tx, AccountKey::Reference(&reference), complete, &now)
        })
        .await?;
    Ok(complete)
}

/// A fresh single-use onboarding link; Stripe sends the seller back to `/sell/connect/{id}`
/// when it is done or the link has expired.
async fn account_link(
    app: &App,
    client: &Arc<Client>,
    onboarding_id: &str,
    reference: &str,
) -> Result<(String, Option<String>)> {
    let back = app.url(&format!("/sell/connect/{onboarding_id}"));
    // Links are single use and expire within minutes, so each call makes a new one (creating a
    // link has no effect to deduplicate); the key still makes a retried request safe.
    let key = format!("account:{reference}:link:{}", b64url(&random_bytes::<12>()));
    let (c, reference) = (client.clone(), reference.to_owned());
    let link = call(move || {
        c.post(
            "/v1/account_links",
            &[
                ("account", reference),
                ("type", "account_onboarding".into()),
                ("refresh_url", back.clone()),
                ("return_url", back),
            ],
            &key,
        )
    })
    .await?;
    let url = link["url"]
        .as_str()
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
        .ok_or_else(|| malformed("an account link without a url"))?
        .to_owned();
    let expires = link["expires_at"]
        .as_i64()
        .and_then(|t| jiff::Timestamp::from_second(t).ok())
        .map(rfc3339);
    Ok((url, expires))
}

/// `GET /sell/connect/{id}`, where Stripe returns the seller: `Ok(None)` when payouts are
/// connected, else a fresh onboarding link to send the browser to.
///
/// # Errors
/// `NOT_FOUND` for an unknown onboarding; 502 when Stripe fails.
pub async fn connect_return(app: &App, onboarding_id: &str) -> Result<Option<String>> {
    let client = app
        .stripe
        .clone()
        .ok_or_else(|| Error::NotFound("Stripe is not this server's payment rail".into()))?;
    let id = onboarding_id.to_owned();
    let account = app
        .store
        .read(move |conn| store::account_by_onboarding(conn, &id))
        .await?
        .filter(|a| a.rail == RAIL_STRIPE)
        .ok_or_else(|| Error::NotFound("no such onboarding".into()))?;
    let reference = account.account_ref.unwrap_or_default();
    if sync_account(app, &client, &reference).await? {
        return Ok(None);
    }
    Ok(Some(
        account_link(app, &client, onboarding_id, &reference)
            .await?
            .0,
    ))
}

/// Opens the Stripe Checkout Session of a pending purchase (`purchase:<id>:checkout`) and
/// stores its id and URL. The session expires 30 s before the local reservation, so Stripe
/// never takes money for a reservation already released. On failure the reservation is
/// cancelled and the error answered.
///
/// # Errors
/// `STRIPE_ERROR` / `STRIPE_UNAVAILABLE` (502); database failure.
pub async fn open_checkout(
    app: &App,
    client: Arc<Client>,
    purchase: &PurchaseRow,
    title: &str,
) -> Result<(String, String)> {
    let expires_at = purchase
        .expires_at
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, |t| t.as_second() - 30);
    let verify = app.url("/api/svcpay/receipts/{CHECKOUT_SESSION_ID}/verify");
    let name: String = title.chars().take(250).collect();
    let mut params = vec![
        ("mode", "payment".to_owned()),
        ("line_items[0][quantity]", "1".into()),
        ("line_items[0][price_data][currency]", "usd".into()),
        (
            "line_items[0][price_data][unit_amount]",
            purchase.amount_cents.to_string(),
        ),
        ("line_items[0][price_data][product_data][name]", name),
        ("client_reference_id", purchase.id.clone()),
        ("metadata[purchase_id]", purchase.id.clone()),
        ("payment_intent_data[transfer_group]", purchase.id.clone()),
        (
            "payment_intent_data[metadata][purchase_id]",
            purchase.id.clone(),
        ),
        ("expires_at", expires_at.to_string()),
        ("success_url", verify.clone()),
        ("cancel_url", verify),
    ];
    if let Some(email) = &purchase.email {
        params.push(("customer_email", email.clone()));
    }
    let (c, key) = (client, format!("purchase:{}:checkout", purchase.id));
    let created = call(move || c.post("/v1/checkout/sessions", &params, &key)).await;
    let opened = created.map_err(Error::from).and_then(|session| {
        let id = object_id(&session, "cs_")?;
        let url = session["url"]
            .as_str()
            .ok_or_else(|| malformed("a checkout session without a url"))?
            .to_owned();
        Ok((id, url))
    });
    let (id, answer) = (purchase.id.clone(), opened);
    let stored = answer
        .as_ref()
        .ok()
        .map(|(session, url)| (session.clone(), url.clone()));
    app.store
        .write(move |tx| match stored {
            Some((session, url)) => store::set_checkout(tx, &id, &session, &url),
            // Nothing was charged: free the reservation at once.
            None => store::end_checkout(tx, &id, "cancelled").map(|_| ()),
        })
        .await?;
    answer
}

/// `POST /api/webhooks/stripe`: verifies the signature over the raw body, then handles each
/// event once (its id is recorded in the same transaction as its effect):
/// `checkout.session.completed` with `payment_status: paid` and
/// `checkout.session.async_payment_succeeded` pay the purchase (a payment that raced the expiry
/// revives it while the listing is still available, else the payment is refunded);
/// `checkout.session.expired` and `…async_payment_failed` end it; `account.updated` records
/// whether the seller's payouts are enabled. Other events are acknowledged and ignored.
///
/// # Errors
/// 404 off the Stripe rail; 400 `STRIPE_SIGNATURE_*`; 400 for a body that is not an event.
pub async fn webhook(app: &App, signature: Option<&str>, body: &[u8]) -> Result<Value> {
    let client = app.stripe.clone().ok_or_else(|| {
        Error::NotFound(
            "no route for /api/webhooks/stripe: Stripe is not this server's payment rail".into(),
        )
    })?;
    verify_signature(
        signature,
        body,
        &client.webhook_secrets(),
        app.clock.wall().as_second(),
    )?;
    let event: Value = serde_json::from_slice(body)
        .map_err(|e| Error::InvalidJson(format!("the event is not JSON: {e}")))?;
    let (Some(id), Some(kind)) = (event["id"].as_str(), event["type"].as_str()) else {
        return Err(Error::invalid("a Stripe event needs `id` and `type`"));
    };
    // A Connect endpoint in live mode also receives test events (and the reverse): those are
    // acknowledged and ignored.
    if event["livemode"]
        .as_bool()
        .is_some_and(|live| live != client.livemode())
    {
        return Ok(json!({ "received": true, "type": kind, "handled": "ignored_other_mode" }));
    }
    let object = &event["data"]["object"];
    let text = |key: &str| object[key].as_str().map(str::to_owned);
    let action = match kind {
        "checkout.session.completed" if object["payment_status"] == "paid" => {
            text("id").map(|s| Action::Paid(s, text("payment_intent")))
        }
        "checkout.session.async_payment_succeeded" => {
            text("id").map(|s| Action::Paid(s, text("payment_intent")))
        }
        "checkout.session.expired" | "checkout.session.async_payment_failed" => {
            text("id").map(Action::Ended)
        }
        "account.updated" => {
            text("id").map(|a| Action::Account(a, object["payouts_enabled"] == true))
        }
        _ => None,
    };
    let (id, kind) = (id.to_owned(), kind.to_owned());
    let reference = text("client_reference_id");
    let (keyring, now) = (app.keyring.clone(), app.now());
    // A refund owed is tried right after the commit; the worker leaves it alone meanwhile
    // (longer than that attempt's deadline), so the two never send it at the same time.
    let refund_lease = rfc3339_after(
        app.clock.now(),
        jiff::SignedDuration::from_secs(REFUND_LEASE_SECS),
    );
    let answer_kind = kind.clone();
    let outcome = app
        .store
        .write(move |tx| {
            if !store::record_event(tx, &id, &kind, &now)? {
                return Ok(Outcome::Duplicate);
            }
            let Some(action) = action else {
                return Ok(Outcome::Ignored);
            };
            match action {
                Action::Paid(session, payment_ref) => {
                    adopt_session(tx, &session, reference.as_deref())?;
                    match purchases::pay_in(
                        tx,
                        &keyring,
                        &now,
                        &session,
                        payment_ref.as_deref(),
                        true,
                    ) {
                        Ok((_, settled)) => Ok(Outcome::Paid(Box::new(settled))),
                        Err(Error::NotFound(_)) => Ok(Outcome::Unknown),
                        // Paid for a checkout that can no longer be sold: owed back to the buyer,
                        // recorded with the event so the refund cannot be forgotten.
                        Err(Error::Conflict { .. }) => {
                            let purchase = crate::store::purchases::find_by_session(tx, &session)?
                                .ok_or_else(|| Error::Internal("a refused payment's purchase vanished".into()))?;
                            let Some(payment_ref) = payment_ref else {
                                tracing::error!(purchase = %purchase.id, "a paid Stripe checkout could not be sold and names no payment intent; refund it in the Stripe dashboard");
                                return Ok(Outcome::Refund(None));
                            };
                            store::queue_refund(tx, &payment_ref, &purchase.id, purchase.amount_cents, &now, &refund_lease)?;
                            Ok(Outcome::Refund(store::refund_of(tx, &purchase.id)?))
                        }
                        Err(other) => Err(other),
                    }
                }
                Action::Ended(session) => {
                    let Some(purchase) = crate::store::purchases::find_by_session(tx, &session)?
                    else {
                        return Ok(Outcome::Unknown);
                    };
                    store::end_checkout(tx, &purchase.id, "expired")?;
                    Ok(Outcome::Ended)
                }
                Action::Account(reference, enabled) => {
                    let changed = store::set_account_status(
                        tx,
                        AccountKey::Reference(&reference),
                        enabled,
                        &now,
                    )?;
                    Ok(if changed == 0 {
                        Outcome::Unknown
                    } else {
                        Outcome::Account
                    })
                }
            }
        })
        .await?;
    let handled = match outcome {
        Outcome::Duplicate => "duplicate",
        Outcome::Ignored => "ignored",
        Outcome::Unknown => "unknown_object",
        Outcome::Ended => "checkout_ended",
        Outcome::Account => "account_updated",
        Outcome::Paid(settled) => {
            purchases::publish(app, *settled);
            "paid"
        }
        // Tried at once; the commerce worker retries what does not go through.
        Outcome::Refund(Some(owed)) if owed.status == "pending" => {
            match refund(app, client, owed).await? {
                Attempt::Done => "refunded",
                Attempt::Failed | Attempt::Unanswered => "refund_pending",
            }
        }
        Outcome::Refund(Some(_)) => "refunded",
        Outcome::Refund(None) => "refund_by_hand",
    };
    Ok(json!({ "received": true, "type": answer_kind, "handled": handled }))
}

/// A session bourse has not stored yet (the payment beat the write that records the session id)
/// is matched by its `client_reference_id`, the purchase id, when that purchase has no session.
fn adopt_session(
    tx: &rusqlite::Connection,
    session: &str,
    purchase_id: Option<&str>,
) -> Result<()> {
    let Some(purchase_id) = purchase_id else {
        return Ok(());
    };
    if crate::store::purchases::find_by_session(tx, session)?.is_some() {
        return Ok(());
    }
    let waiting = crate::store::purchases::find(tx, purchase_id)?
        .is_some_and(|p| p.checkout_session.is_none() && p.rail == purchases::RAIL_STRIPE);
    if waiting {
        store::set_checkout(tx, purchase_id, session, "")?;
    }
    Ok(())
}

enum Action {
    Paid(String, Option<String>),
    Ended(String),
    Account(String, bool),
}

enum Outcome {
    Duplicate,
    Ignored,
    Unknown,
    Ended,
    Account,
    Paid(Box<purchases::Settled>),
    /// The payment owed back (none when Stripe named no payment intent).
    Refund(Option<store::Refund>),
}

/// One pass of the Stripe money worker: refunds owed, then payouts due. An error in one does
/// not hold back the other.
pub async fn move_money(app: &App, client: &Arc<Client>) {
    if let Err(error) = refund_due(app, client.clone()).await {
        tracing::warn!(%error, "Stripe refunds");
    }
    if let Err(error) = pay_out_due(app, client.clone()).await {
        tracing::warn!(%error, "Stripe payouts");
    }
}

/// Gives back every payment owed to a buyer whose retry time has come. A pass stops at the first attempt without an answer (Stripe is unreachable; the rest
/// wait for the next pass rather than a timeout each).
///
/// # Errors
/// Database failure.
async fn refund_due(app: &App, client: Arc<Client>) -> Result<()> {
    let now = app.now();
    let due = app
        .store
        .read(move |conn| store::due_refunds(conn, &now, 50))
        .await?;
    for owed in due {
        if let Attempt::Unanswered = refund(app, client.clone(), owed).await? {
            break;
        }
    }
    Ok(())
}

/// How one money movement went.
enum Attempt {
    Done,
    Failed,
    /// Stripe did not answer: the pass stops.
    Unanswered,
}

/// One refund attempt (`payment:<pi>:refund:<n>`); a refund Stripe says was already made counts
/// as done, a failure is retried like payouts ([`RetryPlan`]).
async fn refund(app: &App, client: Arc<Client>, owed: store::Refund) -> Result<Attempt> {
    let key = format!("payment:{}:refund:{}", owed.payment_ref, owed.attempts);
    let params = [
        ("payment_intent", owed.payment_ref.clone()),
        ("metadata[purchase_id]", owed.purchase_id.clone()),
    ];
    let attempt = call(move || match client.post("/v1/refunds", &params, &key) {
        Err(Failure::Api {
            code: Some(code), ..
        }) if code == "charge_already_refunded" => Ok("already_refunded".to_owned()),
        answer => {
            answer.and_then(|r| object_id(&r, "re_").map_err(|e| Failure::Transport(e.to_string())))
        }
    })
    .await;
    let (payment_ref, now) = (owed.payment_ref, app.now());
    match attempt {
        Ok(refund) => {
            // Stripe has the refund: done, whether this write or a concurrent one records it.
            app.store
                .write(move |tx| store::mark_refunded(tx, &payment_ref, &refund, &now))
                .await?;
            Ok(Attempt::Done)
        }
        Err(failure) => {
            tracing::warn!(?failure, %payment_ref, "refunding a payment for a closed checkout failed; will retry");
            let plan = RetryPlan::after(app, &failure, owed.attempts);
            let message = failure.describe();
            app.store
                .write(move |tx| {
                    store::mark_refund_failed(tx, &payment_ref, &message, &plan.at, plan.next_key)
                })
                .await?;
            Ok(plan.outcome)
        }
    }
}

/// When and how a failed money movement (transfer, refund) is tried again.
struct RetryPlan {
    /// Stripe clearly refused (a 4xx other than 409 key-in-use, 429 and an idempotency error):
    /// nothing was made under this key, so the next attempt uses the next idempotency key, after
    /// an exponential backoff (1 min … 6 h). Any other failure keeps the key: a timeout or a 5xx
    /// has an unknown outcome (retried after a minute); an idempotency error means this key was
    /// first used with other parameters, so its first request may have been made (retried hourly
    /// and shown to the operator); a request not sent waits an hour.
    next_key: bool,
    at: String,
    outcome: Attempt,
}

impl RetryPlan {
    fn after(app: &App, failure: &Failure, attempts: i64) -> RetryPlan {
        let (next_key, wait, outcome) = match failure {
            Failure::Api { kind, .. } if kind.as_deref() == Some("idempotency_error") => {
                (false, 3600, Attempt::Failed)
            }
            Failure::Api { status, .. }
                if (400..500).contains(status) && *status != 409 && *status != 429 =>
            {
                let backoff = (60_i64 << attempts.clamp(0, 8)).min(6 * 3600);
                (true, backoff, Attempt::Failed)
            }
            Failure::Api { .. } => (false, 60, Attempt::Failed),
            Failure::Transport(_) => (false, 60, Attempt::Unanswered),
            Failure::NotSent(_) => (false, 3600, Attempt::Failed),
        };
        let at = rfc3339_after(app.clock.now(), jiff::SignedDuration::from_secs(wait));
        RetryPlan {
            next_key,
            at,
            outcome,
        }
    }
}

/// Transfers the seller's net of every card sale whose escrow clock has run
/// (`purchase:<id>:transfer:<n>`), and releases the row once the transfer exists. A refused
/// transfer stays held and is retried with backoff under the next key; an unanswered one is
/// retried under the same key, so it cannot be made twice ([`RetryPlan`]). A pass stops at the
/// first attempt without an answer.
///
/// # Errors
/// Database failure.
async fn pay_out_due(app: &App, client: Arc<Client>) -> Result<()> {
    let now = app.now();
    let due = app
        .store
        .read(move |conn| store::due_payouts(conn, &now, 50))
        .await?;
    for row in due {
        if let Attempt::Unanswered = pay_out(app, &client, row).await? {
            break;
        }
    }
    Ok(())
}

/// How long the worker leaves a refund the webhook is attempting (the client's deadline is 30 s).
const REFUND_LEASE_SECS: i64 = 120;

/// `payout_source` of a transfer sent without `source_transaction`.
const NO_SOURCE: &str = "none";

/// One transfer attempt for a held card sale.
async fn pay_out(app: &App, client: &Arc<Client>, row: store::DuePayout) -> Result<Attempt> {
    let Some(destination) = row.destination.clone() else {
        let failure = Failure::NotSent("the seller has no Stripe account".into());
        return payout_failed(app, &row, failure).await;
    };
    // Tied to the buyer's charge, the transfer is accepted even while that charge's funds are
    // still pending, and moves when they become available. The charge is chosen once, before
    // the first transfer request, and kept: every request under a key has the same parameters.
    let source = match row.source.clone() {
        Some(source) => source,
        None => {
            let (c, payment) = (client.clone(), row.payment_ref.clone());
            let source = match call(move || source_charge(&c, payment.as_deref())).await {
                Ok(charge) => charge.unwrap_or_else(|| NO_SOURCE.to_owned()),
                // A clear refusal (say, a restricted key without PaymentIntent access): the
                // transfer goes without it and waits for the available balance instead.
                Err(Failure::Api { status, .. })
                    if (400..500).contains(&status) && status != 409 && status != 429 =>
                {
                    NO_SOURCE.to_owned()
                }
                // Nothing was sent under the transfer key yet, so no key moves on.
                Err(Failure::Api {
                    status, message, ..
                }) => {
                    let failure = Failure::Transport(format!(
                        "reading the buyer's charge: HTTP {status}: {message}"
                    ));
                    return payout_failed(app, &row, failure).await;
                }
                Err(failure) => return payout_failed(app, &row, failure).await,
            };
            let (ledger_id, chosen) = (row.ledger_id.clone(), source.clone());
            app.store
                .write(move |tx| store::set_payout_source(tx, &ledger_id, &chosen))
                .await?;
            source
        }
    };
    let key = format!("purchase:{}:transfer:{}", row.purchase_id, row.attempts);
    let mut params = vec![
        ("amount", row.seller_net_cents.to_string()),
        ("currency", "usd".into()),
        ("destination", destination),
        ("transfer_group", row.purchase_id.clone()),
        ("metadata[purchase_id]", row.purchase_id.clone()),
    ];
    if source != NO_SOURCE {
        params.push(("source_transaction", source));
    }
    let c = client.clone();
    let attempt = call(move || c.post("/v1/transfers", &params, &key))
        .await
        .and_then(|t| object_id(&t, "tr_").map_err(|e| Failure::Transport(e.to_string())));
    match attempt {
        Ok(transfer) => {
            let (ledger_id, now) = (row.ledger_id.clone(), app.now());
            app.store
                .write(move |tx| store::mark_paid_out(tx, &ledger_id, &transfer, &now))
                .await?;
            Ok(Attempt::Done)
        }
        Err(failure) => payout_failed(app, &row, failure).await,
    }
}

async fn payout_failed(app: &App, row: &store::DuePayout, failure: Failure) -> Result<Attempt> {
    tracing::warn!(?failure, purchase = %row.purchase_id, "escrow payout failed; will retry");
    let plan = RetryPlan::after(app, &failure, row.attempts);
    let (ledger_id, message) = (row.ledger_id.clone(), failure.describe());
    app.store
        .write(move |tx| {
            store::mark_payout_failed(tx, &ledger_id, &message, &plan.at, plan.next_key)
        })
        .await?;
    Ok(plan.outcome)
}

/// The charge of a Checkout payment, when the payment names one (blocking): the
/// PaymentIntent's `latest_charge`, or on accounts pinned to an API version before 2022-11-15
/// its `charges.data[0]`.
fn source_charge(client: &Client, payment: Option<&str>) -> Result<Option<String>, Failure> {
    let Some(intent) = payment.filter(|p| {
        p.starts_with("pi_") && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    }) else {
        return Ok(None);
    };
    let answer = client.get(&format!("/v1/payment_intents/{intent}"))?;
    let charge = match &answer["latest_charge"] {
        Value::String(id) => Some(id.clone()),
        Value::Object(expanded) => expanded
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => answer["charges"]["data"][0]["id"]
            .as_str()
            .map(str::to_owned),
    };
    Ok(charge.filter(|id| id.starts_with("ch_") || id.starts_with("py_")))
}

/// The `id` of a Stripe object, checked against its prefix.
fn object_id(object: &Value, prefix: &str) -> Result<String> {
    object["id"]
        .as_str()
        .filter(|id| id.starts_with(prefix))
        .map(str::to_owned)
        .ok_or_else(|| malformed(&format!("an answer without a {prefix}… id")))
}

fn malformed(what: &str) -> Error {
    Error::BadGateway {
        code: "STRIPE_ERROR",
        message: format!("Stripe sent {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // A key longer than the block is hashed first (RFC 4231 case 6).
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn stripe_signature_vector_and_every_refusal() {
        let good = "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925";
        let body = br#"{"id":"evt_1"}"#;
        let check = |header: Option<&str>, now: i64| {
            verify_signature(header, body, &["whsec_other", "whsec_test"], now)
                .map_err(|e| e.code())
        };
        assert_eq!(
            check(Some(&format!("t=1700000000,v1={good}")), 1_700_000_000),
            Ok(())
        );
        // Any v1 may match; other schemes are ignored.
        assert_eq!(
            check(
                Some(&format!("t=1700000000,v0=00,v1=deadbeef,v1={good}")),
                1_700_000_100
            ),
            Ok(())
        );
        assert_eq!(check(None, 1_700_000_000), Err("STRIPE_SIGNATURE_MISSING"));
        assert_eq!(
            check(Some("garbage"), 1_700_000_000),
            Err("STRIPE_SIGNATURE_INVALID")
        );
        assert_eq!(
            check(Some("t=1700000000,v1=deadbeef"), 1_700_000_000),
            Err("STRIPE_SIGNATURE_INVALID")
        );
        assert_eq!(
            check(Some(&format!("t=1700000000,v1={good}")), 1_700_000_301),
            Err("STRIPE_SIGNATURE_STALE")
        );
        assert_eq!(
            check(Some(&format!("t=1700000000,v1={good}")), 1_700_000_300),
            Ok(())
        );
    }
}
