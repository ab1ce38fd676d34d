//! `tools/call` and the tool list: which tool a name is, the key rules for tool arguments, and
//! how a service result or error becomes a tool result.

use serde_json::{Map, Value, json};

use super::run::run;
use super::{INVALID_PARAMS, Outcome, RpcError, missing_key};
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::operations::Operation;
use crate::request::{Access, Face, Scope, Tool};
use crate::service::App;
use crate::service::identity::agents::{self, Client};
use crate::service::identity::oauth::Bearer;
use crate::store::agents::AgentRow;

pub(super) async fn call_tool(
    app: &App,
    ctx: &Ctx,
    who: Option<&Bearer>,
    params: Option<&Value>,
) -> Outcome {
    let mut agent = who.map(|who| &who.agent);
    let Some(params) = params.and_then(Value::as_object) else {
        return Outcome::Failed(RpcError::new(
            INVALID_PARAMS,
            "tools/call needs params {name, arguments}",
        ));
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Outcome::Failed(RpcError::new(
            INVALID_PARAMS,
            "tools/call needs params.name (a string)",
        ));
    };
    let Some((operation, op, tool)) = Operation::tool_named(name).and_then(|operation| {
        let op = operation.op()?;
        Some((operation, op, op.tool.as_ref()?))
    }) else {
        return Outcome::Failed(RpcError::new(
            INVALID_PARAMS,
            format!(
                "Unknown tool: {name}; this server offers {}",
                tool_names().join(", ")
            ),
        ));
    };
    // An access token reaches only the tools its scopes cover (an API key holds them all).
    if let (Some(who), Some(needed)) = (who, op.scope)
        && !who.scopes.contains(needed)
    {
        return Outcome::NeedsScope {
            tool: op.name,
            needed,
        };
    }
    // What only the agent's full key may do (the spending policy, the restricted keys: the
    // operations table says which), never through a token a hosted client holds or a restricted
    // key.
    if let Some(who) = who
        && operation.key_scope().is_none()
        && let Err(refused) = who.require_full_key("this tool")
    {
        return Outcome::Done(tool_failure(ctx, &op.respell(Face::Mcp, refused)));
    }
    // A public tool that speaks in the agent's name does so through a token only with the
    // `message` scope; without it, the call is anonymous.
    if let Some(who) = who
        && tool.access == Access::PublicInAgentsName
        && !who.scopes.contains(Scope::Message)
    {
        agent = None;
    }
    let mut arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            return Outcome::Failed(RpcError::new(
                INVALID_PARAMS,
                "params.arguments must be an object",
            ));
        }
    };
    let ip = ctx.client_ip.to_string();
    let client = Client { ip: &ip };
    let outcome = match tool.access {
        Access::Bearer => match (credential_argument(&arguments), agent) {
            (Some(key), _) => Err(Error::invalid(format!(
                "`{key}` is refused: MCP authenticates only with the `Authorization: Bearer <API key>` header, never with a key in tool arguments"
            ))),
            (None, Some(_)) => run(operation, app, agent, arguments, &client).await,
            (None, None) => Err(Error::Unauthenticated(missing_key(op.name))),
        },
        Access::Public | Access::PublicInAgentsName | Access::Keyed => {
            match check_key_argument(app, op.name, tool, agent, &mut arguments).await {
                Ok(()) => run(operation, app, agent, arguments, &client).await,
                Err(error) => Err(error),
            }
        }
    };
    // Services name fields in their REST spelling; the caller reads its own.
    let outcome = outcome.map_err(|error| op.respell(Face::Mcp, error));
    Outcome::Done(match outcome {
        Ok(value) => tool_success(value),
        Err(error) => tool_failure(ctx, &error),
    })
}

/// The marketplace tools' `api_key` argument: accepted only when a Bearer key authenticated the
/// call and the argument names the same agent; then removed, so it never stands in for the
/// header. Public tools take no key argument.
async fn check_key_argument(
    app: &App,
    name: &str,
    tool: &Tool,
    agent: Option<&AgentRow>,
    arguments: &mut Map<String, Value>,
) -> Result<()> {
    while let Some(key) = credential_argument(arguments).map(str::to_owned) {
        if tool.access != Access::Keyed {
            return Err(Error::invalid(format!(
                "`{key}` is not an argument of {name}: it is a public tool and needs no key"
            )));
        }
        let Some(agent) = agent else {
            return Err(Error::Unauthenticated(missing_key(name)));
        };
        // A non-empty string, as a REST body's `api_key` must be.
        let Some(Value::String(presented)) = arguments
            .shift_remove(&key)
            .filter(|value| value.as_str().is_some_and(|key| !key.is_empty()))
        else {
            return Err(Error::invalid(format!(
                "`{key}` must be a non-empty string"
            )));
        };
        let same = match agents::authenticate(app, Some(&presented)).await {
            Ok(named) => named.id == agent.id,
            Err(Error::Unauthenticated(_)) => false,
            Err(error) => return Err(error),
        };
        if !same {
            return Err(Error::Forbidden {
                code: "API_KEY_MISMATCH",
                message: format!(
                    "`{key}` does not name the agent of the `Authorization: Bearer` header; the header is the credential, and an `api_key` argument is accepted only when it is the same key"
                ),
            });
        }
    }
    Ok(())
}

/// An argument named like an API key (`api_key`, `apiKey`, `API-KEY`, …), if any.
fn credential_argument(arguments: &Map<String, Value>) -> Option<&str> {
    arguments
        .keys()
        .find(|key| {
            let folded: String = key
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
                .to_ascii_lowercase();
            folded == "apikey"
        })
        .map(String::as_str)
}

fn tool_success(value: Value) -> Value {
    json!({
        "content": [{ "type": "text", "text": value.to_string() }],
        "structuredContent": value,
        "isError": false,
    })
}

fn tool_failure(ctx: &Ctx, error: &Error) -> Value {
    let status = error.status();
    if status >= 500 {
        tracing::error!(request_id = %ctx.request_id, %error, "MCP tool failed");
    }
    let mut detail = json!({
        "code": error.code(),
        "message": error.public_message(),
        "status": status,
    });
    let mut text = format!(
        "{} (HTTP {status}): {}",
        error.code(),
        error.public_message()
    );
    if let Error::RateLimited {
        retry_after_secs, ..
    }
    | Error::Busy {
        retry_after_secs, ..
    } = error
    {
        detail["retryAfterSecs"] = (*retry_after_secs).into();
        text.push_str(&format!(" (retry after {retry_after_secs} s)"));
    }
    if let Some(limit) = error.spend_limit() {
        detail["limit"] = serde_json::to_value(limit).unwrap_or(Value::Null);
    }
    if status >= 500 {
        detail["requestId"] = ctx.request_id.clone().into();
        text.push_str(&format!(" [request id {}]", ctx.request_id));
    }
    json!({
        "content": [{ "type": "text", "text": text }],
        "structuredContent": { "error": detail },
        "isError": true,
    })
}

// ---------------------------------------------------------------------------------------------
// The tool list

const KEY_NOTE: &str = "Authenticate with the `Authorization: Bearer <API key>` header; an \
     optional `api_key` argument is accepted only when it names the same agent as that header \
     and never replaces it.";

fn tool_names() -> Vec<&'static str> {
    Operation::tools()
        .filter_map(Operation::op)
        .map(|op| op.name)
        .collect()
}

/// `tools/list` (and the GET manifest): every operation with a tool, in table order.
pub(super) fn tools() -> Vec<Value> {
    Operation::tools().filter_map(descriptor).collect()
}

/// One tool's entry: its declaration's name, title and description, the input schema generated
/// from its fields (a keyed tool also lists the `api_key` argument the interface names).
fn descriptor(operation: Operation) -> Option<Value> {
    let op = operation.op()?;
    let tool = op.tool.as_ref()?;
    let (input_schema, description) = match tool.access {
        Access::Keyed => {
            let api_key = json!({
                "type": "string",
                "minLength": 1,
                "description": "Optional. Must be the same key as the Bearer header (it never replaces the header).",
            });
            (
                op.input_schema(&[("api_key", api_key)]),
                format!("{} {KEY_NOTE}", tool.description),
            )
        }
        Access::Public | Access::PublicInAgentsName | Access::Bearer => {
            (op.input_schema(&[]), tool.description.to_owned())
        }
    };
    Some(json!({
        "name": op.name,
        "title": tool.title,
        "description": description,
        "inputSchema": input_schema,
        "annotations": {
            "title": tool.title,
            "readOnlyHint": tool.read_only,
            "destructiveHint": false,
            "idempotentHint": tool.idempotent,
            "openWorldHint": false,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_arguments_are_recognised_in_any_spelling() {
        for key in ["api_key", "apiKey", "API-KEY", "apikey"] {
            let mut arguments = Map::new();
            arguments.insert(key.into(), "svc_live_x".into());
            assert_eq!(credential_argument(&arguments), Some(key));
        }
        let mut arguments = Map::new();
        arguments.insert("handle".into(), "A-1".into());
        assert_eq!(credential_argument(&arguments), None);
    }

    #[test]
    fn tool_names_follow_the_2025_11_25_format() {
        for tool in tools() {
            let name = tool["name"].as_str().unwrap();
            assert!(
                (1..=128).contains(&name.len())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)),
                "{name}"
            );
            assert_eq!(tool["inputSchema"]["type"], "object");
        }
    }
}
