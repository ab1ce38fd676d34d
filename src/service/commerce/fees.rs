//! The fee schedule (interface, "What the service does", item 11), as one pure function.
//!
//! | Band | Sale amount | Platform fee |
//! |---|---|---|
//! | micro | under 2,000 cents | 0 |
//! | standard | 2,000 to 4,999,999 cents | 500 bps (seller keeps 9,500 bps) |
//! | high ticket | 5,000,000 cents and up | 50 bps, floor 24,900 cents, cap 499,500 cents |
//!
//! The buyer fee and the listing fee are 0. Founding fill: 0% on the first settled sale in a
//! subcategory that had no commerce when the listing was made; only identified rails claim it.
//! Fees are whole cents, rounded half up. Schedule version 1 is locked until 2027-06-30; a sale
//! keeps the rate (bps and schedule version) at which it closed.

use serde::Serialize;

/// The schedule in force.
pub const SCHEDULE_VERSION: i64 = 1;
/// No change may take effect before this date.
pub const LOCKED_UNTIL: &str = "2027-06-30";
/// Days of notice a change needs.
pub const CHANGE_NOTICE_DAYS: i64 = 60;
/// Sales under this amount pay no fee.
pub const MICRO_UNDER_CENTS: i64 = 2_000;
/// The standard rate.
pub const STANDARD_BPS: i64 = 500;
/// Sales from this amount are high-ticket.
pub const HIGH_TICKET_AT_CENTS: i64 = 5_000_000;
/// The high-ticket rate.
pub const HIGH_TICKET_BPS: i64 = 50;
/// Smallest high-ticket fee.
pub const HIGH_TICKET_FLOOR_CENTS: i64 = 24_900;
/// Largest high-ticket fee.
pub const HIGH_TICKET_CAP_CENTS: i64 = 499_500;
/// Fees charged to buyers and for listing.
pub const BUYER_BPS: i64 = 0;
pub const LISTING_FEE_BPS: i64 = 0;

/// Which band a sale falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Band {
    Micro,
    Standard,
    HighTicket,
    FoundingFill,
}

/// The fee of one sale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fee {
    pub amount_cents: i64,
    pub platform_fee_cents: i64,
    pub seller_net_cents: i64,
    /// The nominal rate of the band (0 for micro and founding fill).
    pub fee_bps: i64,
    pub band: Band,
    pub schedule_version: i64,
}

/// The platform fee of a sale of `amount_cents` (≥ 0); `founding_fill` when the sale may claim
/// it (first settled sale in an empty subcategory, on an identified rail).
pub fn platform_fee(amount_cents: i64, founding_fill: bool) -> Fee {
    let amount = amount_cents.max(0);
    let (band, bps, fee) = if founding_fill && amount > 0 {
        (Band::FoundingFill, 0, 0)
    } else if amount < MICRO_UNDER_CENTS {
        (Band::Micro, 0, 0)
    } else if amount < HIGH_TICKET_AT_CENTS {
        (Band::Standard, STANDARD_BPS, bps_of(amount, STANDARD_BPS))
    } else {
        let fee =
            bps_of(amount, HIGH_TICKET_BPS).clamp(HIGH_TICKET_FLOOR_CENTS, HIGH_TICKET_CAP_CENTS);
        (Band::HighTicket, HIGH_TICKET_BPS, fee)
    };
    Fee {
        amount_cents: amount,
        platform_fee_cents: fee,
        seller_net_cents: amount - fee,
        fee_bps: bps,
        band,
        schedule_version: SCHEDULE_VERSION,
    }
}

/// Basis points as a percentage for people: `500` → `5%`, `50` → `0.5%`, `9500` → `95%`.
pub fn percent(bps: i64) -> String {
    let whole = bps / 100;
    let rest = bps % 100;
    if rest == 0 {
        format!("{whole}%")
    } else {
        let fraction = format!("{rest:02}");
        format!("{whole}.{}%", fraction.trim_end_matches('0'))
    }
}

/// `amount × bps / 10,000` in whole cents, rounded half up (exact integer arithmetic).
fn bps_of(amount: i64, bps: i64) -> i64 {
    let scaled = i128::from(amount) * i128::from(bps);
    i64::try_from((scaled + 5_000) / 10_000).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_for_people() {
        assert_eq!(percent(500), "5%");
        assert_eq!(percent(50), "0.5%");
        assert_eq!(percent(9_500), "95%");
        assert_eq!(percent(125), "1.25%");
        assert_eq!(percent(0), "0%");
    }

    #[track_caller]
    fn check(amount: i64, fee: i64, band: Band) {
        let got = platform_fee(amount, false);
        assert_eq!(
            (got.platform_fee_cents, got.band),
            (fee, band),
            "amount {amount}"
        );
        assert_eq!(got.seller_net_cents, amount - fee);
        assert_eq!(got.schedule_version, 1);
    }

    #[test]
    fn every_band_edge() {
        check(0, 0, Band::Micro);
        check(1, 0, Band::Micro);
        check(1_999, 0, Band::Micro);
        check(2_000, 100, Band::Standard);
        check(2_001, 100, Band::Standard); // 100.05 → 100
        check(2_010, 101, Band::Standard); // 100.5 → 101 (half up)
        check(4_999_999, 250_000, Band::Standard); // 249,999.95 → 250,000
        check(5_000_000, 25_000, Band::HighTicket);
        check(99_900_000, 499_500, Band::HighTicket); // exactly the cap
        check(99_900_100, 499_500, Band::HighTicket); // 499,500.5 → capped
        check(100_000_000_000, 499_500, Band::HighTicket);
    }

    #[test]
    fn the_floor_binds_only_below_its_crossover() {
        // 0.5% reaches the 24,900 floor at 4,980,000 cents, below the high-ticket band: every
        // high-ticket fee is at least 25,000, so the floor is a guard, never the answer here.
        assert_eq!(bps_of(4_980_000, HIGH_TICKET_BPS), HIGH_TICKET_FLOOR_CENTS);
        assert!(
            platform_fee(HIGH_TICKET_AT_CENTS, false).platform_fee_cents > HIGH_TICKET_FLOOR_CENTS
        );
    }

    #[test]
    fn founding_fill_zeroes_the_fee_of_a_paid_sale() {
        let fill = platform_fee(10_000, true);
        assert_eq!(
            (fill.platform_fee_cents, fill.band, fill.fee_bps),
            (0, Band::FoundingFill, 0)
        );
        assert_eq!(fill.seller_net_cents, 10_000);
        assert_eq!(
            platform_fee(0, true).band,
            Band::Micro,
            "a free sale is no founding fill"
        );
    }
}
