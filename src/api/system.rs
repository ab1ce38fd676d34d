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

pub fn llms_txt() -> Reply {
    Reply::Bytes(
        "text/plain; charset=utf-8",
        Bytes::from(assets::bytes("llms.txt").into_owned()),
    )
}

pub fn openapi() -> Reply {
    Reply::Bytes(
        "application/json",
        Bytes::from(assets::bytes("openapi.json").into_owned()),
    )
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
