//! What `GET /metrics` shows beyond what the hot paths record as they go (requests, the
//! store's groups and waits, callback attempts): sampled at scrape time, so serving a request
//! costs nothing for them. The database counts (purchases by rail and state, escrow held,
//! callback deliveries by status) are one read on a reader thread; the in-memory tallies
//! (signed-answer lookups, outbound calls, rate-limit refusals, the writer's queue, follower
//! lag) are copied from where they are kept.

use crate::error::Result;
use crate::service::App;
use crate::service::rail::Rail;
use crate::store::{messages, payments, purchases};

/// The purchase states, as stored.
const PURCHASE_STATES: [&str; 5] = [
    "pending_payment",
    "paid",
    "delivered",
    "expired",
    "cancelled",
];

/// The callback delivery states, as stored (`dead` is the dead-letter queue).
const DELIVERY_STATES: [&str; 3] = ["pending", "delivered", "dead"];

/// The exposition in Prometheus' text format, with every sampled value brought up to date.
///
/// # Errors
/// A database failure while counting.
pub async fn render(app: &App) -> Result<String> {
    let now = app.now();
    let (by_rail, escrow, deliveries) = app
        .store
        .read(move |conn| {
            Ok((
                purchases::count_by_rail_and_status(conn)?,
                payments::escrow_totals(conn, &now)?,
                messages::deliveries_by_status(conn)?,
            ))
        })
        .await?;
    let telemetry = &app.telemetry;
    // Every known rail and state is shown, at 0 when none is stored (a series that vanished
    // would leave its last value standing in Prometheus).
    for rail in Rail::ALL {
        for state in PURCHASE_STATES {
            let count = by_rail
                .iter()
                .find(|(r, s, _)| r == rail.name() && s == state)
                .map_or(0, |(_, _, n)| *n);
            telemetry
                .gauge(
                    "bourse_purchases",
                    &[("rail", rail.name()), ("state", state)],
                )
                .set(count as f64);
        }
    }
    for (rail, state, count) in &by_rail {
        if Rail::from_name(rail).is_none() || !PURCHASE_STATES.contains(&state.as_str()) {
            telemetry
                .gauge("bourse_purchases", &[("rail", rail), ("state", state)])
                .set(*count as f64);
        }
    }
    telemetry
        .gauge("bourse_escrow_held_sales", &[])
        .set(escrow.held_rows as f64);
    telemetry
        .gauge("bourse_escrow_held_cents", &[])
        .set(escrow.held_net_cents as f64);
    for state in DELIVERY_STATES {
        let count = deliveries
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |(_, n)| *n);
        telemetry
            .gauge("bourse_callback_deliveries", &[("status", state)])
            .set(count as f64);
    }
    telemetry
        .gauge("bourse_store_write_queue_depth", &[])
        .set(app.store.write_queue_depth() as f64);
    telemetry
        .counter("bourse_store_commits_total", &[])
        .absolute(app.store.commits());
    let (hits, misses) = app.signed.lookups();
    telemetry
        .counter("bourse_signed_answer_cache_hits_total", &[])
        .absolute(hits);
    telemetry
        .counter("bourse_signed_answer_cache_misses_total", &[])
        .absolute(misses);
    for (purpose, client) in [
        ("deliverable", &app.outbound),
        ("verify", &app.outbound_verify),
        ("callback", &app.outbound_callbacks),
    ] {
        for (outcome, count) in client.outcomes() {
            telemetry
                .counter(
                    "bourse_outbound_requests_total",
                    &[("purpose", purpose), ("outcome", outcome)],
                )
                .absolute(count);
        }
    }
    for (limit, count) in app.limiter.refusals() {
        telemetry
            .counter("bourse_rate_limit_refusals_total", &[("limit", limit)])
            .absolute(count);
    }
    if let Some(lag) = app.follower.as_ref().and_then(|f| f.lag_seconds()) {
        telemetry.gauge("bourse_follower_lag_seconds", &[]).set(lag);
    }
    Ok(telemetry.render())
}
