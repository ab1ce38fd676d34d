//! Purchases, the live delivery relay, the sales ledger and ratings.
//!
//! Purchase statuses: `pending_payment` (a paid listing's checkout is open) → `paid` (the money
//! is in, or the listing is free) → `delivered` (the first successful relay); `pending_payment`
//! → `expired` or `cancelled` when the checkout ends unpaid. Physical orders are also shipped by
//! the seller (`shippedAt`), which their escrow waits for.
//!
//! Zero storage: at every read by the buyer the deliverable is fetched from the seller's verified
//! endpoint with a signed `bourse.delivery` request (or built in, for reference samples),
//! relayed, and dropped. Only its fingerprint is recorded. Bytes that differ from the listing's
//! fingerprint make a new listing version whose history shows the new fingerprint. A failed
//! fetch leaves the purchase `paid`; the next read retries.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::catalog::HEALTH_VERTICAL;
use super::listings::{self, write_version};
use super::sellers::{self, Deliverable};
use super::{App, fees, payments, reputation, samples, stripe};
use crate::args::Args;
use crate::clock::rfc3339_after;
use crate::crypto::jcs;
use crate::crypto::keys::Keyring;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::listings::{self as listing_store, ListingRow};
use crate::store::payments as payment_store;
use crate::store::purchases::{self as store, LedgerRow, PurchaseRow, RatingRow};

pub use super::health::{ATTESTATIONS, INTENDED_USES};

const COMMENT_MAX: usize = 2000;

/// A purchase's `rail`: free, the sandbox checkout, Stripe (card), or x402 (wallet).
pub const RAIL_FREE: &str = "free";
pub const RAIL_SANDBOX: &str = "checkout";
pub const RAIL_STRIPE: &str = "card";
pub const RAIL_X402: &str = "x402_usdc_base";

/// The ledger's rail vocabulary (`checkout`, `card`, `wallet`) for a purchase's rail.
pub fn ledger_rail(rail: &str) -> &'static str {
    match rail {
        RAIL_STRIPE => "card",
        RAIL_X402 => "wallet",
        _ => "checkout",
    }
}

/// `POST /api/marketplace/listings/{id}/purchase`: a free listing is bought and delivered at
/// once; a paid one opens a checkout session that reserves it (status `pending_payment`, with
/// `checkoutUrl`).
///
/// # Errors
/// `NOT_FOUND`, `CANNOT_BUY_OWN_LISTING` (403), `LISTING_UNAVAILABLE` (409),
/// `PAYOUTS_NOT_CONNECTED` (409), `HEALTH_TERMS_REQUIRED` (422).
pub async fn purchase(app: &App, buyer: &AgentRow, listing_id: &str, args: Args) -> Result<Value> {
    args.deny_unknown(&["email", "buyer_intended_use", "buyer_attestation"])?;
    let email = args
        .opt_str("email", 254)?
        .map(super::agents::check_email)
        .transpose()?;
    let listing = listings::find(app, listing_id).await?;
    if listing.seller_id == buyer.id {
        return Err(Error::Forbidden {
            code: "CANNOT_BUY_OWN_LISTING",
            message: "an agent cannot buy its own listing".into(),
        });
    }
    if listing.vertical_slug == HEALTH_VERTICAL {
        check_health_terms(&args, listing.authorized_uses.as_deref())?;
    }
    if app.stripe.is_some() && listing.price_cents > 0 {
        super::stripe_client::check_amount(listing.price_cents)?;
    }
    let paid = listing.price_cents > 0;
    let rail = match (paid, app.sandbox()) {
        (false, _) => RAIL_FREE,
        (true, true) => RAIL_SANDBOX,
        (true, false) => RAIL_STRIPE,
    };
    // The sandbox names its own sessions; Stripe's session id is stored once it is created.
    let session = (paid && app.sandbox()).then(payments::new_session);
    let mut purchase = new_purchase(
        app,
        Some(buyer),
        &listing,
        rail,
        email,
        payments::checkout_window(app),
        session,
    );
    let (keyring, stamp, stripe) = (app.keyring.clone(), app.now(), app.stripe.is_some());
    let (mut purchase, settled) = app
        .store
        .write(move |tx| {
            let settled = insert_checked(tx, &keyring, &stamp, stripe, &mut purchase)?;
            Ok((purchase, settled))
        })
        .await?;
    publish(app, settled);
    if purchase.status == "pending_payment"
        && let Some(client) = app.stripe.clone()
    {
        let title = listing.title.clone();
        let (session, url) = stripe::open_checkout(app, client, &purchase, &title).await?;
        purchase.checkout_session = Some(session);
        purchase.checkout_url = Some(url);
    }
    read_as_buyer(app, purchase).await
}

/// A new purchase of `listing` on `rail`: a paid one is `pending_payment` until `hold` has
/// passed, a free one `paid` at once.
pub(crate) fn new_purchase(
    app: &App,
    buyer: Option<&AgentRow>,
    listing: &ListingRow,
    rail: &str,
    email: Option<String>,
    hold: std::time::Duration,
    session: Option<String>,
) -> PurchaseRow {
    let now = app.now();
    let paid = listing.price_cents > 0;
    PurchaseRow {
        id: uuid::Uuid::new_v4().to_string(),
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
        rail: rail.into(),
        email,
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
/// one wins the last copy) and, for a paid one, the seller's payouts are connected. The fee is
/// closed and the receipt signed; a free purchase is settled at once.
///
/// # Errors
/// `LISTING_UNAVAILABLE`, `PAYOUTS_NOT_CONNECTED` (409); database failure.
pub(crate) fn insert_checked(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    stripe: bool,
    purchase: &mut PurchaseRow,
) -> Result<Settled> {
    let stored = listing_store::find(tx, &purchase.listing_id)?.ok_or_else(unavailable)?;
    payment_store::expire_checkouts(tx, now)?;
    if !available(tx, &stored, now)? {
        return Err(unavailable());
    }
    if purchase.amount_cents > 0 {
        payments::require_payouts(tx, &stored.seller_id, stripe)?;
    }
    close_price(tx, purchase, &stored)?;
    purchase.receipt = purchase_receipt(keyring, purchase, &stored, now);
    store::insert(tx, purchase)?;
    if purchase.status == "paid" {
        return Ok(Some(settle(tx, keyring, now, purchase, &stored)?));
    }
    Ok(None)
}

/// Whether a listing can be bought at `now`: active, and not sold out counting the checkouts
/// still open then (one past its expiry no longer reserves, even before the worker marks it).
pub(crate) fn available(
    tx: &rusqlite::Connection,
    listing: &ListingRow,
    now: &str,
) -> Result<bool> {
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
pub(crate) fn close_price(
    tx: &rusqlite::Connection,
    purchase: &mut PurchaseRow,
    listing: &ListingRow,
) -> Result<()> {
    // Founding fill is for identified rails only: an x402 sale counts as commerce but never
    // claims it.
    let founding = purchase.amount_cents > 0
        && purchase.rail != RAIL_X402
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
pub(crate) fn purchase_receipt(
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
pub(crate) fn settle(
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
    store::insert_ledger(
        tx,
        &LedgerRow {
            id: &uuid::Uuid::new_v4().to_string(),
            purchase_id: &purchase.id,
            seller_code: &counted.seller_code,
            vertical_slug: &counted.vertical_slug,
            amount_cents: purchase.amount_cents,
            platform_fee_cents: purchase.platform_fee_cents,
            rail: ledger_rail(&purchase.rail),
            status: if free { "released" } else { "held" },
            is_reference_listing: counted.is_sample,
            created_at: now,
            released_at: free.then_some(now),
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
fn refresh_reputation(
    tx: &rusqlite::Connection,
    seller_id: &str,
) -> Result<Vec<listing_store::IndexRow>> {
    let (sum, count, sales) = agent_store::reputation_inputs(tx, seller_id)?;
    let score = reputation::seller(sum, count, sales);
    agent_store::set_reputation(tx, seller_id, score)?;
    listing_store::set_seller_reputation(tx, seller_id, score)?;
    listing_store::index_rows_of_seller(tx, seller_id)
}

/// `POST /api/sandbox/checkout/{session}/pay` (and the checkout page's Pay button).
///
/// # Errors
/// `NOT_FOUND`, `CHECKOUT_CLOSED` (409) when cancelled or expired.
pub async fn pay(app: &App, session: &str) -> Result<Value> {
    let (keyring, now, key) = (app.keyring.clone(), app.now(), session.to_owned());
    let (purchase, settled) = app
        .store
        .write(move |tx| pay_in(tx, &keyring, &now, &key, None, false))
        .await?;
    publish(app, settled);
    Ok(json!({ "purchaseId": purchase.id, "status": purchase.status, "paidAt": purchase.paid_at }))
}

/// What a settled sale changed in the browse index.
pub type Settled = Option<(ListingRow, Vec<listing_store::IndexRow>)>;

/// Shows a settled sale in the browse index (after its transaction committed).
pub fn publish(app: &App, settled: Settled) {
    if let Some((listing, seller_rows)) = settled {
        app.browse.upsert_rows(&seller_rows);
        app.browse.upsert(&listing);
    }
}

/// Pays the checkout `session` inside the writer's transaction: closes the price, re-signs the
/// receipt, settles the sale. Already paid → unchanged. An expired or cancelled checkout is
/// refused, unless `revive` (the rail took the money after all, e.g. a Stripe payment that
/// raced the expiry) and the listing is still available.
///
/// # Errors
/// `NOT_FOUND`, `CHECKOUT_CLOSED` (409).
pub fn pay_in(
    tx: &rusqlite::Connection,
    keyring: &Keyring,
    now: &str,
    session: &str,
    payment_ref: Option<&str>,
    revive: bool,
) -> Result<(PurchaseRow, Settled)> {
    payment_store::expire_checkouts(tx, now)?;
    let mut purchase = store::find_by_session(tx, session)?
        .ok_or_else(|| Error::NotFound("no such checkout".into()))?;
    match purchase.status.as_str() {
        "paid" | "delivered" => return Ok((purchase, None)),
        "pending_payment" => {}
        "expired" | "cancelled" if revive => {}
        other => {
            return Err(Error::Conflict {
                code: "CHECKOUT_CLOSED",
                message: format!("this checkout is {other}"),
            });
        }
    }
    purchase.payment_ref = payment_ref.map(str::to_owned);
    let settled = record_payment(tx, keyring, now, &mut purchase)?;
    Ok((purchase, Some(settled)))
}

/// Records the payment of a reservation inside the writer's transaction, for every rail: the
/// fee at the closing price, the re-signed receipt, the rail's references already set on
/// `purchase`, and the settlement. `purchase` must be read fresh in this transaction, after
/// `expire_checkouts`: a reservation that ended (`expired` or `cancelled`) before the payment
/// arrived is revived only while the listing is still available.
///
/// # Errors
/// `LISTING_UNAVAILABLE` (409) when an ended reservation's listing went to another buyer.
pub(crate) fn record_payment(
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

/// `POST /api/sandbox/checkout/{session}/cancel`: frees the reservation.
///
/// # Errors
/// `NOT_FOUND`, `CHECKOUT_CLOSED` (409) when already paid.
pub async fn cancel(app: &App, session: &str) -> Result<Value> {
    let key = session.to_owned();
    app.store
        .write(move |tx| {
            let purchase = store::find_by_session(tx, &key)?
                .ok_or_else(|| Error::NotFound("no such checkout".into()))?;
            match purchase.status.as_str() {
                "pending_payment" => {
                    payment_store::end_checkout(tx, &purchase.id, "cancelled")?;
                    Ok(json!({ "purchaseId": purchase.id, "status": "cancelled" }))
                }
                "cancelled" | "expired" => {
                    Ok(json!({ "purchaseId": purchase.id, "status": purchase.status }))
                }
                other => Err(Error::Conflict {
                    code: "CHECKOUT_CLOSED",
                    message: format!("this checkout is already {other}"),
                }),
            }
        })
        .await
}

/// What the sandbox checkout page shows: the listing, the amount and the state.
///
/// # Errors
/// `NOT_FOUND`.
pub async fn checkout_view(app: &App, session: &str) -> Result<Value> {
    let key = session.to_owned();
    let (purchase, listing) = app
        .store
        .read(move |tx| {
            let purchase = store::find_by_session(tx, &key)?
                .ok_or_else(|| Error::NotFound("no such checkout".into()))?;
            let listing = listing_store::find(tx, &purchase.listing_id)?;
            Ok((purchase, listing))
        })
        .await?;
    Ok(json!({
        "session": session,
        "status": purchase.status,
        "amountCents": purchase.amount_cents,
        "expiresAt": purchase.expires_at,
        "title": listing.map(|l| l.title),
    }))
}

/// `GET /api/marketplace/purchases/{id}`: the buyer's own purchase, with the deliverable
/// relayed live once it is paid.
///
/// # Errors
/// `NOT_FOUND`, `NOT_BUYER` (403).
pub async fn get(app: &App, buyer: &AgentRow, id: &str) -> Result<Value> {
    let purchase = find(app, id).await?;
    if purchase.buyer_id.as_deref() != Some(buyer.id.as_str()) {
        return Err(Error::Forbidden {
            code: "NOT_BUYER",
            message: "only the buyer's key reads a purchase".into(),
        });
    }
    read_as_buyer(app, purchase).await
}

/// A purchase by id.
///
/// # Errors
/// `NOT_FOUND`.
pub(crate) async fn find(app: &App, id: &str) -> Result<PurchaseRow> {
    let key = id.to_owned();
    app.store
        .read(move |conn| store::find(conn, &key))
        .await?
        .ok_or_else(|| Error::NotFound(format!("no purchase with id {id:?}")))
}

/// The Purchase resource for its buyer: relays the deliverable when the purchase is paid.
pub(crate) async fn read_as_buyer(app: &App, mut purchase: PurchaseRow) -> Result<Value> {
    let mut delivery = Value::Null;
    let mut delivery_error = Value::Null;
    if purchase.status == "pending_payment"
        && purchase
            .expires_at
            .as_deref()
            .is_some_and(|at| at <= app.now().as_str())
    {
        let now = app.now();
        app.store
            .write(move |tx| payment_store::expire_checkouts(tx, &now))
            .await?;
        purchase.status = "expired".into();
    }
    if purchase.status == "paid" || purchase.status == "delivered" {
        match relay(app, &purchase).await {
            Ok((deliverable, fingerprint)) => {
                if purchase.status == "paid" {
                    let now = app.now();
                    let (id, at, print) = (purchase.id.clone(), now.clone(), fingerprint.clone());
                    let (instant, hold) = (app.clock.now(), app.escrow_hold);
                    app.store
                        .write(move |tx| {
                            store::mark_delivered(tx, &id, &at, &print)?;
                            // The first successful delivery starts the escrow clock.
                            payments::start_escrow(tx, &id, instant, hold)
                        })
                        .await?;
                    purchase.status = "delivered".into();
                    purchase.delivered_at = Some(now);
                    purchase.delivery_fingerprint = Some(fingerprint.clone());
                }
                delivery = delivery_json(&deliverable, &fingerprint);
            }
            Err(error) => delivery_error = Value::String(error.to_string()),
        }
    }
    // A payment that arrived after the checkout ended, for a listing sold meanwhile, is given
    // back: the buyer sees where that stands.
    let refund = if purchase.status == "expired" || purchase.status == "cancelled" {
        let id = purchase.id.clone();
        app.store
            .read(move |conn| payment_store::refund_of(conn, &id))
            .await?
            .map(|r| {
                json!({
                    "status": r.status,
                    "amountCents": r.amount_cents,
                    "paymentRef": r.payment_ref,
                    "refundRef": r.refund_ref,
                    "createdAt": r.created_at,
                    "refundedAt": r.refunded_at,
                })
            })
    } else {
        None
    };
    let receipt: Value = serde_json::from_str(&purchase.receipt).unwrap_or(Value::Null);
    Ok(json!({
        "id": purchase.id,
        "listingId": purchase.listing_id,
        "buyerHandle": purchase.buyer_handle,
        "status": purchase.status,
        "amountCents": purchase.amount_cents,
        "platformFeeCents": purchase.platform_fee_cents,
        "sellerNetCents": purchase.seller_net_cents,
        "feeBps": purchase.fee_bps,
        "scheduleVersion": purchase.schedule_version,
        "rail": purchase.rail,
        "checkoutUrl": (purchase.status == "pending_payment")
            .then(|| purchase.checkout_url.clone().or_else(|| {
                purchase.checkout_session.as_deref().map(|session| payments::checkout_url(app, session))
            }))
            .flatten(),
        "expiresAt": purchase.expires_at,
        "shippedAt": purchase.shipped_at,
        "createdAt": purchase.created_at,
        "paidAt": purchase.paid_at,
        "deliveredAt": purchase.delivered_at,
        "receipt": receipt,
        "delivery": delivery,
        "deliveryError": delivery_error,
        "refund": refund,
    }))
}

/// Fetches (or builds) the deliverable and checks it against the listing's fingerprint; a
/// changed deliverable makes a new listing version.
async fn relay(app: &App, purchase: &PurchaseRow) -> Result<(Deliverable, String)> {
    let listing = listings::find(app, &purchase.listing_id).await?;
    let deliverable = if listing.is_sample {
        let vertical = app
            .taxonomy
            .vertical(&listing.vertical_slug)
            .ok_or_else(|| Error::Internal("sample of an unknown vertical".into()))?;
        Deliverable {
            bytes: samples::deliverable(vertical),
            content_type: "application/json".into(),
        }
    } else {
        let seller_id = listing.seller_id.clone();
        let (endpoint, seller) = app
            .store
            .read(move |conn| {
                Ok((
                    sellers::verified_endpoint(conn, &seller_id)?,
                    crate::store::agents::find_by_id(conn, &seller_id)?,
                ))
            })
            .await?;
        let ((url, _), seller) = endpoint.zip(seller).ok_or_else(|| Error::Unprocessable {
            code: "SELLER_ENDPOINT_FAILED",
            message: "the seller has no verified delivery endpoint right now; try again later"
                .into(),
        })?;
        sellers::fetch_deliverable(
            app,
            &url,
            &seller.handle,
            &listing.id,
            Some(&purchase.id),
            listing.deliverable_ref.as_deref(),
        )
        .await?
    };
    let fingerprint = jcs::sha256_prefixed(&deliverable.bytes);
    if fingerprint != listing.fingerprint {
        let (keyring, now, print) = (app.keyring.clone(), app.now(), fingerprint.clone());
        let id = listing.id.clone();
        let written = app
            .store
            .write(move |tx| {
                let Some(stored) = listing_store::find(tx, &id)? else {
                    return Ok(None);
                };
                let next = ListingRow {
                    fingerprint: print,
                    ..stored.clone()
                };
                write_version(
                    tx,
                    &keyring,
                    &now,
                    &stored,
                    next,
                    Some("the deliverable changed at delivery".into()),
                )
            })
            .await?;
        if let Some((row, _)) = written {
            app.browse.upsert(&row);
        }
    }
    Ok((deliverable, fingerprint))
}

/// `{contentType, encoding, content, fingerprint}`: JSON as JSON, text as text, else base64.
fn delivery_json(deliverable: &Deliverable, fingerprint: &str) -> Value {
    let media = deliverable
        .content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let as_json = (media == "application/json" || media.ends_with("+json"))
        .then(|| serde_json::from_slice::<Value>(&deliverable.bytes).ok())
        .flatten();
    let as_text = (media.starts_with("text/"))
        .then(|| String::from_utf8(deliverable.bytes.clone()).ok())
        .flatten();
    let (encoding, content) = match (as_json, as_text) {
        (Some(value), _) => ("json", value),
        (None, Some(text)) => ("utf-8", Value::String(text)),
        _ => (
            "base64",
            Value::String(base64::engine::general_purpose::STANDARD.encode(&deliverable.bytes)),
        ),
    };
    json!({
        "contentType": deliverable.content_type,
        "encoding": encoding,
        "content": content,
        "fingerprint": fingerprint,
        "bytes": deliverable.bytes.len(),
    })
}

/// The buyer's intended use and attestation; then, for a listing with a consent record, the
/// use must be one the seller authorized (reference samples hold synthetic data and have none).
pub(crate) fn check_health_terms(args: &Args, authorized_uses: Option<&str>) -> Result<()> {
    let refuse = |message: String| Error::Unprocessable {
        code: "HEALTH_TERMS_REQUIRED",
        message,
    };
    let intended = args.opt_str("buyer_intended_use", 40)?;
    if !intended
        .as_deref()
        .is_some_and(|use_| INTENDED_USES.contains(&use_))
    {
        return Err(refuse(format!(
            "personal health data needs `buyer_intended_use`, one of {}",
            INTENDED_USES.join(", ")
        )));
    }
    let attestation = args.get("buyer_attestation").and_then(Value::as_object);
    let all_true = attestation.is_some_and(|a| {
        ATTESTATIONS
            .iter()
            .all(|k| a.get(*k) == Some(&Value::Bool(true)))
    });
    if !all_true {
        return Err(refuse(format!(
            "personal health data needs `buyer_attestation` with {} all true",
            ATTESTATIONS.join(", ")
        )));
    }
    match (authorized_uses, intended) {
        (Some(authorized), Some(intended)) => super::health::check_use(Some(authorized), &intended),
        _ => Ok(()),
    }
}

pub(crate) fn unavailable() -> Error {
    Error::Conflict {
        code: "LISTING_UNAVAILABLE",
        message:
            "this listing is not for sale now (deactivated, exclusive and sold, or every copy sold)"
                .into(),
    }
}

/// `POST /api/marketplace/listings/{id}/rate` {purchase_id, rating, comment}: only the buyer of a
/// delivered purchase of this listing, once per purchase. Answers a signed attestation that a
/// paying buyer left the rating; ratings are shown without the buyer.
///
/// # Errors
/// `INVALID_ARGUMENT`, `NOT_FOUND`, `NOT_BUYER` (403), `NOT_DELIVERED` (409), `ALREADY_RATED` (409).
pub async fn rate(app: &App, buyer: &AgentRow, listing_id: &str, args: Args) -> Result<Value> {
    args.deny_unknown(&["purchase_id", "rating", "comment"])?;
    let purchase_id = args.req_str("purchase_id", 64)?;
    let rating = args
        .opt_int("rating", 1, 5)?
        .ok_or_else(|| Error::invalid("`rating` is required (an integer from 1 to 5)"))?;
    let comment = args.opt_str("comment", COMMENT_MAX)?;
    let key = purchase_id.clone();
    let purchase = app
        .store
        .read(move |conn| store::find(conn, &key))
        .await?
        .filter(|p| p.listing_id == listing_id)
        .ok_or_else(|| Error::NotFound(format!("no purchase {purchase_id:?} of this listing")))?;
    if purchase.buyer_id.as_deref() != Some(buyer.id.as_str()) {
        return Err(Error::Forbidden {
            code: "NOT_BUYER",
            message: "only the buyer of this purchase can rate it".into(),
        });
    }
    if purchase.status != "delivered" {
        return Err(Error::Conflict {
            code: "NOT_DELIVERED",
            message: "a purchase can be rated once it has been delivered".into(),
        });
    }
    let now = app.now();
    let rating_id = uuid::Uuid::new_v4().to_string();
    let mut attestation = Map::new();
    attestation.insert("type".into(), "bourse.rating.attestation".into());
    attestation.insert("ratingId".into(), rating_id.clone().into());
    attestation.insert("listingId".into(), purchase.listing_id.clone().into());
    attestation.insert("rating".into(), rating.into());
    attestation.insert(
        "comment".into(),
        comment.clone().map_or(Value::Null, Value::from),
    );
    attestation.insert("verifiedBuyer".into(), true.into());
    attestation.insert("amountCents".into(), purchase.amount_cents.into());
    attestation.insert("ratedAt".into(), now.clone().into());
    sign_object(&app.keyring, &mut attestation, &now);
    let attestation = Value::Object(attestation);
    let text = attestation.to_string();
    let seller_rows = app
        .store
        .write(move |tx| {
            if store::is_rated(tx, &purchase.id)? {
                return Err(Error::Conflict {
                    code: "ALREADY_RATED",
                    message: "this purchase has already been rated".into(),
                });
            }
            store::insert_rating(
                tx,
                &RatingRow {
                    id: &rating_id,
                    purchase_id: &purchase.id,
                    listing_id: &purchase.listing_id,
                    rating,
                    comment: comment.as_deref(),
                    created_at: &now,
                    attestation: &text,
                },
            )?;
            let (sum, count) = listing_store::rating_totals_with(tx, &purchase.listing_id, rating)?;
            listing_store::record_rating(
                tx,
                &purchase.listing_id,
                rating,
                reputation::quality(sum, count),
            )?;
            agent_store::add_rating(tx, &purchase.seller_id, rating)?;
            refresh_reputation(tx, &purchase.seller_id)
        })
        .await?;
    app.browse.upsert_rows(&seller_rows);
    Ok(json!({ "rating": attestation }))
}
