//! `/api/sell/*`: the seller's delivery endpoint, payout onboarding and dashboard.

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::Input;
use crate::request::catalog::{SET_DELIVERY_ENDPOINT, SetDeliveryEndpoint};
use crate::request::commerce::{self, BecomeSeller};
use crate::service::{App, catalog::sellers, commerce::checkout, commerce::payments};

pub async fn set_delivery_endpoint(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = ctx.agent_and_body()?;
    let request = SetDeliveryEndpoint::read(&Input::body(&SET_DELIVERY_ENDPOINT, args)?)?;
    Ok(Reply::ok(
        sellers::set_endpoint(app, seller, request).await?,
    ))
}

pub async fn get_delivery_endpoint(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    Ok(Reply::ok(sellers::get_endpoint(app, seller).await?))
}

pub async fn sell_register(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = ctx.agent_and_body()?;
    let request = BecomeSeller::read(&Input::body(&commerce::BECOME_SELLER, args)?)?;
    Ok(Reply::ok(
        checkout::register_seller(app, seller, request).await?,
    ))
}

pub async fn sell_dashboard(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    Ok(Reply::ok(payments::dashboard(app, seller).await?))
}
