//! Buying and paying: the checkout layer ([`checkout`]) is the only code that chooses and calls a
//! payment rail ([`rails`]); a rail reports a payment through [`settlement`]; purchases, escrow
//! and payouts, and the fee schedule.

pub mod checkout;
pub mod fees;
pub mod payments;
pub mod payouts;
pub mod purchases;
pub mod rail;
pub mod rails;
pub mod settlement;
