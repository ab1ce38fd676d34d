//! Messages (inbox and journal) and callback deliveries.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::Result;

/// One accepted message as stored in the inbox.
#[derive(Clone, Debug)]
pub struct MessageRow {
    pub id: String,
    pub recipient_id: String,
    pub sequence: i64,
    pub sender_id: String,
    pub sender_handle: String,
    pub recipient_handle: String,
    pub client_message_id: String,
    pub body: String,
    pub created_at: String,
    /// The signed receipt, verbatim JSON.
    pub receipt: String,
}

const COLUMNS: &str =
    "id, recipient_id, sequence, sender_id, sender_handle, recipient_handle, client_message_id,
    body, created_at, receipt";

fn from_row(row: &Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: row.get(0)?,
        recipient_id: row.get(1)?,
        sequence: row.get(2)?,
        sender_id: row.get(3)?,
        sender_handle: row.get(4)?,
        recipient_handle: row.get(5)?,
        client_message_id: row.get(6)?,
        body: row.get(7)?,
        created_at: row.get(8)?,
        receipt: row.get(9)?,
    })
}

/// The message a sender already sent under a clientMessageId.
///
/// # Errors
/// Database failure.
pub fn find_by_client_id(
    conn: &Connection,
    sender_id: &str,
    client_message_id: &str,
) -> Result<Option<MessageRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM messages
         WHERE sender_seq = (SELECT seq FROM agents WHERE id = ?1) AND client_message_id = ?2"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params![sender_id, client_message_id], from_row)
        .optional()?)
}

/// A message by id.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, id: &str) -> Result<Option<MessageRow>> {
    let sql = format!("SELECT {COLUMNS} FROM messages WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], from_row)
        .optional()?)
}

/// The next sequence number of a recipient's inbox.
///
/// # Errors
/// Database failure.
pub fn next_sequence(conn: &Connection, recipient_id: &str) -> Result<i64> {
    let last: Option<i64> = conn
        .prepare_cached(
            "SELECT max(sequence) FROM messages
             WHERE recipient_seq = (SELECT seq FROM agents WHERE id = ?1)",
        )?
        .query_row([recipient_id], |r| r.get(0))?;
    Ok(last.unwrap_or(0) + 1)
}

/// The transparency log's entry type of a message receipt.
pub const LOG_KIND: &str = "bourse.message.receipt";

/// The transparency log's name of a message's receipt.
pub fn log_ref(message_id: &str) -> String {
    format!("message:{message_id}")
}

/// Inserts a message into the inbox and its entry into the journal, unless its sender already
/// used its clientMessageId: then nothing is written and the answer is `None` (the unique
/// index answers that in the same lookup the insert makes anyway). The rows of both agents
/// give the per-agent index keys (`recipient_seq`, `sender_seq`). The receipt's `log_entry`
/// (`crypto::tlog::object_entry` of the receipt, made before the write) is appended to the
/// transparency log in the same transaction.
///
/// # Errors
/// Database failure.
pub fn insert(
    conn: &Connection,
    m: &MessageRow,
    body_digest: &str,
    log_entry: &[u8],
) -> Result<Option<u64>> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO messages (id, recipient_id, sequence, sender_id, sender_handle, recipient_handle,
                client_message_id, body, created_at, receipt, recipient_seq, sender_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
                (SELECT seq FROM agents WHERE id = ?2), (SELECT seq FROM agents WHERE id = ?4))
             ON CONFLICT (sender_seq, client_message_id) DO NOTHING",
        )?
        .execute(params![
            m.id,
            m.recipient_id,
            m.sequence,
            m.sender_id,
            m.sender_handle,
            m.recipient_handle,
            m.client_message_id,
            m.body,
            m.created_at,
            m.receipt
        ])?;
    if inserted == 0 {
        return Ok(None);
    }
    conn.prepare_cached(
        "INSERT INTO message_journal (message_id, sender_handle, recipient_handle, accepted_at, body_digest, receipt)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![m.id, m.sender_handle, m.recipient_handle, m.created_at, body_digest, m.receipt])?;
    let index = super::tlog::append_entry(conn, &log_ref(&m.id), log_entry)?;
    Ok(Some(index))
}

/// A page of a recipient's inbox after a sequence number, ascending; one extra row tells
/// whether more exist.
///
/// # Errors
/// Database failure.
pub fn inbox(
    conn: &Connection,
    recipient_id: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<MessageRow>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM messages
         WHERE recipient_seq = (SELECT seq FROM agents WHERE id = ?1) AND sequence > ?2
         ORDER BY sequence LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![recipient_id, after, limit], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One callback delivery.
#[derive(Clone, Debug)]
pub struct DeliveryRow {
    pub id: String,
    pub agent_id: String,
    /// `agent.message` or `purchase.approval_decided`.
    pub event: String,
    /// The message pushed (`agent.message`).
    pub message_id: Option<String>,
    /// The purchase whose approval was decided (`purchase.approval_decided`).
    pub purchase_id: Option<String>,
    pub url: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: Option<String>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const DELIVERY_COLUMNS: &str = "id, agent_id, message_id, url, status, attempts, next_attempt_at, last_error, created_at, updated_at, event, purchase_id";

fn delivery_from_row(row: &Row<'_>) -> rusqlite::Result<DeliveryRow> {
    Ok(DeliveryRow {
        id: row.get(0)?,
        agent_id: row.get(1)?,
        message_id: row.get(2)?,
        url: row.get(3)?,
        status: row.get(4)?,
        attempts: row.get(5)?,
        next_attempt_at: row.get(6)?,
        last_error: row.get(7)?,
        created_at: row.get(8)?,
        updated_at: row.get(9)?,
        event: row.get(10)?,
        purchase_id: row.get(11)?,
    })
}

/// Queues a delivery, due at once.
///
/// # Errors
/// Database failure.
pub fn insert_delivery(conn: &Connection, d: &DeliveryRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO callback_deliveries (id, agent_id, message_id, url, status, attempts, next_attempt_at,
            last_error, created_at, updated_at, event, purchase_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        d.id,
        d.agent_id,
        d.message_id,
        d.url,
        d.status,
        d.attempts,
        d.next_attempt_at,
        d.last_error,
        d.created_at,
        d.updated_at,
        d.event,
        d.purchase_id
    ])?;
    Ok(())
}

/// Writes a delivery's state after an attempt or a replay.
///
/// # Errors
/// Database failure.
pub fn update_delivery(conn: &Connection, d: &DeliveryRow) -> Result<()> {
    conn.prepare_cached(
        "UPDATE callback_deliveries SET status = ?2, attempts = ?3, next_attempt_at = ?4, last_error = ?5,
            updated_at = ?6 WHERE id = ?1",
    )?
    .execute(params![d.id, d.status, d.attempts, d.next_attempt_at, d.last_error, d.updated_at])?;
    Ok(())
}

/// Writes a replayed delivery: its new URL and its state, as [`update_delivery`] does.
///
/// # Errors
/// Database failure.
pub fn replay_delivery(conn: &Connection, d: &DeliveryRow) -> Result<()> {
    conn.prepare_cached("UPDATE callback_deliveries SET url = ?2 WHERE id = ?1")?
        .execute([&d.id, &d.url])?;
    update_delivery(conn, d)
}

/// Makes a pending delivery due at `now` if it was due later (a callback held for something
/// else to finish first).
///
/// # Errors
/// Database failure.
pub fn bring_forward(conn: &Connection, id: &str, now: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE callback_deliveries SET next_attempt_at = ?2
         WHERE id = ?1 AND status = 'pending' AND attempts = 0 AND next_attempt_at > ?2",
    )?
    .execute([id, now])?;
    Ok(())
}

/// Pending deliveries due at or before `now`, oldest first.
///
/// # Errors
/// Database failure.
pub fn due_deliveries(conn: &Connection, now: &str, limit: i64) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM callback_deliveries
         WHERE status = 'pending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, seq LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![now, limit], delivery_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An agent's deliveries, optionally of one status, newest first.
///
/// # Errors
/// Database failure.
pub fn deliveries_of(
    conn: &Connection,
    agent_id: &str,
    status: Option<&str>,
    limit: i64,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM callback_deliveries
         WHERE agent_id = ?1 AND (?2 IS NULL OR status = ?2) ORDER BY seq DESC LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![agent_id, status, limit], delivery_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every agent's deliveries, optionally of one status, newest first (the operator's view).
///
/// # Errors
/// Database failure.
pub fn all_deliveries(
    conn: &Connection,
    status: Option<&str>,
    limit: i64,
) -> Result<Vec<DeliveryRow>> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM callback_deliveries
         WHERE ?1 IS NULL OR status = ?1 ORDER BY seq DESC LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![status, limit], delivery_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A delivery by id.
///
/// # Errors
/// Database failure.
pub fn find_delivery(conn: &Connection, id: &str) -> Result<Option<DeliveryRow>> {
    let sql = format!("SELECT {DELIVERY_COLUMNS} FROM callback_deliveries WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], delivery_from_row)
        .optional()?)
}

/// Callback deliveries counted by status (`pending`, `delivered`, `dead`; the metrics' gauge).
///
/// # Errors
/// Database failure.
pub fn deliveries_by_status(conn: &Connection) -> Result<Vec<(String, i64)>> {
    let mut stmt =
        conn.prepare_cached("SELECT status, count(*) FROM callback_deliveries GROUP BY status")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{agents, test_agent, test_db};

    /// A log entry as `crypto::tlog::object_entry` makes one.
    const ENTRY: &[u8] = br#"{"artifact":{},"type":"bourse.message.receipt"}"#;

    fn message(id: &str, sequence: i64, client_message_id: &str) -> MessageRow {
        MessageRow {
            id: id.into(),
            recipient_id: "r".into(),
            sequence,
            sender_id: "s".into(),
            sender_handle: "A-1".into(),
            recipient_handle: "A-2".into(),
            client_message_id: client_message_id.into(),
            body: "hi".into(),
            created_at: "t0".into(),
            receipt: "{}".into(),
        }
    }

    fn two_agents() -> Connection {
        let conn = test_db();
        agents::insert(&conn, &test_agent("s", "A-1"), "ks", None).unwrap();
        agents::insert(&conn, &test_agent("r", "A-2"), "kr", None).unwrap();
        conn
    }

    #[test]
    fn a_used_client_message_id_writes_nothing_and_says_so() {
        let conn = two_agents();
        assert!(
            insert(&conn, &message("m1", 1, "c"), "sha256:x", ENTRY)
                .unwrap()
                .is_some()
        );
        assert!(
            insert(&conn, &message("m2", 2, "c"), "sha256:y", ENTRY)
                .unwrap()
                .is_none()
        );
        let rows: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM message_journal)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 2, "one message and its journal entry");
        assert_eq!(
            find_by_client_id(&conn, "s", "c").unwrap().unwrap().id,
            "m1"
        );
        // Another constraint still refuses: a sequence the recipient already has.
        assert!(insert(&conn, &message("m3", 1, "d"), "sha256:z", ENTRY).is_err());
    }

    #[test]
    fn a_replay_moves_a_dead_delivery_to_the_new_url_and_requeues_it() {
        let conn = two_agents();
        insert(&conn, &message("m", 1, "c"), "sha256:x", ENTRY).unwrap();
        let mut delivery = DeliveryRow {
            id: "d".into(),
            agent_id: "r".into(),
            event: "agent.message".into(),
            message_id: Some("m".into()),
            purchase_id: None,
            url: "https://old.example/hook".into(),
            status: "dead".into(),
            attempts: 5,
            next_attempt_at: None,
            last_error: Some("HTTP 500".into()),
            created_at: "t0".into(),
            updated_at: "t1".into(),
        };
        insert_delivery(&conn, &delivery).unwrap();
        delivery.url = "https://new.example/hook".into();
        delivery.status = "pending".into();
        delivery.attempts = 0;
        delivery.next_attempt_at = Some("t2".into());
        delivery.last_error = None;
        delivery.updated_at = "t2".into();
        replay_delivery(&conn, &delivery).unwrap();
        let stored = find_delivery(&conn, "d").unwrap().unwrap();
        assert_eq!(stored.url, "https://new.example/hook");
        assert_eq!((stored.status.as_str(), stored.attempts), ("pending", 0));
        assert_eq!(due_deliveries(&conn, "t2", 10).unwrap().len(), 1);
        // A held delivery is brought forward, never pushed back.
        delivery.next_attempt_at = Some("t9".into());
        update_delivery(&conn, &delivery).unwrap();
        assert!(due_deliveries(&conn, "t3", 10).unwrap().is_empty());
        bring_forward(&conn, "d", "t3").unwrap();
        assert_eq!(due_deliveries(&conn, "t3", 10).unwrap().len(), 1);
        bring_forward(&conn, "d", "t5").unwrap();
        let stored = find_delivery(&conn, "d").unwrap().unwrap();
        assert_eq!(stored.next_attempt_at.as_deref(), Some("t3"));
    }
}
