//! `GET /api/proof/demand`, `GET /api/proof/participation` (public) and
//! `PUT /api/operator/parties/{handle}` (operator).
//! Definitions live in `service::disclosure::proof` and `service::disclosure::participation`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::Input;
use crate::request::disclosure::{CLASSIFY, DEMAND, DemandPage, party};
use crate::service::{App, disclosure::participation, disclosure::proof};

pub async fn demand(app: &App, ctx: &Ctx) -> Result<Reply> {
    let page = DemandPage::read(&Input::query(&DEMAND, &ctx.query))?;
    Ok(Reply::ok(proof::demand(app, page).await?))
}

pub async fn classify(app: &App, ctx: &Ctx) -> Result<Reply> {
    let handle = ctx.param();
    Ok(Reply::ok(
        proof::classify(app, handle, read_body(ctx, &CLASSIFY, party)?).await?,
    ))
}

pub async fn participation(app: &App) -> Result<Reply> {
    Ok(Reply::ok(participation::participation(app).await?))
}
