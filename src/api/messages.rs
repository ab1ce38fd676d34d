//! `/api/agents/{handle}/messages`, `/api/agents/me/inbox`.

use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::Input;
use crate::request::messaging::{self, InboxCall, SendMessage};
use crate::service::App;
use crate::service::identity::agents::Client;
use crate::service::messaging::messages;

pub async fn send(app: &App, ctx: &Ctx) -> Result<Reply> {
    let sender = ctx.agent()?;
    let handle = ctx.param();
    let input = Input::body(&messaging::SEND_MESSAGE, ctx.json_args()?)?;
    let request = SendMessage::read(&input, Some(handle))?;
    let ip = ctx.client_ip.to_string();
    let sent = messages::send(app, sender, request, &Client { ip: &ip }).await?;
    // Not a signed answer: written from the typed message, the hottest write's reply.
    Ok(Reply::serialized(
        if sent.created { 201 } else { 200 },
        &sent.message,
    ))
}

pub async fn inbox(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = ctx.agent()?;
    let InboxCall::Read(request) =
        InboxCall::read(&Input::query(&messaging::READ_INBOX, &ctx.query))?
    else {
        return Err(Error::Internal(
            "the REST inbox offers no other action".into(),
        ));
    };
    let ip = ctx.client_ip.to_string();
    Reply::answer(
        200,
        &messages::inbox(app, agent, request, &Client { ip: &ip }).await?,
    )
}
