//! The A2A 1.0 face against the real binary, through two independent clients:
//!
//! - the official Python SDK (`a2a-sdk[signing]==1.3.0`, the Python of `BOURSE_A2A_PYTHON`;
//!   `.ci/test-tools` makes it): `tests/a2a_sdk/flows.py` runs a flow on both bindings (JSONRPC
//!   and HTTP+JSON) and prints what it saw, and these tests check it against what REST says;
//! - plain HTTP from here, no SDK: the version refusal on both bindings, and the HTTP+JSON
//!   binding's shapes.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{BinServer, Client, Party, exit_within, skip_or_fail};

/// The bindings every SDK flow runs on, as the card names them.
const BINDINGS: [&str; 2] = ["JSONRPC", "HTTP+JSON"];

/// How long one run of `flows.py` may take.
const SCRIPT_LIMIT: Duration = Duration::from_secs(120);

/// The SDK's Python, or `None` after [`skip_or_fail`] when it is missing.
fn sdk_python(test: &str) -> Option<OsString> {
    let why = match std::env::var_os("BOURSE_A2A_PYTHON").filter(|p| !p.is_empty()) {
        None => "BOURSE_A2A_PYTHON is not set".to_owned(),
        Some(python) => match Command::new(&python)
            .args(["-c", "import a2a.client, a2a.utils.signing, jwt"])
            .output()
        {
            Ok(output) if output.status.success() => return Some(python),
            Ok(output) => format!(
                "BOURSE_A2A_PYTHON={python:?} cannot import the SDK: {}",
                String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            ),
            Err(error) => format!("BOURSE_A2A_PYTHON={python:?} does not run: {error}"),
        },
    };
    skip_or_fail(
        test,
        &format!(
            "{why}; set it to a Python with `a2a-sdk[signing]==1.3.0` (.ci/test-tools makes one)"
        ),
    );
    None
}

/// The real binary on port 0 with a temp data dir, reaching loopback seller endpoints; its log
/// in the temp dir (the SDK flows make more requests than an unread pipe holds).
fn serve() -> (BinServer, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn_logged(
        &dir.path().join("data"),
        &["--allow-loopback-outbound"],
        &dir.path().join("server.log"),
    );
    (server, dir)
}

/// Runs `flows.py` for `flow` with one run per binding (`runs` gives each its inputs, in
/// [`BINDINGS`] order) and returns each run's observations.
#[track_caller]
fn flows(python: &OsString, base: &str, flow: &str, runs: Vec<Value>) -> Vec<Value> {
    let runs: Vec<Value> = runs
        .into_iter()
        .zip(BINDINGS)
        .map(|(mut run, binding)| {
            run["binding"] = binding.into();
            run
        })
        .collect();
    let input = json!({"base": base, "flow": flow, "runs": runs});
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a_sdk/flows.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python:?}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    // Read while it runs: its answer can be larger than a pipe holds.
    let reader = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = reader(Box::new(child.stdout.take().unwrap()));
    let stderr = reader(Box::new(child.stderr.take().unwrap()));
    let status = exit_within(&mut child, SCRIPT_LIMIT);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(
        status.is_some_and(|s| s.success()),
        "flows.py {flow} failed ({status:?}, limit {SCRIPT_LIMIT:?}):\n{stderr}\n{stdout}"
    );
    let seen: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("flows.py {flow} printed no JSON ({e}):\n{stdout}"));
    let runs = seen["runs"].as_array().unwrap().clone();
    let bindings: Vec<&str> = runs
        .iter()
        .map(|r| r["binding"].as_str().unwrap())
        .collect();
    assert_eq!(bindings, BINDINGS, "{seen}");
    runs
}

/// The one event a non-streaming send yields, by its kind (`task` or `message`).
#[track_caller]
fn answer<'a>(sent: &'a Value, kind: &str) -> &'a Value {
    let events = sent["events"]
        .as_array()
        .unwrap_or_else(|| panic!("the send failed: {sent}"));
    assert_eq!(events.len(), 1, "one answer to a send: {sent}");
    events[0]
        .get(kind)
        .unwrap_or_else(|| panic!("the answer is no {kind}: {sent}"))
}

/// An SDK call's answer, asserting it succeeded.
#[track_caller]
fn ok(called: &Value) -> &Value {
    called
        .get("ok")
        .unwrap_or_else(|| panic!("the call failed: {called}"))
}

/// The SDK error class an SDK call raised.
#[track_caller]
fn error_class(called: &Value) -> &str {
    called["error"]
        .as_str()
        .unwrap_or_else(|| panic!("the call did not fail: {called}"))
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

fn ids(tasks: &Value) -> Vec<String> {
    tasks
        .as_array()
        .map(|tasks| {
            tasks
                .iter()
                .map(|task| task["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs as a user sees a card's checks: signature verified with the key of its `jku`, and an
/// edited copy refused.
#[track_caller]
fn assert_card_verified(client: &Client, run: &Value) {
    assert_eq!(run["verified"], true, "{run}");
    let jwks = client.get("/a2a/jwks.json").ok();
    let kid = jwks["keys"][0]["kid"].as_str().unwrap();
    for key in run["keys"].as_array().unwrap() {
        assert_eq!(
            key["jku"],
            format!("{}/a2a/jwks.json", client.base),
            "{run}"
        );
        assert_eq!(key["kid"], kid, "{run}");
    }
    assert_eq!(run["edited_card"], "InvalidSignaturesError", "{run}");
}

/// The card's interfaces as (binding, url).
fn interfaces(card: &Value) -> Vec<(String, String)> {
    card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap().to_owned(),
                i["url"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn transport(binding: &str) -> &'static str {
    match binding {
        "JSONRPC" => "JsonRpcTransport",
        _ => "RestTransport",
    }
}

/// a. The marketplace's card, resolved by `A2ACardResolver`, verifies through the SDK's
/// verifier with the key its signature's `jku` serves; it names both bindings at `/a2a`, and
/// the SDK makes a client of either; without a credential, ListTasks is refused with HTTP 401.
#[test]
fn the_sdk_verifies_the_marketplace_card_and_finds_both_bindings() {
    let test = "a2a_sdk::the_sdk_verifies_the_marketplace_card_and_finds_both_bindings";
    let Some(python) = sdk_python(test) else {
        return;
    };
    let (server, _dir) = serve();
    let client = &server.client;
    let runs = flows(&python, &client.base, "card", vec![json!({}), json!({})]);
    let endpoint = format!("{}/a2a", client.base);
    for run in &runs {
        assert_card_verified(client, run);
        let card = &run["card"];
        assert_eq!(
            interfaces(card),
            [
                ("JSONRPC".to_owned(), endpoint.clone()),
                ("HTTP+JSON".to_owned(), endpoint.clone())
            ],
            "{card}"
        );
        assert_eq!(card["capabilities"]["streaming"], false, "{card}");
        let binding = run["binding"].as_str().unwrap();
        assert_eq!(run["transport"], transport(binding), "{run}");
        // Without a credential: HTTP 401 on either binding, which the SDK raises as an HTTP
        // error (it reads the status before any JSON-RPC body).
        let anonymous = &run["anonymous_list"];
        assert_eq!(error_class(anonymous), "A2AClientError", "{anonymous}");
        assert!(
            anonymous["message"].as_str().unwrap().contains("401"),
            "{anonymous}"
        );
    }
}

/// b. An agent's card at `<base>/a2a/agents/<handle>` verifies; a text message sent with the
/// SDK lands in the recipient's inbox (read over REST) with the same body, the answer's
/// `bourse.message` metadata carries a receipt `/api/verify-receipt` accepts, and the same
/// messageId sent again answers the same message, delivered once.
#[test]
fn the_sdk_messages_an_agent_whose_inbox_holds_it_once_with_a_receipt_that_verifies() {
    let test =
        "a2a_sdk::the_sdk_messages_an_agent_whose_inbox_holds_it_once_with_a_receipt_that_verifies";
    let Some(python) = sdk_python(test) else {
        return;
    };
    let (server, _dir) = serve();
    let client = &server.client;
    let [sender, recipient] = client.parties(["a2a-sender", "a2a-recipient"]);
    let text = |binding: &str| format!("Hello over A2A ({binding}) — with a second line\nhere.");
    let party = |p: &Party| json!({"key": p.key, "handle": p.handle});
    let runs = flows(
        &python,
        &client.base,
        "message",
        BINDINGS
            .iter()
            .map(|binding| {
                json!({"sender": party(&sender), "recipient": party(&recipient), "text": text(binding)})
            })
            .collect(),
    );
    let agent_endpoint = format!(
        "{}/a2a/agents/{}",
        client.base,
        recipient.handle.to_ascii_lowercase()
    );
    let mut delivered = Vec::new();
    for run in &runs {
        let binding = run["binding"].as_str().unwrap();
        assert_card_verified(client, run);
        let card = &run["card"];
        assert_eq!(card["name"], recipient.handle.as_str(), "{card}");
        assert_eq!(
            interfaces(card),
            [
                ("JSONRPC".to_owned(), agent_endpoint.clone()),
                ("HTTP+JSON".to_owned(), agent_endpoint.clone())
            ],
            "{card}"
        );
        assert_eq!(run["transport"], transport(binding), "{run}");

        let first = answer(&run["first"], "message");
        assert_eq!(first["role"], "ROLE_AGENT", "{first}");
        let sent = &first["metadata"]["bourse.message"];
        assert_eq!(first["metadata"]["bourse.created"], true, "{first}");
        assert_eq!(sent["id"], first["messageId"], "{first}");
        assert_eq!(sent["clientMessageId"], run["message_id"], "{first}");
        assert_eq!(sent["body"], text(binding).as_str(), "{first}");
        assert_eq!(sent["senderHandle"], sender.handle.as_str(), "{first}");
        assert_eq!(sent["recipientHandle"], recipient.handle.as_str());
        let receipt = &sent["receipt"];
        assert_eq!(receipt["type"], "bourse.message.receipt", "{receipt}");
        assert_eq!(receipt["messageId"], first["messageId"], "{receipt}");
        // The receipt as the SDK handed it over (a protobuf Struct: its numbers are doubles).
        let verdict = client
            .post("/api/verify-receipt", &json!({"signed": receipt}))
            .ok();
        assert_eq!(verdict["valid"], true, "{binding}: {verdict}\n{receipt}");

        let again = answer(&run["again"], "message");
        assert_eq!(again["messageId"], first["messageId"], "{again}");
        assert_eq!(again["metadata"]["bourse.created"], false, "{again}");
        assert_eq!(again["metadata"]["bourse.message"]["id"], sent["id"]);
        delivered.push((first["messageId"].clone(), text(binding)));
    }
    let inbox = client.get_auth("/api/agents/me/inbox", &recipient.key).ok();
    let messages = inbox["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        2,
        "one message per binding, the repeats not delivered again: {inbox}"
    );
    for (message, (id, body)) in messages.iter().zip(&delivered) {
        assert_eq!(&message["id"], id, "{inbox}");
        assert_eq!(message["body"], body.as_str(), "{inbox}");
        assert_eq!(message["senderHandle"], sender.handle.as_str(), "{inbox}");
    }
}

const FREE_DELIVERABLE: &str = "station,tide\nbrest,high\n";

/// A seller of a free text listing and a seller of a paid JSON listing, with their listings'
/// ids (free, paid) and the paid deliverable.
fn listings(client: &Client) -> (String, String, Value, Vec<crate::seller_twin::SellerTwin>) {
    let paid_deliverable = json!({"station": "brest", "tide": "high", "readings": ["a", "b"]});
    let (free_seller, free_twin) =
        client.seller_serving("a2a-free-seller", FREE_DELIVERABLE.as_bytes(), "text/csv");
    let (paid_seller, paid_twin) = client.seller_serving(
        "a2a-paid-seller",
        paid_deliverable.to_string().as_bytes(),
        "application/json",
    );
    let body = |title: &str, price: i64| {
        json!({
            "title": title,
            "description": format!("{title}: hourly tides for agents."),
            "priceCents": price,
            "verticalSlug": "research-data",
            "consent": true,
        })
    };
    let free = client.create_listing(&free_seller, body("Free tide tables", 0), json!({}));
    let paid = client.create_listing(&paid_seller, body("Paid tide tables", 500), json!({}));
    (free, paid, paid_deliverable, vec![free_twin, paid_twin])
}

/// The data part of a task's status message holding `key`.
#[track_caller]
fn status_data<'a>(task: &'a Value, key: &str) -> &'a Value {
    task["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|part| part["data"].get(key).map(|_| &part["data"]))
        .unwrap_or_else(|| panic!("no data part with {key} in the status message: {task}"))
}

/// c, d, e. Purchases as tasks through the SDK, checked against REST:
/// - a free listing bought with a data part `{"listingId"}` is TASK_STATE_COMPLETED with the
///   deliverable as an artifact equal to what GET /api/marketplace/purchases/{id} relays;
/// - a paid one is TASK_STATE_INPUT_REQUIRED with the checkout URL in its status message's
///   data part; paid at the sandbox checkout, GetTask reads it TASK_STATE_COMPLETED with the
///   artifact;
/// - a second paid one, canceled, is TASK_STATE_CANCELED; canceled again, the SDK raises
///   TaskNotCancelableError; an unknown id is TaskNotFoundError;
/// - ListTasks shows the buyer's tasks newest first, filters by status, pages with pageSize 1
///   and nextPageToken; another agent lists none of them and cannot read them.
#[test]
fn the_sdk_buys_pays_cancels_and_lists_purchases_as_tasks() {
    let test = "a2a_sdk::the_sdk_buys_pays_cancels_and_lists_purchases_as_tasks";
    let Some(python) = sdk_python(test) else {
        return;
    };
    let (server, _dir) = serve();
    let client = &server.client;
    let (free, paid, paid_deliverable, _twins) = listings(client);
    let buyers: Vec<(Party, Party)> = BINDINGS
        .iter()
        .map(|binding| {
            let tag = binding.replace('+', "-").to_ascii_lowercase();
            (
                client.party(&format!("a2a-buyer-{tag}")),
                client.party(&format!("a2a-other-{tag}")),
            )
        })
        .collect();
    let runs = flows(
        &python,
        &client.base,
        "purchases",
        buyers
            .iter()
            .map(|(buyer, other)| {
                json!({
                    "buyer": {"key": buyer.key, "handle": buyer.handle},
                    "other": {"key": other.key, "handle": other.handle},
                    "free_listing": free,
                    "paid_listing": paid,
                })
            })
            .collect(),
    );
    for (run, (buyer, _)) in runs.iter().zip(&buyers) {
        let binding = run["binding"].as_str().unwrap();
        assert_eq!(run["transport"], transport(binding), "{run}");
        let rest = |id: &Value| client.purchase(buyer, id.as_str().unwrap());

        // c. Free: completed, the deliverable an artifact, as REST relays it.
        let task = answer(&run["free"], "task");
        assert_eq!(state(task), "TASK_STATE_COMPLETED", "{binding}: {task}");
        let free_id = &task["id"];
        let purchase = rest(free_id);
        assert_eq!(purchase["status"], "delivered", "{purchase}");
        assert_eq!(purchase["listingId"], free.as_str());
        for read in [task, ok(&run["free_get"])] {
            assert_eq!(state(read), "TASK_STATE_COMPLETED", "{binding}: {read}");
            let part = &read["artifacts"][0]["parts"][0];
            assert_eq!(part["text"], purchase["delivery"]["content"], "{read}");
            assert_eq!(part["text"], FREE_DELIVERABLE, "{read}");
            assert_eq!(
                part["mediaType"], purchase["delivery"]["contentType"],
                "{read}"
            );
            assert_eq!(read["metadata"]["bourse.purchase"]["id"], *free_id);
        }

        // d. Paid: waits for its checkout; paid, it completes with the artifact.
        let task = answer(&run["paid"], "task");
        assert_eq!(
            state(task),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding}: {task}"
        );
        let checkout = status_data(task, "checkoutUrl");
        let checkout_url = checkout["checkoutUrl"].as_str().unwrap();
        assert!(
            checkout_url.starts_with(&format!("{}/", client.base)),
            "{checkout}"
        );
        assert_eq!(
            checkout["checkoutUrl"], task["metadata"]["bourse.purchase"]["checkoutUrl"],
            "{task}"
        );
        assert_eq!(
            state(ok(&run["paid_before"])),
            "TASK_STATE_INPUT_REQUIRED",
            "{run}"
        );
        assert_eq!(run["pay_status"], 200, "{run}");
        let read = ok(&run["paid_after"]);
        assert_eq!(state(read), "TASK_STATE_COMPLETED", "{binding}: {read}");
        let purchase = rest(&task["id"]);
        assert_eq!(purchase["status"], "delivered", "{purchase}");
        let part = &read["artifacts"][0]["parts"][0];
        assert_eq!(part["data"], purchase["delivery"]["content"], "{read}");
        assert_eq!(part["data"], paid_deliverable, "{read}");
        let paid_id = &task["id"];
        // The purchase receipt as the SDK handed it over: its amounts are doubles (500.0).
        let receipt = &read["metadata"]["bourse.purchase"]["receipt"];
        assert_eq!(receipt["type"], "bourse.purchase.receipt", "{read}");
        assert!(receipt["amountCents"].is_f64(), "{receipt}");
        let verdict = client
            .post("/api/verify-receipt", &json!({"signed": receipt}))
            .ok();
        assert_eq!(verdict["valid"], true, "{binding}: {verdict}\n{receipt}");

        // e. Canceled, then not cancelable; an unknown task is not found.
        let second = answer(&run["second"], "task");
        assert_eq!(state(second), "TASK_STATE_INPUT_REQUIRED", "{second}");
        let canceled = ok(&run["cancel"]);
        assert_eq!(
            state(canceled),
            "TASK_STATE_CANCELED",
            "{binding}: {canceled}"
        );
        assert_eq!(canceled["id"], second["id"]);
        assert_eq!(rest(&second["id"])["status"], "cancelled");
        assert_eq!(
            error_class(&run["cancel_again"]),
            "TaskNotCancelableError",
            "{binding}: {run}"
        );
        assert_eq!(
            error_class(&run["unknown"]),
            "TaskNotFoundError",
            "{binding}"
        );
        let third = answer(&run["third"], "task");
        assert_eq!(state(third), "TASK_STATE_INPUT_REQUIRED", "{third}");

        // The buyer's list: newest first, by status, page by page; none of it another's.
        let newest_first: Vec<String> = [&third["id"], &second["id"], paid_id, free_id]
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        let list = ok(&run["list"]);
        assert_eq!(ids(&list["tasks"]), newest_first, "{binding}: {list}");
        assert_eq!(list["totalSize"], 4, "{list}");
        assert!(
            list["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|task| task.get("artifacts").is_none()),
            "no artifacts unless asked: {list}"
        );
        let by_status = &run["list_by_status"];
        for (status, expected) in [
            ("TASK_STATE_COMPLETED", &newest_first[2..]),
            ("TASK_STATE_INPUT_REQUIRED", &newest_first[..1]),
            ("TASK_STATE_CANCELED", &newest_first[1..2]),
        ] {
            let page = ok(&by_status[status]);
            assert_eq!(ids(&page["tasks"]), expected, "{binding} {status}: {page}");
            assert!(
                page["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|task| state(task) == status),
                "{page}"
            );
        }
        let pages = run["pages"].as_array().unwrap();
        assert_eq!(pages.len(), 4, "one task a page: {binding}: {pages:?}");
        let mut walked = Vec::new();
        for (i, page) in pages.iter().enumerate() {
            let page = ok(page);
            assert_eq!(page["tasks"].as_array().unwrap().len(), 1, "{page}");
            assert_eq!(page["pageSize"], 1, "{page}");
            walked.extend(ids(&page["tasks"]));
            // ProtoJSON leaves an empty string out: the last page's token is "".
            let token = page.get("nextPageToken").and_then(Value::as_str);
            assert_eq!(token.is_some_and(|t| !t.is_empty()), i < 3, "{page}");
        }
        assert_eq!(walked, newest_first, "{binding}");
        let others = ok(&run["other_list"]);
        assert_eq!(ids(&others["tasks"]), Vec::<String>::new(), "{others}");
        assert_eq!(error_class(&run["other_get"]), "TaskNotFoundError");
    }
}

/// f. Browse as a message with a data part `{"query": …, "limit": 2}` (which the SDK sends as
/// `2.0`): the answer's data part is the page of matching listings, at most two.
#[test]
fn the_sdk_browses_with_a_data_part_and_its_doubles_are_accepted() {
    let test = "a2a_sdk::the_sdk_browses_with_a_data_part_and_its_doubles_are_accepted";
    let Some(python) = sdk_python(test) else {
        return;
    };
    let (server, _dir) = serve();
    let client = &server.client;
    let (seller, _twin) = client.seller("a2a-browse-seller", b"barometer readings");
    let body = |title: &str| {
        json!({
            "title": title,
            "description": format!("{title}: pressure every ten minutes."),
            "priceCents": 0,
            "verticalSlug": "research-data",
            "consent": true,
        })
    };
    let matching: Vec<String> = [
        "Barometric pressure, Brest",
        "Barometric pressure, Oslo",
        "Barometric pressure, Lima",
    ]
    .into_iter()
    .map(|title| client.create_listing(&seller, body(title), json!({})))
    .collect();
    let other = client.create_listing(&seller, body("Tide tables"), json!({}));
    let runs = flows(
        &python,
        &client.base,
        "browse",
        vec![json!({"query": "barometric", "no_match": "zeppelin"}); 2],
    );
    for run in &runs {
        let binding = run["binding"].as_str().unwrap();
        assert_eq!(run["transport"], transport(binding), "{run}");
        let limit = &run["request"]["message"]["parts"][0]["data"]["limit"];
        assert!(
            limit.is_f64(),
            "the SDK sends the limit as a double: {limit}"
        );
        let message = answer(&run["browse"], "message");
        assert_eq!(message["role"], "ROLE_AGENT", "{message}");
        let page = &message["parts"][0]["data"];
        let listings = page["listings"]
            .as_array()
            .unwrap_or_else(|| panic!("{binding}: no listings in {message}"));
        assert_eq!(listings.len(), 2, "limit 2.0 read as 2: {binding}: {page}");
        for listing in listings {
            let id = listing["id"].as_str().unwrap();
            assert!(matching.iter().any(|m| m == id), "{binding}: {listing}");
            assert_ne!(id, other);
        }
        let none = answer(&run["no_match"], "message");
        let empty = none["parts"][0]["data"]["listings"].as_array();
        assert!(empty.is_none_or(Vec::is_empty), "{binding}: {none}");
    }
}

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
#[ignore = "bourse's ListTasks differs from A2A 1.0: ordering, statusTimestampAfter, WORKING, includeArtifacts"]
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
/// answers each with its A2A error): streaming, push notification configs and the extended card
/// answer a `google.rpc.Status` with A2A's reason. Today these paths fall through to bourse's
/// REST router (404 or 405, its own error shape), so the SDK raises MethodNotFoundError over
/// HTTP+JSON where it raises PushNotificationNotSupportedError over JSON-RPC (reported, not
/// fixed here; run with `--ignored` to see it fail).
#[test]
#[ignore = "bourse's HTTP+JSON binding answers unoffered A2A methods with REST 404/405 bodies"]
fn http_json_answers_what_is_not_offered_with_a2a_errors() {
    let (server, _dir) = serve();
    let client = &server.client;
    let buyer = client.party("a2a-unoffered");
    let failures: Vec<String> = [
        ("POST", "/a2a/message:stream", "UNSUPPORTED_OPERATION"),
        ("POST", "/a2a/tasks/t-1:subscribe", "UNSUPPORTED_OPERATION"),
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
