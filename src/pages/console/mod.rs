//! The operator console (`/console/…`): server-rendered HTML for the person running the
//! marketplace. The operator signs in once with the operator key typed into a form
//! ([`sign_in`]); the session is a cookie (`HttpOnly`, `SameSite=Strict`, `Secure` under an
//! https public URL) kept in memory by `service::identity::console`. Every state-changing form
//! carries the session's anti-forgery token, and a form posted without it (or with another
//! session's) is a 403 that changes nothing. Every page is unframeable, never cached and under
//! a Content-Security-Policy that allows no script and only the console's own style sheet.
//!
//! Each action calls the same service function as the operator's REST route and is logged
//! (target `console`). One file per section: [`sign_in`], [`overview`], [`agents`],
//! [`listings`], [`purchases`], [`messages`], [`inquiries`], [`oauth`], [`fees`], [`sandbox`].

pub mod agents;
pub mod charts;
pub mod fees;
pub mod inquiries;
pub mod listings;
pub mod messages;
pub mod oauth;
pub mod overview;
pub mod purchases;
pub mod sandbox;
pub mod sign_in;

use std::sync::OnceLock;

use base64::Engine as _;
use hyper::body::Bytes;
use sha2::{Digest, Sha256};

use super::escape;
use crate::error::{Error, Result};
use crate::http::request::{Caller, Ctx};
use crate::http::response::{RawReply, Reply};
use crate::operations::Operation;
use crate::service::App;
use crate::service::identity::console::{self, Session};

/// Where a request without a session is sent.
pub const SIGN_IN: &str = "/console/sign-in";

/// The console's one style sheet, inline and allowed by its hash.
const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#1f2328;background:#fff;line-height:1.45}\
header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1.5rem;padding:.6rem 1rem;background:#24292f;color:#fff}\
header a{color:#fff}header .brand{font-weight:700;text-decoration:none}\
nav ul{display:flex;flex-wrap:wrap;gap:.4rem 1rem;list-style:none;margin:0;padding:0}\
nav a[aria-current=page]{font-weight:700;text-decoration:underline 2px}\
main{max-width:68rem;margin:0 auto;padding:1rem;overflow-wrap:anywhere}pre{white-space:pre-wrap;max-width:100%}\
h1{font-size:1.6rem;margin:.6rem 0 1rem}h2{font-size:1.2rem;margin:1.6rem 0 .6rem}\
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.8rem;margin:0;padding:0;list-style:none}\
.tile{border:1px solid #d0d7de;border-radius:.5rem;padding:.6rem .8rem;margin:0}\
.tile dt{color:#57606a;font-size:.85rem}.tile dd{margin:0;font-size:1.5rem;font-weight:600}\
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(18rem,1fr));gap:1rem}\
figure{margin:0;border:1px solid #d0d7de;border-radius:.5rem;padding:.6rem}\
figcaption{font-weight:600;margin-bottom:.3rem}svg{width:100%;height:auto;display:block}\
table{border-collapse:collapse;width:100%;font-size:.95rem}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top}\
.scroll{overflow-x:auto}.meta{color:#57606a;font-size:.9rem}code{overflow-wrap:anywhere}\
form.inline{display:inline}label{display:block;margin:.4rem 0}\
input[type=text],input[type=password],input[type=search],select,textarea{font-size:1rem;padding:.4rem;max-width:100%;box-sizing:border-box;border:1px solid #57606a;border-radius:.3rem}\
input[type=password]{width:100%}\
button{font-size:1rem;padding:.45rem 1rem;border-radius:.4rem;border:1px solid #57606a;background:#f6f8fa;color:#1f2328;cursor:pointer}\
button.primary{background:#1f883d;border-color:#1a7f37;color:#fff;font-weight:600}\
button.danger{background:#cf222e;border-color:#a40e26;color:#fff}\
header button{background:transparent;color:#fff;border-color:#8c959f;padding:.2rem .7rem;font-size:.9rem}\
.notice{padding:.6rem .8rem;border-radius:.4rem;background:#ddf4ff;border-left:4px solid #0969da}\
.alert{padding:.6rem .8rem;border-radius:.4rem;background:#ffebe9;border-left:4px solid #cf222e}\
.warn{padding:.6rem .8rem;border-radius:.4rem;background:#fff8c5;border-left:4px solid #9a6700}\
ul.warnings{padding-left:1.2rem}\
.signin{max-width:26rem;margin:3rem auto}\
:focus-visible{outline:3px solid #0969da;outline-offset:2px}";

/// The Content-Security-Policy of every console answer: nothing but the console's own style
/// sheet (by its hash) and forms posted back to the console; no script, no framing.
fn csp() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE));
        format!(
            "default-src 'none'; style-src 'sha256-{hash}'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
    })
}

/// The headers of every console answer, added beside any the reply has.
pub(crate) fn guard(reply: Reply) -> Reply {
    let headers = vec![
        ("content-security-policy", csp().to_owned()),
        ("x-frame-options", "DENY".into()),
        ("cache-control", "no-store".into()),
        ("referrer-policy", "no-referrer".into()),
        ("x-content-type-options", "nosniff".into()),
    ];
    match reply {
        Reply::Raw(mut raw) => {
            raw.headers.extend(headers);
            Reply::Raw(raw)
        }
        Reply::WithHeaders(inner, mut extra) => {
            extra.extend(headers);
            Reply::WithHeaders(inner, extra)
        }
        other => other.with_headers(headers),
    }
}

/// Whether the console's cookies are marked `Secure` (an https public URL).
pub fn secure(app: &App) -> bool {
    app.public_url.starts_with("https://")
}

/// A `Set-Cookie` value for a console cookie: `Path=/console`, `HttpOnly`, `SameSite=Strict`,
/// `Secure` under https; `max_age` 0 deletes it, `None` makes it last the browser session.
pub fn cookie(app: &App, name: &str, value: &str, max_age: Option<u32>) -> String {
    let mut cookie = format!("{name}={value}; Path=/console; HttpOnly; SameSite=Strict");
    if let Some(seconds) = max_age {
        cookie.push_str(&format!("; Max-Age={seconds}"));
    }
    if secure(app) {
        cookie.push_str("; Secure");
    }
    cookie
}

/// The sections in the console's navigation: (path, label).
const SECTIONS: &[(&str, &str)] = &[
    ("/console", "Overview"),
    ("/console/agents", "Agents"),
    ("/console/listings", "Listings"),
    ("/console/purchases", "Purchases"),
    ("/console/messages", "Messages"),
    ("/console/inquiries", "Inquiries"),
    ("/console/oauth", "OAuth"),
    ("/console/fees", "Fees"),
    ("/console/sandbox", "Sandbox"),
];

/// A whole console page: the header (navigation and sign-out when signed in), then `body`.
/// The sandbox section is linked only when the payment mode is sandbox (it is not served
/// otherwise).
pub fn layout(
    app: &App,
    title: &str,
    session: Option<&Session>,
    current: &str,
    body: &str,
) -> String {
    let nav = match session {
        Some(session) => {
            let links: String = SECTIONS
                .iter()
                .filter(|(path, _)| *path != "/console/sandbox" || app.sandbox())
                .map(|(path, label)| {
                    let here = if *path == current {
                        " aria-current=\"page\""
                    } else {
                        ""
                    };
                    format!("<li><a href=\"{path}\"{here}>{label}</a></li>")
                })
                .collect();
            format!(
                "<nav aria-label=\"Console sections\"><ul>{links}</ul></nav>{}",
                form(session, "/console/sign-out", "", "sign-out", "Sign out", "")
            )
        }
        None => String::new(),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · bourse console</title><style>{STYLE}</style></head>\
         <body><header><a class=\"brand\" href=\"/console\">bourse console</a>{nav}</header>\
         <main id=\"main\">{body}</main></body></html>",
        title = escape(title)
    )
}

/// A whole public page (the catalogue at `/market`): the console's style sheet and policy,
/// without its navigation.
pub fn public_layout(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · bourse market</title><style>{STYLE}</style></head>\
         <body><header><a class=\"brand\" href=\"/market\">bourse market</a>\
         <nav aria-label=\"Site\"><ul><li><a href=\"/market\">Catalogue</a></li>\
         <li><a href=\"/disclosures\">Fees and terms</a></li><li><a href=\"/\">About</a></li></ul></nav></header>\
         <main id=\"main\">{body}</main></body></html>",
        title = escape(title)
    )
}

/// A public page that says why a request was refused, with `status`.
pub fn public_refusal(status: u16, sentence: &str) -> Reply {
    let body = format!(
        "<h1>Not shown</h1><p id=\"refusal\" class=\"alert\" role=\"alert\">{}</p>\
         <p><a href=\"/market\">Back to the catalogue</a></p>",
        escape(sentence)
    );
    guard(html(status, public_layout("Not shown", &body)))
}

/// An HTML answer with `status`.
pub fn html(status: u16, page: String) -> Reply {
    Reply::Raw(RawReply {
        status,
        content_type: "text/html; charset=utf-8",
        body: Bytes::from(page),
        headers: Vec::new(),
    })
}

/// A form posting to `action` with the session's anti-forgery token, `fields` (HTML) and one
/// submit button (`id`, `label`, `class`).
pub fn form(
    session: &Session,
    action: &str,
    fields: &str,
    id: &str,
    label: &str,
    class: &str,
) -> String {
    format!(
        "<form class=\"inline\" method=\"post\" action=\"{action}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{fields}\
         <button id=\"{id}\" type=\"submit\" class=\"{class}\">{label}</button></form>",
        action = escape(action),
        csrf = escape(&session.csrf),
        label = escape(label),
    )
}

/// A page that says why a request was refused, with `status`.
fn refusal(
    app: &App,
    status: u16,
    title: &str,
    sentence: &str,
    session: Option<&Session>,
) -> Reply {
    let body = format!(
        "<h1>{}</h1><p id=\"refusal\" class=\"alert\" role=\"alert\">{}</p>\
         <p><a href=\"/console\">Back to the overview</a></p>",
        escape(title),
        escape(sentence)
    );
    html(status, layout(app, title, session, "", &body))
}

/// 303 See Other to `location`.
pub fn see_other(location: &str) -> Reply {
    super::see_other(location.to_owned())
}

/// Runs a console operation: the sign-in routes for anyone, the rest for a session only (else
/// a redirect to sign in); a form must carry the session's anti-forgery token. Refusals of the
/// request (4xx) are pages; every answer carries the console's headers.
///
/// # Errors
/// A failure of the server (5xx), answered in the usual JSON.
pub async fn dispatch(app: &App, operation: Operation, ctx: &Ctx) -> Result<Reply> {
    let session = match &ctx.caller {
        Caller::Console(session) => Some(session),
        _ => None,
    };
    let answer = match (operation, session) {
        (Operation::ConsoleSignInPage, _) => Ok(sign_in::page(app, ctx, None)),
        (Operation::ConsoleSignIn, _) => sign_in::submit(app, ctx),
        (_, None) => Ok(see_other(&format!("{SIGN_IN}?expired=1"))),
        (_, Some(session)) => {
            if ctx.method == "POST" && !carries_token(ctx, session) {
                return Ok(guard(refusal(
                    app,
                    403,
                    "Refused",
                    "This form did not carry this session's anti-forgery token, so nothing was changed. Reload the page and try again.",
                    Some(session),
                )));
            }
            signed_in(app, operation, ctx, session).await
        }
    };
    match answer {
        Ok(reply) => Ok(guard(reply)),
        Err(error) if error.status() < 500 => {
            let retry = error.retry_after_secs();
            let reply = refusal(app, error.status(), "Refused", &error.to_string(), session);
            let reply = match (retry, reply) {
                (Some(seconds), Reply::Raw(mut raw)) => {
                    raw.headers.push(("retry-after", seconds.to_string()));
                    Reply::Raw(raw)
                }
                (_, reply) => reply,
            };
            Ok(guard(reply))
        }
        Err(error) => Err(error),
    }
}

/// Whether a posted form carries `session`'s anti-forgery token (read from a form body only).
fn carries_token(ctx: &Ctx, session: &Session) -> bool {
    ctx.form_content_type() && console::token_matches(session, field(ctx, "csrf").as_deref())
}

/// The first value of a posted form field, trimmed; empty counts as absent.
pub fn field(ctx: &Ctx, name: &str) -> Option<String> {
    ctx.form()
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// The pages and forms behind a session.
async fn signed_in(app: &App, operation: Operation, ctx: &Ctx, session: &Session) -> Result<Reply> {
    match operation {
        Operation::ConsoleSignOut => Ok(sign_in::sign_out(app, ctx)),
        Operation::ConsoleOverview => overview::page(app, session).await,
        Operation::ConsoleAgents => agents::search(app, ctx, session).await,
        Operation::ConsoleAgent => agents::page(app, ctx, session).await,
        Operation::ConsoleRotateKey => agents::rotate_key(app, ctx, session).await,
        Operation::ConsoleListings => listings::search(app, ctx, session).await,
        Operation::ConsoleListing => listings::page(app, ctx, session).await,
        Operation::ConsoleDeactivateListing => listings::deactivate(app, ctx).await,
        Operation::ConsolePurchases => purchases::page(app, ctx, session).await,
        Operation::ConsoleOAuth => oauth::page(app, ctx, session).await,
        Operation::ConsoleRevokeOAuthClient => oauth::revoke_client(app, ctx).await,
        Operation::ConsoleRevokeOAuthGrant => oauth::revoke_grant(app, ctx).await,
        Operation::ConsoleMessages => messages::page(app, ctx, session).await,
        Operation::ConsoleReplayCallback => messages::replay(app, ctx).await,
        Operation::ConsoleInquiries => inquiries::list(app, session).await,
        Operation::ConsoleInquiry => inquiries::thread(app, ctx, session).await,
        Operation::ConsoleReplyInquiry => inquiries::reply(app, ctx).await,
        Operation::ConsoleInquiryStatus => inquiries::set_status(app, ctx).await,
        Operation::ConsoleApproveRail => inquiries::approve_rail(app, ctx, session).await,
        Operation::ConsoleFees => fees::page(app, ctx, session).await,
        Operation::ConsoleAnnounceFees => fees::announce(app, ctx).await,
        Operation::ConsoleSandbox => sandbox::page(app, ctx, session).await,
        Operation::ConsoleSandboxClock => sandbox::clock(app, ctx).await,
        Operation::ConsoleSandboxPay => sandbox::settle(app, ctx, true).await,
        Operation::ConsoleSandboxCancel => sandbox::settle(app, ctx, false).await,
        other => Err(Error::Internal(format!(
            "{other:?} is not a console operation"
        ))),
    }
}
