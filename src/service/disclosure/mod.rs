//! What the marketplace discloses: `/api/meta` and the fee announcements, the public demand
//! ledger and party classification, the daily participation snapshot.

pub mod meta;
pub mod overview;
pub mod participation;
pub mod proof;
