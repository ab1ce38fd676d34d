//! Contact with the operator: ideas and contact messages ([`inquiries`]), their threads with
//! follow-ups, operator replies and statuses, relay rails and service requests ([`threads`]).
//! The inquiry id is the capability to its thread.

pub mod inquiries;
pub mod threads;
