//! `/api/sell/*`: the seller's delivery endpoint, payout onboarding and dashboard.

use super::read_keyed_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::catalog::{SET_DELIVERY_ENDPOINT, SetDeliveryEndpoint};
use crate::request::commerce::{self, BecomeSeller};
use crate::service::{App, catalog::sellers, commerce::checkout, commerce::payments};

pub async fn set_delivery_endpoint(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let request = read_keyed_body(ctx, &SET_DELIVERY_ENDPOINT, SetDeliveryEndpoint::read)?;
    Reply::answer(200, &sellers::set_endpoint(app, seller, request).await?)
}

pub async fn get_delivery_endpoint(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    Reply::answer(200, &sellers::get_endpoint(app, seller).await?)
}

pub async fn sell_register(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let request = read_keyed_body(ctx, &commerce::BECOME_SELLER, BecomeSeller::read)?;
    Ok(Reply::ok(json(
        &checkout::register_seller(app, seller, request).await?,
    )?))
}

pub async fn sell_dashboard(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    Ok(Reply::ok(json(&payments::dashboard(app, seller).await?)?))
}
