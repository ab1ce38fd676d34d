//! The autonomous rail `x402_usdc_base`: per-query USDC over HTTP 402.
//!
//! Order of a paid purchase on this rail (x402 "exact" on EVM):
//! 1. no payment header → 402: `PAYMENT-REQUIRED` (v2, base64 JSON) and a v1 JSON body;
//! 2. retry with `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1): decoded (400 when malformed) and
//!    matched to what we offer (402 when it differs);
//! 3. facilitator `/verify` (402 when invalid, 502 when it cannot be reached);
//! 4. the listing is reserved in the writer (availability, payouts, closing price) before any
//!    money moves;
//! 5. facilitator `/settle` (402 and the reservation freed when it fails);
//! 6. the purchase is marked paid and settled into the ledger (rail `wallet`, never founding
//!    fill), the deliverable is relayed, and the answer carries `PAYMENT-RESPONSE`.

pub mod bazaar;
pub mod wire;

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::X402Settings;
use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::service::commerce::rails::x402::wire::{
    ATOMIC_PER_CENT, MAX_TIMEOUT_SECONDS, NETWORKS, Offer, decode, facilitate, get_json,
    response_header, text_of, usdc,
};
use crate::service::commerce::settlement::{self, PaymentReport, Reservation, Sale};
use crate::service::rail::Rail;
use crate::service::{App, catalog::sellers};
use crate::store::listings::ListingRow;
use crate::store::payments as payment_store;
use crate::store::purchases::{self as store, PurchaseRow};

pub use crate::service::commerce::rails::x402::wire::Challenge;

/// Refuses settings the rail cannot use.
///
/// # Errors
/// A message naming the bad flag.
pub fn check_settings(settings: &X402Settings) -> Result<(), String> {
    let address = settings.pay_to.strip_prefix("0x").unwrap_or("");
    if address.len() != 40 || !address.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("--x402-pay-to must be an EVM address: 0x and 40 hex digits".into());
    }
    if usdc(&settings.network).is_none() {
        let known: Vec<&str> = NETWORKS.iter().map(|u| u.network).collect();
        return Err(format!(
            "--x402-network {} is not supported; use one of {}",
            settings.network,
            known.join(", ")
        ));
    }
    Ok(())
}

/// Prefix of the read capability an x402 buyer gets (`purchaseToken`).
pub const TOKEN_PREFIX: &str = "x402_";

/// How a sale on this rail ends.
pub enum Outcome {
    /// A 402: the challenge, or a payment the facilitator or the chain did not take.
    Refused(Challenge),
    /// Paid and settled into the ledger: the purchase, the payment as the Purchase shows it
    /// (with the purchase's read capability), and `PAYMENT-RESPONSE`.
    Sold {
        purchase: Box<PurchaseRow>,
        paid: Paid,
        headers: Vec<(&'static str, String)>,
    },
}

/// What the Purchase of a sale on this rail adds: its read capability and the payment.
#[derive(Debug)]
pub struct Paid {
    /// `purchaseToken`: reads the purchase without a key.
    pub token: String,
    pub payment: Payment,
}

/// The settled payment as the Purchase shows it (`payment`).
#[derive(Clone, Debug, Serialize)]
pub struct Payment {
    pub transaction: String,
    pub network: String,
    pub payer: Option<String>,
}

/// Sells a paid listing on the x402 rail, the request already checked (the buyer's own listing,
/// health terms). The sale's buyer is `None` for an anonymous buyer (the payment is the
/// credential).
///
/// # Errors
/// `LISTING_UNAVAILABLE` / `PAYOUTS_NOT_CONNECTED` / `PAYMENT_ALREADY_USED` (409),
/// `INVALID_PAYMENT` (400), `FACILITATOR_UNAVAILABLE` / `FACILITATOR_ERROR` (502). Challenges
/// and refused payments are 402 [`Challenge`]s.
pub async fn sell(app: &App, sale: &Sale<'_>) -> Result<Outcome> {
    let listing = &sale.listing;
    // Refuse what cannot be sold before anyone signs a payment (the listing is read again
    // inside the writer when it is reserved).
    let (stored, card, now) = (listing.clone(), app.card_rail(), app.now());
    app.store
        .read(move |conn| {
            if !settlement::available(conn, &stored, &now)? {
                return Err(settlement::unavailable());
            }
            sellers::require_payouts(conn, &stored.seller_id, card)
        })
        .await?;
    let offer = Offer::new(
        app,
        listing.price_cents,
        sale.resource.clone(),
        listing.title.clone(),
    )?
    .with_bazaar(bazaar::describe(listing));
    let Some(header) = &sale.payment else {
        return Ok(Outcome::Refused(offer.challenge(
            "payment required: sign one of `accepts` and retry with PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (x402 v1)",
        )));
    };
    let version = header.version();
    let payload = decode(header)?;
    if let Some(reason) = offer.mismatch(version, &payload) {
        return Ok(Outcome::Refused(offer.challenge(&reason)));
    }
    let exchange = json!({
        "x402Version": version,
        "paymentPayload": payload,
        "paymentRequirements": offer.requirements(version),
    });
    let verified = facilitate(app, "verify", exchange.clone(), "isValid").await?;
    if verified["isValid"] != Value::Bool(true) {
        let reason =
            text_of(&verified, "invalidReason").unwrap_or_else(|| "invalid_payload".into());
        let detail = text_of(&verified, "invalidMessage")
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        return Ok(Outcome::Refused(offer.challenge(&format!(
            "payment refused by the facilitator: {reason}{detail}"
        ))));
    }

    let reservation = reserve(app, sale).await?;
    let settled = match facilitate(app, "settle", exchange, "success").await {
        Ok(settled) => settled,
        Err(error) => {
            // The settlement's fate is unknown: the money may have moved. Keep the reservation
            // (it expires by itself) and tell the operator, who can check the chain.
            tracing::error!(purchase = reservation.id, %error, "x402 settle outcome unknown; reservation kept until it expires");
            return Err(Error::BadGateway {
                code: "FACILITATOR_UNAVAILABLE",
                message: format!(
                    "the facilitator did not confirm the settlement of purchase {}; its outcome is unknown, so do not pay again: if the transfer appears on chain, contact the operator with this purchase id",
                    reservation.id
                ),
            });
        }
    };
    let network = text_of(&settled, "network").unwrap_or_else(|| offer.network(version).into());
    let transaction = text_of(&settled, "transaction");
    let (true, Some(transaction)) = (settled["success"] == Value::Bool(true), transaction) else {
        release(app, &reservation.id).await?;
        let reason =
            text_of(&settled, "errorReason").unwrap_or_else(|| "unexpected_settle_error".into());
        let mut challenge = offer.challenge(&format!("payment not settled: {reason}"));
        let mut failure = json!({
            "success": false,
            "errorReason": reason,
            "network": network,
            "transaction": "",
        });
        if let Some(payer) = text_of(&settled, "payer") {
            failure["payer"] = payer.into();
        }
        challenge.headers.push(response_header(version, &failure));
        return Ok(Outcome::Refused(challenge));
    };
    let payer = text_of(&settled, "payer")
        .or_else(|| text_of(&verified, "payer"))
        .or_else(|| text_of(&payload["payload"]["authorization"], "from"));
    let sold = complete(app, reservation, transaction.clone(), payer.clone()).await?;
    let token = sold.checkout_session.clone().unwrap_or_default();
    let mut success = json!({ "success": true, "transaction": transaction, "network": network });
    success["payer"] = payer.clone().map_or(Value::Null, Value::from);
    Ok(Outcome::Sold {
        purchase: Box::new(sold),
        paid: Paid {
            token,
            payment: Payment {
                transaction,
                network,
                payer,
            },
        },
        headers: vec![response_header(version, &success)],
    })
}

/// A paid listing as this rail offers it, for discovery (`GET /discovery/*`): what its 402
/// would carry.
#[derive(Debug)]
pub struct Advert {
    /// The purchase URL.
    pub resource: String,
    /// The v2 `PaymentRequirements` of the 402's `accepts`.
    pub accepts: Vec<Value>,
    pub description: String,
    pub mime_type: &'static str,
    pub service_name: String,
    pub tags: Vec<String>,
    pub bazaar: bazaar::Extension,
}

/// What the 402 of a purchase of `listing` at `resource` offers; `None` when this rail is not
/// configured or the listing is free (x402 sells paid listings only).
///
/// # Errors
/// `Internal` for a price that overflows USDC units.
pub fn advertise(app: &App, listing: &ListingRow, resource: String) -> Result<Option<Advert>> {
    if app.x402.is_none() || listing.price_cents <= 0 {
        return Ok(None);
    }
    let described = bazaar::describe(listing);
    let offer = Offer::new(app, listing.price_cents, resource, listing.title.clone())?;
    Ok(Some(Advert {
        resource: offer.resource().to_owned(),
        accepts: vec![offer.requirements(2)],
        description: offer.description().to_owned(),
        mime_type: offer.mime_type(),
        service_name: described.service_name,
        tags: described.tags,
        bazaar: described.extension,
    }))
}

/// Reserves the listing for a verified payment: a `pending_payment` purchase on this rail,
/// checked in the writer like a checkout (one buyer wins the last copy).
async fn reserve(app: &App, sale: &Sale<'_>) -> Result<PurchaseRow> {
    let hold = Duration::from_secs(MAX_TIMEOUT_SECONDS + 60);
    // No capability while unpaid: nothing can pay or cancel this reservation but us.
    // x402 never waits for approval (spending::check refuses it there).
    Ok(settlement::open(app, sale, hold, None).await?.0)
}

/// Frees a reservation whose payment did not settle.
async fn release(app: &App, purchase_id: &str) -> Result<()> {
    let id = purchase_id.to_owned();
    app.store
        .write(move |tx| payment_store::end_checkout(tx, &id, "cancelled").map(|_| ()))
        .await
}

/// Marks a reservation paid by a settled transaction and settles the sale, unless the
/// transaction already paid for another purchase (409 `PAYMENT_ALREADY_USED`, reservation
/// freed).
async fn complete(
    app: &App,
    purchase: PurchaseRow,
    transaction: String,
    payer: Option<String>,
) -> Result<PurchaseRow> {
    let (keyring, now) = (app.keyring.clone(), app.now());
    let outcome = app
        .store
        .write(move |tx| {
            if store::find_by_payment_ref(tx, &transaction)?.is_some_and(|p| p.id != purchase.id) {
                payment_store::end_checkout(tx, &purchase.id, "cancelled")?;
                return Ok(None);
            }
            // The reservation is read fresh there: its hold may have run out while the payment
            // settled, and the money was taken all the same.
            let report = PaymentReport {
                reservation: Reservation::Purchase(purchase.id.clone()),
                payment_ref: Some(transaction.clone()),
                payer,
                token: Some(new_token()),
                taken: true,
            };
            match settlement::record_payment(tx, &keyring, &now, report) {
                Ok(paid) => Ok(Some(paid)),
                Err(Error::Conflict { code: "LISTING_UNAVAILABLE", .. }) => {
                    // The money moved but nothing can be sold: the operator refunds it.
                    tracing::error!(purchase = purchase.id, transaction, "x402 payment settled after its reservation expired and the listing was sold; refund it");
                    Err(Error::Conflict {
                        code: "LISTING_UNAVAILABLE",
                        message: format!(
                            "your payment settled (transaction {transaction}) after the reservation of purchase {} expired and the listing was sold meanwhile; contact the operator for a refund",
                            purchase.id
                        ),
                    })
                }
                Err(other) => Err(other),
            }
        })
        .await?;
    let Some((purchase, settled)) = outcome else {
        return Err(Error::Conflict {
            code: "PAYMENT_ALREADY_USED",
            message: "this payment's transaction already paid for another purchase".into(),
        });
    };
    settlement::publish(app, settled);
    Ok(purchase)
}

/// A fresh read capability for an x402 purchase (`purchaseToken`).
fn new_token() -> String {
    format!("{TOKEN_PREFIX}{}", b64url(&random_bytes::<24>()))
}

/// Asks the facilitator once, at start, which payment kinds it supports (`GET /supported`), and
/// warns the operator when this server's scheme and network are not among them: payments would
/// then fail at `/verify`. The answer is kept for `GET /api/operator/payments`; the rail serves
/// either way (a facilitator without `/supported` may still verify and settle).
pub async fn check_facilitator(app: std::sync::Arc<App>) {
    let Some(settings) = app.x402.clone() else {
        return;
    };
    let url = format!(
        "{}/supported",
        settings.facilitator_url.trim_end_matches('/')
    );
    let target = url.clone();
    let answer = tokio::task::spawn_blocking(move || get_json(&target))
        .await
        .unwrap_or_else(|e| Err(format!("task: {e}")));
    let v1_network = usdc(&settings.network).map_or("", |u| u.v1_network);
    let mut check = match answer {
        Ok((200, Some(body))) if body["kinds"].is_array() => {
            let mut versions: Vec<i64> = body["kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|kind| {
                    kind["scheme"] == "exact"
                        && (kind["network"] == settings.network.as_str()
                            || kind["network"] == v1_network)
                })
                .filter_map(|kind| kind["x402Version"].as_i64())
                .collect();
            versions.sort_unstable();
            versions.dedup();
            if versions.is_empty() {
                tracing::warn!(url, network = %settings.network, "the x402 facilitator does not list scheme `exact` on this network; payments will likely fail at /verify");
            } else {
                tracing::info!(url, ?versions, "the x402 facilitator supports this network");
            }
            json!({ "versions": versions, "error": null })
        }
        Ok((status, _)) => {
            tracing::warn!(
                url,
                status,
                "the x402 facilitator gave no usable /supported answer"
            );
            json!({ "versions": null, "error": format!("HTTP {status} without a `kinds` list") })
        }
        Err(error) => {
            tracing::warn!(url, %error, "the x402 facilitator could not be reached");
            json!({ "versions": null, "error": error })
        }
    };
    check["checkedAt"] = Value::String(app.now());
    let _ = app.x402_facilitator.set(check);
}

/// The `x402` member of `rails` in `GET /api/meta`.
pub fn meta(app: &App) -> Meta {
    let rail = Rail::Wallet.name();
    let Some(settings) = app.x402.as_ref() else {
        return Meta {
            rail,
            configured: false,
            terms: None,
        };
    };
    let token = usdc(&settings.network);
    Meta {
        rail,
        configured: true,
        terms: Some(Terms {
            network: settings.network.clone(),
            v1_network: token.map(|u| u.v1_network),
            asset: token.map(|u| u.asset),
            pay_to: settings.pay_to.clone(),
            scheme: "exact",
            atomic_units_per_cent: ATOMIC_PER_CENT,
            founding_fill: false,
        }),
    }
}

/// The x402 rail as `GET /api/meta` describes it: its name and whether it is configured, then
/// its terms when it is.
#[derive(Debug, Serialize)]
pub struct Meta {
    pub rail: &'static str,
    pub configured: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub terms: Option<Terms>,
}

/// What a configured x402 rail asks to be paid with.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Terms {
    /// CAIP-2 id (x402 v2).
    pub network: String,
    /// The network's name in x402 v1.
    pub v1_network: Option<&'static str>,
    /// The USDC contract.
    pub asset: Option<&'static str>,
    pub pay_to: String,
    pub scheme: &'static str,
    pub atomic_units_per_cent: i64,
    /// Never: an x402 sale counts as commerce but never claims founding fill.
    pub founding_fill: bool,
}

/// The `autonomous` line of `rails` in `GET /api/meta`.
pub fn meta_summary(app: &App) -> String {
    match app.x402.as_ref() {
        None => format!("{} (not configured on this instance)", Rail::Wallet.name()),
        Some(settings) => format!(
            "{} (USDC on {}, paid to {}; a paid purchase without a key answers 402)",
            Rail::Wallet.name(),
            settings.network,
            settings.pay_to
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rails.x402` of `GET /api/meta` keeps its two shapes.
    #[test]
    fn meta_has_terms_only_when_configured() {
        let off = Meta {
            rail: Rail::Wallet.name(),
            configured: false,
            terms: None,
        };
        assert_eq!(
            serde_json::to_value(&off).unwrap(),
            json!({"rail": "x402_usdc_base", "configured": false})
        );
        let on = Meta {
            terms: Some(Terms {
                network: "eip155:8453".into(),
                v1_network: Some("base"),
                asset: None,
                pay_to: "0xab".into(),
                scheme: "exact",
                atomic_units_per_cent: ATOMIC_PER_CENT,
                founding_fill: false,
            }),
            configured: true,
            ..off
        };
        let Value::Object(members) = serde_json::to_value(&on).unwrap() else {
            panic!("an object")
        };
        assert_eq!(
            members.keys().collect::<Vec<_>>(),
            [
                "rail",
                "configured",
                "network",
                "v1Network",
                "asset",
                "payTo",
                "scheme",
                "atomicUnitsPerCent",
                "foundingFill"
            ]
        );
        assert_eq!(members["asset"], Value::Null);
    }
}
