//! The Message resource, as the sender, the recipient's inbox and its callbacks see it.

use serde::Serialize;
use serde_json::Value;

use crate::store::messages::MessageRow;

/// The Message resource: its members, in the order they are written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub client_message_id: String,
    pub sender_handle: String,
    pub recipient_handle: String,
    pub sequence: i64,
    pub body: String,
    pub created_at: String,
    pub receipt: Value,
}

impl Message {
    /// The resource of a stored message (its receipt is kept as text).
    pub fn of(row: MessageRow) -> Message {
        let receipt: Value = serde_json::from_str(&row.receipt).unwrap_or(Value::Null);
        Message::with_receipt(row, receipt)
    }

    /// The resource with its receipt already in hand (a send has it before storing its text).
    pub fn with_receipt(row: MessageRow, receipt: Value) -> Message {
        Message {
            id: row.id,
            client_message_id: row.client_message_id,
            sender_handle: row.sender_handle,
            recipient_handle: row.recipient_handle,
            sequence: row.sequence,
            body: row.body,
            created_at: row.created_at,
            receipt,
        }
    }

    /// As a JSON value (inbox pages, callback payloads, the MCP face).
    pub fn into_json(self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
