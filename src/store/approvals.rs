//! Approvals (`approvals`): a purchase above its buyer's approval threshold waits in
//! `pending_approval` until the agent's owner decides on the capability page. Only the SHA-256 of
//! the capability id is stored.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// An approval as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApprovalRow {
    pub id_hash: String,
    pub purchase_id: String,
    pub buyer_id: String,
    pub created_at: String,
    pub expires_at: String,
    /// `None` while open, then `approved`, `denied` or `expired`.
    pub decision: Option<String>,
    pub decided_at: Option<String>,
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ApprovalRow> {
    Ok(ApprovalRow {
        id_hash: r.get(0)?,
        purchase_id: r.get(1)?,
        buyer_id: r.get(2)?,
        created_at: r.get(3)?,
        expires_at: r.get(4)?,
        decision: r.get(5)?,
        decided_at: r.get(6)?,
    })
}

const COLUMNS: &str =
    "id_hash, purchase_id, buyer_id, created_at, expires_at, decision, decided_at";

/// Records a new, open approval.
///
/// # Errors
/// Database failure.
pub fn insert(conn: &Connection, approval: &ApprovalRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO approvals (id_hash, purchase_id, buyer_id, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        approval.id_hash,
        approval.purchase_id,
        approval.buyer_id,
        approval.created_at,
        approval.expires_at
    ])?;
    Ok(())
}

/// The approval stored under `id_hash`.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, id_hash: &str) -> Result<Option<ApprovalRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE id_hash = ?1"
        ))?
        .query_row([id_hash], row)
        .optional()?)
}

/// Records the owner's decision (`approved` or `denied`) on an approval still open at `now`,
/// and moves its purchase out of `pending_approval`: approved, to `pending_payment` until
/// `pay_by`; denied, to `denied`. Single use: `false` (nothing written) when it was already
/// decided or has expired.
///
/// # Errors
/// Database failure.
pub fn decide(
    conn: &Connection,
    id_hash: &str,
    approve: bool,
    now: &str,
    pay_by: &str,
) -> Result<bool> {
    let decision = if approve { "approved" } else { "denied" };
    let Some(purchase_id): Option<String> = conn
        .prepare_cached(
            "UPDATE approvals SET decision = ?2, decided_at = ?3
             WHERE id_hash = ?1 AND decision IS NULL AND expires_at > ?3
             RETURNING purchase_id",
        )?
        .query_row(params![id_hash, decision, now], |r| r.get(0))
        .optional()?
    else {
        return Ok(false);
    };
    let (status, expires_at) = if approve {
        ("pending_payment", Some(pay_by))
    } else {
        ("denied", None)
    };
    conn.prepare_cached(
        "UPDATE purchases SET status = ?2, expires_at = coalesce(?3, expires_at)
         WHERE id = ?1 AND status = 'pending_approval'",
    )?
    .execute(params![purchase_id, status, expires_at])?;
    Ok(true)
}

/// Marks every approval still open past its expiry at `now` expired, and its purchase
/// `expired` (its amount is given back); returns those purchases' ids.
///
/// # Errors
/// Database failure.
pub fn expire_due(conn: &Connection, now: &str) -> Result<Vec<String>> {
    let ids = conn
        .prepare_cached(
            "UPDATE approvals SET decision = 'expired', decided_at = ?1
             WHERE decision IS NULL AND expires_at <= ?1
             RETURNING purchase_id",
        )?
        .query_map([now], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for id in &ids {
        conn.prepare_cached(
            "UPDATE purchases SET status = 'expired' WHERE id = ?1 AND status = 'pending_approval'",
        )?
        .execute([id])?;
    }
    Ok(ids)
}

/// The approval of a purchase, if it waited for one.
///
/// # Errors
/// Database failure.
pub fn of_purchase(conn: &Connection, purchase_id: &str) -> Result<Option<ApprovalRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE purchase_id = ?1"
        ))?
        .query_row([purchase_id], row)
        .optional()?)
}

/// An approval still open at `now`, as its buyer's spending view lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenApproval {
    pub purchase_id: String,
    pub listing_id: String,
    pub amount_cents: i64,
    pub rail: String,
    pub created_at: String,
    pub expires_at: String,
}

/// `buyer_id`'s approvals still open at `now`, oldest first.
///
/// # Errors
/// Database failure.
pub fn open_for_buyer(conn: &Connection, buyer_id: &str, now: &str) -> Result<Vec<OpenApproval>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.id, p.listing_id, p.amount_cents, p.rail, a.created_at, a.expires_at
             FROM approvals a JOIN purchases p ON p.id = a.purchase_id
             WHERE a.buyer_id = ?1 AND a.decision IS NULL AND a.expires_at > ?2
               AND p.status = 'pending_approval'
             ORDER BY a.created_at, p.seq",
        )?
        .query_map(params![buyer_id, now], |r| {
            Ok(OpenApproval {
                purchase_id: r.get(0)?,
                listing_id: r.get(1)?,
                amount_cents: r.get(2)?,
                rail: r.get(3)?,
                created_at: r.get(4)?,
                expires_at: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{agents, spending, test_agent, test_db};

    fn purchase(conn: &Connection, id: &str, expires: &str) {
        conn.execute(
            "INSERT INTO purchases (id, listing_id, buyer_id, seller_id, status, amount_cents,
                 platform_fee_cents, seller_net_cents, fee_bps, schedule_version, rail,
                 created_at, receipt, expires_at)
             VALUES (?1, 'l', 'a', 's', 'pending_approval', 500, 0, 0, 0, 1, 'sandbox',
                 '2026-11-21T10:00:00.000Z', '{}', ?2)",
            params![id, expires],
        )
        .unwrap();
        insert(
            conn,
            &ApprovalRow {
                id_hash: format!("h-{id}"),
                purchase_id: id.into(),
                buyer_id: "a".into(),
                created_at: "2026-11-21T10:00:00.000Z".into(),
                expires_at: expires.into(),
                ..ApprovalRow::default()
            },
        )
        .unwrap();
    }

    fn status(conn: &Connection, id: &str) -> String {
        conn.query_row("SELECT status FROM purchases WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .unwrap()
    }

    #[test]
    fn an_approval_is_decided_once_holds_its_amount_and_expires() {
        let conn = test_db();
        agents::insert(&conn, &test_agent("a", "A-1"), "k", None).unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        let (day, now) = ("2026-11-21T00:00:00.000Z", "2026-11-21T11:00:00.000Z");
        let later = "2026-11-22T10:00:00.000Z";
        for id in ["yes", "no", "late"] {
            purchase(&conn, id, later);
        }
        // Waiting purchases hold their amounts.
        assert_eq!(spending::spent_since(&conn, "a", day, now).unwrap(), 1500);
        assert_eq!(open_for_buyer(&conn, "a", now).unwrap().len(), 3);
        let pay_by = "2026-11-21T11:30:00.000Z";
        assert!(decide(&conn, "h-yes", true, now, pay_by).unwrap());
        assert!(
            !decide(&conn, "h-yes", false, now, pay_by).unwrap(),
            "single use"
        );
        assert_eq!(status(&conn, "yes"), "pending_payment");
        assert!(decide(&conn, "h-no", false, now, pay_by).unwrap());
        assert_eq!(status(&conn, "no"), "denied");
        assert_eq!(
            find(&conn, "h-no").unwrap().unwrap().decision.as_deref(),
            Some("denied")
        );
        // The denied one gives its amount back; the approved one holds it as a checkout.
        assert_eq!(spending::spent_since(&conn, "a", day, now).unwrap(), 1000);
        assert_eq!(expire_due(&conn, now).unwrap(), Vec::<String>::new());
        assert_eq!(expire_due(&conn, later).unwrap(), vec!["late".to_owned()]);
        assert_eq!(status(&conn, "late"), "expired");
        assert!(!decide(&conn, "h-late", true, later, pay_by).unwrap());
        assert!(open_for_buyer(&conn, "a", now).unwrap().is_empty());
        assert_eq!(
            of_purchase(&conn, "yes")
                .unwrap()
                .unwrap()
                .decision
                .as_deref(),
            Some("approved")
        );
    }
}
