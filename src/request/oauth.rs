//! The OAuth endpoints' requests, in OAuth's own spellings: the token and revocation forms
//! (RFC 6749 §3.2, §4.1.3, §6; RFC 7009) and dynamic client registration (RFC 7591). Their
//! refusals are OAuth errors (`invalid_request`, `unsupported_grant_type`,
//! `invalid_client_metadata`, …), answered in OAuth's shape.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, OAuthCode, Result};

/// The request parameters of an OAuth endpoint (a query or a form body), in order.
pub type Params = [(String, String)];

/// The single value of `name`, an empty one counting as absent; a parameter sent twice is
/// refused (RFC 6749 §3.1).
///
/// # Errors
/// The refusal's description.
pub fn single<'a>(params: &'a Params, name: &str) -> std::result::Result<Option<&'a str>, String> {
    let mut values = params.iter().filter(|(key, _)| key == name);
    let first = values.next().map(|(_, value)| value.as_str());
    if values.next().is_some() {
        return Err(format!("`{name}` is sent more than once"));
    }
    Ok(first.filter(|value| !value.is_empty()))
}

fn oauth(code: OAuthCode, message: impl Into<String>) -> Error {
    Error::oauth(code, message)
}

/// [`single`], refused as `invalid_request`, owned.
fn param(params: &Params, name: &str) -> Result<Option<String>> {
    single(params, name)
        .map(|value| value.map(str::to_owned))
        .map_err(|why| oauth(OAuthCode::InvalidRequest, why))
}

fn required(params: &Params, name: &str, why: &str) -> Result<String> {
    param(params, name)?.ok_or_else(|| oauth(OAuthCode::InvalidRequest, why))
}

/// How a client names itself at the token or revocation endpoint: `client_id` (and
/// `client_secret`) in the form, or HTTP Basic.
#[derive(Debug)]
pub struct ClientAuth {
    pub client_id: String,
    pub secret: Option<String>,
}

impl ClientAuth {
    /// # Errors
    /// `invalid_request` for a parameter sent twice or a `client_id` that differs from the
    /// Basic one; `invalid_client` when the client is not named.
    fn read(params: &Params, basic: Option<(String, String)>) -> Result<ClientAuth> {
        let form_id = param(params, "client_id")?;
        let form_secret = param(params, "client_secret")?;
        match (basic, form_id) {
            (Some((id, _)), Some(form)) if id != form => Err(oauth(
                OAuthCode::InvalidRequest,
                "`client_id` differs from the one in the Authorization header",
            )),
            (Some((client_id, secret)), _) => Ok(ClientAuth {
                client_id,
                secret: Some(secret),
            }),
            (None, Some(client_id)) => Ok(ClientAuth {
                client_id,
                secret: form_secret,
            }),
            (None, None) => Err(oauth(
                OAuthCode::InvalidClient,
                "name the client: `client_id` in the form, or HTTP Basic authentication",
            )),
        }
    }
}

/// What a token request exchanges (its `grant_type`).
#[derive(Debug)]
pub enum Grant {
    /// `authorization_code`, with the PKCE verifier.
    AuthorizationCode {
        code: String,
        verifier: String,
        /// Required when the authorization request named it.
        redirect_uri: Option<String>,
    },
    /// `refresh_token`, optionally narrowing the scopes (`scope`, as sent).
    RefreshToken {
        refresh_token: String,
        scope: Option<String>,
    },
}

impl Grant {
    /// # Errors
    /// `invalid_request` (missing, sent twice), `unsupported_grant_type`.
    fn read(params: &Params, grant_type: Option<&str>) -> Result<Grant> {
        match grant_type {
            Some("authorization_code") => Ok(Grant::AuthorizationCode {
                code: required(params, "code", "`code` is required")?,
                verifier: required(
                    params,
                    "code_verifier",
                    "`code_verifier` is required (PKCE)",
                )?,
                redirect_uri: param(params, "redirect_uri")?,
            }),
            Some("refresh_token") => Ok(Grant::RefreshToken {
                refresh_token: required(params, "refresh_token", "`refresh_token` is required")?,
                scope: param(params, "scope")?,
            }),
            Some(other) => Err(oauth(
                OAuthCode::UnsupportedGrantType,
                format!(
                    "grant type {other:?} is not supported; use authorization_code or refresh_token"
                ),
            )),
            None => Err(oauth(OAuthCode::InvalidRequest, "`grant_type` is required")),
        }
    }
}

/// `POST /oauth/token`. The client is named first; the refusals of the rest of the form
/// (`resource`, the grant's own parameters) are answered only once the client is
/// authenticated, so a request from an unknown client is always `invalid_client`.
#[derive(Debug)]
pub struct TokenRequest {
    pub client: ClientAuth,
    /// `resource` (RFC 8707), as sent; the service checks it names this server.
    pub resource: Result<Option<String>>,
    pub grant: Result<Grant>,
}

impl TokenRequest {
    /// # Errors
    /// `invalid_request` for `grant_type` or the client's parameters sent twice;
    /// `invalid_client` when the client is not named (see [`ClientAuth`]).
    pub fn read(params: &Params, basic: Option<(String, String)>) -> Result<TokenRequest> {
        let grant_type =
            single(params, "grant_type").map_err(|why| oauth(OAuthCode::InvalidRequest, why))?;
        let client = ClientAuth::read(params, basic)?;
        Ok(TokenRequest {
            client,
            resource: param(params, "resource"),
            grant: Grant::read(params, grant_type),
        })
    }
}

/// A revocation's `token_type_hint` (RFC 7009 §2.1). The search covers every type anyway; a
/// hint this server does not know, or one sent twice, is ignored, as the RFC allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenTypeHint {
    AccessToken,
    RefreshToken,
}

/// `POST /oauth/revoke` (RFC 7009).
#[derive(Debug)]
pub struct RevokeRequest {
    pub token: String,
    pub token_type_hint: Option<TokenTypeHint>,
    pub client: ClientAuth,
}

impl RevokeRequest {
    /// # Errors
    /// `invalid_request` without a token; as [`ClientAuth`].
    pub fn read(params: &Params, basic: Option<(String, String)>) -> Result<RevokeRequest> {
        let token = required(params, "token", "`token` is required")?;
        let token_type_hint = match single(params, "token_type_hint") {
            Ok(Some("access_token")) => Some(TokenTypeHint::AccessToken),
            Ok(Some("refresh_token")) => Some(TokenTypeHint::RefreshToken),
            _ => None,
        };
        Ok(RevokeRequest {
            token,
            token_type_hint,
            client: ClientAuth::read(params, basic)?,
        })
    }
}

/// How a client authenticates at the token and revocation endpoints
/// (`token_endpoint_auth_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// A public client: PKCE alone.
    None,
    ClientSecretPost,
    ClientSecretBasic,
}

impl AuthMethod {
    pub const ALL: [AuthMethod; 3] = [
        AuthMethod::None,
        AuthMethod::ClientSecretPost,
        AuthMethod::ClientSecretBasic,
    ];
    /// The names, in the order of [`AuthMethod::ALL`].
    pub const NAMES: [&'static str; 3] = ["none", "client_secret_post", "client_secret_basic"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn named(name: &str) -> Option<AuthMethod> {
        AuthMethod::ALL
            .into_iter()
            .find(|method| method.name() == name)
    }
}

const MAX_REDIRECT_URIS: usize = 10;
/// The longest redirect URI, client URI or client id.
pub const MAX_URI_LEN: usize = 2000;
const MAX_NAME_CHARS: usize = 100;

/// Client metadata (RFC 7591 §2) as registration requests and metadata documents both carry
/// it, read and checked.
#[derive(Debug)]
pub struct ClientMetadata {
    pub redirect_uris: Vec<String>,
    /// `client_name`, trimmed, on one line (the service checks what people read on the
    /// authorization page: nothing invisible or reordering); absent, `None`.
    pub name: Option<String>,
    pub client_uri: Option<String>,
    pub auth_method: AuthMethod,
    /// `scope` as sent: the scope the client says it will ask for (the service keeps the names
    /// it knows; each authorization asks anew).
    pub scope: Option<String>,
}

fn bad_metadata(message: impl Into<String>) -> Error {
    Error::oauth(OAuthCode::InvalidClientMetadata, message)
}

impl ClientMetadata {
    /// Reads and checks metadata; `default_method` applies when `token_endpoint_auth_method` is
    /// absent (RFC 7591 says `client_secret_basic`; metadata documents describe public clients).
    ///
    /// # Errors
    /// `invalid_redirect_uri` or `invalid_client_metadata`, naming the field.
    pub fn read(doc: &Value, default_method: AuthMethod) -> Result<ClientMetadata> {
        let Value::Object(doc) = doc else {
            return Err(bad_metadata("client metadata must be a JSON object"));
        };
        let text = |name: &str| -> Result<Option<&str>> {
            match doc.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(value)) => Ok(Some(value.as_str())),
                Some(_) => Err(bad_metadata(format!("`{name}` must be a string"))),
            }
        };
        let redirect_uris = match doc.get("redirect_uris") {
            Some(Value::Array(uris)) if !uris.is_empty() && uris.len() <= MAX_REDIRECT_URIS => uris
                .iter()
                .map(|uri| match uri {
                    Value::String(uri) => check_redirect_uri(uri).map(|()| uri.clone()),
                    _ => Err(Error::oauth(
                        OAuthCode::InvalidRedirectUri,
                        "`redirect_uris` holds only strings",
                    )),
                })
                .collect::<Result<Vec<_>>>()?,
            _ => {
                return Err(Error::oauth(
                    OAuthCode::InvalidRedirectUri,
                    format!("`redirect_uris` must be an array of 1 to {MAX_REDIRECT_URIS} URIs"),
                ));
            }
        };
        let name = match text("client_name")? {
            Some(name) => {
                let name = name.trim();
                if name.is_empty()
                    || name.chars().count() > MAX_NAME_CHARS
                    || name.chars().any(char::is_control)
                {
                    return Err(bad_metadata(format!(
                        "`client_name` must be 1 to {MAX_NAME_CHARS} characters on one line"
                    )));
                }
                Some(name.to_owned())
            }
            None => None,
        };
        let client_uri = text("client_uri")?
            .map(|uri| {
                if uri.starts_with("https://")
                    && uri.chars().count() <= MAX_URI_LEN
                    && !has_control(uri)
                {
                    Ok(uri.to_owned())
                } else {
                    Err(bad_metadata("`client_uri` must be an https URL"))
                }
            })
            .transpose()?;
        let auth_method = match text("token_endpoint_auth_method")? {
            None => default_method,
            Some(method) => AuthMethod::named(method).ok_or_else(|| {
                bad_metadata(format!(
                    "`token_endpoint_auth_method` {method:?} is not supported; use one of {}",
                    AuthMethod::NAMES.join(", ")
                ))
            })?,
        };
        let listed = |name: &str, allowed: &[&str]| -> Result<()> {
            match doc.get(name) {
                None | Some(Value::Null) => Ok(()),
                Some(Value::Array(values))
                    if values
                        .iter()
                        .all(|value| value.as_str().is_some_and(|v| allowed.contains(&v))) =>
                {
                    Ok(())
                }
                Some(_) => Err(bad_metadata(format!(
                    "`{name}` may hold only {}",
                    allowed.join(", ")
                ))),
            }
        };
        listed("grant_types", &["authorization_code", "refresh_token"])?;
        listed("response_types", &["code"])?;
        let scope = text("scope")?.map(str::to_owned);
        Ok(ClientMetadata {
            redirect_uris,
            name,
            client_uri,
            auth_method,
            scope,
        })
    }
}

/// Whether `text` holds a control character or whitespace.
pub fn has_control(text: &str) -> bool {
    text.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// The parts of a URI that redirect matching and registration look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UriParts<'a> {
    pub scheme: &'a str,
    /// Empty when the URI has no authority (`com.example.app:/cb`); an IP literal without its
    /// brackets.
    pub host: &'a str,
    /// Whether the host was written in brackets (an IP literal, RFC 3986 §3.2.2).
    pub bracketed: bool,
    pub port: Option<&'a str>,
    /// The path and query.
    pub rest: &'a str,
}

/// The parts of `uri`; `None` when it has no scheme, or an authority with userinfo, a backslash
/// or an escape, or text after an IP literal other than a port.
pub fn split_uri(uri: &str) -> Option<UriParts<'_>> {
    let (scheme, rest) = uri.split_once(':')?;
    let Some(rest) = rest.strip_prefix("//") else {
        return Some(UriParts {
            scheme,
            host: "",
            bracketed: false,
            port: None,
            rest,
        });
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    // Userinfo, backslashes and escapes are never part of a redirect URI's host:
    // `http://127.0.0.1:1@evil/` must not read as a loopback host.
    if authority.contains(['@', '\\', '%']) {
        return None;
    }
    let bracketed = authority.strip_prefix('[');
    let (host, port) = if let Some(literal) = bracketed {
        let (host, after) = literal.split_once(']')?;
        // Only a port may follow an IP literal.
        let port = after.strip_prefix(':');
        if port.is_none() && !after.is_empty() {
            return None;
        }
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    Some(UriParts {
        scheme,
        host,
        bracketed: bracketed.is_some(),
        port,
        rest: path,
    })
}

pub fn is_loopback_host(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "::1" | "localhost")
}

/// A redirect URI a client may register: https; http only to a loopback host (a native app's
/// local listener, RFC 8252 §7.3); or a private-use scheme such as `com.example.app:/cb` (RFC
/// 8252 §7.1). Never a fragment, credentials or whitespace; a host in brackets is an IPv6
/// address in hex groups.
///
/// # Errors
/// `invalid_redirect_uri`.
pub fn check_redirect_uri(uri: &str) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::oauth(
            OAuthCode::InvalidRedirectUri,
            format!("redirect URI {uri:?} {why}"),
        ))
    };
    if uri.chars().count() > MAX_URI_LEN || has_control(uri) || uri.contains(['#', '\\']) {
        return refuse("must be at most 2000 characters, without whitespace or a fragment");
    }
    let Some(UriParts {
        scheme,
        host,
        bracketed,
        port,
        ..
    }) = split_uri(uri)
    else {
        return refuse("is not an absolute URI");
    };
    // RFC 3986 §3.1: a letter, then letters, digits, `+`, `-` and `.`.
    if !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))
    {
        return refuse("has an invalid scheme");
    }
    // A bracketed host is an IP literal (RFC 3986 §3.2.2): here an IPv6 address in hex groups
    // (no IPv4 tail, no zone), which the contract's pattern can state exactly. Any other host
    // has no colon and no bracket; a port is 1 to 65535 without leading zeros, after a host.
    if bracketed
        && (!host.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
            || host.parse::<std::net::Ipv6Addr>().is_err())
    {
        return refuse("has a bracketed host that is not an IPv6 address in hex groups");
    }
    if (!bracketed && host.contains([':', '[', ']']))
        || port.is_some_and(|port| host.is_empty() || !super::is_port(port))
    {
        return refuse("has an invalid host or port (a port is 1 to 65535, after a host)");
    }
    // (`split_uri` refuses userinfo.)
    let authority_ok = !host.is_empty();
    match scheme.to_ascii_lowercase().as_str() {
        "https" if authority_ok => Ok(()),
        "http" if authority_ok && is_loopback_host(host) => Ok(()),
        "http" => refuse("may use http only with a loopback host (127.0.0.1, [::1], localhost)"),
        "https" => refuse("has no valid host"),
        private if private.contains('.') => Ok(()),
        _ => refuse(
            "must use https, http to a loopback host, or a private-use scheme with a dot (com.example.app:/cb)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_parameter_sent_twice_is_refused() {
        let params = pairs(&[("a", "1"), ("a", "2")]);
        assert!(single(&params, "a").is_err());
        assert_eq!(single(&params, "b"), Ok(None));
    }

    #[test]
    fn the_client_is_named_before_the_grant_is_judged() {
        // No client: invalid_client, even though the grant lacks its token.
        let none = TokenRequest::read(&pairs(&[("grant_type", "refresh_token")]), None);
        assert_eq!(none.unwrap_err().code(), "OAUTH_INVALID_CLIENT");
        let request = TokenRequest::read(
            &pairs(&[("grant_type", "password"), ("client_id", "bmc_x")]),
            None,
        )
        .unwrap();
        assert_eq!(request.client.client_id, "bmc_x");
        assert_eq!(
            request.grant.unwrap_err().code(),
            "OAUTH_UNSUPPORTED_GRANT_TYPE"
        );
        let twice = TokenRequest::read(
            &pairs(&[("grant_type", "a"), ("grant_type", "b"), ("client_id", "x")]),
            None,
        );
        assert_eq!(twice.unwrap_err().code(), "OAUTH_INVALID_REQUEST");
        let basic = TokenRequest::read(
            &pairs(&[("grant_type", "refresh_token"), ("refresh_token", "r")]),
            Some(("id".into(), "secret".into())),
        )
        .unwrap();
        assert_eq!(basic.client.secret.as_deref(), Some("secret"));
        assert!(matches!(
            basic.grant.unwrap(),
            Grant::RefreshToken { scope: None, .. }
        ));
    }

    #[test]
    fn revocation_hints_are_read_and_unknown_ones_ignored() {
        let read = |hint: &str| {
            RevokeRequest::read(
                &pairs(&[
                    ("token", "t"),
                    ("token_type_hint", hint),
                    ("client_id", "c"),
                ]),
                None,
            )
            .unwrap()
            .token_type_hint
        };
        assert_eq!(read("refresh_token"), Some(TokenTypeHint::RefreshToken));
        assert_eq!(read("access_token"), Some(TokenTypeHint::AccessToken));
        assert_eq!(read("id_token"), None);
    }

    #[test]
    fn metadata_defaults_and_refusals() {
        let doc = json!({"redirect_uris": ["http://127.0.0.1/cb"], "client_name": " Tool "});
        let metadata = ClientMetadata::read(&doc, AuthMethod::ClientSecretBasic).unwrap();
        assert_eq!(
            (metadata.name.as_deref(), metadata.auth_method),
            (Some("Tool"), AuthMethod::ClientSecretBasic)
        );
        let bad = json!({"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "private_key_jwt"});
        assert!(ClientMetadata::read(&bad, AuthMethod::None).is_err());
        let no_uris = json!({"client_name": "x"});
        assert_eq!(
            ClientMetadata::read(&no_uris, AuthMethod::None)
                .unwrap_err()
                .code(),
            "OAUTH_INVALID_REDIRECT_URI"
        );
        let grants = json!({"redirect_uris": ["http://127.0.0.1/cb"], "grant_types": ["client_credentials"]});
        assert!(ClientMetadata::read(&grants, AuthMethod::None).is_err());
        for method in AuthMethod::ALL {
            assert_eq!(serde_json::to_value(method).unwrap(), json!(method.name()));
        }
    }

    #[test]
    fn redirect_uris_follow_the_native_and_web_rules() {
        for good in [
            "https://claude.example/api/callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "http://[::1]:8080/cb",
            "com.example.app:/oauth2redirect",
        ] {
            assert!(check_redirect_uri(good).is_ok(), "{good}");
        }
        for bad in [
            "--k.app:*",
            "0.a:/x",
            "https://a]b/cb",
            "https://a[b]/cb",
            "http://example.com/cb",
            "https://x/cb#frag",
            "javascript:alert(1)",
            "https:///cb",
            "https://u@x/cb",
            "https://x/c b",
            "https://[zz]/cb",
            "com.example.app://[0\u{e9}]/cb",
            "cb",
        ] {
            assert!(check_redirect_uri(bad).is_err(), "{bad}");
        }
    }
}
