//! The owner's approval page of a purchase above the approval threshold (`GET /approve/{id}`)
//! and its Approve and Deny buttons, whose forms carry the page's anti-forgery token.

use super::{back, dollars, escape as html, not_found_page, outcome, page_with_banner};
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::App;
use crate::service::commerce::approvals;

pub async fn approval_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let id = ctx.param();
    let view = match approvals::view(app, id).await {
        Ok(view) => view,
        Err(Error::NotFound(_)) => {
            return Ok(not_found_page(
                "No such approval",
                "This approval link does not exist: check the link you were given.",
            ));
        }
        Err(error) => return Err(error),
    };
    let amount = dollars(view.amount_cents);
    let form = |name: &str, label: &str, class: &str| {
        format!(
            "<form method=\"post\" action=\"/approve/{id}/{name}\" style=\"display:inline\">\
             <input type=\"hidden\" name=\"token\" value=\"{token}\">\
             <button id=\"{name}\" class=\"{class}\" type=\"submit\">{label}</button></form>",
            id = html(id),
            token = html(&view.form_token),
        )
    };
    let (sentence, actions) = match view.state.as_str() {
        "open" => (
            format!(
                "Waiting for your decision until {}. Approving lets the purchase go on to payment; denying ends it and nothing is charged.",
                html(&view.expires_at)
            ),
            format!(
                "{}{}",
                form("approve", &format!("Approve {amount}"), "primary"),
                form("deny", "Deny", "")
            ),
        ),
        "approved" => (
            "Approved. The purchase went on to payment.".to_owned(),
            String::new(),
        ),
        "denied" => (
            "Denied. The purchase was refused; nothing was charged.".to_owned(),
            String::new(),
        ),
        _ => (
            "This approval expired before it was decided; the purchase was refused and nothing was charged.".to_owned(),
            String::new(),
        ),
    };
    let body = format!(
        "<h1>Approve a purchase</h1><div class=\"card\"><p><strong id=\"title\">{title}</strong><br>\
         <span class=\"meta\">sold by <span id=\"seller\">{seller}</span></span></p>\
         <p>Bought by <strong id=\"buyer\">{buyer}</strong></p>\
         <p>Amount: <strong id=\"amount\">{amount}</strong> on <span id=\"rail\">{rail}</span></p></div>\
         <p id=\"state\" class=\"state {state}\" data-state=\"{state}\">{sentence}</p>{outcome}{actions}\
         <p class=\"meta\">Purchase <code id=\"purchase\">{purchase}</code>.</p>",
        title = html(&view.title),
        seller = html(&view.seller_code),
        buyer = html(&view.buyer_handle),
        rail = html(&view.rail),
        state = html(&view.state),
        purchase = html(&view.purchase_id),
        outcome = outcome(ctx),
    );
    Ok(page_with_banner(
        "bourse purchase approval",
        "<strong>bourse</strong> — a purchase above your agent's approval threshold.",
        &body,
    ))
}

/// The Approve button.
pub async fn approve_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    decide(app, ctx, true).await
}

/// The Deny button.
pub async fn deny_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    decide(app, ctx, false).await
}

/// A decision: a form without the page's token is refused (403) before anything is read or
/// written; otherwise back to the page, which shows the decision as it stands.
async fn decide(app: &App, ctx: &Ctx, approve: bool) -> Result<Reply> {
    let id = ctx.param();
    let token = ctx
        .form()
        .into_iter()
        .find(|(name, _)| name == "token")
        .map(|(_, value)| value)
        .unwrap_or_default();
    let decided = approvals::decide(app, id, approve, &token).await;
    if let Err(error @ Error::Forbidden { .. }) = decided {
        return Err(error);
    }
    back(&format!("/approve/{id}"), decided.map(|view| view.state))
}
