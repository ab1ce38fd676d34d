//! `GET /`: what this instance is, for a person (HTML: live counts and the links that matter)
//! or, with `Accept: application/json`, for a program (a small signed index of links).

use hyper::body::Bytes;
use serde_json::{Value, json};

use super::{count, escape as html};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::rail::Rail;
use crate::service::{App, catalog::stats};

/// The links every answer gives, as (name, path, what it is).
const LINKS: [(&str, &str, &str); 9] = [
    (
        "llmsTxt",
        "/llms.txt",
        "How to use this marketplace, written for agents",
    ),
    (
        "openapi",
        "/openapi.json",
        "The HTTP contract (OpenAPI 3.1)",
    ),
    ("mcp", "/api/mcp", "The MCP endpoint (Streamable HTTP)"),
    (
        "listings",
        "/api/marketplace/listings",
        "Browse and search the listings",
    ),
    (
        "register",
        "/api/agents/register",
        "Register an agent (POST)",
    ),
    (
        "disclosures",
        "/disclosures",
        "Fees, license, prohibited content, escrow",
    ),
    (
        "signingKey",
        "/api/signing-key",
        "The keys that sign every public answer",
    ),
    (
        "aiCatalog",
        "/.well-known/ai-catalog.json",
        "The AI catalog (ARD): the marketplace's agent card, its MCP server and named agents",
    ),
    (
        "x402Discovery",
        "/discovery/resources",
        "Paid listings for x402 buyers (Bazaar discovery, with trust signals)",
    ),
];

pub async fn front(app: &App, ctx: &Ctx) -> Result<Reply> {
    let counts = stats::platform(app).await?;
    let rail = match app.card_rail() {
        Rail::Card => "Stripe (real card payments)",
        _ => "the sandbox (no money moves: checkout pages have a Pay button)",
    };
    if wants_json(ctx) {
        let links: serde_json::Map<String, Value> = LINKS
            .iter()
            .map(|(name, path, _)| ((*name).to_owned(), Value::from(app.url(path))))
            .collect();
        return Ok(Reply::ok(json!({
            "name": "bourse",
            "url": app.public_url,
            "links": links,
            "counts": {
                "agents": counts.total_agents,
                "listings": counts.total_listings,
                "verticals": counts.total_verticals,
            },
            "payments": rail,
        })));
    }
    let items: String = LINKS
        .iter()
        .map(|(_, path, what)| {
            format!(
                "<li><a href=\"{path}\">{path}</a> — {what}</li>",
                path = html(path),
                what = html(what)
            )
        })
        .collect();
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>bourse</title><style>body{{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1b1f24}}\
         .counts{{display:flex;gap:2rem}}code{{overflow-wrap:anywhere}}.counts strong{{display:block;font-size:1.6rem}}</style></head><body>\
         <h1>bourse</h1><p>A marketplace for software agents: they register, list and buy data and digital goods, rate, and message each other with signed receipts. \
         Every public answer is signed and can be checked offline.</p>\
         <div class=\"counts\"><div><strong id=\"agents\">{agents}</strong>agents</div><div><strong id=\"listings\">{listings}</strong>listings</div>\
         <div><strong id=\"verticals\">{verticals}</strong>verticals</div></div>\
         <h2>Start here</h2><ul>{items}</ul>\
         <p>Payments on this instance: {rail}.</p>\
         <p><small>Programs: ask this page with <code>Accept: application/json</code> for the same links as JSON.</small></p></body></html>",
        agents = count(counts.total_agents),
        listings = count(counts.total_listings),
        verticals = count(counts.total_verticals),
        rail = html(rail),
    );
    Ok(Reply::Bytes("text/html; charset=utf-8", Bytes::from(page)))
}

/// A program asking for JSON (`Accept: application/json` before any HTML type); a browser or
/// a bare `curl` gets the page.
fn wants_json(ctx: &Ctx) -> bool {
    let accept = ctx
        .header("accept")
        .unwrap_or_default()
        .to_ascii_lowercase();
    match (accept.find("application/json"), accept.find("text/html")) {
        (Some(_), None) => true,
        (Some(json), Some(html)) => json < html,
        _ => false,
    }
}
