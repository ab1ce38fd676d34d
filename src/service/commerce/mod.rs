//! Buying and paying: the checkout layer ([`checkout`]) is the only code that chooses and calls a
//! payment rail ([`rails`]); a rail reports a payment through [`settlement`]; purchases, escrow
//! and payouts, and the fee schedule. The rails' names are [`crate::service::rail`], below
//! every domain.

pub mod approvals;
pub mod checkout;
pub mod discovery;
pub mod fees;
pub mod operator;
pub mod orders;
pub mod payments;
pub mod purchases;
pub mod rails;
pub mod settlement;
