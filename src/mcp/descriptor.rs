//! The shape of one tool's descriptor, shared by the Agent Connect and marketplace tool sets
//! (a leaf, so the tool sets and the dispatcher in `tools` import it without a cycle).

use serde_json::{Value, json};

/// One entry of `tools/list` and of the GET manifest (Agent Connect and marketplace tools).
pub(super) fn tool_descriptor(
    name: &str,
    title: &str,
    description: &str,
    input_schema: Value,
    read_only: bool,
    idempotent: bool,
) -> Value {
    json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": input_schema,
        "annotations": {
            "title": title,
            "readOnlyHint": read_only,
            "destructiveHint": false,
            "idempotentHint": idempotent,
            "openWorldHint": false,
        },
    })
}
