//! `POST /api/ingress`, `GET /api/ingress`, `GET /api/ingress/keys`. The rules live in
//! `service::identity::ingress`.

use hyper::body::Bytes;

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::to_json as json;
use crate::http::response::{RawReply, Reply};
use crate::request::agents::{INGRESS, Ingress};
use crate::service::{App, identity::ingress};

/// The signed answer, sent as stored so that a replay is byte-identical.
pub async fn decide(app: &App, ctx: &Ctx) -> Result<Reply> {
    let ip = ctx.client_ip.to_string();
    let answer = ingress::decide(app, &ip, read_body(ctx, &INGRESS, Ingress::read)?).await?;
    Ok(Reply::Raw(RawReply {
        status: 200,
        content_type: "application/json",
        body: Bytes::from(answer.body),
        headers: vec![(
            "idempotent-replayed",
            if answer.replayed { "true" } else { "false" }.to_owned(),
        )],
    }))
}

pub async fn describe(app: &App) -> Result<Reply> {
    Ok(Reply::ok(json(&ingress::describe(app).await?)?))
}

pub fn keys(app: &App) -> Result<Reply> {
    Ok(Reply::ok(json(&ingress::keys(app))?))
}
