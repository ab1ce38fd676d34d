//! The sandbox checkout page (`GET /sandbox/checkout/{session}`) and its Pay and Cancel buttons.

use super::{back, button, dollars, escape as html, outcome, page, well_formed};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, commerce::rails::sandbox};

pub async fn checkout_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = ctx.param();
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
    let session = well_formed(ctx.param())?;
    back(
        &format!("/sandbox/checkout/{session}"),
        sandbox::pay(app, session).await,
    )
}

/// The Cancel button of the checkout page.
pub async fn cancel_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = well_formed(ctx.param())?;
    back(
        &format!("/sandbox/checkout/{session}"),
        sandbox::cancel(app, session).await,
    )
}
