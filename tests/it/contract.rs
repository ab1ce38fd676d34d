//! The contract validates: every example in `assets/openapi.json` is valid against the schema
//! it illustrates (JSON Schema 2020-12, formats asserted, `$ref`s resolved within the
//! document), the server serves that very document, and the enums that name server-side
//! vocabulary list what the running server serves.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::support::TestServer;
use crate::support::mcp::rpc;

/// The file the server embeds and serves at `/openapi.json`.
fn document_bytes() -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/openapi.json");
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn document() -> Value {
    serde_json::from_slice(&document_bytes()).expect("assets/openapi.json is JSON")
}

/// The base URI under which the whole document is registered, so that a schema anywhere in it
/// is `BASE#<pointer>` and its `#/components/schemas/...` references resolve within it.
const BASE: &str = "urn:bourse:openapi.json";

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON pointer as a URI fragment: characters a fragment may not hold percent-encoded.
fn fragment(pointer: &str) -> String {
    let mut out = String::new();
    for byte in pointer.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn pointer(path: &[String]) -> String {
    path.iter().map(|t| format!("/{}", escape(t))).collect()
}

/// One example and the schema it illustrates, both as JSON pointers into the document.
struct Example {
    at: String,
    schema: String,
    value: Value,
}

/// Members whose values are maps of names (not keywords): an `example` member inside one is a
/// name, not an example.
const NAME_MAPS: [&str; 10] = [
    "properties",
    "patternProperties",
    "$defs",
    "dependentSchemas",
    "schemas",
    "paths",
    "webhooks",
    "content",
    "responses",
    "headers",
];

/// Every example in the document: `example` and `examples.*.value` of media types,
/// parameters and headers (against their `schema`), and `example` and `examples[*]` of schemas
/// (against the schema itself), wherever they sit: paths, webhooks and components.
fn collect(value: &Value, path: &mut Vec<String>, out: &mut Vec<Example>) {
    match value {
        Value::Object(map) => {
            let names = path.last().is_some_and(|last| {
                NAME_MAPS.contains(&last.as_str())
                    || (last == "examples" && path.len() == 2 && path[0] == "components")
            });
            if !names {
                let here = pointer(path);
                let has_schema = map.get("schema").is_some_and(Value::is_object);
                let schema = if has_schema {
                    format!("{here}/schema")
                } else {
                    here.clone()
                };
                if let Some(example) = map.get("example") {
                    out.push(Example {
                        at: format!("{here}/example"),
                        schema: schema.clone(),
                        value: example.clone(),
                    });
                }
                match map.get("examples") {
                    Some(Value::Object(named)) if has_schema => {
                        for (name, example) in named {
                            let at = format!("{here}/examples/{}", escape(name));
                            let value = example
                                .get("value")
                                .unwrap_or_else(|| panic!("{at} has no inline `value`"));
                            out.push(Example {
                                at: format!("{at}/value"),
                                schema: schema.clone(),
                                value: value.clone(),
                            });
                        }
                    }
                    Some(Value::Array(list)) if !has_schema => {
                        for (i, example) in list.iter().enumerate() {
                            out.push(Example {
                                at: format!("{here}/examples/{i}"),
                                schema: schema.clone(),
                                value: example.clone(),
                            });
                        }
                    }
                    Some(other) => {
                        panic!("{here}/examples is neither a named map nor a list: {other}")
                    }
                    None => {}
                }
            }
            for (key, member) in map {
                // An example is data: a member of it named `example` or `schema` (x402 Bazaar's
                // `info.output.example`, its `schema`) is no keyword.
                if key.starts_with("x-") || (!names && (key == "example" || key == "examples")) {
                    continue;
                }
                path.push(key.clone());
                collect(member, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                collect(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

#[test]
fn every_example_validates_against_its_schema() {
    let doc = document();
    let mut examples = Vec::new();
    collect(&doc, &mut Vec::new(), &mut examples);

    let registry = jsonschema::Registry::new()
        .add(BASE, &doc)
        .expect("the document registers as a resource")
        .prepare()
        .expect("every reference in the document resolves");
    let mut validators = BTreeMap::new();
    let mut failures = Vec::new();
    for example in &examples {
        let validator = validators.entry(example.schema.clone()).or_insert_with(|| {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .with_registry(&registry)
                .build(&json!({ "$ref": format!("{BASE}#{}", fragment(&example.schema)) }))
                .unwrap_or_else(|e| panic!("schema {}: {e}", example.schema))
        });
        for error in validator.iter_errors(&example.value) {
            failures.push(format!(
                "{} (schema {}): at `{}`: {error}",
                example.at,
                example.schema,
                error.instance_path().as_str()
            ));
        }
    }
    println!(
        "{} examples checked against {} schemas",
        examples.len(),
        validators.len()
    );
    assert!(
        failures.is_empty(),
        "{} errors in examples:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every kind of place holds examples; a walk that finds far fewer has lost some.
    for kind in [
        "/requestBody/content/",
        "/responses/",
        "/parameters/",
        "/components/schemas/",
        "/components/responses/",
        "/webhooks/",
    ] {
        assert!(
            examples.iter().any(|e| e.at.contains(kind)),
            "no example found under {kind}"
        );
    }
    assert!(
        examples.len() >= 290,
        "only {} examples found",
        examples.len()
    );
}

#[test]
fn the_served_document_is_the_file() {
    let server = TestServer::start();
    let served = server.get("/openapi.json");
    assert_eq!(served.status, 200);
    // The same bytes, but for `servers`, which names this instance.
    let text = String::from_utf8(served.body.clone()).unwrap();
    let as_documented = text.replacen(
        &format!("\"url\": \"{}\"", server.base),
        "\"url\": \"http://127.0.0.1:8080\"",
        1,
    );
    assert!(
        as_documented.as_bytes() == document_bytes(),
        "GET /openapi.json differs from assets/openapi.json beyond `servers`"
    );
    let served: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(served["servers"][0]["url"], server.base);
}

#[test]
fn the_documents_name_the_instances_public_url() {
    let server = TestServer::start_with(|config| {
        config.public_url = Some("https://market.example".into());
    });
    let document: Value = server.get("/openapi.json").json();
    assert_eq!(document["servers"][0]["url"], "https://market.example");
    let llms = server.get("/llms.txt").text();
    assert!(
        llms.contains("BASE=https://market.example"),
        "the walkthrough's base"
    );
    assert!(
        !llms.contains("http://127.0.0.1:8080"),
        "no URL of the default address is left"
    );
}

/// The `enum` at `pointer` in the document, as a set of strings (a `null` member left out).
fn enum_at(doc: &Value, pointer: &str) -> BTreeSet<String> {
    doc.pointer(pointer)
        .and_then(|schema| schema["enum"].as_array())
        .unwrap_or_else(|| panic!("no enum at {pointer}"))
        .iter()
        .filter(|v| !v.is_null())
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("{pointer}: {v}"))
                .to_owned()
        })
        .collect()
}

fn strings(values: impl IntoIterator<Item = Value>, member: &str) -> BTreeSet<String> {
    values
        .into_iter()
        .map(|v| {
            v[member]
                .as_str()
                .unwrap_or_else(|| panic!("{v}"))
                .to_owned()
        })
        .collect()
}

/// The index of the parameter named `name` of an operation, as a pointer to its schema.
fn parameter_schema(doc: &Value, operation: &str, name: &str) -> String {
    let parameters = doc
        .pointer(&format!("{operation}/parameters"))
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{operation} has no parameters"));
    let index = parameters
        .iter()
        .position(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{operation} has no parameter {name}"));
    format!("{operation}/parameters/{index}/schema")
}

#[test]
fn enums_of_server_vocabulary_match_what_the_server_serves() {
    let doc = document();
    let server = TestServer::start();

    // MCP tools: the names `tools/list` answers, with and without a key.
    let listed = rpc(&server, None, "tools/list", json!({})).ok()["result"]["tools"].clone();
    let served = strings(listed.as_array().unwrap().clone(), "name");
    assert_eq!(
        enum_at(&doc, "/components/schemas/McpTool/properties/name"),
        served,
        "McpTool.name against tools/list"
    );
    let key = server.register("contract-tools")["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = rpc(&server, Some(&key), "tools/list", json!({})).ok()["result"]["tools"].clone();
    assert_eq!(
        strings(listed.as_array().unwrap().clone(), "name"),
        served,
        "tools/list with a key"
    );

    // MCP protocol revisions: the manifest's list, and the header the POST accepts.
    let manifest = server.get("/api/mcp").ok();
    let versions: BTreeSet<String> = manifest["protocolVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let header = parameter_schema(&doc, "/paths/~1api~1mcp/post", "MCP-Protocol-Version");
    assert_eq!(enum_at(&doc, &header), versions, "MCP-Protocol-Version");

    // Categories: the slugs and classes `GET /api/marketplace/categories` answers.
    let categories = server.get("/api/marketplace/categories").ok();
    let categories = categories.as_array().unwrap().clone();
    let slugs = strings(categories.clone(), "slug");
    let classes = strings(categories, "class");
    let listings = "/paths/~1api~1marketplace~1listings/get";
    for pointer in [
        "/components/schemas/Category/properties/slug".to_owned(),
        "/components/schemas/Listing/properties/verticalCategory".to_owned(),
        parameter_schema(&doc, listings, "category"),
    ] {
        assert_eq!(enum_at(&doc, &pointer), slugs, "{pointer}");
    }
    for pointer in [
        "/components/schemas/Category/properties/class".to_owned(),
        parameter_schema(&doc, listings, "class"),
    ] {
        assert_eq!(enum_at(&doc, &pointer), classes, "{pointer}");
    }
}
