//! Checkout: the one layer that chooses a rail and calls it. A purchase request is served on
//! the rail [`choose_rail`] picks (the instance's card rail, [`App::card_rail`], or x402);
//! [`buy`] opens the purchase on it, seller onboarding goes to the card rail's
//! ([`register_seller`]), and the commerce worker's money movements run on the card rail that
//! makes them ([`move_money`]). Below this layer the rails (`sandbox`, `stripe`, `x402`) know
//! nothing of one another, and report payments through `settlement` only.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::request::commerce::{BecomeSeller, Purchase, RailChoice};
use crate::service::commerce::settlement::{self, Sale};
use crate::service::rail::Rail;
use crate::service::{
    App, commerce::rails::sandbox, commerce::rails::stripe, commerce::rails::x402,
};
use crate::store::agents::AgentRow;
use crate::store::listings::ListingRow;
use crate::store::purchases::PurchaseRow;

/// Picks the rail of a purchase request: `rail` when named (`x402_usdc_base`, or `checkout` /
/// `card` for the instance's card rail); a payment header means x402; a request without a key
/// goes to x402 when it is configured (the payment is the credential), else to the card rail
/// (which answers 401).
///
/// # Errors
/// `INVALID_ARGUMENT` for a payment header with another rail named; `RAIL_UNAVAILABLE` (409)
/// when x402 is asked for and not configured.
pub fn choose_rail(app: &App, has_key: bool, request: &Purchase) -> Result<Rail> {
    let wallet = || app.x402.is_some().then_some(Rail::Wallet);
    match (request.rail, request.payment.is_some()) {
        (Some(RailChoice::Card), true) => Err(Error::invalid(format!(
            "a PAYMENT-SIGNATURE or X-PAYMENT header pays on the `{}` rail; drop it or the `rail` field",
            Rail::Wallet.name()
        ))),
        (Some(RailChoice::Wallet), _) | (None, true) => {
            wallet().ok_or_else(x402::wire::rail_unavailable)
        }
        (None, false) if !has_key => Ok(wallet().unwrap_or(app.card_rail())),
        (Some(RailChoice::Card) | None, false) => Ok(app.card_rail()),
    }
}

/// The buyer withdraws a purchase whose checkout is still open (the A2A face's `CancelTask`):
/// the reservation ends as `cancelled`, as the sandbox's cancel button ends it. A payment that
/// arrives afterwards is refunded like any payment after its checkout ended. Whether the
/// purchase is the buyer's is the caller's to check first.
///
/// # Errors
/// `CHECKOUT_CLOSED` (409) when it is no longer waiting for payment; database failure.
pub async fn cancel_purchase(app: &App, buyer: &AgentRow, purchase_id: &str) -> Result<()> {
    let (id, buyer_id) = (purchase_id.to_owned(), buyer.id.clone());
    let ended = app
        .store
        .write(move |tx| {
            let owned = crate::store::purchases::find(tx, &id)?
                .is_some_and(|p| p.buyer_id.as_deref() == Some(buyer_id.as_str()));
            Ok(owned && crate::store::payments::end_checkout(tx, &id, "cancelled")?)
        })
        .await?;
    if ended {
        Ok(())
    } else {
        Err(Error::Conflict {
            code: "CHECKOUT_CLOSED",
            message: "this purchase is no longer waiting for payment".into(),
        })
    }
}

/// What a sale came to.
pub enum Bought {
    /// A purchase made (free, paid) or opened (a reservation waiting for its checkout), with
    /// what the wallet rail adds to the Purchase it answers and the rail's response headers.
    Purchase {
        purchase: Box<PurchaseRow>,
        paid: Option<x402::Paid>,
        headers: Vec<(&'static str, String)>,
        /// The owner's approval page of a purchase opened in `pending_approval`.
        approval_url: Option<String>,
    },
    /// The rail refuses in its own words.
    Refused(Refusal),
}

/// A rail's own answer to a purchase request, in its protocol's words (x402: a 402 challenge
/// or a refused payment, with its headers).
#[derive(Debug)]
pub struct Refusal {
    pub status: u16,
    /// The protocol's body, which is not bourse's to shape.
    pub body: Value,
    /// Response headers, lower case.
    pub headers: Vec<(&'static str, String)>,
}

/// Makes a sale on its rail: x402 takes a paid listing's payment at once; on the card rail a
/// paid listing is reserved and its checkout opened (the sandbox names its own session, Stripe
/// opens a Checkout Session); a free listing is bought at once. The sale's rail is settled
/// here: a free listing is bought on [`Rail::Free`] whatever was chosen, a paid one on the
/// wallet rail or else on the instance's card rail.
///
/// # Errors
/// `LISTING_UNAVAILABLE` / `PAYOUTS_NOT_CONNECTED` (409), `PRICE_OUT_OF_RANGE_FOR_RAIL`
/// (422), the rail's own failures (Stripe and x402 502s, x402 400 and 409).
pub async fn buy(app: &App, mut sale: Sale<'_>) -> Result<Bought> {
    let paid = sale.listing.price_cents > 0;
    if paid && sale.rail == Rail::Wallet {
        return Ok(match x402::sell(app, &sale).await? {
            x402::Outcome::Refused(challenge) => Bought::Refused(Refusal {
                status: 402,
                body: challenge.body,
                headers: challenge.headers,
            }),
            x402::Outcome::Sold {
                purchase,
                paid,
                headers,
            } => Bought::Purchase {
                purchase,
                paid: Some(paid),
                headers,
                approval_url: None,
            },
        });
    }
    sale.rail = if paid { app.card_rail() } else { Rail::Free };
    if sale.rail == Rail::Card {
        stripe::client::check_amount(sale.listing.price_cents)?;
    }
    // The sandbox names its own sessions; Stripe's session id is stored once it is created.
    let session = (sale.rail == Rail::Sandbox).then(sandbox::new_session);
    let (mut purchase, approval_url) =
        settlement::open(app, &sale, checkout_window(app), session).await?;
    if purchase.status == "pending_payment" && sale.rail == Rail::Card {
        let (session, url) = stripe::open_checkout(app, &purchase, &sale.listing.title).await?;
        purchase.checkout_session = Some(session);
        purchase.checkout_url = Some(url);
    }
    Ok(Bought::Purchase {
        purchase: Box::new(purchase),
        paid: None,
        headers: Vec::new(),
        approval_url,
    })
}

/// Whether [`open_approved`] opens a checkout for this just approved purchase (Stripe).
pub fn opens_after_approval(purchase: &PurchaseRow) -> bool {
    purchase.status == "pending_payment" && purchase.rail == Rail::Card.name()
}

/// An approved purchase (now `pending_payment`) goes on as one under its buyer's approval
/// threshold would: on Stripe its Checkout Session is opened now, by the same call an ungated
/// card purchase makes (a refusal there cancels the reservation, as it does for an ungated one;
/// the owner's decision stands either way). The sandbox named its session when the purchase
/// opened, so there is nothing to do on it. `title` is the listing's, as the deciding
/// transaction read it.
pub async fn open_approved(app: &App, purchase: &PurchaseRow, title: &str) {
    if !opens_after_approval(purchase) {
        return;
    }
    if let Err(error) = stripe::open_checkout(app, purchase, title).await {
        tracing::warn!(%error, purchase = %purchase.id, "checkout of an approved purchase");
    }
}

/// How long a checkout stays open. Stripe accepts a session expiry from 30 minutes to 24 hours
/// after creation, and its session must end before the local reservation does, so on that rail
/// the window is kept within 35 minutes (a margin for clock skew and latency) and 24 hours.
pub fn checkout_window(app: &App) -> Duration {
    match app.card_rail() {
        Rail::Card => app
            .checkout_expiry
            .clamp(Duration::from_secs(35 * 60), Duration::from_secs(24 * 3600)),
        Rail::Sandbox | Rail::Free | Rail::Wallet => app.checkout_expiry,
    }
}

/// What the x402 402 of a purchase of `listing` at `resource` offers, for discovery; `None`
/// when the wallet rail is not configured or the listing is free.
///
/// # Errors
/// `Internal` for a price that overflows USDC units.
pub fn x402_advert(
    app: &App,
    listing: &ListingRow,
    resource: String,
) -> Result<Option<x402::Advert>> {
    x402::advertise(app, listing, resource)
}

/// Where the buyer of a pending purchase pays: the page the rail made (Stripe), else the
/// sandbox checkout page of its session.
pub fn pay_url(app: &App, purchase: &PurchaseRow) -> Option<String> {
    purchase.checkout_url.clone().or_else(|| {
        purchase
            .checkout_session
            .as_deref()
            .map(|session| sandbox::checkout_url(app, session))
    })
}

/// `POST /api/sell/register`: the payout onboarding link and status on the instance's card
/// rail.
///
/// # Errors
/// `INVALID_ARGUMENT` for an `email` that is not an address (on every rail, as everywhere an
/// email is taken); database failure; on the Stripe rail, `STRIPE_ERROR` /
/// `STRIPE_UNAVAILABLE` (502).
pub async fn register_seller(
    app: &App,
    agent: &AgentRow,
    mut request: BecomeSeller,
) -> Result<Onboarding> {
    request.email = request
        .email
        .map(crate::service::identity::agents::check_email)
        .transpose()?;
    Ok(match app.card_rail() {
        Rail::Card => Onboarding::Stripe(stripe::register_seller(app, agent, request).await?),
        // The sandbox's onboarding is one button: nothing to start it with.
        Rail::Sandbox => Onboarding::Sandbox(sandbox::register_seller(app, agent).await?),
        rail @ (Rail::Free | Rail::Wallet) => {
            return Err(Error::Internal(format!(
                "{} is not a card rail",
                rail.name()
            )));
        }
    })
}

/// Payout onboarding as the card rail answers it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Onboarding {
    Sandbox(sandbox::Onboarding),
    Stripe(stripe::Onboarding),
}

/// The commerce worker's money part: on an instance whose card rail moves money (Stripe), runs
/// forever, making every second the refunds and transfers that are due; on the others it
/// returns at once (their held rows are released in place by the worker's local part).
pub async fn move_money(app: &App) {
    if !app.card_rail().moves_money() {
        return;
    }
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let _pass = app.worker_passes.stripe.begin();
        stripe::money::move_money(app).await;
    }
}
