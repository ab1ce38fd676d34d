//! The console's agents: search by handle, name or display name (`GET /console/agents?q=`), an
//! agent's page (`GET /console/agents/{handle}`: created, listings, purchases, sales, OAuth
//! grants) and a forced key rotation (`POST /console/agents/{handle}/rotate-key`), which
//! answers with the new key once, on a page never cached.

use super::{form, html, layout};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::{count, dollars, escape};
use crate::service::App;
use crate::service::identity::console::Session;
use crate::service::identity::operator;
use crate::service::ratelimit::NEW_MESSAGES;

/// A path segment, percent-encoded for a link.
pub fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// `GET /console/agents`.
///
/// # Errors
/// Database failure.
pub async fn search(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let q = ctx.query("q").unwrap_or_default();
    let found = operator::search(app, q).await?;
    let rows: String = found
        .iter()
        .map(|agent| {
            format!(
                "<tr><td><a href=\"/console/agents/{link}\">{handle}</a></td><td>{name}</td><td>{display}</td><td>{created}</td><td>{sales}</td></tr>",
                link = segment(&agent.handle),
                handle = escape(&agent.handle),
                name = escape(&agent.name),
                display = escape(agent.display_name.as_deref().unwrap_or("—")),
                created = escape(&agent.created_at),
                sales = count(agent.sales_count),
            )
        })
        .collect();
    let summary = if q.is_empty() {
        format!("The newest {} agents.", found.len())
    } else {
        format!("{} agents match.", found.len())
    };
    let body = format!(
        "<h1>Agents</h1>\
         <form method=\"get\" action=\"/console/agents\" role=\"search\">\
         <label for=\"q\">Handle, name or display name</label>\
         <input id=\"q\" type=\"search\" name=\"q\" value=\"{q}\" maxlength=\"100\"> \
         <button id=\"search\" type=\"submit\">Search</button></form>\
         <p id=\"summary\" role=\"status\">{summary}</p>\
         <div class=\"scroll\"><table id=\"agents\"><thead><tr><th scope=\"col\">Handle</th><th scope=\"col\">Name</th>\
         <th scope=\"col\">Display name</th><th scope=\"col\">Created</th><th scope=\"col\">Sales</th></tr></thead>\
         <tbody>{rows}</tbody></table></div>",
        q = escape(q),
    );
    Ok(html(
        200,
        layout(app, "Agents", Some(session), "/console/agents", &body),
    ))
}

/// `GET /console/agents/{handle}`.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let profile = operator::profile(app, ctx.param()).await?;
    let agent = &profile.agent;
    let listings: String = profile
        .listings
        .iter()
        .map(|l| {
            format!(
                "<tr><td><a href=\"/console/listings/{id}\">{title}</a></td><td>{state}</td><td>{price}</td><td>{sold}</td></tr>",
                id = escape(&l.id),
                title = escape(&l.title),
                state = if l.active { "active" } else { "inactive" },
                price = dollars(l.price_cents),
                sold = count(l.sold_count),
            )
        })
        .collect();
    let purchases: String = profile
        .purchases
        .iter()
        .map(|p| {
            format!(
                "<tr><td><code>{id}</code></td><td><a href=\"/console/listings/{listing}\">{title}</a></td><td>{status}</td><td>{rail}</td><td>{amount}</td></tr>",
                id = escape(&p.id),
                listing = escape(&p.listing_id),
                title = escape(&p.listing_title),
                status = escape(&p.status),
                rail = escape(&p.rail),
                amount = dollars(p.amount_cents),
            )
        })
        .collect();
    let grants: String = profile
        .grants
        .iter()
        .map(|g| {
            let state = match (&g.revoked_at, &g.used_at) {
                (Some(at), _) => format!("revoked {}", escape(at)),
                (None, Some(_)) => "active".to_owned(),
                (None, None) => "never used".to_owned(),
            };
            format!(
                "<tr><td>{client}</td><td>{scopes}</td><td>{created}</td><td>{state}</td></tr>",
                client = escape(&g.client_name),
                scopes = escape(&g.scopes),
                created = escape(&g.created_at),
            )
        })
        .collect();
    let rotate = form(
        session,
        &format!("/console/agents/{}/rotate-key", segment(&agent.handle)),
        "",
        "rotate-key",
        "Force a new key",
        "danger",
    );
    let body = format!(
        "<h1>Agent {handle}</h1>\
         <div class=\"scroll\"><table id=\"agent\"><tbody>\
         <tr><th scope=\"row\">Name</th><td>{name}</td></tr>\
         <tr><th scope=\"row\">Display name</th><td>{display}</td></tr>\
         <tr><th scope=\"row\">Created</th><td id=\"created\">{created}</td></tr>\
         <tr><th scope=\"row\">Sales</th><td id=\"sales\">{sales}</td></tr>\
         <tr><th scope=\"row\">Ratings received</th><td>{ratings}</td></tr>\
         <tr><th scope=\"row\">Callback URL</th><td>{callback}</td></tr>\
         </tbody></table></div>\
         <h2>Rate limits</h2><p id=\"rate-limits\">New messages: {sent} of {max} in the last {window} (kept in memory by this server; other limits are per client address, not per agent).</p>\
         <h2>Key</h2><p>A forced rotation ends the current key and every OAuth grant at once; the new key is shown once, for you to hand to the agent's owner.</p>{rotate}\
         <h2>Listings ({n_listings})</h2><div class=\"scroll\"><table id=\"listings\"><thead><tr><th scope=\"col\">Title</th><th scope=\"col\">State</th><th scope=\"col\">Price</th><th scope=\"col\">Sold</th></tr></thead><tbody>{listings}</tbody></table></div>\
         <h2>Purchases ({n_purchases})</h2><div class=\"scroll\"><table id=\"purchases\"><thead><tr><th scope=\"col\">Purchase</th><th scope=\"col\">Listing</th><th scope=\"col\">State</th><th scope=\"col\">Rail</th><th scope=\"col\">Amount</th></tr></thead><tbody>{purchases}</tbody></table></div>\
         <h2>OAuth grants</h2><div class=\"scroll\"><table id=\"grants\"><thead><tr><th scope=\"col\">Client</th><th scope=\"col\">Scopes</th><th scope=\"col\">Granted</th><th scope=\"col\">State</th></tr></thead><tbody>{grants}</tbody></table></div>",
        handle = escape(&agent.handle),
        name = escape(&agent.name),
        display = escape(agent.display_name.as_deref().unwrap_or("—")),
        created = escape(&agent.created_at),
        sales = count(agent.sales_count),
        ratings = count(agent.rating_count),
        callback = escape(agent.callback_url.as_deref().unwrap_or("—")),
        sent = app.limiter.in_window(NEW_MESSAGES, &agent.id),
        max = NEW_MESSAGES.max,
        window = "minute",
        n_listings = count(profile.listing_count),
        n_purchases = count(profile.purchase_count),
    );
    Ok(html(
        200,
        layout(
            app,
            &format!("Agent {}", agent.handle),
            Some(session),
            "/console/agents",
            &body,
        ),
    ))
}

/// `POST /console/agents/{handle}/rotate-key`: the new key, shown once.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn rotate_key(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let rotated = operator::force_rotate(app, ctx.param()).await?;
    let body = format!(
        "<h1>New key for {handle}</h1>\
         <p id=\"result\" class=\"notice\" role=\"status\">The previous key and the agent's OAuth grants no longer work (since {at}).</p>\
         <p>The new key, shown <strong>once</strong>: hand it to the agent's owner privately.</p>\
         <p><code id=\"new-key\">{key}</code></p>\
         <p><a href=\"/console/agents/{link}\">Back to {handle}</a></p>",
        handle = escape(&rotated.handle),
        at = escape(&rotated.rotated_at),
        key = escape(&rotated.new_api_key),
        link = segment(&rotated.handle),
    );
    Ok(html(
        200,
        layout(app, "New key", Some(session), "/console/agents", &body),
    ))
}
