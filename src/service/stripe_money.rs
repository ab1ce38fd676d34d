//! Stripe's money movements: the transfers of sellers' nets at escrow release and the refunds
//! of payments that came too late, made by the commerce worker (and a refund's first attempt by
//! the webhook), both retried by one `RetryPlan`.

use std::sync::Arc;

use serde_json::Value;

use super::App;
use super::rail::Rail;
use super::stripe_client::{Client, Failure, call, object_id};
use crate::clock::rfc3339_after;
use crate::error::Result;
use crate::store::payments as store;

/// One pass of the Stripe money worker: refunds owed, then payouts due. An error in one does
/// not hold back the other.
pub async fn move_money(app: &App) {
    let Some(client) = app.stripe.clone() else {
        return;
    };
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
pub(crate) enum Attempt {
    Done,
    Failed,
    /// Stripe did not answer: the pass stops.
    Unanswered,
}

/// One refund attempt (`payment:<pi>:refund:<n>`); a refund Stripe says was already made counts
/// as done, a failure is retried like payouts ([`RetryPlan`]).
pub(crate) async fn refund(app: &App, client: Arc<Client>, owed: store::Refund) -> Result<Attempt> {
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
    let (rail, accounts) = (
        Rail::Card.ledger_name(),
        Rail::Card.account_name().unwrap_or_default(),
    );
    let due = app
        .store
        .read(move |conn| store::due_payouts(conn, &now, 50, rail, accounts))
        .await?;
    for row in due {
        if let Attempt::Unanswered = pay_out(app, &client, row).await? {
            break;
        }
    }
    Ok(())
}

/// How long the worker leaves a refund the webhook is attempting (the client's deadline is 30 s).
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
