//! The console's messages (`GET /console/messages`): volume and delivery only, never a message
//! body: messages per day, callback deliveries with their attempts and outcomes, dead letters,
//! and a Replay form for each (`POST /console/messages/callbacks/{id}/replay`, the service of
//! the agent's own replay route).

use super::{charts, form, html, layout, see_other};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::{count, escape};
use crate::service::App;
use crate::service::disclosure::overview;
use crate::service::identity::console::Session;
use crate::service::messaging::operator;

/// `GET /console/messages?status=`.
///
/// # Errors
/// `INVALID_ARGUMENT` for an unknown status; database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let status = ctx.query("status");
    let deliveries = operator::deliveries(app, status).await?;
    let figures = overview::overview(app).await?;
    let points: Vec<(String, i64)> = figures
        .days
        .iter()
        .map(|d| (d.day.clone(), d.messages))
        .collect();
    let done = if ctx.query("done") == Some("replayed") {
        "<p id=\"result\" class=\"notice\" role=\"status\">Replayed: the delivery is queued again with five fresh attempts.</p>"
    } else {
        ""
    };
    let rows: String = deliveries
        .iter()
        .map(|d| {
            let r = &d.row;
            let action = if r.status == "dead" {
                form(
                    session,
                    &format!("/console/messages/callbacks/{}/replay", escape(&r.id)),
                    "",
                    &format!("replay-{}", escape(&r.id)),
                    "Replay",
                    "",
                )
            } else {
                String::new()
            };
            format!(
                "<tr><td><a href=\"/console/agents/{handle}\">{handle}</a></td><td>{status}</td><td>{attempts}</td><td>{error}</td><td>{updated}</td><td>{action}</td></tr>",
                handle = escape(&d.handle),
                status = escape(&r.status),
                attempts = r.attempts,
                error = escape(r.last_error.as_deref().unwrap_or("—")),
                updated = escape(&r.updated_at),
            )
        })
        .collect();
    let options: String = ["pending", "delivered", "dead"]
        .iter()
        .map(|s| {
            let selected = if Some(*s) == status { " selected" } else { "" };
            format!("<option value=\"{s}\"{selected}>{s}</option>")
        })
        .collect();
    let body = format!(
        "<h1>Messages</h1>{done}<p class=\"meta\">Volume and delivery only: message bodies are never shown here.</p>\
         <div class=\"charts\">{chart}</div>\
         <p id=\"outcomes\">Callback deliveries: {pending} pending, {delivered} delivered, {dead} dead letters.</p>\
         <h2>Callback deliveries</h2>\
         <form method=\"get\" action=\"/console/messages\" class=\"filters\"><label for=\"status\">Outcome <select id=\"status\" name=\"status\"><option value=\"\">any</option>{options}</select></label> <button id=\"filter\" type=\"submit\">Filter</button></form>\
         <div class=\"scroll\"><table id=\"deliveries\"><thead><tr><th scope=\"col\">Agent</th><th scope=\"col\">Outcome</th><th scope=\"col\">Attempts</th><th scope=\"col\">Last error</th><th scope=\"col\">Updated</th><th scope=\"col\">Action</th></tr></thead><tbody>{rows}</tbody></table></div>",
        chart = charts::bars("chart-messages", "Messages per day", &points, count),
        pending = count(figures.callbacks_pending),
        delivered = count(figures.callbacks_delivered),
        dead = count(figures.dead_letters),
    );
    Ok(html(
        200,
        layout(app, "Messages", Some(session), "/console/messages", &body),
    ))
}

/// `POST /console/messages/callbacks/{id}/replay`.
///
/// # Errors
/// `NOT_FOUND`, `NOT_DEAD`, `CALLBACK_URL_MISSING`; database failure.
pub async fn replay(app: &App, ctx: &Ctx) -> Result<Reply> {
    operator::replay(app, ctx.param()).await?;
    Ok(see_other("/console/messages?done=replayed"))
}
