//! OAuth for hosted MCP clients: the metadata documents, dynamic registration, the token and
//! revocation endpoints (answers in OAuth's own shapes), and the operator's view of clients and
//! grants. The authorization page is in `pages::authorize`.

use serde_json::{Value, json};

use super::read_body;
use crate::error::{Error, OAuthCode, Result};
use crate::http::request::{Caller, Ctx};
use crate::http::response::Reply;
use crate::http::response::to_json as json;
use crate::request::Input;
use crate::request::agents::{
    GrantList, LIST_OAUTH_CLIENTS, LIST_OAUTH_GRANTS, REVOKE_OAUTH_CLIENT, list_page,
    oauth_client_id,
};
use crate::request::oauth::{AuthMethod, ClientMetadata, RevokeRequest, TokenRequest};
use crate::service::App;
use crate::service::identity::oauth::{self, clients, flow};

/// A metadata document (its handler answers without a `Result`; serializing never fails).
fn answer(document: &impl serde::Serialize) -> Reply {
    Reply::ok(serde_json::to_value(document).unwrap_or_default())
}

/// Token answers and errors must not be cached (RFC 6749 §5.1).
fn no_store(reply: Reply) -> Reply {
    reply.with_headers(vec![
        ("cache-control", "no-store".into()),
        ("pragma", "no-cache".into()),
    ])
}

/// `GET /.well-known/oauth-protected-resource[/api/mcp | /mcp]` (RFC 9728): the metadata of the
/// resource whose path follows the well-known prefix.
pub fn protected_resource(app: &App, ctx: &Ctx) -> Reply {
    let path = ctx
        .path
        .strip_prefix("/.well-known/oauth-protected-resource")
        .unwrap_or_default();
    answer(&oauth::protected_resource_metadata(app, &app.url(path)))
}

/// `GET /.well-known/oauth-authorization-server` (RFC 8414).
pub fn authorization_server(app: &App) -> Reply {
    answer(&oauth::authorization_server_metadata(app))
}

/// `POST /oauth/register` (RFC 7591): open registration of a client.
pub async fn register(app: &App, ctx: &Ctx) -> Result<Reply> {
    let text = ctx
        .body_text()
        .map_err(|_| Error::oauth(OAuthCode::InvalidClientMetadata, "the body is not UTF-8"))?;
    let doc: Value = crate::crypto::jcs::parse_request(text).map_err(|_| {
        Error::oauth(
            OAuthCode::InvalidClientMetadata,
            "the body must be one JSON object of client metadata, each member once",
        )
    })?;
    // RFC 7591 §3.2.1: absent, the method is `client_secret_basic`.
    let metadata = ClientMetadata::read(&doc, AuthMethod::ClientSecretBasic)?;
    let ip = ctx.client_ip.to_string();
    let registered = clients::register(app, metadata, &ip).await?;
    Ok(no_store(Reply::Json(201, json(&registered)?)))
}

/// The form of a token or revocation request.
///
/// # Errors
/// `invalid_request` for a body that is not a form.
fn form(ctx: &Ctx) -> Result<Vec<(String, String)>> {
    if !ctx.form_content_type() {
        return Err(Error::oauth(
            OAuthCode::InvalidRequest,
            "send the parameters as `Content-Type: application/x-www-form-urlencoded`",
        ));
    }
    Ok(ctx.form())
}

/// `POST /oauth/token`.
pub async fn token(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = TokenRequest::read(&form(ctx)?, ctx.basic_auth())?;
    let tokens = flow::token(app, request, &ctx.client_ip.to_string()).await?;
    Ok(no_store(Reply::ok(json(&tokens)?)))
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was live.
pub async fn revoke(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = RevokeRequest::read(&form(ctx)?, ctx.basic_auth())?;
    flow::revoke(app, request, &ctx.client_ip.to_string()).await?;
    Ok(no_store(Reply::ok(json!({}))))
}

/// `GET /api/operator/oauth/clients`.
pub async fn list_clients(app: &App, ctx: &Ctx) -> Result<Reply> {
    let page = list_page(&Input::query(&LIST_OAUTH_CLIENTS, &ctx.query))?;
    Ok(Reply::ok(json(
        &clients::list_clients(app, page.limit, page.offset).await?,
    )?))
}

/// `POST /api/operator/oauth/clients/revoke`.
pub async fn revoke_client(app: &App, ctx: &Ctx) -> Result<Reply> {
    let client_id = read_body(ctx, &REVOKE_OAUTH_CLIENT, oauth_client_id)?;
    Ok(Reply::ok(json(
        &clients::revoke_client(app, client_id).await?,
    )?))
}

/// `GET /api/operator/oauth/grants?active=true` (every agent's) and
/// `GET /api/agents/me/oauth/grants` (the caller's own).
pub async fn list_grants(app: &App, ctx: &Ctx) -> Result<Reply> {
    let agent = match &ctx.caller {
        Caller::Agent(agent) => Some(agent.id.clone()),
        _ => None,
    };
    let list = GrantList::read(&Input::query(&LIST_OAUTH_GRANTS, &ctx.query))?;
    Ok(Reply::ok(json(
        &clients::list_grants(app, agent, list.active, list.page).await?,
    )?))
}

/// `POST /api/operator/oauth/grants/{id}/revoke` and `POST /api/agents/me/oauth/grants/{id}/revoke`.
pub async fn revoke_grant(app: &App, ctx: &Ctx) -> Result<Reply> {
    let by = match &ctx.caller {
        Caller::Agent(agent) => clients::Revoker::Agent(agent.id.clone()),
        _ => clients::Revoker::Operator,
    };
    Ok(Reply::ok(json(
        &clients::revoke_grant(app, ctx.param().to_owned(), by).await?,
    )?))
}
