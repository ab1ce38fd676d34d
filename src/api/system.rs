//! Health, embedded documents, signing key and receipt verification.

use hyper::body::Bytes;
use serde_json::json;

use crate::assets;
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, trust::receipts};

pub fn healthz() -> Reply {
    Reply::ok(json!({ "status": "ok" }))
}

pub async fn readyz(app: &App) -> Result<Reply> {
    match app.store.check_ready().await {
        Ok(()) => Ok(Reply::ok(json!({ "status": "ready" }))),
        Err(error) => {
            tracing::warn!(%error, "not ready");
            Err(Error::Unavailable {
                code: "NOT_READY",
                message: "the database is not writable or not migrated".into(),
            })
        }
    }
}

/// The address the embedded documents are written for (`bourse serve`'s default).
const DOCUMENTED_BASE: &str = "http://127.0.0.1:8080";

/// `/llms.txt`, with every URL of the documented default address naming this instance.
pub fn llms_txt(app: &App) -> Reply {
    let text = app.documents.llms_txt.get_or_init(|| {
        String::from_utf8_lossy(&assets::bytes("llms.txt"))
            .replace(DOCUMENTED_BASE, &app.public_url)
            .into_bytes()
            .into()
    });
    Reply::Bytes("text/plain; charset=utf-8", Bytes::from_owner(text.clone()))
}

/// `/openapi.json`, its `servers` naming this instance (examples keep the documented address).
pub fn openapi(app: &App) -> Reply {
    let text = app.documents.openapi.get_or_init(|| {
        let documented = format!("\"servers\": [\n    {{\n      \"url\": \"{DOCUMENTED_BASE}\"");
        let served = format!(
            "\"servers\": [\n    {{\n      \"url\": \"{}\"",
            app.public_url
        );
        String::from_utf8_lossy(&assets::bytes("openapi.json"))
            .replacen(&documented, &served, 1)
            .into_bytes()
            .into()
    });
    Reply::Bytes("application/json", Bytes::from_owner(text.clone()))
}

pub fn signing_key(app: &App) -> Reply {
    Reply::ok(receipts::signing_key(app))
}

pub fn verify_receipt(app: &App, ctx: &Ctx) -> Result<Reply> {
    let verdict = receipts::verify_request(ctx.body_text()?, receipts::resolver(&app.keyring))?;
    Ok(Reply::ok(
        serde_json::to_value(verdict).expect("verdict serializes"),
    ))
}
