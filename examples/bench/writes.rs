//! The write workloads beyond message send: creating listings and opening purchases, as
//! many agents do them (each behind its own client address), with every limit on.
//!
//! - **listing create**: sellers (registered, their delivery endpoint verified, onboarded on the
//!   sandbox rail) each create listings with a new title every request: the deliverable
//!   fingerprinted from the seller's endpoint (`examples/seller_endpoint.rs` on this machine),
//!   a signed first version, its history and transparency-log entries and the browse index.
//! - **purchase**: buyers each open a sandbox checkout for a listing they have not bought yet
//!   (no pair repeats within the budget), once with no spending policy and once with a policy
//!   whose caps (per purchase, day and month) are checked inside the writer's transaction, so
//!   the two rows side by side are the cost of the check.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::loadgen::{Requests, client_ip, once, register_as};

/// Sellers that create listings, and buyers that buy them.
const SELLERS: usize = 200;
const BUYERS: usize = 500;
/// Listings the purchase workloads buy from (each buyer buys each at most once).
const FOR_SALE: usize = 200;

/// Sellers given a delivery URL so far (each gets its own path).
static ENDPOINTS: AtomicUsize = AtomicUsize::new(0);

/// Client addresses of the agents made here start past the message senders' (`client_ip(i)`
/// for small `i`), so registration limits never meet.
const FIRST_ADDRESS: usize = 1 << 20;

/// A request from `agent`; `close` asks the server to close after it (for [`once`]).
fn request(method: &str, host: &str, path: &str, agent: &Agent, json: &str, close: bool) -> String {
    let (key, ip) = (&agent.key, &agent.ip);
    let close = if close { "Connection: close\r\n" } else { "" };
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nX-Forwarded-For: {ip}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{close}\r\n{json}",
        json.len()
    )
}

fn listing_json(n: usize) -> String {
    format!(
        r#"{{"title":"Bench asset {n}","description":"Asset {n} made by the bench: a listing as a seller agent writes one.","priceCents":{},"verticalSlug":"research-data","preview":{{"columns":["region","value"],"rows":2}},"consent":true}}"#,
        100 + n % 900
    )
}

/// An agent made for the bench: its key and the address it comes from.
struct Agent {
    key: String,
    ip: String,
}

async fn agents(host: &str, count: usize, first: usize) -> Vec<Agent> {
    let mut made = Vec::with_capacity(count);
    for i in 0..count {
        let ip = client_ip(FIRST_ADDRESS + first + i);
        let (key, _) = register_as(host, &ip).await;
        made.push(Agent { key, ip });
    }
    made
}

/// Registers `count` sellers, verifies `endpoint` as each one's delivery endpoint and connects
/// each one's payouts on the sandbox rail (the link `POST /api/sell/register` answers,
/// completed at once).
async fn sellers(host: &str, endpoint: &str, count: usize) -> Vec<Agent> {
    let sellers = agents(host, count, 0).await;
    for seller in &sellers {
        // A delivery URL belongs to one seller; the endpoint answers on any path.
        let nth = ENDPOINTS.fetch_add(1, Ordering::Relaxed);
        let url = format!(r#"{{"url":"{endpoint}seller/{nth}"}}"#);
        let (status, body) = once(
            host,
            &request(
                "PUT",
                host,
                "/api/sell/delivery-endpoint",
                seller,
                &url,
                true,
            ),
        )
        .await;
        assert_eq!(status, 200, "bench: delivery endpoint refused: {body}");
        let (status, body) = once(
            host,
            &request("POST", host, "/api/sell/register", seller, "{}", true),
        )
        .await;
        let link: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let path = link["completeUrl"]
            .as_str()
            .and_then(|url| url.find("/api/").map(|at| url[at..].to_owned()))
            .unwrap_or_else(|| panic!("bench: payouts onboarding refused ({status}): {body}"));
        let (status, body) = once(host, &request("POST", host, &path, seller, "{}", true)).await;
        assert_eq!(
            status, 200,
            "bench: payouts onboarding not completed: {body}"
        );
    }
    sellers
}

/// The listing create workload: each request a new listing by the next seller; the budget is
/// unbounded (no limit applies to listing creation).
pub async fn listing_create(host: &str, endpoint: &str) -> Requests {
    let sellers = sellers(host, endpoint, SELLERS).await;
    let host = host.to_owned();
    Arc::new(move |n| {
        let seller = &sellers[n % sellers.len()];
        request(
            "POST",
            &host,
            "/api/marketplace/listings",
            seller,
            &listing_json(n),
            false,
        )
        .into_bytes()
    })
}

/// The purchase workload: `BUYERS` buyers (with `policy` set on each, when given) opening
/// sandbox checkouts for `FOR_SALE` listings, buyer-major so no buyer buys a listing twice
/// within the budget it returns.
pub async fn purchases(
    host: &str,
    endpoint: &str,
    policy: Option<&str>,
    first: usize,
) -> (Requests, usize) {
    let sellers = sellers(host, endpoint, 10).await;
    let mut listings = Vec::with_capacity(FOR_SALE);
    for n in 0..FOR_SALE {
        let seller = &sellers[n % sellers.len()];
        let (status, body) = once(
            host,
            &request(
                "POST",
                host,
                "/api/marketplace/listings",
                seller,
                &listing_json(first + n),
                true,
            ),
        )
        .await;
        let created: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let id = created["listing"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("bench: listing refused ({status}): {body}"));
        listings.push(id.to_owned());
    }
    let buyers = agents(host, BUYERS, first).await;
    if let Some(policy) = policy {
        for buyer in &buyers {
            let (status, body) = once(
                host,
                &request(
                    "PUT",
                    host,
                    "/api/agents/me/spending-policy",
                    buyer,
                    policy,
                    true,
                ),
            )
            .await;
            assert_eq!(status, 200, "bench: spending policy refused: {body}");
        }
    }
    let host = host.to_owned();
    let requests: Requests = Arc::new(move |n| {
        let buyer = &buyers[n % buyers.len()];
        let listing = &listings[n / buyers.len() % listings.len()];
        request(
            "POST",
            &host,
            &format!("/api/marketplace/listings/{listing}/purchase"),
            buyer,
            "{}",
            false,
        )
        .into_bytes()
    });
    (requests, BUYERS * FOR_SALE)
}

/// A policy that never refuses a bench purchase but is checked on every one: caps per
/// purchase, day and month, no approval threshold.
pub const POLICY: &str =
    r#"{"perPurchaseCents":100000,"dailyCents":100000000,"monthlyCents":1000000000}"#;
