//! Personal health data: the signed consent flow (`POST /api/marketplace/listings/health`) and
//! the buyer's terms.

use serde_json::{Value, json};

use crate::support::{Party, TestServer};

const PATH: &str = "/api/marketplace/listings/health";

fn consent() -> Value {
    json!({
        "ownership": {"ownData": true, "adult": true, "noThirdPartyData": true, "voluntary": true},
        "saleTerms": {"acceptSaleTerms": true, "buyersKeepCopies": true, "noRecall": true},
        "authorizedUses": ["academic_research", "ai_training"],
        "deidentificationLevel": "name_removed",
        "stateAuthorizations": {"state": "CA", "generalAuthorization": true, "cmiaAuthorization": true},
    })
}

fn body(consent: Value) -> Value {
    json!({"title": "My sleep data, 2025", "description": "A year of my own sleep tracker exports.", "priceCents": 0, "consent": true, "preview": {"nights": 365}, "healthConsent": consent})
}

fn attestation() -> Value {
    json!({"notForInsurance": true, "notForEmployment": true, "notForDiscrimination": true, "noReidentification": true, "acceptUseTerms": true})
}

fn list(server: &TestServer, seller: &Party) -> Value {
    let created = server.send_auth("POST", PATH, &seller.key, &body(consent()));
    created.expect(201)
}

#[test]
fn an_incomplete_consent_is_refused_and_lists_nothing() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"my own sleep data");
    let refused = |consent: Value, status: u16, code: &str| {
        server
            .send_auth("POST", PATH, &seller.key, &body(consent))
            .assert_error(status, code);
    };
    let mut c = consent();
    c.as_object_mut().unwrap().remove("ownership");
    refused(c, 422, "HEALTH_CONSENT_REQUIRED");
    let mut c = consent();
    c["saleTerms"]["noRecall"] = json!(false);
    refused(c, 422, "HEALTH_CONSENT_REQUIRED");
    let mut c = consent();
    c["authorizedUses"] = json!([]);
    refused(c, 422, "HEALTH_CONSENT_REQUIRED");
    // California asks for its own authorization; Washington for another.
    let mut c = consent();
    c["stateAuthorizations"]
        .as_object_mut()
        .unwrap()
        .remove("cmiaAuthorization");
    refused(c, 422, "HEALTH_CONSENT_REQUIRED");
    let mut c = consent();
    c["stateAuthorizations"]["state"] = json!("WA");
    refused(c, 422, "HEALTH_CONSENT_REQUIRED");
    // Malformed members are 400.
    let mut c = consent();
    c["deidentificationLevel"] = json!("anonymous");
    refused(c, 400, "INVALID_ARGUMENT");
    let mut c = consent();
    c["authorizedUses"] = json!(["spying"]);
    refused(c, 400, "INVALID_ARGUMENT");
    let mut c = consent();
    c["authorizedUses"] = json!(["ai_training", "ai_training"]);
    refused(c, 400, "INVALID_ARGUMENT");
    let mut c = consent();
    c["ownership"]["extra"] = json!(true);
    refused(c, 400, "INVALID_ARGUMENT");
    // Another state's authorization may be present, but only as a boolean.
    let mut c = consent();
    c["stateAuthorizations"]["mhmdaAuthorization"] = json!("yes");
    refused(c, 400, "INVALID_ARGUMENT");
    let mut with_vertical = body(consent());
    with_vertical["verticalSlug"] = json!("research-data");
    server
        .send_auth("POST", PATH, &seller.key, &with_vertical)
        .assert_error(400, "INVALID_ARGUMENT");
    let mut no_consent = body(consent());
    no_consent.as_object_mut().unwrap().remove("healthConsent");
    server
        .send_auth("POST", PATH, &seller.key, &no_consent)
        .assert_error(422, "HEALTH_CONSENT_REQUIRED");
    // The ordinary route still refuses the health vertical.
    let mut plain = body(consent());
    plain.as_object_mut().unwrap().remove("healthConsent");
    plain["verticalSlug"] = json!("personal-health-data");
    server
        .send_auth("POST", "/api/marketplace/listings", &seller.key, &plain)
        .assert_error(422, "HEALTH_CONSENT_REQUIRED");

    let mine =
        server.get("/api/marketplace/listings?vertical=personal-health-data&samples=exclude");
    assert_eq!(mine.json()["total"], 0);
}

#[test]
fn a_consented_listing_carries_its_signed_consent_and_buyers_need_an_authorized_use() {
    let server = TestServer::start();
    let (seller, _twin) = server.seller("seller", b"my own sleep data");
    let created = list(&server, &seller);
    let listing = &created["listing"];
    assert_eq!(listing["verticalSlug"], "personal-health-data");
    assert_eq!(listing["healthConsentVerified"], true);
    assert_eq!(listing["deidentificationLevel"], "name_removed");
    assert_eq!(
        listing["authorizedUses"],
        json!(["academic_research", "ai_training"])
    );
    let record = &created["consent"];
    assert_eq!(record["kind"], "bourse.health-consent");
    assert_eq!(record["listingId"], listing["id"]);
    assert_eq!(record["sellerHandle"], seller.handle.as_str());
    assert_eq!(record["consent"], consent());
    let checked = server.post("/api/verify-receipt", &json!({"signed": record}));
    assert_eq!(checked.json()["valid"], true, "{}", checked.json());

    let id = listing["id"].as_str().unwrap();
    let detail = server
        .get(&format!("/api/marketplace/listings/{id}"))
        .json();
    assert_eq!(&detail["healthConsent"], record);

    let buyer = server.party("buyer");
    let path = format!("/api/marketplace/listings/{id}/purchase");
    let mut one_false = attestation();
    one_false["noReidentification"] = json!(false);
    for body in [
        json!({}),
        json!({"buyer_intended_use": "ai_training"}),
        json!({"buyer_intended_use": "spying", "buyer_attestation": attestation()}),
        json!({"buyer_intended_use": "ai_training", "buyer_attestation": one_false}),
    ] {
        server
            .send_auth("POST", &path, &buyer.key, &body)
            .assert_error(422, "HEALTH_TERMS_REQUIRED");
    }
    // A use the seller did not authorize.
    server
        .send_auth(
            "POST",
            &path,
            &buyer.key,
            &json!({"buyer_intended_use": "commercial_research", "buyer_attestation": attestation()}),
        )
        .assert_error(422, "HEALTH_USE_NOT_AUTHORIZED");
    let bought = server.send_auth(
        "POST",
        &path,
        &buyer.key,
        &json!({"buyer_intended_use": "ai_training", "buyer_attestation": attestation()}),
    );
    bought.assert_status(200);
    assert_eq!(bought.json()["status"], "delivered");
}
