//! The sandbox rail (`--payments sandbox`): no accounts, no network. Onboarding and checkout
//! are local pages (`/sandbox/connect/{id}`, `/sandbox/checkout/{session}`, in `crate::pages`)
//! with scripted twins under `/api/sandbox/…`, so CI needs no browser. A checkout session
//! reserves the listing until it is paid (the Pay button reports the payment through
//! [`settlement`]), cancelled or expired.

use serde::Serialize;

use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::service::App;
use crate::service::commerce::rails::new_onboarding_id;
use crate::service::commerce::settlement::{self, PaymentReport, Reservation};
use crate::service::rail::Rail;
use crate::store::agents::AgentRow;
use crate::store::listings as listing_store;
use crate::store::payments::{self as store, AccountKey};
use crate::store::purchases as purchase_store;

/// `POST /api/sell/register` on the sandbox rail: the onboarding page and its scripted twin.
///
/// # Errors
/// Database failure.
pub async fn register_seller(app: &App, agent: &AgentRow) -> Result<Onboarding> {
    let rail = Rail::Sandbox.account_name().unwrap_or_default();
    let (agent_id, now) = (agent.id.clone(), app.now());
    let fresh = new_onboarding_id();
    let account = app
        .store
        .write(move |tx| store::open_account(tx, &agent_id, &fresh, rail, None, &now))
        .await?;
    let id = &account.onboarding_id;
    Ok(Onboarding {
        rail,
        status: account.status.clone(),
        onboarding_url: app.url(&format!("/sandbox/connect/{id}")),
        complete_url: app.url(&format!("/api/sandbox/connect/{id}/complete")),
        note: "open onboardingUrl to connect payouts (sandbox: one click, or POST completeUrl)",
    })
}

/// The sandbox's payout onboarding: its page and the page button's scripted twin.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Onboarding {
    /// `sandbox`.
    pub rail: &'static str,
    /// `pending` or `complete`.
    pub status: String,
    pub onboarding_url: String,
    pub complete_url: String,
    pub note: &'static str,
}

/// An onboarding completed (the page's button or its scripted twin).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Onboarded {
    /// `complete`.
    pub status: &'static str,
}

/// A checkout paid.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Paid {
    pub purchase_id: String,
    /// `paid` (or `delivered`, for a checkout paid before).
    pub status: String,
    pub paid_at: Option<String>,
}

/// A checkout cancelled (or found already ended).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cancelled {
    pub purchase_id: String,
    /// `cancelled` or `expired`.
    pub status: String,
}

/// `POST /api/sandbox/connect/{id}/complete` (and the onboarding page's button).
///
/// # Errors
/// `NOT_FOUND` for an unknown onboarding id.
pub async fn complete_onboarding(app: &App, onboarding_id: &str) -> Result<Onboarded> {
    let (id, now) = (onboarding_id.to_owned(), app.now());
    let changed = app
        .store
        .write(move |tx| store::set_account_status(tx, AccountKey::Onboarding(&id), true, &now))
        .await?;
    if changed == 0 {
        return Err(Error::NotFound("no such onboarding session".into()));
    }
    Ok(Onboarded { status: "complete" })
}

/// A new checkout session id (the unguessable capability of the checkout page).
pub fn new_session() -> String {
    format!("cs_{}", b64url(&random_bytes::<24>()))
}

/// The URL a buyer opens to pay.
pub fn checkout_url(app: &App, session: &str) -> String {
    app.url(&format!("/sandbox/checkout/{session}"))
}

/// `POST /api/sandbox/checkout/{session}/pay` (and the checkout page's Pay button).
///
/// # Errors
/// `NOT_FOUND`, `CHECKOUT_CLOSED` (409) when cancelled or expired.
pub async fn pay(app: &App, session: &str) -> Result<Paid> {
    let (keyring, now) = (app.keyring.clone(), app.now());
    let report = PaymentReport {
        reservation: Reservation::Session(session.to_owned()),
        payment_ref: None,
        payer: None,
        token: None,
        taken: false,
    };
    let (purchase, settled) = app
        .store
        .write(move |tx| settlement::record_payment(tx, &keyring, &now, report))
        .await?;
    settlement::publish(app, settled);
    Ok(Paid {
        purchase_id: purchase.id,
        status: purchase.status,
        paid_at: purchase.paid_at,
    })
}

/// `POST /api/sandbox/checkout/{session}/cancel`: frees the reservation.
///
/// # Errors
/// `NOT_FOUND`, `CHECKOUT_CLOSED` (409) when already paid.
pub async fn cancel(app: &App, session: &str) -> Result<Cancelled> {
    let key = session.to_owned();
    app.store
        .write(move |tx| {
            let purchase = purchase_store::find_by_session(tx, &key)?
                .ok_or_else(|| Error::NotFound("no such checkout".into()))?;
            match purchase.status.as_str() {
                "pending_payment" => {
                    store::end_checkout(tx, &purchase.id, "cancelled")?;
                    Ok(Cancelled {
                        purchase_id: purchase.id,
                        status: "cancelled".into(),
                    })
                }
                "cancelled" | "expired" => Ok(Cancelled {
                    purchase_id: purchase.id,
                    status: purchase.status,
                }),
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
pub async fn checkout_view(app: &App, session: &str) -> Result<CheckoutView> {
    let key = session.to_owned();
    let (purchase, listing) = app
        .store
        .read(move |tx| {
            let purchase = purchase_store::find_by_session(tx, &key)?
                .ok_or_else(|| Error::NotFound("no such checkout".into()))?;
            let listing = listing_store::find(tx, &purchase.listing_id)?;
            Ok((purchase, listing))
        })
        .await?;
    Ok(CheckoutView {
        status: purchase.status,
        amount_cents: purchase.amount_cents,
        expires_at: purchase.expires_at,
        seller_code: listing.as_ref().map(|l| l.seller_code.clone()),
        title: listing.map(|l| l.title),
    })
}

/// What the sandbox checkout page shows of its session.
#[derive(Debug)]
pub struct CheckoutView {
    /// The purchase's status.
    pub status: String,
    pub amount_cents: i64,
    pub expires_at: Option<String>,
    /// The listing's seller and title (`None` if the listing is gone).
    pub seller_code: Option<String>,
    pub title: Option<String>,
}

/// Whether the sandbox onboarding page's payouts are connected.
///
/// # Errors
/// `NOT_FOUND` for an unknown onboarding id.
pub async fn onboarding_complete(app: &App, onboarding_id: &str) -> Result<bool> {
    let id = onboarding_id.to_owned();
    let account = app
        .store
        .read(move |conn| store::account_by_onboarding(conn, &id))
        .await?
        .ok_or_else(|| Error::NotFound("no such onboarding session".into()))?;
    Ok(account.status == "complete")
}
