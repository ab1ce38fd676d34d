//! The payment rails: the sandbox checkout, Stripe (card) and x402 (wallet). Each is called only
//! by `commerce::checkout` and reports payments through `commerce::settlement`. A card rail
//! (sandbox, Stripe) also onboards sellers' payout accounts, each under a fresh
//! [`new_onboarding_id`]; whether a seller's payouts are connected is
//! `catalog::sellers::require_payouts`.

pub mod sandbox;
pub mod stripe;
pub mod x402;

use crate::crypto::{b64url, random_bytes};

/// A new onboarding id (the capability of the onboarding page).
pub fn new_onboarding_id() -> String {
    b64url(&random_bytes::<16>())
}
