//! The console's sandbox section (sandbox rail only): the test clock (`POST
//! /console/sandbox/clock`: advance or reset, the service of `POST /api/sandbox/clock`; its time
//! is also public at `GET /api/sandbox/clock`), what escrow it will release next, and Pay or
//! Cancel for every open checkout (`POST /console/sandbox/checkouts/{session}/pay|cancel`, the
//! services of the checkout page's buttons), and a feed of what agents are doing (the newest
//! listings created and purchases opened or paid, and the messages of the last hour as a count,
//! never a body), read again by its Refresh link: no script, no automatic reload.

use serde_json::json;

use super::{field, form, html, layout, see_other};
use crate::args::Args;
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::{count, dollars, escape};
use crate::request::Input;
use crate::request::commerce::{ADVANCE_CLOCK, clock_change};
use crate::service::App;
use crate::service::commerce::operator::{self, Filter};
use crate::service::commerce::payments;
use crate::service::commerce::rails::sandbox;
use crate::service::disclosure::overview;
use crate::service::identity::console::Session;

/// `GET /console/sandbox`.
///
/// # Errors
/// Database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let open = operator::purchases(
        app,
        Filter {
            status: Some("pending_payment"),
            rail: None,
        },
    )
    .await?
    .0;
    let queue = operator::escrow_queue(app).await?;
    let done = ctx
        .query("done")
        .map(|what| {
            let sentence = match what {
                "clock" => "The clock moved; the worker ran once.",
                "paid" => "Checkout paid.",
                "cancelled" => "Checkout cancelled.",
                _ => "Done.",
            };
            format!("<p id=\"result\" class=\"notice\" role=\"status\">{sentence}</p>")
        })
        .unwrap_or_default();
    let checkouts: String = open
        .iter()
        .filter_map(|p| {
            let session_id = p.checkout_session.as_deref()?;
            let pay = form(
                session,
                &format!("/console/sandbox/checkouts/{}/pay", escape(session_id)),
                "",
                &format!("pay-{}", escape(&p.id)),
                "Pay",
                "primary",
            );
            let cancel = form(
                session,
                &format!("/console/sandbox/checkouts/{}/cancel", escape(session_id)),
                "",
                &format!("cancel-{}", escape(&p.id)),
                "Cancel",
                "",
            );
            Some(format!(
                "<tr><td>{title}</td><td>{buyer}</td><td>{amount}</td><td>{created}</td><td>{pay} {cancel}</td></tr>",
                title = escape(&p.listing_title),
                buyer = escape(p.buyer_handle.as_deref().unwrap_or("anonymous")),
                amount = dollars(p.amount_cents),
                created = escape(&p.created_at),
            ))
        })
        .collect();
    let next: String = queue
        .iter()
        .filter(|p| p.release_at.is_some())
        .take(5)
        .map(|p| {
            format!(
                "<li>{at}: {title} ({amount} to {seller})</li>",
                at = escape(p.release_at.as_deref().unwrap_or("")),
                title = escape(&p.listing_title),
                amount = dollars(p.amount_cents),
                seller = escape(&p.seller_handle),
            )
        })
        .collect();
    let next = if next.is_empty() {
        "<p id=\"next\">Nothing is waiting for its release time.</p>".to_owned()
    } else {
        format!("<ol id=\"next\">{next}</ol>")
    };
    let activity = overview::activity(app).await?;
    let feed: String = activity
        .lines
        .iter()
        .map(|a| {
            format!(
                "<tr><td><time datetime=\"{at}\">{at}</time></td><td>{what}</td><td>{who}</td><td>{title}</td></tr>",
                at = escape(&a.at),
                what = escape(&a.what),
                who = escape(&a.who),
                title = escape(&a.title),
            )
        })
        .collect();
    let clock = form(
        session,
        "/console/sandbox/clock",
        "<label for=\"advance\">Advance by</label> <select id=\"advance\" name=\"advance\">\
         <option value=\"3600\">1 hour</option><option value=\"86400\">1 day</option>\
         <option value=\"604800\" selected>7 days</option><option value=\"2592000\">30 days</option></select> ",
        "advance-clock",
        "Advance",
        "primary",
    );
    let reset = form(
        session,
        "/console/sandbox/clock",
        "<input type=\"hidden\" name=\"reset\" value=\"true\">",
        "reset-clock",
        "Back to real time",
        "",
    );
    let body = format!(
        "<h1>Sandbox</h1>{done}\
         <h2>Test clock</h2><p>Now, for this server: <time id=\"clock\">{now}</time> (also at <a href=\"/api/sandbox/clock\">/api/sandbox/clock</a>).</p>\
         <p>{clock}</p><p>{reset}</p>\
         <h2>Released next</h2>{next}\
         <h2>Open checkouts</h2><div class=\"scroll\"><table id=\"checkouts\"><thead><tr><th scope=\"col\">Listing</th><th scope=\"col\">Buyer</th><th scope=\"col\">Amount</th><th scope=\"col\">Opened</th><th scope=\"col\">Action</th></tr></thead><tbody>{checkouts}</tbody></table></div>\
         <h2 id=\"activity\">What agents are doing</h2>\
         <p><a id=\"refresh\" href=\"/console/sandbox#activity\">Refresh</a> <span class=\"meta\">(read when the page was drawn; the newest {shown}).</span></p>\
         <p id=\"messages-hour\">{messages} messages accepted in the last hour (counted; bodies are never shown).</p>\
         <div class=\"scroll\"><table id=\"feed\"><thead><tr><th scope=\"col\">When</th><th scope=\"col\">What</th><th scope=\"col\">Agent</th><th scope=\"col\">Listing</th></tr></thead><tbody>{feed}</tbody></table></div>",
        shown = activity.lines.len(),
        messages = count(activity.messages_last_hour),
        now = escape(&app.now()),
    );
    Ok(html(
        200,
        layout(app, "Sandbox", Some(session), "/console/sandbox", &body),
    ))
}

/// `POST /console/sandbox/clock` {advance: seconds} or {reset: true}.
///
/// # Errors
/// `INVALID_ARGUMENT` as `POST /api/sandbox/clock`; `CLOCK_FIXED`; database failure.
pub async fn clock(app: &App, ctx: &Ctx) -> Result<Reply> {
    let body = match (field(ctx, "reset"), field(ctx, "advance")) {
        (Some(_), _) => json!({ "reset": true }),
        (None, Some(seconds)) => {
            let seconds: i64 = seconds
                .parse()
                .map_err(|_| Error::InvalidArgument("advance: a number of seconds".into()))?;
            json!({ "advanceSeconds": seconds })
        }
        (None, None) => {
            return Err(Error::InvalidArgument("advance (seconds) or reset".into()));
        }
    };
    let change = clock_change(&Input::body(&ADVANCE_CLOCK, Args::from_value(body)?)?)?;
    let moved = payments::advance_clock(app, change).await?;
    tracing::info!(target: "console", now = %moved.now, "operator moved the sandbox clock");
    Ok(see_other("/console/sandbox?done=clock"))
}

/// `POST /console/sandbox/checkouts/{session}/pay` or `…/cancel`.
///
/// # Errors
/// `NOT_FOUND`; `CHECKOUT_CLOSED`; database failure.
pub async fn settle(app: &App, ctx: &Ctx, pay: bool) -> Result<Reply> {
    let session_id = ctx.param();
    if pay {
        sandbox::pay(app, session_id).await?;
    } else {
        sandbox::cancel(app, session_id).await?;
    }
    tracing::info!(target: "console", pay, "operator settled a sandbox checkout");
    let done = if pay { "paid" } else { "cancelled" };
    Ok(see_other(&format!("/console/sandbox?done={done}")))
}
