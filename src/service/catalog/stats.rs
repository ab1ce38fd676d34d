//! Catalogue and platform statistics.
//!
//! Definitions: `totalListings` counts active, non-sample listings; `totalAgents` counts
//! registered agents (not the house seller); `totalQueries` and `totalQueriers` are defined in
//! `service::catalog::counters`; `totalSales` counts settled sales: ledger rows outside reference
//! listings (free sales included, reference-sample rows never); `platformFeeCents` sums their
//! fees; `armsLengthCents` is the demand ledger's figure (`service::ledger`). Vertical and
//! category counts are of active, non-sample listings.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::error::Result;
use crate::service::App;
use crate::service::catalog::counters;
use crate::service::ledger;
use crate::store::agents as agent_store;
use crate::store::proof as proof_store;

/// Per-vertical records: `{slug, name, icon, isExternal, listingCount, category}`.
fn vertical_records(app: &App, counts: &HashMap<String, i64>) -> Vec<Value> {
    app.taxonomy
        .verticals
        .iter()
        .map(|v| {
            json!({
                "slug": v.slug,
                "name": v.name,
                "icon": v.icon,
                "isExternal": v.is_external,
                "listingCount": counts.get(&v.slug).copied().unwrap_or(0),
                "category": v.category,
            })
        })
        .collect()
}

/// `GET /api/verticals`.
///
/// # Errors
/// Database failure.
pub async fn verticals(app: &App) -> Result<Value> {
    let counts = app.vertical_counts();
    let records = vertical_records(app, &counts);
    Ok(json!({ "verticals": records, "total": records.len() }))
}

/// `GET /api/marketplace/categories`: an array of categories with counts.
///
/// # Errors
/// Database failure.
pub async fn categories(app: &App) -> Result<Value> {
    let counts = app.vertical_counts();
    let categories: Vec<Value> = app
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
            json!({
                "slug": c.slug,
                "name": c.name,
                "icon": c.icon,
                "description": c.description,
                "class": c.class,
                "verticalCount": verticals.len(),
                "listingCount": listing_count,
                "verticals": verticals,
            })
        })
        .collect();
    Ok(Value::Array(categories))
}

/// `GET /api/stats`.
///
/// # Errors
/// Database failure.
pub async fn platform(app: &App) -> Result<Value> {
    let mut stats = figures(app).await?;
    stats
        .as_object_mut()
        .expect("an object")
        .shift_remove("platformFeeCents");
    Ok(stats)
}

/// The platform figures, with the platform fees of settled sales.
async fn figures(app: &App) -> Result<Value> {
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
    Ok(json!({
        "platform": "bourse",
        "totalVerticals": app.taxonomy.verticals.len(),
        "totalAgents": agents,
        "totalQueriers": queriers,
        "totalListings": counts.values().sum::<i64>(),
        "totalQueries": queries,
        "totalSales": sales,
        "platformFeeCents": fees,
        "verticals": vertical_records(app, &counts),
    }))
}

/// `GET /api/marketplace/stats`: the platform figures plus fee and arm's-length totals.
///
/// # Errors
/// Database failure.
pub async fn marketplace(app: &App) -> Result<Value> {
    let mut stats = figures(app).await?;
    // One definition, the demand ledger's (`service::ledger`).
    let (rows, configured) = app.store.read(ledger::load).await?;
    stats["armsLengthCents"] = ledger::arms_length_cents(&rows, configured).into();
    Ok(stats)
}
