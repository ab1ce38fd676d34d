//! Stripe's money movements: the transfers of sellers' nets at escrow release and the refunds
//! of payments that came too late, made by the commerce worker (and a refund's first attempt by
//! the webhook). Both run one retry machine: an attempt is sent under the idempotency key its
//! row's count of clear refusals names, and its outcome is recorded in its row by [`record`]
//! following a [`RetryPlan`], whichever [`Movement`] it is.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use rusqlite::Connection;
use serde_json::Value;

use crate::clock::{rfc3339, rfc3339_after};
use crate::error::Result;
use crate::service::App;
use crate::service::commerce::rails::stripe::client::{Client, Failure, call, object_id};
use crate::service::rail::Rail;
use crate::store::payments::{self as store, Movement};

/// Most rows of each kind one pass attempts.
const BATCH: i64 = 50;

/// `payout_source` of a transfer sent without `source_transaction`.
const NO_SOURCE: &str = "none";

/// One pass of the Stripe money worker: refunds owed, then payouts due. An error in one does
/// not hold back the other.
pub async fn move_money(app: &App) {
    let Some(client) = app.stripe.clone() else {
        return;
    };
    if let Err(error) = refund_due(app, &client).await {
        tracing::warn!(%error, "Stripe refunds");
    }
    if let Err(error) = pay_out_due(app, &client).await {
        tracing::warn!(%error, "Stripe payouts");
    }
}

/// How one money movement went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    Done,
    Failed,
    /// Stripe did not answer: the pass stops (the rest wait for the next pass rather than a
    /// timeout each).
    Unanswered,
}

/// One movement due: which row, and what names its next idempotency key.
#[derive(Clone, Debug)]
pub(crate) struct Due {
    pub movement: Movement,
    /// The row's key: a transfer's ledger id, a refund's payment reference.
    pub row: String,
    /// What the idempotency key is about: the purchase of a transfer, the payment of a refund.
    pub subject: String,
    /// Clear refusals so far.
    pub attempts: i64,
    /// For the log.
    pub purchase_id: String,
}

impl Due {
    fn transfer(row: &store::DuePayout) -> Due {
        Due {
            movement: Movement::Transfer,
            row: row.ledger_id.clone(),
            subject: row.purchase_id.clone(),
            attempts: row.attempts,
            purchase_id: row.purchase_id.clone(),
        }
    }

    fn refund(owed: &store::Refund) -> Due {
        Due {
            movement: Movement::Refund,
            row: owed.payment_ref.clone(),
            subject: owed.payment_ref.clone(),
            attempts: owed.attempts,
            purchase_id: owed.purchase_id.clone(),
        }
    }

    /// The idempotency key of the next attempt (`purchase:<id>:transfer:<n>`,
    /// `payment:<pi>:refund:<n>`).
    fn key(&self) -> String {
        match self.movement {
            Movement::Transfer => format!("purchase:{}:transfer:{}", self.subject, self.attempts),
            Movement::Refund => format!("payment:{}:refund:{}", self.subject, self.attempts),
        }
    }
}

/// Where a movement is made.
fn path(movement: Movement) -> &'static str {
    match movement {
        Movement::Transfer => "/v1/transfers",
        Movement::Refund => "/v1/refunds",
    }
}

/// What Stripe's answer to a movement means: the id of the object made, or why there is none.
/// A refund Stripe says was already made counts as made; an answer without the object's id has
/// an unknown outcome.
fn outcome(movement: Movement, answer: Result<Value, Failure>) -> Result<String, Failure> {
    let prefix = match movement {
        Movement::Transfer => "tr_",
        Movement::Refund => "re_",
    };
    match answer {
        Err(Failure::Api {
            code: Some(code), ..
        }) if movement == Movement::Refund && code == "charge_already_refunded" => {
            Ok("already_refunded".to_owned())
        }
        answer => answer.and_then(|object| {
            object_id(&object, prefix).map_err(|e| Failure::Transport(e.to_string()))
        }),
    }
}

/// A clear refusal: a 4xx other than 409 (key in use) and 429 (rate limited). Nothing was made.
fn clear_refusal(status: u16) -> bool {
    (400..500).contains(&status) && status != 409 && status != 429
}

/// When and how a failed money movement (transfer, refund) is tried again.
#[derive(Debug)]
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
    fn after(failure: &Failure, attempts: i64, now: Timestamp) -> RetryPlan {
        let (next_key, wait, outcome) = match failure {
            Failure::Api { kind, .. } if kind.as_deref() == Some("idempotency_error") => {
                (false, 3600, Attempt::Failed)
            }
            Failure::Api { status, .. } if clear_refusal(*status) => {
                let backoff = (60_i64 << attempts.clamp(0, 8)).min(6 * 3600);
                (true, backoff, Attempt::Failed)
            }
            Failure::Api { .. } => (false, 60, Attempt::Failed),
            Failure::Transport(_) => (false, 60, Attempt::Unanswered),
            Failure::NotSent(_) => (false, 3600, Attempt::Failed),
        };
        RetryPlan {
            next_key,
            at: rfc3339_after(now, SignedDuration::from_secs(wait)),
            outcome,
        }
    }
}

/// Records how an attempt went in its row, in the writer's transaction: made (done, whether
/// this write or a concurrent one records it), or failed and planned again ([`RetryPlan`]).
///
/// # Errors
/// Database failure.
fn record(
    conn: &Connection,
    due: &Due,
    outcome: Result<String, Failure>,
    now: Timestamp,
) -> Result<Attempt> {
    match outcome {
        Ok(reference) => {
            store::mark_moved(conn, due.movement, &due.row, &reference, &rfc3339(now))?;
            Ok(Attempt::Done)
        }
        Err(failure) => {
            let plan = RetryPlan::after(&failure, due.attempts, now);
            store::mark_move_failed(
                conn,
                due.movement,
                &due.row,
                &failure.describe(),
                &plan.at,
                plan.next_key,
            )?;
            Ok(plan.outcome)
        }
    }
}

/// Logs a failed attempt and records its outcome.
async fn conclude(app: &App, due: Due, outcome: Result<String, Failure>) -> Result<Attempt> {
    if let Err(failure) = &outcome {
        match due.movement {
            Movement::Transfer => {
                tracing::warn!(?failure, purchase = %due.purchase_id, "escrow payout failed; will retry");
            }
            Movement::Refund => {
                tracing::warn!(?failure, payment_ref = %due.row, "refunding a payment for a closed checkout failed; will retry");
            }
        }
    }
    let now = app.clock.now();
    let keyring = app.keyring.clone();
    app.store
        .write(move |tx| {
            let attempt = record(tx, &due, outcome, now)?;
            if attempt == Attempt::Done {
                crate::service::ledger::log_event(
                    tx,
                    &keyring,
                    &crate::service::ledger::Event {
                        event: match due.movement {
                            Movement::Transfer => "release",
                            Movement::Refund => "refund",
                        },
                        row: &due.row,
                        purchase_id: &due.purchase_id,
                        amount_cents: None,
                        at: &rfc3339(now),
                    },
                )?;
            }
            Ok(attempt)
        })
        .await
}

/// Sends one attempt of a movement under the key its row names, and records the outcome.
async fn attempt(
    app: &App,
    client: &Arc<Client>,
    due: Due,
    params: Vec<(&'static str, String)>,
) -> Result<Attempt> {
    let (c, key, movement) = (client.clone(), due.key(), due.movement);
    let answer = call(move || c.post(path(movement), &params, &key)).await;
    conclude(app, due, outcome(movement, answer)).await
}

/// Gives back every payment owed to a buyer whose retry time has come. A pass stops at the
/// first attempt without an answer.
///
/// # Errors
/// Database failure.
async fn refund_due(app: &App, client: &Arc<Client>) -> Result<()> {
    let now = app.now();
    let due = app
        .store
        .read(move |conn| store::due_refunds(conn, &now, BATCH))
        .await?;
    for owed in due {
        if let Attempt::Unanswered = refund(app, client.clone(), owed).await? {
            break;
        }
    }
    Ok(())
}

/// One refund attempt (`payment:<pi>:refund:<n>`).
///
/// # Errors
/// Database failure.
pub(crate) async fn refund(app: &App, client: Arc<Client>, owed: store::Refund) -> Result<Attempt> {
    let params = vec![
        ("payment_intent", owed.payment_ref.clone()),
        ("metadata[purchase_id]", owed.purchase_id.clone()),
    ];
    attempt(app, &client, Due::refund(&owed), params).await
}

/// Transfers the seller's net of every card sale whose escrow clock has run, and releases the
/// row once the transfer exists. A pass stops at the first attempt without an answer.
///
/// # Errors
/// Database failure.
async fn pay_out_due(app: &App, client: &Arc<Client>) -> Result<()> {
    let now = app.now();
    let (rail, accounts) = (
        Rail::Card.ledger_name(),
        Rail::Card.account_name().unwrap_or_default(),
    );
    let due = app
        .store
        .read(move |conn| store::due_payouts(conn, &now, BATCH, rail, accounts))
        .await?;
    for row in due {
        if let Attempt::Unanswered = pay_out(app, client, row).await? {
            break;
        }
    }
    Ok(())
}

/// One transfer attempt for a held card sale.
async fn pay_out(app: &App, client: &Arc<Client>, row: store::DuePayout) -> Result<Attempt> {
    let due = Due::transfer(&row);
    let Some(destination) = row.destination.clone() else {
        let failure = Failure::NotSent("the seller has no Stripe account".into());
        return conclude(app, due, Err(failure)).await;
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
                Err(Failure::Api { status, .. }) if clear_refusal(status) => NO_SOURCE.to_owned(),
                // Nothing was sent under the transfer key yet, so no key moves on.
                Err(Failure::Api {
                    status, message, ..
                }) => {
                    let failure = Failure::Transport(format!(
                        "reading the buyer's charge: HTTP {status}: {message}"
                    ));
                    return conclude(app, due, Err(failure)).await;
                }
                Err(failure) => return conclude(app, due, Err(failure)).await,
            };
            let (ledger_id, chosen) = (row.ledger_id.clone(), source.clone());
            app.store
                .write(move |tx| store::set_payout_source(tx, &ledger_id, &chosen))
                .await?;
            source
        }
    };
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
    attempt(app, client, due, params).await
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::payments::fixtures;

    const NOW: &str = "2026-03-01T12:00:00.000Z";

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    fn after(secs: i64) -> String {
        rfc3339_after(now(), SignedDuration::from_secs(secs))
    }

    fn database() -> Connection {
        fixtures::database(NOW)
    }

    /// The row as the worker reads it once its retry time has come.
    fn due(conn: &Connection, movement: Movement) -> Due {
        let later = "2099-01-01T00:00:00Z";
        match movement {
            Movement::Transfer => {
                let rows = store::due_payouts(conn, later, 10, "card", "stripe").unwrap();
                Due::transfer(&rows[0])
            }
            Movement::Refund => Due::refund(&store::due_refunds(conn, later, 10).unwrap()[0]),
        }
    }

    /// The row's state: status, clear refusals, retry time, error, the rail's reference.
    fn state(
        conn: &Connection,
        movement: Movement,
    ) -> (String, i64, Option<String>, Option<String>, Option<String>) {
        let id = match movement {
            Movement::Transfer => "L1",
            Movement::Refund => "pi_1",
        };
        let s = fixtures::state(conn, movement, id);
        (s.status, s.attempts, s.retry_at, s.error, s.reference)
    }

    /// Runs one attempt answered by `answer` through the machine.
    fn run(conn: &Connection, movement: Movement, answer: Result<Value, Failure>) -> Attempt {
        let due = due(conn, movement);
        record(conn, &due, outcome(movement, answer), now()).unwrap()
    }

    fn refused(status: u16, code: Option<&str>, kind: Option<&str>) -> Failure {
        Failure::Api {
            status,
            message: "no".into(),
            code: code.map(str::to_owned),
            kind: kind.map(str::to_owned),
        }
    }

    const BOTH: [Movement; 2] = [Movement::Transfer, Movement::Refund];

    #[test]
    fn keys_name_the_subject_and_the_refusals_so_far() {
        let conn = database();
        assert_eq!(
            due(&conn, Movement::Transfer).key(),
            "purchase:P1:transfer:0"
        );
        assert_eq!(due(&conn, Movement::Refund).key(), "payment:pi_1:refund:0");
        run(&conn, Movement::Refund, Err(refused(400, None, None)));
        assert_eq!(due(&conn, Movement::Refund).key(), "payment:pi_1:refund:1");
    }

    #[test]
    fn an_unknown_outcome_keeps_the_key() {
        for movement in BOTH {
            let conn = database();
            let open = state(&conn, movement).0;
            assert_eq!(
                run(&conn, movement, Err(Failure::Transport("timed out".into()))),
                Attempt::Unanswered
            );
            let (status, attempts, retry_at, error, reference) = state(&conn, movement);
            assert_eq!((status, attempts), (open.clone(), 0));
            assert_eq!(retry_at.as_deref(), Some(after(60).as_str()));
            assert_eq!(error.as_deref(), Some("no answer from Stripe: timed out"));
            assert_eq!(reference, None);
            // A 5xx, a 409 (key in use), a 429 and an answer without the object are unknown too.
            for answer in [
                Err(refused(500, None, Some("api_error"))),
                Err(refused(409, None, None)),
                Err(refused(429, None, None)),
                Ok(json!({ "id": "xx_1" })),
            ] {
                run(&conn, movement, answer);
                let (status, attempts, retry_at, _, _) = state(&conn, movement);
                assert_eq!((status, attempts), (open.clone(), 0), "{movement:?}");
                assert_eq!(retry_at.as_deref(), Some(after(60).as_str()));
            }
        }
    }

    #[test]
    fn a_clear_refusal_moves_to_the_next_key_with_backoff() {
        for movement in BOTH {
            let conn = database();
            let mut waits = Vec::new();
            for _ in 0..10 {
                let answer = Err(refused(400, Some("parameter_invalid"), None));
                assert_eq!(run(&conn, movement, answer), Attempt::Failed);
                waits.push(state(&conn, movement).2.unwrap());
            }
            let expected: Vec<String> = [60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 15360]
                .into_iter()
                .map(|s| after(s.min(6 * 3600)))
                .collect();
            assert_eq!(waits, expected);
            let (_, attempts, _, error, _) = state(&conn, movement);
            assert_eq!(attempts, 10);
            assert_eq!(
                error.as_deref(),
                Some("Stripe refused (HTTP 400, parameter_invalid): no")
            );
        }
    }

    #[test]
    fn an_idempotency_error_keeps_the_key_hourly() {
        for movement in BOTH {
            let conn = database();
            let answer = Err(refused(400, None, Some("idempotency_error")));
            assert_eq!(run(&conn, movement, answer), Attempt::Failed);
            let (_, attempts, retry_at, _, _) = state(&conn, movement);
            assert_eq!(attempts, 0);
            assert_eq!(retry_at.as_deref(), Some(after(3600).as_str()));
        }
        // A transfer to a seller without a Stripe account was never sent: same key, hourly.
        let conn = database();
        let due = due(&conn, Movement::Transfer);
        let failure = Failure::NotSent("the seller has no Stripe account".into());
        assert_eq!(
            record(&conn, &due, Err(failure), now()).unwrap(),
            Attempt::Failed
        );
        let (_, attempts, retry_at, _, _) = state(&conn, Movement::Transfer);
        assert_eq!((attempts, retry_at), (0, Some(after(3600))));
    }

    #[test]
    fn success_marks_the_movement_done() {
        let conn = database();
        run(&conn, Movement::Transfer, Err(refused(400, None, None)));
        assert_eq!(
            run(&conn, Movement::Transfer, Ok(json!({ "id": "tr_1" }))),
            Attempt::Done
        );
        assert_eq!(
            state(&conn, Movement::Transfer),
            ("released".into(), 1, None, None, Some("tr_1".into()))
        );
        let released = fixtures::state(&conn, Movement::Transfer, "L1").done_at;
        assert_eq!(released.as_deref(), Some(NOW));
        // Done rows are no longer due, and a late second answer changes nothing.
        assert!(
            store::due_payouts(&conn, NOW, 10, "card", "stripe")
                .unwrap()
                .is_empty()
        );
        assert!(!store::mark_moved(&conn, Movement::Transfer, "L1", "tr_2", NOW).unwrap());

        assert_eq!(
            run(&conn, Movement::Refund, Ok(json!({ "id": "re_1" }))),
            Attempt::Done
        );
        assert_eq!(
            state(&conn, Movement::Refund),
            ("refunded".into(), 0, None, None, Some("re_1".into()))
        );
        assert!(store::due_refunds(&conn, NOW, 10).unwrap().is_empty());
    }

    #[test]
    fn a_refund_already_made_counts_as_done() {
        let conn = database();
        let answer = Err(refused(400, Some("charge_already_refunded"), None));
        assert_eq!(run(&conn, Movement::Refund, answer), Attempt::Done);
        assert_eq!(
            state(&conn, Movement::Refund),
            (
                "refunded".into(),
                0,
                None,
                None,
                Some("already_refunded".into())
            )
        );
        // The same code on a transfer is only a refusal.
        let answer = Err(refused(400, Some("charge_already_refunded"), None));
        assert_eq!(run(&conn, Movement::Transfer, answer), Attempt::Failed);
        assert_eq!(state(&conn, Movement::Transfer).1, 1);
    }
}
