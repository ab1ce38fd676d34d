//! The console's listings: the browse filters (`GET /console/listings`, the same filters and
//! the same service as `GET /api/marketplace/listings`), a listing's page with its signed
//! history as a timeline (`GET /console/listings/{id}`), and deactivation with a reason
//! (`POST /console/listings/{id}/deactivate`, the operator's moderation: a signed version
//! marked `by: "operator"`).

use serde_json::Value;

use super::agents::segment;
use super::{field, form, html, layout, see_other};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::{count, dollars, escape};
use crate::request::Input;
use crate::request::catalog::{BROWSE, Browse, ListingId, ListingType, Price, Samples, Sort};
use crate::service::App;
use crate::service::catalog::{browse, listings, moderation};
use crate::service::identity::console::Session;
use crate::service::trust::receipts::Signed;

/// The query without its empty values (a GET form sends every field, filled or not).
fn filled(ctx: &Ctx) -> Vec<(String, String)> {
    ctx.query
        .iter()
        .filter(|(_, value)| !value.trim().is_empty())
        .cloned()
        .collect()
}

fn select(id: &str, label: &str, names: &[&str], chosen: Option<&str>) -> String {
    let options: String = names
        .iter()
        .map(|name| {
            let selected = if Some(*name) == chosen {
                " selected"
            } else {
                ""
            };
            format!("<option value=\"{name}\"{selected}>{name}</option>")
        })
        .collect();
    format!(
        "<label for=\"{id}\">{label} <select id=\"{id}\" name=\"{id}\"><option value=\"\">any</option>{options}</select></label>"
    )
}

/// The browse filters as a GET form to `action`, filled from `query`.
pub fn filters_form(app: &App, action: &str, query: &[(String, String)]) -> String {
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let verticals: Vec<&str> = app
        .taxonomy
        .verticals
        .iter()
        .map(|v| v.slug.as_str())
        .collect();
    format!(
        "<form method=\"get\" action=\"{action}\" role=\"search\" class=\"filters\">\
         <label for=\"q\">Search <input id=\"q\" type=\"search\" name=\"q\" value=\"{q}\" maxlength=\"200\"></label>\
         {vertical}{kind}{price}{sort}{samples}\
         <button id=\"apply\" type=\"submit\">Search</button></form>",
        q = escape(get("q").unwrap_or_default()),
        vertical = select("vertical", "Vertical", &verticals, get("vertical")),
        kind = select("type", "Type", ListingType::NAMES, get("type")),
        price = select("price", "Price", Price::NAMES, get("price")),
        sort = select("sort", "Sort", Sort::NAMES, get("sort")),
        samples = select("samples", "Samples", Samples::NAMES, get("samples")),
    )
}

/// `GET /console/listings`.
///
/// # Errors
/// `INVALID_ARGUMENT` for a filter browse refuses; database failure.
pub async fn search(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let query = filled(ctx);
    let request = Browse::read(&Input::query(&BROWSE, &query))?;
    // The operator's browsing is not a querier of the catalogue: it is counted under one key.
    let page = browse::browse(app, &request, app.querier_key("console")).await?;
    let rows: String = page
        .listings
        .iter()
        .map(|view| {
            let row = &view.row;
            format!(
                "<tr><td><a href=\"/console/listings/{id}\">{title}</a></td><td>{vertical}</td><td>{price}</td><td>{seller}</td><td>{sold}</td></tr>",
                id = escape(&row.id),
                title = escape(&row.title),
                vertical = escape(&row.vertical_slug),
                price = dollars(row.price_cents),
                seller = escape(&row.seller_code),
                sold = count(row.sold_count),
            )
        })
        .collect();
    let body = format!(
        "<h1>Listings</h1>{filters}\
         <p id=\"summary\" role=\"status\">{total} active listings match; showing {shown}.</p>\
         <div class=\"scroll\"><table id=\"listings\"><thead><tr><th scope=\"col\">Title</th><th scope=\"col\">Vertical</th>\
         <th scope=\"col\">Price</th><th scope=\"col\">Seller</th><th scope=\"col\">Sold</th></tr></thead><tbody>{rows}</tbody></table></div>",
        filters = filters_form(app, "/console/listings", &query),
        total = count(i64::try_from(page.total).unwrap_or(i64::MAX)),
        shown = page.listings.len(),
    );
    Ok(html(
        200,
        layout(app, "Listings", Some(session), "/console/listings", &body),
    ))
}

fn short(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    };
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

/// A listing's signed history as an ordered list, newest first: each entry's changes (from →
/// to), when, its reason, who (the operator's moderation is marked) and its signature digest.
pub fn timeline(entries: &[Signed]) -> String {
    let items: String = entries
        .iter()
        .rev()
        .map(|Signed(entry)| {
            let version = entry.get("version").and_then(Value::as_i64).unwrap_or(0);
            let at = entry.get("changedAt").and_then(Value::as_str).unwrap_or("");
            let changes: String = entry
                .get("changes")
                .and_then(Value::as_object)
                .map(|changes| {
                    changes
                        .iter()
                        .map(|(field, change)| {
                            let (from, to) = (&change["from"], &change["to"]);
                            if from.is_null() && version == 1 {
                                format!("<li><strong>{}</strong>: {}</li>", escape(field), escape(&short(to)))
                            } else {
                                format!(
                                    "<li><strong>{}</strong>: {} → {}</li>",
                                    escape(field),
                                    escape(&short(from)),
                                    escape(&short(to))
                                )
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            let reason = entry
                .get("reason")
                .and_then(Value::as_str)
                .map(|r| format!("<p>Reason: {}</p>", escape(r)))
                .unwrap_or_default();
            let by = if entry.get("by").and_then(Value::as_str) == Some("operator") {
                " <strong class=\"by-operator\">by the operator</strong>"
            } else {
                ""
            };
            let digest = entry
                .get("signature")
                .and_then(|s| s.get("digest"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!(
                "<li id=\"version-{version}\"><p><strong>Version {version}</strong>{by}, <time datetime=\"{at}\">{at}</time></p>\
                 <ul>{changes}</ul>{reason}<p class=\"meta\">Signature digest <code>{digest}</code></p></li>",
                at = escape(at),
                digest = escape(digest),
            )
        })
        .collect();
    format!("<ol id=\"timeline\" reversed>{items}</ol>")
}

/// `GET /console/listings/{id}`.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let request = ListingId::at(ctx.param());
    let history = listings::history(app, &request).await?;
    // Read without counting a view: the operator is not the catalogue's audience.
    let row = &listings::find(app, &request.listing_id).await?;
    let done = match ctx.query("done") {
        Some("deactivated") => {
            "<p id=\"result\" class=\"notice\" role=\"status\">Deactivated: the new version is signed and marked as the operator's.</p>"
        }
        Some("unchanged") => {
            "<p id=\"result\" class=\"notice\" role=\"status\">The listing was inactive already: nothing changed.</p>"
        }
        _ => "",
    };
    let action = if row.active {
        form(
            session,
            &format!("/console/listings/{}/deactivate", escape(&row.id)),
            "<label for=\"reason\">Reason (recorded in the signed history)</label>\
             <textarea id=\"reason\" name=\"reason\" rows=\"2\" cols=\"40\" maxlength=\"500\" required></textarea><br>",
            "deactivate",
            "Deactivate",
            "danger",
        )
    } else {
        "<p id=\"inactive\">This listing is inactive.</p>".to_owned()
    };
    let body = format!(
        "<h1>{title}</h1>{done}\
         <div class=\"scroll\"><table id=\"listing\"><tbody>\
         <tr><th scope=\"row\">State</th><td id=\"state\">{state}</td></tr>\
         <tr><th scope=\"row\">Price</th><td>{price}</td></tr>\
         <tr><th scope=\"row\">Vertical</th><td>{vertical}</td></tr>\
         <tr><th scope=\"row\">Seller</th><td>{seller}</td></tr>\
         <tr><th scope=\"row\">Sold</th><td>{sold}</td></tr>\
         <tr><th scope=\"row\">Version</th><td>{version}</td></tr>\
         <tr><th scope=\"row\">JSON</th><td><a href=\"/api/marketplace/listings/{id}\">detail</a>, <a href=\"/api/marketplace/listings/{id}/history\">signed history</a></td></tr>\
         </tbody></table></div>\
         <h2>Moderation</h2>{action}\
         <h2>History</h2>{timeline}",
        title = escape(&row.title),
        state = if row.active { "active" } else { "inactive" },
        price = dollars(row.price_cents),
        vertical = escape(&row.vertical_slug),
        seller = escape(&row.seller_code),
        sold = count(row.sold_count),
        version = history.version,
        id = escape(&row.id),
        timeline = timeline(&history.entries),
    );
    Ok(html(
        200,
        layout(app, &row.title, Some(session), "/console/listings", &body),
    ))
}

/// `POST /console/listings/{id}/deactivate` {reason}.
///
/// # Errors
/// `INVALID_ARGUMENT` without a reason; `NOT_FOUND`; `VERSION_CONFLICT`; database failure.
pub async fn deactivate(app: &App, ctx: &Ctx) -> Result<Reply> {
    let id = ctx.param();
    let reason = field(ctx, "reason").unwrap_or_default();
    let done = match moderation::deactivate(app, id, &reason).await? {
        Some(_) => "deactivated",
        None => "unchanged",
    };
    Ok(see_other(&format!(
        "/console/listings/{}?done={done}",
        segment(id)
    )))
}
