//! The console's fees (`GET /console/fees`): the schedule in force and the announced ones, and
//! a form that announces a change (`POST /console/fees`), read and checked exactly as
//! `POST /api/operator/fees/announcements` and `bourse fees announce` do (the notice rule
//! included).

use serde_json::{Value, json};

use super::{field, form, html, layout, see_other};
use crate::args::Args;
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::{dollars, escape};
use crate::request::Input;
use crate::request::disclosure::{ANNOUNCE, Announce};
use crate::service::App;
use crate::service::disclosure::meta;
use crate::service::identity::console::Session;

fn percent(bps: i64) -> String {
    format!("{}.{:02}%", bps / 100, bps % 100)
}

/// `GET /console/fees`.
///
/// # Errors
/// Database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let fees = meta::fees(app).await?;
    let bands: String = fees
        .live
        .bands
        .iter()
        .map(|b| {
            format!(
                "<tr><th scope=\"row\">{band}</th><td>{from}</td><td>{to}</td><td>{rate}</td></tr>",
                band = escape(b.band),
                from = dollars(b.from_cents),
                to = b.to_cents.map_or_else(|| "and above".to_owned(), dollars),
                rate = percent(b.bps),
            )
        })
        .collect();
    let announced: String = fees
        .announced
        .iter()
        .map(|a| {
            format!(
                "<tr><td>{version}</td><td>{status}</td><td>{announced}</td><td>{from}</td><td><code>{schedule}</code></td><td>{note}</td></tr>",
                version = a.version,
                status = escape(a.status),
                announced = escape(&a.announced_at),
                from = escape(&a.effective_from),
                schedule = escape(&a.schedule.to_string()),
                note = escape(a.note.as_deref().unwrap_or("")),
            )
        })
        .collect();
    let done = if ctx.query("done") == Some("announced") {
        "<p id=\"result\" class=\"notice\" role=\"status\">Announced: it is published at /api/fees and /disclosures.</p>"
    } else {
        ""
    };
    let announce = form(
        session,
        "/console/fees",
        &format!(
            "<label for=\"effective\">Effective from (YYYY-MM-DD, at least {days} days from today)</label>\
             <input id=\"effective\" type=\"text\" name=\"effective_from\" required pattern=\"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}\">\
             <label for=\"schedule\">The new schedule (a JSON object)</label>\
             <textarea id=\"schedule\" name=\"schedule\" rows=\"4\" cols=\"50\" required></textarea>\
             <label for=\"note\">Note (optional)</label><input id=\"note\" type=\"text\" name=\"note\" maxlength=\"2000\"><br>",
            days = fees.notice_days,
        ),
        "announce",
        "Announce",
        "primary",
    );
    let body = format!(
        "<h1>Fees</h1>{done}\
         <h2>In force: version {version}</h2>\
         <div class=\"scroll\"><table id=\"bands\"><thead><tr><th scope=\"col\">Band</th><th scope=\"col\">From</th><th scope=\"col\">To</th><th scope=\"col\">Rate</th></tr></thead><tbody>{bands}</tbody></table></div>\
         <p>Buyer fee {buyer}, listing fee {listing}; locked until {lock}. {notice}</p>\
         <h2>Announced</h2><div class=\"scroll\"><table id=\"announced\"><thead><tr><th scope=\"col\">Version</th><th scope=\"col\">Status</th><th scope=\"col\">Announced</th><th scope=\"col\">Effective</th><th scope=\"col\">Schedule</th><th scope=\"col\">Note</th></tr></thead><tbody>{announced}</tbody></table></div>\
         <h2>Announce a change</h2>{announce}",
        version = fees.live.version,
        buyer = percent(fees.live.buyer_bps),
        listing = percent(fees.live.listing_fee_bps),
        lock = escape(fees.live.lock_until),
        notice = escape(&fees.change_notice),
    );
    Ok(html(
        200,
        layout(app, "Fees", Some(session), "/console/fees", &body),
    ))
}

/// `POST /console/fees` {effective_from, schedule, note}.
///
/// # Errors
/// `INVALID_ARGUMENT` (a schedule that is not a JSON object, a date too soon: the rule of
/// `POST /api/operator/fees/announcements`); database failure.
pub async fn announce(app: &App, ctx: &Ctx) -> Result<Reply> {
    let schedule: Value = serde_json::from_str(&field(ctx, "schedule").unwrap_or_default())
        .map_err(|_| Error::InvalidArgument("schedule: a JSON object".into()))?;
    let mut body = json!({
        "effectiveFrom": field(ctx, "effective_from").unwrap_or_default(),
        "schedule": schedule,
    });
    if let Some(note) = field(ctx, "note") {
        body["note"] = note.into();
    }
    let request = Announce::read(&Input::body(&ANNOUNCE, Args::from_value(body)?)?)?;
    let announced = meta::announce_now(app, request).await?;
    tracing::info!(target: "console", version = announced.version, effective_from = %announced.effective_from, "operator announced a fee change");
    Ok(see_other("/console/fees?done=announced"))
}
