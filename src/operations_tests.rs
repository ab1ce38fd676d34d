//! Unit tests of `operations.rs`: every row, route, tool and declaration is held to the table
//! and to the documents it promises.

use std::collections::BTreeSet;

use serde_json::Value;

use super::*;
use crate::request::{Access, Face};

#[test]
fn every_agent_or_operator_operation_is_unsigned_and_every_public_one_signed() {
    for operation in Operation::ALL {
        let signed = operation.is_signed();
        match operation.auth() {
            Auth::Public | Auth::Capability => assert!(signed, "{operation:?}"),
            Auth::Probe => assert!(!signed, "{operation:?}: probes are not signed"),
            _ => assert!(!signed, "{operation:?}"),
        }
        if operation.spec().body_key {
            assert!(
                matches!(operation.auth(), Auth::Agent | Auth::AgentOrPayment),
                "{operation:?}"
            );
        }
        if operation.spec().reuse {
            assert!(
                signed,
                "{operation:?} reuses a signed answer, so it must be signed"
            );
        }
    }
    assert!(!Operation::ReadInbox.is_signed());
    assert!(Operation::InquiryThread.is_signed());
    assert!(!Operation::SandboxPay.is_signed());
}

#[test]
fn an_operation_declares_a_path_parameter_exactly_when_its_templates_have_one() {
    for (_, template, operation) in Operation::routes() {
        assert_eq!(
            operation.param().is_some(),
            template.contains('{'),
            "{template}"
        );
    }
    assert!(
        Param::Id
            .check("00000000-0000-4000-8000-000000000000")
            .is_ok()
    );
    assert!(Param::Id.check("not-a-uuid").is_err());
    assert!(Param::Token.check("cs_AbC-_1").is_ok());
    assert!(Param::Token.check("cs_x/../y").is_err() && Param::Token.check("a b").is_err());
    assert!(Param::Handle.check("A-7K2M9QXP").is_ok() && Param::Handle.check("").is_err());
}

#[test]
fn every_operation_that_takes_a_body_says_whether_it_is_json() {
    // Operations taking a body that is not JSON (or none): forms, body-less twins, MCP, and
    // A2A (which also takes `application/a2a+json` and answers in its own error forms).
    let not_json = [
        Operation::RevokeKey,
        Operation::OperatorUnbindChair,
        Operation::McpPost,
        Operation::A2aRpc,
        Operation::A2aAgentRpc,
        Operation::A2aSend,
        Operation::A2aAgentSend,
        Operation::A2aStream,
        Operation::A2aAgentStream,
        Operation::A2aSubscribe,
        Operation::A2aPushConfigs,
        Operation::A2aCancelTask,
        Operation::McpDelete,
        Operation::SandboxPay,
        Operation::SandboxCancel,
        Operation::SandboxConnectComplete,
        Operation::SandboxPayForm,
        Operation::SandboxCancelForm,
        Operation::SandboxConnectForm,
        Operation::ApproveForm,
        Operation::DenyForm,
        Operation::ReplayCallback,
        Operation::OAuthAuthorizeForm,
        Operation::OAuthToken,
        Operation::OAuthRevoke,
        Operation::OperatorRevokeOAuthGrant,
        Operation::AgentRevokeOAuthGrant,
        Operation::RevokeRestrictedKey,
        Operation::ConsoleSignIn,
    ];
    for (method, template, operation) in Operation::routes() {
        // The console's forms are forms.
        let form = operation.auth() == Auth::Console;
        if ["POST", "PUT", "PATCH", "DELETE"].contains(&method) {
            assert!(
                operation.spec().json != (not_json.contains(&operation) || form),
                "{method} {template}: declare whether it reads a JSON body"
            );
        } else {
            assert!(!operation.spec().json, "{method} {template}");
        }
    }
}

/// Every row is reachable: on REST through a binding (declared once; `it::docs` holds them to
/// `assets/openapi.json`), on MCP through a listed tool; every tool is in the contract's
/// `McpTool` vocabulary, in table order, with a title and a description.
#[test]
fn every_operation_is_reachable_and_documented() {
    let openapi: Value = serde_json::from_str(include_str!("../assets/openapi.json")).unwrap();
    for operation in Operation::ALL {
        assert!(
            !operation.spec().rest.is_empty() || operation.tool().is_some(),
            "{operation:?} is reachable on no face"
        );
        if operation.tool().is_some() {
            assert!(
                operation.op().unwrap().scope.is_some() || operation.auth() == Auth::Public,
                "{operation:?}: a tool that needs an agent declares its OAuth scope"
            );
        }
    }
    // That the bindings are exactly openapi.json's paths: it::docs (against the served document).
    let bindings: BTreeSet<(&str, &str)> = Operation::routes().map(|(m, p, _)| (m, p)).collect();
    assert_eq!(
        bindings.len(),
        Operation::routes().count(),
        "a binding is declared twice"
    );
    let vocabulary: Vec<&str> = openapi
        .pointer("/components/schemas/McpTool/properties/name/enum")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let tools: Vec<&str> = Operation::tools().map(|o| o.op().unwrap().name).collect();
    assert_eq!(
        tools, vocabulary,
        "tools in table order against McpTool.name"
    );
    for operation in Operation::tools() {
        let tool = operation.tool().unwrap();
        assert!(
            !tool.title.is_empty() && !tool.description.is_empty(),
            "{operation:?}"
        );
        assert_eq!(
            Operation::tool_named(operation.op().unwrap().name),
            Some(operation)
        );
        if tool.access == Access::Bearer || tool.access == Access::Keyed {
            assert_ne!(operation.auth(), Auth::Operator, "{operation:?}");
        }
    }
}

/// Every declaration in `src/request/` is a row's: none is left out of the table (an `Op`
/// written but never offered would escape the parity test below).
#[test]
fn every_declaration_belongs_to_a_row() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/request");
    let mut declared = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.starts_with("pub static ") && line.ends_with(": Op = Op {") {
                let name = lines.next().unwrap().trim();
                let name = name
                    .strip_prefix("name: \"")
                    .and_then(|n| n.strip_suffix("\","));
                declared.insert(
                    name.unwrap_or_else(|| panic!("{line}: name first"))
                        .to_owned(),
                );
            }
        }
    }
    let rows: BTreeSet<String> = Operation::ALL
        .iter()
        .filter_map(|o| o.op())
        .map(|op| op.name.to_owned())
        .collect();
    assert!(declared.len() > 30, "found only {declared:?}");
    assert_eq!(
        declared, rows,
        "every `pub static …: Op` in src/request is a row's declaration"
    );
}

/// The fields a face accepts for an operation must be the ones its contract documents: the
/// OpenAPI request body or query parameters for REST, the served `inputSchema` for MCP. Path
/// parameters (an MCP argument such as `listing_id`) and the credential (`api_key`, which the
/// edge consumes before the request is read) are declared face differences.
#[test]
fn every_operation_accepts_on_each_face_what_its_contract_documents() {
    let openapi: Value = serde_json::from_str(include_str!("../assets/openapi.json")).unwrap();
    let schemas = &openapi["components"]["schemas"];
    let resolve = |schema: &Value| -> Value {
        match schema["$ref"].as_str() {
            Some(reference) => schemas[reference.rsplit('/').next().unwrap()].clone(),
            None => schema.clone(),
        }
    };
    let tools = crate::mcp::manifest()["tools"].as_array().unwrap().clone();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for operation in Operation::ALL {
        let Some(op) = operation.op() else {
            continue;
        };
        let declared = |face: Face| -> Vec<String> {
            let mut names: Vec<String> = op
                .on(face)
                .filter_map(|f| f.name(face))
                .map(str::to_owned)
                .collect();
            names.sort();
            names
        };
        for (method, path) in operation.spec().rest {
            let operation = &openapi["paths"][*path][method.to_ascii_lowercase()];
            assert!(
                operation.is_object(),
                "{method} {path} is not in openapi.json"
            );
            let mut documented: Vec<String> = if *method == "GET" {
                operation["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["in"] == "query")
                    .filter_map(|p| p["name"].as_str().map(str::to_owned))
                    .collect()
            } else {
                let body =
                    resolve(&operation["requestBody"]["content"]["application/json"]["schema"]);
                body["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default()
            };
            documented.retain(|name| name != "api_key");
            documented.sort();
            if documented != declared(Face::Rest) {
                problems.push(format!(
                    "{} on {method} {path}: openapi.json documents {documented:?}, the declaration accepts {:?}",
                    op.name,
                    declared(Face::Rest)
                ));
            }
        }
        // A declaration two rows share (an inquiry message) is one tool, checked once.
        if seen.contains(&op.name) {
            continue;
        }
        seen.push(op.name);
        let tool = tools.iter().find(|t| t["name"] == op.name);
        let Some(tool) = tool else {
            // An operation that declares no MCP field and names no tool is REST's alone.
            if op.on(Face::Mcp).next().is_some() {
                problems.push(format!("{} is not an MCP tool", op.name));
            }
            continue;
        };
        let mut served: Vec<String> = tool["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|name| *name != "api_key")
            .cloned()
            .collect();
        served.sort();
        if served != declared(Face::Mcp) {
            problems.push(format!(
                "{}: the tool's inputSchema has {served:?}, the declaration accepts {:?}",
                op.name,
                declared(Face::Mcp)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A body sent as another media type is refused with 415 exactly where the row says the
/// operation reads a JSON body, and the contract documents that answer there (and only there,
/// MCP's transport and A2A's bindings aside, which read their own media types).
#[test]
fn every_json_body_operation_documents_its_415() {
    let openapi: Value = serde_json::from_str(include_str!("../assets/openapi.json")).unwrap();
    for (method, path, operation) in Operation::routes() {
        let documented = &openapi["paths"][path][method.to_ascii_lowercase()];
        let has_415 = documented["responses"].get("415").is_some();
        let reads_json = documented["requestBody"]["content"]
            .get("application/json")
            .is_some();
        if operation.spec().json {
            assert!(
                has_415,
                "{method} {path} refuses other media types with 415: document it"
            );
            assert!(reads_json, "{method} {path} reads JSON: document its body");
        } else if !matches!(operation.auth(), Auth::Mcp | Auth::A2a) {
            assert!(!has_415, "{method} {path} documents a 415 it never answers");
        }
    }
}

/// What the reader refuses in a text field (blank, control characters, whitespace at the ends of
/// a token) the contract says too: each REST body field read as text carries the pattern its
/// kind implies, as its MCP schema does.
#[test]
fn every_text_field_of_a_body_states_the_pattern_its_reader_holds() {
    use crate::request::Kind;
    let openapi: Value = serde_json::from_str(include_str!("../assets/openapi.json")).unwrap();
    let schemas = &openapi["components"]["schemas"];
    let mut problems = Vec::new();
    for (method, path, operation) in Operation::routes() {
        let Some(op) = operation.op() else { continue };
        let body = &openapi["paths"][path][method.to_ascii_lowercase()]["requestBody"]["content"]["application/json"]
            ["schema"];
        let body = match body["$ref"].as_str() {
            Some(reference) => &schemas[reference.rsplit('/').next().unwrap()],
            None => body,
        };
        let Some(properties) = body["properties"].as_object() else {
            continue;
        };
        for field in op.on(Face::Rest) {
            if !field.documented.is_empty()
                || !matches!(
                    field.kind,
                    Kind::Text(_) | Kind::Token(_) | Kind::Paragraph(_)
                )
            {
                continue;
            }
            let wanted = field.schema();
            let documented = &properties[field.rest];
            // A closed list or a format (date, email) already says more than the pattern.
            if documented.get("enum").is_some() || documented.get("format").is_some() {
                continue;
            }
            if documented["pattern"] != wanted["pattern"] {
                problems.push(format!(
                    "{method} {path} `{}`: pattern {}",
                    field.rest, wanted["pattern"]
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
