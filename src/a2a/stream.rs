//! A2A's streams (`SendStreamingMessage`, `SubscribeToTask`) as server-sent events: each event
//! is a `StreamResponse` (`{"task"}`, `{"message"}`, `{"statusUpdate"}`, `{"artifactUpdate"}`),
//! wrapped in a JSON-RPC response on that binding. A send's stream is its answer and closes at
//! once when that is a message or a task that is over or waits for input; a subscription
//! starts with the task as it stands and follows it until it is over, at most
//! [`FOLLOW_MAX`] (the inbox long-poll's bound), checking the recorded state every
//! [`CHECK_EVERY`].

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc::Sender;

use super::tasks;
use super::wire::TaskState;
use crate::http::response::Reply;
use crate::service::App;
use crate::service::commerce::orders;
use crate::store::agents::AgentRow;

/// How long a subscription follows a task at most.
pub const FOLLOW_MAX: Duration =
    Duration::from_secs(crate::request::messaging::WAIT_MAX_SECS.unsigned_abs());

/// How often a followed task's recorded state is checked.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// How events are framed: in a JSON-RPC response with the request's id, or bare (HTTP+JSON).
#[derive(Clone, Debug)]
pub enum Framing {
    Rpc(Value),
    Rest,
}

impl Framing {
    fn frame(&self, event: &Value) -> Bytes {
        let data = match self {
            Framing::Rpc(id) => json!({"jsonrpc": "2.0", "id": id, "result": event}),
            Framing::Rest => event.clone(),
        };
        Bytes::from(format!("data: {data}\n\n"))
    }
}

/// Whether a stream ends at a task in `state`.
fn ends_at(state: TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// The stream of a send: its answer (a `SendMessageResponse` as JSON, whose one member is the
/// `StreamResponse`'s), then, for a task still being worked on, the task followed for its
/// buyer `follow`.
pub fn of_answer(
    answer: Value,
    framing: Framing,
    follow: Option<AgentRow>,
    headers: Vec<(&'static str, String)>,
) -> Reply {
    let task = id_and_state(&answer["task"]);
    let writer = move |app: Arc<App>,
                       sender: Sender<Bytes>|
          -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            if sender.send(framing.frame(&answer)).await.is_err() {
                return;
            }
            if let (Some((id, from)), Some(buyer)) = (task, follow)
                && !ends_at(from)
            {
                watch(&app, &buyer, &id, from, &framing, &sender).await;
            }
        })
    };
    Reply::Events(Box::new(writer), headers)
}

/// The stream of a subscription: the task as it stands (`task`, as JSON), then its changes
/// until it is over.
pub fn subscription(task: Value, buyer: AgentRow, framing: Framing) -> Reply {
    let writer = move |app: Arc<App>,
                       sender: Sender<Bytes>|
          -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            let Some((id, from)) = id_and_state(&task) else {
                return;
            };
            if sender
                .send(framing.frame(&json!({ "task": task })))
                .await
                .is_err()
            {
                return;
            }
            watch(&app, &buyer, &id, from, &framing, &sender).await;
        })
    };
    Reply::Events(Box::new(writer), Vec::new())
}

/// A task's id and state, from its JSON.
fn id_and_state(task: &Value) -> Option<(String, TaskState)> {
    let id = task["id"].as_str()?.to_owned();
    let state = serde_json::from_value(task["status"]["state"].clone()).ok()?;
    Some((id, state))
}

/// Follows task `id` until it is over, the bound passes or the reader leaves: each change of
/// state is a `statusUpdate` (the task read live, so a completed one also sends its deliverable
/// as an `artifactUpdate` first).
async fn watch(
    app: &App,
    buyer: &AgentRow,
    id: &str,
    from: TaskState,
    framing: &Framing,
    sender: &Sender<Bytes>,
) {
    let deadline = tokio::time::Instant::now() + FOLLOW_MAX;
    let mut last = from;
    while tokio::time::Instant::now() < deadline && !sender.is_closed() {
        tokio::time::sleep(CHECK_EVERY).await;
        let Ok(recorded) = orders::recorded(app, buyer, id).await else {
            return;
        };
        let state = tasks::task(recorded).status.state;
        if state == last {
            continue;
        }
        last = state;
        let Ok(live) = orders::get(app, buyer, id).await else {
            return;
        };
        let task = tasks::task(live);
        for artifact in task.artifacts.iter().flatten() {
            let event = json!({"artifactUpdate": {
                "taskId": task.id, "contextId": task.context_id, "artifact": artifact, "lastChunk": true,
            }});
            if sender.send(framing.frame(&event)).await.is_err() {
                return;
            }
        }
        let event = json!({"statusUpdate": {
            "taskId": task.id, "contextId": task.context_id, "status": task.status,
        }});
        if sender.send(framing.frame(&event)).await.is_err() {
            return;
        }
        if task.status.state.is_terminal() {
            return;
        }
    }
}
