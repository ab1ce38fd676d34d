//! The payment rails: the sandbox checkout, Stripe (card) and x402 (wallet). Each is called only
//! by `commerce::checkout` and reports payments through `commerce::settlement`.

pub mod sandbox;
pub mod stripe;
pub mod x402;
