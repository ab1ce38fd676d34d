//! `/log/…`: the transparency log's checkpoint, tiles and inclusion proofs, as static
//! resources (c2sp.org/tlog-tiles): text and bytes, never signed JSON.

use hyper::body::Bytes;

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::{RawReply, Reply};
use crate::service::App;
use crate::service::trust::log;

fn raw(content_type: &'static str, body: Vec<u8>, cache: &str) -> Reply {
    Reply::Raw(RawReply {
        status: 200,
        content_type,
        body: Bytes::from(body),
        headers: vec![
            ("cache-control", cache.to_owned()),
            ("access-control-allow-origin", "*".to_owned()),
        ],
    })
}

/// `GET /log/checkpoint`: the newest signed checkpoint (cached for at most a second).
pub async fn checkpoint(app: &App) -> Result<Reply> {
    let note = log::checkpoint(app).await?;
    Ok(raw(
        "text/plain; charset=utf-8",
        note.into_bytes(),
        "public, max-age=1",
    ))
}

/// `GET /log/tile/{path}`: a hash tile or entry bundle; full tiles never change.
pub async fn tile(app: &App, ctx: &Ctx) -> Result<Reply> {
    let tile = log::tile(app, ctx.param()).await?;
    let cache = if tile.full {
        "public, max-age=31536000, immutable"
    } else {
        "public, max-age=1"
    };
    Ok(raw("application/octet-stream", tile.bytes, cache))
}

/// `GET /log/proof/{index}`: the c2sp.org/tlog-proof of one entry (404 with `Retry-After`
/// until a checkpoint covers it).
pub async fn proof(app: &App, ctx: &Ctx) -> Result<Reply> {
    let index: u64 = ctx
        .param()
        .parse()
        .map_err(|_| Error::NotFound("not a log index".into()))?;
    let text = log::proof(app, index).await?;
    Ok(raw(
        "text/plain; charset=utf-8",
        text.into_bytes(),
        "no-cache",
    ))
}
