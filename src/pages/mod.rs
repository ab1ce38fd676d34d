//! Server-rendered HTML pages: the sandbox checkout and payout onboarding, the page Stripe sends
//! a seller back to, and `/disclosures`. Plain HTML without scripts: each button posts a form to
//! a page route that calls the same service function as the JSON twin and answers 303 back to
//! the page, which shows the outcome; so a browser needs no JavaScript and CI needs no browser.

pub mod checkout;
pub mod disclosures;
pub mod front;
pub mod onboarding;

use hyper::body::Bytes;

use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::{RawReply, Reply};

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

pub(crate) fn page(title: &str, body: &str) -> Reply {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}}\
         button{{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem}}#result{{margin-top:1rem}}</style></head>\
         <body><p><strong>bourse sandbox</strong> — no real money moves.</p>{body}</body></html>",
        title = escape(title)
    );
    Reply::Bytes("text/html; charset=utf-8", Bytes::from(page))
}

/// A button that posts an empty form to `action`.
pub(crate) fn button(id: &str, action: &str, label: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{action}\" style=\"display:inline\"><button id=\"{id}\" type=\"submit\">{label}</button></form>",
        action = escape(action)
    )
}

/// The outcome of the last button, from the query the page route redirected with.
pub(crate) fn outcome(ctx: &Ctx) -> String {
    let clean = |v: &str| -> String {
        v.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(40)
            .collect()
    };
    match (ctx.query("done"), ctx.query("refused")) {
        (Some(done), _) => format!("<p id=\"result\" role=\"status\">Done: {}</p>", clean(done)),
        (_, Some(code)) => format!(
            "<p id=\"result\" role=\"status\">Refused: {}</p>",
            clean(code)
        ),
        _ => String::new(),
    }
}

/// Session and onboarding ids are unpadded base64url (with a `cs_` prefix for sessions); an id
/// with any other character cannot exist, and is refused before it reaches a `Location` header
/// or a form action.
pub(crate) fn well_formed(id: &str) -> Result<&str> {
    if !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(id)
    } else {
        Err(crate::error::Error::NotFound(
            "no such checkout or onboarding".into(),
        ))
    }
}

/// 303 See Other back to `page`, with the outcome in the query.
pub(crate) fn back(page: &str, outcome: Result<serde_json::Value>) -> Result<Reply> {
    let query = match outcome {
        Ok(value) => format!("done={}", value["status"].as_str().unwrap_or("ok")),
        Err(error) if error.status() < 500 => format!("refused={}", error.code()),
        Err(error) => return Err(error),
    };
    Ok(Reply::Raw(RawReply {
        status: 303,
        content_type: "text/plain; charset=utf-8",
        body: Bytes::from_static(b"See Other"),
        headers: vec![("location", format!("{page}?{query}"))],
    }))
}
