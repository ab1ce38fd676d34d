//! A seller's public page: `GET /api/marketplace/sellers/{code}` (the seller by public code and
//! a page of their active listings, signed like every public answer) and its page for people,
//! `/market/sellers/{code}`, linked from listing pages and catalogue cards.

use serde_json::{Value, json};

use crate::support::TestServer;
use crate::support::catalog::{create, listing_body, seller, verify};

/// The seller code of a listing, as listings show it (`sellerName`).
fn code_of(listing: &Value) -> String {
    listing["listing"]["sellerName"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_sellers_page_shows_their_summary_and_active_listings_newest_first_signed() {
    let server = TestServer::start();
    let owner = seller(&server, "Quayside Data", b"rows");
    let other = seller(&server, "Other Seller", b"rows");
    let first = create(&server, &owner, &listing_body("Quay one", 0));
    let second = create(&server, &owner, &listing_body("Quay two", 0));
    let third = create(&server, &owner, &listing_body("Quay three", 0));
    create(&server, &other, &listing_body("Not the quay's", 0));
    let id = |listing: &Value| listing["listing"]["id"].as_str().unwrap().to_owned();
    server
        .send_auth(
            "POST",
            &format!("/api/marketplace/listings/{}/deactivate", id(&second)),
            &owner.key,
            &json!({}),
        )
        .ok();
    let code = code_of(&first);
    assert!(code.starts_with("S-"), "{code}");

    let page = server.get(&format!("/api/marketplace/sellers/{code}")).ok();
    assert_eq!(page["seller"]["code"], code.as_str());
    assert_eq!(
        page["total"], 2,
        "the deactivated listing is not offered: {page}"
    );
    let titles: Vec<&str> = page["listings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Quay three", "Quay one"], "newest first: {page}");
    assert_eq!(
        (page["offset"].clone(), page["limit"].clone()),
        (json!(0), json!(50))
    );
    // The seller as a listing's detail shows them, plus the code.
    let detail = server
        .get(&format!("/api/marketplace/listings/{}", id(&third)))
        .ok();
    for member in [
        "id",
        "displayName",
        "reputation",
        "ratingCount",
        "totalSalesCount",
    ] {
        assert_eq!(page["seller"][member], detail["seller"][member], "{member}");
    }
    assert_eq!(verify(&server, &page)["valid"], true, "signed: {page}");

    let second_page = server
        .get(&format!("/api/marketplace/sellers/{code}?limit=1&offset=1"))
        .ok();
    assert_eq!(second_page["listings"][0]["title"], "Quay one");
    assert_eq!(second_page["total"], 2);

    // S-000000 is never assigned (`service::catalog::sellers::seller_code`).
    server
        .get("/api/marketplace/sellers/S-000000")
        .assert_error(404, "NOT_FOUND");
    server
        .get(&format!("/api/marketplace/sellers/{}", owner.handle))
        .assert_error(404, "NOT_FOUND");
    server
        .get(&format!("/api/marketplace/sellers/{code}?limit=0"))
        .assert_invalid_naming("limit");
}

#[test]
fn a_sellers_page_for_people_pages_their_listings_and_is_linked_from_listings_and_cards() {
    let server = TestServer::start();
    let owner = seller(&server, "Estuary Data", b"rows");
    let first = create(&server, &owner, &listing_body("Estuary salinity", 0));
    create(&server, &owner, &listing_body("Estuary turbidity", 0));
    let code = code_of(&first);
    let id = first["listing"]["id"].as_str().unwrap();
    let seller_link = format!("href=\"/market/sellers/{code}\"");

    let listing = server.get(&format!("/market/listings/{id}")).text();
    assert!(listing.contains(&seller_link), "{listing}");
    let catalogue = server.get("/market?q=estuary").text();
    assert!(catalogue.contains(&seller_link), "{catalogue}");

    let page = server.get(&format!("/market/sellers/{code}?limit=1"));
    assert_eq!(page.status, 200, "{}", page.text());
    let text = page.text();
    assert!(!text.contains("<script"), "{text}");
    for part in [
        format!("<h1>Seller {code}</h1>"),
        "Estuary turbidity".to_owned(),
        format!("id=\"next\" rel=\"next\" href=\"/market/sellers/{code}?limit=1&amp;offset=1\""),
        format!("id=\"json-twin\" href=\"/api/marketplace/sellers/{code}?limit=1\""),
    ] {
        assert!(text.contains(&part), "{part} in {text}");
    }
    assert!(!text.contains("Estuary salinity"), "one a page: {text}");
    assert!(
        !text.contains(&owner.handle),
        "named by code, never handle: {text}"
    );
    let older = server
        .get(&format!("/market/sellers/{code}?limit=1&offset=1"))
        .text();
    assert!(older.contains("Estuary salinity"), "{older}");
    assert!(
        older.contains(&format!(
            "id=\"previous\" rel=\"prev\" href=\"/market/sellers/{code}?limit=1&amp;offset=0\""
        )),
        "{older}"
    );

    let unknown = server.get("/market/sellers/S-000000");
    assert_eq!(unknown.status, 404);
    assert!(unknown.text().contains("role=\"alert\""));
    assert_eq!(
        server
            .get(&format!("/market/sellers/{code}?limit=0"))
            .status,
        400
    );
}
