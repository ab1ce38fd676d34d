//! The Stripe rail (`--payments stripe`): Connect Express onboarding, a Checkout Session per
//! reservation, and the webhook that reports payments through `settlement`. The client and
//! the signature check are in [`client`]; transfers and refunds in [`money`].
//!
//! Money model: separate charges and transfers. The buyer pays bourse's platform account
//! through a Checkout Session (`transfer_group` = the purchase id); at escrow release bourse
//! transfers the seller's net to the seller's Connect Express account (`POST /v1/transfers`).
//! Until then the money is held by the platform, which is what the escrow clock needs.
//!
//! Idempotency keys are derived from local ids (`agent:<id>:account`,
//! `purchase:<id>:checkout`, `purchase:<id>:transfer:<n>`, `payment:<pi>:refund:<n>`).

pub mod client;
pub mod money;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::clock::{rfc3339, rfc3339_after};
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::request::commerce::BecomeSeller;
use crate::service::App;
use crate::service::commerce::rails::new_onboarding_id;
use crate::service::commerce::rails::stripe::client::{
    Client, call, malformed, object_id, verify_signature,
};
use crate::service::commerce::settlement::{self, PaymentReport, Reservation, Settled};
use crate::service::rail::Rail;
use crate::store::agents::AgentRow;
use crate::store::payments::{self as store, AccountKey};
use crate::store::purchases::PurchaseRow;
use money::Attempt;

pub use crate::service::commerce::rails::stripe::client::{hex, hmac_sha256};

/// The name of this rail's payout accounts.
const ACCOUNTS: &str = match Rail::Card.account_name() {
    Some(name) => name,
    None => "",
};

/// How long the worker leaves a refund the webhook is attempting (the client's deadline is 30 s).
const REFUND_LEASE_SECS: i64 = 120;

/// A short digest of form parameters, so an idempotency key names what it was sent with.
fn params_digest(params: &[(&str, String)]) -> String {
    let text: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let digest = crate::crypto::jcs::sha256_prefixed(text.join("&").as_bytes());
    digest.trim_start_matches("sha256:")[..16].to_owned()
}

/// Starts a new account's onboarding form with what the seller gave (`become_seller` /
/// `POST /api/sell/register` `{name, email}`): the account's email and business name, sent as
/// an update of the account just created. Nothing is sent when nothing was given; the key
/// names the values, so it is never sent with others.
///
/// # Errors
/// `STRIPE_ERROR` / `STRIPE_UNAVAILABLE` (502).
async fn prefill(
    client: &Arc<Client>,
    agent_id: &str,
    reference: &str,
    request: BecomeSeller,
) -> Result<()> {
    let params: Vec<(&str, String)> = [
        ("email", request.email),
        ("business_profile[name]", request.name),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value?)))
    .collect();
    if params.is_empty() {
        return Ok(());
    }
    let key = format!(
        "agent:{agent_id}:account:prefill:{}",
        params_digest(&params)
    );
    let (c, path) = (client.clone(), format!("/v1/accounts/{reference}"));
    call(move || c.post(&path, &params, &key)).await?;
    Ok(())
}

/// The Stripe client; the rail is not this server's without one.
fn client(app: &App) -> Result<Arc<Client>> {
    app.stripe
        .clone()
        .ok_or_else(|| Error::Internal("Stripe is not this server's card rail".into()))
}

/// `POST /api/sell/register` on the Stripe rail: creates the seller's Connect Express account
/// once (`agent:<id>:account`), reads its state, and answers a fresh onboarding link until
/// Stripe reports payouts enabled.
///
/// # Errors
/// `STRIPE_ERROR` / `STRIPE_UNAVAILABLE` (502); database failure.
pub async fn register_seller(
    app: &App,
    agent: &AgentRow,
    request: BecomeSeller,
) -> Result<Onboarding> {
    let client = client(app)?;
    let agent_id = agent.id.clone();
    let existing = app
        .store
        .read(move |conn| store::account_of(conn, &agent_id))
        .await?
        .filter(|a| a.rail == ACCOUNTS && a.account_ref.is_some());
    let account = match existing {
        Some(account) => account,
        None => {
            // The account is created once per agent, always with the same parameters under
            // the same key, so a retry after a lost answer finds the same account.
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
            let (agent_id, fresh, now, stored_ref) = (
                agent.id.clone(),
                new_onboarding_id(),
                app.now(),
                reference.clone(),
            );
            // The account is recorded before anything else is asked of Stripe, so a failure
            // after this point can never lead to a second account.
            let account = app
                .store
                .write(move |tx| {
                    store::open_account(tx, &agent_id, &fresh, ACCOUNTS, Some(&stored_ref), &now)
                })
                .await?;
            // What the seller gave only starts the form: a refusal is logged, not fatal.
            if let Err(error) = prefill(&client, &agent.id, &reference, request).await {
                tracing::warn!(%error, account = %reference, "Stripe did not take the onboarding details");
            }
            account
        }
    };
    let reference = account.account_ref.clone().unwrap_or_default();
    let complete = sync_account(app, &client, &reference).await?;
    let link = if complete {
        None
    } else {
        Some(account_link(app, &client, &account.onboarding_id, &reference).await?)
    };
    let (onboarding_url, onboarding_url_expires_at) = link.unzip();
    Ok(Onboarding {
        rail: ACCOUNTS,
        status: if complete { "complete" } else { "pending" },
        account_id: reference,
        onboarding_url,
        onboarding_url_expires_at: onboarding_url_expires_at.flatten(),
        note: if complete {
            "payouts are connected: paid listings can be sold"
        } else {
            "open onboardingUrl (single use, short-lived) to finish Stripe onboarding; call again for a fresh link"
        },
    })
}

/// Payout onboarding on Stripe: the Connect account and, until payouts are connected, a fresh
/// onboarding link.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Onboarding {
    /// `stripe`.
    pub rail: &'static str,
    /// `pending` or `complete`.
    pub status: &'static str,
    /// The Connect account (`acct_…`).
    pub account_id: String,
    /// Single use and short-lived; `None` once payouts are connected.
    pub onboarding_url: Option<String>,
    pub onboarding_url_expires_at: Option<String>,
    pub note: &'static str,
}

/// The webhook's acknowledgement: the event's type and what was done with it.
#[derive(Debug, Serialize)]
pub struct Received {
    /// Always `true`.
    pub received: bool,
    /// The event's `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `paid`, `checkout_ended`, `account_updated`, `refunded`, `refund_pending`,
    /// `refund_by_hand`, `duplicate`, `ignored`, `unknown_object` or `ignored_other_mode`.
    pub handled: &'static str,
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
        .filter(|a| a.rail == ACCOUNTS)
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
    purchase: &PurchaseRow,
    title: &str,
) -> Result<(String, String)> {
    let client = client(app)?;
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
pub async fn webhook(app: &App, signature: Option<&str>, body: &[u8]) -> Result<Received> {
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
        return Ok(Received {
            received: true,
            kind: kind.to_owned(),
            handled: "ignored_other_mode",
        });
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
                    let report = PaymentReport {
                        reservation: Reservation::Session(session.clone()),
                        payment_ref: payment_ref.clone(),
                        payer: None,
                        token: None,
                        taken: true,
                    };
                    match settlement::record_payment(tx, &keyring, &now, report) {
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
            settlement::publish(app, *settled);
            "paid"
        }
        // Tried at once; the commerce worker retries what does not go through.
        Outcome::Refund(Some(owed)) if owed.status == "pending" => {
            match money::refund(app, client, owed).await? {
                Attempt::Done => "refunded",
                Attempt::Failed | Attempt::Unanswered => "refund_pending",
            }
        }
        Outcome::Refund(Some(_)) => "refunded",
        Outcome::Refund(None) => "refund_by_hand",
    };
    Ok(Received {
        received: true,
        kind: answer_kind,
        handled,
    })
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
        .is_some_and(|p| p.checkout_session.is_none() && p.rail == Rail::Card.name());
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
    Paid(Box<Settled>),
    /// The payment owed back (none when Stripe named no payment intent).
    Refund(Option<store::Refund>),
}
