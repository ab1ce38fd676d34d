//! The operator console's overview: the counts of `/api/stats` (as that endpoint defines them),
//! sales, messages and escrow held per day, callback outcomes, replication, version, uptime,
//! the data directory's size and warnings about risky settings. Operator-only; counts and sums
//! only, never a message body.

use jiff::{SignedDuration, Timestamp};

use crate::clock::rfc3339;
use crate::error::Result;
use crate::service::App;
use crate::service::catalog::stats;
use crate::store::console as store;

/// How many days the overview's charts show, today included.
pub const DAYS: usize = 14;

/// One day of the charts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Day {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    pub sales: i64,
    pub sales_cents: i64,
    pub messages: i64,
    /// The sellers' net held in escrow at the end of the day (now, for today).
    pub escrow_held_cents: i64,
}

/// What the overview shows.
#[derive(Debug)]
pub struct Overview {
    /// `/api/stats`' `totalAgents`, `totalListings`, `totalSales`.
    pub agents: i64,
    pub listings: i64,
    pub sales: i64,
    /// Oldest first, [`DAYS`] of them.
    pub days: Vec<Day>,
    /// Callback deliveries: pending, delivered, dead letters.
    pub callbacks_pending: i64,
    pub callbacks_delivered: i64,
    pub dead_letters: i64,
    /// `single`, `primary` (Litestream replicates it) or `follower`.
    pub role: &'static str,
    /// A follower's lag behind its primary, in seconds, once known.
    pub lag_seconds: Option<f64>,
    pub version: &'static str,
    pub uptime: std::time::Duration,
    /// The files directly inside the data directory, in bytes.
    pub data_bytes: u64,
    /// Settings that deserve a second look, as sentences.
    pub warnings: Vec<String>,
    /// The time the figures were read (the injected clock).
    pub now: String,
}

/// The overview, read now.
///
/// # Errors
/// Database failure.
pub async fn overview(app: &App) -> Result<Overview> {
    let figures = stats::platform(app).await?;
    let now = app.clock.now();
    let first = now - SignedDuration::from_hours(24 * (DAYS as i64 - 1));
    let since = day_of(first);
    // The end of each day (its next midnight), or now for today.
    let ends: Vec<(String, String)> = (0..DAYS)
        .map(|offset| {
            let at = first + SignedDuration::from_hours(24 * offset as i64);
            let day = day_of(at);
            let end = if offset + 1 == DAYS {
                rfc3339(now)
            } else {
                format!(
                    "{}T00:00:00.000Z",
                    day_of(at + SignedDuration::from_hours(24))
                )
            };
            (day, end)
        })
        .collect();
    let since_read = since.clone();
    let ends_read = ends.clone();
    let (sales, messages, held, (pending, delivered, dead)) = app
        .store
        .read(move |conn| {
            let held = ends_read
                .iter()
                .map(|(_, end)| store::escrow_held_at(conn, end))
                .collect::<Result<Vec<i64>>>()?;
            Ok((
                store::sales_per_day(conn, &since_read)?,
                store::messages_per_day(conn, &since_read)?,
                held,
                store::callback_outcomes(conn)?,
            ))
        })
        .await?;
    let days = ends
        .into_iter()
        .zip(held)
        .map(|((day, _), escrow_held_cents)| {
            let (sales, sales_cents) = sales
                .iter()
                .find(|(d, _, _)| *d == day)
                .map_or((0, 0), |(_, n, cents)| (*n, *cents));
            let messages = messages
                .iter()
                .find(|(d, _)| *d == day)
                .map_or(0, |(_, n)| *n);
            Day {
                day,
                sales,
                sales_cents,
                messages,
                escrow_held_cents,
            }
        })
        .collect();
    let dir = app.data_dir.clone();
    let data_bytes = tokio::task::spawn_blocking(move || directory_bytes(&dir))
        .await
        .unwrap_or(0);
    let (role, lag_seconds) = match &app.follower {
        Some(follower) => ("follower", follower.lag_seconds()),
        None if app.replicated => ("primary", None),
        None => ("single", None),
    };
    Ok(Overview {
        agents: figures.total_agents,
        listings: figures.total_listings,
        sales: figures.total_sales,
        days,
        callbacks_pending: pending,
        callbacks_delivered: delivered,
        dead_letters: dead,
        role,
        lag_seconds,
        version: env!("CARGO_PKG_VERSION"),
        uptime: app.started.elapsed(),
        data_bytes,
        warnings: warnings(app),
        now: rfc3339(now),
    })
}

fn day_of(at: Timestamp) -> String {
    rfc3339(at)[..10].to_owned()
}

/// The size of the files directly inside `dir` (the database, its WAL, keys).
fn directory_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.metadata().ok())
                .filter(std::fs::Metadata::is_file)
                .map(|meta| meta.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Settings worth a second look.
fn warnings(app: &App) -> Vec<String> {
    let mut warnings = Vec::new();
    if !app.public_url.starts_with("https://") {
        warnings.push(format!(
            "The public URL {} is not https: the console's cookie is not marked Secure, and agents' keys cross the network in clear unless a proxy in front adds TLS.",
            app.public_url
        ));
    }
    if app.sandbox() {
        warnings.push(
            "Payments run on the sandbox rail: no real money moves, and anyone holding a checkout link can mark it paid.".into(),
        );
    }
    if app.follower.as_ref().is_some_and(|f| !f.serves()) {
        warnings.push("This follower lags its primary beyond its limit and is not ready.".into());
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_is_the_date_of_its_instant() {
        let at: Timestamp = "2026-11-21T23:59:59Z".parse().unwrap();
        assert_eq!(day_of(at), "2026-11-21");
    }
}

/// How many things the sandbox page's feed lists.
pub const ACTIVITY: i64 = 20;

/// What agents are doing, for the sandbox page: the newest [`ACTIVITY`] listings created and
/// purchases opened or paid, and how many messages were accepted in the last hour (a count,
/// never a body).
#[derive(Clone, Debug)]
pub struct Activity {
    pub lines: Vec<store::ActivityLine>,
    pub messages_last_hour: i64,
}

/// The feed, read now (by the server's clock, the sandbox's test clock included).
///
/// # Errors
/// Database failure.
pub async fn activity(app: &App) -> Result<Activity> {
    let since = rfc3339(app.clock.now() - SignedDuration::from_hours(1));
    app.store
        .read(move |conn| {
            Ok(Activity {
                lines: store::activity(conn, ACTIVITY)?,
                messages_last_hour: store::messages_since(conn, &since)?,
            })
        })
        .await
}
