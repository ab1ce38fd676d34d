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
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::service::App;
use crate::store::proof::{self as proof_store, IndependentSeller};
use crate::store::settings;

/// How many recent independent sellers the snapshot lists.
const RECENT: usize = 10;

/// Cumulative independent sellers by the UTC date of their first listing.
fn series(sellers: &[IndependentSeller]) -> Vec<Value> {
    let mut points: Vec<(String, usize)> = Vec::new();
    for (i, seller) in sellers.iter().enumerate() {
        let day = seller
            .first_listed_at
            .get(..10)
            .unwrap_or_default()
            .to_owned();
        match points.last_mut() {
            Some((last, n)) if *last == day => *n = i + 1,
            _ => points.push((day, i + 1)),
        }
    }
    points
        .into_iter()
        .map(|(date, n)| json!({"date": date, "cumulativeSellers": n}))
        .collect()
}

/// Absolute URLs the snapshot names.
struct Urls {
    participation: String,
    demand: String,
}

/// Computes a fresh snapshot body (without `provenance`; the HTTP layer signs it).
fn compute(conn: &Connection, urls: &Urls, generated_at: &str, as_of: &str) -> Result<Value> {
    let all = proof_store::independent_sellers(conn)?;
    let live: Vec<&IndependentSeller> = all.iter().filter(|s| s.live_listings > 0).collect();
    let live_listings: i64 = live.iter().map(|s| s.live_listings).sum();
    let top = live.iter().map(|s| s.live_listings).max().unwrap_or(0);
    let share = if live_listings > 0 {
        // Four decimals, rounded half up in integers so the figure is exact and canonical.
        json!(((top * 20_000 + live_listings) / (2 * live_listings)) as f64 / 10_000.0)
    } else {
        Value::Null
    };
    let recent: Vec<Value> = all
        .iter()
        .rev()
        .take(RECENT)
        .map(|s| {
            json!({
                "sellerName": s.name,
                "sellerId": s.id,
                "firstListedAt": s.first_listed_at,
                "liveListings": s.live_listings,
                "listingId": s.first_listing_id,
                "listingTitle": s.first_listing_title,
            })
        })
        .collect();
    Ok(json!({
        "provenance": {
            "source": "this instance's database: agents, listings and the operator's party classification",
            "rule": "an independent seller is an agent other than the house seller, not classified by the operator as internal, house_seller, house_buyer or affiliated, with at least one listing that is not a reference sample",
            "machineReadable": urls.participation,
            "demandLedger": urls.demand,
        },
        "generatedAt": generated_at,
        "asOfDate": as_of,
        "snapshotPolicy": "Computed at most once per UTC day, at the first request of the day, and stored; later requests that day get the stored snapshot. If a refresh fails, the previous snapshot is served unchanged, with its original generatedAt and asOfDate.",
        "independentSellersLive": live.len(),
        "independentListingsLive": live_listings,
        "firstListingRange": {
            "from": all.first().map(|s| s.first_listed_at.clone()),
            "to": all.last().map(|s| s.first_listed_at.clone()),
        },
        "concentration": {
            "topSellerListings": top,
            "topSellerShare": share,
        },
        "recent": recent,
        "series": series(&all),
        "seriesLabel": "cumulative independent sellers, by the UTC date of their first listing",
        "chartTitle": "Independent sellers over time",
        "chartCaption": "Each point counts every independent seller whose first non-sample listing was created on or before that date.",
        "independentSellersEver": all.len(),
        "historyPolicy": "The series is recomputed from the listings table at every snapshot: an agent that the operator reclassifies leaves (or joins) the whole series, and a seller whose listings are all deactivated still counts in the series and in independentSellersEver, not in the live figures.",
        "caption": format!(
            "{} independent sellers have listed here; {} have live listings ({} listings).",
            all.len(),
            live.len(),
            live_listings
        ),
        "independenceDefinition": "Independent: not the house seller (owner of the reference samples) and not classified by the operator as internal, house_seller, house_buyer or affiliated. Unclassified agents count as independent; the operator's classification is the only exclusion, so this is a residue, not a verification of who is behind an agent.",
        "acquisitionNote": "Sellers register themselves through the public API; this instance pays no one to list and imports no listings. Reference samples are created by the house seller and never counted.",
        "demandNote": "Participation counts sellers, not sales: see the demand ledger for settled sales.",
        "limitations": [
            "Agents are self-registered; one person or program may run several agents, and nothing here can tell.",
            "Independence is only as good as the operator's classification of its own agents.",
            "The snapshot may be up to one day old; generatedAt says when it was computed.",
            "Signed by this instance's key only; nothing here is attested by a third party.",
        ],
        "concentrationNote": "topSellerListings is the largest number of live listings held by one independent seller; topSellerShare is its share of independentListingsLive (null when there are none).",
    }))
}

/// `GET /api/proof/participation`: today's snapshot, computing it on the first request of the
/// UTC day.
///
/// # Errors
/// Database failure when no earlier snapshot exists to fall back on.
pub async fn participation(app: &App) -> Result<Value> {
    let stamp = app.clock.now();
    let today = stamp.to_zoned(TimeZone::UTC).date().to_string();
    let stored = app
        .store
        .read(|conn| settings::get(conn, settings::PARTICIPATION))
        .await;
    let previous = match stored {
        Ok(Some(snapshot)) if snapshot["asOfDate"] == today.as_str() => return Ok(snapshot),
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
            if let Some(snapshot) = settings::get(tx, settings::PARTICIPATION)?
                && snapshot["asOfDate"] == today.as_str()
            {
                return Ok(snapshot);
            }
            let snapshot = compute(tx, &urls, &now, &today)?;
            settings::put(tx, settings::PARTICIPATION, &snapshot, &now)?;
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
    Ok(snapshot["series"]
        .as_array()
        .map(|points| {
            points
                .iter()
                .map(|p| {
                    (
                        p["date"].as_str().unwrap_or_default().to_owned(),
                        p["cumulativeSellers"].as_i64().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default())
}
