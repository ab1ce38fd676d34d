//! The sandbox checkout page (`GET /sandbox/checkout/{session}`) and its Pay and Cancel buttons.

use super::{back, button, dollars, escape as html, not_found_page, outcome, page, primary_button};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, commerce::rails::sandbox};

pub async fn checkout_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = ctx.param();
    let view = match sandbox::checkout_view(app, session).await {
        Ok(view) => view,
        Err(crate::error::Error::NotFound(_)) => {
            return Ok(not_found_page(
                "No such checkout",
                "This checkout does not exist: check the link you were given.",
            ));
        }
        Err(error) => return Err(error),
    };
    let amount = dollars(view.amount_cents);
    let status = view.status.as_str();
    let expires = view.expires_at.as_deref().unwrap_or("");
    // An unpaid checkout past its time reads as expired even before the worker marks it.
    let past = expires
        .parse::<jiff::Timestamp>()
        .is_ok_and(|at| at <= app.clock.now());
    let state = match status {
        "pending_payment" if past => "expired",
        "pending_payment" => "open",
        "paid" | "delivered" => "paid",
        other => other,
    };
    let (sentence, actions) = match state {
        "open" => (
            format!(
                "Waiting for payment. This checkout is open until {}.",
                until(expires)
            ),
            format!(
                "{}{}",
                primary_button(
                    "pay",
                    &format!("/sandbox/checkout/{session}/pay"),
                    &format!("Pay {amount}")
                ),
                button(
                    "cancel",
                    &format!("/sandbox/checkout/{session}/cancel"),
                    "Cancel"
                )
            ),
        ),
        "paid" => (
            "Paid. The buyer's agent can now fetch the purchase.".to_owned(),
            String::new(),
        ),
        "cancelled" => (
            "This checkout was cancelled; nothing was charged.".to_owned(),
            String::new(),
        ),
        "expired" => (
            "This checkout expired before it was paid; nothing was charged.".to_owned(),
            String::new(),
        ),
        _ => ("This checkout is closed.".to_owned(), String::new()),
    };
    // The scripted twins of the buttons, while there are buttons.
    let scripts = if actions.is_empty() {
        String::new()
    } else {
        format!(
            " Scripts: <code>POST /api/sandbox/checkout/{}/pay</code> or <code>…/cancel</code>.",
            html(session)
        )
    };
    let body = format!(
        "<h1>Checkout</h1><div class=\"card\"><p><strong id=\"title\">{title}</strong><br>\
         <span class=\"meta\">sold by <span id=\"seller\">{seller}</span></span></p>\
         <p>Amount: <strong id=\"amount\">{amount}</strong></p></div>\
         <p id=\"state\" class=\"state {state}\" data-state=\"{state}\">{sentence}</p>{outcome}{actions}\
         <p class=\"meta\">Status: <span id=\"status\">{status}</span>.{scripts}</p>",
        title = html(view.title.as_deref().unwrap_or("")),
        seller = html(view.seller_code.as_deref().unwrap_or("")),
        status = html(status),
        outcome = outcome(ctx),
    );
    Ok(page("bourse sandbox checkout", &body))
}

/// When an open checkout closes, as a person reads it (`21 Nov 2026, 04:30 UTC`), the exact
/// instant in the `<time>` element; a value that does not parse is shown as it is.
fn until(expires: &str) -> String {
    match expires.parse::<jiff::Timestamp>() {
        Ok(at) => format!(
            "<time datetime=\"{}\" style=\"white-space:nowrap\">{}</time>",
            html(expires),
            at.strftime("%-d %b %Y, %H:%M UTC")
        ),
        Err(_) => html(expires),
    }
}

/// The Pay button of the checkout page.
pub async fn pay_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = ctx.param();
    back(
        &format!("/sandbox/checkout/{session}"),
        sandbox::pay(app, session).await.map(|paid| paid.status),
    )
}

/// The Cancel button of the checkout page.
pub async fn cancel_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let session = ctx.param();
    back(
        &format!("/sandbox/checkout/{session}"),
        sandbox::cancel(app, session)
            .await
            .map(|ended| ended.status),
    )
}

#[cfg(test)]
mod tests {
    use super::until;

    #[test]
    fn the_closing_time_reads_as_a_date_and_keeps_the_instant() {
        assert_eq!(
            until("2026-11-21T04:30:00.000Z"),
            "<time datetime=\"2026-11-21T04:30:00.000Z\" style=\"white-space:nowrap\">21 Nov 2026, 04:30 UTC</time>"
        );
        assert_eq!(until("soon<"), "soon&lt;");
    }
}
