//! x402 Bazaar discovery (`/discovery/resources`, `/discovery/search`) and the AI catalog
//! (`/.well-known/ai-catalog.json`, `/.well-known/ard.json`): outside standards' shapes, unsigned.

use serde_json::json;

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::commerce::{ListResources, SearchResources};
use crate::service::{App, commerce::discovery, identity::ai_catalog};

/// A malformed discovery parameter in x402's words: 400 `{"error": "<message>"}` (x402's
/// discovery conformance reads a string `error`, unlike bourse's error object).
fn x402_error(error: Error) -> Result<Reply> {
    match error {
        Error::InvalidArgument(message) => Ok(Reply::serialized(400, &json!({ "error": message }))),
        other => Err(other),
    }
}

pub async fn resources(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = match ListResources::read(&ctx.query) {
        Ok(request) => request,
        Err(error) => return x402_error(error),
    };
    Ok(Reply::serialized(
        200,
        &discovery::resources(app, request).await?,
    ))
}

pub async fn search(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = match SearchResources::read(&ctx.query) {
        Ok(request) => request,
        Err(error) => return x402_error(error),
    };
    Ok(Reply::serialized(
        200,
        &discovery::search(app, request).await?,
    ))
}

pub async fn ai_catalog(app: &App) -> Result<Reply> {
    Ok(Reply::serialized(200, &ai_catalog::catalog(app).await?))
}
