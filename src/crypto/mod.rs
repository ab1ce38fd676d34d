//! Canonical JSON, signing keys and receipts.
//!
//! Invariant: this module imports neither hyper nor rusqlite. It takes bytes and JSON values in
//! and gives bytes, JSON values or verdicts out; files are touched only by [`keys`] (the keyfile).

pub mod jcs;
pub mod keys;
pub mod receipt;
pub mod tlog;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Unpadded base64url, the encoding of every key and signature we publish.
pub fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes unpadded, canonical base64url; padding and non-canonical trailing bits are refused.
///
/// # Errors
/// When `text` is not canonical unpadded base64url.
pub fn b64url_decode(text: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|error| format!("not unpadded base64url: {error}"))
}

/// Fills a buffer from the operating system's random source.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).expect("the operating system random source is available");
    buf
}
