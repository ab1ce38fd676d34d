//! What a handler gets: the parsed request, decided before dispatch.

use std::net::IpAddr;

use hyper::HeaderMap;
use hyper::body::Bytes;

use super::router::percent_decode_with;
use crate::args::Args;
use crate::crypto::jcs::RequestFault;
use crate::error::{Error, Result};
use crate::store::agents::AgentRow;
use serde_json::Value;

/// Who is calling, as `api::dispatch` established it from the route's [`crate::operations::Auth`].
#[derive(Debug, Default)]
pub enum Caller {
    /// No credential was checked by dispatch: public, capability, action and provider routes
    /// (their handler checks the id or signature), agent-or-payment routes (the handler
    /// authenticates: the key is optional there) and MCP (per message).
    #[default]
    Anonymous,
    /// An authenticated agent.
    Agent(Box<AgentRow>),
    /// The operator.
    Operator,
    /// The operator at the console, with their session (routes of kind `Auth::Console`).
    Console(crate::service::identity::console::Session),
}

/// One request, with its body already read (within the size cap).
pub struct Ctx {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub client_ip: IpAddr,
    pub request_id: String,
    pub params: Vec<String>,
    /// Set by dispatch before the handler runs.
    pub caller: Caller,
}

impl Ctx {
    /// The agent dispatch authenticated (routes of kind `Auth::Agent`).
    ///
    /// # Errors
    /// `INTERNAL` when the route did not declare an agent (a bug, not a client error).
    pub fn agent(&self) -> Result<&AgentRow> {
        match &self.caller {
            Caller::Agent(agent) => Ok(agent),
            _ => Err(Error::Internal(format!(
                "{} {} reads an agent its route does not declare",
                self.method, self.path
            ))),
        }
    }

    /// A request header's value, trimmed; `None` when absent, empty or not text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    }

    /// Whether the `Content-Type` allows a JSON body: `application/json` (parameters such as
    /// `charset=utf-8` allowed) or none at all (tolerated, as most clients send JSON bodies
    /// without thinking about it); false when there is one and it names another type.
    pub fn json_content_type(&self) -> bool {
        !self.headers.contains_key(hyper::header::CONTENT_TYPE)
            || self.media_type_is("application/json")
    }

    /// Whether `Content-Type` names `media` (parameters such as `charset` aside).
    pub fn media_type_is(&self, media: &str) -> bool {
        self.headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|text| {
                text.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .eq_ignore_ascii_case(media)
            })
    }

    /// The first path parameter (the id of the resource the route names).
    pub fn param(&self) -> &str {
        self.params.first().map_or("", String::as_str)
    }

    /// The JSON body's `api_key` (a marketplace body may carry the key) and the body without
    /// it, from one parse. The key, when sent, is a non-empty string.
    ///
    /// # Errors
    /// As [`Ctx::json_args`]; `INVALID_ARGUMENT` for an `api_key` that is not a non-empty string.
    pub fn body_key_and_args(&self) -> Result<(Option<String>, Args)> {
        let mut args = self.json_args()?;
        match args.take("api_key") {
            None => Ok((None, args)),
            Some(Value::String(key)) if !key.trim().is_empty() => Ok((Some(key), args)),
            Some(_) => Err(Error::invalid(
                "`api_key` must be a non-empty string (or send `Authorization: Bearer` instead)",
            )),
        }
    }

    /// The JSON body without its `api_key` member (which dispatch has already read).
    ///
    /// # Errors
    /// As [`Ctx::body_key_and_args`].
    pub fn body_args(&self) -> Result<Args> {
        Ok(self.body_key_and_args()?.1)
    }

    /// The first value of a query parameter.
    /// The value of the cookie `name` (RFC 6265 `Cookie` header), the first if sent twice.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.headers
            .get_all(hyper::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.trim())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The `Authorization: Bearer` token, if any.
    pub fn bearer(&self) -> Option<&str> {
        let value = self
            .headers
            .get(hyper::header::AUTHORIZATION)?
            .to_str()
            .ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
    }

    /// Whether the body is declared as an HTML form (`application/x-www-form-urlencoded`).
    pub fn form_content_type(&self) -> bool {
        self.media_type_is("application/x-www-form-urlencoded")
    }

    /// The body read as `application/x-www-form-urlencoded` pairs, in order (a body that is not
    /// UTF-8 reads as no pairs).
    pub fn form(&self) -> Vec<(String, String)> {
        parse_query(self.body_text().ok())
    }

    /// HTTP Basic credentials (RFC 7617), each part form-decoded as OAuth clients encode them
    /// (RFC 6749 §2.3.1).
    pub fn basic_auth(&self) -> Option<(String, String)> {
        use base64::Engine;
        let value = self
            .headers
            .get(hyper::header::AUTHORIZATION)?
            .to_str()
            .ok()?;
        let (scheme, encoded) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (id, secret) = text.split_once(':')?;
        Some((
            percent_decode_with(id, true),
            percent_decode_with(secret, true),
        ))
    }

    /// The body as UTF-8 text.
    ///
    /// # Errors
    /// `INVALID_JSON` when it is not UTF-8.
    pub fn body_text(&self) -> Result<&str> {
        std::str::from_utf8(&self.body)
            .map_err(|_| Error::InvalidJson("the body is not UTF-8".into()))
    }

    /// The body as a JSON object; an empty body counts as `{}`, except on a PATCH or a PUT,
    /// whose body the contract requires (a PATCH names what to change: `{}` changes nothing; a
    /// PUT replaces the whole resource: `{}` clears it; no body is a mistake for both).
    ///
    /// # Errors
    /// `INVALID_JSON` for malformed JSON or a PATCH or PUT without a body, `INVALID_ARGUMENT`
    /// for a non-object.
    pub fn json_args(&self) -> Result<Args> {
        let text = self.body_text()?;
        if text.trim().is_empty() {
            if self.method == "PATCH" {
                return Err(Error::InvalidJson(
                    "a PATCH needs a JSON object body naming the fields to change".into(),
                ));
            }
            if self.method == "PUT" {
                return Err(Error::InvalidJson(
                    "a PUT needs a JSON object body: it replaces the whole resource (`{}` clears it)"
                        .into(),
                ));
            }
            return Ok(Args::empty());
        }
        let value = crate::crypto::jcs::parse_request(text).map_err(|fault| match fault {
            RequestFault::Duplicate(reason) => Error::BadRequest {
                code: "DUPLICATE_MEMBER",
                message: format!(
                    "the body has a {reason}: send each member once (a reader that takes the first value would disagree with one that takes the last)"
                ),
            },
            RequestFault::Syntax(reason) => {
                Error::InvalidJson(format!("the body is not valid JSON: {reason}"))
            }
        })?;
        Args::from_value(value)
    }
}

/// Splits a query string into decoded pairs.
pub fn parse_query(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                percent_decode_with(key, true),
                percent_decode_with(value, true),
            )
        })
        .collect()
}
