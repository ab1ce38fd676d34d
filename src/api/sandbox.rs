//! The sandbox rail's pages and their scripted twins: checkout (Pay, Cancel), payout
//! onboarding, and the operator's test clock. Pages are plain HTML with a button that calls the
//! same API a script calls, so CI needs no browser. Also the public check of a payment
//! session's signed receipt (`GET /api/svcpay/receipts/{session_id}/verify`).

use hyper::body::Bytes;

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, payments, purchases};

fn id(ctx: &Ctx) -> &str {
    ctx.params.first().map_or("", String::as_str)
}

/// Escapes text for HTML.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> Reply {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}}\
         button{{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem}}#result{{margin-top:1rem}}</style></head>\
         <body><p><strong>bourse sandbox</strong> — no real money moves.</p>{body}\
         <p id=\"result\" role=\"status\"></p>\
         <script>async function call(path){{const r=await fetch(path,{{method:'POST'}});\
         const j=await r.json();document.getElementById('result').textContent=\
         r.ok?('Done: '+(j.status||'ok')):('Refused: '+(j.error?j.error.message:r.status));}}</script></body></html>",
        title = html(title)
    );
    Reply::Bytes("text/html; charset=utf-8", Bytes::from(page))
}

pub async fn checkout_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = id(ctx);
    let view = purchases::checkout_view(app, session).await?;
    let amount = view["amountCents"].as_i64().unwrap_or(0);
    let body = format!(
        "<h1>Checkout</h1><p>{title}</p><p>Amount: <strong>${dollars}.{cents:02}</strong></p>\
         <p>Status: <span id=\"status\">{status}</span> (expires {expires})</p>\
         <button id=\"pay\" onclick=\"call('/api/sandbox/checkout/{session}/pay')\">Pay</button>\
         <button id=\"cancel\" onclick=\"call('/api/sandbox/checkout/{session}/cancel')\">Cancel</button>",
        title = html(view["title"].as_str().unwrap_or("")),
        dollars = amount / 100,
        cents = amount % 100,
        status = html(view["status"].as_str().unwrap_or("")),
        expires = html(view["expiresAt"].as_str().unwrap_or("")),
        session = html(session),
    );
    Ok(page("bourse sandbox checkout", &body))
}

pub async fn pay(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(purchases::pay(app, id(ctx)).await?))
}

pub async fn cancel(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(purchases::cancel(app, id(ctx)).await?))
}

pub fn connect_page(ctx: &Ctx) -> Reply {
    let body = format!(
        "<h1>Connect payouts</h1><p>Sandbox onboarding: one click connects this seller's payouts.</p>\
         <button id=\"complete\" onclick=\"call('/api/sandbox/connect/{id}/complete')\">Complete onboarding</button>",
        id = html(id(ctx))
    );
    page("bourse sandbox onboarding", &body)
}

pub async fn complete(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(
        payments::complete_onboarding(app, id(ctx)).await?,
    ))
}

pub async fn clock(app: &App, ctx: &Ctx) -> Result<Reply> {
    app.authenticate_operator(ctx.bearer())?;
    Ok(Reply::ok(
        payments::advance_clock(app, ctx.json_args()?).await?,
    ))
}

pub async fn verify_session_receipt(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(
        payments::verify_session_receipt(app, id(ctx)).await?,
    ))
}
