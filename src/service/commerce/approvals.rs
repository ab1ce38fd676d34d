//! The owner's approval page of a purchase above its buyer's approval threshold and its
//! decision (the rules: `spending::approvals`). The page's form carries an anti-forgery token
//! derived from the capability ([`App::form_token`]); a decision is single use.

use jiff::SignedDuration;
use serde::Serialize;

use crate::clock::rfc3339_after;
use crate::error::{Error, Result};
use crate::service::{App, commerce::checkout, constant_time_eq, hash_secret};
use crate::store::approvals as store;
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
    let now = app.now();
    let pay_by = rfc3339_after(
        app.clock.now(),
        SignedDuration::try_from(checkout::checkout_window(app)).unwrap_or(SignedDuration::MAX),
    );
    app.store
        .write(move |tx| {
            store::find(tx, &hash)?.ok_or_else(|| Error::NotFound("no such approval".into()))?;
            store::decide(tx, &hash, approve, &now, &pay_by)?;
            Ok(())
        })
        .await?;
    view(app, capability).await
}
