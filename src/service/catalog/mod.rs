//! The catalogue: listings as signed versions, filed by the taxonomy (`service::taxonomy`), the
//! in-memory browse index, sellers' delivery endpoints and payouts readiness, screening, ratings
//! and reputation, counters and stats, the house samples and the personal-health-data consent.

pub mod browse;
pub mod counters;
mod entries;
mod filters;
pub mod health;
pub mod listings;
pub mod matches;
pub mod moderation;
mod order;
mod radix;
pub mod ratings;
pub mod reputation;
pub mod samples;
pub mod screening;
pub mod sellers;
pub mod signed;
pub mod stats;
pub mod storefront;
pub mod versions;
pub mod view;
