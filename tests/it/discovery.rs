//! x402 Bazaar and the AI catalog, as a facilitator, a buyer's agent or a registry reads them:
//! the Bazaar extension of every x402 402, `GET /discovery/resources` and `GET /discovery/search`
//! (the paid listings with the 402's requirements and bourse's trust signals), the AI catalog at
//! `/.well-known/ai-catalog.json` and `/.well-known/ard.json`, and the official x402 Python SDK
//! reading all three (`tests/x402_sdk/bazaar.py`, with the Python of `BOURSE_X402_PYTHON`).

use std::process::Command;

use base64::Engine;
use bourse::config::X402Settings;
use serde_json::{Value, json};

use crate::support::{Party, Resp, TestServer, skip_or_fail};

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

#[track_caller]
fn x402_error(resp: &Resp) -> String {
    resp.assert_status(400);
    let body = resp.json();
    let error = body["error"].as_str().unwrap_or_else(|| panic!("{body}"));
    assert!(!error.is_empty());
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    error.to_owned()
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

#[test]
fn discovery_lists_the_paid_listings_with_the_402s_requirements_and_trust_signals() {
    let server = x402_server();
    let (seller, _twin) = server.seller("seller", b"berths");
    let [buyer] = server.parties(["buyer"]);
    let rated = list(&server, &seller, "Port congestion", 2_500);
    let fresh = list(&server, &seller, "Rail freight delays", 900);
    let free = list(&server, &seller, "Free tide tables", 0);

    // Bought on the card rail (a keyed buyer), delivered and rated 4.
    let delivered = server.buy_and_receive(&buyer, &rated);
    server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{rated}/rate"),
            &buyer.key,
            &json!({"purchase_id": delivered["id"], "rating": 4}),
        )
        .assert_status(200);

    let page = server.get("/discovery/resources").ok();
    assert_documented("X402DiscoveryResources", &page);
    assert_eq!(page["x402Version"], 2);
    assert_eq!(
        page["pagination"],
        json!({"limit": 20, "offset": 0, "total": 2})
    );
    assert!(page.get("unappliedFilters").is_none(), "{page}");
    let items = page["items"].as_array().unwrap();
    let urls: Vec<&str> = items
        .iter()
        .map(|i| i["resource"].as_str().unwrap())
        .collect();
    // Newest first; the free listing is not x402's.
    assert_eq!(
        urls,
        [purchase_url(&server, &fresh), purchase_url(&server, &rated)]
    );
    assert!(!page.to_string().contains(&free));

    let item = &items[1];
    let (required, _) = challenge(&server, &rated, &json!({}));
    assert_eq!(item["accepts"], required["accepts"]);
    assert_eq!(item["serviceName"], required["resource"]["serviceName"]);
    assert_eq!(item["tags"], required["resource"]["tags"]);
    assert_eq!(
        item["extensions"]["bazaar"],
        required["extensions"]["bazaar"]
    );
    assert_eq!(item["type"], "http");
    assert_eq!(item["x402Version"], 2);
    assert_eq!(item["description"], "Port congestion");
    assert_eq!(item["mimeType"], "application/json");
    assert!(item["lastUpdated"].as_str().unwrap().ends_with('Z'));
    let trust = &item["extensions"]["bourse"];
    assert_eq!(trust["listingId"], rated);
    assert_eq!(trust["ratingAverage"], 4.0);
    assert_eq!(trust["ratingCount"], 1);
    assert_eq!(trust["settledSales"], 1);
    assert_eq!(trust["lastDeliveredAt"], delivered["deliveredAt"]);
    let detail = server
        .get(&format!("/api/marketplace/listings/{rated}"))
        .ok();
    assert_eq!(
        trust["sellerReputation"],
        detail["listing"]["sellerReputation"]
    );
    assert_eq!(
        trust["listingUrl"],
        format!("{}/api/marketplace/listings/{rated}", server.base)
    );
    let untouched = &items[0]["extensions"]["bourse"];
    assert_eq!(
        (
            &untouched["ratingAverage"],
            &untouched["ratingCount"],
            &untouched["lastDeliveredAt"]
        ),
        (&Value::Null, &json!(0), &Value::Null)
    );

    // Paging keeps the total.
    let second = server.get("/discovery/resources?limit=1&offset=1").ok();
    assert_eq!(
        second["pagination"],
        json!({"limit": 1, "offset": 1, "total": 2})
    );
    assert_eq!(
        second["items"][0]["resource"],
        purchase_url(&server, &rated)
    );
    let past = server.get("/discovery/resources?offset=5").ok();
    assert_eq!(past["items"], json!([]));
    assert_eq!(past["pagination"]["total"], 2);

    // A delisted listing leaves discovery.
    server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{fresh}/deactivate"),
            &seller.key,
            &json!({"reason": "stale"}),
        )
        .assert_status(200);
    let after = server.get("/discovery/resources").ok();
    assert_eq!(after["pagination"]["total"], 1);
}

#[test]
fn discovery_filters_are_applied_and_unknown_parameters_named() {
    let server = x402_server();
    let (seller, _twin) = server.seller("seller", b"berths");
    list(&server, &seller, "Port congestion", 2_500);
    list(&server, &seller, "Rail freight delays", 900);
    let total = |query: &str| -> Value {
        let page = server.get(&format!("/discovery/resources?{query}")).ok();
        let count = page["items"].as_array().unwrap().len();
        assert_eq!(json!(count), page["pagination"]["total"], "{query}: {page}");
        page["pagination"]["total"].clone()
    };
    for (query, expected) in [
        ("type=http", 2),
        ("type=mcp", 0),
        ("scheme=exact", 2),
        ("scheme=upto", 0),
        ("network=eip155:8453", 2),
        ("network=eip155:84532", 0),
        ("payTo=0x1111111111111111111111111111111111111111", 2),
        ("payTo=0X1111111111111111111111111111111111111111", 2),
        ("payTo=0x2222222222222222222222222222222222222222", 0),
        ("extensions=bazaar", 2),
        ("extensions=bazaar,bourse", 2),
        ("extensions=payment-identifier", 0),
        (
            "type=http&network=eip155:8453&scheme=exact&extensions=bourse",
            2,
        ),
    ] {
        assert_eq!(total(query), json!(expected), "{query}");
    }
    // Search applies the same filters.
    let searched = server
        .get("/discovery/search?query=congestion&network=eip155:84532")
        .ok();
    assert_eq!(searched["resources"], json!([]));

    // A parameter discovery does not know is named, and the rest still served.
    let named = server
        .get("/discovery/resources?colour=red&type=http&maxPrice=5")
        .ok();
    assert_eq!(named["unappliedFilters"], json!(["colour", "maxPrice"]));
    assert_eq!(named["pagination"]["total"], 2);
    let named = server.get("/discovery/search?query=port&offset=1").ok();
    assert_eq!(named["unappliedFilters"], json!(["offset"]));
}

#[test]
fn a_malformed_discovery_value_is_a_400_with_a_string_error() {
    let server = x402_server();
    for query in [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=1.5",
        "offset=-1",
        "type=ftp",
        "network=!!!",
        "network=base",
        "scheme=",
        "payTo=not%20an%20address",
        "extensions=bazaar,,bourse",
    ] {
        let error = x402_error(&server.get(&format!("/discovery/resources?{query}")));
        assert!(error.contains('`'), "{query}: {error}");
    }
    for query in [
        "",
        "query=",
        "query=port&cursor=bm9wZQ",
        "query=port&limit=0",
        "query=port&type=ftp",
    ] {
        x402_error(&server.get(&format!("/discovery/search?{query}")));
    }
    assert!(x402_error(&server.get("/discovery/resources?network=!!!")).contains("CAIP-2"));
    // A well-formed value is never refused, even an integral decimal or an empty limit.
    server
        .get("/discovery/resources?limit=5.0&offset=")
        .assert_status(200);
}

#[test]
fn without_the_x402_rail_discovery_answers_an_empty_list() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"berths");
    list(&server, &seller, "Port congestion", 2_500);
    let page = server.get("/discovery/resources").ok();
    assert_eq!(
        page,
        json!({"x402Version": 2, "items": [], "pagination": {"limit": 20, "offset": 0, "total": 0}})
    );
    let searched = server.get("/discovery/search?query=congestion").ok();
    assert_eq!(
        searched,
        json!({"x402Version": 2, "resources": [], "partialResults": false, "pagination": {"limit": 20, "cursor": null}})
    );
    // Malformed values are refused all the same.
    x402_error(&server.get("/discovery/resources?type=ftp"));
}

#[test]
fn discovery_search_finds_listings_by_title_word_and_pages_with_a_cursor() {
    let server = x402_server();
    let (seller, _twin) = server.seller("seller", b"berths");
    let first = list(&server, &seller, "Port congestion Rotterdam", 2_500);
    let second = list(&server, &seller, "Port congestion Antwerp", 2_500);
    let third = list(&server, &seller, "Congestion at Hamburg", 2_500);
    list(&server, &seller, "Rail freight delays", 900);

    let page = server
        .get("/discovery/search?query=congestion&limit=2")
        .ok();
    assert_documented("X402DiscoverySearch", &page);
    assert_eq!(page["partialResults"], false);
    let urls = |page: &Value| -> Vec<String> {
        page["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["resource"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        urls(&page),
        [
            purchase_url(&server, &third),
            purchase_url(&server, &second)
        ]
    );
    let cursor = page["pagination"]["cursor"].as_str().unwrap().to_owned();
    assert_eq!(page["pagination"]["limit"], 2);
    let next = server
        .get(&format!(
            "/discovery/search?query=congestion&limit=2&cursor={cursor}"
        ))
        .ok();
    assert_eq!(urls(&next), [purchase_url(&server, &first)]);
    assert_eq!(next["pagination"]["cursor"], Value::Null);

    // Every word must match; a word in no listing finds nothing; a wordless query nothing.
    let both = server.get("/discovery/search?query=port+antwerp").ok();
    assert_eq!(urls(&both), [purchase_url(&server, &second)]);
    let none = server.get("/discovery/search?query=bananas").ok();
    assert_eq!(none["resources"], json!([]));
    assert_eq!(none["pagination"]["cursor"], Value::Null);
    let wordless = server.get("/discovery/search?query=%20%21").ok();
    assert_eq!(wordless["resources"], json!([]));
}

/// The ARD 0.9 AI catalog's constraints (`ai-catalog.schema.json` of ards-project/ard-spec): a
/// closed top level and host, `specVersion` "1.0", and entries with a `urn:air:` identifier,
/// a display name, a type, and exactly one of `url` or `data`.
fn ard_shape() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["specVersion", "entries"],
        "additionalProperties": false,
        "properties": {
            "specVersion": {"enum": ["1.0"]},
            "host": {
                "type": "object",
                "required": ["displayName"],
                "additionalProperties": false,
                "properties": {
                    "displayName": {"type": "string"},
                    "identifier": {"type": "string"},
                    "documentationUrl": {"type": "string", "format": "uri"},
                    "logoUrl": {"type": "string", "format": "uri"},
                    "trustManifest": {"type": "object"}
                }
            },
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["identifier", "displayName", "type"],
                    "oneOf": [
                        {"required": ["url"], "not": {"required": ["data"]}},
                        {"required": ["data"], "not": {"required": ["url"]}}
                    ],
                    "properties": {
                        "identifier": {"type": "string", "pattern": "^urn:air:[a-zA-Z0-9.-]+(:[a-zA-Z0-9._-]+)+$"},
                        "displayName": {"type": "string"},
                        "type": {"type": "string"},
                        "url": {"type": "string", "format": "uri"},
                        "data": {"type": "object"},
                        "description": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "capabilities": {"type": "array", "items": {"type": "string"}},
                        "representativeQueries": {"type": "array", "minItems": 2, "maxItems": 5, "items": {"type": "string"}},
                        "version": {"type": "string"},
                        "updatedAt": {"type": "string", "format": "date-time"},
                        "metadata": {"type": "object"},
                        "trustManifest": {"type": "object"}
                    }
                }
            }
        }
    })
}

#[test]
fn the_ai_catalog_lists_the_marketplace_its_mcp_server_and_the_named_agents() {
    let server = TestServer::start();
    let named = server
        .post(
            "/api/agents/register",
            &json!({"name": "research-bot", "displayName": "Research Bot"}),
        )
        .expect(201);
    let handle = named["handle"].as_str().unwrap();
    let unnamed = server.party("quiet");

    let resp = server.get("/.well-known/ai-catalog.json");
    assert!(
        resp.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let catalog = resp.ok();
    assert_valid(&ard_shape(), &catalog);
    assert_documented("AiCatalog", &catalog);
    assert_eq!(catalog["specVersion"], "1.0");
    assert_eq!(catalog["host"]["displayName"], "bourse");
    assert_eq!(
        catalog["host"]["documentationUrl"],
        format!("{}/llms.txt", server.base)
    );
    let entries = catalog["entries"].as_array().unwrap();
    let entry = |identifier: &str| -> &Value {
        entries
            .iter()
            .find(|e| e["identifier"] == identifier)
            .unwrap_or_else(|| panic!("no {identifier} in {catalog:#}"))
    };
    let marketplace = entry("urn:air:127.0.0.1:bourse:marketplace");
    assert_eq!(marketplace["type"], "application/a2a-agent-card+json");
    assert_eq!(
        marketplace["url"],
        format!("{}/.well-known/agent-card.json", server.base)
    );
    let mcp = entry("urn:air:127.0.0.1:bourse:mcp");
    assert_eq!(mcp["type"], "application/mcp-server+json");
    assert_eq!(mcp["url"], format!("{}/server.json", server.base));
    server
        .get(server.path_of(mcp["url"].as_str().unwrap()))
        .assert_status(200);
    let agent = entry(&format!("urn:air:127.0.0.1:agents:{handle}"));
    assert_eq!(agent["displayName"], "Research Bot");
    assert_eq!(agent["type"], "application/a2a-agent-card+json");
    assert_eq!(
        agent["url"],
        format!(
            "{}/a2a/agents/{handle}/.well-known/agent-card.json",
            server.base
        )
    );
    assert_eq!(entries.len(), 3, "agents without a display name stay out");
    assert!(!catalog.to_string().contains(&unnamed.handle));

    // The same document at ard.json.
    assert_eq!(server.get("/.well-known/ard.json").ok(), catalog);

    // Linked from the API catalog, llms.txt and the front page.
    let linkset = server.get("/.well-known/api-catalog").json().to_string();
    for path in ["/.well-known/ai-catalog.json", "/discovery/resources"] {
        assert!(
            linkset.contains(&format!("{}{path}", server.base)),
            "{path}: {linkset}"
        );
    }
    let llms = server.get("/llms.txt").text();
    for path in [
        "/.well-known/ai-catalog.json",
        "/discovery/resources",
        "/discovery/search",
    ] {
        assert!(llms.contains(path), "{path} not in llms.txt");
    }
    let index = server
        .request("GET", "/", &[("accept", "application/json")], None)
        .ok();
    assert_eq!(
        index["links"]["aiCatalog"],
        format!("{}/.well-known/ai-catalog.json", server.base)
    );
    assert_eq!(
        index["links"]["x402Discovery"],
        format!("{}/discovery/resources", server.base)
    );
}

#[test]
fn the_x402_python_sdk_reads_the_402_and_both_discovery_answers() {
    let test = "discovery::the_x402_python_sdk_reads_the_402_and_both_discovery_answers";
    let Some(python) = std::env::var_os("BOURSE_X402_PYTHON").filter(|p| !p.is_empty()) else {
        skip_or_fail(
            test,
            "BOURSE_X402_PYTHON is not set (a Python with x402==2.25.0; .ci/test-tools makes one)",
        );
        return;
    };
    let server = x402_server();
    let (seller, _twin) = server.seller("seller", b"berths");
    let listing = list(&server, &seller, "Port congestion Rotterdam", 2_500);
    list(&server, &seller, "Rail freight delays", 900);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/x402_sdk/bazaar.py");
    let output = Command::new(python)
        .args([script, &server.base, &listing, "congestion"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the x402 SDK disagrees:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
