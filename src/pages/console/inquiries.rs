//! The console's inquiries (`GET /console/inquiries[/{id}]`): the threads people and agents
//! opened with the marketplace, an answer posted as the team
//! (`POST /console/inquiries/{id}/reply`) and a change of status
//! (`POST /console/inquiries/{id}/status`), read and checked as the operator's REST routes
//! `POST /api/operator/inquiries/{id}/reply` and `PATCH /api/operator/inquiries/{id}` are, and
//! the approval of a relay rail rooted in the thread (`POST /console/inquiries/{id}/rails`, the
//! service of `POST /api/rails`), whose consent token is shown once.

use serde_json::json;

use super::{field, form, html, layout, see_other};
use crate::args::Args;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::escape;
use crate::request::Input;
use crate::request::contact::{
    CREATE_RAIL, INQUIRIES_DEFAULT, InquiryList, POST_MESSAGE, PostMessage, SET_STATUS, STATUSES,
    root_inquiry, status,
};
use crate::service::App;
use crate::service::contact::threads::{self, Poster};
use crate::service::identity::console::Session;

/// `GET /console/inquiries`.
///
/// # Errors
/// Database failure.
pub async fn list(app: &App, session: &Session) -> Result<Reply> {
    let page = threads::list(
        app,
        InquiryList {
            status: None,
            page: crate::request::Page {
                limit: INQUIRIES_DEFAULT,
                offset: 0,
            },
        },
    )
    .await?;
    let rows: String = page
        .inquiries
        .iter()
        .map(|listed| {
            let i = &listed.inquiry;
            format!(
                "<tr><td><a href=\"/console/inquiries/{id}\">{subject}</a></td><td>{kind}</td><td>{status}</td><td>{created}</td></tr>",
                id = escape(&i.id),
                subject = escape(&i.subject),
                kind = escape(&i.kind),
                status = escape(&i.status),
                created = escape(&i.created_at),
            )
        })
        .collect();
    let body = format!(
        "<h1>Inquiries</h1><p id=\"summary\">{total} inquiries; the newest {shown}.</p>\
         <div class=\"scroll\"><table id=\"inquiries\"><thead><tr><th scope=\"col\">Subject</th><th scope=\"col\">Kind</th><th scope=\"col\">Status</th><th scope=\"col\">Opened</th></tr></thead><tbody>{rows}</tbody></table></div>",
        total = page.total,
        shown = page.inquiries.len(),
    );
    Ok(html(
        200,
        layout(app, "Inquiries", Some(session), "/console/inquiries", &body),
    ))
}

/// `GET /console/inquiries/{id}`.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn thread(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let thread = threads::thread(app, ctx.param()).await?;
    let i = &thread.inquiry;
    let messages: String = thread
        .messages
        .iter()
        .map(|m| {
            format!(
                "<li><p><strong>{from}</strong>{author}, <time datetime=\"{at}\">{at}</time></p><p>{body}</p></li>",
                from = escape(&m.from),
                author = m
                    .author_name
                    .as_deref()
                    .map(|a| format!(" ({})", escape(a)))
                    .unwrap_or_default(),
                at = escape(&m.created_at),
                body = escape(&m.body),
            )
        })
        .collect();
    let done = match ctx.query("done") {
        Some("replied") => {
            "<p id=\"result\" class=\"notice\" role=\"status\">Answer posted as the team.</p>"
        }
        Some("status") => "<p id=\"result\" class=\"notice\" role=\"status\">Status changed.</p>",
        _ => "",
    };
    let options: String = STATUSES
        .iter()
        .map(|s| {
            let selected = if *s == i.status { " selected" } else { "" };
            format!("<option value=\"{s}\"{selected}>{s}</option>")
        })
        .collect();
    let id = escape(&i.id);
    let reply = form(
        session,
        &format!("/console/inquiries/{id}/reply"),
        "<label for=\"message\">Answer as the team</label><textarea id=\"message\" name=\"message\" rows=\"4\" cols=\"50\" maxlength=\"10000\" required></textarea><br>",
        "reply",
        "Post answer",
        "primary",
    );
    let set = form(
        session,
        &format!("/console/inquiries/{id}/status"),
        &format!(
            "<label for=\"status\">Status <select id=\"status\" name=\"status\">{options}</select></label> "
        ),
        "set-status",
        "Change status",
        "",
    );
    let rail = form(
        session,
        &format!("/console/inquiries/{id}/rails"),
        "",
        "approve-rail",
        "Approve a relay rail",
        "",
    );
    let body = format!(
        "<h1>{subject}</h1>{done}<p>{kind}, <span id=\"inquiry-status\">{status}</span>, opened {created}.</p>\
         <p>{message}</p><h2>Thread</h2><ol id=\"thread\">{messages}</ol>\
         <h2>Answer</h2>{reply}<h2>Status</h2>{set}\
         <h2>Relay rail</h2><p>A relay rail lets whoever holds its consent token post into this thread as the inquirer, also once it is closed, and nothing else. Its token is shown once.</p>{rail}",
        subject = escape(&i.subject),
        kind = escape(&i.kind),
        status = escape(&i.status),
        created = escape(&i.created_at),
        message = escape(&i.message),
    );
    Ok(html(
        200,
        layout(app, &i.subject, Some(session), "/console/inquiries", &body),
    ))
}

/// `POST /console/inquiries/{id}/reply` {message}.
///
/// # Errors
/// `INVALID_ARGUMENT`; `NOT_FOUND`; the thread's limits; database failure.
pub async fn reply(app: &App, ctx: &Ctx) -> Result<Reply> {
    let body = json!({ "message": field(ctx, "message").unwrap_or_default() });
    let request = Args::from_value(body)
        .and_then(|args| Input::body(&POST_MESSAGE, args))
        .and_then(|input| PostMessage::read(&input));
    let id = ctx.param();
    threads::post(app, id, Poster::Team, request).await?;
    tracing::info!(target: "console", inquiry = %id, "operator answered an inquiry");
    Ok(see_other(&format!("/console/inquiries/{id}?done=replied")))
}

/// `POST /console/inquiries/{id}/status` {status}.
///
/// # Errors
/// `INVALID_ARGUMENT`; `NOT_FOUND`; database failure.
pub async fn set_status(app: &App, ctx: &Ctx) -> Result<Reply> {
    let body = json!({ "status": field(ctx, "status").unwrap_or_default() });
    let chosen = status(&Input::body(&SET_STATUS, Args::from_value(body)?)?)?;
    let id = ctx.param();
    threads::set_status(app, id, chosen).await?;
    tracing::info!(target: "console", inquiry = %id, status = chosen, "operator changed an inquiry's status");
    Ok(see_other(&format!("/console/inquiries/{id}?done=status")))
}

/// `POST /console/inquiries/{id}/rails`: approves a relay rail rooted in the inquiry; its
/// consent token is shown once, on a page never cached.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn approve_rail(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let id = ctx.param();
    let body = json!({ "rootInquiryId": id });
    let root = root_inquiry(&Input::body(&CREATE_RAIL, Args::from_value(body)?)?)?;
    let created = threads::create_rail(app, root).await?;
    tracing::info!(target: "console", inquiry = %id, rail = %created.rail.id, "operator approved a relay rail");
    let body = format!(
        "<h1>Relay rail approved</h1>\
         <p id=\"result\" class=\"notice\" role=\"status\">Rail <code>{rail}</code> is rooted in this inquiry since {at}.</p>\
         <p>The consent token, shown <strong>once</strong> (only its SHA-256 is kept): hand it to the party that relays.</p>\
         <p><code id=\"consent-token\">{token}</code></p>\
         <p>It permits one thing: <code>POST /api/inquiries/{id}/messages</code> with <code>Authorization: Bearer</code> and the token, as the inquirer, also when the thread is closed.</p>\
         <p><a href=\"/console/inquiries/{id}\">Back to the thread</a></p>",
        rail = escape(&created.rail.id),
        at = escape(&created.rail.created_at),
        token = escape(&created.consent_token),
        id = escape(id),
    );
    Ok(html(
        200,
        layout(
            app,
            "Relay rail",
            Some(session),
            "/console/inquiries",
            &body,
        ),
    ))
}
