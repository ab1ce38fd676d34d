//! OAuth clients: dynamic registration (RFC 7591), Client ID Metadata Documents (an https
//! `client_id` whose metadata bourse fetches through the SSRF-safe outbound client), redirect URI
//! rules, and the operator's list and revocation of clients and grants.

use jiff::SignedDuration;
use serde::Serialize;
use serde_json::Value;

use super::{GRANT_TYPES, Scopes, mint};
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, OAuthCode, Result};
use crate::request::Page;
use crate::request::oauth::{
    AuthMethod, ClientMetadata, MAX_URI_LEN, UriParts, check_redirect_uri, has_control,
    is_loopback_host, split_uri,
};
use crate::service::identity::names;
use crate::service::ratelimit::{
    ALL_REQUESTERS, CLIENT_DOCUMENT_REQUESTERS, CLIENT_DOCUMENTS, CLIENT_DOCUMENTS_IN_ALL,
    CLIENT_REGISTRATION,
};
use crate::service::{App, constant_time_eq, hash_secret};
use crate::store::oauth::{self as oauth_store, ClientRow, GrantRow};

/// Registered client ids start with this; anything else is a metadata document URL.
const CLIENT_PREFIX: &str = "bmc_";
/// Client secrets.
const SECRET_PREFIX: &str = "bmcs_";
/// A metadata document is fetched again when the stored copy is older than this.
const DOCUMENT_TTL: SignedDuration = SignedDuration::from_hours(1);
/// The largest metadata document read (the draft asks servers to bound it; 5 KB is its figure).
const DOCUMENT_MAX_BYTES: usize = 5 * 1024;

/// A client's name as people read it on the authorization page (`Unnamed client` when its
/// metadata gives none): nothing invisible or reordering.
///
/// # Errors
/// `invalid_client_metadata`.
fn client_name(metadata: &ClientMetadata) -> Result<String> {
    let Some(name) = &metadata.name else {
        return Ok("Unnamed client".to_owned());
    };
    names::display_name(name)
        .map(|name| name.text)
        .map_err(|_| {
            Error::oauth(
                OAuthCode::InvalidClientMetadata,
                "`client_name` must not contain invisible, bidirectional-control or private-use characters",
            )
        })
}

/// The scope names of the metadata's `scope` that this server knows (others are ignored, as at
/// authorization); `None` when none is left.
fn known_scope(metadata: &ClientMetadata) -> Option<String> {
    metadata
        .scope
        .as_deref()
        .map(|scope| Scopes::known_in(scope).to_string())
        .filter(|scope| !scope.is_empty())
}
/// The host a URI sends a person to, for display (`None` for a private-use scheme).
pub fn host_of(uri: &str) -> Option<&str> {
    split_uri(uri)
        .map(|parts| parts.host)
        .filter(|host| !host.is_empty())
}

/// Whether `presented` is one of the client's redirect URIs: exactly, or, for an http loopback
/// URI, exactly but for the port (a native client listens on whatever port it was given; RFC
/// 8252 §7.3).
pub fn redirect_allowed(client: &ClientRow, presented: &str) -> bool {
    // What was presented must itself be a redirect URI one may register.
    if check_redirect_uri(presented).is_err() {
        return false;
    }
    // `http://127.0.0.1` and `http://127.0.0.1/` name the same place.
    let path = |rest: &str| -> String {
        if rest.is_empty() || rest.starts_with('?') {
            format!("/{rest}")
        } else {
            rest.to_owned()
        }
    };
    client.redirect_uris.iter().any(|registered| {
        if registered == presented {
            return true;
        }
        match (split_uri(registered), split_uri(presented)) {
            (Some(one), Some(two)) => {
                one.scheme == "http"
                    && two.scheme == "http"
                    && is_loopback_host(one.host)
                    && one.host == two.host
                    && path(one.rest) == path(two.rest)
            }
            _ => false,
        }
    })
}

/// `POST /oauth/register` (RFC 7591): a new client. Confidential clients get a secret, shown once.
///
/// # Errors
/// `invalid_redirect_uri`, `invalid_client_metadata`; `RATE_LIMITED` past 20 per hour per IP.
pub async fn register(app: &App, metadata: ClientMetadata, ip: &str) -> Result<Registration> {
    let name = client_name(&metadata)?;
    let scope = known_scope(&metadata);
    app.limiter.check(CLIENT_REGISTRATION, ip)?;
    let client_id = format!("{CLIENT_PREFIX}{}", b64url(&random_bytes::<16>()));
    let secret = (metadata.auth_method != AuthMethod::None).then(|| mint(SECRET_PREFIX));
    let now = app.clock.now();
    let row = ClientRow {
        client_id: client_id.clone(),
        kind: "registered".into(),
        name: name.clone(),
        client_uri: metadata.client_uri.clone(),
        redirect_uris: metadata.redirect_uris.clone(),
        auth_method: metadata.auth_method.name().into(),
        secret_hash: secret.as_ref().map(|(_, hash)| hash.clone()),
        created_at: crate::clock::rfc3339(now),
        fetched_at: None,
        revoked_at: None,
    };
    app.store
        .write(move |tx| oauth_store::save_client(tx, &row))
        .await?;
    let secret = secret.map(|(secret, _)| secret);
    Ok(Registration {
        client_id,
        client_id_issued_at: now.as_second(),
        client_name: name,
        redirect_uris: metadata.redirect_uris,
        token_endpoint_auth_method: metadata.auth_method,
        grant_types: GRANT_TYPES,
        response_types: ["code"],
        // A secret never expires (RFC 7591 §3.2.1: 0).
        client_secret_expires_at: secret.as_ref().map(|_| 0),
        client_secret: secret,
        client_uri: metadata.client_uri,
        scope,
    })
}

/// A registered client (RFC 7591 §3.2.1): its secret is shown once.
#[derive(Clone, Debug, Serialize)]
pub struct Registration {
    pub client_id: String,
    pub client_id_issued_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: AuthMethod,
    pub grant_types: [&'static str; 2],
    pub response_types: [&'static str; 1],
    /// A confidential client's secret and its expiry (absent for a public client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    /// The known scope names of the metadata's `scope` (absent when none is left).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// Whether `client_id` names a metadata document (an https URL; http too where outbound
/// loopback is allowed, for local sandboxes and tests).
fn is_document_url(app: &App, client_id: &str) -> bool {
    client_id.starts_with("https://")
        || (app.outbound.policy().allow_loopback && client_id.starts_with("http://"))
}

/// Whether a metadata document URL has the shape the draft requires: a host, a path other than
/// `/`, no fragment, no dot segments, no userinfo.
fn is_valid_document_url(url: &str) -> bool {
    let Some(UriParts { host, rest, .. }) = split_uri(url) else {
        return false;
    };
    let path = rest.split('?').next().unwrap_or_default();
    !host.is_empty()
        && path.len() > 1
        && !url.contains('#')
        && !path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
}

/// The client `client_id` names, fetching its metadata document when it is a URL not seen in the
/// last hour. A revoked client is refused. A fetch is counted against the `requester` (the
/// client address whose request causes it), all requesters together and the document's host.
///
/// # Errors
/// `invalid_client` with the reason (unknown, revoked, document unusable).
pub async fn resolve(app: &App, client_id: &str, requester: &str) -> Result<ClientRow> {
    let invalid = |message: String| Error::oauth(OAuthCode::InvalidClient, message);
    if client_id.is_empty() || client_id.len() > MAX_URI_LEN || has_control(client_id) {
        return Err(invalid("`client_id` is missing or malformed".into()));
    }
    let id = client_id.to_owned();
    let stored = app
        .store
        .read(move |conn| oauth_store::client(conn, &id))
        .await?;
    if let Some(client) = &stored
        && client.revoked_at.is_some()
    {
        return Err(invalid(format!(
            "client {client_id:?} was revoked by the operator"
        )));
    }
    if !is_document_url(app, client_id) {
        return stored.ok_or_else(|| {
            invalid(format!(
                "unknown client {client_id:?}: register at {} or use a client ID metadata document URL",
                app.url("/oauth/register")
            ))
        });
    }
    if !is_valid_document_url(client_id) {
        return Err(invalid(format!(
            "{client_id:?} is not a client metadata document URL: it needs a host and a path, without a fragment or dot segments"
        )));
    }
    let fresh_after = crate::clock::rfc3339_after(app.clock.now(), -DOCUMENT_TTL);
    if let Some(client) = stored
        && client
            .fetched_at
            .as_deref()
            .is_some_and(|at| at > fresh_after.as_str())
    {
        return Ok(client);
    }
    let host = split_uri(client_id).map_or("", |parts| parts.host);
    app.limiter.check(CLIENT_DOCUMENT_REQUESTERS, requester)?;
    app.limiter.check(CLIENT_DOCUMENTS_IN_ALL, ALL_REQUESTERS)?;
    app.limiter.check(CLIENT_DOCUMENTS, host)?;
    let (metadata, name) = fetch_document(app, client_id).await.map_err(invalid)?;
    let now = app.now();
    let row = ClientRow {
        client_id: client_id.to_owned(),
        kind: "metadata".into(),
        name,
        client_uri: metadata.client_uri,
        redirect_uris: metadata.redirect_uris,
        auth_method: AuthMethod::None.name().into(),
        secret_hash: None,
        created_at: now.clone(),
        fetched_at: Some(now),
        revoked_at: None,
    };
    let saved = row.clone();
    app.store
        .write(move |tx| oauth_store::save_client(tx, &saved))
        .await?;
    Ok(row)
}

/// Fetches and checks a Client ID Metadata Document: JSON naming itself as `client_id`, a public
/// client (no secret), valid redirect URIs.
async fn fetch_document(
    app: &App,
    url: &str,
) -> std::result::Result<(ClientMetadata, String), String> {
    let client = app.outbound_verify.clone();
    let target = url.to_owned();
    let response =
        tokio::task::spawn_blocking(move || client.get_json(&target, DOCUMENT_MAX_BYTES))
            .await
            .map_err(|e| format!("fetching the client metadata document failed: {e}"))?
            .map_err(|e| {
                // The reason (a refused address, a DNS answer) stays in the log: a page that
                // showed it would let anyone probe what bourse can reach.
                tracing::info!(url, error = %e, "client metadata document not fetched");
                format!("the client metadata document at {url} could not be fetched")
            })?;
    if response.status != 200 {
        return Err(format!(
            "the client metadata document at {url} answered HTTP {}",
            response.status
        ));
    }
    let doc: Value = serde_json::from_slice(&response.body)
        .map_err(|_| format!("the client metadata document at {url} is not JSON"))?;
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err(format!(
            "the client metadata document at {url} must name itself as its `client_id`"
        ));
    }
    if doc.get("client_secret").is_some() {
        return Err("a client metadata document must not hold a `client_secret`".into());
    }
    let metadata = ClientMetadata::read(&doc, AuthMethod::None).map_err(|e| e.to_string())?;
    let name = client_name(&metadata).map_err(|e| e.to_string())?;
    if metadata.auth_method != AuthMethod::None {
        return Err(
            "a client known by its metadata document authenticates with PKCE alone: its `token_endpoint_auth_method` must be `none`"
                .into(),
        );
    }
    Ok((metadata, name))
}

/// Checks a client's credential at the token or revocation endpoint: public clients present
/// none; confidential ones their secret, in the body or by HTTP Basic.
///
/// # Errors
/// `invalid_client`.
pub fn check_secret(client: &ClientRow, secret: Option<&str>) -> Result<()> {
    let invalid = |message: &str| Err(Error::oauth(OAuthCode::InvalidClient, message));
    match (&client.secret_hash, secret) {
        (None, None) => Ok(()),
        (None, Some(_)) => {
            invalid("this client is public: it authenticates with PKCE, not a secret")
        }
        (Some(_), None) => invalid("this client must authenticate with its `client_secret`"),
        (Some(hash), Some(secret)) if constant_time_eq(&hash_secret(secret), hash) => Ok(()),
        (Some(_), Some(_)) => invalid("the client secret is wrong"),
    }
}

/// A client as the operator sees it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientView {
    pub client_id: String,
    pub kind: String,
    pub name: String,
    pub client_uri: Option<String>,
    pub redirect_uris: Vec<String>,
    pub auth_method: String,
    pub created_at: String,
    pub fetched_at: Option<String>,
    pub revoked_at: Option<String>,
}

fn client_view(client: &ClientRow) -> ClientView {
    ClientView {
        client_id: client.client_id.clone(),
        kind: client.kind.clone(),
        name: client.name.clone(),
        client_uri: client.client_uri.clone(),
        redirect_uris: client.redirect_uris.clone(),
        auth_method: client.auth_method.clone(),
        created_at: client.created_at.clone(),
        fetched_at: client.fetched_at.clone(),
        revoked_at: client.revoked_at.clone(),
    }
}

/// A grant as the operator, or the agent that gave it, sees it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    pub id: String,
    pub client_id: String,
    pub client_name: String,
    /// The agent's handle.
    pub agent: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub created_at: String,
    pub used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
}

fn grant_view(grant: &GrantRow) -> GrantView {
    GrantView {
        id: grant.id.clone(),
        client_id: grant.client_id.clone(),
        client_name: grant.client_name.clone(),
        agent: grant.agent_handle.clone(),
        scopes: grant.scopes.split(' ').map(str::to_owned).collect(),
        resource: grant.resource.clone(),
        created_at: grant.created_at.clone(),
        used_at: grant.used_at.clone(),
        revoked_at: grant.revoked_at.clone(),
        revoked_by: grant.revoked_by.clone(),
    }
}

/// `GET /api/operator/oauth/clients`.
#[derive(Clone, Debug, Serialize)]
pub struct ClientPage {
    pub clients: Vec<ClientView>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// `GET /api/operator/oauth/grants`, `GET /api/agents/me/oauth/grants`.
#[derive(Clone, Debug, Serialize)]
pub struct GrantPage {
    pub grants: Vec<GrantView>,
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// A client revoked by the operator.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRevoked {
    pub client_id: String,
    pub revoked_at: String,
}

/// A grant revoked.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantRevoked {
    pub id: String,
    pub revoked_at: String,
}

/// `GET /api/operator/oauth/clients`.
///
/// # Errors
/// Database failure.
pub async fn list_clients(app: &App, limit: i64, offset: i64) -> Result<ClientPage> {
    let (rows, total) = app
        .store
        .read(move |conn| oauth_store::clients(conn, limit, offset))
        .await?;
    Ok(ClientPage {
        clients: rows.iter().map(client_view).collect(),
        total,
        limit,
        offset,
    })
}

/// `POST /api/operator/oauth/clients/revoke`: the client and every grant it holds.
///
/// # Errors
/// `NOT_FOUND` for an unknown client; `CONFLICT` (`ALREADY_REVOKED`) for a revoked one.
pub async fn revoke_client(app: &App, client_id: String) -> Result<ClientRevoked> {
    let now = app.now();
    let id = client_id.clone();
    let at = now.clone();
    let (exists, revoked) = app
        .store
        .write(move |tx| {
            let exists = oauth_store::client(tx, &id)?.is_some();
            Ok((exists, exists && oauth_store::revoke_client(tx, &id, &at)?))
        })
        .await?;
    match (exists, revoked) {
        (false, _) => Err(Error::NotFound(format!("no OAuth client {client_id:?}"))),
        (true, false) => Err(Error::Conflict {
            code: "ALREADY_REVOKED",
            message: format!("client {client_id:?} is already revoked"),
        }),
        (true, true) => Ok(ClientRevoked {
            client_id,
            revoked_at: now,
        }),
    }
}

/// `GET /api/operator/oauth/grants` (every agent's) and `GET /api/agents/me/oauth/grants`
/// (`agent`: one agent's own).
///
/// # Errors
/// Database failure.
pub async fn list_grants(
    app: &App,
    agent: Option<String>,
    active: bool,
    page: Page,
) -> Result<GrantPage> {
    let Page { limit, offset } = page;
    let (rows, total) = app
        .store
        .read(move |conn| oauth_store::grants(conn, agent.as_deref(), active, limit, offset))
        .await?;
    Ok(GrantPage {
        grants: rows.iter().map(grant_view).collect(),
        total,
        limit,
        offset,
    })
}

/// Who revokes a grant: the operator (any grant) or an agent (its own; another agent's grant is
/// answered as unknown).
pub enum Revoker {
    Operator,
    Agent(String),
}

/// `POST /api/operator/oauth/grants/{id}/revoke` and `POST /api/agents/me/oauth/grants/{id}/revoke`:
/// ends the grant's tokens at once.
///
/// # Errors
/// `NOT_FOUND`; `CONFLICT` (`ALREADY_REVOKED`).
pub async fn revoke_grant(app: &App, id: String, by: Revoker) -> Result<GrantRevoked> {
    let now = app.now();
    let grant_id = id.clone();
    let at = now.clone();
    let (exists, revoked) = app
        .store
        .write(move |tx| {
            let exists = oauth_store::grant(tx, &grant_id)?.is_some_and(|grant| match &by {
                Revoker::Operator => true,
                Revoker::Agent(agent) => grant.agent_id == *agent,
            });
            let label = match by {
                Revoker::Operator => "operator",
                Revoker::Agent(_) => "agent",
            };
            Ok((
                exists,
                exists && oauth_store::revoke_grant(tx, &grant_id, label, &at)?,
            ))
        })
        .await?;
    match (exists, revoked) {
        (false, _) => Err(Error::NotFound(format!("no OAuth grant {id}"))),
        (true, false) => Err(Error::Conflict {
            code: "ALREADY_REVOKED",
            message: format!("grant {id} is already revoked"),
        }),
        (true, true) => Ok(GrantRevoked {
            id,
            revoked_at: now,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_redirects_match_on_any_port_and_others_exactly() {
        let client = ClientRow {
            client_id: "bmc_x".into(),
            kind: "registered".into(),
            name: "x".into(),
            client_uri: None,
            redirect_uris: vec![
                "http://127.0.0.1:1000/cb".into(),
                "https://app.example/cb".into(),
            ],
            auth_method: "none".into(),
            secret_hash: None,
            created_at: String::new(),
            fetched_at: None,
            revoked_at: None,
        };
        assert!(redirect_allowed(&client, "http://127.0.0.1:5555/cb"));
        assert!(redirect_allowed(&client, "http://127.0.0.1/cb"));
        assert!(!redirect_allowed(&client, "http://127.0.0.1:5555/other"));
        assert!(!redirect_allowed(&client, "http://localhost:1000/cb"));
        assert!(redirect_allowed(&client, "https://app.example/cb"));
        assert!(!redirect_allowed(&client, "https://app.example/cb/"));
        assert!(!redirect_allowed(&client, "https://app.example:444/cb"));
        // Userinfo, backslashes and encoded hosts never pass for loopback.
        for trick in [
            "http://127.0.0.1:1@evil.example/cb",
            "http://127.0.0.1:1000@evil.example/cb",
            "http://127.0.0.1:1000\\@evil.example/cb",
            "http://127.0.0.1%2540evil.example/cb",
            "http://127.0.0.1:abc/cb",
        ] {
            assert!(!redirect_allowed(&client, trick), "{trick}");
        }
        let bare = ClientRow {
            redirect_uris: vec!["http://127.0.0.1".into()],
            ..client
        };
        assert!(redirect_allowed(&bare, "http://127.0.0.1:5000/"));
        assert!(redirect_allowed(&bare, "http://127.0.0.1:5000"));
        assert!(!redirect_allowed(&bare, "http://127.0.0.1:5000/x"));
    }

    #[test]
    fn document_urls_need_a_path_and_no_tricks() {
        assert!(is_valid_document_url(
            "https://app.example/oauth/client.json"
        ));
        for bad in [
            "https://app.example/",
            "https://app.example",
            "https://app.example/a#b",
            "https://app.example/a/../b",
            "https://u@app.example/a",
        ] {
            assert!(!is_valid_document_url(bad), "{bad}");
        }
    }
}
