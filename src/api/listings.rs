//! `/api/marketplace/*`, `/api/verticals`, `/api/sell/*`, `/api/stats`.

use crate::args::Args;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::Input;
use crate::request::catalog::{
    BROWSE, Browse, CREATE_HEALTH_LISTING, CREATE_LISTING, CreateListing, DEACTIVATE_LISTING,
    DeactivateListing, SET_DELIVERY_ENDPOINT, SetDeliveryEndpoint, UPDATE_LISTING, UpdateListing,
};
use crate::request::commerce::{self, BecomeSeller, Purchase, Rate};
use crate::service::commerce::rail::Rail;
use crate::service::{
    App, catalog::browse, catalog::listings, catalog::sellers, catalog::stats, commerce::checkout,
    commerce::payments, commerce::purchases, commerce::rails::x402, identity::agents,
};
use crate::store::agents::AgentRow;

/// The agent dispatch authenticated and the body without its `api_key` (marketplace REST takes
/// the key as `Authorization: Bearer` or as that body member, interface Authentication 3).
fn seller_and_args(ctx: &Ctx) -> Result<(&AgentRow, Args)> {
    Ok((ctx.agent()?, ctx.body_args()?))
}

/// The agent key (Bearer, else the body's `api_key`, removed from the body) and the body, for
/// the purchase, whose key is optional.
fn key_and_args(ctx: &Ctx) -> Result<(Option<String>, Args)> {
    let mut args = ctx.json_args()?;
    let body_key = args.take_str("api_key");
    Ok((ctx.bearer().map(str::to_owned).or(body_key), args))
}

fn id(ctx: &Ctx) -> &str {
    ctx.params.first().map_or("", String::as_str)
}

pub async fn categories(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::categories(app).await?))
}

pub async fn verticals(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::verticals(app).await?))
}

/// Browse counts the caller as a querier: the agent when a valid key comes with the request,
/// else the client address.
pub async fn browse(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = Browse::read(&Input::query(&BROWSE, &ctx.query))?;
    let agent = match ctx.bearer() {
        Some(key) => agents::authenticate(app, Some(key)).await.ok(),
        None => None,
    };
    let querier = browse::querier(app, agent.as_ref(), &ctx.client_ip.to_string());
    let members = browse::browse(app, &request, querier).await?;
    Ok(Reply::Canonical(200, members))
}

pub async fn create(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    let request = CreateListing::read(&Input::body(&CREATE_LISTING, args)?)?;
    Ok(Reply::Json(
        201,
        listings::create(app, seller, request).await?,
    ))
}

pub async fn create_health(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    let request = CreateListing::read(&Input::body(&CREATE_HEALTH_LISTING, args)?)?;
    Ok(Reply::Json(
        201,
        listings::create(app, seller, request).await?,
    ))
}

pub async fn detail(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(listings::detail(app, id(ctx)).await?))
}

pub async fn update(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    let request = UpdateListing::read(&Input::body(&UPDATE_LISTING, args)?)?;
    Ok(Reply::ok(
        listings::update(app, seller, id(ctx), request).await?,
    ))
}

pub async fn history(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(listings::history(app, id(ctx)).await?))
}

pub async fn deactivate(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    let request = DeactivateListing::read(&Input::body(&DEACTIVATE_LISTING, args)?)?;
    Ok(Reply::ok(
        listings::deactivate(app, seller, id(ctx), request).await?,
    ))
}

pub async fn set_delivery_endpoint(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    let request = SetDeliveryEndpoint::read(&Input::body(&SET_DELIVERY_ENDPOINT, args)?)?;
    Ok(Reply::ok(
        sellers::set_endpoint(app, seller, request).await?,
    ))
}

pub async fn get_delivery_endpoint(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    Ok(Reply::ok(sellers::get_endpoint(app, seller).await?))
}

pub async fn platform_stats(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::platform(app).await?))
}

pub async fn marketplace_stats(app: &App) -> Result<Reply> {
    Ok(Reply::ok(stats::marketplace(app).await?))
}

/// A purchase on the instance's card rail (key required), or on `x402_usdc_base` (no key
/// when configured, `rail: "x402_usdc_base"`, or a payment header): the rail is chosen by
/// `service::checkout`.
pub async fn purchase(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (key, args) = key_and_args(ctx)?;
    let request = Purchase::read(&Input::body(&commerce::PURCHASE, args)?)?;
    let payment = x402::PaymentHeader::from_headers(
        header(ctx, "payment-signature"),
        header(ctx, "x-payment"),
    )?;
    let rail = checkout::choose_rail(app, key.is_some(), request.rail.as_ref(), payment.is_some())?;
    // The card rail needs a key (401 without); on x402 the payment is the credential.
    let buyer = match (rail, key) {
        (Rail::Wallet, None) => None,
        (_, key) => Some(agents::authenticate(app, key.as_deref()).await?),
    };
    let order = purchases::Order {
        buyer: buyer.as_ref(),
        listing_id: id(ctx),
        request,
        rail,
        payment,
        resource: app.url(&ctx.path),
    };
    let answer = purchases::purchase_on(app, order).await?;
    Ok(Reply::Json(answer.status, answer.body).with_headers(answer.headers))
}

fn header<'a>(ctx: &'a Ctx, name: &str) -> Option<&'a str> {
    ctx.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The spec takes the buyer key as the `api_key` query parameter here; Bearer works too. An
/// x402 buyer reads with its `purchase_token` (query) or `X-Purchase-Token` instead.
pub async fn get_purchase(app: &App, ctx: &Ctx) -> Result<Reply> {
    let key = ctx
        .bearer()
        .or(ctx.query("api_key"))
        .filter(|k| !k.is_empty());
    let query = Input::query(&commerce::GET_PURCHASE, &ctx.query);
    let token = commerce::purchase_token(&query)?
        .or_else(|| header(ctx, "x-purchase-token").map(str::to_owned));
    if let (None, Some(token)) = (key, token) {
        return Ok(Reply::ok(
            purchases::get_with_token(app, id(ctx), &token).await?,
        ));
    }
    let buyer = agents::authenticate(app, key).await?;
    Ok(Reply::ok(purchases::get(app, &buyer, id(ctx)).await?))
}

pub async fn rate(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (buyer, args) = seller_and_args(ctx)?;
    let request = Rate::read(&Input::body(&commerce::RATE, args)?)?;
    Ok(Reply::ok(
        purchases::rate(app, buyer, id(ctx), request).await?,
    ))
}

pub async fn ship(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    Ok(Reply::ok(payments::ship(app, seller, id(ctx), args).await?))
}

pub async fn sell_register(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (seller, args) = seller_and_args(ctx)?;
    let request = BecomeSeller::read(&Input::body(&commerce::BECOME_SELLER, args)?)?;
    Ok(Reply::ok(
        checkout::register_seller(app, seller, request).await?,
    ))
}

pub async fn sell_dashboard(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    Ok(Reply::ok(payments::dashboard(app, seller).await?))
}
