//! Fee schedule, meta and the disclosures page (being written).

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::App;

fn not_yet() -> Error {
    Error::NotFound("not served yet".into())
}

pub fn meta(_app: &App) -> Result<Reply> {
    Err(not_yet())
}

pub async fn fees(_app: &App) -> Result<Reply> {
    Err(not_yet())
}

pub async fn announce(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn disclosures(_app: &App) -> Result<Reply> {
    Err(not_yet())
}
