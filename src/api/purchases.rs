//! `/api/marketplace/listings/{id}/purchase`, `/api/marketplace/purchases/{id}` (read, ship)
//! and `/api/marketplace/listings/{id}/rate`.

use super::read_keyed_body;
use crate::args::Args;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::commerce::{self, GetPurchase, PaymentHeader, Purchase, Rate, Ship};
use crate::request::{Face, Input, Scope};
use crate::service::rail::Rail;
use crate::service::{
    App, commerce::checkout, commerce::payments, commerce::purchases, identity::agents,
    identity::keys,
};

/// A purchase on the instance's card rail (key required), or on `x402_usdc_base` (no key
/// when configured, `rail: "x402_usdc_base"`, or a payment header): the rail is chosen by
/// `service::commerce::checkout`.
pub async fn purchase(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (key, args) = key_and_args(ctx)?;
    // The rail is chosen, and the buyer authenticated, before the rest of the body is judged.
    let input = Input::unchecked(Face::Rest, &commerce::PURCHASE, args);
    let payment =
        PaymentHeader::from_headers(ctx.header("payment-signature"), ctx.header("x-payment"))?;
    let request = Purchase::read(&input, Some(ctx.param()), payment)?;
    let rail = checkout::choose_rail(app, key.is_some(), &request)?;
    // The card rail needs a key (401 without); on x402 the payment is the credential.
    let buyer = match (rail, key) {
        (Rail::Wallet, None) => None,
        (_, key) => Some(agents::authenticate(app, key.as_deref()).await?),
    };
    if let Some(buyer) = &buyer {
        keys::require_scope(buyer, Some(Scope::Spend), "buying")?;
    }
    input.check_members()?;
    let resource = app.url(&ctx.path);
    Ok(
        match purchases::purchase_on(app, buyer.as_ref(), rail, request, resource).await? {
            // A purchase waiting for the owner's approval is accepted, not done: 202.
            purchases::Answer::Purchase { purchase, headers } => {
                let status = if purchase.status == "pending_approval" {
                    202
                } else {
                    200
                };
                Reply::Json(status, json(&*purchase)?).with_headers(headers)
            }
            purchases::Answer::Refused(refusal) => {
                Reply::Json(refusal.status, refusal.body).with_headers(refusal.headers)
            }
        },
    )
}

/// The agent key (Bearer, else the body's `api_key`, removed from the body) and the body, for
/// the purchase, whose key is optional.
fn key_and_args(ctx: &Ctx) -> Result<(Option<String>, Args)> {
    let (body_key, args) = ctx.body_key_and_args()?;
    Ok((ctx.bearer().map(str::to_owned).or(body_key), args))
}

/// The spec takes the buyer key as the `api_key` query parameter here; Bearer works too. An
/// x402 buyer reads with its `purchase_token` (query) or `X-Purchase-Token` instead.
pub async fn get_purchase(app: &App, ctx: &Ctx) -> Result<Reply> {
    let key = ctx
        .bearer()
        .or(ctx.query("api_key"))
        .filter(|k| !k.is_empty());
    let query = Input::query(&commerce::GET_PURCHASE, &ctx.query);
    let request = GetPurchase::read(&query, Some(ctx.param()))?;
    if key.is_none() {
        let token = commerce::purchase_token(&query)?
            .or_else(|| ctx.header("x-purchase-token").map(str::to_owned));
        if let Some(token) = token {
            return Ok(Reply::ok(json(
                &purchases::get_with_token(app, request, &token).await?,
            )?));
        }
    }
    let buyer = agents::authenticate(app, key).await?;
    keys::require_scope(&buyer, Some(Scope::Read), "reading a purchase")?;
    Ok(Reply::ok(json(
        &purchases::get(app, &buyer, request).await?,
    )?))
}

pub async fn rate(app: &App, ctx: &Ctx) -> Result<Reply> {
    let buyer = ctx.agent()?;
    let request = read_keyed_body(ctx, &commerce::RATE, |input| {
        Rate::read(input, Some(ctx.param()))
    })?;
    Ok(Reply::ok(json(
        &purchases::rate(app, buyer, request).await?,
    )?))
}

pub async fn ship(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let request = read_keyed_body(ctx, &commerce::SHIP, |input| Ship::read(input, ctx.param()))?;
    Ok(Reply::ok(json(
        &payments::ship(app, seller, request).await?,
    )?))
}
