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

use crate::error::Result;
use crate::store::proof as proof_store;

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
