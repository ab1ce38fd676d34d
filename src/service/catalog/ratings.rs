//! A listing's public ratings: the signed attestations buyers' ratings carry (made by
//! `purchases::rate`), shown on the listing without the buyer.

use crate::service::trust::receipts::Signed;

/// How many of a listing's ratings its detail shows, newest first.
pub const SHOWN: i64 = 20;

/// The stored attestations as signed records (an unreadable one is skipped).
pub fn from_stored(texts: &[String]) -> Vec<Signed> {
    texts.iter().filter_map(|t| Signed::parse(t)).collect()
}
