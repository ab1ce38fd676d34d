//! The sandbox rail's pages and their scripted twins: checkout (Pay, Cancel), payout
//! onboarding, and the operator's test clock. Pages are plain HTML without scripts: each button
//! submits a form to a page route (`POST /sandbox/…`) that calls the same service function as
//! the scripted twin (`POST /api/sandbox/…`) and answers 303 back to the page, which then shows
//! the outcome; so a browser needs no JavaScript and CI needs no browser. Also the public check of a payment
//! session's signed receipt (`GET /api/svcpay/receipts/{session_id}/verify`).

use hyper::body::Bytes;

use super::html::{dollars, escape as html};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::{RawReply, Reply};
use crate::service::{App, commerce::payments, commerce::rails::sandbox};

fn id(ctx: &Ctx) -> &str {
    ctx.params.first().map_or("", String::as_str)
}

fn page(title: &str, body: &str) -> Reply {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}}\
         button{{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem}}#result{{margin-top:1rem}}</style></head>\
         <body><p><strong>bourse sandbox</strong> — no real money moves.</p>{body}</body></html>",
        title = html(title)
    );
    Reply::Bytes("text/html; charset=utf-8", Bytes::from(page))
}

/// A button that posts an empty form to `action`.
fn button(id: &str, action: &str, label: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{action}\" style=\"display:inline\"><button id=\"{id}\" type=\"submit\">{label}</button></form>",
        action = html(action)
    )
}

/// The outcome of the last button, from the query the page route redirected with.
fn outcome(ctx: &Ctx) -> String {
    let clean = |v: &str| -> String {
        v.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(40)
            .collect()
    };
    match (ctx.query("done"), ctx.query("refused")) {
        (Some(done), _) => format!("<p id=\"result\" role=\"status\">Done: {}</p>", clean(done)),
        (_, Some(code)) => format!(
            "<p id=\"result\" role=\"status\">Refused: {}</p>",
            clean(code)
        ),
        _ => String::new(),
    }
}

/// Session and onboarding ids are unpadded base64url (with a `cs_` prefix for sessions); an id
/// with any other character cannot exist, and is refused before it reaches a `Location` header
/// or a form action.
fn well_formed(id: &str) -> Result<&str> {
    if !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(id)
    } else {
        Err(crate::error::Error::NotFound(
            "no such checkout or onboarding".into(),
        ))
    }
}

/// 303 See Other back to `page`, with the outcome in the query.
fn back(page: &str, outcome: Result<serde_json::Value>) -> Result<Reply> {
    let query = match outcome {
        Ok(value) => format!("done={}", value["status"].as_str().unwrap_or("ok")),
        Err(error) if error.status() < 500 => format!("refused={}", error.code()),
        Err(error) => return Err(error),
    };
    Ok(Reply::Raw(RawReply {
        status: 303,
        content_type: "text/plain; charset=utf-8",
        body: Bytes::from_static(b"See Other"),
        headers: vec![("location", format!("{page}?{query}"))],
    }))
}

pub async fn checkout_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = id(ctx);
    let view = sandbox::checkout_view(app, session).await?;
    let amount = view["amountCents"].as_i64().unwrap_or(0);
    let body = format!(
        "<h1>Checkout</h1><p>{title}</p><p>Amount: <strong>{amount}</strong></p>\
         <p>Status: <span id=\"status\">{status}</span> (expires {expires})</p>{outcome}{pay}{cancel}\
         <p><small>Scripts: <code>POST /api/sandbox/checkout/{session}/pay</code> or <code>…/cancel</code>.</small></p>",
        title = html(view["title"].as_str().unwrap_or("")),
        amount = dollars(amount),
        status = html(view["status"].as_str().unwrap_or("")),
        expires = html(view["expiresAt"].as_str().unwrap_or("")),
        outcome = outcome(ctx),
        pay = button("pay", &format!("/sandbox/checkout/{session}/pay"), "Pay"),
        cancel = button(
            "cancel",
            &format!("/sandbox/checkout/{session}/cancel"),
            "Cancel"
        ),
        session = html(session),
    );
    Ok(page("bourse sandbox checkout", &body))
}

/// The Pay button of the checkout page.
pub async fn pay_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = well_formed(id(ctx))?;
    back(
        &format!("/sandbox/checkout/{session}"),
        sandbox::pay(app, session).await,
    )
}

/// The Cancel button of the checkout page.
pub async fn cancel_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = well_formed(id(ctx))?;
    back(
        &format!("/sandbox/checkout/{session}"),
        sandbox::cancel(app, session).await,
    )
}

/// The button of the onboarding page.
pub async fn complete_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let onboarding = well_formed(id(ctx))?;
    back(
        &format!("/sandbox/connect/{onboarding}"),
        sandbox::complete_onboarding(app, onboarding).await,
    )
}

pub async fn pay(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(sandbox::pay(app, id(ctx)).await?))
}

pub async fn cancel(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(sandbox::cancel(app, id(ctx)).await?))
}

pub fn connect_page(ctx: &Ctx) -> Reply {
    let body = format!(
        "<h1>Connect payouts</h1><p>Sandbox onboarding: one click connects this seller's payouts.</p>\
         {outcome}{button}\
         <p><small>Scripts: <code>POST /api/sandbox/connect/{id}/complete</code>.</small></p>",
        outcome = outcome(ctx),
        button = button(
            "complete",
            &format!("/sandbox/connect/{}/complete", id(ctx)),
            "Complete onboarding"
        ),
        id = html(id(ctx))
    );
    page("bourse sandbox onboarding", &body)
}

pub async fn complete(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(sandbox::complete_onboarding(app, id(ctx)).await?))
}

pub async fn clock(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(
        payments::advance_clock(app, ctx.json_args()?).await?,
    ))
}

pub async fn verify_session_receipt(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(
        payments::verify_session_receipt(app, id(ctx)).await?,
    ))
}
