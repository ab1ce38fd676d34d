//! `/api/agents/me/spending-policy`, `/api/agents/me/spending` and the restricted keys
//! (`/api/agents/me/keys`).

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::spending::{CREATE_KEY, CreateKey, SET_SPENDING_POLICY, SetPolicy};
use crate::service::{App, identity::keys, spending};

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

pub async fn create_key(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let request = read_body(ctx, &CREATE_KEY, CreateKey::read)?;
    Ok(Reply::Json(
        201,
        json(&keys::mint(app, agent, request).await?)?,
    ))
}

pub async fn list_keys(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    Ok(Reply::ok(json(&keys::list(app, agent).await?)?))
}

pub async fn revoke_key(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    Ok(Reply::ok(json(
        &keys::revoke(app, agent, ctx.param()).await?,
    )?))
}
