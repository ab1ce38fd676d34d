//! A2A's streams as server-sent events, read as they come over a plain socket: a send's stream
//! closes after its answer when the task waits for input; a subscription starts with the task
//! and follows it to its completion (the deliverable first, then the status), on both
//! bindings.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::listings;
use crate::support::{Client, Party, TestServer};

/// An event stream being read: the bytes so far, and how far its events were taken.
struct Events {
    socket: TcpStream,
    raw: Vec<u8>,
    taken: usize,
}

impl Events {
    /// Sends the request and reads the response head.
    fn open(client: &Client, method: &str, path: &str, key: &str, body: Option<&Value>) -> Events {
        let address = client.base.trim_start_matches("http://");
        let mut socket = TcpStream::connect(address).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(40)))
            .unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            socket,
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {key}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut events = Events {
            socket,
            raw: Vec::new(),
            taken: 0,
        };
        while !events.text().contains("\r\n\r\n") {
            assert!(events.read_more(), "no response head");
        }
        let head = events.text();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/event-stream"),
            "{head}"
        );
        events
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    /// Reads what has come; false at the end of the stream.
    fn read_more(&mut self) -> bool {
        let mut buffer = [0u8; 8192];
        let read = self
            .socket
            .read(&mut buffer)
            .expect("the stream answers within its bound");
        self.raw.extend_from_slice(&buffer[..read]);
        read > 0
    }

    /// The next event's data, or `None` once the stream has ended.
    fn next(&mut self) -> Option<Value> {
        loop {
            let text = self.text();
            if let Some(start) = text[self.taken..].find("data: ") {
                let start = self.taken + start + "data: ".len();
                if let Some(end) = text[start..].find("\n\n") {
                    self.taken = start + end + 2;
                    return Some(serde_json::from_str(&text[start..start + end]).unwrap());
                }
            }
            if !self.read_more() {
                return None;
            }
        }
    }
}

/// A paid listing bought over A2A's HTTP+JSON stream: its task, waiting for the checkout.
fn bought_by_stream(server: &TestServer, buyer: &Party, paid: &str) -> Value {
    let body = json!({"message": {"messageId": "stream-buy", "role": "ROLE_USER",
        "parts": [{"data": {"listingId": paid}}]}});
    let mut events = Events::open(
        server,
        "POST",
        "/a2a/message:stream",
        &buyer.key,
        Some(&body),
    );
    let first = events.next().expect("the answer");
    assert_eq!(
        first["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    assert_eq!(
        events.next(),
        None,
        "the stream closes at a task waiting for input"
    );
    first["task"].clone()
}

#[test]
fn a_subscription_follows_a_purchase_from_its_checkout_to_its_deliverable() {
    let server = TestServer::start();
    let (_, paid, deliverable, _twins) = listings(&server);
    let buyer = server.party("a2a-streamer");
    let task = bought_by_stream(&server, &buyer, &paid);
    let id = task["id"].as_str().unwrap();

    // HTTP+JSON: the task as it stands, then, once paid, the deliverable and the completion.
    let path = format!("/a2a/tasks/{id}:subscribe");
    let mut events = Events::open(&server, "POST", &path, &buyer.key, None);
    let first = events.next().unwrap();
    assert_eq!(first["task"]["id"], id);
    assert_eq!(
        first["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    server.pay_checkout(&task["metadata"]["bourse.purchase"]);
    let artifact = events.next().unwrap();
    assert_eq!(artifact["artifactUpdate"]["taskId"], id, "{artifact}");
    assert_eq!(
        artifact["artifactUpdate"]["artifact"]["parts"][0]["data"],
        deliverable
    );
    let status = events.next().unwrap();
    assert_eq!(
        status["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{status}"
    );
    assert_eq!(status["statusUpdate"]["contextId"], id);
    assert_eq!(
        events.next(),
        None,
        "the stream closes once the task is over"
    );

    // Over, it is not followed: A2A's UNSUPPORTED_OPERATION, before any stream.
    let over = server.request(
        "GET",
        &path,
        &[
            ("Authorization", &format!("Bearer {}", buyer.key)),
            ("A2A-Version", "1.0"),
        ],
        None,
    );
    over.assert_status(400);
    assert_eq!(
        over.json()["error"]["details"][0]["reason"],
        "UNSUPPORTED_OPERATION"
    );
}

#[test]
fn json_rpc_streams_frame_each_event_as_a_response_to_the_request() {
    let server = TestServer::start();
    let (free, paid, _, _twins) = listings(&server);
    let buyer = server.party("a2a-rpc-streamer");
    let call = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": "s-1", "method": method, "params": params});
    // A free listing: one event, the completed task with its deliverable; then the end.
    let send = call(
        "SendStreamingMessage",
        json!({"message": {"messageId": "rpc-free", "role": "ROLE_USER",
            "parts": [{"data": {"listingId": free}}]}}),
    );
    let mut events = Events::open(&server, "POST", "/a2a", &buyer.key, Some(&send));
    let answer = events.next().unwrap();
    assert_eq!(
        (&answer["jsonrpc"], &answer["id"]),
        (&json!("2.0"), &json!("s-1"))
    );
    assert_eq!(
        answer["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(answer["result"]["task"]["artifacts"].is_array(), "{answer}");
    assert_eq!(events.next(), None);

    // A subscription over JSON-RPC to a task waiting for its checkout.
    let task = bought_by_stream(&server, &buyer, &paid);
    let subscribe = call("SubscribeToTask", json!({"id": task["id"]}));
    let mut events = Events::open(&server, "POST", "/a2a", &buyer.key, Some(&subscribe));
    let first = events.next().unwrap();
    assert_eq!(
        first["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    server.pay_checkout(&task["metadata"]["bourse.purchase"]);
    let mut kinds = Vec::new();
    while let Some(event) = events.next() {
        assert_eq!(event["id"], "s-1");
        kinds.push(
            event["result"]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap()
                .clone(),
        );
    }
    assert_eq!(kinds, ["artifactUpdate", "statusUpdate"]);
}
