//! The demand ledger and party classification (being written).

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::App;

fn not_yet() -> Error {
    Error::NotFound("not served yet".into())
}

pub async fn demand(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn classify(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}
