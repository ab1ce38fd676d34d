//! OAuth 2.1 for hosted MCP clients. bourse is both the protected resource (`/api/mcp`, RFC
//! 9728 metadata) and its own authorization server (RFC 8414 metadata; authorization code with
//! PKCE S256 only; RFC 8707 resource indicators; rotating refresh tokens; RFC 7009 revocation;
//! RFC 7591 dynamic registration and Client ID Metadata Documents). A person authorizes a client
//! for one agent on a server-rendered page, signing in with the agent's API key or registering a
//! new agent there.
//!
//! Tokens are opaque random strings stored only as SHA-256 hashes. An access token lives an hour
//! and names its grant: the agent, the client and the scopes a person allowed. Rotating the
//! agent's API key revokes its grants; so do the operator and the client itself (revocation).
//! Headless agents keep using API keys: [`authenticate`] reads either, and an API key holds every
//! scope.

pub mod clients;
pub mod flow;

use jiff::SignedDuration;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::request::Scope;
use crate::service::identity::agents;
use crate::service::{App, hash_secret, mint_secret as mint};
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::oauth::{self as oauth_store, TokenKind};

/// How clients authenticate at the token and revocation endpoints (the metadata says so, and
/// `clients` registers nothing else).
pub const AUTH_METHODS: [&str; 3] = crate::request::oauth::AuthMethod::NAMES;
/// The grant types the token endpoint takes (and every registered client holds).
pub const GRANT_TYPES: [&str; 2] = ["authorization_code", "refresh_token"];
/// Access tokens start with this (API keys start with `svc_live_`).
pub const ACCESS_PREFIX: &str = "bmat_";
/// Refresh tokens.
pub(super) const REFRESH_PREFIX: &str = "bmrt_";
/// Authorization codes.
pub(super) const CODE_PREFIX: &str = "bmac_";
/// How long an access token authenticates.
pub const ACCESS_TTL: SignedDuration = SignedDuration::from_hours(1);
/// How long a refresh token may be exchanged (each exchange issues a new one).
pub(super) const REFRESH_TTL: SignedDuration = SignedDuration::from_hours(24 * 30);
/// How long an authorization code may be exchanged.
pub(super) const CODE_TTL: SignedDuration = SignedDuration::from_mins(2);
/// The MCP endpoint that also answers `initialize` and `tools/list` without a credential.
pub const MCP_PATH: &str = "/api/mcp";
/// The same endpoint for hosted clients: every request needs a credential, so the first one
/// (`initialize`) meets the 401 that starts their OAuth flow.
pub const HOSTED_MCP_PATH: &str = "/mcp";

/// A set of [`Scope`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    /// Every scope (what an API key holds).
    pub const ALL: Scopes = Scopes(0b1111);

    fn bit(scope: Scope) -> u8 {
        match scope {
            Scope::Read => 1,
            Scope::Message => 2,
            Scope::Sell => 4,
            Scope::Spend => 8,
        }
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & Scopes::bit(scope) != 0
    }

    #[must_use]
    pub fn with(self, scope: Scope) -> Scopes {
        Scopes(self.0 | Scopes::bit(scope))
    }

    #[must_use]
    pub fn intersect(self, other: Scopes) -> Scopes {
        Scopes(self.0 & other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every scope of `self` is in `other`.
    pub fn within(self, other: Scopes) -> bool {
        self.0 & !other.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL
            .into_iter()
            .filter(move |scope| self.contains(*scope))
    }

    /// The scopes named in a space-separated string (RFC 6749 §3.3) that this server knows;
    /// repeated names count once, other names are ignored (a server may grant less than asked,
    /// and hosted clients send names of their own).
    pub fn known_in(text: &str) -> Scopes {
        text.split(' ')
            .filter_map(Scope::named)
            .fold(Scopes::default(), Scopes::with)
    }
}

impl std::fmt::Display for Scopes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.iter().map(Scope::name).collect();
        f.write_str(&names.join(" "))
    }
}

/// Who a Bearer credential on the MCP endpoint names, and what it may do.
#[derive(Clone, Debug)]
pub struct Bearer {
    pub agent: AgentRow,
    /// Every scope for an API key; the granted ones for an access token.
    pub scopes: Scopes,
    /// The grant an access token belongs to (`None` for an API key).
    pub grant: Option<String>,
}

impl Bearer {
    /// Refuses what only the agent's full API key may do (the operations whose
    /// `operations::Operation::key_scope` is `None`) when this credential is a restricted key or
    /// an OAuth access token.
    ///
    /// # Errors
    /// `INSUFFICIENT_SCOPE` (403).
    pub fn require_full_key(&self, what: &str) -> Result<()> {
        if self.grant.is_some() || self.agent.restricted.is_some() {
            return Err(crate::service::identity::keys::full_key_required(what));
        }
        Ok(())
    }
}

/// The resource identifiers a token may be bound to: the two MCP endpoints, and the server
/// itself (the root protected-resource metadata names it). The first is the default.
pub fn resources(app: &App) -> [String; 3] {
    [
        app.url(MCP_PATH),
        app.url(HOSTED_MCP_PATH),
        app.public_url.clone(),
    ]
}

/// The protected-resource metadata URL of the MCP endpoint at `path` (RFC 9728 §3.1,
/// path-suffixed form).
pub fn resource_metadata_url(app: &App, path: &str) -> String {
    app.url(&format!("/.well-known/oauth-protected-resource{path}"))
}

/// The names of every scope, in order.
type ScopeNames = [&'static str; Scope::ALL.len()];

/// RFC 9728 protected-resource metadata.
#[derive(Clone, Debug, Serialize)]
pub struct ProtectedResource {
    pub resource: String,
    pub authorization_servers: [String; 1],
    pub scopes_supported: ScopeNames,
    pub bearer_methods_supported: [&'static str; 1],
    pub resource_name: &'static str,
    pub resource_documentation: String,
}

/// RFC 9728 metadata; `resource` is the identifier whose well-known URL was asked for.
pub fn protected_resource_metadata(app: &App, resource: &str) -> ProtectedResource {
    ProtectedResource {
        resource: resource.to_owned(),
        authorization_servers: [app.public_url.clone()],
        scopes_supported: Scope::ALL.map(Scope::name),
        bearer_methods_supported: ["header"],
        resource_name: "bourse marketplace (MCP)",
        resource_documentation: app.url("/llms.txt"),
    }
}

/// RFC 8414 authorization server metadata.
#[derive(Clone, Debug, Serialize)]
pub struct AuthorizationServer {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub revocation_endpoint: String,
    pub scopes_supported: ScopeNames,
    pub response_types_supported: [&'static str; 1],
    pub response_modes_supported: [&'static str; 1],
    pub grant_types_supported: [&'static str; 2],
    pub token_endpoint_auth_methods_supported: [&'static str; 3],
    pub revocation_endpoint_auth_methods_supported: [&'static str; 3],
    pub code_challenge_methods_supported: [&'static str; 1],
    pub client_id_metadata_document_supported: bool,
    pub authorization_response_iss_parameter_supported: bool,
    pub service_documentation: String,
}

/// RFC 8414 authorization server metadata.
pub fn authorization_server_metadata(app: &App) -> AuthorizationServer {
    AuthorizationServer {
        issuer: app.public_url.clone(),
        authorization_endpoint: app.url("/oauth/authorize"),
        token_endpoint: app.url("/oauth/token"),
        registration_endpoint: app.url("/oauth/register"),
        revocation_endpoint: app.url("/oauth/revoke"),
        scopes_supported: Scope::ALL.map(Scope::name),
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: GRANT_TYPES,
        token_endpoint_auth_methods_supported: AUTH_METHODS,
        revocation_endpoint_auth_methods_supported: AUTH_METHODS,
        code_challenge_methods_supported: ["S256"],
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
        service_documentation: app.url("/llms.txt"),
    }
}

/// The `WWW-Authenticate` challenge of the MCP endpoint at `path`: where its metadata is, the
/// scopes a client should ask for, and the OAuth error when a token was presented.
pub fn challenge(app: &App, path: &str, scopes: Scopes, error: Option<(&str, &str)>) -> String {
    let mut value = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{scopes}\"",
        resource_metadata_url(app, path)
    );
    if let Some((code, description)) = error {
        let description = description.replace(['"', '\\'], "'");
        value.push_str(&format!(
            ", error=\"{code}\", error_description=\"{description}\""
        ));
    }
    value
}

/// The scopes a client is pointed at when it has none: every scope but spending, which a client
/// asks for when it needs it (a 403 names it).
pub fn default_scopes() -> Scopes {
    Scopes::default()
        .with(Scope::Read)
        .with(Scope::Message)
        .with(Scope::Sell)
}

/// Resolves a Bearer credential: an access token (its grant must be live, unexpired and bound to
/// this server) or an API key (every scope).
///
/// # Errors
/// `UNAUTHENTICATED` with the reason.
pub async fn authenticate(app: &App, presented: &str) -> Result<Bearer> {
    if !presented.starts_with(ACCESS_PREFIX) {
        let agent = agents::authenticate(app, Some(presented)).await?;
        // A restricted key holds its own scopes; the full key every scope.
        let scopes = agent
            .restricted
            .as_ref()
            .map_or(Scopes::ALL, |key| Scopes::known_in(&key.scopes));
        return Ok(Bearer {
            agent,
            scopes,
            grant: None,
        });
    }
    let token_hash = hash_secret(presented);
    let found = app
        .store
        .read(move |conn| {
            let Some(token) = oauth_store::token(conn, &token_hash)? else {
                return Ok(None);
            };
            let Some(grant) = oauth_store::grant(conn, &token.grant_id)? else {
                return Ok(None);
            };
            let agent = agent_store::find_by_id(conn, &grant.agent_id)?;
            Ok(agent.map(|agent| (token, grant, agent)))
        })
        .await?;
    let unknown = || Error::Unauthenticated("the access token is unknown or was revoked".into());
    let (token, grant, mut agent) = found.ok_or_else(unknown)?;
    // Purchases made with the token count against the grant's own cap.
    agent.via_grant = Some(grant.id.clone());
    if token.kind != TokenKind::Access || token.revoked {
        return Err(unknown());
    }
    if token.expires_at <= app.now() {
        return Err(Error::Unauthenticated(format!(
            "the access token expired at {}; refresh it at {}",
            token.expires_at,
            app.url("/oauth/token")
        )));
    }
    if !resources(app).contains(&grant.resource) {
        return Err(Error::Unauthenticated(format!(
            "the access token was issued for {}, not for this server ({})",
            grant.resource,
            app.url(MCP_PATH)
        )));
    }
    Ok(Bearer {
        agent,
        // The token's own scopes: a refresh may have narrowed them below the grant's.
        scopes: Scopes::known_in(&token.scopes).intersect(Scopes::known_in(&grant.scopes)),
        grant: Some(grant.id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_print_and_compare() {
        let scopes = Scopes::known_in("message  read read");
        assert_eq!(scopes.to_string(), "read message");
        assert!(scopes.within(Scopes::ALL) && !Scopes::ALL.within(scopes));
        assert_eq!(Scopes::known_in("read buy").to_string(), "read");
        assert!(Scopes::known_in("").is_empty());
        assert!(!default_scopes().contains(Scope::Spend));
        assert_eq!(Scopes::ALL.to_string(), "read message sell spend");
        assert_eq!(Scopes::known_in("claudeai read").to_string(), "read");
    }
}
