//! `/api/operator/*`: operator-only settings, authenticated with `DATA/operator.key`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::agents::{BIND_CHAIR, chair_handle};
use crate::request::trust::{UPDATE_PROVENANCE, UpdateProvenance};
use crate::service::{App, commerce::payments, identity::agents, trust::provenance};

pub fn get_provenance(app: &App) -> Result<Reply> {
    Reply::answer(200, &provenance::current(app))
}

pub async fn update_provenance(app: &App, ctx: &Ctx) -> Result<Reply> {
    Reply::answer(
        200,
        &provenance::update(
            app,
            read_body(ctx, &UPDATE_PROVENANCE, UpdateProvenance::read)?,
        )
        .await?,
    )
}

pub async fn bind_chair(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(crate::http::response::to_json(
        &agents::bind_chair_request(app, read_body(ctx, &BIND_CHAIR, chair_handle)?).await?,
    )?))
}

pub async fn unbind_chair(app: &App) -> Result<Reply> {
    Ok(Reply::ok(crate::http::response::to_json(
        &agents::unbind_chair(app).await?,
    )?))
}

pub async fn spending(app: &App) -> Result<Reply> {
    Ok(Reply::ok(crate::http::response::to_json(
        &crate::service::spending::operator_view(app).await?,
    )?))
}

pub async fn payments(app: &App) -> Result<Reply> {
    Ok(Reply::ok(crate::http::response::to_json(
        &payments::operator_view(app).await?,
    )?))
}
