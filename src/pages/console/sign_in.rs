//! Signing in to the console and out of it. The operator key is typed into a password field
//! and posted in the form's body: never in a URL, never shown back (a refused sign-in shows an
//! empty field), never logged (the access log prints no body). The sign-in form has its own
//! anti-forgery token, double-submitted in a short-lived cookie and the form, so a page
//! elsewhere cannot sign a browser in to a console of its choosing.

use super::{SIGN_IN, cookie, field, html, layout, see_other};
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::escape;
use crate::service::identity::console::{self, COOKIE, SIGN_IN_COOKIE};
use crate::service::{App, constant_time_eq};

/// How long the sign-in form's token lasts (seconds).
const FORM_LIFETIME: u32 = 3600;

/// `GET /console/sign-in`: the form, with `message` (status, sentence) above it after a
/// refused attempt.
pub fn page(app: &App, ctx: &Ctx, message: Option<(u16, &str)>) -> Reply {
    let token = console::sign_in_token();
    let notice = match (message, ctx.query("expired"), ctx.query("signed_out")) {
        (Some((_, sentence)), _, _) => format!(
            "<p id=\"result\" class=\"alert\" role=\"alert\">{}</p>",
            escape(sentence)
        ),
        (None, Some(_), _) => "<p id=\"result\" class=\"notice\" role=\"status\">Your console session ended (signed out, expired, or the server restarted). Sign in again.</p>".to_owned(),
        (None, None, Some(_)) => {
            "<p id=\"result\" class=\"notice\" role=\"status\">You are signed out.</p>".to_owned()
        }
        _ => String::new(),
    };
    let body = format!(
        "<div class=\"signin\"><h1>Sign in to the console</h1>{notice}\
         <form method=\"post\" action=\"{SIGN_IN}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{token}\">\
         <label for=\"key\">Operator key</label>\
         <input id=\"key\" type=\"password\" name=\"key\" autocomplete=\"off\" required>\
         <p class=\"meta\">The contents of <code>DATA/operator.key</code> on the server. \
         The session lasts 30 minutes without use and 12 hours at most; a restart signs you out.</p>\
         <button id=\"sign-in\" class=\"primary\" type=\"submit\">Sign in</button></form></div>"
    );
    let status = message.map_or(200, |(status, _)| status);
    let mut reply = html(status, layout(app, "Sign in", None, "", &body));
    if let Reply::Raw(raw) = &mut reply {
        raw.headers.push((
            "set-cookie",
            cookie(app, SIGN_IN_COOKIE, &token, Some(FORM_LIFETIME)),
        ));
    }
    reply
}

/// `POST /console/sign-in`: the key typed into the form.
///
/// # Errors
/// `RATE_LIMITED` while the client is over its failed sign-ins (a 429 page with `Retry-After`).
pub fn submit(app: &App, ctx: &Ctx) -> Result<Reply> {
    let presented = field(ctx, "csrf");
    let expected = ctx.cookie(SIGN_IN_COOKIE);
    let fresh =
        matches!((presented.as_deref(), expected), (Some(a), Some(b)) if constant_time_eq(a, b));
    if !ctx.form_content_type() || !fresh {
        return Ok(page(
            app,
            ctx,
            Some((
                403,
                "The sign-in form had expired or did not come from this console: nothing was done. Type the key again.",
            )),
        ));
    }
    let Some(key) = field(ctx, "key") else {
        return Ok(page(app, ctx, Some((400, "Type the operator key."))));
    };
    let client = ctx.client_ip.to_string();
    match console::sign_in(app, &key, &client) {
        Ok(signed_in) => Ok(see_other("/console").with_headers(vec![
            ("set-cookie", cookie(app, COOKIE, &signed_in.cookie, None)),
            ("set-cookie", cookie(app, SIGN_IN_COOKIE, "", Some(0))),
        ])),
        Err(Error::Unauthenticated(_)) => Ok(page(
            app,
            ctx,
            Some((401, "That is not the operator key. Nothing was signed in.")),
        )),
        Err(error) => Err(error),
    }
}

/// `POST /console/sign-out`: ends the session and forgets its cookie.
pub fn sign_out(app: &App, ctx: &Ctx) -> Reply {
    if let Some(value) = ctx.cookie(COOKIE) {
        console::sign_out(app, value);
    }
    see_other(&format!("{SIGN_IN}?signed_out=1"))
        .with_headers(vec![("set-cookie", cookie(app, COOKIE, "", Some(0)))])
}
