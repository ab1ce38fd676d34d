//! A2A 1.0's objects in their JSON form (ProtoJSON of `lf.a2a.v1`: camelCase members, enums by
//! their full names, `oneof` members as one key, defaults left out). Requests are read leniently
//! as ProtoJSON readers are (proto names accepted as well, unknown members ignored); answers are
//! written with no empty member, so SDK canonicalisers (which drop empties) see what we sign.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "ROLE_USER")]
    User,
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// A message of either party.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(alias = "message_id")]
    pub message_id: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, alias = "task_id", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// One part of a message or artifact: exactly one of `text`, `raw` (base64), `url`, `data`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Any JSON value. `Some(Value::Null)` is a data part holding `null`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

/// A member that is present, `null` included, reads as `Some`.
fn present<'de, D: serde::Deserializer<'de>>(reader: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(reader).map(Some)
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A JSON data part.
    pub fn data(data: Value) -> Part {
        Part {
            data: Some(data),
            media_type: Some("application/json".into()),
            ..Part::default()
        }
    }

    /// How many content members it has (a well-formed part has one).
    pub fn contents(&self) -> usize {
        usize::from(self.text.is_some())
            + usize::from(self.raw.is_some())
            + usize::from(self.url.is_some())
            + usize::from(self.data.is_some())
    }
}

/// A task's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Whether the task can no longer change.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }
}

/// Where a task stands.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    pub timestamp: String,
}

/// A task's output.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    pub name: String,
    pub parts: Vec<Part>,
}

/// A unit of work: here, a purchase.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// `SendMessage`'s answer: a task, or a message.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// `SendMessageRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default)]
    pub configuration: Option<Value>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// `GetTaskRequest` and `CancelTaskRequest` (both name a task).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<Value>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// `ListTasksRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default, alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default)]
    pub status: Option<TaskState>,
    #[serde(default, alias = "page_size")]
    pub page_size: Option<Value>,
    #[serde(default, alias = "page_token")]
    pub page_token: Option<String>,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<Value>,
    #[serde(default, alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<String>,
    #[serde(default, alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
}

/// `ListTasksResponse`: `nextPageToken` is always present (empty on the last page).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    pub next_page_token: String,
    pub page_size: i64,
    pub total_size: i64,
}

/// A JSON number that is a whole number (A2A's `Struct` values are doubles: `2.0` means 2),
/// within the range a double holds exactly.
pub fn whole_number(value: &Value) -> Option<i64> {
    if let Some(int) = value.as_i64() {
        return Some(int);
    }
    let float = value.as_f64()?;
    const EXACT: f64 = 9_007_199_254_740_991.0;
    #[allow(clippy::cast_possible_truncation)]
    (float.fract() == 0.0 && float.abs() <= EXACT).then_some(float as i64)
}

/// `value` with every whole-number float made an integer, at any depth (what a protobuf
/// `Struct` turned `2` into comes back as `2`).
pub fn with_whole_numbers(value: Value) -> Value {
    match value {
        Value::Number(number) if !number.is_i64() && !number.is_u64() => {
            match whole_number(&Value::Number(number.clone())) {
                Some(int) => Value::from(int),
                None => Value::Number(number),
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(with_whole_numbers).collect()),
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(key, value)| (key, with_whole_numbers(value)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn doubles_that_are_whole_read_as_integers() {
        let read = with_whole_numbers(json!({"a": 2.0, "b": [1.5, 3.0], "c": {"d": 1e300}}));
        assert_eq!(read, json!({"a": 2, "b": [1.5, 3], "c": {"d": 1e300}}));
        assert_eq!(whole_number(&json!(9_007_199_254_740_993.0_f64)), None);
    }

    #[test]
    fn a_message_reads_from_protojson_and_writes_without_empty_members() {
        let message: Message = serde_json::from_value(json!({
            "message_id": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "hi"}, {"data": null}, {"data": {"n": 1}, "mediaType": "application/json"}],
            "unknown": true
        }))
        .unwrap();
        assert_eq!(message.parts[1].data, Some(Value::Null));
        assert_eq!(message.parts[0].contents(), 1);
        let written = serde_json::to_value(&message).unwrap();
        assert_eq!(written["messageId"], "m-1");
        assert!(written.get("metadata").is_none() && written.get("contextId").is_none());
        let answer = SendMessageResponse::Message(message);
        assert!(serde_json::to_value(&answer).unwrap()["message"].is_object());
    }
}
