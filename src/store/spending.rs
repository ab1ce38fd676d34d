//! Spending controls (`spending_policies`): an agent's policy, and what a buyer has spent since
//! the start of a window (the purchases that hold money: open checkouts, paid and delivered ones
//! that were not refunded).

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// The condition (on purchases as `p`) of a purchase that holds its money at the time bound to
/// the parameter `$now`: open checkouts and purchases waiting for approval not past their
/// expiry, paid and delivered purchases without a refund. Cancelled, denied, expired and
/// refunded purchases give their amount back. One spelling for every spending sum below.
macro_rules! holding_money {
    ($now:literal) => {
        concat!(
            "(p.status IN ('paid', 'delivered')
              OR (p.status IN ('pending_payment', 'pending_approval')
                  AND (p.expires_at IS NULL OR p.expires_at > ",
            $now,
            ")))
             AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.purchase_id = p.id)"
        )
    };
}

/// An agent's spending policy as stored: caps in US cents (`None`: no cap), the lists as JSON
/// arrays of names (`None`: any).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRow {
    pub agent_id: String,
    pub per_purchase_cents: Option<i64>,
    pub daily_cents: Option<i64>,
    pub monthly_cents: Option<i64>,
    pub rails: Option<String>,
    pub categories: Option<String>,
    pub verticals: Option<String>,
    pub approval_threshold_cents: Option<i64>,
    pub approval_ttl_secs: Option<i64>,
    pub updated_at: String,
}

/// An agent's policy, if it set one.
///
/// # Errors
/// Database failure.
pub fn find(conn: &Connection, agent_id: &str) -> Result<Option<PolicyRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT agent_id, per_purchase_cents, daily_cents, monthly_cents, rails, categories,
                 verticals, approval_threshold_cents, approval_ttl_secs, updated_at
             FROM spending_policies WHERE agent_id = ?1",
        )?
        .query_row([agent_id], |r| {
            Ok(PolicyRow {
                agent_id: r.get(0)?,
                per_purchase_cents: r.get(1)?,
                daily_cents: r.get(2)?,
                monthly_cents: r.get(3)?,
                rails: r.get(4)?,
                categories: r.get(5)?,
                verticals: r.get(6)?,
                approval_threshold_cents: r.get(7)?,
                approval_ttl_secs: r.get(8)?,
                updated_at: r.get(9)?,
            })
        })
        .optional()?)
}

/// Stores (or replaces, whole) an agent's policy.
///
/// # Errors
/// Database failure.
pub fn upsert(conn: &Connection, policy: &PolicyRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO spending_policies (agent_id, per_purchase_cents, daily_cents, monthly_cents,
             rails, categories, verticals, approval_threshold_cents, approval_ttl_secs, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (agent_id) DO UPDATE SET per_purchase_cents = excluded.per_purchase_cents,
             daily_cents = excluded.daily_cents, monthly_cents = excluded.monthly_cents,
             rails = excluded.rails, categories = excluded.categories,
             verticals = excluded.verticals,
             approval_threshold_cents = excluded.approval_threshold_cents,
             approval_ttl_secs = excluded.approval_ttl_secs, updated_at = excluded.updated_at",
    )?
    .execute(params![
        policy.agent_id,
        policy.per_purchase_cents,
        policy.daily_cents,
        policy.monthly_cents,
        policy.rails,
        policy.categories,
        policy.verticals,
        policy.approval_threshold_cents,
        policy.approval_ttl_secs,
        policy.updated_at,
    ])?;
    Ok(())
}

/// How many agents have a policy (the operator's view).
///
/// # Errors
/// Database failure.
pub fn count(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM spending_policies")?
        .query_row([], |r| r.get(0))?)
}

/// What `buyer_id` has spent in purchases opened at or after `since` that still hold their
/// money at `now` (the one window of [`spent_in_windows`]; its tests' shorthand).
#[cfg(test)]
pub fn spent_since(conn: &Connection, buyer_id: &str, since: &str, now: &str) -> Result<i64> {
    Ok(spent_in_windows(conn, buyer_id, since, since, now)?.1)
}

/// What `buyer_id` has spent in purchases opened since `day` and since `month` (`month` ≤
/// `day`) that still hold their money at `now` (`holding_money!`), in one pass over the
/// month's purchases (a purchase's policy check and `GET /api/agents/me/spending` ask both).
///
/// # Errors
/// Database failure.
pub fn spent_in_windows(
    conn: &Connection,
    buyer_id: &str,
    day: &str,
    month: &str,
    now: &str,
) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached(concat!(
            "SELECT coalesce(sum(CASE WHEN p.created_at >= ?2 THEN p.amount_cents END), 0),
                        coalesce(sum(p.amount_cents), 0)
                 FROM purchases p
                 WHERE p.buyer_id = ?1 AND p.created_at >= ?3 AND ",
            holding_money!("?4")
        ))?
        .query_row(params![buyer_id, day, month, now], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?)
}

/// What the restricted key `key_id` has spent since `since` (as [`spent_in_windows`]).
///
/// # Errors
/// Database failure.
pub fn key_spent_since(conn: &Connection, key_id: &str, since: &str, now: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(concat!(
            "SELECT coalesce(sum(p.amount_cents), 0) FROM purchases p
                 WHERE p.key_id = ?1 AND p.created_at >= ?2 AND ",
            holding_money!("?3")
        ))?
        .query_row(params![key_id, since, now], |r| r.get(0))?)
}

/// An OAuth grant's daily spending cap (`Some(None)`: a grant without one; `None`: no such
/// grant), and whether it was revoked.
///
/// # Errors
/// Database failure.
pub fn grant_cap(conn: &Connection, grant_id: &str) -> Result<Option<(Option<i64>, bool)>> {
    Ok(conn
        .prepare_cached(
            "SELECT spend_daily_cents, revoked_at IS NOT NULL FROM oauth_grants WHERE id = ?1",
        )?
        .query_row([grant_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// What the purchases bought through OAuth grant `grant_id` spent since `since` (as
/// [`spent_in_windows`]).
///
/// # Errors
/// Database failure.
pub fn grant_spent_since(conn: &Connection, grant_id: &str, since: &str, now: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(concat!(
            "SELECT coalesce(sum(p.amount_cents), 0) FROM purchases p
                 WHERE p.grant_id = ?1 AND p.created_at >= ?2 AND ",
            holding_money!("?3")
        ))?
        .query_row(params![grant_id, since, now], |r| r.get(0))?)
}

/// Records the OAuth grant whose token bought a purchase.
///
/// # Errors
/// Database failure.
pub fn set_purchase_grant(conn: &Connection, purchase_id: &str, grant_id: &str) -> Result<()> {
    conn.prepare_cached("UPDATE purchases SET grant_id = ?2 WHERE id = ?1")?
        .execute([purchase_id, grant_id])?;
    Ok(())
}

/// Records which restricted key opened a purchase.
///
/// # Errors
/// Database failure.
pub fn set_purchase_key(conn: &Connection, purchase_id: &str, key_id: &str) -> Result<()> {
    conn.prepare_cached("UPDATE purchases SET key_id = ?2 WHERE id = ?1")?
        .execute([purchase_id, key_id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{agents, test_agent, test_db};

    #[test]
    fn a_policy_is_stored_replaced_and_read_back() {
        let conn = test_db();
        agents::insert(&conn, &test_agent("a", "A-1"), "k", None).unwrap();
        assert_eq!(find(&conn, "a").unwrap(), None);
        let mut policy = PolicyRow {
            agent_id: "a".into(),
            daily_cents: Some(500),
            rails: Some("[\"checkout\"]".into()),
            updated_at: "t0".into(),
            ..PolicyRow::default()
        };
        upsert(&conn, &policy).unwrap();
        assert_eq!(find(&conn, "a").unwrap().as_ref(), Some(&policy));
        policy.daily_cents = None;
        policy.monthly_cents = Some(9);
        upsert(&conn, &policy).unwrap();
        assert_eq!(find(&conn, "a").unwrap(), Some(policy));
        assert_eq!(count(&conn).unwrap(), 1);
        assert_eq!(spent_since(&conn, "a", "t0", "t1").unwrap(), 0);
    }

    #[test]
    fn money_counts_while_held_and_comes_back_on_cancel_expiry_and_refund() {
        let conn = test_db();
        conn.execute_batch("PRAGMA foreign_keys = OFF;").unwrap();
        let purchase =
            |id: &str, status: &str, amount: i64, created: &str, expires: Option<&str>| {
                conn.execute(
                "INSERT INTO purchases (id, listing_id, buyer_id, seller_id, status, amount_cents,
                     platform_fee_cents, seller_net_cents, fee_bps, schedule_version, rail,
                     created_at, receipt, expires_at, key_id)
                 VALUES (?1, 'l', 'a', 's', ?2, ?3, 0, 0, 0, 1, 'checkout', ?4, '{}', ?5, 'k')",
                params![id, status, amount, created, expires],
            )
            .unwrap();
            };
        let now = "2026-11-21T12:00:00.000Z";
        purchase("paid", "paid", 100, "2026-11-21T01:00:00.000Z", None);
        purchase(
            "delivered",
            "delivered",
            200,
            "2026-11-21T02:00:00.000Z",
            None,
        );
        purchase(
            "open",
            "pending_payment",
            400,
            "2026-11-21T11:50:00.000Z",
            Some("2026-11-21T12:20:00.000Z"),
        );
        purchase(
            "lapsed",
            "pending_payment",
            800,
            "2026-11-21T11:00:00.000Z",
            Some("2026-11-21T11:30:00.000Z"),
        );
        purchase(
            "cancelled",
            "cancelled",
            1600,
            "2026-11-21T03:00:00.000Z",
            None,
        );
        purchase("expired", "expired", 3200, "2026-11-21T04:00:00.000Z", None);
        purchase("yesterday", "paid", 6400, "2026-11-20T23:59:59.999Z", None);
        let day = "2026-11-21T00:00:00.000Z";
        assert_eq!(spent_since(&conn, "a", day, now).unwrap(), 700);
        let month = "2000-01-01T00:00:00.000Z";
        assert_eq!(
            spent_in_windows(&conn, "a", day, month, now).unwrap(),
            (700, spent_since(&conn, "a", month, now).unwrap())
        );
        assert_eq!(key_spent_since(&conn, "k", day, now).unwrap(), 700);
        assert_eq!(
            spent_since(&conn, "a", "2026-11-01T00:00:00.000Z", now).unwrap(),
            7100
        );
        // A refunded purchase gives its amount back.
        conn.execute(
            "INSERT INTO refunds (payment_ref, purchase_id, amount_cents, status, created_at)
             VALUES ('pi_1', 'delivered', 200, 'pending', ?1)",
            [now],
        )
        .unwrap();
        assert_eq!(spent_since(&conn, "a", day, now).unwrap(), 500);
    }
}
