//! Settlement: the one door between the rails and the sale. A rail opens a purchase here
//! ([`open`]: a reservation, or a free sale settled at once) and reports the money it took
//! ([`record_payment`] with a [`PaymentReport`]); it never calls purchase functions by name.
//! Behind the door are the steps every rail shares: availability (open reservations count),
//! the seller's payouts on the card rail, the fee at the closing price, the signed purchase
//! receipt, and the settled sale (listing counts and any delisting, the ledger row, the
//! seller's sales and reputation), all in the writer's transaction.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::clock::rfc3339_after;
use crate::crypto::keys::Keyring;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::request::commerce::PaymentHeader;
use crate::service::catalog::listings;
use crate::service::catalog::versions::write_version;
use crate::service::rail::Rail;
use crate::service::{App, catalog::reputation, catalog::sellers, commerce::fees, spending};
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::listings::{self as listing_store, ListingRow};
use crate::store::payments as payment_store;
use crate::store::purchases::{self as store, LedgerRow, PurchaseRow};

/// A sale on its way from the purchase request to settlement, the one carrier of the purchase
/// path: `purchases` makes it once the request is checked, `checkout` settles its rail and makes
/// it there, and the rail opens it here.
pub struct Sale<'a> {
    /// The buyer; `None` for an anonymous x402 buyer (the payment is the credential).
    pub buyer: Option<&'a AgentRow>,
    /// The listing as `purchases` read it to check the request, outside the writer: [`open`]
    /// reads it again inside the writer's transaction, where buyers are serialized.
    pub listing: ListingRow,
    /// The rail the request chose (the instance's card rail, or [`Rail::Wallet`]) until
    /// `checkout` settles it: [`Rail::Free`] for a free listing, else the rail that takes the
    /// money.
    pub rail: Rail,
    pub email: Option<String>,
    /// The x402 payment header of a retry.
    pub payment: Option<PaymentHeader>,
    /// The URL being bought (the x402 challenge names it).
    pub resource: String,
    /// The id the purchase is to have (an order's), else a new one.
    pub purchase_id: Option<String>,
}

/// Opens a purchase after the checks every rail shares: a paid one is reserved
/// (`pending_payment` until `hold` has passed), a free one settled at once and shown in the
/// browse index. `session` names the reservation when the rail names its own (sandbox).
///
/// A paid purchase above its buyer's approval threshold opens in `pending_approval` instead,
/// and the URL of the owner's approval page is returned with it.
///
/// # Errors
/// `LISTING_UNAVAILABLE`, `PAYOUTS_NOT_CONNECTED` (409); the buyer's spending refusals (403);
/// database failure.
pub async fn open(
    app: &App,
    sale: &Sale<'_>,
    hold: Duration,
    session: Option<String>,
) -> Result<(PurchaseRow, Option<String>)> {
    let mut purchase = new_purchase(app, sale, hold, session);
    let (keyring, now, card) = (app.keyring.clone(), app.now(), app.card_rail());
    // The restricted key the buyer used, whose own caps count its purchases.
    let key_id = sale
        .buyer
        .and_then(|buyer| buyer.restricted.as_ref())
        .map(|key| key.id.clone());
    // The OAuth grant whose token is buying, whose daily cap counts its purchases.
    let grant_id = sale.buyer.and_then(|buyer| buyer.via_grant.clone());
    // The capability of the owner's approval page, used if the purchase waits for one.
    let (capability, capability_hash) = crate::service::mint_secret("apr_");
    let written = app
        .store
        .write(move |tx| {
            let opened = insert_checked(
                tx,
                &keyring,
                &now,
                card,
                &mut purchase,
                &Credentials {
                    key_id: key_id.as_deref(),
                    grant_id: grant_id.as_deref(),
                    approval_hash: &capability_hash,
                },
            )?;
            Ok((purchase, opened))
        })
        .await;
    let (purchase, opened) = written.inspect_err(|error| app.spend_refusals.count(error))?;
    let approval_url = match opened {
        Opened::Settled(settled) => {
            publish(app, *settled);
            None
        }
        Opened::Approval => Some(spending::approvals::page_url(app, &capability)),
    };
    Ok((purchase, approval_url))
}

/// What the writer's transaction that opens a purchase knows of how it is bought.
struct Credentials<'a> {
    /// The restricted key the buyer used.
    key_id: Option<&'a str>,
    /// The OAuth grant whose token is buying.
    grant_id: Option<&'a str>,
    /// The SHA-256 of the approval page's capability, stored if the purchase waits for one.
    approval_hash: &'a str,
}

/// How a purchase was opened.
enum Opened {
    /// Reserved (`None`) or, free, settled at once.
    Settled(Box<Settled>),
    /// Above its buyer's approval threshold: `pending_approval`.
    Approval,
}

/// Which reservation a payment is for.
pub enum Reservation {
    /// By its checkout session (sandbox, Stripe); an unknown one is `NOT_FOUND`.
    Session(String),
    /// By purchase id, for a reservation the rail opened itself (x402).
    Purchase(String),
}

/// What a rail reports once the money of a reservation is in.
pub struct PaymentReport {
    pub reservation: Reservation,
    /// The rail's reference of the payment (Stripe: the PaymentIntent; x402: the transaction).
    pub payment_ref: Option<String>,
    /// Who paid, when the rail knows (x402: the payer's address).
    pub payer: Option<String>,
    /// A read capability stored as the purchase's session (x402: the purchase token).
    pub token: Option<String>,
    /// The rail took the money whatever the reservation's state (Stripe, x402): a reservation
    /// that ended before the payment arrived is revived while the listing is still available.
    /// Otherwise (the sandbox's Pay button) an ended checkout is refused.
    pub taken: bool,
}

/// The new purchase of a [`Sale`]: a paid one is `pending_payment` until its hold has passed, a
/// free one `paid` at once.
fn new_purchase(
    app: &App,
    sale: &Sale<'_>,
    hold: Duration,
    session: Option<String>,
) -> PurchaseRow {
    let Sale {
        buyer,
        ref listing,
        rail,
        ref purchase_id,
        ..
    } = *sale;
    let now = app.now();
    let paid = listing.price_cents > 0;
    PurchaseRow {
        id: purchase_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        listing_id: listing.id.clone(),
        buyer_id: buyer.map(|b| b.id.clone()),
        buyer_handle: buyer.map(|b| b.handle.clone()),
        seller_id: listing.seller_id.clone(),
        status: if paid { "pending_payment" } else { "paid" }.into(),
        amount_cents: listing.price_cents,
        platform_fee_cents: 0,
        seller_net_cents: 0,
        fee_bps: 0,
        schedule_version: fees::SCHEDULE_VERSION,
        rail: rail.name().into(),
        email: sale.email.clone(),
        created_at: now.clone(),
        paid_at: (!paid).then(|| now.clone()),
        delivered_at: None,
        delivery_fingerprint: None,
        receipt: String::new(),
        checkout_session: session,
        expires_at: paid.then(|| {
            let hold = jiff::SignedDuration::try_from(hold).unwrap_or(jiff::SignedDuration::MAX);
            rfc3339_after(app.clock.now(), hold)
        }),
        shipped_at: None,
        checkout_url: None,
        payment_ref: None,
        payer: None,
    }
}

/// Inserts a new purchase inside the writer's transaction after the checks every rail shares:
/// the listing is available (counting open reservations; buyers are serialized here, so exactly
/// one wins the last copy) and, for a paid one, the seller's payouts are connected on the card
/// rail `card`. The fee is closed and the receipt signed; a free purchase is settled at once.
///
/// # Errors
/// `LISTING_UNAVAILABLE`, `PAYOUTS_NOT_CONNECTED` (409); the buyer's spending refusals (403);
/// database failure.
fn insert_checked(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    card: Rail,
    purchase: &mut PurchaseRow,
    credentials: &Credentials<'_>,
) -> Result<Opened> {
    let Credentials {
        key_id,
        grant_id,
        approval_hash,
    } = *credentials;
    // The listing is read again here, in the writer's transaction, though the sale carries it:
    // that copy was read before the writer serialized this buyer with the others, so another
    // sale, a deactivation or a new version may have come between. Availability, the seller's
    // payouts, the fee and the version the receipt names are judged on the row as it stands
    // now; the amount stays the price the request was checked at.
    let stored = listing_store::find(tx, &purchase.listing_id)?.ok_or_else(unavailable)?;
    payment_store::expire_checkouts(tx, now)?;
    if !available(tx, &stored, now)? {
        return Err(unavailable());
    }
    if purchase.amount_cents > 0 {
        sellers::require_payouts(tx, &stored.seller_id, card)?;
    }
    // The buyer's spending policy, judged here where buyers are serialized: two purchases can
    // never pass a cap together.
    let mut verdict = spending::Verdict::Pass;
    if let Some(buyer_id) = purchase.buyer_id.as_deref() {
        verdict = spending::check(
            tx,
            &spending::Buyer {
                agent_id: buyer_id,
                key_id,
                grant_id,
            },
            &purchase.rail,
            &stored,
            purchase.amount_cents,
            now,
        )?;
    }
    if let spending::Verdict::Approval { ttl_secs } = verdict {
        purchase.status = "pending_approval".into();
        purchase.expires_at = Some(spending::approvals::expiry(now, ttl_secs)?);
    }
    close_price(tx, purchase, &stored)?;
    purchase.receipt = purchase_receipt(keyring, purchase, &stored, now);
    store::insert(tx, purchase)?;
    spending::record_credential(tx, &purchase.id, key_id, grant_id)?;
    if purchase.status == "pending_approval" {
        spending::approvals::record(tx, purchase, approval_hash, now)?;
        return Ok(Opened::Approval);
    }
    if purchase.status == "paid" {
        return Ok(Opened::Settled(Box::new(Some(settle(
            tx, keyring, now, purchase, &stored,
        )?))));
    }
    Ok(Opened::Settled(Box::new(None)))
}

/// Whether a listing can be bought at `now`: active, and not sold out counting the checkouts
/// still open then (one past its expiry no longer reserves, even before the worker marks it).
pub fn available(tx: &rusqlite::Connection, listing: &ListingRow, now: &str) -> Result<bool> {
    if !listing.active || listings::sold_out(listing) {
        return Ok(false);
    }
    let reserved = payment_store::open_reservations(tx, &listing.id, now)?;
    Ok(match listing.listing_type.as_str() {
        "exclusive" => reserved == 0,
        "limited" => listing.sold_count + reserved < listing.max_copies.unwrap_or(0),
        _ => true,
    })
}

/// Sets the fee of a sale at its closing price: founding fill when the listing was made in a
/// vertical without commerce and this is that vertical's first settled paid sale.
fn close_price(
    tx: &rusqlite::Connection,
    purchase: &mut PurchaseRow,
    listing: &ListingRow,
) -> Result<()> {
    // Founding fill is for identified rails only: an x402 sale counts as commerce but never
    // claims it.
    let founding = purchase.amount_cents > 0
        && Rail::from_name(&purchase.rail).is_none_or(Rail::claims_founding_fill)
        && listing_store::founding_eligible(tx, &listing.id)?
        && !store::vertical_has_paid_sale(tx, &listing.vertical_slug)?;
    let fee = fees::platform_fee(purchase.amount_cents, founding);
    purchase.platform_fee_cents = fee.platform_fee_cents;
    purchase.seller_net_cents = fee.seller_net_cents;
    purchase.fee_bps = fee.fee_bps;
    purchase.schedule_version = fee.schedule_version;
    Ok(())
}

/// The signed purchase receipt (re-signed when a checkout is paid).
fn purchase_receipt(
    keyring: &Keyring,
    purchase: &PurchaseRow,
    listing: &ListingRow,
    now: &str,
) -> String {
    let mut receipt = Map::new();
    receipt.insert("type".into(), "bourse.purchase.receipt".into());
    receipt.insert("purchaseId".into(), purchase.id.clone().into());
    receipt.insert("status".into(), purchase.status.clone().into());
    receipt.insert("listingId".into(), listing.id.clone().into());
    receipt.insert("listingVersion".into(), listing.version.into());
    receipt.insert(
        "listingFingerprint".into(),
        listing.fingerprint.clone().into(),
    );
    receipt.insert(
        "buyerHandle".into(),
        purchase
            .buyer_handle
            .clone()
            .map_or(Value::Null, Value::from),
    );
    receipt.insert("sellerName".into(), listing.seller_code.clone().into());
    receipt.insert("amountCents".into(), purchase.amount_cents.into());
    receipt.insert(
        "platformFeeCents".into(),
        purchase.platform_fee_cents.into(),
    );
    receipt.insert("sellerNetCents".into(), purchase.seller_net_cents.into());
    receipt.insert("feeBps".into(), purchase.fee_bps.into());
    receipt.insert("scheduleVersion".into(), purchase.schedule_version.into());
    receipt.insert("rail".into(), purchase.rail.clone().into());
    receipt.insert("createdAt".into(), purchase.created_at.clone().into());
    receipt.insert(
        "paidAt".into(),
        purchase.paid_at.clone().map_or(Value::Null, Value::from),
    );
    sign_object(keyring, &mut receipt, now);
    Value::Object(receipt).to_string()
}

/// Records a settled sale (free at purchase, paid at payment): the listing's counts and any
/// delisting as a signed version, the ledger row (released for free sales, held for paid
/// ones), and the seller's sale count and reputation.
fn settle(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    purchase: &PurchaseRow,
    stored: &ListingRow,
) -> Result<(ListingRow, Vec<listing_store::IndexRow>)> {
    listing_store::record_sale(tx, &stored.id)?;
    let counted = ListingRow {
        sold_count: stored.sold_count + 1,
        purchase_count: stored.purchase_count + 1,
        ..stored.clone()
    };
    let mut next = counted.clone();
    next.exclusive_sold = counted.listing_type == "exclusive";
    if listings::sold_out(&next) {
        next.active = false;
    }
    let written = write_version(
        tx,
        keyring,
        now,
        &counted,
        next,
        Some("sold out".to_owned()),
    )?;
    let free = purchase.amount_cents == 0;
    let ledger_id = uuid::Uuid::new_v4().to_string();
    store::insert_ledger(
        tx,
        &LedgerRow {
            id: &ledger_id,
            purchase_id: &purchase.id,
            seller_code: &counted.seller_code,
            vertical_slug: &counted.vertical_slug,
            amount_cents: purchase.amount_cents,
            platform_fee_cents: purchase.platform_fee_cents,
            rail: Rail::ledger_name_of(&purchase.rail),
            status: if free { "released" } else { "held" },
            is_reference_listing: counted.is_sample,
            created_at: now,
            released_at: free.then_some(now),
        },
    )?;
    crate::service::ledger::log_event(
        tx,
        keyring,
        &crate::service::ledger::Event {
            event: "sale",
            row: &ledger_id,
            purchase_id: &purchase.id,
            amount_cents: Some(purchase.amount_cents),
            at: now,
        },
    )?;
    let seller_rows = record_seller_sale(tx, &purchase.seller_id)?;
    Ok((written.map(|(row, _)| row).unwrap_or(counted), seller_rows))
}

/// One more completed sale for a seller: its reputation moves, and so do its listings.
fn record_seller_sale(
    tx: &rusqlite::Connection,
    seller_id: &str,
) -> Result<Vec<listing_store::IndexRow>> {
    agent_store::add_sale(tx, seller_id)?;
    refresh_reputation(tx, seller_id)
}

/// Recomputes a seller's reputation from its stored inputs and copies it onto its listings.
///
/// # Errors
/// Database failure.
pub(crate) fn refresh_reputation(
    tx: &rusqlite::Connection,
    seller_id: &str,
) -> Result<Vec<listing_store::IndexRow>> {
    let (sum, count, sales) = agent_store::reputation_inputs(tx, seller_id)?;
    let score = reputation::seller(sum, count, sales);
    agent_store::set_reputation(tx, seller_id, score)?;
    listing_store::set_seller_reputation(tx, seller_id, score)?;
    listing_store::index_rows_of_seller(tx, seller_id)
}

/// What a settled sale changed in the browse index.
pub type Settled = Option<(ListingRow, Vec<listing_store::IndexRow>)>;

/// Shows a settled sale in the browse index and drops the seller's cached row, whose sale
/// count changed (after the transaction committed).
pub fn publish(app: &App, settled: Settled) {
    if let Some((listing, seller_rows)) = settled {
        // The seller's cached row carries its sale count.
        crate::service::identity::agents::forget(app, &listing.seller_id);
        app.browse.upsert_rows(&seller_rows);
        app.browse.upsert(&listing);
    }
}

/// Records, inside the writer's transaction, that the money of a reservation is in: closes the
/// price, re-signs the receipt with the rail's references, settles the sale. A reservation
/// already paid is answered unchanged (no settlement); an expired or cancelled one is revived
/// when the rail took the money (`taken`) and the listing is still available, else refused.
/// It runs in the caller's transaction so a rail can record its own state with it (the Stripe
/// webhook's event id, a refund owed).
///
/// # Errors
/// `NOT_FOUND` (unknown session), `CHECKOUT_CLOSED` (409, an ended checkout the rail did not
/// take money for), `LISTING_UNAVAILABLE` (409, an ended reservation whose listing went to
/// another buyer); database failure.
pub fn record_payment(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    report: PaymentReport,
) -> Result<(PurchaseRow, Settled)> {
    payment_store::expire_checkouts(tx, now)?;
    let mut purchase = match &report.reservation {
        Reservation::Session(session) => store::find_by_session(tx, session)?
            .ok_or_else(|| Error::NotFound("no such checkout".into()))?,
        Reservation::Purchase(id) => store::find(tx, id)?
            .ok_or_else(|| Error::Internal(format!("reservation {id} vanished")))?,
    };
    match purchase.status.as_str() {
        "paid" | "delivered" => return Ok((purchase, None)),
        "pending_payment" => {}
        "expired" | "cancelled" if report.taken => {}
        other => {
            return Err(Error::Conflict {
                code: "CHECKOUT_CLOSED",
                message: format!("this checkout is {other}"),
            });
        }
    }
    purchase.payment_ref = report.payment_ref.or(purchase.payment_ref);
    purchase.payer = report.payer.or(purchase.payer);
    purchase.checkout_session = report.token.or(purchase.checkout_session);
    let settled = pay(tx, keyring, now, &mut purchase)?;
    Ok((purchase, Some(settled)))
}

/// Marks a reservation read fresh in this transaction paid and settles it: a reservation that
/// ended (`expired` or `cancelled`) before the payment arrived is revived only while the
/// listing is still available.
fn pay(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    purchase: &mut PurchaseRow,
) -> Result<(ListingRow, Vec<listing_store::IndexRow>)> {
    let stored = listing_store::find(tx, &purchase.listing_id)?.ok_or_else(unavailable)?;
    if purchase.status != "pending_payment" && !available(tx, &stored, now)? {
        return Err(Error::Conflict {
            code: "LISTING_UNAVAILABLE",
            message: "the checkout ended before the payment arrived and the listing is no longer available".into(),
        });
    }
    close_price(tx, purchase, &stored)?;
    purchase.status = "paid".into();
    purchase.paid_at = Some(now.to_owned());
    purchase.receipt = purchase_receipt(keyring, purchase, &stored, now);
    if !store::mark_paid(tx, purchase)? {
        return Err(Error::Internal(format!(
            "purchase {} is not a reservation that can be paid",
            purchase.id
        )));
    }
    settle(tx, keyring, now, purchase, &stored)
}

/// `LISTING_UNAVAILABLE` (409) for a listing that cannot be bought now.
pub fn unavailable() -> Error {
    Error::Conflict {
        code: "LISTING_UNAVAILABLE",
        message:
            "this listing is not for sale now (deactivated, exclusive and sold, or every copy sold)"
                .into(),
    }
}
