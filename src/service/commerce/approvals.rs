//! The owner's approval page of a purchase above its buyer's approval threshold and its
//! decision (the rules: `spending::approvals`). The page's form carries an anti-forgery token
//! derived from the capability ([`App::form_token`]); a decision is single use. Every decision
//! (approved, denied, expired) queues a signed `purchase.approval_decided` callback to the
//! buyer's callback URL in the transaction that records it ([`queue_decided`]); the callback
//! worker sends [`decided_event`].

use jiff::SignedDuration;
use serde::Serialize;

use crate::clock::{rfc3339, rfc3339_after};
use crate::error::{Error, Result};
use crate::service::commerce::{checkout, settlement};
use crate::service::{App, constant_time_eq, hash_secret};
use crate::store::approvals as store;
use crate::store::messages::{self as message_store, DeliveryRow};
use crate::store::payments as payment_store;
use crate::store::{agents as agent_store, listings as listing_store, purchases as purchase_store};

/// The purpose the approval form's anti-forgery token is derived for.
const FORM: &str = "approval";

/// The approval page as shown.
#[derive(Clone, Debug, Serialize)]
pub struct View {
    pub purchase_id: String,
    pub title: String,
    pub seller_code: String,
    pub buyer_handle: String,
    pub amount_cents: i64,
    pub rail: String,
    pub expires_at: String,
    /// `open`, `approved`, `denied` or `expired`.
    pub state: String,
    /// The form's anti-forgery token (while open).
    pub form_token: String,
}

/// The approval page of `capability`.
///
/// # Errors
/// `NOT_FOUND` for an unknown capability; database failure.
pub async fn view(app: &App, capability: &str) -> Result<View> {
    let (hash, now) = (hash_secret(capability), app.now());
    let form_token = app.form_token(FORM, capability);
    app.store
        .read(move |conn| {
            let approval = store::find(conn, &hash)?
                .ok_or_else(|| Error::NotFound("no such approval".into()))?;
            let purchase = purchase_store::find(conn, &approval.purchase_id)?
                .ok_or_else(|| Error::NotFound("no such approval".into()))?;
            let listing = listing_store::find(conn, &purchase.listing_id)?;
            let buyer = agent_store::find_by_id(conn, &approval.buyer_id)?;
            let state = match approval.decision.as_deref() {
                Some(decision) => decision.to_owned(),
                None if approval.expires_at.as_str() <= now.as_str() => "expired".to_owned(),
                None => "open".to_owned(),
            };
            Ok(View {
                purchase_id: purchase.id,
                title: listing
                    .as_ref()
                    .map(|l| l.title.clone())
                    .unwrap_or_default(),
                seller_code: listing.map(|l| l.seller_code).unwrap_or_default(),
                buyer_handle: buyer.map(|b| b.handle).unwrap_or_default(),
                amount_cents: purchase.amount_cents,
                rail: purchase.rail,
                expires_at: approval.expires_at,
                form_token: if state == "open" {
                    form_token
                } else {
                    String::new()
                },
                state,
            })
        })
        .await
}

/// The owner's decision on the approval page of `capability`, with the form's anti-forgery
/// `token`. Single use: a decided or expired approval is shown as it stands and nothing changes.
///
/// # Errors
/// `FORM_TOKEN_INVALID` (403) for a form without the page's token; `NOT_FOUND`; database
/// failure.
pub async fn decide(app: &App, capability: &str, approve: bool, token: &str) -> Result<View> {
    if !constant_time_eq(token, &app.form_token(FORM, capability)) {
        return Err(Error::Forbidden {
            code: "FORM_TOKEN_INVALID",
            message: "this form does not carry the approval page's anti-forgery token; open the approval link and use its buttons".into(),
        });
    }
    let hash = hash_secret(capability);
    let at = app.clock.now();
    let now = rfc3339(at);
    let pay_by = rfc3339_after(
        at,
        SignedDuration::try_from(checkout::checkout_window(app)).unwrap_or(SignedDuration::MAX),
    );
    let decided = app
        .store
        .write(move |tx| {
            let approval = store::find(tx, &hash)?
                .ok_or_else(|| Error::NotFound("no such approval".into()))?;
            // A purchase waiting for approval reserves nothing, so availability is judged again
            // here, before it becomes a reservation (docs/operations.md says why).
            let listing = match purchase_store::find(tx, &approval.purchase_id)? {
                Some(purchase) => listing_store::find(tx, &purchase.listing_id)?,
                None => None,
            };
            let available = match &listing {
                Some(listing) => settlement::available(tx, listing, &now)?,
                None => false,
            };
            if !store::decide(tx, &hash, approve, &now, &pay_by)? {
                return Ok(None);
            }
            if approve && !available {
                // Approved, but sold out or withdrawn meanwhile: nothing was charged, and the
                // purchase ends as a checkout the buyer cancelled would.
                payment_store::end_checkout(tx, &approval.purchase_id, "cancelled")?;
            }
            let Some(purchase) = purchase_store::find(tx, &approval.purchase_id)? else {
                return Ok(None);
            };
            // On Stripe the callback waits for the Checkout Session (opened below, outside the
            // transaction) so that it can name where to pay; should that never finish, it goes
            // anyway after HOLD.
            let due = if checkout::opens_after_approval(&purchase) {
                rfc3339_after(at, HOLD)
            } else {
                now.clone()
            };
            let delivery = queue_decided(tx, &approval.purchase_id, &due, &now)?;
            let title = listing.map(|listing| listing.title).unwrap_or_default();
            Ok(Some((purchase, delivery, title)))
        })
        .await?;
    if let Some((purchase, delivery, title)) = decided {
        checkout::open_approved(app, &purchase, &title).await;
        if let Some(id) = delivery {
            let now = app.now();
            app.store
                .write(move |tx| message_store::bring_forward(tx, &id, &now))
                .await?;
        }
        app.callbacks_due.notify_one();
    }
    view(app, capability).await
}

/// The longest a decided approval's callback waits for its Stripe Checkout Session.
const HOLD: SignedDuration = SignedDuration::from_secs(60);

/// The event name of a decided approval's callback.
pub const APPROVAL_DECIDED: &str = "purchase.approval_decided";

/// Marks the approvals undecided past their expiry expired, with their purchases, and queues
/// their callbacks (the commerce worker and purchase reads, by the injected clock); returns how
/// many.
///
/// # Errors
/// Database failure.
pub fn expire_due(tx: &rusqlite::Connection, now: &str) -> Result<usize> {
    let expired = crate::service::spending::approvals::expire_due(tx, now)?;
    for purchase_id in &expired {
        queue_decided(tx, purchase_id, now, now)?;
    }
    Ok(expired.len())
}

/// Queues the `purchase.approval_decided` callback of the just decided approval of
/// `purchase_id` to its buyer's callback URL, due at `due`, when the buyer has one (in the
/// deciding transaction, so it survives a restart; the messaging callback worker sends it);
/// returns the delivery's id.
///
/// # Errors
/// Database failure.
pub fn queue_decided(
    tx: &rusqlite::Connection,
    purchase_id: &str,
    due: &str,
    now: &str,
) -> Result<Option<String>> {
    let Some(approval) = store::of_purchase(tx, purchase_id)? else {
        return Ok(None);
    };
    let Some(url) =
        agent_store::find_by_id(tx, &approval.buyer_id)?.and_then(|buyer| buyer.callback_url)
    else {
        return Ok(None);
    };
    let id = uuid::Uuid::new_v4().to_string();
    message_store::insert_delivery(
        tx,
        &DeliveryRow {
            id: id.clone(),
            agent_id: approval.buyer_id,
            event: APPROVAL_DECIDED.into(),
            message_id: None,
            purchase_id: Some(purchase_id.to_owned()),
            url,
            status: "pending".into(),
            attempts: 0,
            next_attempt_at: Some(due.to_owned()),
            last_error: None,
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
        },
    )?;
    Ok(Some(id))
}

/// The body of a `purchase.approval_decided` callback, before its signature.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecidedEvent {
    pub event: &'static str,
    pub purchase_id: String,
    /// `approved`, `denied` or `expired`.
    pub decision: String,
    /// The purchase's state as it stands when the callback is sent (after an approval,
    /// `pending_payment` until paid, or `cancelled` when the listing went meanwhile).
    pub status: String,
    pub decided_at: String,
    /// Where the buyer reads the purchase.
    pub purchase_url: String,
    /// Where to pay, while the purchase is `pending_payment`.
    pub pay_url: Option<String>,
}

/// The body of the `purchase.approval_decided` callback of `purchase_id`, as it stands now.
///
/// # Errors
/// `Internal` for a purchase or approval that is not there or not decided; database failure.
pub async fn decided_event(app: &App, purchase_id: &str) -> Result<DecidedEvent> {
    let id = purchase_id.to_owned();
    let (purchase, approval) = app
        .store
        .read(move |conn| {
            Ok((
                purchase_store::find(conn, &id)?,
                store::of_purchase(conn, &id)?,
            ))
        })
        .await?;
    let missing = || Error::Internal(format!("callback of an undecided purchase {purchase_id}"));
    let purchase = purchase.ok_or_else(missing)?;
    let (decision, decided_at) = approval
        .and_then(|a| a.decision.zip(a.decided_at))
        .ok_or_else(missing)?;
    let pay_url = (purchase.status == "pending_payment")
        .then(|| checkout::pay_url(app, &purchase))
        .flatten();
    Ok(DecidedEvent {
        event: APPROVAL_DECIDED,
        purchase_url: app.url(&format!("/api/marketplace/purchases/{}", purchase.id)),
        purchase_id: purchase.id,
        decision,
        status: purchase.status,
        decided_at,
        pay_url,
    })
}
