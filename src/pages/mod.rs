//! Server-rendered HTML pages: the sandbox checkout and payout onboarding, the page Stripe sends
//! a seller back to, and `/disclosures`. Plain HTML without scripts: each button posts a form to
//! a page route that calls the same service function as the JSON twin and answers 303 back to
//! the page, which shows the outcome; so a browser needs no JavaScript, and the page tests need
//! no browser (`tests/it/pages_browser.rs` also renders every page state in Chromium).

pub mod approve;
pub mod authorize;
pub mod checkout;
pub mod console;
pub mod disclosures;
pub mod front;
pub mod market;
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

/// Integer cents as dollars, e.g. `$1,100.00`.
pub fn dollars(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}${}.{:02}", thousands(cents / 100), cents % 100)
}

/// A count with thousands separators, e.g. `12,345`.
pub fn count(n: i64) -> String {
    let sign = if n < 0 { "-" } else { "" };
    format!("{sign}{}", thousands(n.unsigned_abs()))
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// A page's answer for a capability that names nothing (404, HTML, like the page itself).
pub(crate) fn not_found_page(title: &str, sentence: &str) -> Reply {
    let body = format!(
        "<h1>{title}</h1><p id=\"status\" class=\"state unknown\" data-status=\"unknown\">{sentence}</p>",
        title = escape(title),
        sentence = escape(sentence)
    );
    with_status(page(title, &body), 404)
}

/// A page answered with another status than 200.
pub(crate) fn with_status(reply: Reply, status: u16) -> Reply {
    match reply {
        Reply::Bytes(content_type, body) => Reply::Raw(RawReply {
            status,
            content_type,
            body,
            headers: Vec::new(),
        }),
        other => other,
    }
}

/// 303 See Other to `location`.
pub(crate) fn see_other(location: String) -> Reply {
    Reply::Raw(RawReply {
        status: 303,
        content_type: "text/plain; charset=utf-8",
        body: Bytes::from_static(b"See Other"),
        headers: vec![("location", location)],
    })
}

pub(crate) fn page(title: &str, body: &str) -> Reply {
    page_with_banner(
        title,
        "<strong>bourse sandbox</strong> — no real money moves.",
        body,
    )
}

/// A page with its own first line (`banner`, HTML) above `body`.
pub(crate) fn page_with_banner(title: &str, banner: &str, body: &str) -> Reply {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title>\
         <style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}}\
         button{{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem;border-radius:.4rem;border:1px solid #8c959f;background:#f6f8fa}}\
         button.primary{{background:#1f883d;border-color:#1a7f37;color:#fff;font-weight:600}}\
         #result{{margin-top:1rem;padding:.6rem .8rem;border-radius:.4rem;background:#ddf4ff}}#result.refused{{background:#fff8c5}}\
         .meta{{color:#57606a;font-size:.9rem}}\
         fieldset{{border:1px solid #d0d7de;border-radius:.4rem;margin:1rem 0}}label{{display:block;margin:.4rem 0}}\
         input[type=text],input[type=password]{{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}}\
         .warn{{color:#9a6700}}code{{overflow-wrap:anywhere}}\
         .card{{border:1px solid #d0d7de;border-radius:.5rem;padding:.2rem 1rem;margin:1rem 0}}#amount{{font-size:1.25rem}}\
         .state{{padding:.6rem .8rem;border-radius:.4rem;border-left:4px solid #8c959f;background:#f6f8fa}}\
         .state.open,.state.pending{{border-left-color:#0969da}}.state.paid,.state.complete{{border-left-color:#1a7f37;background:#dafbe1}}</style></head>\
         <body><p>{banner}</p>{body}</body></html>",
        title = escape(title)
    );
    Reply::Bytes("text/html; charset=utf-8", Bytes::from(page))
}

/// A button that posts an empty form to `action`.
pub(crate) fn button(id: &str, action: &str, label: &str) -> String {
    styled_button(id, action, label, "")
}

/// The page's main action, drawn as such.
pub(crate) fn primary_button(id: &str, action: &str, label: &str) -> String {
    styled_button(id, action, label, "primary")
}

fn styled_button(id: &str, action: &str, label: &str, class: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{action}\" style=\"display:inline\"><button id=\"{id}\" class=\"{class}\" type=\"submit\">{label}</button></form>",
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
    let (kind, code) = match (ctx.query("done"), ctx.query("refused")) {
        (Some(done), _) => ("done", clean(done)),
        (_, Some(code)) => ("refused", clean(code)),
        _ => return String::new(),
    };
    let sentence = match (kind, code.as_str()) {
        ("done", "paid") => {
            "Payment recorded: the purchase is paid, and the buyer's agent can now fetch it."
        }
        ("done", "cancelled") => {
            "Checkout cancelled: nothing was charged, and the item is free for others again."
        }
        ("done", "complete") => "Payouts connected: this seller can now sell paid listings.",
        ("done", _) => "Done.",
        ("refused", "CHECKOUT_CLOSED") => {
            "This checkout is already closed (paid, cancelled or expired): nothing was changed."
        }
        ("refused", "NOT_FOUND") => "There is no such checkout or onboarding.",
        ("refused", "LISTING_UNAVAILABLE") => {
            "The item is no longer available: nothing was charged."
        }
        ("refused", _) => "The request was refused: nothing was changed.",
        _ => "",
    };
    format!(
        "<p id=\"result\" role=\"status\" data-outcome=\"{kind}:{code}\" class=\"{kind}\">{sentence} <small>({code})</small></p>"
    )
}

/// 303 See Other back to `page`, with the outcome in the query; an id that names nothing is a
/// 404, as there is no page to go back to.
pub(crate) fn back(page: &str, outcome: Result<impl AsRef<str>>) -> Result<Reply> {
    let query = match outcome {
        Ok(status) => format!("done={}", status.as_ref()),
        // No page to go back to: the id names nothing.
        Err(error @ crate::error::Error::NotFound(_)) => return Err(error),
        Err(error) if error.status() < 500 => format!("refused={}", error.code()),
        Err(error) => return Err(error),
    };
    Ok(see_other(format!("{page}?{query}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_have_thousands_separators() {
        assert_eq!(dollars(4_999_999), "$49,999.99");
        assert_eq!(dollars(5_000_000), "$50,000.00");
        assert_eq!(dollars(100), "$1.00");
        assert_eq!(dollars(12_345_678_901), "$123,456,789.01");
        assert_eq!(dollars(-250), "-$2.50");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-4_000), "-4,000");
    }
}
