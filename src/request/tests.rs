use serde_json::{Value, json};

use super::*;

static OP: Op = Op {
    name: "demo_tool",
    fields: &[
        Field::both("priceCents", "price_cents", Kind::Int(0, 10)).required(),
        Field::rest("physical", Kind::Bool),
        Field::mcp("listing_id", Kind::Text(8)).required(),
        Field::both("consent", "consent", Kind::Consent).affirmation(),
    ],
};

fn map(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn message(error: Error) -> String {
    error.to_string()
}

#[test]
fn unknown_fields_are_named_in_the_callers_spelling_with_a_hint() {
    let rest = Input::new(Face::Rest, &OP, map(json!({"price_cents": 1})))
        .err()
        .unwrap();
    let rest = message(rest);
    assert!(rest.contains("unknown field `price_cents`"), "{rest}");
    assert!(
        rest.contains("this endpoint calls it `priceCents`"),
        "{rest}"
    );
    let mcp = Input::new(Face::Mcp, &OP, map(json!({"physical": true})))
        .err()
        .unwrap();
    let mcp = message(mcp);
    assert!(
        mcp.contains("unknown argument `physical` for demo_tool"),
        "{mcp}"
    );
    assert!(
        mcp.contains("accepted arguments: price_cents, listing_id, consent"),
        "{mcp}"
    );
}

#[test]
fn fields_are_read_by_the_faces_name_and_required_per_face() {
    let input = Input::new(Face::Mcp, &OP, map(json!({"price_cents": 5.0}))).unwrap();
    assert_eq!(input.int(&OP.fields[0]).unwrap(), Some(5));
    assert_eq!(
        input.bool(&OP.fields[1]).unwrap(),
        None,
        "not offered on MCP"
    );
    let missing = message(input.text(&OP.fields[2]).unwrap_err());
    assert!(missing.contains("`listing_id` is required"), "{missing}");
    // A missing consent is the service's refusal, not a malformed request.
    assert!(!input.consent(&OP.fields[3]).unwrap());
    let rest = Input::new(Face::Rest, &OP, map(json!({}))).unwrap();
    assert_eq!(
        rest.text(&OP.fields[2]).unwrap(),
        None,
        "not offered on REST"
    );
    assert!(message(rest.int(&OP.fields[0]).unwrap_err()).contains("`priceCents` is required"));
}

#[test]
fn query_values_are_text_and_empty_means_absent() {
    let pairs = vec![
        ("priceCents".to_owned(), "7".to_owned()),
        ("priceCents".to_owned(), "9".to_owned()),
        ("physical".to_owned(), String::new()),
        ("utm_source".to_owned(), "x".to_owned()),
    ];
    let input = Input::query(&OP, &pairs);
    assert_eq!(
        input.int(&OP.fields[0]).unwrap(),
        Some(7),
        "the first value counts"
    );
    assert_eq!(input.bool(&OP.fields[1]).unwrap(), None);
    // From a JSON body a number in a string is refused.
    let body = Input::new(Face::Rest, &OP, map(json!({"priceCents": "7"}))).unwrap();
    assert!(body.int(&OP.fields[0]).is_err());
}

#[test]
fn service_messages_are_respelled_for_mcp_only() {
    let error = Error::invalid("`priceCents` is too high; see `consent`");
    assert_eq!(
        message(OP.respell(Face::Mcp, Error::invalid(error.to_string()))),
        "`price_cents` is too high; see `consent`"
    );
    assert_eq!(
        message(OP.respell(Face::Rest, error)),
        "`priceCents` is too high; see `consent`"
    );
}

#[test]
fn the_mcp_schema_lists_the_mcp_fields_and_their_requirements() {
    let schema = OP.input_schema(&[("api_key", json!({"type": "string"}))]);
    let properties = schema["properties"].as_object().unwrap();
    let names: Vec<&str> = properties.keys().map(String::as_str).collect();
    assert_eq!(names, ["price_cents", "listing_id", "consent", "api_key"]);
    assert_eq!(
        schema["required"],
        json!(["price_cents", "listing_id", "consent"])
    );
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(properties["consent"]["const"], true);
}
