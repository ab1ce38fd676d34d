//! `/api/meta`, `/api/fees` and fee announcements (the `/disclosures` page is in `crate::pages`).

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::disclosure::{ANNOUNCE, Announce};
use crate::service::{App, disclosure::meta as service};

pub fn meta(app: &App) -> Result<Reply> {
    Ok(Reply::ok(json(&service::meta(app))?))
}

pub async fn fees(app: &App) -> Result<Reply> {
    Ok(Reply::ok(json(&service::fees(app).await?)?))
}

pub async fn announce(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = read_body(ctx, &ANNOUNCE, Announce::read)?;
    Ok(Reply::Json(
        201,
        json(&service::announce_now(app, request).await?)?,
    ))
}
