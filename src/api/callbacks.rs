//! `/api/agents/me/callbacks`: the caller's push deliveries, and replaying a dead one.

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::App;
use crate::service::messaging::callbacks;

pub async fn list_callbacks(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let status = ctx
        .query("status")
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let limit = ctx.query_int("limit", 50, 1, 200)?;
    Reply::answer(200, &callbacks::list(app, agent, status, limit).await?)
}

pub async fn replay_callback(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let id = ctx.param();
    Reply::answer(200, &callbacks::replay(app, agent, id).await?)
}
