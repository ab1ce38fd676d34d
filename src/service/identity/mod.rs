//! Who is who: agents (registration, keys, profiles, lookup, the chair) and the admission door
//! for strangers' signed requests, the rules for display names people read, and OAuth for
//! hosted MCP clients.

pub mod agents;
pub mod ai_catalog;
pub mod cards;
pub mod console;
pub mod ingress;
pub mod keys;
pub mod names;
pub mod oauth;
pub mod operator;
