//! What the contract's schemas state, the server enforces: requests the fuzzing step of CI found
//! the two disagreeing on, settled one way or the other (see `.ci/schemathesis`).

use serde_json::json;

use crate::support::TestServer;

#[test]
fn a_patch_without_a_body_is_refused_and_an_empty_object_changes_nothing() {
    let server = TestServer::start();
    let agent = server.register("patcher");
    let key = agent["apiKey"].as_str().unwrap();
    let auth = format!("Bearer {key}");
    server
        .request("PATCH", "/api/agents/me", &[("authorization", &auth)], None)
        .assert_error(400, "INVALID_JSON");
    let same = server
        .send_auth("PATCH", "/api/agents/me", key, &json!({}))
        .ok();
    assert_eq!(same["name"], "patcher");
    let operator = format!("Bearer {}", server.operator_key());
    server
        .request(
            "PATCH",
            "/api/operator/provenance",
            &[("authorization", &operator)],
            Some(b""),
        )
        .assert_error(400, "INVALID_JSON");
}

#[test]
fn the_sandbox_buttons_answer_404_for_an_id_that_names_nothing() {
    let server = TestServer::start();
    for path in [
        "/sandbox/checkout/cs_7a6X0ix_AxwoXEqModBCnClB3xgipMWu/pay",
        "/sandbox/checkout/cs_7a6X0ix_AxwoXEqModBCnClB3xgipMWu/cancel",
        "/sandbox/connect/RgqM27oBrldJT_Zw9jcg9Q/complete",
    ] {
        server
            .request_unredirected("POST", path, &[], Some(b""))
            .assert_error(404, "NOT_FOUND");
    }
}

#[test]
fn a_seller_email_must_be_an_address_as_everywhere_else() {
    let server = TestServer::start();
    let agent = server.register("seller-mail");
    let key = agent["apiKey"].as_str().unwrap();
    let refused = server.send_auth("POST", "/api/sell/register", key, &json!({"email": "00"}));
    refused.assert_error(400, "INVALID_ARGUMENT");
    assert!(refused.text().contains("`email`"), "{}", refused.text());
    server
        .send_auth(
            "POST",
            "/api/sell/register",
            key,
            &json!({"email": "payouts@example.com"}),
        )
        .assert_status(200);
}

#[test]
fn a_callback_host_that_resolves_to_a_refused_address_is_a_422() {
    let server = TestServer::start_with(|config| config.allow_loopback_outbound = false);
    server
        .post(
            "/api/agents/register",
            &json!({"name": "hooked", "callbackUrl": "https://localhost/hook"}),
        )
        .assert_error(422, "DESTINATION_REFUSED");
    // A literal address is refused by the URL's own shape, as the schema's pattern says.
    server
        .post(
            "/api/agents/register",
            &json!({"name": "hooked", "callbackUrl": "https://127.0.0.1/hook"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    let agent = server.register("hooked");
    let key = agent["apiKey"].as_str().unwrap();
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            key,
            &json!({"callbackUrl": "https://localhost/hook"}),
        )
        .assert_error(422, "DESTINATION_REFUSED");
}

/// The schema's enum of vertical slugs is the taxonomy the server serves.
#[test]
fn the_documented_verticals_are_the_served_ones() {
    let server = crate::support::TestServer::start();
    let document: serde_json::Value =
        serde_json::from_str(include_str!("../../assets/openapi.json")).unwrap();
    let mut documented: Vec<String> = document["components"]["schemas"]["CreateListingRequest"]
        ["properties"]["verticalSlug"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let served = server.get("/api/verticals").expect(200);
    let mut served: Vec<String> = served["verticals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["slug"].as_str().unwrap().to_owned())
        .collect();
    documented.sort();
    served.sort();
    assert_eq!(documented, served);
    // Browse's `vertical` parameter takes the same slugs, and nothing else.
    let browse = document["paths"]["/api/marketplace/listings"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "vertical")
        .unwrap();
    let mut browsed: Vec<String> = browse["schema"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    browsed.sort();
    assert_eq!(browsed, served);
}

/// Attachments: a media type is taken as sent, and base64 must be canonical.
#[test]
fn attachment_media_types_and_base64_follow_the_schema() {
    let server = crate::support::TestServer::start();
    let opened = server
        .post(
            "/api/inquiries",
            &serde_json::json!({"subject": "Data request", "message": "Do you have tides?"}),
        )
        .expect(201);
    let id = opened["inquiryId"]
        .as_str()
        .or(opened["id"].as_str())
        .unwrap()
        .to_owned();
    let post = |content_type: &str, data: &str| {
        server.post(
            &format!("/api/inquiries/{id}/messages"),
            &serde_json::json!({"message": "attached", "attachments": [
                {"name": "a.txt", "contentType": content_type, "data": data}
            ]}),
        )
    };
    post("text/plain; charset=utf-8", "aGk=").assert_status(201);
    post(" text/plain", "aGk=").assert_error(400, "INVALID_ARGUMENT");
    post("text/plain", "aGl=").assert_error(400, "INVALID_ARGUMENT");
}

/// A body's `api_key` is a string that is not blank, or absent, even when the Bearer header is
/// what authenticates; the schemas say so with a pattern naming the server's blanks (Unicode's
/// White_Space, U+0085 and U+3000 among them), not JSON Schema's `\S`, whose blanks differ.
#[test]
fn a_body_api_key_that_is_not_a_string_is_refused() {
    let server = TestServer::start();
    let seller = server.party("keyed seller");
    let document: serde_json::Value =
        serde_json::from_str(include_str!("../../assets/openapi.json")).unwrap();
    let schema = &document["components"]["schemas"]["BecomeSellerRequest"]["properties"]["api_key"];
    assert_eq!(
        schema["pattern"],
        "[^\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]",
        "{schema}"
    );
    for bad in [
        json!(5),
        json!(null),
        json!(""),
        json!(" "),
        json!("\t\n"),
        json!("\u{85}\u{3000}"),
    ] {
        server
            .send_auth(
                "POST",
                "/api/sell/register",
                &seller.key,
                &json!({"name": "Keyed Seller", "api_key": bad}),
            )
            .assert_error(400, "INVALID_ARGUMENT");
    }
}

/// The provenance block is signed into every public answer as canonical JSON (RFC 8785): an
/// integer beyond ±(2^53−1) in `patent` or `marketing` is refused, as the schemas say, and the
/// bound itself is accepted.
#[test]
fn provenance_objects_hold_only_integers_canonical_json_carries() {
    let server = TestServer::start();
    let operator = server.operator_key();
    for field in ["patent", "marketing"] {
        for big in [
            json!(9_007_199_254_740_992_u64),
            json!(-9_007_199_254_740_992_i64),
        ] {
            server
                .send_auth(
                    "PATCH",
                    "/api/operator/provenance",
                    &operator,
                    &json!({ field: {"figures": [{"n": big}]} }),
                )
                .assert_invalid_naming(field);
        }
        server
            .send_auth(
                "PATCH",
                "/api/operator/provenance",
                &operator,
                &json!({ field: {"n": 9_007_199_254_740_991_u64} }),
            )
            .assert_status(200);
        // Past 2^53 a number written with an exponent or a fraction is an integer too, and no
        // more exact: refused alike.
        let auth = format!("Bearer {operator}");
        for number in ["1e16", "-3.1241410690353212e16", "18446744073709551616"] {
            let body = format!(r#"{{"{field}": {{"n": [{number}]}}}}"#);
            server
                .request(
                    "PATCH",
                    "/api/operator/provenance",
                    &[
                        ("authorization", &auth),
                        ("content-type", "application/json"),
                    ],
                    Some(body.as_bytes()),
                )
                .assert_invalid_naming(field);
        }
    }
    // The verifier refuses an integer written beyond the bound, and keeps a double as full JCS
    // does (its schema states no bound: .ci/schemathesis.toml says why).
    let verify = |body: &[u8]| {
        server.request(
            "POST",
            "/api/verify-receipt",
            &[("content-type", "application/json")],
            Some(body),
        )
    };
    verify(br#"{"signed": {"n": 9007199254740992, "signature": {"alg": "Ed25519", "keyId": "k", "signedAt": "t", "digest": "d", "signature": "s"}}}"#)
        .assert_error(400, "INVALID_JSON");
    verify(br#"{"signed": {"n": 1e16, "signature": {"alg": "Ed25519", "keyId": "k", "signedAt": "t", "digest": "d", "signature": "s"}}}"#).assert_status(200);
    let document: serde_json::Value =
        serde_json::from_str(include_str!("../../assets/openapi.json")).unwrap();
    let schemas = &document["components"]["schemas"];
    // Each such object's schema says so, and refuses what the server refuses.
    let registry = jsonschema::Registry::new()
        .add("urn:bourse:openapi", &document)
        .unwrap()
        .prepare()
        .unwrap();
    for (schema, field) in [
        ("ProvenanceUpdateRequest", "patent"),
        ("ProvenanceUpdateRequest", "marketing"),
        ("FeeAnnouncementRequest", "schedule"),
        ("CreateListingRequest", "preview"),
        ("CreateListingRequest", "demographics"),
        ("UpdateListingRequest", "preview"),
        ("CreateHealthListingRequest", "preview"),
    ] {
        let property = &schemas[schema]["properties"][field];
        assert!(
            property["description"].to_string().contains("±(2^53−1)"),
            "{schema}.{field}"
        );
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .with_registry(&registry)
            .build(&json!({"$ref": format!("urn:bourse:openapi#/components/schemas/{schema}/properties/{field}")}))
            .unwrap();
        let nested = |n: serde_json::Value| json!({"a": [{"b": n}], "signature": {"alg": "Ed25519", "keyId": "k", "signedAt": "t", "digest": "d", "signature": "s"}});
        assert!(
            !validator.is_valid(&nested(json!(9_007_199_254_740_992_u64))),
            "{schema}.{field}"
        );
        assert!(
            !validator.is_valid(&nested(json!(1e16))),
            "{schema}.{field}"
        );
        assert!(
            validator.is_valid(&nested(json!(9_007_199_254_740_991_u64))),
            "{schema}.{field}"
        );
        assert!(validator.is_valid(&nested(json!(0.5))), "{schema}.{field}");
    }
}
