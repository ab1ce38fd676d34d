//! Seller kit (being written).
