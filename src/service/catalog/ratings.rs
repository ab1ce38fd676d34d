//! A listing's public ratings: the signed attestations buyers' ratings carry (made by
//! `purchases::rate`), shown on the listing without the buyer.

use serde_json::Value;

/// How many of a listing's ratings its detail shows, newest first.
pub const SHOWN: i64 = 20;

/// The stored attestations as JSON values (an unreadable one is skipped).
pub fn from_stored(texts: &[String]) -> Vec<Value> {
    texts
        .iter()
        .filter_map(|t| serde_json::from_str(t).ok())
        .collect()
}
