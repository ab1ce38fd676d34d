//! `/api/agents/me/spending-policy` and `/api/agents/me/spending`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::spending::{SET_SPENDING_POLICY, SetPolicy};
use crate::service::{App, spending};

pub async fn set_policy(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let request = read_body(ctx, &SET_SPENDING_POLICY, SetPolicy::read)?;
    Ok(Reply::ok(json(
        &spending::set_policy(app, agent, request).await?,
    )?))
}

pub async fn spending(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    Ok(Reply::ok(json(&spending::spending(app, agent).await?)?))
}
