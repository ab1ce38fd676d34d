//! The x402 rail over A2A (the a2a-x402 extension v0.2): an order waits in
//! TASK_STATE_INPUT_REQUIRED with `x402.payment.required`, is paid by a message naming its task
//! with `x402.payment.payload`, and completes with `x402.payment.receipts` and the deliverable;
//! a refused payment leaves it waiting with the reason.

use serde_json::{Value, json};

use super::{PAYER, authorization, exclusive_listing, x402_market};
use crate::support::{Resp, TestServer};

const EXTENSION: &str = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2";

/// A JSON-RPC call to the marketplace's A2A endpoint, with the a2a-x402 extension active.
fn call(server: &TestServer, key: &str, method: &str, params: Value) -> Resp {
    let body = json!({"jsonrpc": "2.0", "id": "1", "method": method, "params": params});
    server.request(
        "POST",
        "/a2a",
        &[
            ("Authorization", &format!("Bearer {key}")),
            ("A2A-Version", "1.0"),
            ("A2A-Extensions", EXTENSION),
            ("Content-Type", "application/json"),
        ],
        Some(body.to_string().as_bytes()),
    )
}

#[track_caller]
fn result(resp: &Resp) -> Value {
    resp.assert_status(200);
    let body = resp.json();
    assert!(body.get("error").is_none(), "{body}");
    body["result"].clone()
}

fn message(text: &str, data: Value, task: Option<&str>, metadata: Value) -> Value {
    let mut message = json!({
        "messageId": format!("m-{text}"),
        "role": "ROLE_USER",
        "parts": [{"data": data}],
        "metadata": metadata,
    });
    if let Some(task) = task {
        message["taskId"] = task.into();
    }
    json!({ "message": message })
}

#[test]
fn an_x402_order_over_a2a_waits_for_its_payment_and_completes_with_receipts() {
    let marker = "BERTH-WAITS-over-a2a";
    let (facilitator, server, seller, _twin) = x402_market(marker.as_bytes());
    let listing = exclusive_listing(&server, &seller);
    let buyer = server.party("a2a-buyer");

    // The card declares the extension, not required.
    let card = server.get("/.well-known/agent-card.json").ok();
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    assert_eq!(extensions[0]["uri"], EXTENSION);
    assert!(extensions[0].get("required").is_none());

    // Asking for the listing opens a task waiting for the payment, with the v2 requirements.
    let asked = call(
        &server,
        &buyer.key,
        "SendMessage",
        message("ask", json!({"listingId": listing}), None, json!({})),
    );
    assert_eq!(asked.header("a2a-extensions"), Some(EXTENSION));
    let task = result(&asked)["task"].clone();
    let id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(task["contextId"], id.as_str());
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let metadata = &task["status"]["message"]["metadata"];
    assert_eq!(metadata["x402.payment.status"], "payment-required");
    let required = &metadata["x402.payment.required"];
    assert_eq!(required["x402Version"], 2);
    let accepted = required["accepts"][0].clone();
    assert_eq!(accepted["payTo"], super::PAY_TO);
    assert!(facilitator.requests().is_empty(), "nothing is paid yet");

    // A refused payment leaves the task waiting, with the reason.
    facilitator.verify(
        400,
        json!({"isValid": false, "invalidReason": "insufficient_funds", "payer": PAYER}),
    );
    // Numbers as A2A SDKs send them (doubles) are read as integers.
    let payload = json!({"x402Version": 2.0, "accepted": accepted, "payload": authorization()});
    let pay = |status: &str| {
        message(
            status,
            json!({}),
            Some(&id),
            json!({"x402.payment.status": "payment-submitted", "x402.payment.payload": payload}),
        )
    };
    let refused = result(&call(&server, &buyer.key, "SendMessage", pay("first")))["task"].clone();
    assert_eq!(refused["id"], id.as_str());
    assert_eq!(refused["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let metadata = &refused["status"]["message"]["metadata"];
    assert_eq!(metadata["x402.payment.status"], "payment-failed");
    assert_eq!(metadata["x402.payment.error"], "INSUFFICIENT_FUNDS");
    assert!(metadata["x402.payment.required"]["accepts"].is_array());

    // A good payment settles: completed, with the receipts and the deliverable.
    facilitator.verify(200, json!({"isValid": true, "payer": PAYER}));
    let paid = result(&call(&server, &buyer.key, "SendMessage", pay("second")))["task"].clone();
    assert_eq!(paid["status"]["state"], "TASK_STATE_COMPLETED", "{paid}");
    let metadata = &paid["status"]["message"]["metadata"];
    assert_eq!(metadata["x402.payment.status"], "payment-completed");
    assert_eq!(
        metadata["x402.payment.receipts"],
        json!([{"success": true, "transaction": "0xfeed01", "network": "eip155:8453", "payer": PAYER}])
    );
    assert_eq!(paid["artifacts"][0]["parts"][0]["text"], marker);
    let purchase = &paid["metadata"]["bourse.purchase"];
    assert_eq!(
        purchase["id"],
        id.as_str(),
        "the purchase has the task's id"
    );
    assert_eq!(purchase["rail"], "x402_usdc_base");
    assert_eq!(purchase["buyerHandle"], buyer.handle.as_str());

    // The task reads back completed, and the buyer's purchase is the same one over REST.
    let read = result(&call(&server, &buyer.key, "GetTask", json!({"id": id})));
    assert_eq!(read["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        read["status"]["message"]["metadata"]["x402.payment.receipts"][0]["transaction"],
        "0xfeed01",
        "a task read later carries its receipts: {read}"
    );
    assert_eq!(read["artifacts"][0]["parts"][0]["text"], marker);
    let rest = server
        .get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
        .ok();
    assert_eq!(rest["status"], "delivered");

    // Over, it takes no more messages, and cannot be canceled.
    let again = call(&server, &buyer.key, "SendMessage", pay("third")).json();
    assert_eq!(again["error"]["code"], -32004, "{again}");
    let cancel = call(&server, &buyer.key, "CancelTask", json!({"id": id})).json();
    assert_eq!(cancel["error"]["code"], -32002, "{cancel}");
    assert_eq!(cancel["error"]["data"][0]["reason"], "TASK_NOT_CANCELABLE");

    // Listed among the buyer's tasks; another agent sees none of it.
    let listed = result(&call(&server, &buyer.key, "ListTasks", json!({})));
    assert_eq!(listed["totalSize"], 1);
    assert_eq!(listed["tasks"][0]["id"], id.as_str());
    assert_eq!(listed["nextPageToken"], "");
    assert!(listed["tasks"][0].get("artifacts").is_none());
    let stranger = server.party("a2a-stranger");
    let theirs = result(&call(&server, &stranger.key, "ListTasks", json!({})));
    assert_eq!(theirs["totalSize"], 0);
    let hidden = call(&server, &stranger.key, "GetTask", json!({"id": id})).json();
    assert_eq!(hidden["error"]["code"], -32001);
}

#[test]
fn an_x402_order_declined_by_its_buyer_is_canceled() {
    let (_facilitator, server, seller, _twin) = x402_market(b"declined");
    let listing = exclusive_listing(&server, &seller);
    let buyer = server.party("a2a-decliner");
    let task = result(&call(
        &server,
        &buyer.key,
        "SendMessage",
        message("ask", json!({"listingId": listing}), None, json!({})),
    ))["task"]
        .clone();
    let id = task["id"].as_str().unwrap();
    let declined = result(&call(
        &server,
        &buyer.key,
        "SendMessage",
        message(
            "no",
            json!({}),
            Some(id),
            json!({"x402.payment.status": "payment-rejected"}),
        ),
    ))["task"]
        .clone();
    assert_eq!(declined["status"]["state"], "TASK_STATE_CANCELED");
    let waiting = result(&call(
        &server,
        &buyer.key,
        "ListTasks",
        json!({"status": "TASK_STATE_CANCELED"}),
    ));
    assert_eq!(waiting["totalSize"], 1);
    // The listing is still for sale: nothing was reserved.
    let detail = server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .ok();
    assert_eq!(detail["listing"]["active"], true);
}

/// The same order through the official A2A Python SDK (`flows.py x402`), on both bindings: the
/// marketplace's card declares the extension; a send with the extension activated through the
/// SDK's service parameters (the A2A-Extensions header, echoed) opens a task waiting with
/// `x402.payment.required`; the payment, built in Python from `accepts[0]` and sent as a
/// message naming the task (its numbers doubles, as protobuf makes them), completes it with the
/// facilitator's receipt and the deliverable; GetTask reads it back completed.
#[test]
fn the_sdk_pays_an_x402_order_over_a2a_on_both_bindings() {
    use crate::a2a_sdk::{BINDINGS, flows, ok, sdk_python, transport};

    let test = "x402::a2a::the_sdk_pays_an_x402_order_over_a2a_on_both_bindings";
    let Some(python) = sdk_python(test) else {
        return;
    };
    let marker = "BERTH-WAITS-through-the-sdk";
    let (facilitator, server, seller, _twin) = x402_market(marker.as_bytes());
    // Each settlement answers its own transaction (`0xfeed0<request number>`: 0xfeed02, then
    // 0xfeed04): a transaction that already paid for one purchase pays for no other.
    facilitator.settle(
        200,
        json!({"success": true, "transaction": "0xfeed0{n}", "network": "eip155:8453", "payer": PAYER}),
    );
    let buyer = server.party("a2a-sdk-buyer");
    // One exclusive listing per binding: each is sold once.
    let listings: Vec<String> = BINDINGS
        .iter()
        .map(|_| exclusive_listing(&server, &seller))
        .collect();
    let runs = flows(
        &python,
        &server.base,
        "x402",
        listings
            .iter()
            .map(|listing| {
                json!({
                    "buyer": {"key": buyer.key, "handle": buyer.handle},
                    "listing": listing,
                    "authorization": authorization(),
                })
            })
            .collect(),
    );
    let mut paid_ids = Vec::new();
    for ((run, listing), transaction) in runs.iter().zip(&listings).zip(["0xfeed02", "0xfeed04"]) {
        let binding = run["binding"].as_str().unwrap();
        assert_eq!(run["transport"], transport(binding), "{run}");
        assert!(
            run["extensions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["uri"] == EXTENSION),
            "{binding}: the card declares a2a-x402: {run}"
        );
        // Every A2A call carried the extension, and the server said it activated it.
        let calls: Vec<&Value> = run["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["requested"].is_string())
            .collect();
        assert_eq!(calls.len(), 3, "order, payment, GetTask: {run}");
        for call in calls {
            assert_eq!(call["requested"], EXTENSION, "{binding}: {call}");
            assert_eq!(call["activated"], EXTENSION, "{binding}: {call}");
        }

        // The order waits for its payment, with the v2 requirements.
        let order = &run["order_task"];
        let id = order["id"].as_str().unwrap();
        assert_eq!(
            order["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{run}"
        );
        let metadata = &order["status"]["message"]["metadata"];
        assert_eq!(metadata["x402.payment.status"], "payment-required");
        let required = &metadata["x402.payment.required"];
        assert_eq!(required["x402Version"], 2.0, "{required}");
        assert_eq!(required["accepts"][0]["payTo"], super::PAY_TO);
        assert_eq!(required["accepts"][0]["amount"], "25000000");
        let resource = required["resource"]["url"].as_str().unwrap();
        assert!(
            resource.ends_with(&format!("/listings/{listing}/purchase")),
            "{binding}: the order is for its listing: {required}"
        );

        // The payment went out as protobuf made it: its numbers doubles.
        let sent = &run["payment_request"]["message"];
        assert_eq!(sent["taskId"], id, "{sent}");
        let payload = &sent["metadata"]["x402.payment.payload"];
        assert!(payload["x402Version"].is_f64(), "{payload}");
        assert!(
            payload["accepted"]["maxTimeoutSeconds"].is_f64(),
            "{payload}"
        );

        // Paid: completed, with the facilitator's receipt and the deliverable.
        let paid = &run["paid_task"];
        assert_eq!(paid["id"], id, "{run}");
        assert_eq!(paid["status"]["state"], "TASK_STATE_COMPLETED", "{run}");
        let metadata = &paid["status"]["message"]["metadata"];
        assert_eq!(metadata["x402.payment.status"], "payment-completed");
        let receipts = metadata["x402.payment.receipts"].as_array().unwrap();
        assert_eq!(receipts.len(), 1, "{metadata}");
        assert_eq!(receipts[0]["success"], true, "{metadata}");
        assert_eq!(receipts[0]["transaction"], transaction, "{metadata}");
        assert_eq!(receipts[0]["payer"], PAYER, "{metadata}");
        assert_eq!(paid["artifacts"][0]["parts"][0]["text"], marker, "{paid}");

        // GetTask reads it back completed, with the artifact.
        let read = ok(&run["get"]);
        assert_eq!(read["id"], id, "{read}");
        assert_eq!(read["status"]["state"], "TASK_STATE_COMPLETED", "{read}");
        assert_eq!(read["artifacts"][0]["parts"][0]["text"], marker, "{read}");
        paid_ids.push(id.to_owned());
    }

    // Each order was verified and settled once, and is the buyer's purchase over REST.
    assert_eq!(
        facilitator.paths(),
        ["/verify", "/settle", "/verify", "/settle"]
    );
    for id in &paid_ids {
        let rest = server
            .get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
            .ok();
        assert_eq!(rest["status"], "delivered", "{rest}");
        assert_eq!(rest["rail"], "x402_usdc_base", "{rest}");
    }
}
