//! The payment rails and every name they go by, in one place.
//!
//! A sale is made on one of four rails: free (no money), the sandbox checkout, Stripe (card) and
//! x402 (USDC from a wallet). The instance's card rail, the one a keyed purchase uses, is the
//! sandbox or Stripe (`--payments`); x402 is configured beside it. Each rail has several names,
//! all stored or shown byte for byte as before this type existed:
//!
//! | rail | purchase `rail` | ledger `rail` | payout account / `--payments` |
//! |---|---|---|---|
//! | [`Rail::Free`] | `free` | `checkout` | – |
//! | [`Rail::Sandbox`] | `checkout` | `checkout` | `sandbox` |
//! | [`Rail::Card`] | `card` | `card` | `stripe` |
//! | [`Rail::Wallet`] | `x402_usdc_base` | `wallet` | – (`x402_usdc_base`) |
//!
//! The purchase's name is also what the `rail` field of a purchase request takes (`checkout` and
//! `card` both ask for the instance's card rail) and what `GET /api/meta` shows.
//!
//! This is vocabulary, not commerce: it sits below every domain, so the App's card rail, the
//! catalogue's payouts check, commerce and the demand ledger all speak it without one domain
//! importing another.

use serde_json::Value;

use crate::config::Payments;
use crate::error::{Error, Result};

/// A payment rail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rail {
    /// A free listing: no money moves.
    Free,
    /// The local sandbox checkout (`--payments sandbox`).
    Sandbox,
    /// Stripe Checkout and Connect (`--payments stripe`).
    Card,
    /// `x402_usdc_base`: USDC over HTTP 402.
    Wallet,
}

impl Rail {
    /// Every rail.
    pub const ALL: [Rail; 4] = [Rail::Free, Rail::Sandbox, Rail::Card, Rail::Wallet];

    /// The ledger's `rail` values (the demand ledger's vocabulary), in the order it reports them.
    pub const LEDGER_NAMES: [&'static str; 3] = [
        Rail::Sandbox.ledger_name(),
        Rail::Card.ledger_name(),
        Rail::Wallet.ledger_name(),
    ];

    /// The names a purchase request's `rail` field takes, in the order its error lists them.
    pub const REQUEST_NAMES: [&'static str; 3] =
        [Rail::Wallet.name(), Rail::Sandbox.name(), Rail::Card.name()];

    /// The rail's name: a purchase's `rail` (stored, signed into its receipt, shown), the `rail`
    /// field of a purchase request, and the x402 rail's configuration name.
    pub const fn name(self) -> &'static str {
        match self {
            Rail::Free => "free",
            Rail::Sandbox => "checkout",
            Rail::Card => "card",
            Rail::Wallet => "x402_usdc_base",
        }
    }

    /// The rail named `name` (a purchase's stored `rail`).
    pub fn from_name(name: &str) -> Option<Rail> {
        Rail::ALL.into_iter().find(|rail| rail.name() == name)
    }

    /// The `rail` of the ledger row of a sale on this rail: free and sandbox sales are both
    /// `checkout`.
    pub const fn ledger_name(self) -> &'static str {
        match self {
            Rail::Free | Rail::Sandbox => "checkout",
            Rail::Card => "card",
            Rail::Wallet => "wallet",
        }
    }

    /// The ledger `rail` of a purchase whose stored `rail` is `name` (an unknown name counts as
    /// a checkout, as it always has).
    pub fn ledger_name_of(name: &str) -> &'static str {
        Rail::from_name(name).map_or(Rail::Sandbox.ledger_name(), Rail::ledger_name)
    }

    /// The name of a card rail's payout accounts (`payout_accounts.rail`), which is also its
    /// `--payments` value and the `rail` of the operator's payments view and of seller
    /// onboarding: `sandbox` or `stripe`. The other rails pay out to no account.
    pub const fn account_name(self) -> Option<&'static str> {
        match self {
            Rail::Sandbox => Some("sandbox"),
            Rail::Card => Some("stripe"),
            Rail::Free | Rail::Wallet => None,
        }
    }

    /// The card rail `--payments` configures.
    pub fn card(payments: &Payments) -> Rail {
        match payments {
            Payments::Sandbox => Rail::Sandbox,
            Payments::Stripe(_) => Rail::Card,
        }
    }

    /// Whether a sale on this rail can claim founding fill: identified rails only, so an x402
    /// sale counts as commerce but never claims it.
    pub const fn claims_founding_fill(self) -> bool {
        !matches!(self, Rail::Wallet)
    }

    /// Whether bourse itself moves money after a sale on this rail (Stripe: the seller's
    /// transfer at escrow release, the refund of a payment that came too late); held rows of
    /// the other rails are released in place.
    pub const fn moves_money(self) -> bool {
        matches!(self, Rail::Card)
    }

    /// How `GET /api/meta` describes the instance's card rail (`rails.default`).
    pub fn meta_default(self) -> String {
        match self {
            Rail::Card => format!("{} (Stripe Checkout on this instance)", self.name()),
            _ => format!("{} (sandbox rail on this instance)", self.name()),
        }
    }

    /// Reads the `rail` field of a purchase request: absent or null is `None`; `checkout` and
    /// `card` name a card rail (the caller serves them on the instance's), `x402_usdc_base`
    /// the wallet rail.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for any other value.
    pub fn parse_request(value: Option<&Value>) -> Result<Option<Rail>> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(name)) if Rail::REQUEST_NAMES.contains(&name.as_str()) => {
                Ok(Rail::from_name(name))
            }
            Some(_) => Err(Error::invalid(format!(
                "`rail` must be one of {} (default: the instance's checkout rail, or x402 without a key when configured)",
                Rail::REQUEST_NAMES.join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_the_stored_and_published_ones() {
        let table: Vec<_> = Rail::ALL
            .iter()
            .map(|r| (r.name(), r.ledger_name(), r.account_name()))
            .collect();
        assert_eq!(
            table,
            [
                ("free", "checkout", None),
                ("checkout", "checkout", Some("sandbox")),
                ("card", "card", Some("stripe")),
                ("x402_usdc_base", "wallet", None),
            ]
        );
        assert_eq!(Rail::LEDGER_NAMES, ["checkout", "card", "wallet"]);
        for rail in Rail::ALL {
            assert_eq!(Rail::from_name(rail.name()), Some(rail));
            assert_eq!(Rail::ledger_name_of(rail.name()), rail.ledger_name());
        }
        assert_eq!(Rail::from_name("wallet"), None);
        assert_eq!(Rail::ledger_name_of("unknown"), "checkout");
    }

    #[test]
    fn configuration_picks_the_card_rail() {
        assert_eq!(Rail::card(&Payments::Sandbox), Rail::Sandbox);
        let stripe = Payments::Stripe(crate::config::StripeSettings {
            secret_key: "sk_test_x".into(),
            webhook_secret: "whsec_x".into(),
            api_base: "http://127.0.0.1:1".into(),
        });
        assert_eq!(Rail::card(&stripe), Rail::Card);
        assert_eq!(
            Rail::Sandbox.meta_default(),
            "checkout (sandbox rail on this instance)"
        );
        assert_eq!(
            Rail::Card.meta_default(),
            "card (Stripe Checkout on this instance)"
        );
    }

    #[test]
    fn request_field_takes_three_names() {
        let parse = |v: Value| Rail::parse_request(Some(&v)).map_err(|e| e.to_string());
        assert_eq!(Rail::parse_request(None).unwrap(), None);
        assert_eq!(parse(Value::Null), Ok(None));
        assert_eq!(parse(json!("x402_usdc_base")), Ok(Some(Rail::Wallet)));
        assert_eq!(parse(json!("checkout")), Ok(Some(Rail::Sandbox)));
        assert_eq!(parse(json!("card")), Ok(Some(Rail::Card)));
        for refused in [json!("free"), json!("wallet"), json!("bitcoin"), json!(1)] {
            let message = parse(refused).unwrap_err();
            assert!(
                message.contains("x402_usdc_base, checkout, card"),
                "{message}"
            );
        }
    }

    #[test]
    fn rules_that_follow_from_the_rail() {
        assert!(!Rail::Wallet.claims_founding_fill());
        assert!(Rail::Card.claims_founding_fill() && Rail::Sandbox.claims_founding_fill());
        assert_eq!(
            Rail::ALL.map(Rail::moves_money),
            [false, false, true, false]
        );
    }
}
