//! `/api/agents/me/callbacks`: the caller's push deliveries, and replaying a dead one.

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::Input;
use crate::request::messaging::{CallbackList, LIST_CALLBACKS};
use crate::service::App;
use crate::service::messaging::callbacks;

pub async fn list_callbacks(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let list = CallbackList::read(&Input::query(&LIST_CALLBACKS, &ctx.query))?;
    Reply::answer(200, &callbacks::list(app, agent, list).await?)
}

pub async fn replay_callback(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let id = ctx.param();
    Reply::answer(200, &callbacks::replay(app, agent, id).await?)
}
