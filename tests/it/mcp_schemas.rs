//! The MCP tools' `inputSchema`s against their handlers. For every tool `tools/list` offers,
//! cases are derived from the served schema alone: a required argument missing, a wrong type,
//! null, the empty string, each length, range and item bound and one past it, each enum value
//! and one outside, blank text, control characters and a bare word against the pattern, an
//! unknown member, each branch of a conditional. A JSON Schema validator confirms each case's
//! verdict before the call (the generator cannot mislabel one). A schema-invalid case must be
//! refused as invalid input (JSON-RPC `-32602` or a tool error `INVALID_ARGUMENT`; inside an
//! affirmation, its documented 422 `*_REQUIRED`); a schema-valid one may fail for business
//! reasons (not found, already rated, an unreachable endpoint), never as invalid input, never
//! with a 5xx. A few fixtures give the cases real ids, a recipient, an address and a URL.

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value, json};

use crate::support::mcp::{err, rpc};
use crate::support::{Resp, TestServer};

/// Tools whose caller is the seller (the buyer calls the others).
const SELLER_TOOLS: [&str; 7] = [
    "become_seller",
    "set_delivery_endpoint",
    "sell_data",
    "list_health_data",
    "update_listing",
    "deactivate_listing",
    "seller_dashboard",
];

/// A member no schema declares.
const UNKNOWN: &str = "unexpected_argument";

/// The rule the server holds arguments to: the served schema, and no argument it does not list
/// (refused whatever the schema says; the schema leaves `additionalProperties` out for the agent
/// SDKs' sake, see `request::Op::input_schema`).
fn closed(schema: &Value) -> Value {
    let mut closed = schema.clone();
    closed["additionalProperties"] = json!(false);
    closed
}

fn validator(schema: &Value) -> Validator {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(schema)
        .unwrap_or_else(|e| panic!("schema {schema}: {e}"))
}

fn accepts(schema: &Value, value: &Value) -> bool {
    validator(schema).is_valid(value)
}

/// The JSON type names `schema` allows.
fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(kind) => vec![kind.as_str()],
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn type_allowed(schema: &Value, value: &Value) -> bool {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let kinds = types(schema);
    kinds.contains(&kind) || (kind == "integer" && kinds.contains(&"number"))
}

fn bound(schema: &Value, key: &str) -> Option<usize> {
    schema[key].as_u64().map(|n| n as usize)
}

/// `text` cut, or padded with `a` at the end, to exactly `chars` characters.
fn fit(text: &str, chars: usize) -> String {
    let mut text: String = text.chars().take(chars).collect();
    while text.chars().count() < chars {
        text.push('a');
    }
    text
}

/// `target` with `value` at `path` (members by name, array items by index).
fn with(target: &Value, path: &[String], value: Value) -> Value {
    let mut target = target.clone();
    let (last, parents) = path.split_last().unwrap();
    let mut at = &mut target;
    for step in parents {
        at = match at {
            Value::Array(items) => &mut items[step.parse::<usize>().unwrap()],
            other => &mut other[step.as_str()],
        };
    }
    match at {
        Value::Array(items) => items[last.parse::<usize>().unwrap()] = value,
        other => other[last.as_str()] = value,
    }
    target
}

/// `target` without the member at `path`.
fn without(target: &Value, path: &[String]) -> Value {
    let mut target = target.clone();
    let (last, parents) = path.split_last().unwrap();
    let at = parents
        .iter()
        .fold(&mut target, |at, step| &mut at[step.as_str()]);
    at.as_object_mut().unwrap().shift_remove(last);
    target
}

struct Case {
    what: String,
    arguments: Value,
    valid: bool,
    /// Within an affirmation (a `const`), which the service refuses with its own 422.
    affirmation: bool,
}

/// The cases of one tool.
struct Cases<'a> {
    tool: &'a str,
    schema: &'a Value,
    whole: Validator,
    fixtures: &'a Map<String, Value>,
    cases: Vec<Case>,
}

impl<'a> Cases<'a> {
    /// A value `schema` accepts for the member `name`: its fixture when the schema takes it,
    /// else one built from the schema.
    fn sample(&self, name: &str, schema: &Value) -> Value {
        if let Some(fixture) = self.fixtures.get(name).filter(|f| accepts(schema, f)) {
            return fixture.clone();
        }
        let first = schema["enum"]
            .as_array()
            .and_then(|values| values.iter().find(|v| !v.is_null()));
        let value = match (schema.get("const"), first) {
            (Some(constant), _) => constant.clone(),
            (None, Some(first)) => first.clone(),
            (None, None) => match types(schema).into_iter().find(|t| *t != "null") {
                Some("string") => json!(fit("a", bound(schema, "minLength").unwrap_or(1))),
                Some("integer") => json!(schema["minimum"].as_i64().unwrap_or(0)),
                Some("number") => json!(schema["minimum"].as_f64().unwrap_or(0.0)),
                Some("boolean") => json!(true),
                Some("array") => {
                    let item = self.sample(name, &schema["items"]);
                    json!(vec![item; bound(schema, "minItems").unwrap_or(0)])
                }
                _ => {
                    let required = schema["required"].as_array().into_iter().flatten();
                    let members = required.filter_map(Value::as_str).map(|member| {
                        let value = self.sample(member, &schema["properties"][member]);
                        (member.to_owned(), value)
                    });
                    Value::Object(members.collect())
                }
            },
        };
        assert!(
            accepts(schema, &value),
            "{}: no sample of `{name}` satisfies {schema} (generated {value}): add a fixture",
            self.tool
        );
        value
    }

    /// Records a case once, met with the conditionals it does not test, after checking that
    /// the validator judges it as the generator meant.
    fn push(&mut self, what: String, mut arguments: Value, valid: bool, affirmation: bool) {
        self.complete(&mut arguments, &what);
        assert_eq!(
            self.whole.is_valid(&arguments),
            valid,
            "{}: case `{what}` was meant {}, the schema says otherwise: {arguments}",
            self.tool,
            if valid { "valid" } else { "invalid" }
        );
        if self.cases.iter().all(|case| case.arguments != arguments) {
            self.cases.push(Case {
                what,
                arguments,
                valid,
                affirmation,
            });
        }
    }

    /// The schema's conditionals, as (`if`, `then`, `else`).
    fn conditionals(&self) -> Vec<(&'a Value, &'a Value, &'a Value)> {
        let schema: &'a Value = self.schema;
        let parts = schema["allOf"].as_array().into_iter().flatten();
        std::iter::once(schema)
            .chain(parts)
            .filter(|part| part.get("if").is_some())
            .map(|part| (&part["if"], &part["then"], &part["else"]))
            .collect()
    }

    /// Makes a case about one argument meet the conditionals (cases about a conditional are
    /// named `cond:` and left alone): an argument given that a `then` requires gets its `if`'s
    /// values, and an `if` that holds gets the arguments its `then` requires.
    fn complete(&self, arguments: &mut Value, what: &str) {
        if what.starts_with("cond:") {
            return;
        }
        let target = what.split([' ', '.']).next().unwrap_or_default();
        let given = arguments.get(target).is_some_and(|v| !v.is_null());
        for (condition, then, _) in self.conditionals() {
            let required = then["required"].as_array().into_iter().flatten();
            if given && required.clone().any(|name| name == target) {
                for (name, property) in condition["properties"].as_object().unwrap() {
                    arguments[name.as_str()] = property["const"].clone();
                }
            }
            if accepts(condition, arguments) {
                for name in required.filter_map(Value::as_str) {
                    if arguments.get(name).is_none() {
                        arguments[name] = self.sample(name, &self.schema["properties"][name]);
                    }
                }
            }
        }
    }

    /// The cases of the member at `path` (whose schema is `schema`) on `base`, which holds its
    /// parents but not it; then those of its own members and first item.
    fn argument(
        &mut self,
        base: &Value,
        path: &[String],
        schema: &Value,
        required: bool,
        affirmation: bool,
    ) {
        let name = path.join(".");
        let affirmation = affirmation || schema.to_string().contains("\"const\"");
        let sample = self.sample(path.last().unwrap(), schema);
        let kinds = types(schema);
        let mut cases = vec![
            ("missing".to_owned(), None, !required),
            ("sample".to_owned(), Some(sample.clone()), true),
        ];
        let mut case = |what: &str, value: Value, valid: bool| {
            cases.push((what.to_owned(), Some(value), valid));
        };
        let wrong = [json!(true), json!(7), json!("7"), json!([]), json!({})];
        for value in wrong
            .into_iter()
            .filter(|v| !type_allowed(schema, v))
            .take(2)
        {
            case(&format!("wrong type {value}"), value, false);
        }
        let listed = |value: &Value| {
            let values = schema["enum"].as_array();
            values.is_none_or(|values| values.contains(value))
                && schema.get("const").is_none_or(|c| c == value)
        };
        case(
            "null",
            Value::Null,
            type_allowed(schema, &Value::Null) && listed(&Value::Null),
        );
        if kinds.contains(&"string") {
            let (min, max) = (
                bound(schema, "minLength").unwrap_or(0),
                bound(schema, "maxLength"),
            );
            let fine = |text: &str| {
                let pattern = schema["pattern"].as_str().unwrap_or(".*");
                accepts(&json!({ "pattern": pattern }), &json!(text)) && listed(&json!(text))
            };
            let within = |text: &str| {
                let length = text.chars().count();
                length >= min && max.is_none_or(|max| length <= max)
            };
            case("empty string", json!(""), within("") && fine(""));
            let text = sample.as_str().unwrap_or("a");
            if min >= 2 {
                case("below minLength", json!(fit(text, min - 1)), false);
            }
            if min >= 1 && fine(&fit(text, min)) {
                case("at minLength", json!(fit(text, min)), true);
            }
            if let Some(max) = max {
                case("above maxLength", json!(fit(text, max + 1)), false);
                if fine(&fit(text, max)) {
                    case("at maxLength", json!(fit(text, max)), true);
                }
            }
            // Surrounding spaces, blank text, control characters, a line break, a bare word:
            // valid exactly when the pattern and the enum take them.
            for text in [
                format!(" {text} "),
                "   ".into(),
                "a\u{1}b".into(),
                "a\nb".into(),
                "x".into(),
            ] {
                if within(&text) {
                    case(&format!("text {text:?}"), json!(text), fine(&text));
                }
            }
            if schema["enum"].is_array() {
                case("outside enum", json!("zz-not-listed"), false);
            }
        }
        for value in schema["enum"].as_array().into_iter().flatten() {
            case(&format!("enum {value}"), value.clone(), true);
        }
        if kinds.contains(&"integer") {
            let inside = schema["minimum"].as_i64().unwrap_or(0);
            case("fractional", json!(inside as f64 + 0.5), false);
            case("integral float", json!(inside as f64), true);
        }
        if kinds.contains(&"integer") || kinds.contains(&"number") {
            // One past a bound: 1 for an integer, 0.5 for a number.
            let step = if kinds.contains(&"integer") { 1.0 } else { 0.5 };
            let number = |n: f64| match kinds.contains(&"integer") {
                true => json!(n as i64),
                false => json!(n),
            };
            if let Some(min) = schema["minimum"].as_f64() {
                case("below minimum", number(min - step), false);
                case("at minimum", number(min), true);
            }
            if let Some(max) = schema["maximum"].as_f64() {
                case("above maximum", number(max + step), false);
                case("at maximum", number(max), true);
            }
        }
        if kinds.contains(&"boolean") {
            for flag in [true, false] {
                case(&format!("{flag}"), json!(flag), listed(&json!(flag)));
            }
        }
        if kinds.contains(&"object") && schema["additionalProperties"] == false {
            let extra = with(&sample, &[UNKNOWN.to_owned()], json!(1));
            case("unknown member", extra, false);
        }
        let item = kinds
            .contains(&"array")
            .then(|| self.sample(path.last().unwrap(), &schema["items"]));
        if let Some(item) = &item {
            if let Some(min) = bound(schema, "minItems").filter(|min| *min > 0) {
                case("below minItems", json!(vec![item; min - 1]), false);
            }
            if let Some(max) = bound(schema, "maxItems") {
                case("above maxItems", json!(vec![item; max + 1]), false);
            }
            if schema["uniqueItems"] == true {
                case("repeated item", json!([item, item]), false);
            }
        }
        for (what, value, valid) in cases {
            let arguments = value.map_or_else(|| base.clone(), |v| with(base, path, v));
            self.push(format!("{name} {what}"), arguments, valid, affirmation);
        }
        // Its members and its first item, each on the sample.
        let parent = with(base, path, sample.clone());
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        for (member, property) in schema["properties"].as_object().into_iter().flatten() {
            let path = [path, std::slice::from_ref(member)].concat();
            let needed = required.contains(&json!(member));
            let base = if needed {
                without(&parent, &path)
            } else {
                parent.clone()
            };
            self.argument(&base, &path, property, needed, affirmation);
        }
        if let Some(item) = item.filter(|_| schema["items"].is_object()) {
            let items = sample.as_array().filter(|items| !items.is_empty()).cloned();
            let parent = with(base, path, json!(items.unwrap_or(vec![item])));
            let path = [path, &["0".to_owned()]].concat();
            let schema = &schema["items"];
            let wrong = [json!(true), json!(7), json!({})].into_iter();
            let mut cases: Vec<(String, Value, bool)> = wrong
                .filter(|value| !type_allowed(schema, value))
                .map(|value| (format!("wrong type {value}"), value, false))
                .collect();
            if let Some(values) = schema["enum"].as_array() {
                cases.push(("outside enum".into(), json!("zz-not-listed"), false));
                cases.extend(
                    values
                        .iter()
                        .map(|v| (format!("enum {v}"), v.clone(), true)),
                );
            }
            for (what, value, valid) in cases {
                let arguments = with(&parent, &path, value);
                self.push(format!("{name}[0] {what}"), arguments, valid, affirmation);
            }
        }
    }

    /// Every case of the tool.
    fn derive(&mut self) {
        let base = self.sample("arguments", self.schema);
        self.push("base".into(), base.clone(), true, false);
        // Unknown arguments are refused whatever the schema says (it leaves
        // `additionalProperties` out for the agent SDKs' sake).
        let extra = with(&base, &[UNKNOWN.to_owned()], json!(1));
        self.push("unknown argument".into(), extra, false, false);
        let required = self.schema["required"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let properties = self.schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (name, property) in &properties {
            let path = [name.clone()];
            let needed = required.contains(&json!(name));
            let base = if needed {
                without(&base, &path)
            } else {
                base.clone()
            };
            self.argument(&base, &path, property, needed, false);
        }
        // Each conditional broken: its `if` holds without an argument its `then` requires, or
        // an argument a branch excludes is given.
        for (condition, then, otherwise) in self.conditionals() {
            let label = condition.to_string();
            let mut holds = base.clone();
            for (name, property) in condition["properties"].as_object().unwrap() {
                holds[name.as_str()] = property["const"].clone();
            }
            for name in then["required"].as_array().into_iter().flatten() {
                let arguments = without(&holds, &[name.as_str().unwrap().to_owned()]);
                self.push(
                    format!("cond: {label} without {name}"),
                    arguments,
                    false,
                    false,
                );
            }
            self.complete(&mut holds, "");
            for (branch, start, when) in [(then, &holds, "with"), (otherwise, &base, "without")] {
                let members = branch["properties"].as_object().into_iter().flatten();
                for (name, _) in members.filter(|(_, schema)| schema["type"] == "null") {
                    let value = self.sample(name, &properties[name]);
                    let arguments = with(start, std::slice::from_ref(name), value);
                    self.push(
                        format!("cond: {name} {when} {label}"),
                        arguments,
                        false,
                        false,
                    );
                }
            }
        }
    }
}

/// How a call was answered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Refused as invalid input: JSON-RPC -32602 or a tool error INVALID_ARGUMENT.
    Invalid,
    /// An affirmation's own refusal (422 `*_REQUIRED`).
    Affirmation,
    /// A success, or a refusal for business reasons.
    Other,
    /// A 5xx, or an answer of no documented shape.
    Broken,
}

/// The verdict on an answer, and what it said.
fn verdict(response: &Resp) -> (Verdict, String) {
    let text = format!("HTTP {} {}", response.status, response.text());
    let Ok(body) = serde_json::from_slice::<Value>(&response.body) else {
        return (Verdict::Broken, text);
    };
    if response.status >= 500 {
        return (Verdict::Broken, text);
    }
    if let Some(error) = body.get("error") {
        return match error["code"].as_i64() {
            Some(-32602) => (Verdict::Invalid, text),
            Some(_) => (Verdict::Other, text),
            None => (Verdict::Broken, text),
        };
    }
    let error = &body["result"]["structuredContent"]["error"];
    let status = error["status"].as_u64().unwrap_or(0);
    let code = error["code"].as_str().unwrap_or_default();
    let verdict = match body["result"]["isError"].as_bool() {
        Some(false) => Verdict::Other,
        Some(true) if !(400..500).contains(&status) => Verdict::Broken,
        Some(true) if code == "INVALID_ARGUMENT" => Verdict::Invalid,
        Some(true) if status == 422 && code.ends_with("_REQUIRED") => Verdict::Affirmation,
        Some(true) => Verdict::Other,
        None => Verdict::Broken,
    };
    match verdict {
        Verdict::Other if !error.is_object() => (verdict, "success".into()),
        _ => (verdict, format!("{status} {code}: {}", error["message"])),
    }
}

#[test]
fn every_tool_enforces_exactly_its_input_schema() {
    // Per-client limits relaxed: every case comes from one address.
    let server = TestServer::start_with(|config| config.relaxed_limits = true);
    let (seller, _twin) = server.seller("Schema Seller", b"schema deliverable");
    let buyer = server.party("Schema Buyer");
    let base = json!({
        "title": "Tide tables",
        "description": "Hourly tide heights.",
        "priceCents": 0,
        "consent": true,
    });
    let listing = server.create_listing(&seller, base, json!({}));
    let bought = server.buy(&buyer, &listing).ok();
    // A message waits in the buyer's inbox, so a read with `wait` answers at once.
    let path = format!("/api/agents/{}/messages", buyer.handle);
    let hello = json!({"clientMessageId": "hello", "body": "hello"});
    server
        .send_auth("POST", &path, &seller.key, &hello)
        .assert_status(201);

    let tools = rpc(&server, None, "tools/list", json!({})).ok()["result"]["tools"].clone();
    let tools = tools.as_array().unwrap();
    let (mut valid, mut invalid, mut conditional) = (0, 0, 0);
    let mut problems = Vec::new();
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let key = match SELLER_TOOLS.contains(&name) {
            true => &seller.key,
            false => &buyer.key,
        };
        let fixtures = json!({
            "listing_id": listing,
            "purchase_id": bought["id"],
            "handle": seller.handle,
            "api_key": key,
            "email": "agent@example.com",
            "url": "https://localhost/deliver",
            "callback_url": "https://localhost/hook",
        });
        let schema = &tool["inputSchema"];
        let mut cases = Cases {
            tool: name,
            schema,
            whole: validator(&closed(schema)),
            fixtures: fixtures.as_object().unwrap(),
            cases: Vec::new(),
        };
        cases.derive();
        for case in cases.cases {
            let params = json!({ "name": name, "arguments": case.arguments });
            let (answer, said) = verdict(&rpc(&server, Some(key), "tools/call", params));
            let agrees = match answer {
                Verdict::Broken => false,
                Verdict::Invalid => !case.valid,
                Verdict::Affirmation => case.valid || case.affirmation,
                Verdict::Other => case.valid,
            };
            if !agrees {
                let judged = if case.valid {
                    "schema-valid"
                } else {
                    "schema-invalid"
                };
                let arguments = case.arguments.to_string();
                let arguments: String = arguments.chars().take(400).collect();
                problems.push(format!(
                    "{name} `{}` ({judged}): {said}\n    {arguments}",
                    case.what
                ));
            }
            match case.valid {
                true => valid += 1,
                false => invalid += 1,
            }
            conditional += usize::from(case.what.starts_with("cond:"));
        }
    }
    eprintln!(
        "mcp_schemas: {} tools, {} cases ({valid} schema-valid, {invalid} schema-invalid, {conditional} on conditionals), {} disagreements",
        tools.len(),
        valid + invalid,
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// An `api_key` argument is a non-empty string, as a REST body's is: `""` is invalid input, not
/// a key naming another agent.
#[test]
fn an_empty_api_key_argument_is_invalid_input() {
    let server = TestServer::start();
    let key = server.party("keyed").key;
    for bad in [json!(""), json!(null), json!(5)] {
        let arguments = json!({ "api_key": bad });
        let error = err(
            &server,
            Some(&key),
            "seller_dashboard",
            arguments,
            "INVALID_ARGUMENT",
        );
        assert_eq!(error["status"], 400, "{bad}");
    }
}
