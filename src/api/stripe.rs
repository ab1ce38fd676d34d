//! `POST /api/webhooks/stripe`: the webhook Stripe posts events to (the page Stripe sends a
//! seller back to is in `crate::pages::onboarding`).

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, commerce::rails::stripe};

pub async fn webhook(app: &App, ctx: &Ctx) -> Result<Reply> {
    let signature = ctx
        .headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    Ok(Reply::ok(crate::http::response::to_json(
        &stripe::webhook(app, signature, &ctx.body).await?,
    )?))
}
