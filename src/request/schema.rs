//! The MCP `inputSchema`s, generated from the declarations: each field's JSON Schema from its
//! kind, and an operation's from its MCP fields.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::{Face, Field, Kind, Op, PARAGRAPH, SINGLE_LINE, TOKEN};

impl Field {
    /// The field's JSON Schema.
    pub fn schema(&self) -> Value {
        if !self.documented.is_empty() {
            return self.documented_schema();
        }
        let mut schema = match self.kind {
            Kind::Text(max) => json!({
                "type": "string",
                "minLength": 1,
                "maxLength": max,
                "pattern": SINGLE_LINE,
            }),
            Kind::Token(max) => json!({
                "type": "string",
                "minLength": 1,
                "maxLength": max,
                "pattern": TOKEN,
            }),
            Kind::Verbatim => json!({ "type": "string", "minLength": 1 }),
            Kind::VerbatimUpTo(max) => {
                json!({ "type": "string", "minLength": 1, "maxLength": max })
            }
            Kind::Paragraph(max) => json!({
                "type": "string",
                "minLength": 1,
                "maxLength": max,
                "pattern": PARAGRAPH,
            }),
            Kind::Int(min, max) => json!({ "type": "integer", "minimum": min, "maximum": max }),
            Kind::Number(min, max) => json!({ "type": "number", "minimum": min, "maximum": max }),
            Kind::Bool => json!({ "type": "boolean" }),
            Kind::Consent => json!({ "type": "boolean", "const": true }),
            Kind::Enum(values) => json!({ "type": "string", "enum": values }),
            Kind::Object => json!({ "type": "object" }),
            Kind::Flags(names) => {
                let properties: Map<String, Value> = names
                    .iter()
                    .map(|name| ((*name).to_owned(), json!({ "type": "boolean" })))
                    .collect();
                json!({ "type": "object", "properties": properties })
            }
            Kind::Json(text) => serde_json::from_str(text).unwrap_or_else(|_| json!({})),
        };
        if !self.doc.is_empty() {
            schema["description"] = Value::from(self.doc);
        }
        schema
    }
}

impl Field {
    /// The schema `assets/openapi.json` gives the value at [`Field::documented`], with the
    /// field's own description, accepting null only where the operation makes it optional.
    ///
    /// # Panics
    /// When the pointer names nothing (the face-parity tests build every schema).
    fn documented_schema(&self) -> Value {
        let mut at = contract();
        for segment in self.documented.split('/').skip(1) {
            let segment = segment.replace("~1", "/").replace("~0", "~");
            at = match at {
                Value::Array(items) => items.iter().find(|item| item["name"] == *segment),
                other => other.get(&segment),
            }
            .unwrap_or_else(|| panic!("openapi.json has nothing at {}", self.documented));
        }
        let mut schema = at.clone();
        unsay_closed_objects(&mut schema);
        if let Some(object) = schema.as_object_mut() {
            for keyword in ["description", "writeOnly", "default", "example"] {
                object.shift_remove(keyword);
            }
        }
        if let Some(Value::Array(kinds)) = schema.get_mut("type") {
            kinds.retain(|kind| kind != "null");
            if let [kind] = kinds.as_slice() {
                schema["type"] = kind.clone();
            }
        }
        if let Some(Value::Array(values)) = schema.get_mut("enum") {
            values.retain(|value| !value.is_null());
        }
        if !self.doc.is_empty() {
            schema["description"] = Value::from(self.doc);
        }
        schema
    }
}

/// Removes every boolean `additionalProperties` from a schema copied out of the contract, as
/// [`Op::input_schema`] leaves it out of the top level: an agent SDK fails on it.
fn unsay_closed_objects(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if object
                .get("additionalProperties")
                .is_some_and(Value::is_boolean)
            {
                object.shift_remove("additionalProperties");
            }
            object.values_mut().for_each(unsay_closed_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(unsay_closed_objects),
        _ => {}
    }
}

/// The REST contract, parsed once.
fn contract() -> &'static Value {
    static CONTRACT: LazyLock<Value> = LazyLock::new(|| {
        serde_json::from_slice(&crate::assets::bytes("openapi.json"))
            .expect("assets/openapi.json is JSON")
    });
    &CONTRACT
}

impl Op {
    /// The MCP `inputSchema` (plus `extra` properties the face adds, such as `api_key`).
    ///
    /// It does not say `additionalProperties: false`, though unknown arguments are refused
    /// (`Input::new`, an `INVALID_ARGUMENT` naming the accepted ones): google-genai's MCP adapter
    /// cannot read a boolean there and fails on every tool that has one, while OpenAI's strict
    /// mode adds it by itself. `tests/agent_sdks/convert.py` holds every tool to the SDKs.
    pub fn input_schema(&self, extra: &[(&str, Value)]) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for field in self.on(Face::Mcp) {
            let mut schema = field.schema();
            if field.is_required(Face::Mcp) {
                required.push(Value::from(field.mcp));
            } else {
                // An optional argument sent as null counts as absent (`Input::present`): the
                // schema says so, as the REST schemas do.
                nullable(&mut schema);
            }
            properties.insert(field.mcp.to_owned(), schema);
        }
        for (name, schema) in extra {
            properties.insert((*name).to_owned(), schema.clone());
        }
        let mut schema = json!({
            "type": "object",
            "properties": properties,
        });
        if !required.is_empty() {
            schema["required"] = Value::Array(required);
        }
        let conditionals = self.conditionals();
        if !conditionals.is_empty() {
            schema["allOf"] = Value::Array(conditionals);
        }
        schema
    }

    /// The fields that depend on another's value, one conditional per value: `if` the field
    /// has it, `then` the dependants it requires are given (not null) and those it excludes
    /// are absent or null, `else` the ones it requires are absent or null.
    fn conditionals(&self) -> Vec<Value> {
        let mut conditions: Vec<(&str, &str)> = Vec::new();
        for field in self.on(Face::Mcp) {
            if let Some(depends) = field.depends
                && let Some(on) = depends.on.name(Face::Mcp)
                && !conditions.contains(&(on, depends.value))
            {
                conditions.push((on, depends.value));
            }
        }
        let absent = json!({ "type": "null" });
        conditions
            .into_iter()
            .map(|(on, value)| {
                let (mut required, mut then, mut otherwise) = (Vec::new(), Map::new(), Map::new());
                for field in self.on(Face::Mcp) {
                    let Some(depends) = field.depends.filter(|depends| {
                        depends.on.name(Face::Mcp) == Some(on) && depends.value == value
                    }) else {
                        continue;
                    };
                    let name = field.mcp.to_owned();
                    if depends.with {
                        required.push(Value::from(field.mcp));
                        then.insert(name.clone(), json!({ "type": field.schema()["type"] }));
                        otherwise.insert(name, absent.clone());
                    } else {
                        then.insert(name, absent.clone());
                    }
                }
                let mut then = json!({ "properties": then });
                if !required.is_empty() {
                    then["required"] = Value::Array(required);
                }
                let mut conditional = json!({
                    "if": { "properties": { on: { "const": value } }, "required": [on] },
                    "then": then,
                });
                if !otherwise.is_empty() {
                    conditional["else"] = json!({ "properties": otherwise });
                }
                conditional
            })
            .collect()
    }
}

/// Lets `schema` also accept `null` (an optional argument's "absent").
fn nullable(schema: &mut Value) {
    if let Some(Value::String(kind)) = schema.get("type").cloned() {
        schema["type"] = json!([kind, "null"]);
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}
