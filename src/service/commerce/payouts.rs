//! Sellers' payout accounts, as every rail sees them: the onboarding id each card rail hands
//! out, and the check that a seller can be paid on the instance's card rail before a paid
//! listing is listed or sold.

use rusqlite::Connection;

use crate::crypto::{b64url, random_bytes};
use crate::error::{Error, Result};
use crate::service::commerce::rail::Rail;
use crate::store::payments as store;

/// A new onboarding id (the capability of the onboarding page).
pub fn new_onboarding_id() -> String {
    b64url(&random_bytes::<16>())
}

/// Refuses a paid listing (or a paid checkout) from a seller whose payouts are not connected on
/// the card rail `card`.
///
/// # Errors
/// `PAYOUTS_NOT_CONNECTED` (409).
pub fn require_payouts(conn: &Connection, agent_id: &str, card: Rail) -> Result<()> {
    let rail = card.account_name().unwrap_or_default();
    let account = store::account_of(conn, agent_id)?;
    if account.is_some_and(|a| a.status == "complete" && a.rail == rail) {
        return Ok(());
    }
    Err(Error::Conflict {
        code: "PAYOUTS_NOT_CONNECTED",
        message: format!(
            "a paid listing needs connected payouts on this server's {rail} rail: POST /api/sell/register and finish onboarding (free listings need none)"
        ),
    })
}
