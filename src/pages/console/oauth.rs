//! The console's OAuth section (`GET /console/oauth`): hosted MCP clients and the grants agents
//! gave them, with Revoke forms (`POST /console/oauth/clients/revoke`,
//! `POST /console/oauth/grants/{id}/revoke`) that call the same service functions as
//! `POST /api/operator/oauth/clients/revoke` and `POST /api/operator/oauth/grants/{id}/revoke`.

use super::{field, form, html, layout, see_other};
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::escape;
use crate::request::Page;
use crate::service::App;
use crate::service::identity::console::Session;
use crate::service::identity::oauth::clients::{self, Revoker};

/// The most clients or grants the page lists.
const LIMIT: i64 = 100;

/// `GET /console/oauth`.
///
/// # Errors
/// Database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let listed = clients::list_clients(app, LIMIT, 0).await?;
    let grants = clients::list_grants(
        app,
        None,
        false,
        Page {
            limit: LIMIT,
            offset: 0,
        },
    )
    .await?;
    let done = match ctx.query("done") {
        Some("client") => {
            "<p id=\"result\" class=\"notice\" role=\"status\">Client revoked: its grants and tokens no longer work.</p>"
        }
        Some("grant") => {
            "<p id=\"result\" class=\"notice\" role=\"status\">Grant revoked: its tokens no longer work.</p>"
        }
        _ => "",
    };
    let client_rows: String = listed
        .clients
        .iter()
        .map(|c| {
            let action = if c.revoked_at.is_some() {
                format!("revoked {}", escape(c.revoked_at.as_deref().unwrap_or("")))
            } else {
                form(
                    session,
                    "/console/oauth/clients/revoke",
                    &format!(
                        "<input type=\"hidden\" name=\"client_id\" value=\"{}\">",
                        escape(&c.client_id)
                    ),
                    &format!("revoke-client-{}", escape(&c.client_id)),
                    "Revoke",
                    "danger",
                )
            };
            format!(
                "<tr><td>{name}</td><td><code>{id}</code></td><td>{kind}</td><td>{created}</td><td>{action}</td></tr>",
                name = escape(&c.name),
                id = escape(&c.client_id),
                kind = escape(&c.kind),
                created = escape(&c.created_at),
            )
        })
        .collect();
    let grant_rows: String = grants
        .grants
        .iter()
        .map(|g| {
            let action = match (&g.revoked_at, &g.revoked_by) {
                (Some(at), by) => format!(
                    "revoked {} ({})",
                    escape(at),
                    escape(by.as_deref().unwrap_or("—"))
                ),
                (None, _) => form(
                    session,
                    &format!("/console/oauth/grants/{}/revoke", escape(&g.id)),
                    "",
                    &format!("revoke-grant-{}", escape(&g.id)),
                    "Revoke",
                    "danger",
                ),
            };
            format!(
                "<tr><td>{client}</td><td><a href=\"/console/agents/{agent}\">{agent}</a></td><td>{scopes}</td><td>{created}</td><td>{action}</td></tr>",
                client = escape(&g.client_name),
                agent = escape(&g.agent),
                scopes = escape(&g.scopes.join(" ")),
                created = escape(&g.created_at),
            )
        })
        .collect();
    let body = format!(
        "<h1>OAuth clients and grants</h1>{done}\
         <h2>Clients ({n_clients})</h2><div class=\"scroll\"><table id=\"clients\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Client id</th><th scope=\"col\">Kind</th><th scope=\"col\">Registered</th><th scope=\"col\">Action</th></tr></thead><tbody>{client_rows}</tbody></table></div>\
         <h2>Grants ({n_grants})</h2><div class=\"scroll\"><table id=\"grants\"><thead><tr><th scope=\"col\">Client</th><th scope=\"col\">Agent</th><th scope=\"col\">Scopes</th><th scope=\"col\">Granted</th><th scope=\"col\">Action</th></tr></thead><tbody>{grant_rows}</tbody></table></div>",
        n_clients = listed.total,
        n_grants = grants.total,
    );
    Ok(html(
        200,
        layout(app, "OAuth", Some(session), "/console/oauth", &body),
    ))
}

/// `POST /console/oauth/clients/revoke` {client_id}.
///
/// # Errors
/// `INVALID_ARGUMENT` without a client id; `NOT_FOUND`; database failure.
pub async fn revoke_client(app: &App, ctx: &Ctx) -> Result<Reply> {
    let client_id = field(ctx, "client_id")
        .ok_or_else(|| Error::InvalidArgument("client_id: which client to revoke".into()))?;
    clients::revoke_client(app, client_id.clone()).await?;
    tracing::info!(target: "console", client_id = %client_id, "operator revoked an OAuth client");
    Ok(see_other("/console/oauth?done=client"))
}

/// `POST /console/oauth/grants/{id}/revoke`.
///
/// # Errors
/// `NOT_FOUND`; database failure.
pub async fn revoke_grant(app: &App, ctx: &Ctx) -> Result<Reply> {
    let id = ctx.param().to_owned();
    clients::revoke_grant(app, id.clone(), Revoker::Operator).await?;
    tracing::info!(target: "console", grant = %id, "operator revoked an OAuth grant");
    Ok(see_other("/console/oauth?done=grant"))
}
