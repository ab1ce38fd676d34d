//! The OAuth authorization page (`/oauth/authorize`): a person lets a hosted MCP client act for
//! one agent. They sign in by pasting the agent's API key, or register a new agent on the spot,
//! tick the permissions they allow (spending is never ticked for them), and press Allow or Deny.
//! Plain HTML, no scripts, no cookies: the form carries the request, and the credential is typed
//! into it, so a page elsewhere cannot submit it for the person.

use serde_json::json;

use super::{escape as html, page_with_banner, with_status};
use crate::args::Args;
use crate::error::{Error, Result};
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::request::agents::{REGISTER, Register};
use crate::request::{Input, Scope};
use crate::service::App;
use crate::service::identity::agents::{self, Client};
use crate::service::identity::oauth::flow::{self, Authorization, Refusal};
use crate::service::identity::oauth::{Scopes, clients};

const BANNER: &str = "<strong>bourse</strong> — authorize an app";
/// The longest agent name the page's field takes (the registration rule decides the rest).
const NAME_MAX: usize = 100;

/// Headers of every answer of this page: no framing (clickjacking), no caching, no referrer (the
/// query names the client's state).
fn guarded(reply: Reply) -> Reply {
    reply.with_headers(vec![
        ("x-frame-options", "DENY".into()),
        ("content-security-policy", "frame-ancestors 'none'".into()),
        ("cache-control", "no-store".into()),
        ("referrer-policy", "no-referrer".into()),
    ])
}

fn see_other(location: String) -> Reply {
    guarded(super::see_other(location))
}

/// A refusal the person reads (the client cannot be trusted with a redirect).
fn refusal_page(message: &str) -> Reply {
    let body = format!(
        "<h1>This authorization request cannot be used</h1><p id=\"error\" role=\"alert\">{}</p>\
         <p class=\"meta\">Nothing was granted. Go back to the app and start again.</p>",
        html(message)
    );
    guarded(with_status(
        page_with_banner("Authorization refused", BANNER, &body),
        400,
    ))
}

fn refused(refusal: Refusal) -> Result<Reply> {
    match refusal {
        Refusal::Page(message) => Ok(refusal_page(&message)),
        Refusal::Redirect(location) => Ok(see_other(location)),
        Refusal::Failed(error) => Err(error),
    }
}

/// The request's own parameters as hidden form fields, so the form carries the request.
fn hidden_fields(params: &[(String, String)]) -> String {
    [
        "response_type",
        "client_id",
        "redirect_uri",
        "state",
        "code_challenge",
        "code_challenge_method",
        "scope",
        "resource",
    ]
    .iter()
    .filter_map(|name| {
        params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(key, value)| {
                format!(
                    "<input type=\"hidden\" name=\"{key}\" value=\"{}\">",
                    html(value)
                )
            })
    })
    .collect()
}

/// The page itself, with an optional error above the form (a 400 then).
fn render(request: &Authorization, params: &[(String, String)], error: Option<&str>) -> Reply {
    let client = &request.client;
    let hidden = hidden_fields(params);
    let scopes: String = request
        .scopes
        .iter()
        .map(|scope| {
            // Spending is offered, never pre-ticked: a person must choose it.
            let (checked, class) = if scope == Scope::Spend {
                ("", " class=\"warn\"")
            } else {
                (" checked", "")
            };
            format!(
                "<label{class}><input type=\"checkbox\" name=\"grant\" value=\"{name}\"{checked}> <strong>{name}</strong>: {sentence}</label>",
                name = scope.name(),
                sentence = scope.sentence()
            )
        })
        .collect();
    let spend_note = if request.scopes.contains(Scope::Spend) {
        "<p class=\"warn\">Spending is granted only if you tick it.</p>\
         <label>Daily spending cap for this app, in US dollars (UTC day; empty for none beyond the agent's own policy) \
         <input type=\"text\" name=\"spend_daily_cap\" inputmode=\"decimal\" maxlength=\"12\" placeholder=\"20.00\"></label>"
    } else {
        ""
    };
    let error = error.map_or_else(String::new, |message| {
        format!(
            "<p id=\"result\" class=\"refused\" role=\"alert\">{}</p>",
            html(message)
        )
    });
    // What the page can vouch for comes first: a metadata-document client is known by the host
    // that serves its document; its name is what that document claims.
    let redirect_host = clients::host_of(&request.redirect_uri).unwrap_or("this app");
    let origin = if client.kind == "metadata" {
        let host = clients::host_of(&client.client_id).unwrap_or_default();
        let differs = if host == redirect_host {
            String::new()
        } else {
            " <strong class=\"warn\" id=\"host-warning\">It sends you back to another host than the one that describes it: continue only if you trust both.</strong>".to_owned()
        };
        format!(
            "from <strong id=\"client-host\">{}</strong> (described at <code>{}</code>).{differs}",
            html(host),
            html(&client.client_id)
        )
    } else {
        "registered with this marketplace.".to_owned()
    };
    let body = format!(
        "<h1>Authorize {name}</h1>\
         <p id=\"client\" data-client-id=\"{client_id}\">An app calling itself <strong>{name}</strong> asks to use this marketplace as one of your agents. It is {origin} \
         When you decide, you are sent back to <strong id=\"redirect-host\">{host}</strong>.</p>{error}\
         <form method=\"post\" action=\"/oauth/authorize\">{hidden}\
         <fieldset><legend>It asks to</legend>{scopes}{spend_note}</fieldset>\
         <fieldset><legend>Sign in as an agent</legend><label>The agent's API key \
         <input type=\"password\" name=\"api_key\" autocomplete=\"off\" placeholder=\"svc_live_…\"></label></fieldset>\
         <fieldset><legend>Or register a new agent</legend><label>Agent name \
         <input type=\"text\" name=\"new_agent_name\" maxlength=\"{NAME_MAX}\"></label>\
         <span class=\"meta\">Its API key is shown once after you allow.</span></fieldset>\
         <button id=\"allow\" class=\"primary\" type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
         <button id=\"deny\" type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>\
         <p class=\"meta\">The app gets an access token that lasts an hour and can be refreshed; rotating the agent's API key \
         (<code>POST /api/agents/keys/revoke</code>) ends it, and so can the marketplace's operator.</p>",
        name = html(&client.name),
        client_id = html(&client.client_id),
        host = html(redirect_host),
    );
    let reply = page_with_banner(&format!("Authorize {}", client.name), BANNER, &body);
    guarded(if error.is_empty() {
        reply
    } else {
        with_status(reply, 400)
    })
}

/// `GET /oauth/authorize`.
pub async fn page(app: &App, ctx: &Ctx) -> Result<Reply> {
    match flow::check(app, &ctx.query, &ctx.client_ip.to_string()).await {
        Ok(request) => Ok(render(&request, &ctx.query, None)),
        Err(refusal) => refused(refusal),
    }
}

/// The first value of a form field, trimmed; empty counts as absent.
fn field<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// `POST /oauth/authorize`: the person's decision.
pub async fn decide(app: &App, ctx: &Ctx) -> Result<Reply> {
    if !ctx.form_content_type() {
        return Ok(refusal_page(
            "the decision must be sent by the authorization page's form",
        ));
    }
    let params = ctx.form();
    let request = match flow::check(app, &params, &ctx.client_ip.to_string()).await {
        Ok(request) => request,
        Err(refusal) => return refused(refusal),
    };
    match field(&params, "decision") {
        Some("deny") => return Ok(see_other(flow::deny(app, &request))),
        Some("allow") => {}
        _ => return Ok(render(&request, &params, Some("Press Allow or Deny."))),
    }
    let granted = params
        .iter()
        .filter(|(key, _)| key == "grant")
        .filter_map(|(_, value)| Scope::named(value))
        .fold(Scopes::default(), Scopes::with);
    if granted.intersect(request.scopes).is_empty() {
        return Ok(render(
            &request,
            &params,
            Some("Tick at least one permission, or press Deny."),
        ));
    }
    let spend_daily_cents = match field(&params, "spend_daily_cap").map(dollars_to_cents) {
        None => None,
        Some(Some(cents)) => Some(cents),
        Some(None) => {
            return Ok(render(
                &request,
                &params,
                Some(
                    "The daily spending cap is an amount in dollars and cents, such as 20 or 19.99.",
                ),
            ));
        }
    };
    let (agent, new_key) = match (field(&params, "api_key"), field(&params, "new_agent_name")) {
        (Some(_), Some(_)) => {
            return Ok(render(
                &request,
                &params,
                Some("Either paste an API key or name a new agent, not both."),
            ));
        }
        (None, None) => {
            return Ok(render(
                &request,
                &params,
                Some("Paste the API key of the agent the app should act for, or name a new agent."),
            ));
        }
        (Some(key), None) => match agents::authenticate(app, Some(key)).await {
            Ok(agent) if agent.restricted.is_some() => {
                return Ok(render(
                    &request,
                    &params,
                    Some("A restricted key cannot authorize apps: paste the agent's full API key."),
                ));
            }
            Ok(agent) => (agent, None),
            Err(Error::Unauthenticated(_)) => {
                return Ok(render(
                    &request,
                    &params,
                    Some("That API key is unknown or was rotated. Nothing was granted."),
                ));
            }
            Err(error) => return Err(error),
        },
        (None, Some(name)) => match register(app, ctx, name).await {
            Ok((agent, key)) => (agent, Some(key)),
            Err(error) if error.status() < 500 => {
                return Ok(render(
                    &request,
                    &params,
                    Some(&format!("The agent could not be registered: {error}")),
                ));
            }
            Err(error) => return Err(error),
        },
    };
    if let Some(key) = new_key {
        // The code is minted when the person presses Continue, not now: copying the key may take
        // longer than a code lives.
        return Ok(created_page(
            &agent.handle,
            &key,
            &params,
            granted,
            &request,
        ));
    }
    Ok(see_other(
        flow::allow(app, &request, &agent, granted, spend_daily_cents).await?,
    ))
}

/// Registers a new agent with the registration's own rules and limits.
async fn register(
    app: &App,
    ctx: &Ctx,
    name: &str,
) -> Result<(crate::store::agents::AgentRow, String)> {
    let input = Input::body(&REGISTER, Args::from_value(json!({ "name": name }))?)?;
    let ip = ctx.client_ip.to_string();
    let answer = agents::register(app, Register::read(&input)?, &Client { ip: &ip }).await?;
    let key = answer.api_key;
    let agent = agents::authenticate(app, Some(&key)).await?;
    Ok((agent, key))
}

/// After registering a new agent: its key, shown once, and a Continue button that allows the
/// app as that agent (the form carries the request, the ticked permissions and the new key).
fn created_page(
    handle: &str,
    key: &str,
    params: &[(String, String)],
    granted: Scopes,
    request: &Authorization,
) -> Reply {
    let grants: String = granted
        .iter()
        .map(|scope| {
            format!(
                "<input type=\"hidden\" name=\"grant\" value=\"{}\">",
                scope.name()
            )
        })
        .collect();
    let body = format!(
        "<h1>Agent {handle} created</h1>\
         <p>Its API key is shown <strong>once</strong>. Keep it somewhere safe: it is how you sign in as this agent, \
         and rotating it ends the app's access.</p>\
         <p><code id=\"api-key\">{key}</code></p>\
         <form method=\"post\" action=\"/oauth/authorize\">{hidden}{grants}\
         <input type=\"hidden\" name=\"api_key\" value=\"{key}\">{cap}\
         <button id=\"continue\" class=\"primary\" type=\"submit\" name=\"decision\" value=\"allow\">Continue to {name}</button></form>",
        handle = html(handle),
        key = html(key),
        hidden = hidden_fields(params),
        name = html(&request.client.name),
        cap = field(params, "spend_daily_cap").map_or_else(String::new, |cap| format!(
            "<input type=\"hidden\" name=\"spend_daily_cap\" value=\"{}\">",
            html(cap)
        )),
    );
    guarded(page_with_banner("Agent created", BANNER, &body))
}

/// A dollar amount typed by a person (`20`, `19.99`, `$5.5`) in cents; `None` when it is not one
/// (or above ten million dollars).
fn dollars_to_cents(text: &str) -> Option<i64> {
    let text = text.trim().trim_start_matches('$');
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty()
        || whole.len() > 8
        || fraction.len() > 2
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let cents: i64 = format!("{fraction:0<2}").parse().ok()?;
    Some(whole * 100 + cents)
}

#[cfg(test)]
mod tests {
    use super::dollars_to_cents;

    #[test]
    fn a_typed_dollar_amount_is_read_in_cents() {
        assert_eq!(dollars_to_cents("20"), Some(2000));
        assert_eq!(dollars_to_cents("$19.99"), Some(1999));
        assert_eq!(dollars_to_cents("5.5"), Some(550));
        assert_eq!(dollars_to_cents(".25"), Some(25));
        for bad in ["", "-1", "1.234", "1e3", "12,00", "999999999"] {
            assert_eq!(dollars_to_cents(bad), None, "{bad}");
        }
    }
}
