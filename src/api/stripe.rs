//! The Stripe rail's two HTTP faces: the webhook Stripe posts events to, and the page Stripe
//! sends a seller back to after onboarding (which answers with a fresh onboarding link until
//! payouts are connected).

use hyper::body::Bytes;

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::{RawReply, Reply};
use crate::service::{App, commerce::rails::stripe};

pub async fn webhook(app: &App, ctx: &Ctx) -> Result<Reply> {
    let signature = ctx
        .headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    Ok(Reply::ok(stripe::webhook(app, signature, &ctx.body).await?))
}

pub async fn connect_return(app: &App, ctx: &Ctx) -> Result<Reply> {
    let id = ctx.params.first().map_or("", String::as_str);
    Ok(match stripe::connect_return(app, id).await? {
        Some(link) => Reply::Raw(RawReply {
            status: 303,
            content_type: "text/plain; charset=utf-8",
            body: Bytes::from_static(b"See Other"),
            headers: vec![("location", link)],
        }),
        None => Reply::Bytes(
            "text/html; charset=utf-8",
            Bytes::from_static(
                b"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Payouts connected</title></head>\
                  <body><h1>Payouts connected</h1><p id=\"status\">complete</p>\
                  <p>Stripe reports payouts enabled for this seller: paid listings can be sold.</p></body></html>",
            ),
        ),
    })
}
