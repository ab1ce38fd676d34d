use serde_json::{Value, json};

use super::*;

static OP: Op = Op {
    name: "demo_tool",
    tool: None,
    fields: &[
        Field::both("priceCents", "price_cents", Kind::Int(0, 10)).required(),
        Field::rest("physical", Kind::Bool),
        Field::mcp("listing_id", Kind::Text(8)).required(),
        Field::both("consent", "consent", Kind::Consent).affirmation(),
    ],
    scope: None,
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
fn query_values_are_text_and_only_free_text_may_be_empty() {
    static QUERY: Op = Op {
        name: "demo_query",
        tool: None,
        fields: &[
            Field::rest("limit", Kind::Int(1, 10)),
            Field::rest("sort", Kind::Enum(&["new", "old"])),
            Field::rest("q", Kind::Verbatim),
            Field::rest("slug", Kind::Verbatim).documented("/components/schemas/Slug"),
        ],
        scope: None,
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let input = Input::query(&QUERY, &pairs(&[("limit", "7"), ("q", ""), ("utm", "x")]));
    assert_eq!(input.int(&QUERY.fields[0]).unwrap(), Some(7));
    assert_eq!(
        input.verbatim(&QUERY.fields[2]).unwrap(),
        None,
        "empty free text is absent"
    );
    // An empty number, choice or documented slug is refused, naming the parameter.
    let empty = Input::query(&QUERY, &pairs(&[("limit", ""), ("sort", ""), ("slug", "")]));
    for (field, name) in [(0, "limit"), (1, "sort"), (3, "slug")] {
        let refused = match field {
            0 => empty.int(&QUERY.fields[0]).map(|_| ()),
            1 => empty.choice(&QUERY.fields[1]).map(|_| ()),
            _ => empty.verbatim(&QUERY.fields[3]).map(|_| ()),
        };
        let refused = message(refused.unwrap_err());
        assert!(refused.contains(&format!("`{name}` is empty")), "{refused}");
    }
    // A declared parameter given twice is refused; an unknown one is ignored.
    let twice = Input::query(
        &QUERY,
        &pairs(&[("limit", "7"), ("limit", "9"), ("utm", "a"), ("utm", "b")]),
    );
    let refused = message(twice.int(&QUERY.fields[0]).unwrap_err());
    assert!(
        refused.contains("`limit` is given more than once"),
        "{refused}"
    );
    assert_eq!(twice.choice(&QUERY.fields[1]).unwrap(), None);
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
    assert!(schema.get("additionalProperties").is_none(), "{schema}");
    assert_eq!(properties["consent"]["const"], true);
}

/// An operation's own declaration decides: a field read through a shared constant is required
/// where the operation requires it.
#[test]
fn requirements_come_from_the_operations_declaration() {
    const SHARED: Field = Field::both("preview", "preview", Kind::Object);
    static STRICT: Op = Op {
        name: "strict_tool",
        tool: None,
        fields: &[SHARED.required_on(Face::Mcp)],
        scope: None,
    };
    let mcp = Input::new(Face::Mcp, &STRICT, map(json!({}))).unwrap();
    assert!(message(mcp.json(&SHARED).unwrap_err()).contains("`preview` is required"));
    let rest = Input::new(Face::Rest, &STRICT, map(json!({}))).unwrap();
    assert_eq!(rest.json(&SHARED).unwrap(), None);
}

#[test]
fn the_unknown_argument_hint_survives_respelling() {
    let error = Input::new(Face::Mcp, &OP, map(json!({"priceCents": 1})))
        .err()
        .unwrap();
    let respelled = message(OP.respell(Face::Mcp, error));
    assert!(
        respelled.contains("unknown argument `priceCents`")
            && respelled.contains("this tool calls it `price_cents`"),
        "{respelled}"
    );
}

#[test]
fn text_patterns_refuse_blank_and_control_text_as_the_reader_does() {
    for (pattern, allowed_break) in [(SINGLE_LINE, false), (PARAGRAPH, true)] {
        let schema = serde_json::json!({"type": "string", "pattern": pattern});
        let validator = jsonschema::validator_for(&schema).expect("the pattern compiles");
        assert!(validator.is_valid(&serde_json::json!(" Tides, 2026 ")));
        assert!(validator.is_valid(&serde_json::json!("é")));
        assert!(!validator.is_valid(&serde_json::json!("   ")), "blank");
        assert!(!validator.is_valid(&serde_json::json!("a\u{0}b")), "NUL");
        assert_eq!(
            validator.is_valid(&serde_json::json!("line one\nline two")),
            allowed_break
        );
    }
}

#[test]
fn optional_tool_arguments_accept_null_as_their_readers_do() {
    let schema = crate::request::catalog::BROWSE.input_schema(&[]);
    let properties = schema["properties"].as_object().unwrap();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let validator = jsonschema::validator_for(&schema).expect("the inputSchema compiles");
    for (name, property) in properties {
        if required.contains(&name.as_str()) {
            continue;
        }
        assert!(
            validator.is_valid(&json!({ name.clone(): null })),
            "{name}: {property}"
        );
    }
}

/// Formats the service checks (emails, https URLs, the taxonomy's slugs, message ids, the health
/// consent) are stated in the MCP schemas as the REST contract states them, so a value the
/// schema takes is not refused as malformed.
#[test]
fn mcp_schemas_state_the_formats_the_service_checks() {
    use crate::request::{agents, catalog, commerce, contact, messaging};
    let cases = [
        (
            &agents::REGISTER,
            "email",
            json!("a"),
            json!("agent@example.com"),
        ),
        (&contact::CONTACT, "email", json!("a@b"), json!(" a@b.org ")),
        (
            &commerce::BECOME_SELLER,
            "email",
            json!("ab"),
            json!("pay@example.com"),
        ),
        (
            &commerce::PURCHASE,
            "email",
            json!("x"),
            json!("me@example.org"),
        ),
        (
            &agents::REGISTER,
            "callback_url",
            json!("a"),
            json!("https://example.com/hook"),
        ),
        (
            &catalog::SET_DELIVERY_ENDPOINT,
            "url",
            json!("h"),
            json!("https://example.com/d"),
        ),
        (
            &catalog::CREATE_LISTING,
            "vertical",
            json!("t"),
            json!("trucking"),
        ),
        (
            &catalog::CREATE_LISTING,
            "category",
            json!("d"),
            json!("data"),
        ),
        (&catalog::BROWSE, "vertical", json!("t"), json!("trucking")),
        (&catalog::BROWSE, "category", json!("d"), json!("data")),
        (&catalog::BROWSE, "class", json!("X"), json!("RESEARCH")),
        (
            &messaging::SEND_MESSAGE,
            "clientMessageId",
            json!("a\u{1}"),
            json!("  id 1"),
        ),
        (
            &catalog::CREATE_HEALTH_LISTING,
            "health_consent",
            json!({}),
            Value::Null,
        ),
    ];
    for (op, name, refused, accepted) in cases {
        let schema = op.input_schema(&[])["properties"][name].clone();
        let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
        assert!(
            !validator.is_valid(&refused),
            "{name}: {refused} in {schema}"
        );
        if !accepted.is_null() {
            assert!(
                validator.is_valid(&accepted),
                "{name}: {accepted} in {schema}"
            );
        }
        assert!(
            schema["description"].is_string(),
            "{name}: the MCP doc stays"
        );
    }
    // The consent is the contract's HealthConsent, its five sections required.
    let consent = &crate::request::catalog::CREATE_HEALTH_LISTING.input_schema(&[])["properties"]["health_consent"];
    assert_eq!(consent["type"], "object");
    assert_eq!(
        consent["required"],
        json!([
            "ownership",
            "saleTerms",
            "authorizedUses",
            "deidentificationLevel",
            "stateAuthorizations"
        ])
    );
}

/// Arguments that depend on another's value (a limited listing's copies, the inbox's two
/// actions) are stated in the MCP schema as conditionals, which the readers agree with.
#[test]
fn dependent_arguments_are_stated_as_the_readers_judge_them() {
    use crate::request::catalog::{CREATE_LISTING, CreateListing};
    use crate::request::messaging::{InboxCall, READ_INBOX};
    let listing =
        json!({"title": "t", "description": "d", "preview": {}, "price_cents": 0, "consent": true});
    let with = |extra: Value| {
        let mut arguments = listing.clone();
        arguments.as_object_mut().unwrap().extend(map(extra));
        arguments
    };
    let schema = CREATE_LISTING.input_schema(&[]);
    let validator = jsonschema::validator_for(&schema).expect("the inputSchema compiles");
    for (arguments, valid) in [
        (
            with(json!({"listing_type": "limited", "max_copies": 3})),
            true,
        ),
        (
            with(json!({"listing_type": "standard", "max_copies": null})),
            true,
        ),
        (with(json!({"listing_type": "limited"})), false),
        (
            with(json!({"listing_type": "limited", "max_copies": null})),
            false,
        ),
        (with(json!({"max_copies": 3})), false),
        (
            with(json!({"listing_type": "exclusive", "max_copies": 3})),
            false,
        ),
    ] {
        assert_eq!(validator.is_valid(&arguments), valid, "{arguments}");
        // Made and read, as a tool call is (`Input` judges the dependency when it is made).
        let read = Input::new(Face::Mcp, &CREATE_LISTING, map(arguments.clone()))
            .and_then(|input| CreateListing::read(&input));
        assert_eq!(read.is_ok(), valid, "{arguments}");
    }
    let schema = READ_INBOX.input_schema(&[]);
    let validator = jsonschema::validator_for(&schema).expect("the inputSchema compiles");
    for (arguments, valid) in [
        (json!({}), true),
        (json!({"limit": 5, "through": null}), true),
        (json!({"action": "mark_read", "through": 3}), true),
        (
            json!({"action": "mark_read", "through": 3, "after": null}),
            true,
        ),
        (json!({"action": "mark_read"}), false),
        (
            json!({"action": "mark_read", "through": 3, "limit": 5}),
            false,
        ),
        (json!({"through": 3}), false),
        (json!({"action": "read", "through": 3}), false),
    ] {
        assert_eq!(validator.is_valid(&arguments), valid, "{arguments}");
        let read = Input::new(Face::Mcp, &READ_INBOX, map(arguments.clone()))
            .and_then(|input| InboxCall::read(&input));
        assert_eq!(read.is_ok(), valid, "{arguments}");
    }
}

/// A token (a URL, a slug) is taken as sent: whitespace at an end is refused, not trimmed, as
/// its schema says.
#[test]
fn tokens_are_taken_as_sent() {
    static TOKENS: Op = Op {
        name: "token_tool",
        tool: None,
        fields: &[Field::mcp("url", Kind::Token(20))],
        scope: None,
    };
    let validator = jsonschema::validator_for(&TOKENS.input_schema(&[])).expect("it compiles");
    for (value, taken) in [
        ("https://x.org", true),
        ("a b", true),
        (" https://x.org", false),
        ("https://x.org\n", false),
        ("   ", false),
        ("a\u{1}b", false),
        ("", false),
    ] {
        let arguments = json!({ "url": value });
        assert_eq!(validator.is_valid(&arguments), taken, "{value:?}");
        let input = Input::new(Face::Mcp, &TOKENS, map(arguments)).unwrap();
        assert_eq!(input.text(&TOKENS.fields[0]).is_ok(), taken, "{value:?}");
    }
}

#[test]
fn a_listing_edit_names_its_listing_and_keeps_its_refusal_for_after_the_owner_check() {
    use super::catalog::{DeactivateListing, ListingId, UPDATE_LISTING, UpdateListing};
    let args = |value: Value| crate::args::Args::from_value(value).unwrap();
    let rest = Input::unchecked(Face::Rest, &UPDATE_LISTING, args(json!({"priceCents": -1})));
    let edit = UpdateListing::read(&rest, Some("L-1")).unwrap();
    assert_eq!(edit.listing_id, "L-1");
    assert_eq!(edit.edit.unwrap_err().code(), "INVALID_ARGUMENT");

    let mcp = Input::unchecked(
        Face::Mcp,
        &UPDATE_LISTING,
        args(json!({"listing_id": "L-2", "title": "New"})),
    );
    let edit = UpdateListing::read(&mcp, None).unwrap();
    assert_eq!(edit.listing_id, "L-2");
    assert_eq!(edit.edit.unwrap().title.as_deref(), Some("New"));
    let unnamed = Input::unchecked(Face::Mcp, &UPDATE_LISTING, args(json!({"title": "x"})));
    assert!(UpdateListing::read(&unnamed, None).is_err());

    let withdraw = Input::unchecked(
        Face::Mcp,
        &super::catalog::DEACTIVATE_LISTING,
        args(json!({"listing_id": "L-3", "reason": "sold elsewhere"})),
    );
    let withdraw = DeactivateListing::read(&withdraw, None).unwrap();
    assert_eq!(
        (withdraw.listing_id.as_str(), withdraw.reason.as_deref()),
        ("L-3", Some("sold elsewhere"))
    );
    assert_eq!(ListingId::at("L-4").listing_id, "L-4");
}
