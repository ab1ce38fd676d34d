//! Payout onboarding pages: the sandbox's one-button onboarding (`GET /sandbox/connect/{id}`)
//! and the page Stripe sends a seller back to (`GET /sell/connect/{id}`), which answers a fresh
//! onboarding link until payouts are connected.

use hyper::body::Bytes;

use super::{back, escape as html, not_found_page, outcome, page, primary_button, see_other};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::service::{App, commerce::rails::sandbox, commerce::rails::stripe};

/// The button of the onboarding page.
pub async fn complete_form(app: &App, ctx: &Ctx) -> Result<Reply> {
    let onboarding = ctx.param();
    back(
        &format!("/sandbox/connect/{onboarding}"),
        sandbox::complete_onboarding(app, onboarding)
            .await
            .map(|done| done.status),
    )
}

pub async fn connect_page(app: &App, ctx: &Ctx) -> Result<Reply> {
    let id = ctx.param();
    let complete = match sandbox::onboarding_complete(app, id).await {
        Ok(complete) => complete,
        Err(crate::error::Error::NotFound(_)) => {
            return Ok(not_found_page(
                "No such onboarding",
                "This onboarding link does not exist: ask for a new one with POST /api/sell/register.",
            ));
        }
        Err(error) => return Err(error),
    };
    let (state, sentence, action) = if complete {
        (
            "complete",
            "Payouts are connected: this seller can sell paid listings.",
            String::new(),
        )
    } else {
        (
            "pending",
            "Sandbox onboarding: one click connects this seller's payouts (no bank details are asked).",
            primary_button(
                "complete",
                &format!("/sandbox/connect/{id}/complete"),
                "Complete onboarding",
            ),
        )
    };
    // The scripted twin of the button, while there is one.
    let scripts = if complete {
        String::new()
    } else {
        format!(
            " Scripts: <code>POST /api/sandbox/connect/{}/complete</code>.",
            html(id)
        )
    };
    let body = format!(
        "<h1>Connect payouts</h1><p id=\"state\" class=\"state {state}\" data-state=\"{state}\">{sentence}</p>{outcome}{action}\
         <p class=\"meta\">Status: <span id=\"status\">{state}</span>.{scripts}</p>",
        outcome = outcome(ctx),
    );
    Ok(page("bourse sandbox onboarding", &body))
}

pub async fn connect_return(app: &App, ctx: &Ctx) -> Result<Reply> {
    let id = ctx.param();
    Ok(match stripe::connect_return(app, id).await? {
        Some(link) => see_other(link),
        None => Reply::Bytes(
            "text/html; charset=utf-8",
            Bytes::from_static(
                b"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Payouts connected</title></head>\
                  <body><h1>Payouts connected</h1><p id=\"status\">complete</p>\
                  <p>Stripe reports payouts enabled for this seller: paid listings can be sold.</p></body></html>",
            ),
        ),
    })
}
