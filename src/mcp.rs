//! The MCP endpoint (being written).

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::App;

pub async fn post(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(Error::NotFound("MCP is not served yet".into()))
}

pub fn get(_app: &App, _ctx: &Ctx) -> Result<Reply> {
    Err(Error::NotFound("MCP is not served yet".into()))
}

pub fn delete() -> Result<Reply> {
    Err(Error::MethodNotAllowed {
        allow: vec!["GET", "POST"],
    })
}
