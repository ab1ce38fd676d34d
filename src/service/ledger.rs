//! The sales ledger as read: one row per settled sale with its derived party and anonymous buyer
//! label, and the one figure both the demand ledger (`disclosure::proof`) and the marketplace
//! stats (`catalog::stats`) report, [`arms_length_cents`]. It sits below both, so neither
//! domain imports the other for it.
//!
//! # Buyer labels
//! The buyer is never shown by handle or id: a row says `buyer #N`, where N numbers distinct
//! buyers in the order of their first ledger row (stable, since the ledger only grows). The
//! same label on two rows means the same buyer; nothing more is revealed.
//!
//! # Parties (derived at read time)
//! The operator classifies agents into `unclassified`, `internal`, `house_buyer`,
//! `house_seller` or `affiliated` (table `parties`; no row = `unclassified`). A row's party is
//! the seller's class when the seller is classified, else the buyer's class when the buyer is
//! classified, else `unclassified`. It is derived when the ledger is read, so a
//! classification applies to past rows too. Neither the party nor the buyer label is stored:
//! both are derived from the purchase when the ledger is read.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::crypto::keys::Keyring;
use crate::crypto::receipt::sign_object;
use crate::error::Result;
use crate::store::proof as proof_store;
use crate::store::tlog;

/// The transparency log's entry type of a demand-ledger event.
pub const LOG_KIND: &str = "bourse.ledger.event";

/// A demand-ledger event as logged: `sale` (a settled sale's ledger row), `release` (escrow
/// released to the seller) or `refund` (a payment given back).
pub struct Event<'a> {
    pub event: &'static str,
    /// The ledger row's id, or a refund's payment reference.
    pub row: &'a str,
    pub purchase_id: &'a str,
    pub amount_cents: Option<i64>,
    pub at: &'a str,
}

/// The transparency log's name of a ledger event.
pub fn log_ref(event: &str, row: &str) -> String {
    format!("ledger:{row}:{event}")
}

/// Signs a ledger event (rows have no signed form of their own) and appends it to the
/// transparency log, in the caller's (the writer's) transaction; nothing when it is logged
/// already. Returns its index.
///
/// # Errors
/// Database failure.
pub fn log_event(tx: &Connection, keyring: &Keyring, e: &Event<'_>) -> Result<u64> {
    let reference = log_ref(e.event, e.row);
    if let Some(index) = tlog::index_of(tx, &reference)? {
        return Ok(index);
    }
    let mut signed = serde_json::Map::new();
    signed.insert("type".into(), LOG_KIND.into());
    signed.insert("event".into(), e.event.into());
    signed.insert("row".into(), e.row.into());
    signed.insert("purchaseId".into(), e.purchase_id.into());
    if let Some(amount) = e.amount_cents {
        signed.insert("amountCents".into(), amount.into());
    }
    signed.insert("at".into(), e.at.into());
    sign_object(keyring, &mut signed, e.at);
    tlog::append_value(tx, &reference, LOG_KIND, &serde_json::Value::Object(signed))
}

/// One ledger row as read, with its derived party and buyer label.
#[derive(Clone)]
pub struct Row {
    pub id: String,
    pub seller_code: String,
    pub seller_id: String,
    pub buyer_id: Option<String>,
    pub buyer_label: String,
    pub vertical_slug: String,
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub rail: String,
    pub status: String,
    pub is_reference: bool,
    pub party: String,
    pub created_at: String,
    pub release_at: Option<String>,
}

/// The party of a row: the seller's class if classified, else the buyer's, else unclassified.
fn derive_party(seller: Option<&str>, buyer: Option<&str>) -> String {
    let classified = |p: Option<&str>| p.filter(|p| *p != "unclassified").map(str::to_owned);
    classified(seller)
        .or_else(|| classified(buyer))
        .unwrap_or_else(|| "unclassified".into())
}

/// Every ledger row, oldest first, with its party and buyer label, and whether any agent is
/// classified.
///
/// # Errors
/// Database failure.
pub fn load(conn: &Connection) -> Result<(Vec<Row>, bool)> {
    let mut labels: HashMap<String, usize> = HashMap::new();
    let rows = proof_store::ledger(conn)?
        .into_iter()
        .map(|entry| {
            let buyer_label = match &entry.buyer_id {
                Some(id) => {
                    let next = labels.len() + 1;
                    format!("buyer #{}", labels.entry(id.clone()).or_insert(next))
                }
                None => "anonymous".to_owned(),
            };
            Row {
                party: derive_party(entry.seller_party.as_deref(), entry.buyer_party.as_deref()),
                id: entry.id,
                seller_code: entry.seller_code,
                seller_id: entry.seller_id,
                buyer_id: entry.buyer_id,
                buyer_label,
                vertical_slug: entry.vertical_slug,
                amount_cents: entry.amount_cents,
                platform_fee_cents: entry.platform_fee_cents,
                rail: entry.rail,
                status: entry.status,
                is_reference: entry.is_reference,
                created_at: entry.created_at,
                release_at: entry.release_at,
            }
        })
        .collect();
    Ok((rows, proof_store::any_classified(conn)?))
}

/// `armsLengthCents`: the gross cents of the settled rows (non-reference, not `affiliated`)
/// whose party is `unclassified`, but only once classification is `configured` (some agent is
/// classified); before that it is 0, because nothing has been checked.
pub fn arms_length_cents(rows: &[Row], configured: bool) -> i64 {
    if !configured {
        return 0;
    }
    // An `unclassified` row is by definition not `affiliated`.
    rows.iter()
        .filter(|r| !r.is_reference && r.party == "unclassified")
        .map(|r| r.amount_cents)
        .sum()
}
