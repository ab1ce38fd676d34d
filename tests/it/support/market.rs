//! The marketplace flows tests share, each named as the README tells it: an agent, a seller with
//! a verified endpoint, a listing, a purchase, paying its sandbox checkout.

use serde_json::{Value, json};

use super::{Client, Resp};
use crate::seller_twin::{Mode, SellerTwin};

/// A registered agent as a test holds it.
pub struct Party {
    pub key: String,
    pub handle: String,
}

impl Client {
    /// Connects an agent's payouts on the sandbox rail (needed for paid listings).
    #[track_caller]
    pub fn onboard(&self, key: &str) {
        let link = self
            .send_auth("POST", "/api/sell/register", key, &json!({}))
            .ok();
        let path = self
            .path_of(link["completeUrl"].as_str().unwrap())
            .to_owned();
        self.send_auth("POST", &path, key, &json!({}))
            .assert_status(200);
    }

    /// Registers an agent; returns the 201 body.
    #[track_caller]
    pub fn register(&self, name: &str) -> Value {
        self.post("/api/agents/register", &json!({ "name": name }))
            .expect(201)
    }

    /// Registers an agent.
    #[track_caller]
    pub fn party(&self, name: &str) -> Party {
        let body = self.register(name);
        Party {
            key: body["apiKey"].as_str().unwrap().to_owned(),
            handle: body["handle"].as_str().unwrap().to_owned(),
        }
    }

    /// Registers one agent per name: "agents a, b and c".
    #[track_caller]
    pub fn parties<const N: usize>(&self, names: [&str; N]) -> [Party; N] {
        names.map(|name| self.party(name))
    }

    /// Registers a seller with a verified delivery endpoint (an honest twin serving
    /// `deliverable` as text) and connected payouts.
    #[track_caller]
    pub fn seller(&self, name: &str, deliverable: &[u8]) -> (Party, SellerTwin) {
        self.seller_serving(name, deliverable, "text/plain")
    }

    /// As [`Client::seller`], the twin serving `deliverable` as `content_type`.
    #[track_caller]
    pub fn seller_serving(
        &self,
        name: &str,
        deliverable: &[u8],
        content_type: &str,
    ) -> (Party, SellerTwin) {
        let seller = self.party(name);
        let twin = SellerTwin::start(&self.base, deliverable.to_vec(), content_type, Mode::Honest);
        self.send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            &seller.key,
            &json!({"url": twin.url}),
        )
        .assert_status(200);
        self.onboard(&seller.key);
        (seller, twin)
    }

    /// Creates a listing from `base` with `extra` fields laid over it; returns its id.
    #[track_caller]
    pub fn create_listing(&self, seller: &Party, base: Value, extra: Value) -> String {
        let mut body = base;
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let created = self
            .send_auth("POST", "/api/marketplace/listings", &seller.key, &body)
            .expect(201);
        created["listing"]["id"].as_str().unwrap().to_owned()
    }

    /// Buys a listing with the buyer's Bearer key.
    pub fn buy(&self, buyer: &Party, listing: &str) -> Resp {
        self.send_auth(
            "POST",
            &format!("/api/marketplace/listings/{listing}/purchase"),
            &buyer.key,
            &json!({}),
        )
    }

    /// Pays a pending purchase's sandbox checkout as the checkout page's Pay button does
    /// (its scripted twin, `POST /api/sandbox/checkout/{session}/pay`); asserts 200 and returns
    /// the answer.
    #[track_caller]
    pub fn pay_checkout(&self, pending: &Value) -> Value {
        let session = checkout_session(pending);
        self.post(&format!("/api/sandbox/checkout/{session}/pay"), &json!({}))
            .ok()
    }

    /// Buys a paid listing on the sandbox rail (asserting a pending checkout) and pays the
    /// checkout; returns the purchase as the buy answered it. The next read delivers it.
    #[track_caller]
    pub fn buy_and_pay(&self, buyer: &Party, listing: &str) -> Value {
        let pending = self.buy(buyer, listing).ok();
        assert_eq!(pending["status"], "pending_payment", "{pending}");
        self.pay_checkout(&pending);
        pending
    }

    /// The sandbox pay path whole: buys a paid listing, pays its checkout and reads the
    /// purchase as the buyer (the read that delivers it); asserts it was delivered and returns
    /// that read.
    #[track_caller]
    pub fn buy_and_receive(&self, buyer: &Party, listing: &str) -> Value {
        let pending = self.buy_and_pay(buyer, listing);
        let delivered = self.purchase(buyer, pending["id"].as_str().unwrap());
        assert_eq!(delivered["status"], "delivered", "{delivered}");
        delivered
    }

    /// Reads a purchase as its buyer (the read that delivers a paid purchase); asserts 200.
    #[track_caller]
    pub fn purchase(&self, buyer: &Party, id: &str) -> Value {
        self.get_auth(&format!("/api/marketplace/purchases/{id}"), &buyer.key)
            .ok()
    }
}

/// The session of a pending purchase's checkout: the last segment of its `checkoutUrl`.
#[track_caller]
pub fn checkout_session(pending: &Value) -> String {
    let url = pending["checkoutUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("no checkoutUrl in {pending}"));
    url.rsplit('/').next().unwrap().to_owned()
}
