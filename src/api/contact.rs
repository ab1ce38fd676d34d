//! Inquiries, relay rails and service requests (being written).

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::App;

fn not_yet() -> Error {
    Error::NotFound("not served yet".into())
}

pub async fn create_inquiry(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn thread(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn follow_up(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn list(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn reply(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn update(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn create_rail(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}

pub async fn service_request(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(not_yet())
}
