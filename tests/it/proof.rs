//! Demand ledger tests (being written).
