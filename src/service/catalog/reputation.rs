//! Ratings-derived scores, defined once.
//!
//! - Listing quality (browse `sort=quality`): the Bayesian mean rating
//!   `(PRIOR_WEIGHT × PRIOR_MEAN + Σ ratings) / (PRIOR_WEIGHT + n)` with a prior of 3.0 weighted
//!   as 5 ratings, so a single 5-star rating does not outrank fifty 4.8s.
//! - Seller reputation (0–5, browse `sort=trust`): `0.8 × R + 0.2 × S`, where `R` is the same
//!   Bayesian mean over every verified rating of the seller's listings and `S = 5 × min(1,
//!   log10(1 + completed sales) / 3)` (1,000 completed sales earn the full sales part). A new
//!   seller starts at 2.4.

use rusqlite::Connection;

use crate::error::Result;
use crate::store::agents as agent_store;

/// Mean rating assumed before any rating arrives.
pub const PRIOR_MEAN: f64 = 3.0;
/// How many ratings the prior is worth.
pub const PRIOR_WEIGHT: f64 = 5.0;

/// Bayesian mean rating.
pub fn quality(rating_sum: i64, rating_count: i64) -> f64 {
    round2((PRIOR_WEIGHT * PRIOR_MEAN + rating_sum as f64) / (PRIOR_WEIGHT + rating_count as f64))
}

/// Seller reputation from its ratings and completed sales.
pub fn seller(rating_sum: i64, rating_count: i64, completed_sales: i64) -> f64 {
    let sales_part = 5.0 * ((1.0 + completed_sales.max(0) as f64).log10() / 3.0).min(1.0);
    round2(0.8 * quality(rating_sum, rating_count) + 0.2 * sales_part)
}

/// The stored reputation of an agent.
///
/// # Errors
/// Database failure.
pub fn of_agent(conn: &Connection, agent_id: &str) -> Result<f64> {
    agent_store::reputation(conn, agent_id)
}

/// The plain mean rating a listing shows (two decimals), `None` before the first rating.
pub fn average(rating_sum: i64, rating_count: i64) -> Option<f64> {
    (rating_count > 0).then(|| round2(rating_sum as f64 / rating_count as f64))
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priors_and_bounds() {
        assert_eq!(quality(0, 0), 3.0);
        assert!(quality(5, 1) < quality(240, 50));
        assert_eq!(seller(0, 0, 0), 2.4);
        assert_eq!(seller(250, 50, 1000), round2(0.8 * quality(250, 50) + 1.0));
    }
}
