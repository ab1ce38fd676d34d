//! `/api/marketplace/listings`: browse, create (and the health-data create), detail, edit,
//! history, deactivate; and a seller's public page (`/api/marketplace/sellers/{code}`).

use super::read_keyed_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::catalog::{
    BROWSE, Browse, CREATE_HEALTH_LISTING, CREATE_LISTING, CreateListing, DEACTIVATE_LISTING,
    DeactivateListing, ListingId, UPDATE_LISTING, UpdateListing, read_health_listing,
};
use crate::request::sellers::{SELLER, Seller};
use crate::request::{Face, Input};
use crate::service::catalog::storefront;
use crate::service::{App, catalog::browse, catalog::listings, identity::agents};

/// Browse counts the caller as a querier: the agent when a valid key comes with the request,
/// else the client address.
pub async fn browse(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = Browse::read(&Input::query(&BROWSE, &ctx.query))?;
    let agent = match ctx.bearer() {
        Some(key) => agents::authenticate(app, Some(key)).await.ok(),
        None => None,
    };
    let querier = browse::querier(app, agent.as_ref(), &ctx.client_ip.to_string());
    Ok(Reply::Bytes(
        "application/json",
        hyper::body::Bytes::from_owner(browse::signed_browse(app, &request, querier).await?),
    ))
}

pub async fn create(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let request = read_keyed_body(ctx, &CREATE_LISTING, CreateListing::read)?;
    Reply::answer(201, &listings::create(app, seller, request).await?)
}

pub async fn create_health(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let input = Input::unchecked(Face::Rest, &CREATE_HEALTH_LISTING, ctx.body_args()?);
    let (consent, rest) = read_health_listing(&input)?;
    Reply::answer(
        201,
        &listings::create_health(app, seller, consent, rest).await?,
    )
}

pub async fn detail(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::Bytes(
        "application/json",
        hyper::body::Bytes::from_owner(
            listings::signed_detail(app, &ListingId::at(ctx.param())).await?,
        ),
    ))
}

pub async fn update(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let input = Input::body(&UPDATE_LISTING, ctx.body_args()?)?;
    let request = UpdateListing::read(&input, Some(ctx.param()))?;
    Reply::answer(200, &listings::update(app, seller, request).await?)
}

pub async fn history(app: &App, ctx: &Ctx) -> Result<Reply> {
    Reply::answer(
        200,
        &listings::history(app, &ListingId::at(ctx.param())).await?,
    )
}

pub async fn deactivate(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let request = read_keyed_body(ctx, &DEACTIVATE_LISTING, |input| {
        DeactivateListing::read(input, Some(ctx.param()))
    })?;
    Reply::answer(200, &listings::deactivate(app, seller, request).await?)
}

pub async fn seller(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = Seller::read(ctx.param(), &Input::query(&SELLER, &ctx.query))?;
    Reply::answer(200, &storefront::page(app, &request).await?)
}
