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

use serde_json::{Map, Value, json};

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

fn row_json(app: &App, row: &Row) -> Value {
    json!({
        "id": row.id,
        "seller": row.seller_code,
        "buyer": row.buyer_label,
        "verticalName": app.taxonomy.vertical(&row.vertical_slug).map(|v| v.name.clone()),
        "verticalSlug": row.vertical_slug,
        "amountCents": row.amount_cents,
        "platformFeeCents": row.platform_fee_cents,
        "rail": row.rail,
        "status": row.status,
        "isReferenceListing": row.is_reference,
        "party": row.party,
        "createdAt": row.created_at,
    })
}

/// `{rows, grossCents, platformFeeCents}` per key, every key present.
fn breakdown<'a>(
    keys: &[&str],
    rows: impl Iterator<Item = &'a Row>,
    key: impl Fn(&Row) -> &str,
) -> Value {
    let mut out: BTreeMap<String, (i64, i64, i64)> =
        keys.iter().map(|k| ((*k).to_owned(), (0, 0, 0))).collect();
    for row in rows {
        let entry = out.entry(key(row).to_owned()).or_default();
        entry.0 += 1;
        entry.1 += row.amount_cents;
        entry.2 += row.platform_fee_cents;
    }
    Value::Object(
        out.into_iter()
            .map(|(k, (n, gross, fee))| {
                (
                    k,
                    json!({"rows": n, "grossCents": gross, "platformFeeCents": fee}),
                )
            })
            .collect::<Map<String, Value>>(),
    )
}

fn metric_definitions() -> Value {
    json!({
        "row.party": "The seller's operator classification if classified, else the buyer's, else `unclassified`; derived when the ledger is read, so classifications apply to past rows.",
        "row.buyer": "An anonymous label `buyer #N`, N numbering distinct buyers by their first ledger row; never a handle or id.",
        "row.status": "`held` (in escrow) or `released` (paid out to the seller; free sales are released at once).",
        "totals.settledSales": "Every ledger row outside reference listings, whatever its party or escrow status. Identical by definition to `totalSales` of /api/stats.",
        "totals.settledRows": "Rows counted in the totals: non-reference rows whose party is not `affiliated`. settledSales = settledRows + affiliatedRail.count.",
        "totals.referenceListingRows": "Sales of the house's reference samples: disclosed, never counted as sales.",
        "totals.paidRows": "settledRows with amountCents > 0.",
        "totals.zeroAmountRows": "settledRows with amountCents = 0 (free listings). paidRows + zeroAmountRows = settledRows.",
        "totals.grossCents": "Sum of amountCents over settledRows.",
        "totals.platformFeeCents": "Sum of platformFeeCents over settledRows.",
        "totals.distinctBuyers": "Distinct buyers over settledRows.",
        "totals.distinctSellers": "Distinct sellers over settledRows.",
        "byRail": "Per rail (checkout, card, wallet) {rows, grossCents, platformFeeCents} over the settledSales rows (affiliated included, reference excluded).",
        "byParty": "Per party {rows, grossCents, platformFeeCents} over the settledSales rows.",
        "byRailAllRows": "As byRail over every ledger row, reference rows included.",
        "byPartyAllRows": "As byParty over every ledger row, reference rows included.",
        "escrow.held": "Rows with status held and no release time: waiting for the first delivery (and the shipment, for physical orders). Gross cents.",
        "escrow.releasing": "Rows with status held whose escrow clock is running (release time set). Gross cents.",
        "escrow.released": "Rows with status released. heldRows + releasingRows + releasedRows = every row.",
        "affiliatedRail": "Non-reference rows whose party is `affiliated`: disclosed here, excluded from every totals figure except settledSales.",
        "armsLengthCents": "grossCents of settledRows whose party is `unclassified`, once classification is configured (some agent classified); 0 before.",
        "window": "createdAt of the oldest and newest ledger row (null when empty).",
        "total": "Every ledger row; `rows` is the page [offset, offset + limit) newest first.",
    })
}

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
pub async fn demand(app: &App, page: DemandPage) -> Result<Value> {
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

    let page: Vec<Value> = rows
        .iter()
        .rev()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(0))
        .map(|r| row_json(app, r))
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

    Ok(json!({
        "externallySigned": false,
        "generatedAt": app.now(),
        "window": {
            "first": rows.first().map(|r| r.created_at.clone()),
            "last": rows.last().map(|r| r.created_at.clone()),
        },
        "totals": {
            "settledRows": counted.len(),
            "settledSales": sales.len(),
            "referenceListingRows": reference_rows,
            "paidRows": paid,
            "zeroAmountRows": counted.len() - paid,
            "grossCents": gross,
            "platformFeeCents": fees,
            "distinctBuyers": buyers.len(),
            "distinctSellers": sellers.len(),
        },
        "reconciliation": reconciliation,
        "byRail": breakdown(&RAILS, sales.iter().copied(), |r| &r.rail),
        "byParty": breakdown(&PARTIES, sales.iter().copied(), |r| &r.party),
        "byRailAllRows": breakdown(&RAILS, rows.iter(), |r| &r.rail),
        "byPartyAllRows": breakdown(&PARTIES, rows.iter(), |r| &r.party),
        "breakdownBasis": "byRail and byParty cover the settledSales rows (reference-listing rows excluded, affiliated rows included so each adds up to settledSales); byRailAllRows and byPartyAllRows cover every ledger row. Each bucket is {rows, grossCents, platformFeeCents}.",
        "escrow": {
            "heldRows": held_rows,
            "heldCents": held_cents,
            "releasingRows": releasing_rows,
            "releasingCents": releasing_cents,
            "releasedRows": released_rows,
            "releasedCents": released_cents,
            "note": "Disjoint buckets over every row, in gross cents. held: paid, waiting for the first delivery (and the shipment, for physical orders) before the escrow clock starts; releasing: the escrow clock is running; released: paid out to the seller (free sales are released at once).",
        },
        "affiliatedRail": {
            "party": "affiliated",
            "disclosure": "Sales where the seller (or, for an unclassified seller, the buyer) is classified by the operator as affiliated with the platform.",
            "merchants": merchants,
            "count": affiliated.len(),
            "grossCents": affiliated_gross,
            "distinctMerchants": by_merchant.len(),
            "byMerchant": by_merchant.iter().map(|(seller, (n, cents))| json!({"seller": seller, "rows": n, "grossCents": cents})).collect::<Vec<_>>(),
            "countsTowardP0": false,
            "countsTowardArmsLength": false,
            "includedInTotalsAbove": false,
            "note": "Counted in settledSales (the canonical totalSales) but in no other totals figure; P0 means the headline totals (settledRows, grossCents).",
            "ledger": affiliated.iter().map(|r| row_json(app, r)).collect::<Vec<_>>(),
        },
        "armsLengthCents": arms_length_cents,
        "armsLengthClassification": {
            "configured": configured,
            "note": if configured {
                "armsLengthCents is the gross of settledRows where neither party is classified by the operator. It is a residue, not a verification: arms_length cannot be assigned to an agent."
            } else {
                "No agent has been classified yet, so no sale is claimed to be at arm's length (armsLengthCents is 0)."
            },
        },
        "metric_definitions": metric_definitions(),
        "limitations": limitations(app),
        "verify": app.url("/api/verify-receipt"),
        "limit": limit,
        "offset": offset,
        "total": rows.len(),
        "rows": page,
    }))
}

/// `PUT /api/operator/parties/{handle}` {party} (operator): classifies an agent.
///
/// # Errors
/// `INVALID_ARGUMENT` for `arms_length`, an unknown class or a bad body; `NOT_FOUND` for an
/// unknown handle; database failure.
pub async fn classify(app: &App, handle: &str, party: String) -> Result<Value> {
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
            Ok(json!({
                "handle": agent.handle,
                "party": party,
                "previous": previous.unwrap_or_else(|| "unclassified".into()),
                "classifiedAt": now,
            }))
        })
        .await
}
