//! The Message resource, as the sender, the recipient's inbox and its callbacks see it.

use serde::Serialize;

use crate::service::trust::log::LogRef;
use crate::service::trust::receipts::Signed;
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
    /// The signed acceptance receipt (`null` if the stored one is unreadable).
    pub receipt: Option<Signed>,
    /// Where the receipt sits in the transparency log (beside it, never inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogRef>,
}

/// A send as the MCP face answers it: the message and whether this call created it.
#[derive(Debug, Serialize)]
pub struct SentMessage<'a> {
    #[serde(flatten)]
    pub message: &'a Message,
    pub created: bool,
}

impl Message {
    /// The resource of a stored message (its receipt is kept as text).
    pub fn of(row: MessageRow) -> Message {
        let receipt = Signed::parse(&row.receipt);
        Message::with_receipt(row, receipt)
    }

    /// The resource with its receipt already in hand (a send has it before storing its text).
    pub fn with_receipt(row: MessageRow, receipt: Option<Signed>) -> Message {
        Message {
            id: row.id,
            client_message_id: row.client_message_id,
            sender_handle: row.sender_handle,
            recipient_handle: row.recipient_handle,
            sequence: row.sequence,
            body: row.body,
            created_at: row.created_at,
            receipt,
            log: None,
        }
    }

    /// The same message with its log index.
    pub fn logged_at(self, index: Option<u64>) -> Message {
        Message {
            log: index.map(LogRef::at),
            ..self
        }
    }
}
