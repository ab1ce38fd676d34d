//! Contact surface tests (being written).
