//! The HTTP answers of the MCP endpoint: JSON-RPC result and error bodies, and the refusals of
//! a request as a whole (401 with the OAuth challenge, 403 for a missing scope, 405, 415).

use hyper::body::Bytes;
use serde_json::{Map, Value, json};

use super::{ALLOW, INVALID_REQUEST, Outcome, missing_key};
use crate::http::request::Ctx;
use crate::http::response::{RawReply, Reply};
use crate::request::Scope;
use crate::service::App;
use crate::service::identity::oauth::{self, Bearer};

/// An HTTP answer: status, optional JSON body, extra headers.
pub(crate) struct Answer {
    status: u16,
    body: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl Answer {
    pub(super) fn json(status: u16, body: Value) -> Answer {
        Answer {
            status,
            body: Some(body),
            headers: Vec::new(),
        }
    }

    /// 202 without a body (a notification or a client's response).
    pub(super) fn accepted() -> Answer {
        Answer {
            status: 202,
            body: None,
            headers: Vec::new(),
        }
    }

    pub(super) fn into_reply(self) -> Reply {
        let (content_type, body) = match self.body {
            Some(value) => (
                "application/json",
                Bytes::from(serde_json::to_vec(&value).expect("a Value always serializes")),
            ),
            None => ("text/plain; charset=utf-8", Bytes::new()),
        };
        Reply::Raw(RawReply {
            status: self.status,
            content_type,
            body,
            headers: self.headers,
        })
    }
}

/// A JSON-RPC error object.
pub(crate) struct RpcError {
    pub(super) code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    pub(super) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(super) fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }
}

/// A JSON-RPC error response; `id: None` leaves the member out (errors about the HTTP request
/// as a whole), `Some(Null)` writes `"id": null` (an unreadable request).
pub(super) fn error_body(id: Option<&Value>, error: RpcError) -> Value {
    let mut object = json!({ "code": error.code, "message": error.message });
    if let Some(data) = error.data {
        object["data"] = data;
    }
    let mut body = Map::new();
    body.insert("jsonrpc".into(), "2.0".into());
    if let Some(id) = id {
        body.insert("id".into(), id.clone());
    }
    body.insert("error".into(), object);
    Value::Object(body)
}

/// A JSON-RPC "Invalid Request" error response: `Invalid Request: {detail}`.
pub(super) fn invalid_request(id: &Value, detail: impl std::fmt::Display) -> Value {
    error_body(
        Some(id),
        RpcError::new(INVALID_REQUEST, format!("Invalid Request: {detail}")),
    )
}

pub(super) fn result_body(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// An error about the request as a whole, with a bourse error code in `data`.
pub(super) fn refusal(status: u16, code: &str, message: &str) -> Answer {
    Answer::json(
        status,
        error_body(
            None,
            RpcError::new(INVALID_REQUEST, message)
                .with_data(json!({ "status": status, "code": code })),
        ),
    )
}

/// 401: no credential where one is needed, or one that does not authenticate (`invalid`). The
/// challenge points OAuth clients at the protected-resource metadata (RFC 9728 §5.1).
pub(super) fn unauthorized(
    app: &App,
    ctx: &Ctx,
    id: Option<&Value>,
    message: &str,
    invalid: bool,
) -> Answer {
    let mut answer = Answer::json(
        401,
        error_body(
            id,
            RpcError::new(INVALID_REQUEST, format!("Unauthorized: {message}"))
                .with_data(json!({ "status": 401, "code": "UNAUTHENTICATED" })),
        ),
    );
    let error = invalid.then_some(("invalid_token", message));
    answer.headers.push((
        "www-authenticate",
        oauth::challenge(app, &ctx.path, oauth::default_scopes(), error),
    ));
    answer
}

/// 403: an access token without the scope a tool needs. The challenge names the scopes to ask
/// for (what the token holds plus the missing one), so a client can step up (RFC 6750 §3.1).
pub(super) fn insufficient_scope(
    app: &App,
    ctx: &Ctx,
    id: Option<&Value>,
    held: oauth::Scopes,
    needed: Scope,
    tool: &str,
) -> Answer {
    let message = format!(
        "the tool {tool} needs the OAuth scope `{needed}`, and this access token holds `{held}`; authorize again asking for it (an API key holds every scope)",
        needed = needed.name()
    );
    let mut answer = Answer::json(
        403,
        error_body(
            id,
            RpcError::new(INVALID_REQUEST, format!("Forbidden: {message}")).with_data(json!({
                "status": 403,
                "code": "INSUFFICIENT_SCOPE",
                "scope": needed.name(),
            })),
        ),
    );
    answer.headers.push((
        "www-authenticate",
        oauth::challenge(
            app,
            &ctx.path,
            held.with(needed),
            Some(("insufficient_scope", &message)),
        ),
    ));
    answer
}

pub(super) fn method_not_allowed(message: &str) -> Answer {
    let mut answer = refusal(405, "METHOD_NOT_ALLOWED", message);
    answer.headers.push(("allow", ALLOW.into()));
    answer
}

/// The HTTP answer to a request refused for its credential: 401 without one, 403 for a token
/// without the tool's scope.
pub(super) fn credential_refusal(
    app: &App,
    ctx: &Ctx,
    who: Option<&Bearer>,
    id: &Value,
    method: &str,
    outcome: Outcome,
) -> Answer {
    match outcome {
        Outcome::NeedsScope { tool, needed } => insufficient_scope(
            app,
            ctx,
            Some(id),
            who.map_or_else(oauth::Scopes::default, |who| who.scopes),
            needed,
            tool,
        ),
        _ => unauthorized(app, ctx, Some(id), &missing_key(method), false),
    }
}
