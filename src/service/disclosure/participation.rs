//! Seller participation (`GET /api/proof/participation`): how many independent sellers list
//! here, as a daily snapshot.
//!
//! # Independence
//! An agent is an *independent seller* when it is not the house seller (owner of the reference
//! samples), the operator has not classified it as `internal`, `house_seller`, `house_buyer`
//! or `affiliated` (`PUT /api/operator/parties/{handle}`), and it has created at least one
//! listing that is not a reference sample. Classification is read when a snapshot is computed,
//! so a reclassified agent leaves (or joins) the whole series at the next snapshot.
//!
//! # Snapshot
//! The body is computed at most once per UTC day (by the injected clock) and stored in the
//! settings table with its `generatedAt`. A request on a day that already has a snapshot is
//! served the stored one, even if sellers arrived since. When a refresh fails (the database
//! refuses the read or the write), the previous snapshot is served unchanged, original
//! `generatedAt` and `asOfDate` included; only with no previous snapshot does the error
//! surface. The refresh runs once per day on a read path: the one write that rule allows.

use jiff::tz::TimeZone;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::service::App;
use crate::store::proof::{self as proof_store, IndependentSeller};
use crate::store::settings;

/// How many recent independent sellers the snapshot lists.
const RECENT: usize = 10;

/// `GET /api/proof/participation`: a day's snapshot. It is stored as it is served and read
/// back (a stored snapshot that no longer reads as one counts as none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Participation {
    pub provenance: Source,
    pub generated_at: String,
    pub as_of_date: String,
    pub snapshot_policy: String,
    pub independent_sellers_live: usize,
    pub independent_listings_live: i64,
    pub first_listing_range: Range,
    pub concentration: Concentration,
    pub recent: Vec<RecentSeller>,
    pub series: Vec<Point>,
    pub series_label: String,
    pub chart_title: String,
    pub chart_caption: String,
    pub independent_sellers_ever: usize,
    pub history_policy: String,
    pub caption: String,
    pub independence_definition: String,
    pub acquisition_note: String,
    pub demand_note: String,
    pub limitations: Vec<String>,
    pub concentration_note: String,
}

/// Where the figures come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub source: String,
    pub rule: String,
    pub machine_readable: String,
    pub demand_ledger: String,
}

/// The first listing dates of the first and the last independent seller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub from: Option<String>,
    pub to: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Concentration {
    pub top_seller_listings: i64,
    /// Four decimals; `null` when there are no live listings.
    pub top_seller_share: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentSeller {
    pub seller_name: String,
    pub seller_id: String,
    pub first_listed_at: String,
    pub live_listings: i64,
    pub listing_id: String,
    pub listing_title: String,
}

/// Independent sellers so far on a UTC date.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    pub date: String,
    pub cumulative_sellers: usize,
}

/// Cumulative independent sellers by the UTC date of their first listing.
fn series(sellers: &[IndependentSeller]) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    for (i, seller) in sellers.iter().enumerate() {
        let day = seller
            .first_listed_at
            .get(..10)
            .unwrap_or_default()
            .to_owned();
        match points.last_mut() {
            Some(last) if last.date == day => last.cumulative_sellers = i + 1,
            _ => points.push(Point {
                date: day,
                cumulative_sellers: i + 1,
            }),
        }
    }
    points
}

/// Absolute URLs the snapshot names.
struct Urls {
    participation: String,
    demand: String,
}

fn texts(list: &[&str]) -> Vec<String> {
    list.iter().map(|text| (*text).to_owned()).collect()
}

/// Computes a fresh snapshot body (without `provenance`; the HTTP layer signs it).
fn compute(
    conn: &Connection,
    urls: &Urls,
    generated_at: &str,
    as_of: &str,
) -> Result<Participation> {
    let all = proof_store::independent_sellers(conn)?;
    let live: Vec<&IndependentSeller> = all.iter().filter(|s| s.live_listings > 0).collect();
    let live_listings: i64 = live.iter().map(|s| s.live_listings).sum();
    let top = live.iter().map(|s| s.live_listings).max().unwrap_or(0);
    // Four decimals, rounded half up in integers so the figure is exact and canonical.
    let share = (live_listings > 0)
        .then(|| ((top * 20_000 + live_listings) / (2 * live_listings)) as f64 / 10_000.0);
    let recent = all
        .iter()
        .rev()
        .take(RECENT)
        .map(|s| RecentSeller {
            seller_name: s.name.clone(),
            seller_id: s.id.clone(),
            first_listed_at: s.first_listed_at.clone(),
            live_listings: s.live_listings,
            listing_id: s.first_listing_id.clone(),
            listing_title: s.first_listing_title.clone(),
        })
        .collect();
    Ok(Participation {
        provenance: Source {
            source: "this instance's database: agents, listings and the operator's party classification".into(),
            rule: "an independent seller is an agent other than the house seller, not classified by the operator as internal, house_seller, house_buyer or affiliated, with at least one listing that is not a reference sample".into(),
            machine_readable: urls.participation.clone(),
            demand_ledger: urls.demand.clone(),
        },
        generated_at: generated_at.to_owned(),
        as_of_date: as_of.to_owned(),
        snapshot_policy: "Computed at most once per UTC day, at the first request of the day, and stored; later requests that day get the stored snapshot. If a refresh fails, the previous snapshot is served unchanged, with its original generatedAt and asOfDate.".into(),
        independent_sellers_live: live.len(),
        independent_listings_live: live_listings,
        first_listing_range: Range {
            from: all.first().map(|s| s.first_listed_at.clone()),
            to: all.last().map(|s| s.first_listed_at.clone()),
        },
        concentration: Concentration {
            top_seller_listings: top,
            top_seller_share: share,
        },
        recent,
        series: series(&all),
        series_label: "cumulative independent sellers, by the UTC date of their first listing".into(),
        chart_title: "Independent sellers over time".into(),
        chart_caption: "Each point counts every independent seller whose first non-sample listing was created on or before that date.".into(),
        independent_sellers_ever: all.len(),
        history_policy: "The series is recomputed from the listings table at every snapshot: an agent that the operator reclassifies leaves (or joins) the whole series, and a seller whose listings are all deactivated still counts in the series and in independentSellersEver, not in the live figures.".into(),
        caption: format!(
            "{} independent sellers have listed here; {} have live listings ({} listings).",
            all.len(),
            live.len(),
            live_listings
        ),
        independence_definition: "Independent: not the house seller (owner of the reference samples) and not classified by the operator as internal, house_seller, house_buyer or affiliated. Unclassified agents count as independent; the operator's classification is the only exclusion, so this is a residue, not a verification of who is behind an agent.".into(),
        acquisition_note: "Sellers register themselves through the public API; this instance pays no one to list and imports no listings. Reference samples are created by the house seller and never counted.".into(),
        demand_note: "Participation counts sellers, not sales: see the demand ledger for settled sales.".into(),
        limitations: texts(&[
            "Agents are self-registered; one person or program may run several agents, and nothing here can tell.",
            "Independence is only as good as the operator's classification of its own agents.",
            "The snapshot may be up to one day old; generatedAt says when it was computed.",
            "Signed by this instance's key only; nothing here is attested by a third party.",
        ]),
        concentration_note: "topSellerListings is the largest number of live listings held by one independent seller; topSellerShare is its share of independentListingsLive (null when there are none).".into(),
    })
}

/// The stored snapshot, if there is one that reads as a snapshot.
fn stored(conn: &Connection) -> Result<Option<Participation>> {
    Ok(settings::get(conn, settings::PARTICIPATION)?
        .and_then(|snapshot| serde_json::from_value(snapshot).ok()))
}

/// `GET /api/proof/participation`: today's snapshot, computing it on the first request of the
/// UTC day.
///
/// # Errors
/// Database failure when no earlier snapshot exists to fall back on.
pub async fn participation(app: &App) -> Result<Participation> {
    let stamp = app.clock.now();
    let today = stamp.to_zoned(TimeZone::UTC).date().to_string();
    let previous = match app.store.read(stored).await {
        Ok(Some(snapshot)) if snapshot.as_of_date == today => return Ok(snapshot),
        Ok(previous) => previous,
        Err(error) => {
            tracing::warn!(%error, "participation snapshot read");
            None
        }
    };
    let now = app.now();
    let urls = Urls {
        participation: app.url("/api/proof/participation"),
        demand: app.url("/api/proof/demand"),
    };
    let refreshed = app
        .store
        .write(move |tx| {
            // Another request may have refreshed since our read: keep one snapshot per day.
            if let Some(snapshot) = stored(tx)?
                && snapshot.as_of_date == today
            {
                return Ok(snapshot);
            }
            let snapshot = compute(tx, &urls, &now, &today)?;
            let value = serde_json::to_value(&snapshot)
                .map_err(|e| Error::Internal(format!("participation snapshot: {e}")))?;
            settings::put(tx, settings::PARTICIPATION, &value, &now)?;
            Ok(snapshot)
        })
        .await;
    match (refreshed, previous) {
        (Ok(snapshot), _) => Ok(snapshot),
        // A follower cannot store today's snapshot: the primary makes it (the request is
        // redirected there, and the snapshot then reaches the replica).
        (Err(Error::ReadOnlyFollower), _) => Err(Error::ReadOnlyFollower),
        (Err(error), Some(previous)) => {
            tracing::warn!(%error, "participation snapshot refresh failed; serving the previous one");
            Ok(previous)
        }
        (Err(e), None) => Err(e),
    }
}

/// The series of the current snapshot as `(date, cumulativeSellers)` pairs, for the
/// disclosures chart.
///
/// # Errors
/// As [`participation`].
pub async fn chart_series(app: &App) -> Result<Vec<(String, i64)>> {
    let snapshot = participation(app).await?;
    Ok(snapshot
        .series
        .into_iter()
        .map(|point| {
            (
                point.date,
                i64::try_from(point.cumulative_sellers).unwrap_or(i64::MAX),
            )
        })
        .collect())
}
