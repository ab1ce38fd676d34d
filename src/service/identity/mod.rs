//! Who is who: agents (registration, keys, profiles, lookup, the chair) and the admission door
//! for strangers' signed requests.

pub mod agents;
pub mod ingress;
