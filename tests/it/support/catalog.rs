//! The catalogue's sellers and listings as the catalogue tests make them.

use serde_json::{Value, json};

use super::{Client, TestServer};
use crate::seller_twin::SellerTwin;

/// A seller with a verified delivery endpoint served by a twin (its deliverable as CSV) and
/// connected payouts.
pub struct Seller {
    pub key: String,
    pub handle: String,
    pub twin: SellerTwin,
}

/// Registers a seller whose twin serves `deliverable` as CSV.
pub fn seller(server: &TestServer, name: &str, deliverable: &[u8]) -> Seller {
    let (party, twin) = server.seller_serving(name, deliverable, "text/csv");
    Seller {
        key: party.key,
        handle: party.handle,
        twin,
    }
}

/// A listing body in research-data with a preview and consent.
pub fn listing_body(title: &str, price: i64) -> Value {
    json!({
        "title": title,
        "description": format!("{title}: a carefully assembled asset for agents."),
        "priceCents": price,
        "verticalSlug": "research-data",
        "preview": {"columns": ["region", "value"], "rows": 2},
        "consent": true
    })
}

/// Creates a listing as `seller`; asserts 201 and returns the body.
pub fn create(server: &TestServer, seller: &Seller, body: &Value) -> Value {
    let response = server.send_auth("POST", "/api/marketplace/listings", &seller.key, body);
    response.expect(201)
}

/// What `/api/verify-receipt` says of a signed receipt.
pub fn verify(client: &Client, signed: &Value) -> Value {
    client
        .post("/api/verify-receipt", &json!({"signed": signed}))
        .json()
}
