//! Catalogue and platform statistics.
//!
//! Definitions: `totalListings` counts active, non-sample listings; `totalAgents` counts
//! registered agents (not the house seller); `totalQueries` and `totalQueriers` are defined in
//! `service::catalog::counters`; `totalSales` counts settled sales: ledger rows outside reference
//! listings (free sales included, reference-sample rows never); `platformFeeCents` sums their
//! fees; `armsLengthCents` is the demand ledger's figure (`service::ledger`). Vertical and
//! category counts are of active, non-sample listings.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::service::App;
use crate::service::catalog::counters;
use crate::service::ledger;
use crate::store::agents as agent_store;
use crate::store::proof as proof_store;

/// A vertical with its listing count.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerticalRecord<'a> {
    pub slug: &'a str,
    pub name: &'a str,
    pub icon: &'a str,
    pub is_external: bool,
    pub listing_count: i64,
    pub category: &'a str,
}

/// `GET /api/verticals`: every vertical and how many there are.
#[derive(Debug, Serialize)]
pub struct Verticals<'a> {
    pub verticals: Vec<VerticalRecord<'a>>,
    pub total: usize,
}

/// A macro-category with its verticals and listing count.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CategoryRecord<'a> {
    pub slug: &'a str,
    pub name: &'a str,
    pub icon: &'a str,
    pub description: &'a str,
    pub class: &'a str,
    pub vertical_count: usize,
    pub listing_count: i64,
    pub verticals: Vec<&'a str>,
}

/// The platform figures (`GET /api/stats`); `GET /api/marketplace/stats` adds the fees and the
/// arm's-length total.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures<'a> {
    pub platform: &'static str,
    pub total_verticals: i64,
    pub total_agents: i64,
    pub total_queriers: i64,
    pub total_listings: i64,
    pub total_queries: i64,
    pub total_sales: i64,
    /// Marketplace stats only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_fee_cents: Option<i64>,
    pub verticals: Vec<VerticalRecord<'a>>,
    /// Marketplace stats only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arms_length_cents: Option<i64>,
}

/// Per-vertical records.
fn vertical_records<'a>(app: &'a App, counts: &HashMap<String, i64>) -> Vec<VerticalRecord<'a>> {
    app.taxonomy
        .verticals
        .iter()
        .map(|v| VerticalRecord {
            slug: &v.slug,
            name: &v.name,
            icon: &v.icon,
            is_external: v.is_external,
            listing_count: counts.get(&v.slug).copied().unwrap_or(0),
            category: &v.category,
        })
        .collect()
}

/// `GET /api/verticals`.
///
/// # Errors
/// Database failure.
pub async fn verticals(app: &App) -> Result<Verticals<'_>> {
    let counts = app.vertical_counts();
    let verticals = vertical_records(app, &counts);
    Ok(Verticals {
        total: verticals.len(),
        verticals,
    })
}

/// `GET /api/marketplace/categories`: an array of categories with counts.
///
/// # Errors
/// Database failure.
pub async fn categories(app: &App) -> Result<Vec<CategoryRecord<'_>>> {
    let counts = app.vertical_counts();
    Ok(app
        .taxonomy
        .categories
        .iter()
        .map(|c| {
            let verticals: Vec<&str> = app
                .taxonomy
                .verticals
                .iter()
                .filter(|v| v.category == c.slug)
                .map(|v| v.slug.as_str())
                .collect();
            let listing_count: i64 = verticals
                .iter()
                .map(|slug| counts.get(*slug).copied().unwrap_or(0))
                .sum();
            CategoryRecord {
                slug: &c.slug,
                name: &c.name,
                icon: &c.icon,
                description: &c.description,
                class: &c.class,
                vertical_count: verticals.len(),
                listing_count,
                verticals,
            }
        })
        .collect())
}

/// `GET /api/stats`.
///
/// # Errors
/// Database failure.
pub async fn platform(app: &App) -> Result<Figures<'_>> {
    Ok(Figures {
        platform_fee_cents: None,
        ..figures(app).await?
    })
}

/// The platform figures, with the platform fees of settled sales.
async fn figures(app: &App) -> Result<Figures<'_>> {
    let counts = app.vertical_counts();
    let (pending_queries, pending_queriers) = app.counters.pending_queries();
    let (agents, queries, queriers, (sales, fees)) = app
        .store
        .read(move |conn| {
            Ok((
                agent_store::count(conn)?,
                counters::stored(conn, counters::QUERIES)? + pending_queries,
                counters::distinct_queriers(conn, &pending_queriers)?,
                proof_store::settled_sales(conn)?,
            ))
        })
        .await?;
    Ok(Figures {
        platform: "bourse",
        total_verticals: i64::try_from(app.taxonomy.verticals.len()).unwrap_or(i64::MAX),
        total_agents: agents,
        total_queriers: queriers,
        total_listings: counts.values().sum::<i64>(),
        total_queries: queries,
        total_sales: sales,
        platform_fee_cents: Some(fees),
        verticals: vertical_records(app, &counts),
        arms_length_cents: None,
    })
}

/// `GET /api/marketplace/stats`: the platform figures plus fee and arm's-length totals.
///
/// # Errors
/// Database failure.
pub async fn marketplace(app: &App) -> Result<Figures<'_>> {
    let stats = figures(app).await?;
    // One definition, the demand ledger's (`service::ledger`).
    let (rows, configured) = app.store.read(ledger::load).await?;
    Ok(Figures {
        arms_length_cents: Some(ledger::arms_length_cents(&rows, configured)),
        ..stats
    })
}
