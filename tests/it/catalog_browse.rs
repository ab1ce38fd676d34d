//! Browsing the catalogue: every filter with totals and paging, the sorts (popularity,
//! quality, trust) with stable ties, samples, category and vertical counts, the classifier for
//! listings without a vertical, and the stats.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::TestServer;
use crate::support::catalog::{Seller, create, listing_body, seller, verify};
use crate::support::{WAIT, wait_until};

/// Seeds a small catalogue with known properties; returns (seller, ids in creation order).
fn seeded(server: &TestServer) -> (Seller, Vec<String>) {
    let seller = seller(server, "catalogue", b"x");
    let specs = [
        (
            "Alpha soil moisture readings",
            500,
            "research-data",
            "standard",
        ),
        ("Bravo GPU hours on H100", 0, "compute-gpu", "standard"),
        (
            "Charlie contract templates pack",
            1200,
            "contracts-templates",
            "exclusive",
        ),
        ("Delta soil nutrient survey", 50, "research-data", "limited"),
        ("Echo demographic panel", 3000, "demographics", "standard"),
    ];
    let ids = specs
        .iter()
        .map(|(title, price, vertical, kind)| {
            let mut body = listing_body(title, *price);
            body["verticalSlug"] = json!(vertical);
            body["listingType"] = json!(kind);
            if *kind == "limited" {
                body["maxCopies"] = json!(10);
            }
            create(server, &seller, &body)["listing"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    (seller, ids)
}

fn titles(response: &Value) -> Vec<String> {
    response["listings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["title"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn browse_supports_every_filter_with_totals_and_paging() {
    let server = TestServer::start();
    seeded(&server);
    let browse = |query: &str| {
        let response = server.get(&format!("/api/marketplace/listings?{query}"));
        assert_eq!(
            response.status,
            200,
            "{query}: {}",
            String::from_utf8_lossy(&response.body)
        );
        response.json()
    };
    let all = browse("");
    assert_eq!(all["total"], 5);
    assert_eq!(all["limit"], 50);
    assert_eq!(all["offset"], 0);
    assert_eq!(
        titles(&all),
        ["Echo", "Delta", "Charlie", "Bravo", "Alpha"],
        "recent first by default"
    );

    assert_eq!(titles(&browse("q=soil")), ["Delta", "Alpha"]);
    assert_eq!(
        browse("q=")["total"],
        5,
        "an empty free-text query is absent"
    );
    assert_eq!(
        titles(&browse("q=soil%20survey")),
        ["Delta"],
        "every word must match"
    );
    assert_eq!(
        browse("q=%22soil%22%20OR%20NEAR(x*)%20-%20%5E")["total"],
        0,
        "FTS syntax is quoted away"
    );
    assert_eq!(titles(&browse("category=compute")), ["Bravo"]);
    assert_eq!(
        titles(&browse("vertical=research-data")),
        ["Delta", "Alpha"]
    );
    assert_eq!(titles(&browse("type=exclusive")), ["Charlie"]);
    assert_eq!(titles(&browse("type=limited")), ["Delta"]);
    assert_eq!(titles(&browse("price=free")), ["Bravo"]);
    assert_eq!(browse("price=paid")["total"], 4);
    assert_eq!(
        titles(&browse("class=DIGITAL")),
        ["Bravo"],
        "compute belongs to DIGITAL"
    );
    assert_eq!(
        titles(&browse("class=research")),
        ["Echo", "Delta", "Charlie", "Alpha"],
        "data and documents"
    );
    assert_eq!(
        browse("min_rating=1")["total"],
        0,
        "unrated listings are excluded"
    );

    assert_eq!(
        titles(&browse("sort=price_asc")),
        ["Bravo", "Delta", "Alpha", "Charlie", "Echo"]
    );
    assert_eq!(
        titles(&browse("sort=price_desc")),
        ["Echo", "Charlie", "Alpha", "Delta", "Bravo"]
    );

    let page = browse("limit=2&offset=2");
    assert_eq!(page["total"], 5);
    assert_eq!(page["limit"], 2);
    assert_eq!(page["offset"], 2);
    assert_eq!(titles(&page), ["Charlie", "Bravo"]);
    assert_eq!(
        browse("limit=2&offset=4")["listings"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    for (query, name) in [
        ("sort=cheapest", "sort"),
        ("type=rare", "type"),
        ("samples=never", "samples"),
        ("price=cheap", "price"),
        ("class=FOOD", "class"),
        ("category=food", "category"),
        ("vertical=nope", "vertical"),
        ("min_rating=0", "min_rating"),
        ("min_rating=six", "min_rating"),
        ("limit=101", "limit"),
        ("limit=0", "limit"),
        ("limit=2.5", "limit"),
        ("offset=-1", "offset"),
        // An empty choice, slug or number is refused (its schema refuses it), not the default.
        ("price=", "price"),
        ("type=", "type"),
        ("sort=", "sort"),
        ("samples=", "samples"),
        ("class=", "class"),
        ("category=", "category"),
        ("vertical=", "vertical"),
        ("min_rating=", "min_rating"),
        ("limit=", "limit"),
        // A parameter given twice is refused: which value would count?
        ("sort=recent&sort=popular", "sort"),
        ("q=soil&q=survey", "q"),
    ] {
        let response = server.get(&format!("/api/marketplace/listings?{query}"));
        response.assert_error(400, "INVALID_ARGUMENT");
        assert!(
            response.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains(name),
            "{query}"
        );
    }
}

/// Sets ratings and reputations directly in the database of a stopped server (the rating flow
/// belongs to the commerce rails), then restarts it.
fn with_ratings(data: &Path, ratings: &[(&str, i64, i64)], reputation: f64) {
    let conn = rusqlite::Connection::open(data.join("bourse.db")).unwrap();
    for (prefix, sum, count) in ratings {
        let quality = (5.0 * 3.0 + *sum as f64) / (5.0 + *count as f64);
        conn.execute(
            "UPDATE listings SET rating_sum = ?2, rating_count = ?3, quality = ?4 WHERE title LIKE ?1 || '%'",
            rusqlite::params![prefix, sum, count, quality],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE listings SET seller_reputation = ?1 WHERE title LIKE 'Echo%'",
        [reputation],
    )
    .unwrap();
}

#[test]
fn sorts_by_popularity_quality_and_trust_with_stable_ties() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = TestServer::start_in(&data);
    let (_seller, ids) = seeded(&server);
    for _ in 0..3 {
        server.get(&format!("/api/marketplace/listings/{}", ids[2]));
    }
    server.get(&format!("/api/marketplace/listings/{}", ids[0]));
    server.stop();
    with_ratings(
        &data,
        &[("Alpha", 5, 1), ("Delta", 240, 50), ("Charlie", 8, 4)],
        4.9,
    );

    let server = TestServer::start_in(&data);
    let browse = |query: &str| {
        server
            .get(&format!("/api/marketplace/listings?{query}"))
            .json()
    };
    assert_eq!(
        titles(&browse("sort=popular")),
        ["Charlie", "Alpha", "Echo", "Delta", "Bravo"],
        "views, then recency"
    );
    assert_eq!(
        titles(&browse("sort=quality")),
        ["Delta", "Alpha", "Echo", "Bravo", "Charlie"],
        "Bayesian: 50×4.8 beats 1×5"
    );
    assert_eq!(
        titles(&browse("sort=trust")),
        ["Echo", "Delta", "Charlie", "Bravo", "Alpha"]
    );
    assert_eq!(titles(&browse("min_rating=4")), ["Delta", "Alpha"]);
    assert_eq!(
        titles(&browse("min_rating=2&sort=quality")),
        ["Delta", "Alpha", "Charlie"]
    );
    let alpha = server
        .get(&format!("/api/marketplace/listings/{}", ids[0]))
        .json();
    assert_eq!(alpha["listing"]["ratingAvg"], 5.0);
    assert_eq!(alpha["listing"]["ratingCount"], 1);
    assert_eq!(
        alpha["listing"]["viewCount"], 2,
        "views survive a restart (flushed on shutdown)"
    );
}

#[test]
fn pages_of_one_filter_set_follow_writes_and_flushed_views() {
    let server = TestServer::start();
    let (_seller, ids) = seeded(&server);
    let browse = |query: &str| {
        titles(
            &server
                .get(&format!("/api/marketplace/listings?{query}"))
                .json(),
        )
    };
    // Pages of one filter set and sort, deep then shallower (the second a slice of the walk
    // the first kept) and past the end, answer slices of the whole order.
    assert_eq!(browse("sort=popular&limit=2&offset=3"), ["Bravo", "Alpha"]);
    assert_eq!(
        browse("sort=popular&limit=2&offset=1"),
        ["Delta", "Charlie"]
    );
    assert!(browse("sort=popular&limit=2&offset=9").is_empty());
    assert_eq!(browse("q=soil&sort=price_desc&limit=1&offset=1"), ["Delta"]);
    // Views move the popular order once flushed, with no other write to the catalogue.
    for _ in 0..3 {
        server.get(&format!("/api/marketplace/listings/{}", ids[0]));
    }
    wait_until(
        "flushed views move Alpha first in the popular order",
        WAIT,
        || {
            // Past the age a kept signed page is reused for (the server's clock is manual).
            server.clock.advance(jiff::SignedDuration::from_secs(3));
            let page = browse("sort=popular&limit=2&offset=0");
            (page == ["Alpha", "Echo"])
                .then_some(())
                .ok_or(format!("{page:?}"))
        },
    );
    assert_eq!(browse("sort=popular&limit=2&offset=1"), ["Echo", "Delta"]);
    assert_eq!(
        browse("sort=popular&limit=2&offset=3"),
        ["Charlie", "Bravo"]
    );
    // A new listing shows at once in the pages of a filter set walked before it, and in a
    // search.
    let seller = seller(&server, "catalogue-2", b"y");
    create(&server, &seller, &listing_body("Foxtrot soil cores", 9000));
    assert_eq!(browse("q=soil&sort=price_desc&limit=1&offset=1"), ["Alpha"]);
    assert_eq!(browse("sort=popular&limit=2&offset=1"), ["Foxtrot", "Echo"]);
}

#[test]
fn samples_are_hidden_unless_asked_for() {
    let server = TestServer::start();
    seeded(&server);
    let only = server
        .get("/api/marketplace/listings?samples=only&limit=100")
        .json();
    let verticals = server.get("/api/verticals").json();
    let vertical_count = verticals["verticals"].as_array().unwrap().len();
    assert_eq!(vertical_count, 80);
    assert_eq!(only["total"], vertical_count, "one sample per vertical");
    let samples = only["listings"].as_array().unwrap();
    assert!(
        samples
            .iter()
            .all(|l| l["isSample"] == true && l["priceCents"] == 0 && l["sellerKind"] == "house")
    );
    let mut slugs: Vec<&str> = samples
        .iter()
        .map(|l| l["verticalSlug"].as_str().unwrap())
        .collect();
    slugs.sort_unstable();
    slugs.dedup();
    assert_eq!(slugs.len(), vertical_count);
    let include = server
        .get("/api/marketplace/listings?samples=include")
        .json();
    assert_eq!(include["total"], 5 + vertical_count);
    let default = server.get("/api/marketplace/listings").json();
    assert!(
        default["listings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["isSample"] == false)
    );
    let sample_id = samples[0]["id"].as_str().unwrap();
    let history = server
        .get(&format!("/api/marketplace/listings/{sample_id}/history"))
        .json();
    assert_eq!(verify(&server, &history["entries"][0])["valid"], true);
    let agents = server.get("/api/agents").json();
    assert_eq!(
        agents["total"], 1,
        "the house seller is not an agent of the directory"
    );
}

#[test]
fn category_and_vertical_counts_follow_creation_and_deactivation() {
    let server = TestServer::start();
    let count_of = |slug: &str| {
        let categories = server.get("/api/marketplace/categories").json();
        let category = categories
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["slug"] == slug)
            .unwrap()
            .clone();
        let verticals = server.get("/api/verticals").json();
        let vertical = verticals["verticals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["slug"] == "research-data")
            .unwrap()
            .clone();
        (
            category["listingCount"].as_i64().unwrap(),
            vertical["listingCount"].as_i64().unwrap(),
        )
    };
    let categories = server.get("/api/marketplace/categories").json();
    assert_eq!(categories.as_array().unwrap().len(), 13);
    for field in ["slug", "name", "icon", "class", "listingCount"] {
        assert!(categories[0].get(field).is_some(), "{field}");
    }
    let vertical = &server.get("/api/verticals").json()["verticals"][0];
    for field in [
        "slug",
        "name",
        "icon",
        "isExternal",
        "listingCount",
        "category",
    ] {
        assert!(vertical.get(field).is_some(), "{field}");
    }
    assert_eq!(count_of("data"), (0, 0), "samples are not counted");
    let seller = seller(&server, "counter", b"x");
    let a = create(&server, &seller, &listing_body("Tide gauges", 10));
    create(&server, &seller, &listing_body("River levels", 10));
    assert_eq!(count_of("data"), (2, 2));
    let id = a["listing"]["id"].as_str().unwrap();
    server.send_auth(
        "POST",
        &format!("/api/marketplace/listings/{id}/deactivate"),
        &seller.key,
        &json!({}),
    );
    assert_eq!(count_of("data"), (1, 1));
    assert_eq!(
        server.get("/api/marketplace/listings").json()["total"],
        1,
        "inactive listings never appear"
    );
    server.send_auth(
        "PATCH",
        &format!("/api/marketplace/listings/{id}"),
        &seller.key,
        &json!({"active": true}),
    );
    assert_eq!(count_of("data"), (2, 2));
}

#[test]
fn listings_without_a_vertical_are_filed_by_the_classifier() {
    let server = TestServer::start();
    let seller = seller(&server, "classified", b"x");
    let mut gpu = json!({"title": "GPU hours on an H100 cluster", "description": "Rent accelerator time by the hour.", "priceCents": 900, "consent": true});
    let filed = create(&server, &seller, &gpu);
    assert_eq!(
        filed["listing"]["verticalCategory"], "compute",
        "{}",
        filed["listing"]["verticalSlug"]
    );
    gpu["title"] = json!("Zzyzx qwerty");
    gpu["description"] = json!("Nothing recognisable at all.");
    assert_eq!(
        create(&server, &seller, &gpu)["listing"]["verticalSlug"],
        "general"
    );
    let mut hinted = json!({"title": "Zzyzx", "description": "Nothing recognisable.", "priceCents": 1, "category": "compute", "consent": true});
    let with_hint = create(&server, &seller, &hinted);
    assert_eq!(
        with_hint["listing"]["verticalSlug"], "general",
        "a hint with no match still falls back"
    );
    // A vertical outside the given category: both well-formed, the taxonomy disagrees.
    hinted["verticalSlug"] = json!("research-data");
    server
        .send_auth("POST", "/api/marketplace/listings", &seller.key, &hinted)
        .assert_error(422, "CATEGORY_MISMATCH");
}

#[test]
fn stats_count_listings_agents_queries_and_queriers() {
    let server = TestServer::start();
    seeded(&server);
    let before = server.get("/api/stats").json();
    assert_eq!(before["platform"], "bourse");
    assert_eq!(before["totalVerticals"], 80);
    assert_eq!(before["totalListings"], 5);
    assert_eq!(before["totalAgents"], 1);
    assert_eq!(before["totalSales"], 0);
    assert!(
        before["verticals"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["slug"] == "research-data" && v["listingCount"] == 2)
    );
    for _ in 0..3 {
        server.get("/api/marketplace/listings?q=soil");
    }
    let after = server.get("/api/stats").json();
    assert_eq!(
        after["totalQueries"].as_i64().unwrap(),
        before["totalQueries"].as_i64().unwrap() + 3
    );
    assert_eq!(after["totalQueriers"], 1, "one client, counted once");
    let market = server.get("/api/marketplace/stats").json();
    assert_eq!(market["platformFeeCents"], 0);
    assert_eq!(market["armsLengthCents"], 0);
    assert_eq!(market["totalListings"], 5);
}
