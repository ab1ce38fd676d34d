//! The catalogue for people (`/market`): search with a GET form and the browse filters (the
//! same service as `GET /api/marketplace/listings`; a vertical's page is the catalogue filtered
//! to it), and a listing's page (`/market/listings/{id}`: preview, license, price, ratings,
//! the signed history as a timeline, the seller's code and reputation), and a seller's page
//! (`/market/sellers/{code}`: the seller's code, reputation and ratings, and their active
//! listings a page at a time, as the catalogue shows them). Each page links its JSON twin.
//! Plain HTML without scripts, readable at phone width and by a screen reader.

use serde_json::Value;

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::console::listings::{filters_form, timeline};
use crate::pages::console::{guard, html, public_layout, public_refusal};
use crate::pages::{count, dollars, escape};
use crate::request::Input;
use crate::request::catalog::{BROWSE, Browse, ListingId};
use crate::request::sellers::{SELLER, Seller};
use crate::service::App;
use crate::service::catalog::view::ListingView;
use crate::service::catalog::{browse, listings, storefront};

/// Which catalogue page.
#[derive(Clone, Copy, Debug)]
pub enum Market {
    /// `/market`, a search or a vertical's page.
    Catalogue,
    /// `/market/listings/{id}`.
    Listing,
    /// `/market/sellers/{code}`.
    Seller,
}

/// Runs a catalogue page; a refused request (4xx) is a page too.
///
/// # Errors
/// A failure of the server (5xx).
pub async fn serve(app: &App, ctx: &Ctx, page: Market) -> Result<Reply> {
    let answer = match page {
        Market::Catalogue => catalogue(app, ctx).await,
        Market::Listing => listing_page(app, ctx).await,
        Market::Seller => seller_page(app, ctx).await,
    };
    match answer {
        Ok(reply) => Ok(guard(reply)),
        Err(error) if error.status() < 500 => {
            Ok(public_refusal(error.status(), &error.to_string()))
        }
        Err(error) => Err(error),
    }
}

/// The query string of `pairs`, form-encoded.
fn encode(pairs: &[(String, String)]) -> String {
    let part = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_owned(),
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", part(k), part(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The page's query as its JSON twin reads it: the form sends an empty value for "any", which
/// is left out; any other value is read as the twin reads it (so a blank one is refused there
/// as here).
fn form_query(ctx: &Ctx) -> Vec<(String, String)> {
    ctx.query
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .cloned()
        .collect()
}

/// `path` with `query` encoded after it, when there is one (not yet escaped for HTML).
fn with_query(path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", encode(query))
    }
}

/// `GET /market`.
async fn catalogue(app: &App, ctx: &Ctx) -> Result<Reply> {
    let query = form_query(ctx);
    let request = Browse::read(&Input::query(&BROWSE, &query))?;
    let querier = browse::querier(app, None, &ctx.client_ip.to_string());
    let page = browse::browse(app, &request, querier).await?;
    let vertical = request
        .vertical
        .as_deref()
        .and_then(|slug| app.taxonomy.verticals.iter().find(|v| v.slug == slug));
    let heading = match vertical {
        Some(v) => format!("<h1>{}</h1><p>Listings in this vertical.</p>", escape(&v.name)),
        None => "<h1>The catalogue</h1><p>Data and services listed by agents; each listing's terms and signed history are on its page.</p>".to_owned(),
    };
    let items: String = page.listings.iter().map(card).collect();
    let twin = with_query("/api/marketplace/listings", &query);
    let body = format!(
        "{heading}{filters}\
         <p id=\"summary\" role=\"status\">{total} listings match; showing {shown}.</p>\
         <ul id=\"results\" class=\"tiles\">{items}</ul>\
         <p class=\"meta\">The same page as JSON: <a id=\"json-twin\" href=\"{twin}\">{twin}</a></p>",
        filters = filters_form(app, "/market", &query),
        total = count(i64::try_from(page.total).unwrap_or(i64::MAX)),
        shown = page.listings.len(),
        twin = escape(&twin),
    );
    Ok(html(200, public_layout("Catalogue", &body)))
}

/// `GET /market/listings/{id}`.
async fn listing_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = ListingId::at(ctx.param());
    let detail = listings::detail(app, &request).await?;
    let history = listings::history(app, &request).await?;
    let row = &detail.listing.row;
    let preview = serde_json::to_string_pretty(&detail.preview).unwrap_or_default();
    let ratings: String = detail
        .ratings
        .iter()
        .map(|rating| {
            let stars = rating.0.get("rating").and_then(Value::as_i64).unwrap_or(0);
            let comment = rating
                .0
                .get("comment")
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("<li>{stars} of 5 {}</li>", escape(comment))
        })
        .collect();
    let ratings = if ratings.is_empty() {
        "<p>No ratings yet.</p>".to_owned()
    } else {
        format!("<ul id=\"ratings\">{ratings}</ul>")
    };
    let permissions: String = detail
        .license
        .permissions
        .iter()
        .map(|p| format!("<li>{}</li>", escape(p)))
        .collect();
    let restrictions: String = detail
        .license
        .restrictions
        .iter()
        .map(|r| format!("<li>{}</li>", escape(r)))
        .collect();
    let body = format!(
        "<h1>{title}</h1>\
         <p id=\"price\">{price}{state}</p><p>{description}</p>\
         <div class=\"scroll\"><table id=\"facts\"><tbody>\
         <tr><th scope=\"row\">Vertical</th><td><a href=\"/market?vertical={vslug}\">{vertical}</a></td></tr>\
         <tr><th scope=\"row\">Seller</th><td id=\"seller\"><a href=\"/market/sellers/{seller}\">{seller}</a> (reputation {reputation:.2}, {sales} sales)</td></tr>\
         <tr><th scope=\"row\">Sold</th><td>{sold}</td></tr>\
         <tr><th scope=\"row\">Version</th><td>{version}</td></tr></tbody></table></div>\
         <h2>Preview</h2><pre id=\"preview\" tabindex=\"0\">{preview}</pre>\
         <h2>License: {license}</h2><ul>{permissions}{restrictions}</ul><p class=\"meta\">{notice}</p>\
         <h2>Ratings</h2>{ratings}\
         <h2>History</h2><p>Every change is a signed version; check one at <code>POST /api/verify-receipt</code>.</p>{timeline}\
         <p class=\"meta\">As JSON: <a id=\"json-twin\" href=\"/api/marketplace/listings/{id}\">the listing</a>, \
         <a href=\"/api/marketplace/listings/{id}/history\">its signed history</a>.</p>",
        title = escape(&row.title),
        price = if row.price_cents == 0 {
            "Free".to_owned()
        } else {
            dollars(row.price_cents)
        },
        state = if row.active {
            ""
        } else {
            " · no longer offered"
        },
        description = escape(&row.description),
        vslug = escape(&row.vertical_slug),
        vertical = escape(&row.vertical_slug),
        seller = escape(&row.seller_code),
        reputation = detail.seller.reputation,
        sales = count(detail.seller.total_sales_count),
        sold = count(row.sold_count),
        version = row.version,
        preview = escape(&preview),
        license = escape(detail.license.kind),
        notice = escape(detail.license.notice),
        timeline = timeline(&history.entries),
        id = escape(&row.id),
    );
    Ok(html(200, public_layout(&row.title, &body)))
}

/// A listing as the catalogue and a seller's page show it: title (to its page), price,
/// vertical, seller (to their page) and rating.
fn card(view: &ListingView) -> String {
    let row = &view.row;
    let rating = if row.rating_count > 0 {
        format!(
            "{:.1} of 5 ({} ratings)",
            row.rating_sum as f64 / row.rating_count as f64,
            count(row.rating_count)
        )
    } else {
        "not rated yet".to_owned()
    };
    format!(
        "<li class=\"tile\"><h2><a href=\"/market/listings/{id}\">{title}</a></h2>\
         <p>{price} · <a href=\"/market?vertical={vslug}\">{vertical}</a> · seller <a href=\"/market/sellers/{seller}\">{seller}</a> · {rating}</p></li>",
        id = escape(&row.id),
        title = escape(&row.title),
        price = if row.price_cents == 0 {
            "Free".to_owned()
        } else {
            dollars(row.price_cents)
        },
        vslug = escape(&row.vertical_slug),
        vertical = escape(&row.vertical_slug),
        seller = escape(&row.seller_code),
    )
}

/// `GET /market/sellers/{code}`: the seller and their active listings, a page at a time (the
/// page's links carry `offset`, as its JSON twin reads it).
async fn seller_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let query = form_query(ctx);
    let request = Seller::read(ctx.param(), &Input::query(&SELLER, &query))?;
    let page = storefront::page(app, &request).await?;
    let seller = &page.seller;
    let code = escape(&seller.code);
    let items: String = page.listings.iter().map(card).collect();
    let items = if items.is_empty() {
        "<p id=\"results\">No active listings on this page.</p>".to_owned()
    } else {
        format!("<ul id=\"results\" class=\"tiles\">{items}</ul>")
    };
    let at = |offset: i64| {
        let mut pairs = vec![("offset".to_owned(), offset.to_string())];
        if let Some(limit) = query.iter().find(|(k, _)| k == "limit") {
            pairs.insert(0, limit.clone());
        }
        escape(&with_query(
            &format!("/market/sellers/{}", seller.code),
            &pairs,
        ))
    };
    let mut links = Vec::new();
    if page.offset > 0 {
        let back = at((page.offset - page.limit).max(0));
        links.push(format!(
            "<a id=\"previous\" rel=\"prev\" href=\"{back}\">Newer listings</a>"
        ));
    }
    if page.offset + page.limit < page.total {
        let next = at(page.offset + page.limit);
        links.push(format!(
            "<a id=\"next\" rel=\"next\" href=\"{next}\">Older listings</a>"
        ));
    }
    let pager = if links.is_empty() {
        String::new()
    } else {
        format!(
            "<nav aria-label=\"Pages\"><p>{}</p></nav>",
            links.join(" · ")
        )
    };
    let twin = escape(&with_query(
        &format!("/api/marketplace/sellers/{}", seller.code),
        &query,
    ));
    let rated = if seller.rating_count > 0 {
        format!("{} ratings", count(seller.rating_count))
    } else {
        "not rated yet".to_owned()
    };
    let shown = page.listings.len() as i64;
    let body = format!(
        "<h1>Seller {code}</h1>\
         <div class=\"scroll\"><table id=\"facts\"><tbody>\
         <tr><th scope=\"row\">Seller code</th><td id=\"seller\">{code}</td></tr>\
         <tr><th scope=\"row\">Reputation</th><td id=\"reputation\">{reputation:.2} ({rated})</td></tr>\
         <tr><th scope=\"row\">Sales</th><td>{sales}</td></tr>\
         <tr><th scope=\"row\">Active listings</th><td>{total}</td></tr></tbody></table></div>\
         <h2>Listings</h2>\
         <p id=\"summary\" role=\"status\">{total} active listings, newest first; showing {from}–{to}.</p>\
         {items}{pager}\
         <p class=\"meta\">The same page as JSON: <a id=\"json-twin\" href=\"{twin}\">{twin}</a></p>",
        reputation = seller.reputation,
        sales = count(seller.total_sales_count),
        total = count(page.total),
        from = if shown == 0 {
            page.offset
        } else {
            page.offset + 1
        },
        to = page.offset + shown,
    );
    Ok(html(
        200,
        public_layout(&format!("Seller {}", seller.code), &body),
    ))
}
