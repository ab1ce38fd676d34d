//! The console's purchases and escrow (`GET /console/purchases`): every purchase by state and
//! rail, and the escrow queue with its release times, beside the totals of
//! `GET /api/operator/payments` (the same service function).

use super::{html, layout};
use crate::error::Result;
use crate::http::request::Ctx;
use crate::http::response::Reply;
use crate::pages::{count, dollars, escape};
use crate::service::App;
use crate::service::commerce::operator::{self, Filter, STATES};
use crate::service::commerce::payments;
use crate::service::identity::console::Session;
use crate::service::rail::Rail;
use crate::store::console::PurchaseLine;

fn select(id: &str, label: &str, names: &[&str], chosen: Option<&str>) -> String {
    let options: String = names
        .iter()
        .map(|name| {
            let selected = if Some(*name) == chosen {
                " selected"
            } else {
                ""
            };
            format!("<option value=\"{name}\"{selected}>{name}</option>")
        })
        .collect();
    format!(
        "<label for=\"{id}\">{label} <select id=\"{id}\" name=\"{id}\"><option value=\"\">any</option>{options}</select></label>"
    )
}

fn rows(lines: &[PurchaseLine], release: bool) -> String {
    lines
        .iter()
        .map(|p| {
            let last = if release {
                escape(p.release_at.as_deref().unwrap_or("awaiting delivery or shipment"))
            } else {
                escape(p.escrow.as_deref().unwrap_or("—"))
            };
            format!(
                "<tr><td><code>{id}</code></td><td><a href=\"/console/listings/{listing}\">{title}</a></td><td>{buyer}</td><td>{seller}</td><td>{status}</td><td>{rail}</td><td>{amount}</td><td>{created}</td><td>{last}</td></tr>",
                id = escape(&p.id),
                listing = escape(&p.listing_id),
                title = escape(&p.listing_title),
                buyer = escape(p.buyer_handle.as_deref().unwrap_or("anonymous")),
                seller = escape(&p.seller_handle),
                status = escape(&p.status),
                rail = escape(&p.rail),
                amount = dollars(p.amount_cents),
                created = escape(&p.created_at),
            )
        })
        .collect()
}

/// What the operator may do about a purchase on each rail: the REST operator API has no refund
/// or shipment route, so the console offers none either and says who acts instead.
const RAIL_ACTIONS: &[(&str, &str)] = &[
    ("free", "No money moves: nothing to refund or ship."),
    (
        "checkout",
        "Sandbox test payments: an open checkout is paid or cancelled on the Sandbox page; no money moves, so there is nothing to refund.",
    ),
    (
        "card",
        "Stripe: the server itself refunds a payment that arrived after its checkout ended (owed refunds are listed below and retried by the worker); any other refund is made in the Stripe dashboard. There is no operator refund route.",
    ),
    (
        "x402_usdc_base",
        "USDC over x402: settled on-chain, with no refund route; released sales are paid to sellers by the operator (see /api/operator/payments).",
    ),
];

fn rail_actions() -> String {
    let rows: String = RAIL_ACTIONS
        .iter()
        .map(|(rail, what)| {
            format!(
                "<tr><th scope=\"row\">{rail}</th><td>{}</td></tr>",
                escape(what)
            )
        })
        .collect();
    format!(
        "<h2>Operator actions by rail</h2>\
         <p id=\"no-operator-actions\">No rail offers the operator a refund or a shipment: a physical order is marked shipped by its seller (<code>POST /api/marketplace/purchases/{{id}}/ship</code>), which starts its escrow clock.</p>\
         <div class=\"scroll\"><table id=\"rail-actions\"><thead><tr><th scope=\"col\">Rail</th><th scope=\"col\">Who acts</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )
}

fn refunds(money: &payments::OperatorPayments) -> String {
    let rows: String = money
        .pending_refunds
        .iter()
        .map(|r| {
            format!(
                "<tr><td><code>{id}</code></td><td>{amount}</td><td>{tries}</td><td>{error}</td><td>{retry}</td></tr>",
                id = escape(&r.purchase_id),
                amount = dollars(r.amount_cents),
                tries = r.refused_attempts,
                error = escape(r.error.as_deref().unwrap_or("—")),
                retry = escape(r.retry_at.as_deref().unwrap_or("—")),
            )
        })
        .collect();
    format!(
        "<h2>Refunds owed to buyers</h2><p id=\"refunds-made\">{made} refunds made; {owed} owed.</p>\
         <div class=\"scroll\"><table id=\"refunds\"><thead><tr><th scope=\"col\">Purchase</th><th scope=\"col\">Amount</th><th scope=\"col\">Refused attempts</th><th scope=\"col\">Last error</th><th scope=\"col\">Next try</th></tr></thead><tbody>{rows}</tbody></table></div>",
        made = count(money.refunds_made),
        owed = money.pending_refunds.len(),
    )
}

const HEAD: &str = "<th scope=\"col\">Purchase</th><th scope=\"col\">Listing</th><th scope=\"col\">Buyer</th><th scope=\"col\">Seller</th><th scope=\"col\">State</th><th scope=\"col\">Rail</th><th scope=\"col\">Amount</th><th scope=\"col\">Created</th>";

/// `GET /console/purchases?status=&rail=`.
///
/// # Errors
/// `INVALID_ARGUMENT` for an unknown state or rail; database failure.
pub async fn page(app: &App, ctx: &Ctx, session: &Session) -> Result<Reply> {
    let filter = Filter::read(ctx.query("status"), ctx.query("rail"))?;
    let (lines, total) = operator::purchases(app, filter.clone()).await?;
    let queue = operator::escrow_queue(app).await?;
    let money = payments::operator_view(app).await?;
    let rails: Vec<&str> = Rail::ALL.iter().map(|r| r.name()).collect();
    let body = format!(
        "<h1>Purchases and escrow</h1>\
         <dl class=\"tiles\"><div class=\"tile\"><dt>Escrow held (sellers' net)</dt><dd id=\"escrow-held\">{held}</dd></div>\
         <div class=\"tile\"><dt>Held sales</dt><dd>{held_rows}</dd></div>\
         <div class=\"tile\"><dt>Due for release</dt><dd>{due}</dd></div>\
         <div class=\"tile\"><dt>Open checkouts</dt><dd>{open}</dd></div></dl>\
         <p class=\"meta\">Escrow is released by the server's worker when its clock has run; refunds and shipments are the rail's and the seller's (see <a href=\"/api/operator/payments\">/api/operator/payments</a>).</p>{actions}{refunds}\
         <h2>Escrow queue</h2><div class=\"scroll\"><table id=\"escrow\"><thead><tr>{HEAD}<th scope=\"col\">Release</th></tr></thead><tbody>{queue}</tbody></table></div>\
         <h2>Every purchase</h2>\
         <form method=\"get\" action=\"/console/purchases\" class=\"filters\">{status}{rail}<button id=\"filter\" type=\"submit\">Filter</button></form>\
         <p id=\"summary\" role=\"status\">{total} purchases match; showing {shown}.</p>\
         <div class=\"scroll\"><table id=\"purchases\"><thead><tr>{HEAD}<th scope=\"col\">Escrow</th></tr></thead><tbody>{list}</tbody></table></div>",
        held = dollars(money.escrow.held_seller_net_cents),
        held_rows = count(money.escrow.held_rows),
        due = count(money.escrow.due_rows),
        open = count(money.open_checkouts),
        actions = rail_actions(),
        refunds = refunds(&money),
        queue = rows(&queue, true),
        status = select("status", "State", &STATES, filter.status),
        rail = select("rail", "Rail", &rails, filter.rail.map(Rail::name)),
        total = count(total),
        shown = lines.len(),
        list = rows(&lines, false),
    );
    Ok(html(
        200,
        layout(app, "Purchases", Some(session), "/console/purchases", &body),
    ))
}
