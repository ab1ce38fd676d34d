//! The A2A face (A2A 1.0.1): agent cards, and the JSON-RPC and HTTP+JSON bindings of the
//! marketplace's endpoint (`/a2a`) and of every agent's (`/a2a/agents/{handle}`: A2A's
//! multi-tenancy by sub-path; a JSON-RPC request to `/a2a` with `params.tenant` = a handle is
//! the same as one to that agent's endpoint). Both bindings read a request into one [`Method`]
//! and its parameters and call [`run::run`], the face's one dispatch.
//!
//! Every request states `A2A-Version: 1.0` (header, or query parameter); none, which A2A reads
//! as 0.3, or another major version is `VERSION_NOT_SUPPORTED`. The Bearer credential (an API
//! key or an OAuth access token) is read as REST and MCP read it.

pub mod card;
mod fault;
mod run;
mod stream;
mod tasks;
pub mod wire;

use hyper::body::Bytes;
use serde_json::{Map, Value, json};

use crate::crypto::jcs::RequestFault;
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::{RawReply, Reply};
use crate::request::agents::Lookup;
use crate::service::App;
use crate::service::identity::agents::{self, Client};
use crate::service::identity::oauth::{self, Bearer};
pub use fault::Fault;
pub use run::{Endpoint, Method};

/// `GET /.well-known/agent-card.json`: the marketplace's signed card.
pub fn marketplace_card(app: &App) -> Reply {
    card_reply(&card::marketplace(app))
}

/// `GET /a2a/agents/{handle}/.well-known/agent-card.json`: an agent's signed public card.
///
/// # Errors
/// `NOT_FOUND` for a handle no agent has; `RATE_LIMITED` past the lookup limit.
pub async fn agent_card(app: &App, ctx: &Ctx) -> Result<Reply> {
    let request = Lookup {
        handle: Some(ctx.param().to_owned()),
        name: None,
    };
    let ip = ctx.client_ip.to_string();
    let found = agents::lookup(app, request, &Client { ip: &ip }).await?;
    let public = found
        .agents
        .into_iter()
        .next()
        .ok_or_else(|| Error::NotFound(format!("no agent with handle {:?}", ctx.param())))?;
    Ok(card_reply(&card::agent(app, &public)))
}

/// `GET /a2a/jwks.json`: the keys that sign the cards (the `jku` of their signatures).
pub fn jwks(app: &App) -> Reply {
    raw(
        200,
        "application/json",
        &card::jwks(app),
        vec![("cache-control", "public, max-age=300".into())],
    )
}

fn card_reply(card: &Value) -> Reply {
    raw(
        200,
        "application/json",
        card,
        vec![
            ("cache-control", "public, max-age=300".into()),
            ("etag", card::etag(card)),
        ],
    )
}

fn raw(
    status: u16,
    content_type: &'static str,
    body: &Value,
    headers: Vec<(&'static str, String)>,
) -> Reply {
    Reply::Raw(RawReply {
        status,
        content_type,
        body: Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
        headers,
    })
}

/// Whom a request at this route addresses: the marketplace, or the agent its path names.
fn endpoint_of(ctx: &Ctx, agent_route: bool) -> Endpoint {
    if agent_route {
        Endpoint::Agent(ctx.param().to_owned())
    } else {
        Endpoint::Marketplace
    }
}

/// Whether the request activates the a2a-x402 extension (`A2A-Extensions`, or the older
/// `X-A2A-Extensions`, naming one of its URIs) on a server whose x402 rail is configured.
fn x402_active(app: &App, ctx: &Ctx) -> bool {
    app.x402.is_some()
        && ["a2a-extensions", "x-a2a-extensions"].iter().any(|name| {
            ctx.header(name).is_some_and(|value| {
                value
                    .split(',')
                    .any(|uri| card::X402_EXTENSIONS.contains(&uri.trim()))
            })
        })
}

/// The `A2A-Extensions` answer header: the extensions this request activated.
fn echo_of(app: &App, ctx: &Ctx) -> Vec<(&'static str, String)> {
    if x402_active(app, ctx) {
        vec![("a2a-extensions", card::X402_EXTENSION.to_owned())]
    } else {
        Vec::new()
    }
}

/// The request's A2A version, if it is one this server speaks.
fn check_version(ctx: &Ctx) -> std::result::Result<(), Fault> {
    let asked = ctx
        .header("a2a-version")
        .or_else(|| {
            ctx.query
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case("a2a-version"))
                .map(|(_, value)| value.as_str())
        })
        .unwrap_or_default();
    if asked.split('.').next() == Some("1") {
        Ok(())
    } else {
        Err(Fault::version(asked))
    }
}

/// The Bearer credential's holder, `None` without one.
async fn caller(app: &App, ctx: &Ctx) -> std::result::Result<Option<Bearer>, Fault> {
    if !ctx.headers.contains_key(hyper::header::AUTHORIZATION) {
        return Ok(None);
    }
    let Some(token) = ctx.bearer() else {
        return Err(Error::Unauthenticated(
            "only `Authorization: Bearer <API key or OAuth access token>` is accepted".into(),
        )
        .into());
    };
    Ok(Some(oauth::authenticate(app, token).await?))
}

fn json_body(ctx: &Ctx) -> std::result::Result<Value, Fault> {
    let declared = ctx.headers.contains_key(hyper::header::CONTENT_TYPE);
    if declared
        && !ctx.media_type_is("application/json")
        && !ctx.media_type_is("application/a2a+json")
    {
        return Err(Fault {
            http: 415,
            ..Fault::invalid_request("send the request as application/json or application/a2a+json")
        });
    }
    if ctx.body.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    // The strict reader REST bodies go through: a member sent twice is refused, not guessed.
    let text = std::str::from_utf8(&ctx.body).map_err(|_| Fault::parse("the body is not UTF-8"))?;
    crate::crypto::jcs::parse_request(text).map_err(|fault| match fault {
        RequestFault::Duplicate(reason) => {
            Fault::invalid_request(format!("the body has a {reason}: send each member once"))
        }
        RequestFault::Syntax(reason) => Fault::parse(format!("the body is not JSON: {reason}")),
    })
}

/// The tenant a request names must be the endpoint's: at `/a2a` it chooses the agent; at an
/// agent's endpoint it may only repeat that agent's handle.
fn with_tenant(endpoint: Endpoint, params: &Value) -> std::result::Result<Endpoint, Fault> {
    let tenant = params
        .get("tenant")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    match (endpoint, tenant) {
        (endpoint, None) => Ok(endpoint),
        (Endpoint::Marketplace, Some(tenant)) => Ok(Endpoint::Agent(tenant.to_owned())),
        (Endpoint::Agent(handle), Some(tenant)) if tenant.eq_ignore_ascii_case(&handle) => {
            Ok(Endpoint::Agent(handle))
        }
        (Endpoint::Agent(handle), Some(tenant)) => Err(Fault::invalid_params(format!(
            "tenant {tenant:?} is not this endpoint's ({handle:?})"
        ))),
    }
}

/// A method's answer, with what a stream of it needs.
struct Answered {
    method: Method,
    value: Value,
    who: Option<Bearer>,
}

impl Answered {
    /// The answer as a stream of events: a send's answer (followed while its task is worked
    /// on), or a subscription's task (followed until it is over).
    fn stream(self, framing: stream::Framing, headers: Vec<(&'static str, String)>) -> Reply {
        let buyer = self.who.map(|who| who.agent);
        match (self.method, buyer) {
            (Method::SubscribeToTask, Some(buyer)) => {
                stream::subscription(self.value, buyer, framing)
            }
            (_, buyer) => stream::of_answer(self.value, framing, buyer, headers),
        }
    }
}

/// Runs `method` for the request: its endpoint (the route's, or the tenant's), its credential.
async fn call(
    app: &App,
    ctx: &Ctx,
    agent_route: bool,
    method: Method,
    params: Value,
) -> std::result::Result<Answered, Fault> {
    let endpoint = with_tenant(endpoint_of(ctx, agent_route), &params)?;
    let who = caller(app, ctx).await?;
    let ip = ctx.client_ip.to_string();
    let x402 = x402_active(app, ctx);
    let client = Client { ip: &ip };
    let value = run::run(app, &endpoint, method, params, who.as_ref(), &client, x402).await?;
    Ok(Answered { method, value, who })
}

/// `POST /a2a`, `POST /a2a/agents/{handle}`: the JSON-RPC binding (one request per call; A2A
/// defines no batches). Errors are JSON-RPC error objects with HTTP 200, except a refused
/// credential (HTTP 401).
pub async fn rpc(app: &App, ctx: &Ctx, agent_route: bool) -> Reply {
    let mut id = Value::Null;
    let result = async {
        let envelope = json_body(ctx)?;
        let Value::Object(mut envelope) = envelope else {
            return Err(Fault::invalid_request(
                "a JSON-RPC request is one object (A2A defines no batches)",
            ));
        };
        id = envelope.remove("id").unwrap_or(Value::Null);
        if !matches!(id, Value::String(_) | Value::Number(_)) {
            id = Value::Null;
            return Err(Fault::invalid_request("`id` must be a string or a number"));
        }
        if envelope.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(Fault::invalid_request("`jsonrpc` must be \"2.0\""));
        }
        let Some(Value::String(name)) = envelope.remove("method") else {
            return Err(Fault::invalid_request("`method` must be a string"));
        };
        check_version(ctx)?;
        let method = Method::named(&name)?;
        let params = envelope.remove("params").unwrap_or_else(|| json!({}));
        if !params.is_object() {
            return Err(Fault::invalid_request("`params` must be an object"));
        }
        call(app, ctx, agent_route, method, params).await
    }
    .await;
    let echo = echo_of(app, ctx);
    match result {
        Ok(answered) if answered.method.streams() => {
            answered.stream(stream::Framing::Rpc(id), echo)
        }
        Ok(answered) => raw(
            200,
            "application/json",
            &json!({"jsonrpc": "2.0", "id": id, "result": answered.value}),
            echo,
        ),
        Err(fault) => {
            let body = json!({"jsonrpc": "2.0", "id": id, "error": fault.rpc_error()});
            // A body that is not one request (-32700, -32600) is refused as HTTP, as MCP's is;
            // a request's own errors travel with 200, which A2A clients read.
            let status = match fault.code {
                _ if fault.is_unauthenticated() => 401,
                -32700 | -32600 => 400,
                _ => 200,
            };
            raw(
                status,
                "application/json",
                &body,
                fault_headers(app, &fault),
            )
        }
    }
}

fn fault_headers(app: &App, fault: &Fault) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if fault.is_unauthenticated() {
        headers.push((
            "www-authenticate",
            format!(
                "Bearer resource_metadata=\"{}\"",
                app.url("/.well-known/oauth-protected-resource")
            ),
        ));
    }
    if let Some(seconds) = fault.retry_after {
        headers.push(("retry-after", seconds.to_string()));
    }
    headers
}

/// An HTTP+JSON binding route: which method it is, and where its parameters come from.
#[derive(Clone, Copy, Debug)]
pub enum Rest {
    /// `POST …/message:send`.
    Send,
    /// `POST …/message:stream`.
    Stream,
    /// `POST` or `GET …/tasks/{id}:subscribe`.
    Subscribe,
    /// A route of a method this server does not offer (push notification configs, the extended
    /// card), by the method's name: answered with its A2A error.
    Unoffered(&'static str),
    /// `GET …/tasks/{id}`.
    GetTask,
    /// `GET …/tasks`.
    ListTasks,
    /// `POST …/tasks/{id}:cancel`.
    CancelTask,
}

/// The HTTP+JSON binding: the answer is the method's result as the body; an error is a
/// `google.rpc.Status` under `error`, with the HTTP status of A2A's table.
pub async fn rest(app: &App, ctx: &Ctx, route: Rest, agent_route: bool) -> Reply {
    let result = async {
        check_version(ctx)?;
        let (method, params) = match route {
            Rest::Send => (Method::SendMessage, json_body(ctx)?),
            Rest::Stream => (Method::SendStreamingMessage, json_body(ctx)?),
            Rest::Subscribe => (Method::SubscribeToTask, json!({"id": ctx.param()})),
            Rest::Unoffered(name) => (Method::named(name)?, json!({})),
            Rest::CancelTask => {
                let mut params = json_body(ctx)?;
                let Some(members) = params.as_object_mut() else {
                    return Err(Fault::invalid_params("the body must be an object"));
                };
                members.insert("id".into(), ctx.param().into());
                (Method::CancelTask, params)
            }
            Rest::GetTask => (Method::GetTask, json!({"id": ctx.param()})),
            Rest::ListTasks => (Method::ListTasks, list_query(ctx)?),
        };
        call(app, ctx, agent_route, method, params).await
    }
    .await;
    let media = if ctx.media_type_is("application/a2a+json")
        || ctx
            .header("accept")
            .is_some_and(|accept| accept.contains("application/a2a+json"))
    {
        "application/a2a+json"
    } else {
        "application/json"
    };
    match result {
        Ok(answered) if answered.method.streams() => {
            answered.stream(stream::Framing::Rest, echo_of(app, ctx))
        }
        Ok(answered) => raw(200, media, &answered.value, echo_of(app, ctx)),
        Err(fault) => raw(
            fault.http,
            media,
            &fault.status_body(),
            fault_headers(app, &fault),
        ),
    }
}

/// `GET …/tasks`' query as `ListTasksRequest` members (camelCase, numbers and booleans read).
fn list_query(ctx: &Ctx) -> std::result::Result<Value, Fault> {
    let mut params = Map::new();
    for (key, value) in &ctx.query {
        let read = match key.as_str() {
            "contextId" | "status" | "pageToken" | "statusTimestampAfter" => {
                Value::from(value.as_str())
            }
            "pageSize" | "historyLength" => value
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| Fault::invalid_params(format!("`{key}` must be a whole number")))?,
            "includeArtifacts" => match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(Fault::invalid_params(
                        "`includeArtifacts` must be true or false",
                    ));
                }
            },
            _ => continue,
        };
        if params.insert(key.clone(), read).is_some() {
            return Err(Fault::invalid_params(format!(
                "`{key}` is given more than once"
            )));
        }
    }
    Ok(Value::Object(params))
}
