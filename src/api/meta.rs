//! `/api/meta`, `/api/fees` and fee announcements (the `/disclosures` page is in `crate::pages`).

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::disclosure::{ANNOUNCE, Announce};
use crate::service::{App, disclosure::meta as service};

pub fn meta(app: &App) -> Result<Reply> {
    Ok(Reply::ok(service::meta(app)))
}

pub async fn fees(app: &App) -> Result<Reply> {
    Ok(Reply::ok(service::fees(app).await?))
}

pub async fn announce(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::Json(
        201,
        service::announce_now(app, read_body(ctx, &ANNOUNCE, Announce::read)?).await?,
    ))
}
