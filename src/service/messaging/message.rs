//! The Message resource, as the sender, the recipient's inbox and its callbacks see it.

use serde_json::{Value, json};

use crate::store::messages::MessageRow;

/// The Message resource.
pub fn message_json(message: &MessageRow) -> Value {
    let receipt: Value = serde_json::from_str(&message.receipt).unwrap_or(Value::Null);
    message_json_with(message, receipt)
}

/// [`message_json`] with the receipt already in hand (a send has it before storing its text).
pub fn message_json_with(message: &MessageRow, receipt: Value) -> Value {
    json!({
        "id": message.id,
        "clientMessageId": message.client_message_id,
        "senderHandle": message.sender_handle,
        "recipientHandle": message.recipient_handle,
        "sequence": message.sequence,
        "body": message.body,
        "createdAt": message.created_at,
        "receipt": receipt,
    })
}
