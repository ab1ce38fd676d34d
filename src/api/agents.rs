//! `/api/agents/*`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::Input;
use crate::request::agents::{LIST_AGENTS, LOOKUP, Lookup, REGISTER, Register, list_page};
use crate::request::agents::{UPDATE_ME, UpdateMe};
use crate::service::App;
use crate::service::identity::agents::{self, Client};

pub async fn register(app: &App, ctx: &Ctx) -> Result<Reply> {
    let ip = ctx.client_ip.to_string();
    let request = read_body(ctx, &REGISTER, Register::read)?;
    let body = agents::register(app, request, &Client { ip: &ip }).await?;
    Ok(Reply::Json(201, json(&body)?))
}

pub async fn list(app: &App, ctx: &Ctx) -> Result<Reply> {
    let page = list_page(&Input::query(&LIST_AGENTS, &ctx.query))?;
    Ok(Reply::ok(json(
        &agents::list(app, page.limit, page.offset).await?,
    )?))
}

pub async fn me(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    Ok(Reply::ok(json(&agents::me(app, agent).await?)?))
}

pub async fn update_me(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let request = read_body(ctx, &UPDATE_ME, UpdateMe::read)?;
    Ok(Reply::ok(json(
        &agents::update_me(app, agent.clone(), request).await?,
    )?))
}

pub async fn lookup(app: &App, ctx: &Ctx) -> Result<Reply> {
    let ip = ctx.client_ip.to_string();
    let request = Lookup::read(&Input::query(&LOOKUP, &ctx.query))?;
    Ok(Reply::ok(json(
        &agents::lookup(app, request, &Client { ip: &ip }).await?,
    )?))
}

pub async fn revoke_key(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(json(
        &agents::revoke_key(app, ctx.bearer()).await?,
    )?))
}
