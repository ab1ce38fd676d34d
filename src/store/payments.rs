//! Payment-rail state: sellers' payout accounts, checkout expiry, escrow release, the money
//! movements retried until the rail confirms them (payouts, refunds), and the webhook events
//! already handled. Rail names (`ledger.rail`, `payout_accounts.rail`) are the caller's, from
//! `service::rail`, bound as parameters.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

/// A seller's payout account on a rail.
#[derive(Clone, Debug)]
pub struct PayoutAccount {
    pub agent_id: String,
    /// The id of the onboarding (its page's capability).
    pub onboarding_id: String,
    /// `pending` or `complete`.
    pub status: String,
    /// `sandbox` or `stripe`.
    pub rail: String,
    /// The account's id on the rail (Stripe: `acct_…`).
    pub account_ref: Option<String>,
}

const ACCOUNT_COLUMNS: &str = "agent_id, onboarding_id, status, rail, account_ref";

fn account_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PayoutAccount> {
    Ok(PayoutAccount {
        agent_id: r.get(0)?,
        onboarding_id: r.get(1)?,
        status: r.get(2)?,
        rail: r.get(3)?,
        account_ref: r.get(4)?,
    })
}

/// The payout account of a seller.
///
/// # Errors
/// Database failure.
pub fn account_of(conn: &Connection, agent_id: &str) -> Result<Option<PayoutAccount>> {
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM payout_accounts WHERE agent_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([agent_id], account_from_row)
        .optional()?)
}

/// The payout account behind an onboarding id.
///
/// # Errors
/// Database failure.
pub fn account_by_onboarding(
    conn: &Connection,
    onboarding_id: &str,
) -> Result<Option<PayoutAccount>> {
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM payout_accounts WHERE onboarding_id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([onboarding_id], account_from_row)
        .optional()?)
}

/// Starts (or keeps) a seller's onboarding on `rail`: a row from another rail starts over as
/// `pending` with the new account reference.
///
/// # Errors
/// Database failure.
pub fn open_account(
    conn: &Connection,
    agent_id: &str,
    fresh_onboarding_id: &str,
    rail: &str,
    account_ref: Option<&str>,
    now: &str,
) -> Result<PayoutAccount> {
    conn.prepare_cached(
        "INSERT INTO payout_accounts (agent_id, onboarding_id, status, created_at, rail, account_ref)
         VALUES (?1, ?2, 'pending', ?3, ?4, ?5)
         ON CONFLICT (agent_id) DO UPDATE SET status = 'pending', completed_at = NULL, rail = excluded.rail,
             account_ref = excluded.account_ref
         WHERE payout_accounts.rail != excluded.rail OR payout_accounts.account_ref IS NOT excluded.account_ref",
    )?
    .execute(params![agent_id, fresh_onboarding_id, now, rail, account_ref])?;
    Ok(account_of(conn, agent_id)?.expect("just written"))
}

/// Marks onboarding complete (or, on the Stripe rail, back to pending when Stripe disables
/// payouts), by onboarding id or by the rail's account reference. Answers the rows changed.
///
/// # Errors
/// Database failure.
pub fn set_account_status(
    conn: &Connection,
    key: AccountKey<'_>,
    complete: bool,
    now: &str,
) -> Result<usize> {
    let (column, value) = match key {
        AccountKey::Onboarding(id) => ("onboarding_id", id),
        AccountKey::Reference(reference) => ("account_ref", reference),
    };
    let sql = format!(
        "UPDATE payout_accounts SET status = CASE WHEN ?2 THEN 'complete' ELSE 'pending' END,
             completed_at = CASE WHEN ?2 THEN coalesce(completed_at, ?3) END
         WHERE {column} = ?1"
    );
    Ok(conn
        .prepare_cached(&sql)?
        .execute(params![value, complete, now])?)
}

/// How [`set_account_status`] finds the account.
#[derive(Clone, Copy)]
pub enum AccountKey<'a> {
    Onboarding(&'a str),
    Reference(&'a str),
}

/// Marks pending checkouts whose time is up as expired, freeing their reservations.
///
/// # Errors
/// Database failure.
pub fn expire_checkouts(conn: &Connection, now: &str) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE purchases SET status = 'expired' WHERE status = 'pending_payment' AND expires_at <= ?1",
        )?
        .execute([now])?)
}

/// How many checkouts of a listing are open at `now` (reserving a copy each); one past its
/// expiry no longer counts, even before [`expire_checkouts`] marks it.
///
/// # Errors
/// Database failure.
pub fn open_reservations(conn: &Connection, listing_id: &str, now: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM purchases WHERE listing_id = ?1 AND status = 'pending_payment'
                 AND (expires_at IS NULL OR expires_at > ?2)",
        )?
        .query_row(params![listing_id, now], |r| r.get(0))?)
}

/// Marks one pending checkout as ended (`expired` or `cancelled`); answers whether it was
/// pending.
///
/// # Errors
/// Database failure.
pub fn end_checkout(conn: &Connection, purchase_id: &str, status: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE purchases SET status = ?2 WHERE id = ?1 AND status = 'pending_payment'",
        )?
        .execute(params![purchase_id, status])?
        > 0)
}

/// Stores the rail's checkout session of a pending purchase.
///
/// # Errors
/// Database failure.
pub fn set_checkout(conn: &Connection, purchase_id: &str, session: &str, url: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE purchases SET checkout_session = ?2, checkout_url = ?3 WHERE id = ?1",
    )?
    .execute(params![purchase_id, session, url])?;
    Ok(())
}

/// Releases the held rows whose escrow clock has run, on rails that need no payout call
/// (sandbox checkout, wallet): every ledger rail but `paid_out_rail`, whose rows are released
/// one by one after their transfer. Answers the released rows (id, purchase, amount).
///
/// # Errors
/// Database failure.
pub fn release_due_without_payout(
    conn: &Connection,
    now: &str,
    paid_out_rail: &str,
) -> Result<Vec<(String, String, i64)>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE ledger SET status = 'released', released_at = ?1
         WHERE status = 'held' AND release_at IS NOT NULL AND release_at <= ?1 AND rail != ?2
         RETURNING id, purchase_id, amount_cents",
    )?;
    let rows = stmt.query_map(params![now, paid_out_rail], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A held card row due for its payout.
#[derive(Clone, Debug)]
pub struct DuePayout {
    pub ledger_id: String,
    pub purchase_id: String,
    pub seller_net_cents: i64,
    /// The seller's Stripe account, if it has one.
    pub destination: Option<String>,
    /// Definite failures so far (names the idempotency key of the next attempt).
    pub attempts: i64,
    /// The rail's reference of the buyer's payment (Stripe: the PaymentIntent).
    pub payment_ref: Option<String>,
    /// The charge the transfer is tied to, once chosen (`none` for no charge).
    pub source: Option<String>,
}

/// Rows of the ledger rail `rail` whose escrow clock has run and whose retry time (if any) has
/// come, with the seller's account on the payout-account rail `account_rail`.
///
/// # Errors
/// Database failure.
pub fn due_payouts(
    conn: &Connection,
    now: &str,
    limit: i64,
    rail: &str,
    account_rail: &str,
) -> Result<Vec<DuePayout>> {
    let mut stmt = conn.prepare_cached(
        "SELECT l.id, l.purchase_id, p.seller_net_cents, a.account_ref, l.payout_attempts, p.payment_ref,
                l.payout_source
         FROM ledger l JOIN purchases p ON p.id = l.purchase_id
         LEFT JOIN payout_accounts a ON a.agent_id = p.seller_id AND a.rail = ?4
         WHERE l.status = 'held' AND l.rail = ?3 AND l.release_at IS NOT NULL AND l.release_at <= ?1
           AND (l.payout_retry_at IS NULL OR l.payout_retry_at <= ?1)
         ORDER BY l.release_at LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![now, limit, rail, account_rail], |r| {
        Ok(DuePayout {
            ledger_id: r.get(0)?,
            purchase_id: r.get(1)?,
            seller_net_cents: r.get(2)?,
            destination: r.get(3)?,
            attempts: r.get(4)?,
            payment_ref: r.get(5)?,
            source: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records the charge a row's transfers are tied to, before the first transfer request (it is
/// never changed afterwards).
///
/// # Errors
/// Database failure.
pub fn set_payout_source(conn: &Connection, ledger_id: &str, source: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE ledger SET payout_source = ?2 WHERE id = ?1 AND payout_source IS NULL",
    )?
    .execute(params![ledger_id, source])?;
    Ok(())
}

/// A money movement retried until the rail confirms it: the transfer of a held ledger row's
/// seller net, or the refund of a payment owed back. Both keep the same state in their own
/// table: open until done (with the rail's reference), the count of clear refusals (which names
/// the next idempotency key), the last error and when to try again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Movement {
    /// A `ledger` row, by id: `held` until `released` with `payout_ref`.
    Transfer,
    /// A `refunds` row, by `payment_ref`: `pending` until `refunded` with `refund_ref`.
    Refund,
}

/// Where a movement's state lives.
struct MovementTable {
    table: &'static str,
    key: &'static str,
    open: &'static str,
    done: &'static str,
    reference: &'static str,
    done_at: &'static str,
    attempts: &'static str,
    retry_at: &'static str,
    error: &'static str,
}

impl Movement {
    const fn state(self) -> MovementTable {
        match self {
            Movement::Transfer => MovementTable {
                table: "ledger",
                key: "id",
                open: "held",
                done: "released",
                reference: "payout_ref",
                done_at: "released_at",
                attempts: "payout_attempts",
                retry_at: "payout_retry_at",
                error: "payout_error",
            },
            Movement::Refund => MovementTable {
                table: "refunds",
                key: "payment_ref",
                open: "pending",
                done: "refunded",
                reference: "refund_ref",
                done_at: "refunded_at",
                attempts: "attempts",
                retry_at: "retry_at",
                error: "error",
            },
        }
    }
}

/// Records a movement the rail made: the row is done with the rail's reference; `false` when
/// it already was.
///
/// # Errors
/// Database failure.
pub fn mark_moved(
    conn: &Connection,
    movement: Movement,
    id: &str,
    reference: &str,
    now: &str,
) -> Result<bool> {
    let t = movement.state();
    let sql = format!(
        "UPDATE {table} SET status = '{done}', {done_at} = ?3, {reference} = ?2, {error} = NULL,
             {retry_at} = NULL
         WHERE {key} = ?1 AND status = '{open}'",
        table = t.table,
        done = t.done,
        done_at = t.done_at,
        reference = t.reference,
        error = t.error,
        retry_at = t.retry_at,
        key = t.key,
        open = t.open,
    );
    Ok(conn
        .prepare_cached(&sql)?
        .execute(params![id, reference, now])?
        > 0)
}

/// Records a failed attempt of a movement; the row stays open until `retry_at`. With
/// `next_key` (the rail clearly refused) the next attempt uses the next idempotency key; an
/// unknown outcome keeps it.
///
/// # Errors
/// Database failure.
pub fn mark_move_failed(
    conn: &Connection,
    movement: Movement,
    id: &str,
    error: &str,
    retry_at: &str,
    next_key: bool,
) -> Result<()> {
    let t = movement.state();
    let sql = format!(
        "UPDATE {table} SET {error} = ?2, {retry_at} = ?3,
             {attempts} = {attempts} + CASE WHEN ?4 THEN 1 ELSE 0 END
         WHERE {key} = ?1 AND status = '{open}'",
        table = t.table,
        error = t.error,
        retry_at = t.retry_at,
        attempts = t.attempts,
        key = t.key,
        open = t.open,
    );
    conn.prepare_cached(&sql)?
        .execute(params![id, error, retry_at, next_key])?;
    Ok(())
}

/// A payment to give back (`refunds` in schema.sql).
#[derive(Clone, Debug)]
pub struct Refund {
    pub payment_ref: String,
    pub purchase_id: String,
    pub amount_cents: i64,
    /// `pending` or `refunded`.
    pub status: String,
    /// The rail's id of the refund once it is made (Stripe: re_…).
    pub refund_ref: Option<String>,
    /// Clear refusals so far (names the idempotency key of the next attempt).
    pub attempts: i64,
    pub created_at: String,
    pub refunded_at: Option<String>,
    /// The last failed attempt's error, and when the next attempt is due.
    pub error: Option<String>,
    pub retry_at: Option<String>,
}

const REFUND_COLUMNS: &str =
    "payment_ref, purchase_id, amount_cents, status, refund_ref, attempts, created_at, refunded_at,
    error, retry_at";

fn refund_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Refund> {
    Ok(Refund {
        payment_ref: r.get(0)?,
        purchase_id: r.get(1)?,
        amount_cents: r.get(2)?,
        status: r.get(3)?,
        refund_ref: r.get(4)?,
        attempts: r.get(5)?,
        created_at: r.get(6)?,
        refunded_at: r.get(7)?,
        error: r.get(8)?,
        retry_at: r.get(9)?,
    })
}

/// Records that the payment `payment_ref` for `purchase_id` must be given back; `false` when
/// it already was recorded (a payment is refunded once). The worker first tries it at
/// `first_retry_at` (the caller tries it at once and holds it until then).
///
/// # Errors
/// Database failure.
pub fn queue_refund(
    conn: &Connection,
    payment_ref: &str,
    purchase_id: &str,
    amount_cents: i64,
    now: &str,
    first_retry_at: &str,
) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO refunds (payment_ref, purchase_id, amount_cents, status, created_at, retry_at)
             VALUES (?1, ?2, ?3, 'pending', ?4, ?5) ON CONFLICT (payment_ref) DO NOTHING",
        )?
        .execute(params![payment_ref, purchase_id, amount_cents, now, first_retry_at])?
        > 0)
}

/// Pending refunds whose retry time (if any) has come, oldest first.
///
/// # Errors
/// Database failure.
pub fn due_refunds(conn: &Connection, now: &str, limit: i64) -> Result<Vec<Refund>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {REFUND_COLUMNS} FROM refunds
         WHERE status = 'pending' AND (retry_at IS NULL OR retry_at <= ?1)
         ORDER BY created_at LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![now, limit], refund_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The refund of a purchase's payment, if one was owed.
///
/// # Errors
/// Database failure.
pub fn refund_of(conn: &Connection, purchase_id: &str) -> Result<Option<Refund>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {REFUND_COLUMNS} FROM refunds WHERE purchase_id = ?1 ORDER BY created_at LIMIT 1"
        ))?
        .query_row(params![purchase_id], refund_row)
        .optional()?)
}

/// Records a webhook event id; `false` when it was already handled.
///
/// # Errors
/// Database failure.
pub fn record_event(conn: &Connection, id: &str, kind: &str, now: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO webhook_events (id, type, received_at) VALUES (?1, ?2, ?3) ON CONFLICT (id) DO NOTHING",
        )?
        .execute(params![id, kind, now])?
        > 0)
}

/// What escrow and shipment need to know of an order.
#[derive(Clone, Debug)]
pub struct Fulfilment {
    pub seller_id: String,
    pub status: String,
    pub physical: bool,
    pub delivered_at: Option<String>,
    pub shipped_at: Option<String>,
}

/// The fulfilment state of a purchase.
///
/// # Errors
/// Database failure.
pub fn fulfilment(conn: &Connection, purchase_id: &str) -> Result<Option<Fulfilment>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.seller_id, p.status, l.physical, p.delivered_at, p.shipped_at
             FROM purchases p JOIN listings l ON l.id = p.listing_id WHERE p.id = ?1",
        )?
        .query_row([purchase_id], |r| {
            Ok(Fulfilment {
                seller_id: r.get(0)?,
                status: r.get(1)?,
                physical: r.get(2)?,
                delivered_at: r.get(3)?,
                shipped_at: r.get(4)?,
            })
        })
        .optional()?)
}

/// Sets when a held row's escrow clock ends (once: a later call keeps the first time).
///
/// # Errors
/// Database failure.
pub fn set_release_at(conn: &Connection, purchase_id: &str, release_at: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE ledger SET release_at = ?2 WHERE purchase_id = ?1 AND status = 'held' AND release_at IS NULL",
    )?
    .execute(params![purchase_id, release_at])?;
    Ok(())
}

/// Records a shipment (the first shipment time is kept); answers the shipment time.
///
/// # Errors
/// Database failure.
pub fn mark_shipped(
    conn: &Connection,
    purchase_id: &str,
    at: &str,
    carrier: &str,
    tracking: &str,
) -> Result<String> {
    Ok(conn
        .prepare_cached(
            "UPDATE purchases SET shipped_at = coalesce(shipped_at, ?2), carrier = ?3, tracking = ?4 WHERE id = ?1
             RETURNING shipped_at",
        )?
        .query_row(params![purchase_id, at, carrier, tracking], |r| r.get(0))?)
}

/// A seller's sales totals: count, gross, platform fees, held and released seller net.
#[derive(Clone, Copy, Debug)]
pub struct SalesTotals {
    pub count: i64,
    pub gross_cents: i64,
    pub fee_cents: i64,
    pub held_cents: i64,
    pub released_cents: i64,
}

/// The seller's sales totals over the ledger.
///
/// # Errors
/// Database failure.
pub fn sales_totals(conn: &Connection, seller_id: &str) -> Result<SalesTotals> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*), coalesce(sum(p.amount_cents), 0), coalesce(sum(p.platform_fee_cents), 0),
                coalesce(sum(CASE WHEN l.status = 'held' THEN p.seller_net_cents END), 0),
                coalesce(sum(CASE WHEN l.status = 'released' THEN p.seller_net_cents END), 0)
             FROM ledger l JOIN purchases p ON p.id = l.purchase_id WHERE p.seller_id = ?1",
        )?
        .query_row([seller_id], |r| {
            Ok(SalesTotals {
                count: r.get(0)?,
                gross_cents: r.get(1)?,
                fee_cents: r.get(2)?,
                held_cents: r.get(3)?,
                released_cents: r.get(4)?,
            })
        })?)
}

/// One order as the seller's dashboard shows it.
#[derive(Clone, Debug)]
pub struct OrderRow {
    pub purchase_id: String,
    pub listing_id: String,
    pub status: String,
    pub amount_cents: i64,
    pub seller_net_cents: i64,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub delivered_at: Option<String>,
    pub shipped_at: Option<String>,
    pub physical: bool,
}

/// The seller's latest orders, newest first.
///
/// # Errors
/// Database failure.
pub fn recent_orders(conn: &Connection, seller_id: &str, limit: i64) -> Result<Vec<OrderRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT p.id, p.listing_id, p.status, p.amount_cents, p.seller_net_cents, p.created_at, p.paid_at,
            p.delivered_at, p.shipped_at, l.physical
         FROM purchases p JOIN listings l ON l.id = p.listing_id
         WHERE p.seller_id = ?1 ORDER BY p.seq DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![seller_id, limit], |r| {
        Ok(OrderRow {
            purchase_id: r.get(0)?,
            listing_id: r.get(1)?,
            status: r.get(2)?,
            amount_cents: r.get(3)?,
            seller_net_cents: r.get(4)?,
            created_at: r.get(5)?,
            paid_at: r.get(6)?,
            delivered_at: r.get(7)?,
            shipped_at: r.get(8)?,
            physical: r.get(9)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Escrow across all sellers: rows held, the seller net they hold, and how many of them have
/// reached their release time (waiting for the worker, or for a payout that keeps failing).
#[derive(Clone, Debug, Default)]
pub struct EscrowTotals {
    pub held_rows: i64,
    pub held_net_cents: i64,
    pub due_rows: i64,
}

/// [`EscrowTotals`] at `now`.
///
/// # Errors
/// Database failure.
pub fn escrow_totals(conn: &Connection, now: &str) -> Result<EscrowTotals> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*), coalesce(sum(p.seller_net_cents), 0),
                coalesce(sum(l.release_at IS NOT NULL AND l.release_at <= ?1), 0)
             FROM ledger l JOIN purchases p ON p.id = l.purchase_id WHERE l.status = 'held'",
        )?
        .query_row([now], |r| {
            Ok(EscrowTotals {
                held_rows: r.get(0)?,
                held_net_cents: r.get(1)?,
                due_rows: r.get(2)?,
            })
        })?)
}

/// Checkouts open at `now` (reservations held for a payment).
///
/// # Errors
/// Database failure.
pub fn open_checkouts(conn: &Connection, now: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM purchases WHERE status = 'pending_payment' AND expires_at > ?1",
        )?
        .query_row([now], |r| r.get(0))?)
}

/// A held sale whose payout to the seller has failed at least once.
#[derive(Clone, Debug)]
pub struct FailingPayout {
    pub purchase_id: String,
    pub seller_handle: String,
    pub seller_net_cents: i64,
    pub attempts: i64,
    pub error: String,
    pub retry_at: Option<String>,
}

/// Held rows whose last payout attempt failed, oldest release first.
///
/// # Errors
/// Database failure.
pub fn failing_payouts(conn: &Connection, limit: i64) -> Result<Vec<FailingPayout>> {
    let mut stmt = conn.prepare_cached(
        "SELECT l.purchase_id, a.handle, p.seller_net_cents, l.payout_attempts, l.payout_error, l.payout_retry_at
         FROM ledger l JOIN purchases p ON p.id = l.purchase_id JOIN agents a ON a.id = p.seller_id
         WHERE l.status = 'held' AND l.payout_error IS NOT NULL
         ORDER BY l.release_at LIMIT ?1",
    )?;
    let rows = stmt.query_map([limit], |r| {
        Ok(FailingPayout {
            purchase_id: r.get(0)?,
            seller_handle: r.get(1)?,
            seller_net_cents: r.get(2)?,
            attempts: r.get(3)?,
            error: r.get(4)?,
            retry_at: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Refunds not yet confirmed by the rail, oldest first, and how many were made in all.
///
/// # Errors
/// Database failure.
pub fn pending_refunds(conn: &Connection, limit: i64) -> Result<(Vec<Refund>, i64)> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {REFUND_COLUMNS} FROM refunds WHERE status = 'pending' ORDER BY created_at LIMIT ?1"
    ))?;
    let pending = stmt
        .query_map([limit], refund_row)?
        .collect::<rusqlite::Result<_>>()?;
    let refunded = conn
        .prepare_cached("SELECT count(*) FROM refunds WHERE status = 'refunded'")?
        .query_row([], |r| r.get(0))?;
    Ok((pending, refunded))
}

/// What x402 (wallet) sales released to one seller add up to. The USDC went to the operator's
/// `--x402-pay-to` wallet, so the operator pays these sellers.
#[derive(Clone, Debug)]
pub struct WalletReleased {
    pub seller_handle: String,
    pub sales: i64,
    pub seller_net_cents: i64,
}

/// Released sales of the ledger rail `wallet_rail` per seller, largest net first.
///
/// # Errors
/// Database failure.
pub fn wallet_released(
    conn: &Connection,
    limit: i64,
    wallet_rail: &str,
) -> Result<Vec<WalletReleased>> {
    let mut stmt = conn.prepare_cached(
        "SELECT a.handle, count(*), sum(p.seller_net_cents)
         FROM ledger l JOIN purchases p ON p.id = l.purchase_id JOIN agents a ON a.id = p.seller_id
         WHERE l.rail = ?2 AND l.status = 'released' AND p.seller_net_cents > 0
         GROUP BY p.seller_id ORDER BY sum(p.seller_net_cents) DESC, a.handle LIMIT ?1",
    )?;
    let rows = stmt.query_map(params![limit, wallet_rail], |r| {
        Ok(WalletReleased {
            seller_handle: r.get(0)?,
            sales: r.get(1)?,
            seller_net_cents: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Fixtures for unit tests of the money movements (the SQL stays in the store).
#[cfg(test)]
pub(crate) mod fixtures {
    use rusqlite::{Connection, params};

    use super::Movement;

    /// An in-memory database with the schema, one held card row (`L1`, purchase `P1`, due since
    /// February 2026) and one pending refund (`pi_1`, due at `now`).
    pub(crate) fn database(now: &str) -> Connection {
        let conn = crate::store::test_db();
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO purchases (id, listing_id, seller_id, status, amount_cents,
                 platform_fee_cents, seller_net_cents, fee_bps, schedule_version, rail, created_at,
                 receipt, payment_ref)
             VALUES ('P1', 'LI', 'A1', 'delivered', 1000, 50, 950, 500, 1, 'card',
                 '2026-01-01T00:00:00Z', '{}', 'pi_0');
             INSERT INTO ledger (id, purchase_id, seller_code, vertical_slug, amount_cents,
                 platform_fee_cents, rail, status, is_reference_listing, created_at, release_at)
             VALUES ('L1', 'P1', 'S-1', 'v', 1000, 50, 'card', 'held', 0, '2026-01-01T00:00:00Z',
                 '2026-02-01T00:00:00Z');",
        )
        .unwrap();
        assert!(super::queue_refund(&conn, "pi_1", "P2", 700, now, now).unwrap());
        conn
    }

    /// A movement row's state.
    #[derive(Debug, PartialEq, Eq)]
    pub(crate) struct State {
        pub status: String,
        pub attempts: i64,
        pub retry_at: Option<String>,
        pub error: Option<String>,
        pub reference: Option<String>,
        pub done_at: Option<String>,
    }

    /// The state of the movement row `id`.
    pub(crate) fn state(conn: &Connection, movement: Movement, id: &str) -> State {
        let t = movement.state();
        let sql = format!(
            "SELECT status, {}, {}, {}, {}, {} FROM {} WHERE {} = ?1",
            t.attempts, t.retry_at, t.error, t.reference, t.done_at, t.table, t.key
        );
        conn.query_row(&sql, params![id], |r| {
            Ok(State {
                status: r.get(0)?,
                attempts: r.get(1)?,
                retry_at: r.get(2)?,
                error: r.get(3)?,
                reference: r.get(4)?,
                done_at: r.get(5)?,
            })
        })
        .unwrap()
    }
}
