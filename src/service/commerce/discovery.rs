//! x402 Bazaar discovery (`GET /discovery/resources`, `GET /discovery/search`): the active paid
//! listings in x402's `DiscoveryResource` shape, each with the payment requirements its 402
//! carries and bourse's trust signals under `extensions.bourse`.
//!
//! Only the x402 rail gives a listing x402 requirements: on an instance without it both answer
//! an empty list (`total` 0). Reference samples are left out, as browse leaves them out by
//! default. Every item carries the same terms (this instance's scheme, network and `payTo`),
//! so the filters `type`, `scheme`, `network`, `payTo` and `extensions` keep all the listings or
//! none, and are always applied; query parameters discovery does not know are named in
//! `unappliedFilters`. Search runs the browse index's full-text search (FTS5 over titles and
//! descriptions), newest first, paged with an opaque cursor.

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::request::commerce::{DiscoveryFilters, ListResources, SearchResources, search_cursor};
use crate::service::App;
use crate::service::catalog::browse::{self, Filters, Price, Query, Samples, Sort};
use crate::service::catalog::reputation;
use crate::service::commerce::checkout;
use crate::service::commerce::rails::x402::bazaar;
use crate::store::listings::ListingRow;
use crate::store::purchases as purchase_store;

/// The x402 protocol version of every answer and item.
const X402_VERSION: u8 = 2;
/// The extension names every item carries (keys of its `extensions`).
const EXTENSIONS: [&str; 2] = ["bazaar", "bourse"];

/// `GET /discovery/resources`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesPage {
    pub x402_version: u8,
    pub items: Vec<DiscoveryResource>,
    pub pagination: Pagination,
    /// Query parameters that were not applied (unknown to this server); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unapplied_filters: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Pagination {
    pub limit: usize,
    pub offset: usize,
    pub total: usize,
}

/// `GET /discovery/search`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    pub x402_version: u8,
    pub resources: Vec<DiscoveryResource>,
    /// Always false: every match is searched.
    pub partial_results: bool,
    pub pagination: SearchPagination,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unapplied_filters: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SearchPagination {
    pub limit: usize,
    /// The next page's cursor; `null` on the last page.
    pub cursor: Option<String>,
}

/// One paid listing as x402 discovery shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryResource {
    /// The purchase URL (`POST`).
    pub resource: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub x402_version: u8,
    /// The v2 `PaymentRequirements` its 402 carries (x402's own JSON).
    pub accepts: Vec<Value>,
    pub last_updated: String,
    pub description: String,
    pub mime_type: &'static str,
    pub service_name: String,
    pub tags: Vec<String>,
    pub extensions: Extensions,
}

#[derive(Debug, Serialize)]
pub struct Extensions {
    pub bazaar: bazaar::Extension,
    /// bourse's own: the listing and its trust signals.
    pub bourse: Trust,
}

/// What bourse knows of a listing that a buyer may weigh: verified buyers' ratings, settled
/// sales, the seller's reputation and the last delivery.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trust {
    pub listing_id: String,
    /// The listing's detail (`GET`).
    pub listing_url: String,
    /// Mean rating (1–5, two decimals) of the buyers who rated it; `null` before the first.
    pub rating_average: Option<f64>,
    /// Ratings, each by a buyer of a delivered purchase.
    pub rating_count: i64,
    /// Sales settled for this listing.
    pub settled_sales: i64,
    /// The seller's reputation (0–5), as browse's `sort=trust` uses it.
    pub seller_reputation: f64,
    /// When a buyer last received the deliverable; `null` if never.
    pub last_delivered_at: Option<String>,
}

/// `GET /discovery/resources`: a page of the active paid listings, newest first.
///
/// # Errors
/// Database failure.
pub async fn resources(app: &App, request: ListResources) -> Result<ResourcesPage> {
    let ListResources {
        filters,
        limit,
        offset,
    } = request;
    let (items, total) = if admits(app, &filters) {
        page(app, None, limit, offset).await?
    } else {
        (Vec::new(), 0)
    };
    Ok(ResourcesPage {
        x402_version: X402_VERSION,
        items,
        pagination: Pagination {
            limit,
            offset,
            total,
        },
        unapplied_filters: filters.unknown,
    })
}

/// `GET /discovery/search`: the active paid listings whose title or description holds every
/// word of `query`, newest first.
///
/// # Errors
/// Database failure.
pub async fn search(app: &App, request: SearchResources) -> Result<SearchPage> {
    let SearchResources {
        query,
        filters,
        limit,
        offset,
    } = request;
    let fts = browse::fts_query(&query);
    let (resources, total) = match fts {
        Some(fts) if admits(app, &filters) => page(app, Some(fts), limit, offset).await?,
        _ => (Vec::new(), 0),
    };
    let next = offset + resources.len();
    Ok(SearchPage {
        x402_version: X402_VERSION,
        partial_results: false,
        pagination: SearchPagination {
            limit,
            cursor: (!resources.is_empty() && next < total).then(|| search_cursor(next)),
        },
        resources,
        unapplied_filters: filters.unknown,
    })
}

/// Whether the filters keep this instance's items: there are some (x402 is configured) and
/// every filter holds for the terms they all share.
fn admits(app: &App, filters: &DiscoveryFilters) -> bool {
    let Some(settings) = app.x402.as_ref() else {
        return false;
    };
    filters.kind.as_deref().is_none_or(|kind| kind == "http")
        && filters.scheme.as_deref().is_none_or(|s| s == "exact")
        && filters
            .network
            .as_deref()
            .is_none_or(|n| n == settings.network)
        && filters
            .pay_to
            .as_deref()
            .is_none_or(|p| p.eq_ignore_ascii_case(&settings.pay_to))
        && filters
            .extensions
            .iter()
            .all(|name| EXTENSIONS.contains(&name.as_str()))
}

/// One page of active paid listings (matching `fts` when given), as discovery items, and the
/// total of matches.
async fn page(
    app: &App,
    fts: Option<String>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<DiscoveryResource>, usize)> {
    let query = Query {
        filters: Filters {
            fts,
            category: None,
            categories: None,
            vertical: None,
            listing_type: None,
            samples: Samples::Exclude,
            price: Price::Paid,
            min_rating_tenths: None,
        },
        sort: Sort::Recent,
        limit,
        offset,
    };
    let (rows, total) = browse::fetch_page(app, query).await?;
    let ids: Vec<String> = rows.iter().map(|row| row.id.clone()).collect();
    let delivered = app
        .store
        .read(move |conn| purchase_store::last_deliveries(conn, &ids))
        .await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let last = delivered
            .iter()
            .find(|(id, _)| *id == row.id)
            .map(|(_, at)| at.clone());
        if let Some(item) = item(app, row, last)? {
            items.push(item);
        }
    }
    Ok((items, total))
}

fn item(
    app: &App,
    row: ListingRow,
    last_delivered_at: Option<String>,
) -> Result<Option<DiscoveryResource>> {
    let resource = app.url(&format!("/api/marketplace/listings/{}/purchase", row.id));
    let Some(advert) = checkout::x402_advert(app, &row, resource)? else {
        return Ok(None);
    };
    Ok(Some(DiscoveryResource {
        resource: advert.resource,
        kind: "http",
        x402_version: X402_VERSION,
        accepts: advert.accepts,
        last_updated: row.last_modified.clone().unwrap_or(row.created_at.clone()),
        description: advert.description,
        mime_type: advert.mime_type,
        service_name: advert.service_name,
        tags: advert.tags,
        extensions: Extensions {
            bazaar: advert.bazaar,
            bourse: Trust {
                listing_url: app.url(&format!("/api/marketplace/listings/{}", row.id)),
                rating_average: reputation::average(row.rating_sum, row.rating_count),
                rating_count: row.rating_count,
                settled_sales: row.purchase_count,
                seller_reputation: row.seller_reputation,
                last_delivered_at,
                listing_id: row.id,
            },
        },
    }))
}
