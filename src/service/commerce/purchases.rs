//! Purchases as the buyer sees them: the purchase request (checked here, made on its rail by
//! `checkout`, recorded through `settlement`), the Purchase resource with the live delivery
//! relay, and ratings.
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
use serde::Serialize;
use serde_json::{Map, Value};

use crate::crypto::jcs;
use crate::crypto::receipt::sign_object;
use crate::error::{Error, Result};
use crate::request::commerce::{GetPurchase, Purchase, Rate};
use crate::service::catalog::listings;
use crate::service::catalog::sellers::{self, Deliverable};
use crate::service::catalog::versions::write_version;
use crate::service::commerce::checkout::{self, Bought, Refusal};
use crate::service::commerce::rails::x402;
use crate::service::commerce::settlement::{Sale, refresh_reputation};
use crate::service::rail::Rail;
use crate::service::{App, catalog::reputation, catalog::samples, commerce::payments};
use crate::store::agents::{self as agent_store, AgentRow};
use crate::store::listings::{self as listing_store, ListingRow};
use crate::store::payments as payment_store;
use crate::store::purchases::{self as store, PurchaseRow, RatingRow};

pub use crate::service::catalog::health::{ATTESTATIONS, INTENDED_USES};

/// `POST /api/marketplace/listings/{id}/purchase` on the instance's card rail: a free listing
/// is bought and delivered at once; a paid one opens a checkout session that reserves it
/// (status `pending_payment`, with `checkoutUrl`).
///
/// # Errors
/// `NOT_FOUND`, `CANNOT_BUY_OWN_LISTING` (403), `LISTING_UNAVAILABLE` (409),
/// `PAYOUTS_NOT_CONNECTED` (409), `HEALTH_TERMS_REQUIRED` (422).
pub async fn purchase(app: &App, buyer: &AgentRow, request: Purchase) -> Result<BuyerPurchase> {
    match purchase_on(app, Some(buyer), app.card_rail(), request, String::new()).await? {
        Answer::Purchase { purchase, .. } => Ok(*purchase),
        // Only the wallet rail answers in its own words.
        Answer::Refused(refusal) => Err(Error::Internal(format!(
            "the card rail answered {}",
            refusal.status
        ))),
    }
}

/// What a purchase request answers, whatever its rail.
#[derive(Debug)]
pub enum Answer {
    /// The Purchase (200), with the rail's response headers (x402: `PAYMENT-RESPONSE`).
    Purchase {
        purchase: Box<BuyerPurchase>,
        headers: Vec<(&'static str, String)>,
    },
    /// The rail's own answer (x402: a 402 challenge or a refused payment).
    Refused(Refusal),
}

/// `POST /api/marketplace/listings/{id}/purchase` on any rail, `rail` the one
/// [`checkout::choose_rail`] chose for the request: checks the request (the buyer's own
/// listing, health terms), makes it a [`Sale`] that checkout makes on its rail, and answers the
/// Purchase, with the deliverable once it is paid, or the rail's own answer (x402: 402).
/// `buyer` is `None` only on the wallet rail; there a free listing is bought on the card rail's
/// terms, with a key (else 401). `resource` is the URL being bought (the x402 challenge names
/// it).
///
/// # Errors
/// As [`purchase`], and on the wallet rail `UNAUTHENTICATED` (a free listing without a key),
/// `PAYMENT_ALREADY_USED` (409), `INVALID_PAYMENT` (400), `FACILITATOR_UNAVAILABLE` /
/// `FACILITATOR_ERROR` (502).
pub async fn purchase_on(
    app: &App,
    buyer: Option<&AgentRow>,
    rail: Rail,
    request: Purchase,
    resource: String,
) -> Result<Answer> {
    let Purchase {
        listing_id,
        rail: _,
        payment,
        email,
        intended_use,
        attestation,
        purchase_id,
    } = request;
    // The email and the shapes of the health terms, judged together; whether the terms are
    // met, for personal health data only.
    let judge = move || {
        let email = email.and_then(|email| {
            email
                .map(crate::service::identity::agents::check_email)
                .transpose()
        })?;
        Ok::<_, Error>((email, intended_use?, attestation?))
    };
    // The wallet rail finds the listing first: a free one needs a key before anything else.
    let (listing, (email, intended_use, attestation)) = if rail == Rail::Wallet {
        let listing = listings::find(app, &listing_id).await?;
        if listing.price_cents == 0 && buyer.is_none() {
            return Err(Error::Unauthenticated(
                "a free listing is bought with a buyer key (Authorization: Bearer); x402 pays for paid listings only".into(),
            ));
        }
        let judged = judge()?;
        (listing, judged)
    } else {
        let judged = judge()?;
        (listings::find(app, &listing_id).await?, judged)
    };
    if buyer.is_some_and(|b| b.id == listing.seller_id) {
        return Err(Error::Forbidden {
            code: "CANNOT_BUY_OWN_LISTING",
            message: "an agent cannot buy its own listing".into(),
        });
    }
    if listing.vertical_slug == crate::service::taxonomy::HEALTH_VERTICAL {
        check_health_terms(
            intended_use,
            attestation.as_ref(),
            listing.authorized_uses.as_deref(),
        )?;
    }
    let sale = Sale {
        buyer,
        listing,
        rail,
        email,
        payment,
        resource,
        purchase_id,
    };
    match checkout::buy(app, sale).await? {
        Bought::Purchase {
            purchase,
            paid,
            headers,
            approval_url,
        } => {
            let mut shown = read_as_buyer(app, *purchase).await?;
            shown.approval_url = approval_url;
            if let Some(paid) = paid {
                shown.purchase_token = Some(paid.token);
                shown.payment = Some(paid.payment);
            }
            Ok(Answer::Purchase {
                purchase: Box::new(shown),
                headers,
            })
        }
        Bought::Refused(refusal) => Ok(Answer::Refused(refusal)),
    }
}

/// `GET /api/marketplace/purchases/{id}`: the buyer's own purchase, with the deliverable
/// relayed live once it is paid.
///
/// # Errors
/// `NOT_FOUND`, `NOT_BUYER` (403).
pub async fn get(app: &App, buyer: &AgentRow, request: GetPurchase) -> Result<BuyerPurchase> {
    let purchase = find(app, &request.purchase_id).await?;
    if purchase.buyer_id.as_deref() != Some(buyer.id.as_str()) {
        return Err(Error::Forbidden {
            code: "NOT_BUYER",
            message: "only the buyer's key reads a purchase".into(),
        });
    }
    read_as_buyer(app, purchase).await
}

/// `GET /api/marketplace/purchases/{id}` with `purchase_token` (or `X-Purchase-Token`) instead
/// of a key: the buyer of an x402 purchase, anonymous or not, reads it with its token.
///
/// # Errors
/// `NOT_FOUND`, `NOT_BUYER` (403) when the token is not this purchase's.
pub async fn get_with_token(app: &App, request: GetPurchase, token: &str) -> Result<BuyerPurchase> {
    let purchase = find(app, &request.purchase_id).await?;
    let matches = Rail::from_name(&purchase.rail) == Some(Rail::Wallet)
        && purchase
            .checkout_session
            .as_deref()
            .is_some_and(|session| crate::service::constant_time_eq(session, token));
    if !matches {
        return Err(Error::Forbidden {
            code: "NOT_BUYER",
            message: "this purchase token is not the purchase's (tokens come with x402 purchases)"
                .into(),
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

/// The Purchase resource as its buyer reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuyerPurchase {
    pub id: String,
    pub listing_id: String,
    pub buyer_handle: Option<String>,
    pub status: String,
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub seller_net_cents: i64,
    pub fee_bps: i64,
    pub schedule_version: i64,
    pub rail: String,
    /// Where the buyer pays, while the purchase is `pending_payment`.
    pub checkout_url: Option<String>,
    pub expires_at: Option<String>,
    pub shipped_at: Option<String>,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub delivered_at: Option<String>,
    /// The signed purchase receipt as stored (`null` if it does not parse).
    pub receipt: Value,
    /// The deliverable, relayed live once the purchase is paid.
    pub delivery: Option<Delivery>,
    /// Why the deliverable could not be relayed this time.
    pub delivery_error: Option<String>,
    /// The refund of a payment that came after the checkout ended.
    pub refund: Option<RefundView>,
    /// The read capability of a purchase the wallet rail just sold (only in its answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purchase_token: Option<String>,
    /// The wallet rail's settled payment (only in the answer of its sale).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment: Option<x402::Payment>,
    /// The single-use page where the agent's owner approves or denies a purchase above the
    /// approval threshold (only in the 202 answer that opens it in `pending_approval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_url: Option<String>,
}

/// A relayed deliverable: JSON as JSON, text as text, else base64.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub content_type: String,
    /// `json`, `utf-8` or `base64`.
    pub encoding: &'static str,
    /// The seller's content, which is not bourse's to shape.
    pub content: Value,
    pub fingerprint: String,
    pub bytes: usize,
}

/// Where the refund of a late payment stands.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundView {
    pub status: String,
    pub amount_cents: i64,
    pub payment_ref: String,
    pub refund_ref: Option<String>,
    pub created_at: String,
    pub refunded_at: Option<String>,
}

/// The Purchase resource for its buyer: relays the deliverable when the purchase is paid.
async fn read_as_buyer(app: &App, purchase: PurchaseRow) -> Result<BuyerPurchase> {
    shown(app, purchase, true).await
}

/// The buyer's purchase `id` as recorded, without relaying its deliverable (a list shows many;
/// [`get`] relays one), or `None`. Whose it is, is the caller's to check.
///
/// # Errors
/// Database failure.
pub async fn recorded(app: &App, id: &str) -> Result<Option<BuyerPurchase>> {
    let key = id.to_owned();
    match app.store.read(move |conn| store::find(conn, &key)).await? {
        Some(row) => Ok(Some(shown(app, row, false).await?)),
        None => Ok(None),
    }
}

/// The Purchase as its buyer sees it; when `live`, the deliverable fetched and relayed (and a
/// lapsed checkout recorded as expired), else the record alone (a list shows many).
async fn shown(app: &App, mut purchase: PurchaseRow, live: bool) -> Result<BuyerPurchase> {
    let mut delivery = None;
    let mut delivery_error = None;
    if (purchase.status == "pending_payment" || purchase.status == "pending_approval")
        && purchase
            .expires_at
            .as_deref()
            .is_some_and(|at| at <= app.now().as_str())
    {
        if live {
            let now = app.now();
            app.store
                .write(move |tx| {
                    payment_store::expire_checkouts(tx, &now)?;
                    super::approvals::expire_due(tx, &now)
                })
                .await?;
        }
        purchase.status = "expired".into();
    }
    if live && (purchase.status == "paid" || purchase.status == "delivered") {
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
                delivery = Some(delivery_of(deliverable, fingerprint));
            }
            Err(error) => delivery_error = Some(error.to_string()),
        }
    }
    // A payment that arrived after the checkout ended, for a listing sold meanwhile, is given
    // back: the buyer sees where that stands.
    let refund = if purchase.status == "expired" || purchase.status == "cancelled" {
        let id = purchase.id.clone();
        app.store
            .read(move |conn| payment_store::refund_of(conn, &id))
            .await?
            .map(|r| RefundView {
                status: r.status,
                amount_cents: r.amount_cents,
                payment_ref: r.payment_ref,
                refund_ref: r.refund_ref,
                created_at: r.created_at,
                refunded_at: r.refunded_at,
            })
    } else {
        None
    };
    let receipt: Value = serde_json::from_str(&purchase.receipt).unwrap_or(Value::Null);
    let checkout_url = (purchase.status == "pending_payment")
        .then(|| checkout::pay_url(app, &purchase))
        .flatten();
    Ok(BuyerPurchase {
        id: purchase.id,
        listing_id: purchase.listing_id,
        buyer_handle: purchase.buyer_handle,
        status: purchase.status,
        amount_cents: purchase.amount_cents,
        platform_fee_cents: purchase.platform_fee_cents,
        seller_net_cents: purchase.seller_net_cents,
        fee_bps: purchase.fee_bps,
        schedule_version: purchase.schedule_version,
        rail: purchase.rail,
        checkout_url,
        expires_at: purchase.expires_at,
        shipped_at: purchase.shipped_at,
        created_at: purchase.created_at,
        paid_at: purchase.paid_at,
        delivered_at: purchase.delivered_at,
        receipt,
        delivery,
        delivery_error,
        refund,
        purchase_token: None,
        payment: None,
        approval_url: None,
    })
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

/// `{contentType, encoding, content, fingerprint, bytes}`: JSON as JSON, text as text, else
/// base64.
fn delivery_of(deliverable: Deliverable, fingerprint: String) -> Delivery {
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
    Delivery {
        bytes: deliverable.bytes.len(),
        content_type: deliverable.content_type,
        encoding,
        content,
        fingerprint,
    }
}

/// The buyer's intended use and attestation; then, for a listing with a consent record, the
/// use must be one the seller authorized (reference samples hold synthetic data and have none).
fn check_health_terms(
    intended: Option<String>,
    attestation: Option<&Value>,
    authorized_uses: Option<&str>,
) -> Result<()> {
    let refuse = |message: String| Error::Unprocessable {
        code: "HEALTH_TERMS_REQUIRED",
        message,
    };
    if !intended
        .as_deref()
        .is_some_and(|use_| INTENDED_USES.contains(&use_))
    {
        return Err(refuse(format!(
            "personal health data needs `buyer_intended_use`, one of {}",
            INTENDED_USES.join(", ")
        )));
    }
    let attestation = attestation.and_then(Value::as_object);
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
        (Some(authorized), Some(intended)) => {
            crate::service::catalog::health::check_use(Some(authorized), &intended)
        }
        _ => Ok(()),
    }
}

/// `POST /api/marketplace/listings/{id}/rate` {purchase_id, rating, comment}: only the buyer of a
/// delivered purchase of this listing, once per purchase. Answers a signed attestation that a
/// paying buyer left the rating; ratings are shown without the buyer.
///
/// # Errors
/// `INVALID_ARGUMENT`, `NOT_FOUND`, `NOT_BUYER` (403), `NOT_DELIVERED` (409), `ALREADY_RATED` (409).
pub async fn rate(app: &App, buyer: &AgentRow, request: Rate) -> Result<Rated> {
    let Rate {
        listing_id,
        purchase_id,
        rating,
        comment,
    } = request;
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
    let text = Value::Object(attestation.clone()).to_string();
    let seller_id = purchase.seller_id.clone();
    let (seller_rows, index) = app
        .store
        .write(move |tx| {
            if store::is_rated(tx, &purchase.id)? {
                return Err(Error::Conflict {
                    code: "ALREADY_RATED",
                    message: "this purchase has already been rated".into(),
                });
            }
            let index = store::insert_rating(
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
            Ok((refresh_reputation(tx, &purchase.seller_id)?, index))
        })
        .await?;
    // The seller's cached row carries its rating count.
    crate::service::identity::agents::forget(app, &seller_id);
    app.browse.upsert_rows(&seller_rows);
    Ok(Rated {
        rating: attestation,
        log: Some(crate::service::trust::log::LogRef::at(index)),
    })
}

/// The answer of a rating: `{rating}`, the signed attestation that a paying buyer left it.
#[derive(Debug, Serialize)]
pub struct Rated {
    /// The signed `bourse.rating.attestation` document.
    pub rating: Map<String, Value>,
    /// Where the attestation sits in the transparency log (beside it, never inside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<crate::service::trust::log::LogRef>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn keys(value: &impl Serialize) -> Vec<String> {
        match serde_json::to_value(value).unwrap() {
            Value::Object(map) => map.keys().cloned().collect(),
            other => panic!("not an object: {other}"),
        }
    }

    fn purchase() -> BuyerPurchase {
        BuyerPurchase {
            id: "P".into(),
            listing_id: "L".into(),
            buyer_handle: None,
            status: "paid".into(),
            amount_cents: 500,
            platform_fee_cents: 0,
            seller_net_cents: 500,
            fee_bps: 0,
            schedule_version: 1,
            rail: "x402_usdc_base".into(),
            checkout_url: None,
            expires_at: None,
            shipped_at: None,
            created_at: "t".into(),
            paid_at: None,
            delivered_at: None,
            receipt: Value::Null,
            delivery: None,
            delivery_error: None,
            refund: None,
            purchase_token: None,
            payment: None,
            approval_url: None,
        }
    }

    /// The Purchase's members and their order are the wire's: nulls stay, and the wallet
    /// rail's two members come last, only in the answer of its sale.
    #[test]
    fn the_purchase_keeps_its_members_in_order() {
        let members = [
            "id",
            "listingId",
            "buyerHandle",
            "status",
            "amountCents",
            "platformFeeCents",
            "sellerNetCents",
            "feeBps",
            "scheduleVersion",
            "rail",
            "checkoutUrl",
            "expiresAt",
            "shippedAt",
            "createdAt",
            "paidAt",
            "deliveredAt",
            "receipt",
            "delivery",
            "deliveryError",
            "refund",
        ];
        assert_eq!(keys(&purchase()), members);
        let sold = BuyerPurchase {
            purchase_token: Some("x402_t".into()),
            payment: Some(x402::Payment {
                transaction: "0x1".into(),
                network: "eip155:8453".into(),
                payer: None,
            }),
            ..purchase()
        };
        let value = serde_json::to_value(&sold).unwrap();
        assert_eq!(keys(&sold)[members.len()..], ["purchaseToken", "payment"]);
        assert_eq!(
            value["payment"],
            json!({"transaction": "0x1", "network": "eip155:8453", "payer": null})
        );
    }

    #[test]
    fn a_delivery_is_json_text_or_base64() {
        let of = |bytes: &[u8], content_type: &str| {
            let deliverable = Deliverable {
                bytes: bytes.to_vec(),
                content_type: content_type.into(),
            };
            serde_json::to_value(delivery_of(deliverable, "sha256:x".into())).unwrap()
        };
        assert_eq!(
            of(br#"{"a":1}"#, "application/json; charset=utf-8"),
            json!({"contentType": "application/json; charset=utf-8", "encoding": "json", "content": {"a": 1}, "fingerprint": "sha256:x", "bytes": 7})
        );
        assert_eq!(of(b"hi", "text/plain")["content"], "hi");
        assert_eq!(of(b"hi", "text/plain")["encoding"], "utf-8");
        assert_eq!(of(b"{", "application/json")["encoding"], "base64");
        assert_eq!(
            keys(&delivery_of(
                Deliverable {
                    bytes: vec![0xff],
                    content_type: "application/octet-stream".into()
                },
                String::new()
            )),
            ["contentType", "encoding", "content", "fingerprint", "bytes"]
        );
    }
}
