//! The public demand ledger (`GET /api/proof/demand`) and the operator's party classification
//! (`PUT /api/operator/parties/{handle}`).
//!
//! # What a row is
//! One ledger row per settled sale (written by `service::commerce::settlement`: free sales
//! at purchase, paid ones at payment). A row shows its id, the seller's public code, an
//! anonymous buyer label, the vertical, amount and platform fee (integer cents), the rail, the
//! escrow status, whether it is a reference-listing (house sample) sale, its party and its
//! creation time. Rows are listed newest first and paged with `limit` (default 100, max 500)
//! and `offset`; `total` counts every row.
//!
//! # Rows and parties
//! A row's party and its anonymous buyer label are derived when the ledger is read
//! (`service::ledger`, which says how); the operator sets the classes a party comes from.
//! `arms_length` is never a stored class and cannot be set: it is not something the operator
//! may assert about an agent, and a PUT with it is refused (400).
//!
//! # Figures
//! - Reference rows (`isReferenceListing`): sales of the house's reference samples; disclosed
//!   (`totals.referenceListingRows`, the row list, the `*AllRows` breakdowns, escrow) but never
//!   counted as sales.
//! - `totals.settledSales`: every non-reference row, whatever its party and escrow status. It
//!   is by construction the `totalSales` of `/api/stats` (same definition).
//! - Affiliated rail: non-reference rows whose party is `affiliated`. Disclosed in
//!   `affiliatedRail` and kept out of every other `totals` figure.
//! - `totals.settledRows`: non-reference, non-affiliated rows; `paidRows` (amount > 0) +
//!   `zeroAmountRows` (amount = 0) = `settledRows`; `grossCents`, `platformFeeCents`,
//!   `distinctBuyers`, `distinctSellers` are over the same rows. Hence
//!   `settledSales = settledRows + affiliatedRail.count`.
//! - `byRail` / `byParty`: over the `settledSales` rows (non-reference, affiliated included so
//!   the breakdown adds up to `settledSales`); `byRailAllRows` / `byPartyAllRows`: over every
//!   row. Every rail and party key is always present.
//! - `escrow`: over every row, in three disjoint buckets: `held` (status held, no release time
//!   yet: waiting for the first delivery, and the shipment for physical orders), `releasing`
//!   (status held with `release_at` set: the escrow clock is running), `released`. Cents are
//!   gross amounts.
//! - `window`: createdAt of the oldest and newest row (null when the ledger is empty).
//! - `armsLengthCents`: gross cents of `settledRows` rows whose party is `unclassified`, but
//!   only once classification is configured (at least one agent classified into a class other
//!   than `unclassified`); before that it is 0, because nothing has been checked.
//! - `externallySigned`: false — the response is signed by this instance's key only.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::request::disclosure::DemandPage;
use crate::service::App;
use crate::service::ledger::{self, Row};
use crate::service::rail::Rail;
use crate::store::agents as agent_store;
use crate::store::proof as proof_store;

/// The classes the operator may set.
pub const PARTIES: [&str; 5] = [
    "unclassified",
    "internal",
    "house_buyer",
    "house_seller",
    "affiliated",
];

/// The rails a ledger row can carry.
pub const RAILS: [&str; 3] = crate::service::rail::Rail::LEDGER_NAMES;

/// One ledger row as the ledger shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerRow {
    pub id: String,
    pub seller: String,
    pub buyer: String,
    pub vertical_name: Option<String>,
    pub vertical_slug: String,
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub rail: String,
    pub status: String,
    pub is_reference_listing: bool,
    pub party: String,
    pub created_at: String,
}

fn ledger_row(app: &App, row: &Row) -> LedgerRow {
    LedgerRow {
        id: row.id.clone(),
        seller: row.seller_code.clone(),
        buyer: row.buyer_label.clone(),
        vertical_name: app
            .taxonomy
            .vertical(&row.vertical_slug)
            .map(|v| v.name.clone()),
        vertical_slug: row.vertical_slug.clone(),
        amount_cents: row.amount_cents,
        platform_fee_cents: row.platform_fee_cents,
        rail: row.rail.clone(),
        status: row.status.clone(),
        is_reference_listing: row.is_reference,
        party: row.party.clone(),
        created_at: row.created_at.clone(),
    }
}

/// The rows, gross and fees of one rail or party.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    pub rows: i64,
    pub gross_cents: i64,
    pub platform_fee_cents: i64,
}

/// A [`Bucket`] per key, every key present, in key order.
fn breakdown<'a>(
    keys: &[&str],
    rows: impl Iterator<Item = &'a Row>,
    key: impl Fn(&Row) -> &str,
) -> BTreeMap<String, Bucket> {
    let mut out: BTreeMap<String, Bucket> = keys
        .iter()
        .map(|k| ((*k).to_owned(), Bucket::default()))
        .collect();
    for row in rows {
        let entry = out.entry(key(row).to_owned()).or_default();
        entry.rows += 1;
        entry.gross_cents += row.amount_cents;
        entry.platform_fee_cents += row.platform_fee_cents;
    }
    out
}

/// Definitions of published figures, by the figure's name, in this order.
#[derive(Clone, Copy, Debug)]
pub struct Definitions(pub &'static [(&'static str, &'static str)]);

impl Serialize for Definitions {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().copied())
    }
}

const METRIC_DEFINITIONS: Definitions = Definitions(&[
    (
        "row.party",
        "The seller's operator classification if classified, else the buyer's, else `unclassified`; derived when the ledger is read, so classifications apply to past rows.",
    ),
    (
        "row.buyer",
        "An anonymous label `buyer #N`, N numbering distinct buyers by their first ledger row; never a handle or id.",
    ),
    (
        "row.status",
        "`held` (in escrow) or `released` (paid out to the seller; free sales are released at once).",
    ),
    (
        "totals.settledSales",
        "Every ledger row outside reference listings, whatever its party or escrow status. Identical by definition to `totalSales` of /api/stats.",
    ),
    (
        "totals.settledRows",
        "Rows counted in the totals: non-reference rows whose party is not `affiliated`. settledSales = settledRows + affiliatedRail.count.",
    ),
    (
        "totals.referenceListingRows",
        "Sales of the house's reference samples: disclosed, never counted as sales.",
    ),
    ("totals.paidRows", "settledRows with amountCents > 0."),
    (
        "totals.zeroAmountRows",
        "settledRows with amountCents = 0 (free listings). paidRows + zeroAmountRows = settledRows.",
    ),
    ("totals.grossCents", "Sum of amountCents over settledRows."),
    (
        "totals.platformFeeCents",
        "Sum of platformFeeCents over settledRows.",
    ),
    ("totals.distinctBuyers", "Distinct buyers over settledRows."),
    (
        "totals.distinctSellers",
        "Distinct sellers over settledRows.",
    ),
    (
        "byRail",
        "Per rail (checkout, card, wallet) {rows, grossCents, platformFeeCents} over the settledSales rows (affiliated included, reference excluded).",
    ),
    (
        "byParty",
        "Per party {rows, grossCents, platformFeeCents} over the settledSales rows.",
    ),
    (
        "byRailAllRows",
        "As byRail over every ledger row, reference rows included.",
    ),
    (
        "byPartyAllRows",
        "As byParty over every ledger row, reference rows included.",
    ),
    (
        "escrow.held",
        "Rows with status held and no release time: waiting for the first delivery (and the shipment, for physical orders). Gross cents.",
    ),
    (
        "escrow.releasing",
        "Rows with status held whose escrow clock is running (release time set). Gross cents.",
    ),
    (
        "escrow.released",
        "Rows with status released. heldRows + releasingRows + releasedRows = every row.",
    ),
    (
        "affiliatedRail",
        "Non-reference rows whose party is `affiliated`: disclosed here, excluded from every totals figure except settledSales.",
    ),
    (
        "armsLengthCents",
        "grossCents of settledRows whose party is `unclassified`, once classification is configured (some agent classified); 0 before.",
    ),
    (
        "window",
        "createdAt of the oldest and newest ledger row (null when empty).",
    ),
    (
        "total",
        "Every ledger row; `rows` is the page [offset, offset + limit) newest first.",
    ),
]);

/// What the ledger cannot show, naming the rails this instance really runs.
fn limitations(app: &App) -> Vec<String> {
    let mut rails = match app.card_rail() {
        Rail::Card => vec![
            "Card payments run on Stripe: a paid row is recorded when Stripe's signed webhook confirms the payment; refunds and disputes handled in Stripe's dashboard do not appear here.",
        ],
        _ => vec![
            "The card rail is the local sandbox (--payments sandbox): amounts are recorded, no money moves.",
        ],
    };
    if app.x402.is_some() {
        rails.push(
            "x402 (wallet) sales are recorded when the facilitator reports the USDC settled; the money goes to the operator's wallet, and paying the seller is the operator's.",
        );
    }
    [
        "Signed by this instance's own key only; no third party attests these figures (externallySigned is false).",
        "Parties come from the operator's own classification; an agent the operator has not classified counts as unclassified, which is not evidence of independence.",
        "Classification is applied at read time to all rows; the history of classification changes is not kept.",
    ]
    .into_iter()
    .chain(rails)
    .chain([
        "Held and releasing amounts may still be refunded or disputed outside this ledger; released means the escrow clock ran, not that a bank transfer was confirmed.",
        "Buyer labels are per-instance and anonymous; they cannot be linked to agents and say nothing about who stands behind an agent (one person may run several).",
    ])
    .map(str::to_owned)
    .collect()
}

/// `GET /api/proof/demand`.
///
/// # Errors
/// Database failure.
pub async fn demand(app: &App, page: DemandPage) -> Result<Demand> {
    let DemandPage { limit, offset } = page;
    let (rows, configured) = app.store.read(ledger::load).await?;

    let sales: Vec<&Row> = rows.iter().filter(|r| !r.is_reference).collect();
    let (affiliated, counted): (Vec<&Row>, Vec<&Row>) =
        sales.iter().partition(|r| r.party == "affiliated");
    let reference_rows = rows.len() - sales.len();
    let paid = counted.iter().filter(|r| r.amount_cents > 0).count();
    let gross: i64 = counted.iter().map(|r| r.amount_cents).sum();
    let fees: i64 = counted.iter().map(|r| r.platform_fee_cents).sum();
    let buyers: HashSet<&str> = counted
        .iter()
        .filter_map(|r| r.buyer_id.as_deref())
        .collect();
    let sellers: HashSet<&str> = counted.iter().map(|r| r.seller_id.as_str()).collect();

    let bucket = |pick: &dyn Fn(&Row) -> bool| -> (usize, i64) {
        let chosen: Vec<&Row> = rows.iter().filter(|r| pick(r)).collect();
        (chosen.len(), chosen.iter().map(|r| r.amount_cents).sum())
    };
    let (held_rows, held_cents) = bucket(&|r| r.status == "held" && r.release_at.is_none());
    let (releasing_rows, releasing_cents) =
        bucket(&|r| r.status == "held" && r.release_at.is_some());
    let (released_rows, released_cents) = bucket(&|r| r.status == "released");

    let mut by_merchant: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for row in &affiliated {
        let entry = by_merchant.entry(&row.seller_code).or_default();
        entry.0 += 1;
        entry.1 += row.amount_cents;
    }
    let affiliated_gross: i64 = affiliated.iter().map(|r| r.amount_cents).sum();
    let merchants: Vec<&str> = by_merchant.keys().copied().collect();
    let arms_length_cents = ledger::arms_length_cents(&rows, configured);

    let page = rows
        .iter()
        .rev()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(0))
        .map(|r| ledger_row(app, r))
        .collect();

    let reconciliation = format!(
        "{all} ledger rows = {reference} reference-listing rows (disclosed, not sales) + {sales} settled sales. \
         settledSales {sales} = settledRows {counted} + affiliated-rail rows {aff}; settledRows {counted} = paidRows {paid} + zeroAmountRows {zero}. \
         settledSales equals totalSales of /api/stats. Escrow: held {held} + releasing {releasing} + released {released} = {all} rows.",
        all = rows.len(),
        reference = reference_rows,
        sales = sales.len(),
        counted = counted.len(),
        aff = affiliated.len(),
        paid = paid,
        zero = counted.len() - paid,
        held = held_rows,
        releasing = releasing_rows,
        released = released_rows,
    );

    Ok(Demand {
        externally_signed: false,
        generated_at: app.now(),
        window: Window {
            first: rows.first().map(|r| r.created_at.clone()),
            last: rows.last().map(|r| r.created_at.clone()),
        },
        totals: Totals {
            settled_rows: counted.len(),
            settled_sales: sales.len(),
            reference_listing_rows: reference_rows,
            paid_rows: paid,
            zero_amount_rows: counted.len() - paid,
            gross_cents: gross,
            platform_fee_cents: fees,
            distinct_buyers: buyers.len(),
            distinct_sellers: sellers.len(),
        },
        reconciliation,
        by_rail: breakdown(&RAILS, sales.iter().copied(), |r| &r.rail),
        by_party: breakdown(&PARTIES, sales.iter().copied(), |r| &r.party),
        by_rail_all_rows: breakdown(&RAILS, rows.iter(), |r| &r.rail),
        by_party_all_rows: breakdown(&PARTIES, rows.iter(), |r| &r.party),
        breakdown_basis: "byRail and byParty cover the settledSales rows (reference-listing rows excluded, affiliated rows included so each adds up to settledSales); byRailAllRows and byPartyAllRows cover every ledger row. Each bucket is {rows, grossCents, platformFeeCents}.",
        escrow: Escrow {
            held_rows,
            held_cents,
            releasing_rows,
            releasing_cents,
            released_rows,
            released_cents,
            note: "Disjoint buckets over every row, in gross cents. held: paid, waiting for the first delivery (and the shipment, for physical orders) before the escrow clock starts; releasing: the escrow clock is running; released: paid out to the seller (free sales are released at once).",
        },
        affiliated_rail: AffiliatedRail {
            party: "affiliated",
            disclosure: "Sales where the seller (or, for an unclassified seller, the buyer) is classified by the operator as affiliated with the platform.",
            merchants: merchants.into_iter().map(str::to_owned).collect(),
            count: affiliated.len(),
            gross_cents: affiliated_gross,
            distinct_merchants: by_merchant.len(),
            by_merchant: by_merchant
                .iter()
                .map(|(seller, (rows, gross_cents))| MerchantRows {
                    seller: (*seller).to_owned(),
                    rows: *rows,
                    gross_cents: *gross_cents,
                })
                .collect(),
            counts_toward_p0: false,
            counts_toward_arms_length: false,
            included_in_totals_above: false,
            note: "Counted in settledSales (the canonical totalSales) but in no other totals figure; P0 means the headline totals (settledRows, grossCents).",
            ledger: affiliated.iter().map(|r| ledger_row(app, r)).collect(),
        },
        arms_length_cents,
        arms_length_classification: ArmsLengthClassification {
            configured,
            note: if configured {
                "armsLengthCents is the gross of settledRows where neither party is classified by the operator. It is a residue, not a verification: arms_length cannot be assigned to an agent."
            } else {
                "No agent has been classified yet, so no sale is claimed to be at arm's length (armsLengthCents is 0)."
            },
        },
        metric_definitions: METRIC_DEFINITIONS,
        limitations: limitations(app),
        verify: app.url("/api/verify-receipt"),
        limit,
        offset,
        total: rows.len(),
        rows: page,
    })
}

/// `GET /api/proof/demand`: the ledger's figures, its definitions and limits, and a page of
/// rows (see the module's documentation).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Demand {
    pub externally_signed: bool,
    pub generated_at: String,
    pub window: Window,
    pub totals: Totals,
    pub reconciliation: String,
    pub by_rail: BTreeMap<String, Bucket>,
    pub by_party: BTreeMap<String, Bucket>,
    pub by_rail_all_rows: BTreeMap<String, Bucket>,
    pub by_party_all_rows: BTreeMap<String, Bucket>,
    pub breakdown_basis: &'static str,
    pub escrow: Escrow,
    pub affiliated_rail: AffiliatedRail,
    pub arms_length_cents: i64,
    pub arms_length_classification: ArmsLengthClassification,
    #[serde(rename = "metric_definitions")]
    pub metric_definitions: Definitions,
    pub limitations: Vec<String>,
    pub verify: String,
    pub limit: i64,
    pub offset: i64,
    pub total: usize,
    pub rows: Vec<LedgerRow>,
}

/// `createdAt` of the oldest and newest row (`null` when the ledger is empty).
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    pub first: Option<String>,
    pub last: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub settled_rows: usize,
    pub settled_sales: usize,
    pub reference_listing_rows: usize,
    pub paid_rows: usize,
    pub zero_amount_rows: usize,
    pub gross_cents: i64,
    pub platform_fee_cents: i64,
    pub distinct_buyers: usize,
    pub distinct_sellers: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Escrow {
    pub held_rows: usize,
    pub held_cents: i64,
    pub releasing_rows: usize,
    pub releasing_cents: i64,
    pub released_rows: usize,
    pub released_cents: i64,
    pub note: &'static str,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AffiliatedRail {
    pub party: &'static str,
    pub disclosure: &'static str,
    pub merchants: Vec<String>,
    pub count: usize,
    pub gross_cents: i64,
    pub distinct_merchants: usize,
    pub by_merchant: Vec<MerchantRows>,
    #[serde(rename = "countsTowardP0")]
    pub counts_toward_p0: bool,
    pub counts_toward_arms_length: bool,
    pub included_in_totals_above: bool,
    pub note: &'static str,
    pub ledger: Vec<LedgerRow>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MerchantRows {
    pub seller: String,
    pub rows: i64,
    pub gross_cents: i64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ArmsLengthClassification {
    pub configured: bool,
    pub note: &'static str,
}

/// `PUT /api/operator/parties/{handle}`: the agent's new class and the one it had.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Classified {
    pub handle: String,
    pub party: String,
    pub previous: String,
    pub classified_at: String,
}

/// `PUT /api/operator/parties/{handle}` {party} (operator): classifies an agent.
///
/// # Errors
/// `INVALID_ARGUMENT` for `arms_length`, an unknown class or a bad body; `NOT_FOUND` for an
/// unknown handle; database failure.
pub async fn classify(app: &App, handle: &str, party: String) -> Result<Classified> {
    if party == "arms_length" {
        return Err(Error::invalid(
            "`arms_length` cannot be set: it is what remains when neither party of a sale is classified, never an operator's assertion",
        ));
    }
    if !PARTIES.contains(&party.as_str()) {
        return Err(Error::invalid(format!(
            "`party` must be one of {}",
            PARTIES.join(", ")
        )));
    }
    let (handle, now) = (handle.to_owned(), app.now());
    app.store
        .write(move |tx| {
            let agent = agent_store::find_by_handle(tx, &handle)?
                .ok_or_else(|| Error::NotFound(format!("no agent with handle `{handle}`")))?;
            let previous = proof_store::party_of(tx, &agent.id)?;
            proof_store::set_party(tx, &agent.id, &party, &now)?;
            Ok(Classified {
                handle: agent.handle,
                party,
                previous: previous.unwrap_or_else(|| "unclassified".into()),
                classified_at: now,
            })
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_keep_their_order_and_breakdowns_every_key() {
        let text = serde_json::to_string(&METRIC_DEFINITIONS).unwrap();
        assert!(text.starts_with(r#"{"row.party":"#), "{text}");
        assert!(text.find("\"window\"").unwrap() < text.find("\"total\"").unwrap());
        let empty = breakdown(&RAILS, std::iter::empty(), |r| &r.rail);
        assert_eq!(empty.len(), RAILS.len());
        assert!(empty.values().all(|bucket| *bucket == Bucket::default()));
    }
}
