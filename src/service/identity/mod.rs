//! Who is who: agents (registration, keys, profiles, lookup, the chair) and the admission door
//! for strangers' signed requests, and the rules for display names people read.

pub mod agents;
pub mod ingress;
pub mod names;
