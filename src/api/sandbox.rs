//! The sandbox rail's JSON twins of the page buttons (`POST /api/sandbox/checkout/{id}/pay`,
//! `…/cancel`, `POST /api/sandbox/connect/{id}/complete`), the operator's test clock, and the
//! public check of a payment session's signed receipt
//! (`GET /api/svcpay/receipts/{session_id}/verify`). The pages are in `crate::pages`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::commerce::{ADVANCE_CLOCK, clock_change};
use crate::service::{App, commerce::payments, commerce::rails::sandbox};

pub async fn pay(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(json(&sandbox::pay(app, ctx.param()).await?)?))
}

pub async fn cancel(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(json(&sandbox::cancel(app, ctx.param()).await?)?))
}

pub async fn complete(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(json(
        &sandbox::complete_onboarding(app, ctx.param()).await?,
    )?))
}

pub async fn clock(app: &App, ctx: &Ctx) -> Result<Reply> {
    let change = read_body(ctx, &ADVANCE_CLOCK, clock_change)?;
    Ok(Reply::ok(json(
        &payments::advance_clock(app, change).await?,
    )?))
}

/// `GET /api/sandbox/clock`.
pub fn clock_now(app: &App) -> Result<Reply> {
    Reply::answer(200, &crate::service::commerce::operator::sandbox_clock(app))
}

pub async fn verify_session_receipt(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(json(
        &payments::verify_session_receipt(app, ctx.param()).await?,
    )?))
}
