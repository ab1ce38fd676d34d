//! `GET /api/proof/demand`, `GET /api/proof/participation` (public) and
//! `PUT /api/operator/parties/{handle}` (operator).
//! Definitions live in `service::disclosure::proof` and `service::disclosure::participation`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::Input;
use crate::request::disclosure::{CLASSIFY, DEMAND, DemandPage, party};
use crate::service::{App, disclosure::participation, disclosure::proof};

pub async fn demand(app: &App, ctx: &Ctx) -> Result<Reply> {
    let page = DemandPage::read(&Input::query(&DEMAND, &ctx.query))?;
    Ok(Reply::ok(json(&proof::demand(app, page).await?)?))
}

pub async fn classify(app: &App, ctx: &Ctx) -> Result<Reply> {
    let handle = ctx.param();
    let party = read_body(ctx, &CLASSIFY, party)?;
    Ok(Reply::ok(json(
        &proof::classify(app, handle, party).await?,
    )?))
}

pub async fn participation(app: &App) -> Result<Reply> {
    Ok(Reply::ok(json(&participation::participation(app).await?)?))
}
