//! What makes public answers checkable: the signed provenance block and the verification of
//! receipts and signed documents.

pub mod log;
pub mod provenance;
pub mod receipts;
