//! x402 Bazaar as a facilitator or a buyer's agent reads it: the Bazaar extension of every x402
//! 402.

use base64::Engine;
use bourse::config::X402Settings;
use serde_json::{Value, json};

use crate::support::{Party, TestServer};

const PAY_TO: &str = "0x1111111111111111111111111111111111111111";

/// A server whose x402 rail is configured. No payment is made here, so the facilitator is a
/// closed port (its `/supported` check at start fails and is only logged).
fn x402_server() -> TestServer {
    TestServer::start_with(|config| {
        config.x402 = Some(X402Settings {
            pay_to: PAY_TO.into(),
            facilitator_url: "http://127.0.0.1:9".into(),
            network: "eip155:8453".into(),
        });
    })
}

fn list(server: &TestServer, seller: &Party, title: &str, price: i64) -> String {
    server.create_listing(
        seller,
        json!({"title": title, "description": "Daily berth waits, by terminal.", "priceCents": price, "verticalSlug": "trucking", "consent": true}),
        json!({}),
    )
}

fn purchase_url(server: &TestServer, listing: &str) -> String {
    format!(
        "{}/api/marketplace/listings/{listing}/purchase",
        server.base
    )
}

/// The decoded v2 `PAYMENT-REQUIRED` of an anonymous purchase attempt, and the 402's body.
fn challenge(server: &TestServer, listing: &str, body: &Value) -> (Value, Value) {
    let resp = server.request(
        "POST",
        &format!("/api/marketplace/listings/{listing}/purchase"),
        &[],
        Some(body.to_string().as_bytes()),
    );
    resp.assert_status(402);
    let header = resp.header("payment-required").expect("PAYMENT-REQUIRED");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(header)
        .unwrap();
    (serde_json::from_slice(&decoded).unwrap(), resp.json())
}

/// Validates `instance` against `schema` (JSON Schema 2020-12, formats checked).
#[track_caller]
fn assert_valid(schema: &Value, instance: &Value) {
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("not a schema ({e}): {schema}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("at `{}`: {e}", e.instance_path().as_str()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{instance:#}");
}

/// Validates an answer against a component schema of `assets/openapi.json`.
#[track_caller]
fn assert_documented(component: &str, instance: &Value) {
    const BASE: &str = "https://bourse.invalid/openapi.json";
    let doc: Value = serde_json::from_str(include_str!("../../assets/openapi.json")).unwrap();
    let registry = jsonschema::Registry::new()
        .add(BASE, &doc)
        .unwrap()
        .prepare()
        .unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .with_registry(&registry)
        .build(&json!({ "$ref": format!("{BASE}#/components/schemas/{component}") }))
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("at `{}`: {e}", e.instance_path().as_str()))
        .collect();
    assert!(errors.is_empty(), "{component}: {errors:#?}\n{instance:#}");
}

/// Whether `value` holds a `$ref` or `$id` anywhere.
fn has_reference(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == "$ref" || k == "$id" || has_reference(v)),
        Value::Array(items) => items.iter().any(has_reference),
        _ => false,
    }
}

#[test]
fn every_x402_402_carries_a_bazaar_extension_whose_schema_validates_its_info() {
    let server = x402_server();
    let (seller, _twin) = server.seller("seller", b"berths");
    let listing = list(
        &server,
        &seller,
        "Port congestion — Rotterdam, Antwerp and Hamburg berth waits",
        2_500,
    );
    let (required, body) = challenge(&server, &listing, &json!({}));
    let bazaar = &required["extensions"]["bazaar"];
    assert_eq!(
        bazaar["info"]["input"],
        json!({"type": "http", "method": "POST", "bodyType": "json", "body": {"rail": "x402_usdc_base"}})
    );
    assert_eq!(bazaar["info"]["output"]["type"], "json");
    assert_eq!(bazaar["info"]["output"]["example"]["listingId"], listing);
    let schema = &bazaar["schema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(!has_reference(schema), "no $ref: {schema}");
    assert!(
        schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!("input"))
    );
    assert_valid(schema, &bazaar["info"]);
    // The schema says something: an input that is not this call fails it.
    let mut wrong = bazaar["info"].clone();
    wrong["input"]["method"] = json!("GET");
    assert!(
        jsonschema::validator_for(schema)
            .unwrap()
            .validate(&wrong)
            .is_err()
    );

    // Provider metadata on the resource: printable ASCII, bounded.
    let resource = &required["resource"];
    assert_eq!(resource["url"], purchase_url(&server, &listing));
    let name = resource["serviceName"].as_str().unwrap();
    assert!(
        name.len() <= 32 && name.bytes().all(|b| (b' '..=b'~').contains(&b)),
        "{name:?}"
    );
    assert!(name.starts_with("Port congestion"), "{name:?}");
    let tags = resource["tags"].as_array().unwrap();
    assert!(!tags.is_empty() && tags.len() <= 5, "{tags:?}");
    assert!(tags.contains(&json!("trucking")), "{tags:?}");
    assert_documented("X402PaymentRequired", &required);

    // The v1 body carries the same extension, and the documented call is one the server takes.
    assert_eq!(&body["extensions"]["bazaar"], bazaar);
    assert_documented("X402PaymentRequirementsResponse", &body);
    let (again, _) = challenge(&server, &listing, &bazaar["info"]["input"]["body"]);
    assert_eq!(again["accepts"], required["accepts"]);
}
