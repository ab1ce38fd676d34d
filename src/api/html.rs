//! Small helpers for the server-rendered HTML pages (sandbox pages, `/disclosures`).

/// Escapes text for HTML text and attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Integer cents as dollars, e.g. `$100.00`.
pub fn dollars(cents: i64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}
