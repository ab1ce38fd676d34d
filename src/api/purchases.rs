//! `/api/marketplace/listings/{id}/purchase`, `/api/marketplace/purchases/{id}` (read, ship)
//! and `/api/marketplace/listings/{id}/rate`.

use super::read_keyed_body;
use crate::args::Args;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::Input;
use crate::request::commerce::{self, Purchase, Rate, Ship};
use crate::service::rail::Rail;
use crate::service::{
    App, commerce::checkout, commerce::payments, commerce::purchases, identity::agents,
};

/// A purchase on the instance's card rail (key required), or on `x402_usdc_base` (no key
/// when configured, `rail: "x402_usdc_base"`, or a payment header): the rail is chosen by
/// `service::commerce::checkout`.
pub async fn purchase(app: &App, ctx: &Ctx) -> Result<Reply> {
    let (key, mut args) = key_and_args(ctx)?;
    // The rail is chosen, and the buyer authenticated, before the rest of the body is judged.
    let named_rail = args.take("rail");
    let payment = checkout::PaymentHeader::from_headers(
        ctx.header("payment-signature"),
        ctx.header("x-payment"),
    )?;
    let rail = checkout::choose_rail(app, key.is_some(), named_rail.as_ref(), payment.is_some())?;
    // The card rail needs a key (401 without); on x402 the payment is the credential.
    let buyer = match (rail, key) {
        (Rail::Wallet, None) => None,
        (_, key) => Some(agents::authenticate(app, key.as_deref()).await?),
    };
    let request = Purchase::read(&Input::body(&commerce::PURCHASE, args)?);
    let order = purchases::Order {
        buyer: buyer.as_ref(),
        listing_id: ctx.param(),
        request,
        rail,
        payment,
        resource: app.url(&ctx.path),
    };
    let answer = purchases::purchase_on(app, order).await?;
    Ok(Reply::Json(answer.status, answer.body).with_headers(answer.headers))
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
    if key.is_none() {
        let query = Input::query(&commerce::GET_PURCHASE, &ctx.query);
        let token = commerce::purchase_token(&query)?
            .or_else(|| ctx.header("x-purchase-token").map(str::to_owned));
        if let Some(token) = token {
            return Ok(Reply::ok(
                purchases::get_with_token(app, ctx.param(), &token).await?,
            ));
        }
    }
    let buyer = agents::authenticate(app, key).await?;
    Ok(Reply::ok(purchases::get(app, &buyer, ctx.param()).await?))
}

pub async fn rate(app: &App, ctx: &Ctx) -> Result<Reply> {
    let buyer = ctx.agent()?;
    let request = read_keyed_body(ctx, &commerce::RATE, Rate::read)?;
    Ok(Reply::ok(
        purchases::rate(app, buyer, ctx.param(), request).await?,
    ))
}

pub async fn ship(app: &App, ctx: &Ctx) -> Result<Reply> {
    let seller = ctx.agent()?;
    let request = read_keyed_body(ctx, &commerce::SHIP, Ship::read)?;
    Ok(Reply::ok(
        payments::ship(app, seller, ctx.param(), request).await?,
    ))
}
