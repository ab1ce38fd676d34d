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
pub(crate) const BINDINGS: [&str; 2] = ["JSONRPC", "HTTP+JSON"];

/// How long one run of `flows.py` may take.
const SCRIPT_LIMIT: Duration = Duration::from_secs(120);

/// The SDK's Python, or `None` after [`skip_or_fail`] when it is missing.
pub(crate) fn sdk_python(test: &str) -> Option<OsString> {
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
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    // The release binary users run when CI names it (`BOURSE_RELEASE_BIN`), else this build.
    let mut command = Command::new(crate::support::release_binary());
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path().join("data"))
        .arg("--allow-loopback-outbound")
        .stderr(Stdio::from(log));
    (BinServer::start(command), dir)
}

/// Runs `flows.py` for `flow` with one run per binding (`runs` gives each its inputs, in
/// [`BINDINGS`] order) and returns each run's observations.
#[track_caller]
pub(crate) fn flows(python: &OsString, base: &str, flow: &str, runs: Vec<Value>) -> Vec<Value> {
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

/// The one event a send yields, by its kind (`task` or `message`): the card says streaming, so
/// the SDK sends SendStreamingMessage, whose stream closes after its answer when that is a
/// message or a task that is over or waits for input.
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
pub(crate) fn ok(called: &Value) -> &Value {
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

pub(crate) fn transport(binding: &str) -> &'static str {
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
        assert_eq!(card["capabilities"]["streaming"], true, "{card}");
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
    let agent_endpoint = format!("{}/a2a/agents/{}", client.base, recipient.handle);
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

/// g. The spending skill through the SDK on both bindings: `{"spendingPolicy": {…}}` (its cap
/// sent as a double) sets the policy and `{"spending": {}}` reads what
/// `GET /api/agents/me/spending` answers; a restricted key reads it but cannot set the policy.
#[test]
fn the_sdk_sets_and_reads_the_spending_policy_and_a_restricted_key_cannot_set_it() {
    let test =
        "a2a_sdk::the_sdk_sets_and_reads_the_spending_policy_and_a_restricted_key_cannot_set_it";
    let Some(python) = sdk_python(test) else {
        return;
    };
    let (server, _dir) = serve();
    let client = &server.client;
    let buyer = client.party("a2a-sdk-spender");
    let minted = client
        .send_auth(
            "POST",
            "/api/agents/me/keys",
            &buyer.key,
            &json!({"label": "shopper", "scopes": ["read", "spend"], "expiresInHours": 48}),
        )
        .expect(201);
    let restricted = minted["apiKey"].as_str().unwrap();
    let runs = flows(
        &python,
        &client.base,
        "spending",
        [700, 900]
            .map(|daily| json!({"key": buyer.key, "restricted": restricted, "daily": daily}))
            .to_vec(),
    );
    // The SDK reads a data part as a protobuf Struct: its numbers come back as doubles.
    for (run, daily) in runs.iter().zip([700.0, 900.0]) {
        let binding = run["binding"].as_str().unwrap();
        assert_eq!(run["transport"], transport(binding), "{run}");
        let set = &answer(&run["set"], "message")["parts"][0]["data"];
        assert_eq!(
            set["policy"]["dailyCents"].as_f64(),
            Some(daily),
            "{binding}: {set}"
        );
        let read = &answer(&run["read"], "message")["parts"][0]["data"];
        assert_eq!(read, set, "{binding}");
        let theirs = &answer(&run["restricted_read"], "message")["parts"][0]["data"];
        assert_eq!(
            theirs["policy"]["dailyCents"].as_f64(),
            Some(daily),
            "{binding}: {theirs}"
        );
        // The SDK raises on both bindings: JSON-RPC carries bourse's message, HTTP+JSON the 403.
        let refused = &run["refused"];
        assert_eq!(
            error_class(refused),
            "A2AClientError",
            "{binding}: {refused}"
        );
        let said = refused["message"].as_str().unwrap_or_default();
        let expected = if binding == "JSONRPC" {
            "full API key"
        } else {
            "403"
        };
        assert!(said.contains(expected), "{binding}: {refused}");
    }
    let rest = client.get_auth("/api/agents/me/spending", &buyer.key).ok();
    assert_eq!(rest["policy"]["dailyCents"], 900, "{rest}");
}

#[path = "a2a_http.rs"]
mod http;

#[path = "a2a_stream.rs"]
mod stream;
