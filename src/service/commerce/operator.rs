//! What the operator sees of purchases (the console's purchases section): every purchase by
//! state and rail, and the escrow queue with its release times.

use crate::error::{Error, Result};
use crate::service::App;
use crate::service::rail::Rail;
use crate::store::console::{self as store, PurchaseLine};

/// The most purchases or queue rows a page lists.
pub const LIMIT: i64 = 100;

/// The states a purchase can be in, as stored.
pub const STATES: [&str; 5] = [
    "pending_payment",
    "paid",
    "delivered",
    "expired",
    "cancelled",
];

/// A purchase filter: a state and a rail (each `None` for all).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub status: Option<&'static str>,
    pub rail: Option<Rail>,
}

impl Filter {
    /// The filter a form names; empty values mean all.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming an unknown state or rail.
    pub fn read(status: Option<&str>, rail: Option<&str>) -> Result<Filter> {
        let status = match status.filter(|s| !s.is_empty()) {
            None => None,
            Some(wanted) => Some(STATES.iter().copied().find(|s| *s == wanted).ok_or_else(
                || Error::InvalidArgument(format!("status: one of {}", STATES.join(", "))),
            )?),
        };
        let rail = match rail.filter(|r| !r.is_empty()) {
            None => None,
            Some(name) => Some(Rail::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Rail::ALL.iter().map(|r| r.name()).collect();
                Error::InvalidArgument(format!("rail: one of {}", names.join(", ")))
            })?),
        };
        Ok(Filter { status, rail })
    }
}

/// Purchases matching `filter`, newest first, and how many match.
///
/// # Errors
/// Database failure.
pub async fn purchases(app: &App, filter: Filter) -> Result<(Vec<PurchaseLine>, i64)> {
    app.store
        .read(move |conn| {
            store::purchases(
                conn,
                filter.status,
                filter.rail.map(Rail::name),
                None,
                LIMIT,
            )
        })
        .await
}

/// The escrow queue: held sales, the soonest release first.
///
/// # Errors
/// Database failure.
pub async fn escrow_queue(app: &App) -> Result<Vec<PurchaseLine>> {
    app.store
        .read(|conn| store::escrow_queue(conn, LIMIT))
        .await
}

/// `GET /api/sandbox/clock`: the sandbox clock's time (it moves only by the operator's
/// `POST /api/sandbox/clock`, or the console's form).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxClock {
    pub now: String,
}

/// The sandbox clock now.
pub fn sandbox_clock(app: &App) -> SandboxClock {
    SandboxClock { now: app.now() }
}
