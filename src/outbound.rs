//! SSRF-safe outbound HTTP (being written).
