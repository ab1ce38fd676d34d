//! The authorization code flow: checking an authorization request, a person's Allow or Deny,
//! the token endpoint (code exchange with PKCE, refresh with rotation) and revocation.

use std::fmt::Write as _;

use jiff::SignedDuration;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::clients::{self, redirect_allowed};
use super::{
    ACCESS_PREFIX, ACCESS_TTL, CODE_PREFIX, CODE_TTL, REFRESH_PREFIX, REFRESH_TTL, Scopes,
    default_scopes, mint, resources,
};
use crate::clock::rfc3339_after;
use crate::crypto::b64url;
use crate::error::{Error, OAuthCode, Result};
use crate::request::Scope;
use crate::request::oauth::{ClientAuth, Grant, Params, RevokeRequest, TokenRequest, single};
use crate::service::{App, hash_secret};
use crate::store::agents::AgentRow;
use crate::store::oauth::{self as oauth_store, ClientRow, NewCode, NewGrant, TokenKind};

/// How many expired codes and tokens each issuance deletes (cleanup keeps pace with use).
const SWEEP_BATCH: i64 = 100;

/// A checked authorization request (RFC 6749 §4.1.1, PKCE, RFC 8707).
#[derive(Clone, Debug)]
pub struct Authorization {
    pub client: ClientRow,
    pub redirect_uri: String,
    /// Whether the request named the redirect URI (then the token request must repeat it).
    pub redirect_given: bool,
    pub state: Option<String>,
    /// The PKCE S256 challenge.
    pub challenge: String,
    /// What the client asked for (a client that names none is offered the defaults).
    pub scopes: Scopes,
    pub resource: String,
}

/// Why an authorization request is refused.
#[derive(Debug)]
pub enum Refusal {
    /// The client or its redirect URI cannot be trusted: the person is told, nothing redirects.
    Page(String),
    /// The client is told through its redirect URI (a URL to send the browser to).
    Redirect(String),
    /// A failure of bourse itself.
    Failed(Error),
}

/// Percent-encodes `pairs` as `application/x-www-form-urlencoded`.
fn form_encode(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                b' ' => "+".into(),
                other => format!("%{other:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `redirect_uri` with the response parameters, `state` and the issuer (RFC 9207) added.
fn back_to_client(
    app: &App,
    redirect_uri: &str,
    state: Option<&str>,
    pairs: &[(&str, &str)],
) -> String {
    let mut all = pairs.to_vec();
    if let Some(state) = state {
        all.push(("state", state));
    }
    all.push(("iss", &app.public_url));
    let joiner = if redirect_uri.contains('?') { '&' } else { '?' };
    format!("{}{joiner}{}", as_uri(redirect_uri), form_encode(&all))
}

/// A registered redirect URI made a URI (RFC 3986) for the `Location` header. Registration takes
/// IRIs (any character but whitespace, controls, `#` and `\\`), so every byte a URI cannot hold
/// is percent-encoded as RFC 3987 §3.1 maps an IRI to a URI: non-ASCII UTF-8, characters such
/// as `<` or `"`, a `%` not followed by two hex digits, brackets other than an IPv6 host's. A
/// redirect URI that is already a URI comes back unchanged.
fn as_uri(iri: &str) -> std::borrow::Cow<'_, str> {
    let bytes = iri.as_bytes();
    // The two brackets of an IP literal host (`scheme://[…]`), the only ones a URI may hold.
    let literal = iri
        .find(':')
        .filter(|&colon| iri[colon + 1..].starts_with("//["))
        .and_then(|colon| {
            let open = colon + 3;
            Some((open, open + iri[open..].find(']')?))
        });
    let in_literal = |i: usize| literal.is_some_and(|(open, close)| i == open || i == close);
    let escaped = |i: usize| {
        bytes[i] == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    };
    let keeps = |i: usize| match bytes[i] {
        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => true,
        b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' => true,
        b',' | b';' | b'=' | b':' | b'/' | b'?' | b'@' => true,
        b'[' | b']' => in_literal(i),
        b'%' => escaped(i),
        _ => false,
    };
    if (0..bytes.len()).all(keeps) {
        return std::borrow::Cow::Borrowed(iri);
    }
    let mut uri = String::with_capacity(iri.len() + 16);
    for (i, &b) in bytes.iter().enumerate() {
        if keeps(i) {
            uri.push(char::from(b));
        } else {
            let _ = write!(uri, "%{b:02X}");
        }
    }
    std::borrow::Cow::Owned(uri)
}

/// The URL that tells the client its request failed.
fn error_redirect(
    app: &App,
    request: (&str, Option<&str>),
    code: &str,
    description: &str,
) -> Refusal {
    let (redirect_uri, state) = request;
    Refusal::Redirect(back_to_client(
        app,
        redirect_uri,
        state,
        &[("error", code), ("error_description", description)],
    ))
}

fn is_pkce_text(text: &str) -> bool {
    (43..=128).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Checks an authorization request. The client and the redirect URI are checked first: until
/// both are trusted, a refusal is shown to the person; after, it goes back to the client.
/// `requester` is the client address asking (a client metadata document fetch counts against
/// it).
pub async fn check(
    app: &App,
    params: &Params,
    requester: &str,
) -> std::result::Result<Authorization, Refusal> {
    let page = Refusal::Page;
    let client_id = single(params, "client_id")
        .map_err(page)?
        .ok_or_else(|| Refusal::Page("the request names no `client_id`".into()))?;
    let client = match clients::resolve(app, client_id, requester).await {
        Ok(client) => client,
        Err(error @ Error::OAuth { .. }) => return Err(Refusal::Page(error.to_string())),
        Err(error) => return Err(Refusal::Failed(error)),
    };
    let named_redirect = single(params, "redirect_uri").map_err(page)?;
    let redirect_uri = match named_redirect {
        Some(uri) if redirect_allowed(&client, uri) => uri.to_owned(),
        Some(uri) => {
            return Err(Refusal::Page(format!(
                "the redirect URI {uri:?} is not one that {} registered",
                client.name
            )));
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(Refusal::Page(
                "the request names no `redirect_uri`, and the client registered several".into(),
            ));
        }
    };
    let state = match single(params, "state") {
        Ok(state) => state.map(str::to_owned),
        Err(why) => {
            return Err(error_redirect(
                app,
                (&redirect_uri, None),
                "invalid_request",
                &why,
            ));
        }
    };
    let back = (redirect_uri.as_str(), state.as_deref());
    let refuse = |code: &str, why: &str| error_redirect(app, back, code, why);
    let read = |name: &str| single(params, name).map_err(|why| refuse("invalid_request", &why));
    match read("response_type")? {
        Some("code") => {}
        Some(_) => {
            return Err(refuse(
                "unsupported_response_type",
                "only `response_type=code` is supported",
            ));
        }
        None => {
            return Err(refuse(
                "invalid_request",
                "`response_type=code` is required",
            ));
        }
    }
    let challenge = read("code_challenge")?
        .filter(|challenge| is_pkce_text(challenge))
        .ok_or_else(|| {
            refuse(
                "invalid_request",
                "PKCE is required: send `code_challenge` (43 to 128 characters) with `code_challenge_method=S256`",
            )
        })?
        .to_owned();
    if read("code_challenge_method")? != Some("S256") {
        return Err(refuse(
            "invalid_request",
            "only `code_challenge_method=S256` is supported",
        ));
    }
    // Names this server does not know are ignored (hosted clients send their own); with none
    // left, the client is offered the defaults.
    let scopes = match read("scope")?.map(Scopes::known_in) {
        Some(known) if !known.is_empty() => known,
        _ => default_scopes(),
    };
    let resource = match read("resource")? {
        None => resources(app)[0].clone(),
        Some(resource) => canonical_resource(app, resource).ok_or_else(|| {
            refuse(
                "invalid_target",
                &format!("`resource` must be {} (this server)", resources(app)[0]),
            )
        })?,
    };
    Ok(Authorization {
        client,
        redirect_given: named_redirect.is_some(),
        redirect_uri,
        state,
        challenge,
        scopes,
        resource,
    })
}

/// The resource identifier `presented` names on this server, if any (a trailing slash is
/// tolerated).
fn canonical_resource(app: &App, presented: &str) -> Option<String> {
    let trimmed = presented.strip_suffix('/').unwrap_or(presented);
    resources(app)
        .into_iter()
        .find(|resource| resource == trimmed)
}

/// A person allowed `granted` (within what was asked) for `agent`: records the grant and
/// returns the URL that hands the client its code.
///
/// # Errors
/// `INVALID_ARGUMENT` when no scope is left; database failure.
pub async fn allow(
    app: &App,
    request: &Authorization,
    agent: &AgentRow,
    granted: Scopes,
    spend_daily_cents: Option<i64>,
) -> Result<String> {
    let granted = granted.intersect(request.scopes);
    // A spending cap belongs to a grant that may spend.
    let spend_daily_cents = spend_daily_cents.filter(|_| granted.contains(Scope::Spend));
    if granted.is_empty() {
        return Err(Error::invalid(
            "tick at least one of the permissions the client asked for",
        ));
    }
    let (code, code_hash) = mint(CODE_PREFIX);
    let grant_id = uuid::Uuid::new_v4().to_string();
    let now = app.clock.now();
    let expires_at = rfc3339_after(now, CODE_TTL);
    let now = crate::clock::rfc3339(now);
    let scopes = granted.to_string();
    let client_id = request.client.client_id.clone();
    let agent_id = agent.id.clone();
    let resource = request.resource.clone();
    let redirect_uri = request.redirect_uri.clone();
    let redirect_given = request.redirect_given;
    let challenge = request.challenge.clone();
    app.store
        .write(move |tx| {
            let grant = NewGrant {
                id: &grant_id,
                client_id: &client_id,
                agent_id: &agent_id,
                scopes: &scopes,
                resource: &resource,
                now: &now,
                spend_daily_cents,
            };
            let code = NewCode {
                hash: &code_hash,
                redirect_uri: &redirect_uri,
                redirect_given,
                challenge: &challenge,
                expires_at: &expires_at,
            };
            oauth_store::insert_grant_with_code(tx, &grant, &code)
        })
        .await?;
    Ok(back_to_client(
        app,
        &request.redirect_uri,
        request.state.as_deref(),
        &[("code", &code)],
    ))
}

/// The URL that tells the client the person said no.
pub fn deny(app: &App, request: &Authorization) -> String {
    back_to_client(
        app,
        &request.redirect_uri,
        request.state.as_deref(),
        &[
            ("error", "access_denied"),
            ("error_description", "the person declined the authorization"),
        ],
    )
}

fn oauth(code: OAuthCode, message: impl Into<String>) -> Error {
    Error::oauth(code, message)
}

/// The client of a token or revocation request, authenticated: its secret when it has one.
async fn client_of(app: &App, auth: &ClientAuth, requester: &str) -> Result<ClientRow> {
    let client = clients::resolve(app, &auth.client_id, requester).await?;
    clients::check_secret(&client, auth.secret.as_deref())?;
    Ok(client)
}

/// `POST /oauth/token`: `authorization_code` (with the PKCE verifier) or `refresh_token`.
///
/// # Errors
/// OAuth errors (`invalid_request`, `invalid_client`, `invalid_grant`, `invalid_scope`,
/// `invalid_target`, `unsupported_grant_type`).
pub async fn token(app: &App, request: TokenRequest, requester: &str) -> Result<Tokens> {
    let client = client_of(app, &request.client, requester).await?;
    let resource = request
        .resource?
        .map(|presented| {
            canonical_resource(app, &presented).ok_or_else(|| {
                oauth(
                    OAuthCode::InvalidTarget,
                    format!("`resource` must be {} (this server)", resources(app)[0]),
                )
            })
        })
        .transpose()?;
    match request.grant? {
        Grant::AuthorizationCode {
            code,
            verifier,
            redirect_uri,
        } => {
            exchange_code(
                app,
                &client,
                &code,
                &verifier,
                redirect_uri.as_deref(),
                resource,
            )
            .await
        }
        Grant::RefreshToken {
            refresh_token,
            scope,
        } => {
            let narrowed = scope.as_deref().map(Scopes::known_in);
            refresh_grant(app, &client, &refresh_token, narrowed, resource).await
        }
    }
}

/// The outcome of taking a code, read and marked in one transaction.
enum Taken {
    Fresh(Box<(oauth_store::GrantRow, oauth_store::CodeRow)>),
    Replayed,
    Unknown,
}

async fn exchange_code(
    app: &App,
    client: &ClientRow,
    code: &str,
    verifier: &str,
    redirect_uri: Option<&str>,
    resource: Option<String>,
) -> Result<Tokens> {
    let invalid = |message: &str| oauth(OAuthCode::InvalidGrant, message);
    let code_hash = hash_secret(code);
    let now = app.now();
    let at = now.clone();
    let taken = app
        .store
        .write(move |tx| {
            let Some(code) = oauth_store::take_code(tx, &code_hash, &at)? else {
                return Ok(Taken::Unknown);
            };
            if code.used_at.is_some() {
                // A code used twice was intercepted (or replayed): end what it granted.
                oauth_store::revoke_grant(tx, &code.grant_id, "authorization code reused", &at)?;
                return Ok(Taken::Replayed);
            }
            match oauth_store::grant(tx, &code.grant_id)? {
                Some(grant) => Ok(Taken::Fresh(Box::new((grant, code)))),
                None => Ok(Taken::Unknown),
            }
        })
        .await?;
    let (grant, code) = match taken {
        Taken::Fresh(found) => *found,
        Taken::Replayed => {
            return Err(invalid(
                "the authorization code was already used; the tokens issued for it are revoked",
            ));
        }
        Taken::Unknown => return Err(invalid("the authorization code is unknown")),
    };
    if grant.client_id != client.client_id {
        return Err(invalid(
            "the authorization code was issued to another client",
        ));
    }
    if code.expires_at <= now {
        return Err(invalid("the authorization code expired; authorize again"));
    }
    // Required when the authorization request named it (OAuth 2.1 §4.1.3); when sent, it must
    // be the same either way.
    let matches = match redirect_uri {
        Some(presented) => presented == code.redirect_uri,
        None => !code.redirect_given,
    };
    if !matches {
        return Err(invalid(
            "`redirect_uri` must be the one the authorization request used",
        ));
    }
    let computed = b64url(&Sha256::digest(verifier.as_bytes()));
    if !is_pkce_text(verifier) || computed != code.challenge {
        return Err(invalid(
            "the PKCE `code_verifier` does not match the code challenge",
        ));
    }
    if grant.revoked_at.is_some() {
        return Err(invalid("the authorization was revoked"));
    }
    if resource.is_some_and(|resource| resource != grant.resource) {
        return Err(oauth(
            OAuthCode::InvalidTarget,
            "`resource` differs from the one that was authorized",
        ));
    }
    issue(app, &grant.id, &grant.scopes).await
}

/// Mints an access and a refresh token for a grant.
async fn issue(app: &App, grant_id: &str, scopes: &str) -> Result<Tokens> {
    let (access, access_hash) = mint(ACCESS_PREFIX);
    let (refresh, refresh_hash) = mint(REFRESH_PREFIX);
    let now = app.clock.now();
    let access_expires = rfc3339_after(now, ACCESS_TTL);
    let refresh_expires = rfc3339_after(now, REFRESH_TTL);
    let id = grant_id.to_owned();
    let scope_names = scopes.to_owned();
    let at = crate::clock::rfc3339(now);
    // A used code is kept a day past its expiry, so a late replay still revokes its grant.
    let codes_before = rfc3339_after(now, -SignedDuration::from_hours(24));
    app.store
        .write(move |tx| {
            oauth_store::insert_token(
                tx,
                &access_hash,
                &id,
                TokenKind::Access,
                &scope_names,
                &access_expires,
            )?;
            oauth_store::insert_token(
                tx,
                &refresh_hash,
                &id,
                TokenKind::Refresh,
                &scope_names,
                &refresh_expires,
            )?;
            oauth_store::sweep(tx, &codes_before, &at, SWEEP_BATCH)?;
            oauth_store::touch_grant(tx, &id, &at)
        })
        .await?;
    Ok(Tokens {
        access_token: access,
        token_type: "Bearer",
        expires_in: ACCESS_TTL.as_secs(),
        refresh_token: refresh,
        scope: scopes.to_owned(),
    })
}

/// A token answer (RFC 6749 §5.1): a new access token and its rotated refresh token.
#[derive(Clone, Debug, Serialize)]
pub struct Tokens {
    pub access_token: String,
    pub token_type: &'static str,
    /// Seconds.
    pub expires_in: i64,
    pub refresh_token: String,
    /// The granted scopes, space-separated.
    pub scope: String,
}

/// What exchanging a refresh token found.
enum Exchanged {
    /// The grant, and the scopes the new pair carries.
    Fresh(Box<oauth_store::GrantRow>, Scopes),
    Refused(OAuthCode, String),
}

/// How long after its exchange a refresh token may be presented again without that counting as
/// reuse: a client that sent two refreshes at once is not logged out (the usual grace of
/// rotating refresh tokens; a replay after it revokes the grant).
const REUSE_GRACE: SignedDuration = SignedDuration::from_secs(30);

async fn refresh_grant(
    app: &App,
    client: &ClientRow,
    refresh: &str,
    narrowed: Option<Scopes>,
    resource: Option<String>,
) -> Result<Tokens> {
    let token_hash = hash_secret(refresh);
    let now = app.clock.now();
    let at = crate::clock::rfc3339(now);
    let grace_after = rfc3339_after(now, -REUSE_GRACE);
    let client_id = client.client_id.clone();
    let exchanged = app
        .store
        .write(move |tx| {
            let refused = |code, why: &str| Ok(Exchanged::Refused(code, why.to_owned()));
            let Some(token) = oauth_store::token(tx, &token_hash)? else {
                return refused(OAuthCode::InvalidGrant, "the refresh token is unknown");
            };
            let Some(grant) = oauth_store::grant(tx, &token.grant_id)? else {
                return refused(OAuthCode::InvalidGrant, "the refresh token is unknown");
            };
            if token.kind != TokenKind::Refresh || grant.client_id != client_id {
                return refused(OAuthCode::InvalidGrant, "the refresh token is unknown");
            }
            if token.revoked {
                return refused(OAuthCode::InvalidGrant, "the authorization was revoked");
            }
            if token.expires_at <= at {
                return refused(
                    OAuthCode::InvalidGrant,
                    "the refresh token expired; authorize again",
                );
            }
            // Checked before the token is spent, so a malformed refresh leaves it usable.
            if resource
                .as_ref()
                .is_some_and(|resource| *resource != grant.resource)
            {
                return refused(
                    OAuthCode::InvalidTarget,
                    "`resource` differs from the one that was authorized",
                );
            }
            let held = Scopes::known_in(&token.scopes);
            let scopes = match narrowed {
                Some(asked) if !asked.within(held) => {
                    return refused(
                        OAuthCode::InvalidScope,
                        &format!("a refresh may narrow the scopes, not widen them beyond {held}"),
                    );
                }
                Some(asked) if !asked.is_empty() => asked,
                _ => held,
            };
            let first = oauth_store::use_refresh(tx, &token_hash, &at)?;
            let within_grace = token
                .used_at
                .as_deref()
                .is_some_and(|used| used > grace_after.as_str());
            if !first && !within_grace {
                // Rotation: a refresh token is good once. A later second use means it leaked.
                oauth_store::revoke_grant(tx, &grant.id, "refresh token reused", &at)?;
                return refused(
                    OAuthCode::InvalidGrant,
                    "the refresh token was already used; the authorization is revoked",
                );
            }
            Ok(Exchanged::Fresh(Box::new(grant), scopes))
        })
        .await?;
    match exchanged {
        Exchanged::Fresh(grant, scopes) => issue(app, &grant.id, &scopes.to_string()).await,
        Exchanged::Refused(code, why) => Err(oauth(code, why)),
    }
}

/// `POST /oauth/revoke` (RFC 7009): a refresh token ends its whole grant, an access token
/// itself. Unknown tokens and other clients' tokens are answered the same (200) and untouched.
/// The `token_type_hint` is not needed: one lookup by hash finds either type.
///
/// # Errors
/// `invalid_request` without a token; `invalid_client`.
pub async fn revoke(app: &App, request: RevokeRequest, requester: &str) -> Result<()> {
    let client = client_of(app, &request.client, requester).await?;
    let token = request.token;
    let token_hash = hash_secret(&token);
    let now = app.now();
    app.store
        .write(move |tx| {
            let Some(found) = oauth_store::token(tx, &token_hash)? else {
                return Ok(());
            };
            let Some(grant) = oauth_store::grant(tx, &found.grant_id)? else {
                return Ok(());
            };
            if grant.client_id != client.client_id {
                return Ok(());
            }
            match found.kind {
                TokenKind::Refresh => {
                    oauth_store::revoke_grant(tx, &grant.id, "client", &now)?;
                }
                TokenKind::Access => oauth_store::revoke_token(tx, &token_hash, &now)?,
            }
            Ok(())
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding_escapes_what_a_query_cannot_hold() {
        assert_eq!(
            form_encode(&[("error", "access_denied"), ("d", "a b&c=é")]),
            "error=access_denied&d=a+b%26c%3D%C3%A9"
        );
    }

    #[test]
    fn a_redirect_iri_becomes_a_uri_and_a_uri_stays_as_it_was() {
        for uri in [
            "https://client.example/cb?x=1&y=%C3%A9",
            "http://[::1]:8080/cb",
            "com.example.app:/cb",
            "k.app:*",
        ] {
            assert!(
                matches!(as_uri(uri), std::borrow::Cow::Borrowed(_)),
                "{uri}"
            );
        }
        assert_eq!(
            as_uri("HTtps://U;\u{c2}\u{b1}Rs:654/\u{c3}"),
            "HTtps://U;%C3%82%C2%B1Rs:654/%C3%83"
        );
        assert_eq!(
            as_uri("https://x/a<b>\"c\"/[1]?p=%zz&q=%4"),
            "https://x/a%3Cb%3E%22c%22/%5B1%5D?p=%25zz&q=%254"
        );
        assert_eq!(
            as_uri("com.example.app:/cb?u=https://[x]"),
            "com.example.app:/cb?u=https://%5Bx%5D"
        );
        assert_eq!(
            as_uri("https://[2001:db8::1]:8443/[p]"),
            "https://[2001:db8::1]:8443/%5Bp%5D"
        );
    }

    #[test]
    fn the_rfc_7636_example_verifier_matches_its_challenge() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(
            b64url(&Sha256::digest(verifier.as_bytes())),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert!(is_pkce_text(verifier));
    }
}
