//! `/api/inquiries/*`, `/api/operator/inquiries/*`, `/api/rails`, `/api/services/request`.
//! The rules live in `service::contact::threads`.

use super::read_body;
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::Input;
use crate::request::contact::{
    CONTACT, CREATE_RAIL, InquiryKind, InquiryList, LIST_INQUIRIES, NewInquiry, POST_MESSAGE,
    PostMessage, SERVICE_REQUEST, SET_STATUS, ServiceRequest, root_inquiry, status,
};
use crate::service::App;
use crate::service::contact::threads::{self as contact, Poster};

pub async fn create_inquiry(app: &App, ctx: &Ctx) -> Result<Reply> {
    let ip = ctx.client_ip.to_string();
    // Malformed JSON is refused before the inquiry limit counts the attempt; any other fault
    // counts (the documented anti-abuse rule), so the service gets the parse outcome.
    let args = ctx.json_args()?;
    let request =
        Input::body(&CONTACT, args).and_then(|i| NewInquiry::read(&i, InquiryKind::Contact));
    Ok(Reply::Json(
        201,
        json(&contact::create(app, &ip, request).await?)?,
    ))
}

pub async fn thread(app: &App, ctx: &Ctx) -> Result<Reply> {
    Ok(Reply::ok(json(&contact::thread(app, ctx.param()).await?)?))
}

pub async fn follow_up(app: &App, ctx: &Ctx) -> Result<Reply> {
    let poster = Poster::Inquirer {
        token: ctx.bearer(),
    };
    let posted = contact::post(app, ctx.param(), poster, post_message(ctx)?).await?;
    Ok(Reply::Json(201, json(&posted)?))
}

pub async fn list(app: &App, ctx: &Ctx) -> Result<Reply> {
    let list = InquiryList::read(&Input::query(&LIST_INQUIRIES, &ctx.query))?;
    Ok(Reply::ok(json(&contact::list(app, list).await?)?))
}

pub async fn reply(app: &App, ctx: &Ctx) -> Result<Reply> {
    let posted = contact::post(app, ctx.param(), Poster::Team, post_message(ctx)?).await?;
    Ok(Reply::Json(201, json(&posted)?))
}

pub async fn update(app: &App, ctx: &Ctx) -> Result<Reply> {
    let status = read_body(ctx, &SET_STATUS, status)?;
    Ok(Reply::ok(json(
        &contact::set_status(app, ctx.param(), status).await?,
    )?))
}

pub async fn create_rail(app: &App, ctx: &Ctx) -> Result<Reply> {
    let root = read_body(ctx, &CREATE_RAIL, root_inquiry)?;
    Ok(Reply::Json(
        201,
        json(&contact::create_rail(app, root).await?)?,
    ))
}

pub async fn service_request(app: &App, ctx: &Ctx) -> Result<Reply> {
    let ip = ctx.client_ip.to_string();
    let request = service_request_body(ctx)?;
    Ok(Reply::Json(
        201,
        json(&contact::service_request(app, &ip, request).await?)?,
    ))
}

/// A thread message: malformed JSON is refused first; any other fault is judged by the service
/// after a relay token's scope.
fn post_message(ctx: &Ctx) -> Result<Result<PostMessage>> {
    let args = ctx.json_args()?;
    Ok(Input::body(&POST_MESSAGE, args).and_then(|i| PostMessage::read(&i)))
}

/// A service request: malformed JSON is refused before the inquiry limit counts the attempt.
fn service_request_body(ctx: &Ctx) -> Result<Result<ServiceRequest>> {
    let args = ctx.json_args()?;
    Ok(Input::body(&SERVICE_REQUEST, args).and_then(|i| ServiceRequest::read(&i)))
}
