//! Registration, authentication, profile, lookup, key revocation, the chair.

use serde_json::{Value, json};

use crate::support::TestServer;

const PRIVATE_FIELDS: &[&str] = &["name", "email", "callbackUrl", "apiKey", "id", "keyHash"];

#[track_caller]
fn assert_public_card(card: &Value) {
    for field in PRIVATE_FIELDS {
        assert!(
            card.get(field).is_none(),
            "public card leaks `{field}`: {card}"
        );
    }
    let handle = card["handle"].as_str().unwrap();
    assert!(handle.starts_with("A-") && handle.len() == 10, "{handle}");
}

#[test]
fn register_returns_a_key_once_and_the_key_works_on_me() {
    let server = TestServer::start();
    let response = server.post(
        "/api/agents/register",
        &json!({"name": "research-bot", "displayName": "Research Bot", "email": "ops@example.com",
                "callbackUrl": "https://agent.example.com/hook"}),
    );
    response.assert_status(201);
    let body = response.json();
    let key = body["apiKey"].as_str().unwrap();
    let suffix = key
        .strip_prefix("svc_live_")
        .expect("key starts with svc_live_");
    assert!(
        suffix.len() >= 32
            && suffix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    let handle = body["handle"].as_str().unwrap();
    let tail = handle.strip_prefix("A-").unwrap();
    assert!(
        tail.len() == 8
            && tail
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
        "{handle}"
    );
    assert_eq!(body["name"], "research-bot");
    assert_eq!(body["connect"]["handle"], handle);
    assert!(
        body["connect"]["inboxUrl"]
            .as_str()
            .unwrap()
            .starts_with(&server.base)
    );
    assert!(body["connect"].get("chairHandle").is_some());
    uuid_like(body["id"].as_str().unwrap());

    let me = server.get_auth("/api/agents/me", key);
    let me = me.expect(200);
    assert_eq!(me["handle"], handle);
    assert_eq!(me["email"], "ops@example.com");
    assert_eq!(me["callbackUrl"], "https://agent.example.com/hook");
    assert!(
        me.get("apiKey").is_none(),
        "the key is shown only at registration"
    );
    assert_eq!(
        me["connect"]["lookupUrl"],
        format!("{}/api/agents/lookup?handle={handle}", server.base)
    );
}

fn uuid_like(id: &str) {
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(id.matches('-').count(), 4, "{id}");
}

#[test]
fn missing_unknown_and_malformed_credentials_are_401_with_www_authenticate() {
    let server = TestServer::start();
    for headers in [
        vec![],
        vec![("authorization", "Bearer svc_live_nope")],
        vec![("authorization", "Basic abc")],
    ] {
        let response = server.request("GET", "/api/agents/me", &headers, None);
        response.assert_error(401, "UNAUTHENTICATED");
        assert_eq!(response.header("www-authenticate"), Some("Bearer"));
    }
}

#[test]
fn registration_validates_fields_and_names_them() {
    // A production configuration: outbound calls must be https:// to public addresses.
    let server = TestServer::start_with(|config| config.allow_loopback_outbound = false);
    let cases = [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(101)}), "name"),
        (json!({"name": 5}), "name"),
        (json!({"name": "a", "email": "not-an-email"}), "email"),
        (
            json!({"name": "a", "callbackUrl": "http://insecure.example/"}),
            "callbackUrl",
        ),
        (
            json!({"name": "a", "callbackUrl": "https://user:pw@x.example/"}),
            "callbackUrl",
        ),
        (json!({"name": "a", "nmae": "typo"}), "nmae"),
        (
            json!({"name": "a", "callbackUrl": "https://127.0.0.1/hook"}),
            "callbackUrl",
        ),
        (
            json!({"name": "a", "callbackUrl": "https://[::ffff:169.254.169.254]/"}),
            "callbackUrl",
        ),
    ];
    for (body, field) in cases {
        let response = server.post("/api/agents/register", &body);
        response.assert_error(400, "INVALID_ARGUMENT");
        let message = response.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains(field), "{body} → {message}");
    }
    let listed = server.get("/api/agents").json();
    assert_eq!(listed["total"], 0, "refused registrations write nothing");
}

#[test]
fn public_list_and_lookup_leak_no_private_field() {
    let server = TestServer::start();
    let open = server.post(
        "/api/agents/register",
        &json!({"name": "secret-name", "displayName": "Shown", "email": "a@b.example", "callbackUrl": "https://h.example/x"}),
    );
    let open = open.json();
    let quiet = server.register("quiet-secret");

    let list = server.get("/api/agents?limit=10&offset=0");
    let list = list.expect(200);
    assert_eq!(list["total"], 2);
    let agents = list["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 2);
    agents.iter().for_each(assert_public_card);
    assert_eq!(agents[0]["displayName"], "Shown");
    assert!(
        agents[1].get("displayName").is_none(),
        "displayName only when set: {}",
        agents[1]
    );
    let text = String::from_utf8(server.get("/api/agents").body).unwrap();
    for secret in [
        "secret-name",
        "quiet-secret",
        "a@b.example",
        "h.example",
        open["id"].as_str().unwrap(),
    ] {
        assert!(!text.contains(secret), "list leaks {secret}");
    }

    let lower = quiet["handle"].as_str().unwrap().to_lowercase();
    let by_handle = server
        .get(&format!("/api/agents/lookup?handle={lower}"))
        .json();
    assert_eq!(by_handle["agents"].as_array().unwrap().len(), 1);
    assert_public_card(&by_handle["agents"][0]);
    assert_eq!(by_handle["agents"][0]["verified"], false);

    let by_name = server.get("/api/agents/lookup?name=Shown").json();
    assert_eq!(by_name["agents"][0]["handle"], open["handle"]);
    assert_public_card(&by_name["agents"][0]);
    let by_private_name = server.get("/api/agents/lookup?name=secret-name").json();
    assert_eq!(
        by_private_name["agents"],
        json!([]),
        "private names are not searchable"
    );

    server
        .get("/api/agents/lookup")
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get("/api/agents/lookup?handle=A-1&name=x")
        .assert_error(400, "INVALID_ARGUMENT");
}

#[test]
fn agent_list_paginates_and_accepts_integral_floats() {
    let server = TestServer::start();
    let handles: Vec<String> = (0..5)
        .map(|i| {
            server.register(&format!("a{i}"))["handle"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let page = server.get("/api/agents?limit=2.0&offset=2").json();
    assert_eq!(page["total"], 5);
    let got: Vec<&str> = page["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["handle"].as_str().unwrap())
        .collect();
    assert_eq!(got, vec![handles[2].as_str(), handles[3].as_str()]);
    server
        .get("/api/agents?limit=0")
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get("/api/agents?limit=2.5")
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get("/api/agents?offset=-1")
        .assert_error(400, "INVALID_ARGUMENT");
    // An empty value is not the default (the schema says integer), and a parameter given
    // twice is refused, as on every list.
    server
        .get("/api/agents?limit=")
        .assert_invalid_naming("limit");
    server
        .get("/api/agents?offset=")
        .assert_invalid_naming("offset");
    server
        .get("/api/agents?limit=1&limit=2")
        .assert_invalid_naming("limit");
    assert_eq!(
        server.get("/api/agents?utm=a&utm=b").expect(200)["total"],
        5
    );
}

#[test]
fn patch_me_sets_and_clears_profile_fields() {
    let server = TestServer::start();
    let agent = server.register("patcher");
    let key = agent["apiKey"].as_str().unwrap();
    let updated = server.send_auth(
        "PATCH",
        "/api/agents/me",
        key,
        &json!({"displayName": "Patched", "email": "p@q.example"}),
    );
    updated.assert_status(200);
    assert_eq!(updated.json()["displayName"], "Patched");
    let cleared = server
        .send_auth("PATCH", "/api/agents/me", key, &json!({"email": null}))
        .json();
    assert_eq!(cleared["email"], Value::Null);
    assert_eq!(cleared["displayName"], "Patched", "absent fields are kept");
    server
        .send_auth(
            "PATCH",
            "/api/agents/me",
            key,
            &json!({"callbackUrl": "ftp://x"}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    // A URL is taken as sent, as on registration: whitespace around it is refused, not trimmed;
    // a port that does not fit is refused, not dropped.
    for url in [
        " https://hooks.example/cb",
        "https://hooks.example:99999/cb",
    ] {
        server
            .send_auth(
                "PATCH",
                "/api/agents/me",
                key,
                &json!({ "callbackUrl": url }),
            )
            .assert_error(400, "INVALID_ARGUMENT");
    }
    server
        .send_auth("PATCH", "/api/agents/me", key, &json!({"name": "renamed"}))
        .assert_error(400, "INVALID_ARGUMENT");
    let me = server.get_auth("/api/agents/me", key).json();
    assert_eq!(me["name"], "patcher", "a refused patch changes nothing");
}

#[test]
fn revoke_rotates_the_key_and_keeps_the_identity() {
    let server = TestServer::start();
    let agent = server.register("rotator");
    let old_key = agent["apiKey"].as_str().unwrap();
    let response = server.send_auth("POST", "/api/agents/keys/revoke", old_key, &json!({}));
    response.assert_status(200);
    let new_key = response.json()["newApiKey"].as_str().unwrap().to_owned();
    assert!(new_key.starts_with("svc_live_") && new_key != old_key);

    server
        .get_auth("/api/agents/me", old_key)
        .assert_error(401, "UNAUTHENTICATED");
    let me = server.get_auth("/api/agents/me", &new_key);
    me.assert_status(200);
    assert_eq!(me.json()["handle"], agent["handle"]);
    assert_eq!(me.json()["id"], agent["id"]);
}

#[test]
fn eleventh_registration_in_an_hour_is_rate_limited_with_retry_after() {
    let server = TestServer::start();
    for i in 0..10 {
        server.register(&format!("bot-{i}"));
    }
    let refused = server.post("/api/agents/register", &json!({"name": "bot-11"}));
    refused.assert_error(429, "RATE_LIMITED");
    let retry_after: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=3600).contains(&retry_after), "{retry_after}");
    assert_eq!(server.get("/api/agents").json()["total"], 10);

    server.clock.advance(jiff::SignedDuration::from_secs(3600));
    server
        .post("/api/agents/register", &json!({"name": "bot-11"}))
        .assert_status(201);
}

#[test]
fn chair_is_unbound_until_the_operator_binds_it_then_verified() {
    let server = TestServer::start();
    server
        .get("/api/agents/lookup?handle=chair")
        .assert_error(503, "CHAIR_UNBOUND");
    let chair = server.register("the-chair");
    let handle = chair["handle"].as_str().unwrap();

    server
        .send_auth(
            "PUT",
            "/api/operator/chair",
            "wrong",
            &json!({"handle": handle}),
        )
        .assert_error(401, "UNAUTHENTICATED");
    let agent_key = chair["apiKey"].as_str().unwrap();
    server
        .send_auth(
            "PUT",
            "/api/operator/chair",
            agent_key,
            &json!({"handle": handle}),
        )
        .assert_error(401, "UNAUTHENTICATED");
    server
        .send_auth(
            "PUT",
            "/api/operator/chair",
            &server.operator_key(),
            &json!({"handle": "A-NOPE0000"}),
        )
        .assert_error(404, "NOT_FOUND");
    let bound = server.send_auth(
        "PUT",
        "/api/operator/chair",
        &server.operator_key(),
        &json!({"handle": handle}),
    );
    bound.assert_status(200);

    let lookup = server.get("/api/agents/lookup?handle=chair").json();
    assert_eq!(lookup["agents"][0]["handle"], handle);
    assert_eq!(lookup["agents"][0]["verified"], true);
    let other = server.register("someone");
    let me = server
        .get_auth("/api/agents/me", other["apiKey"].as_str().unwrap())
        .json();
    assert_eq!(me["connect"]["chairHandle"], handle);

    let unbound = server.request(
        "DELETE",
        "/api/operator/chair",
        &[(
            "authorization",
            &format!("Bearer {}", server.operator_key()),
        )],
        None,
    );
    unbound.assert_status(200);
    server
        .get("/api/agents/lookup?handle=chair")
        .assert_error(503, "CHAIR_UNBOUND");
}

#[test]
fn operator_can_override_provenance_fields() {
    let server = TestServer::start();
    let op = server.operator_key();
    let updated = server.send_auth(
        "PATCH",
        "/api/operator/provenance",
        &op,
        &json!({"brand": "Example Exchange", "network": ["x.example"]}),
    );
    updated.assert_status(200);
    let public = server.get("/api/signing-key").json();
    assert_eq!(public["provenance"]["brand"], "Example Exchange");
    assert_eq!(public["provenance"]["network"], json!(["x.example"]));
    server
        .send_auth(
            "PATCH",
            "/api/operator/provenance",
            &op,
            &json!({"brand": 5}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    let reset = server.send_auth(
        "PATCH",
        "/api/operator/provenance",
        &op,
        &json!({"brand": null}),
    );
    assert_eq!(
        reset.json()["provenance"]["brand"],
        "bourse",
        "null restores the default"
    );
    server
        .send_auth(
            "PATCH",
            "/api/operator/provenance",
            &op,
            &json!({"receipt": {}}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
}

#[test]
fn concurrent_rotations_with_one_key_leave_exactly_one_working_key() {
    let server = TestServer::start();
    let agent = server.register("racer");
    let key = agent["apiKey"].as_str().unwrap().to_owned();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (base, key) = (server.base.clone(), key.clone());
            std::thread::spawn(move || {
                let response = crate::support::Client::new(&base).send_auth(
                    "POST",
                    "/api/agents/keys/revoke",
                    &key,
                    &json!({}),
                );
                (
                    response.status,
                    response.json()["newApiKey"].as_str().map(str::to_owned),
                )
            })
        })
        .collect();
    let results: Vec<(u16, Option<String>)> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    let winners: Vec<&String> = results
        .iter()
        .filter(|(s, _)| *s == 200)
        .filter_map(|(_, k)| k.as_ref())
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    assert!(
        results.iter().all(|(s, _)| *s == 200 || *s == 401),
        "{results:?}"
    );
    assert_eq!(
        server.get_auth("/api/agents/me", winners[0]).status,
        200,
        "the key that was handed out works"
    );
}

#[test]
fn concurrent_edits_of_different_fields_both_land() {
    let server = TestServer::start();
    for round in 0..10 {
        let agent = server.register(&format!("editor-{round}"));
        let key = agent["apiKey"].as_str().unwrap().to_owned();
        let (base_a, key_a, base_b, key_b) = (
            server.base.clone(),
            key.clone(),
            server.base.clone(),
            key.clone(),
        );
        let a = std::thread::spawn(move || {
            crate::support::Client::new(&base_a)
                .send_auth(
                    "PATCH",
                    "/api/agents/me",
                    &key_a,
                    &json!({"displayName": format!("Both {round}")}),
                )
                .status
        });
        let b = std::thread::spawn(move || {
            crate::support::Client::new(&base_b)
                .send_auth(
                    "PATCH",
                    "/api/agents/me",
                    &key_b,
                    &json!({"email": "both@x.example"}),
                )
                .status
        });
        assert_eq!((a.join().unwrap(), b.join().unwrap()), (200, 200));
        let me = server.get_auth("/api/agents/me", &key).json();
        assert_eq!(
            (me["displayName"].clone(), me["email"].clone()),
            (json!(format!("Both {round}")), json!("both@x.example"))
        );
        if round == 9 {
            break;
        }
        server.clock.advance(jiff::SignedDuration::from_hours(1)); // registration limit
    }
}
