//! `/api/agents/{handle}/messages`, `/api/agents/me/inbox`, `/api/agents/me/callbacks`.

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::agents::{self, Client};
use crate::service::{App, callbacks, messages};

pub async fn send(app: &App, ctx: &Ctx) -> Result<Reply> {
    let ip = ctx.client_ip.to_string();
    let handle = ctx.params.first().map_or("", String::as_str);
    let sender = messages::Sender::Key(ctx.bearer());
    let sent =
        messages::send_as(app, sender, handle, ctx.json_args()?, &Client { ip: &ip }).await?;
    Ok(Reply::Json(
        if sent.created { 201 } else { 200 },
        sent.message,
    ))
}

pub async fn inbox(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = agents::authenticate(app, ctx.bearer()).await?;
    let after = ctx.query_int("after", 0, 0, i64::MAX >> 11)?;
    let limit = ctx.query_int("limit", messages::INBOX_DEFAULT, 1, messages::INBOX_MAX)?;
    let wait = ctx.query_int("wait", 0, 0, messages::WAIT_MAX_SECS)?;
    let ip = ctx.client_ip.to_string();
    Ok(Reply::ok(
        messages::inbox(app, &agent, after, limit, wait, &Client { ip: &ip }).await?,
    ))
}

pub async fn list_callbacks(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = agents::authenticate(app, ctx.bearer()).await?;
    let status = ctx
        .query("status")
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let limit = ctx.query_int("limit", 50, 1, 200)?;
    Ok(Reply::ok(
        callbacks::list(app, &agent, status, limit).await?,
    ))
}

pub async fn replay_callback(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = agents::authenticate(app, ctx.bearer()).await?;
    let id = ctx.params.first().map_or("", String::as_str);
    Ok(Reply::ok(callbacks::replay(app, &agent, id).await?))
}
