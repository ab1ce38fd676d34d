//! The A2A face through plain HTTP, no SDK (the second independent client): the version
//! refusal on both bindings, the HTTP+JSON binding's shapes, ListTasks' order and filters, and
//! the A2A errors of what is not offered.

use serde_json::{Value, json};

use super::{FREE_DELIVERABLE, ids, listings, serve, state};
use crate::support::Client;

/// A plain-HTTP A2A request: `method` at `path` with `A2A-Version: 1.0` unless `version` says
/// otherwise (`None`: no header), a Bearer `key` if any, and a body of `media` type.
fn a2a(
    client: &Client,
    method: &str,
    path: &str,
    version: Option<&str>,
    key: Option<&str>,
    body: Option<(&str, &Value)>,
) -> crate::support::Resp {
    let auth = key.map(|key| format!("Bearer {key}"));
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if let Some(version) = version {
        headers.push(("a2a-version", version));
    }
    if let Some(auth) = &auth {
        headers.push(("authorization", auth));
    }
    let bytes = body.map(|(media, body)| {
        headers.push(("content-type", media));
        body.to_string().into_bytes()
    });
    client.request(method, path, &headers, bytes.as_deref())
}

/// A `google.rpc.Status` error of the HTTP+JSON binding: its HTTP status, gRPC status and
/// ErrorInfo reason.
#[track_caller]
fn assert_status_error(resp: &crate::support::Resp, http: u16, status: &str, reason: &str) {
    let body = resp.expect(http);
    let error = &body["error"];
    assert_eq!(error["code"], http, "{body}");
    assert_eq!(error["status"], status, "{body}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    let detail = &error["details"][0];
    assert_eq!(
        detail["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{body}"
    );
    assert_eq!(detail["reason"], reason, "{body}");
}

/// g. A request without `A2A-Version` (A2A reads it as 0.3), or with another major version, is
/// VERSION_NOT_SUPPORTED: JSON-RPC error -32009 with HTTP 200, and on HTTP+JSON a 400 whose
/// status is FAILED_PRECONDITION; `1.0`, as a header or a query parameter, is served.
#[test]
fn a_request_without_a2a_version_is_version_not_supported_on_both_bindings() {
    let (server, _dir) = serve();
    let client = &server.client;
    let rpc = json!({"jsonrpc": "2.0", "id": "v-1", "method": "ListTasks", "params": {}});
    let send = json!({"message": {"messageId": "v-2", "role": "ROLE_USER", "parts": [{"data": {"fees": {}}}]}});
    for version in [None, Some("0.3"), Some("2.0")] {
        let answered = a2a(
            client,
            "POST",
            "/a2a",
            version,
            None,
            Some(("application/json", &rpc)),
        );
        let body = answered.ok();
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], "v-1", "{body}");
        assert_eq!(body["error"]["code"], -32009, "{version:?}: {body}");
        let detail = &body["error"]["data"][0];
        assert_eq!(detail["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(detail["reason"], "VERSION_NOT_SUPPORTED", "{body}");
        assert_eq!(detail["domain"], "a2a-protocol.org", "{body}");

        let answered = a2a(
            client,
            "POST",
            "/a2a/message:send",
            version,
            None,
            Some(("application/a2a+json", &send)),
        );
        assert_status_error(
            &answered,
            400,
            "FAILED_PRECONDITION",
            "VERSION_NOT_SUPPORTED",
        );
        let answered = a2a(client, "GET", "/a2a/tasks", version, None, None);
        assert_status_error(
            &answered,
            400,
            "FAILED_PRECONDITION",
            "VERSION_NOT_SUPPORTED",
        );
    }
    // 1.0 is served, as the header or as the query parameter A2A allows instead.
    let fees = a2a(
        client,
        "POST",
        "/a2a/message:send",
        Some("1.0"),
        None,
        Some(("application/a2a+json", &send)),
    )
    .ok();
    assert_eq!(fees["message"]["role"], "ROLE_AGENT", "{fees}");
    let by_query = a2a(
        client,
        "POST",
        "/a2a/message:send?A2A-Version=1.0",
        None,
        None,
        Some(("application/a2a+json", &send)),
    )
    .ok();
    assert!(
        by_query["message"]["parts"][0]["data"].is_object(),
        "{by_query}"
    );
    let rpc_fees = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": send});
    let body = a2a(
        client,
        "POST",
        "/a2a",
        Some("1.0"),
        None,
        Some(("application/json", &rpc_fees)),
    )
    .ok();
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["result"]["message"]["role"], "ROLE_AGENT", "{body}");
}

/// Every member name of `value`, at any depth, outside the seller's content and the Purchase
/// resource (bourse's own REST shape, carried as metadata).
fn member_names(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                names.push(name.clone());
                if !matches!(name.as_str(), "data" | "metadata") {
                    member_names(member, names);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| member_names(item, names)),
        _ => {}
    }
}

/// The HTTP+JSON binding from plain HTTP, the second independent client: `POST
/// /a2a/message:send`, `GET /a2a/tasks/{id}`, `GET /a2a/tasks?pageSize=…` and `POST
/// /a2a/tasks/{id}:cancel` with `application/a2a+json`. Members are camelCase, enums by their
/// full names, `nextPageToken` is always present (empty on the last page), a listed task has
/// `artifacts` only with `includeArtifacts=true`, errors are `google.rpc.Status`.
#[test]
fn the_http_json_binding_answers_a_plain_client_in_a2a_shapes() {
    let (server, _dir) = serve();
    let client = &server.client;
    let (free, paid, _, _twins) = listings(client);
    let [buyer, other] = client.parties(["a2a-plain-buyer", "a2a-plain-other"]);
    const A2A_JSON: &str = "application/a2a+json";
    let buy = |listing: &str, message_id: &str| {
        let body = json!({"message": {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"data": {"listingId": listing}, "mediaType": "application/json"}],
        }});
        let answered = a2a(
            client,
            "POST",
            "/a2a/message:send",
            Some("1.0"),
            Some(&buyer.key),
            Some((A2A_JSON, &body)),
        );
        assert_eq!(answered.header("content-type"), Some(A2A_JSON));
        answered.ok()
    };
    let get = |path: &str, key: &str| a2a(client, "GET", path, Some("1.0"), Some(key), None);

    // A free purchase: a completed task with its deliverable.
    let sent = buy(&free, "plain-1");
    let task = &sent["task"];
    assert_eq!(
        sent.as_object().unwrap().len(),
        1,
        "one member, `task`: {sent}"
    );
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    let free_id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(task["contextId"], free_id.as_str(), "{task}");
    assert!(
        task["status"]["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT", "{task}");
    assert_eq!(
        task["status"]["message"]["taskId"],
        free_id.as_str(),
        "{task}"
    );
    let artifact = &task["artifacts"][0];
    assert!(
        artifact["artifactId"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert_eq!(artifact["parts"][0]["text"], FREE_DELIVERABLE, "{task}");
    assert!(
        artifact["parts"][0]["mediaType"]
            .as_str()
            .is_some_and(|m| m.starts_with("text/csv"))
    );
    let mut names = Vec::new();
    member_names(&sent, &mut names);
    let not_camel: Vec<&String> = names.iter().filter(|n| n.contains('_')).collect();
    assert!(not_camel.is_empty(), "{not_camel:?} in {sent}");

    // A paid purchase: waiting for its checkout.
    let pending = buy(&paid, "plain-2");
    let pending_id = pending["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        state(&pending["task"]),
        "TASK_STATE_INPUT_REQUIRED",
        "{pending}"
    );
    assert!(pending["task"].get("artifacts").is_none(), "{pending}");

    // GetTask reads the deliverable live; another agent cannot read it.
    let read = get(&format!("/a2a/tasks/{free_id}"), &buyer.key).ok();
    assert_eq!(state(&read), "TASK_STATE_COMPLETED", "{read}");
    assert_eq!(read["artifacts"][0]["parts"][0]["text"], FREE_DELIVERABLE);
    let theirs = get(&format!("/a2a/tasks/{free_id}"), &other.key);
    assert_status_error(&theirs, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let unknown = get(
        "/a2a/tasks/00000000-0000-4000-8000-000000000000",
        &buyer.key,
    );
    assert_status_error(&unknown, 404, "NOT_FOUND", "TASK_NOT_FOUND");

    // ListTasks: newest first, a page at a time, the token always present.
    let first = get("/a2a/tasks?pageSize=1", &buyer.key).ok();
    assert_eq!(ids(&first["tasks"]), [pending_id.as_str()], "{first}");
    assert_eq!(first["pageSize"], 1, "{first}");
    assert_eq!(first["totalSize"], 2, "{first}");
    let token = first["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty(), "{first}");
    let last = get(
        &format!("/a2a/tasks?pageSize=1&pageToken={token}"),
        &buyer.key,
    )
    .ok();
    assert_eq!(ids(&last["tasks"]), [free_id.as_str()], "{last}");
    assert_eq!(
        last["nextPageToken"], "",
        "present, and empty on the last page: {last}"
    );
    assert!(last["tasks"][0].get("artifacts").is_none(), "{last}");
    let whole = get("/a2a/tasks", &buyer.key).ok();
    assert_eq!(whole["nextPageToken"], "", "{whole}");
    assert_eq!(whole["pageSize"], 50, "the default page size: {whole}");
    assert!(
        whole["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("artifacts").is_none()),
        "{whole}"
    );
    let waiting = get("/a2a/tasks?status=TASK_STATE_INPUT_REQUIRED", &buyer.key).ok();
    assert_eq!(ids(&waiting["tasks"]), [pending_id.as_str()], "{waiting}");
    let with = get("/a2a/tasks?includeArtifacts=true", &buyer.key).ok();
    assert_eq!(
        ids(&with["tasks"]),
        [pending_id.clone(), free_id.clone()],
        "{with}"
    );
    let none = get("/a2a/tasks", &other.key).ok();
    assert_eq!(none["tasks"], json!([]), "{none}");
    assert_eq!(none["nextPageToken"], "", "{none}");
    assert_eq!(none["totalSize"], 0, "{none}");
    let anonymous = a2a(client, "GET", "/a2a/tasks", Some("1.0"), None, None);
    assert_status_error(&anonymous, 401, "UNAUTHENTICATED", "UNAUTHENTICATED");
    assert!(
        anonymous
            .header("www-authenticate")
            .is_some_and(|h| h.starts_with("Bearer "))
    );

    // CancelTask: the waiting purchase is canceled; a second cancel is refused.
    let cancel = |id: &str| {
        a2a(
            client,
            "POST",
            &format!("/a2a/tasks/{id}:cancel"),
            Some("1.0"),
            Some(&buyer.key),
            Some((A2A_JSON, &json!({"id": id}))),
        )
    };
    let canceled = cancel(&pending_id);
    assert_eq!(canceled.header("content-type"), Some(A2A_JSON));
    let canceled = canceled.ok();
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    assert_eq!(canceled["id"], pending_id.as_str());
    assert_status_error(
        &cancel(&pending_id),
        400,
        "FAILED_PRECONDITION",
        "TASK_NOT_CANCELABLE",
    );
    assert_status_error(
        &cancel(&free_id),
        400,
        "FAILED_PRECONDITION",
        "TASK_NOT_CANCELABLE",
    );
    let canceled_list = get("/a2a/tasks?status=TASK_STATE_CANCELED", &buyer.key).ok();
    assert_eq!(
        ids(&canceled_list["tasks"]),
        [pending_id],
        "{canceled_list}"
    );
}

/// ListTasks as A2A 1.0 defines it (§3.1.4, `ListTasksRequest`), where bourse differs today
/// (reported, not fixed here; run with `--ignored` to see it fail): tasks sorted by their status
/// timestamp, newest first (bourse sorts by purchase creation); `statusTimestampAfter` filters
/// (bourse ignores it); `status` returns only tasks in that state (`TASK_STATE_WORKING` answers
/// completed ones); `includeArtifacts=true` includes a completed task's artifacts (bourse lists
/// none).
#[test]
fn list_tasks_orders_by_status_time_and_honours_its_filters() {
    let (server, _dir) = serve();
    let client = &server.client;
    let (free, paid, _, _twins) = listings(client);
    let buyer = client.party("a2a-list-buyer");
    let buy = |listing: &str, message_id: &str| {
        let body = json!({"message": {"messageId": message_id, "role": "ROLE_USER",
            "parts": [{"data": {"listingId": listing}}]}});
        let sent = a2a(
            client,
            "POST",
            "/a2a/message:send",
            Some("1.0"),
            Some(&buyer.key),
            Some(("application/a2a+json", &body)),
        );
        sent.ok()["task"].clone()
    };
    let get = |path: &str| a2a(client, "GET", path, Some("1.0"), Some(&buyer.key), None).ok();
    // Bought first, paid last: its status is the newest.
    let paid_task = buy(&paid, "list-1");
    let free_task = buy(&free, "list-2");
    client.pay_checkout(&paid_task["metadata"]["bourse.purchase"]);
    let paid_id = paid_task["id"].as_str().unwrap();
    let read = get(&format!("/a2a/tasks/{paid_id}"));
    assert_eq!(state(&read), "TASK_STATE_COMPLETED", "{read}");
    assert!(
        read["status"]["timestamp"].as_str() > free_task["status"]["timestamp"].as_str(),
        "{read}\n{free_task}"
    );
    let failures: Vec<String> = [
        ("/a2a/tasks", "sorted by status timestamp, newest first"),
        (
            "/a2a/tasks?statusTimestampAfter=2099-01-01T00:00:00Z",
            "no task changed after 2099",
        ),
        (
            "/a2a/tasks?status=TASK_STATE_WORKING",
            "no task is TASK_STATE_WORKING",
        ),
        (
            "/a2a/tasks?includeArtifacts=true",
            "completed tasks with their artifacts",
        ),
    ]
    .into_iter()
    .filter_map(|(path, rule)| {
        let list = get(path);
        let tasks = list["tasks"].as_array().unwrap();
        let holds = match rule {
            "sorted by status timestamp, newest first" => {
                ids(&list["tasks"]) == [paid_id, free_task["id"].as_str().unwrap()]
            }
            "completed tasks with their artifacts" => {
                tasks.len() == 2 && tasks.iter().all(|t| t["artifacts"].is_array())
            }
            _ => tasks.is_empty(),
        };
        (!holds).then(|| format!("GET {path}: expected {rule}; got {list}"))
    })
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What the card does not offer, on the HTTP+JSON binding as on JSON-RPC (where `Method::named`
/// answers each with its A2A error): push notification configs and the extended card
/// answer a `google.rpc.Status` with A2A's reason, so the SDK raises the same error over
/// HTTP+JSON as over JSON-RPC.
#[test]
fn http_json_answers_what_is_not_offered_with_a2a_errors() {
    let (server, _dir) = serve();
    let client = &server.client;
    let buyer = client.party("a2a-unoffered");
    let failures: Vec<String> = [
        (
            "POST",
            "/a2a/tasks/t-1/pushNotificationConfigs",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "GET",
            "/a2a/tasks/t-1/pushNotificationConfigs/c-1",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "GET",
            "/a2a/extendedAgentCard",
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ),
    ]
    .into_iter()
    .filter_map(|(method, path, reason)| {
        let body = json!({});
        let body = (method == "POST").then_some(("application/a2a+json", &body));
        let answered = a2a(client, method, path, Some("1.0"), Some(&buyer.key), body);
        let holds = answered.status == 400
            && answered.json()["error"]["status"] == "FAILED_PRECONDITION"
            && answered.json()["error"]["details"][0]["reason"] == reason;
        (!holds).then(|| {
            format!(
                "{method} {path}: expected 400 FAILED_PRECONDITION {reason}; got {} {}",
                answered.status,
                answered.text()
            )
        })
    })
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where in `value` an A2A SDK's canonicaliser would change the card before hashing it: every
/// empty string, array or object (dropped as empty) and every `required: false` (a non-optional
/// default, omitted), by its JSON pointer.
fn unstable_members(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::String(text) if text.is_empty() => found.push(format!("{at}: \"\"")),
        Value::Array(items) if items.is_empty() => found.push(format!("{at}: []")),
        Value::Object(members) if members.is_empty() => found.push(format!("{at}: {{}}")),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unstable_members(item, &format!("{at}/{i}"), found);
            }
        }
        Value::Object(members) => {
            for (name, member) in members {
                let here = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                if name == "required" && *member == Value::Bool(false) {
                    found.push(format!("{here}: false"));
                }
                unstable_members(member, &here, found);
            }
        }
        _ => {}
    }
}

/// Both kinds of card, the marketplace's and an agent's (with and without a display name), are
/// fixed points of the SDK canonicalisers: no empty string, array or object anywhere, and no
/// `required: false`, which some implementations drop before hashing and others keep, so that
/// a card holding one would verify in some and not in others.
#[test]
fn cards_hold_no_empty_value_and_no_required_false() {
    let (server, _dir) = serve();
    let client = &server.client;
    let [plain, named] = client.parties(["a2a-card-plain", "a2a-card-named"]);
    client
        .send_auth(
            "PATCH",
            "/api/agents/me",
            &named.key,
            &json!({"displayName": "Card Checker"}),
        )
        .ok();
    let agent_card = |handle: &str| format!("/a2a/agents/{handle}/.well-known/agent-card.json");
    for path in [
        "/.well-known/agent-card.json".to_owned(),
        agent_card(&plain.handle),
        agent_card(&named.handle),
    ] {
        let card = client.get(&path).ok();
        assert!(
            card["signatures"].as_array().is_some_and(|s| !s.is_empty()),
            "{path} is signed: {card}"
        );
        assert!(
            card["supportedInterfaces"]
                .as_array()
                .is_some_and(|i| !i.is_empty()),
            "{path}: {card}"
        );
        let mut found = Vec::new();
        unstable_members(&card, "", &mut found);
        assert!(found.is_empty(), "{path} holds {found:?}: {card}");
    }
    let named_card = client.get(&agent_card(&named.handle)).ok();
    assert!(
        named_card.to_string().contains("Card Checker"),
        "the display name shows on its card: {named_card}"
    );
}

/// A body is read as strictly as REST's: a member sent twice is refused (-32600, HTTP 400), not
/// taken by whichever copy a reader happens to keep.
#[test]
fn a_json_rpc_body_with_a_member_sent_twice_is_refused() {
    let (server, _dir) = serve();
    let body = br#"{"jsonrpc":"2.0","id":"1","method":"GetTask","method":"ListTasks","params":{}}"#;
    let answered = server.client.request(
        "POST",
        "/a2a",
        &[("a2a-version", "1.0"), ("content-type", "application/json")],
        Some(body),
    );
    answered.assert_status(400);
    assert_eq!(
        answered.json()["error"]["code"],
        -32600,
        "{}",
        answered.text()
    );
}

/// The spending skill: `{"spendingPolicy": {…}}` sets the policy and `{"spending": {}}` reads
/// it, answering exactly what `PUT /api/agents/me/spending-policy` and
/// `GET /api/agents/me/spending` answer; a purchase over the cap is refused in A2A's error form;
/// a restricted key reads but cannot set the policy; no credential, no spending.
#[test]
fn the_spending_skill_reads_and_sets_the_policy_as_rest_does_and_only_with_the_full_key() {
    let (server, _dir) = serve();
    let client = &server.client;
    let (_, paid, _, _twins) = listings(client);
    let buyer = client.party("a2a-spending-buyer");
    let send = |key: Option<&str>, id: &str, data: Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {
            "message": {"messageId": id, "role": "ROLE_USER", "parts": [{"data": data}]},
        }});
        a2a(
            client,
            "POST",
            "/a2a",
            Some("1.0"),
            key,
            Some(("application/json", &body)),
        )
    };
    let rpc = |key: Option<&str>, id: &str, data: Value| send(key, id, data).ok();
    let data = |answered: &Value| answered["result"]["message"]["parts"][0]["data"].clone();
    let rest = |key: &str| client.get_auth("/api/agents/me/spending", key).ok();

    // Set, then read: both answer what REST answers.
    let set = rpc(
        Some(&buyer.key),
        "s-1",
        json!({"spendingPolicy": {"dailyCents": 500, "rails": ["checkout"]}}),
    );
    assert_eq!(data(&set)["policy"]["dailyCents"], 500, "{set}");
    assert_eq!(data(&set), rest(&buyer.key));
    let read = rpc(Some(&buyer.key), "s-2", json!({"spending": {}}));
    assert_eq!(data(&read), rest(&buyer.key), "{read}");
    assert_eq!(data(&read)["daily"]["leftCents"], 500, "{read}");

    // The policy holds on the A2A purchase: one $5 checkout, then the cap refuses.
    let bought = rpc(Some(&buyer.key), "s-3", json!({"listingId": paid}));
    assert_eq!(
        state(&bought["result"]["task"]),
        "TASK_STATE_INPUT_REQUIRED",
        "{bought}"
    );
    let spent = data(&rpc(Some(&buyer.key), "s-4", json!({"spending": {}})));
    assert_eq!(spent["daily"]["spentCents"], 500, "{spent}");
    assert_eq!(spent["daily"]["leftCents"], 0, "{spent}");
    let refused = rpc(Some(&buyer.key), "s-5", json!({"listingId": paid}));
    assert_eq!(refused["error"]["code"], -32010, "{refused}");
    assert_eq!(
        refused["error"]["data"][0]["reason"], "SPEND_LIMIT_EXCEEDED",
        "{refused}"
    );

    // A restricted key (even one that may spend) reads the spending but cannot set the policy.
    let minted = client
        .send_auth(
            "POST",
            "/api/agents/me/keys",
            &buyer.key,
            &json!({"label": "shopper", "scopes": ["read", "spend"], "expiresInHours": 48}),
        )
        .expect(201);
    let restricted = minted["apiKey"].as_str().unwrap();
    let read = rpc(Some(restricted), "s-6", json!({"spending": {}}));
    assert_eq!(data(&read)["policy"]["dailyCents"], 500, "{read}");
    let lift = json!({"spendingPolicy": {}});
    let denied = rpc(Some(restricted), "s-7", lift.clone());
    assert_eq!(denied["error"]["code"], -32010, "{denied}");
    assert_eq!(
        denied["error"]["data"][0]["reason"], "INSUFFICIENT_SCOPE",
        "{denied}"
    );
    let body =
        json!({"message": {"messageId": "s-8", "role": "ROLE_USER", "parts": [{"data": lift}]}});
    let denied = a2a(
        client,
        "POST",
        "/a2a/message:send",
        Some("1.0"),
        Some(restricted),
        Some(("application/a2a+json", &body)),
    );
    assert_status_error(&denied, 403, "PERMISSION_DENIED", "INSUFFICIENT_SCOPE");
    assert_eq!(
        rest(&buyer.key)["policy"]["dailyCents"],
        500,
        "nothing changed"
    );
    // Nor can an OAuth access token, even one granted `spend`; it reads its agent's spending.
    let setup = crate::support::oauth::setup(client, "a2a-spending-oauth", "a2a-spending");
    let code = setup.allow(client, "read spend", &["read", "spend"]);
    let tokens = setup.exchange(client, &code).expect(200);
    let token = tokens["access_token"].as_str().unwrap();
    let read = rpc(Some(token), "s-11", json!({"spending": {}}));
    assert_eq!(data(&read), rest(&setup.key), "{read}");
    let denied = rpc(
        Some(token),
        "s-12",
        json!({"spendingPolicy": {"dailyCents": 1}}),
    );
    assert_eq!(
        denied["error"]["data"][0]["reason"], "INSUFFICIENT_SCOPE",
        "{denied}"
    );
    assert_eq!(rest(&setup.key)["policy"]["dailyCents"], Value::Null);
    // Without a credential there is no one's spending to read.
    let anonymous = send(None, "s-9", json!({"spending": {}})).expect(401);
    assert_eq!(
        anonymous["error"]["data"][0]["reason"], "UNAUTHENTICATED",
        "{anonymous}"
    );
    // A policy the REST face refuses is refused the same way (an unknown rail).
    let wrong = rpc(
        Some(&buyer.key),
        "s-10",
        json!({"spendingPolicy": {"rails": ["barter"]}}),
    );
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
}
