//! The demand ledger (`GET /api/proof/demand`) and party classification.

use serde_json::{Value, json};

use crate::support::{Party, TestServer};

fn list(server: &TestServer, seller: &Party, title: &str, price: i64) -> String {
    let base = json!({"title": title, "description": "Weekly figures.", "priceCents": price, "verticalSlug": "trucking", "consent": true});
    server.create_listing(seller, base, json!({}))
}

/// Buys a paid listing and pays its checkout; delivers (polls as the buyer) when asked.
/// Returns the platform fee fixed at payment (read as the buyer, so only when delivered: the
/// fee is set at closing, the pending purchase shows none yet).
fn buy_paid(server: &TestServer, buyer: &Party, listing: &str, deliver: bool) -> Option<i64> {
    if deliver {
        let polled = server.buy_and_receive(buyer, listing);
        assert_eq!(polled["status"], "delivered");
        return polled["platformFeeCents"].as_i64();
    }
    server.buy_and_pay(buyer, listing);
    None
}

fn ledger(server: &TestServer) -> Value {
    server.get("/api/proof/demand").ok()
}

fn classify(server: &TestServer, handle: &str, party: &str) -> crate::support::Resp {
    server.send_auth(
        "PUT",
        &format!("/api/operator/parties/{handle}"),
        &server.operator_key(),
        &json!({"party": party}),
    )
}

fn seller_code(server: &TestServer, listing: &str) -> String {
    server
        .get(&format!("/api/marketplace/listings/{listing}"))
        .json()["listing"]["sellerName"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn bucket(rows: i64, gross: i64, fee: i64) -> Value {
    json!({"rows": rows, "grossCents": gross, "platformFeeCents": fee})
}

#[test]
fn an_empty_ledger_is_all_zeros_with_its_definitions() {
    let server = TestServer::start();
    let body = ledger(&server);
    assert_eq!(body["externallySigned"], false);
    assert_eq!(body["window"], json!({"first": null, "last": null}));
    assert_eq!(body["total"], 0);
    assert_eq!(body["rows"], json!([]));
    assert_eq!(body["totals"]["settledSales"], 0);
    assert_eq!(body["armsLengthCents"], 0);
    assert_eq!(body["armsLengthClassification"]["configured"], false);
    assert_eq!(body["byRail"]["checkout"], bucket(0, 0, 0));
    assert_eq!(body["byParty"]["affiliated"], bucket(0, 0, 0));
    assert!(
        body["verify"]
            .as_str()
            .unwrap()
            .ends_with("/api/verify-receipt")
    );
    assert!(!body["limitations"].as_array().unwrap().is_empty());
    let limitations = body["limitations"].to_string();
    assert!(
        limitations.contains("sandbox") && !limitations.contains("Stripe"),
        "the limitations name the rail this instance runs: {limitations}"
    );
    assert!(body["metric_definitions"]["totals.settledSales"].is_string());
    server
        .get("/api/proof/demand?limit=501")
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get("/api/proof/demand?limit=0")
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get("/api/proof/demand?offset=-1")
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .get("/api/proof/demand?limit=&offset=")
        .assert_invalid_naming("limit");
    server
        .get("/api/proof/demand?offset=")
        .assert_invalid_naming("offset");
    server
        .get("/api/proof/demand?offset=1&offset=1")
        .assert_invalid_naming("offset");
}

#[test]
fn classification_rules() {
    let server = TestServer::start();
    let agent = server.party("someone");
    let path = format!("/api/operator/parties/{}", agent.handle);
    let body = json!({"party": "internal"});
    server
        .request("PUT", &path, &[], Some(body.to_string().as_bytes()))
        .assert_error(401, "UNAUTHENTICATED");
    server
        .send_auth("PUT", &path, &agent.key, &body)
        .assert_error(401, "UNAUTHENTICATED");
    classify(&server, &agent.handle, "arms_length").assert_error(400, "INVALID_ARGUMENT");
    classify(&server, &agent.handle, "bogus").assert_error(400, "INVALID_ARGUMENT");
    server
        .send_auth("PUT", &path, &server.operator_key(), &json!({}))
        .assert_error(400, "INVALID_ARGUMENT");
    server
        .send_auth(
            "PUT",
            &path,
            &server.operator_key(),
            &json!({"party": "internal", "extra": 1}),
        )
        .assert_error(400, "INVALID_ARGUMENT");
    classify(&server, "no-such-agent", "internal").assert_error(404, "NOT_FOUND");

    let first = classify(&server, &agent.handle, "internal").ok();
    assert_eq!(
        (
            first["handle"].clone(),
            first["party"].clone(),
            first["previous"].clone()
        ),
        (
            json!(agent.handle),
            json!("internal"),
            json!("unclassified")
        )
    );
    let second = classify(&server, &agent.handle, "unclassified").json();
    assert_eq!(second["previous"], "internal");
    assert_eq!(second["party"], "unclassified");
    assert_eq!(
        ledger(&server)["armsLengthClassification"]["configured"],
        false,
        "only classes other than unclassified configure the classification"
    );
}

#[test]
fn the_ledger_adds_up_discloses_reference_and_affiliated_rows_and_tracks_escrow() {
    let server = TestServer::start();
    let (alpha, _t1) = server.seller("alpha", b"alpha bytes");
    let (beta, _t2) = server.seller("beta", b"beta bytes");
    let (gamma, _t3) = server.seller("gamma", b"gamma bytes");
    let [x, y] = server.parties(["buyer-x", "buyer-y"]);
    let a_paid = list(&server, &alpha, "Alpha paid", 10_000);
    let a_free = list(&server, &alpha, "Alpha free", 0);
    let b_paid = list(&server, &beta, "Beta paid", 10_000);
    let g_paid = list(&server, &gamma, "Gamma paid", 2_000);
    let sample = server
        .get("/api/marketplace/listings?samples=only&vertical=music")
        .json()["listings"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Ledger (oldest first): x/alpha 10000 delivered; y/alpha 10000 paid, not delivered;
    // x/alpha free; y/beta 10000 delivered; x/gamma 2000 delivered; x/reference sample.
    // x/alpha is the vertical's first paid sale (founding fill: no fee); y/alpha and y/beta
    // are the same amount at the standard rate, so y/alpha's (undelivered) fee is y/beta's.
    let fee_xa = buy_paid(&server, &x, &a_paid, true).unwrap();
    assert_eq!(buy_paid(&server, &y, &a_paid, false), None);
    assert_eq!(server.buy(&x, &a_free).json()["status"], "delivered");
    let fee_yb = buy_paid(&server, &y, &b_paid, true).unwrap();
    let fee_xg = buy_paid(&server, &x, &g_paid, true).unwrap();
    assert_eq!(server.buy(&x, &sample).json()["status"], "delivered");
    assert!(fee_yb > 0 && fee_xg > 0, "standard-rate sales carry a fee");
    let fee_ya = fee_yb;

    let body = ledger(&server);
    let fees_counted = fee_xa + fee_ya + fee_yb + fee_xg;
    assert_eq!(
        body["totals"],
        json!({
            "settledRows": 5, "settledSales": 5, "referenceListingRows": 1, "paidRows": 4,
            "zeroAmountRows": 1, "grossCents": 32_000, "platformFeeCents": fees_counted,
            "distinctBuyers": 2, "distinctSellers": 3,
        })
    );
    let stats = server.get("/api/stats").json();
    assert_eq!(body["totals"]["settledSales"], stats["totalSales"]);
    assert_eq!(body["total"], 6);
    assert_eq!(
        body["escrow"]["heldRows"], 1,
        "paid, not yet delivered: the clock has not started"
    );
    assert_eq!(body["escrow"]["heldCents"], 10_000);
    assert_eq!(body["escrow"]["releasingRows"], 3);
    assert_eq!(body["escrow"]["releasingCents"], 22_000);
    assert_eq!(
        body["escrow"]["releasedRows"], 2,
        "the free sale and the sample"
    );
    assert_eq!(body["escrow"]["releasedCents"], 0);
    assert_eq!(body["byRail"]["checkout"], bucket(5, 32_000, fees_counted));
    assert_eq!(body["byRail"]["card"], bucket(0, 0, 0));
    assert_eq!(
        body["byRailAllRows"]["checkout"],
        bucket(6, 32_000, fees_counted)
    );
    assert_eq!(
        body["byParty"]["unclassified"],
        bucket(5, 32_000, fees_counted)
    );
    assert_eq!(body["armsLengthCents"], 0, "nothing classified: no claim");
    assert_eq!(body["affiliatedRail"]["count"], 0);

    // Rows: newest first, anonymous buyer labels, the row shape of the spec.
    let rows = body["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    let newest = &rows[0];
    assert_eq!(newest["isReferenceListing"], true);
    assert_eq!(newest["amountCents"], 0);
    assert_eq!(newest["buyer"], "buyer #1");
    assert_eq!(newest["verticalSlug"], "music");
    let oldest = &rows[5];
    assert_eq!(
        (
            oldest["seller"].clone(),
            oldest["buyer"].clone(),
            oldest["amountCents"].clone(),
            oldest["platformFeeCents"].clone(),
            oldest["rail"].clone(),
            oldest["status"].clone(),
            oldest["isReferenceListing"].clone(),
            oldest["party"].clone(),
            oldest["verticalSlug"].clone(),
        ),
        (
            json!(seller_code(&server, &a_paid)),
            json!("buyer #1"),
            json!(10_000),
            json!(fee_xa),
            json!("checkout"),
            json!("held"),
            json!(false),
            json!("unclassified"),
            json!("trucking"),
        )
    );
    assert!(oldest["id"].is_string() && oldest["createdAt"].is_string());
    assert!(oldest["verticalName"].is_string());
    assert_eq!(rows[4]["buyer"], "buyer #2");
    assert_eq!(rows[4]["platformFeeCents"], fee_ya);
    assert_eq!(rows[4]["status"], "held");
    assert_eq!(body["window"]["first"], oldest["createdAt"]);
    assert_eq!(body["window"]["last"], newest["createdAt"]);
    let text = body["rows"].to_string();
    for handle in [&x.handle, &y.handle] {
        assert!(!text.contains(handle.as_str()), "no buyer handle in rows");
    }

    // Paging.
    let page = server.get("/api/proof/demand?limit=2&offset=1").json();
    assert_eq!(page["total"], 6);
    assert_eq!(page["rows"].as_array().unwrap().len(), 2);
    assert_eq!(page["rows"][0]["id"], rows[1]["id"]);
    assert_eq!(page["rows"][1]["id"], rows[2]["id"]);
    let past = server.get("/api/proof/demand?offset=6").json();
    assert_eq!(past["rows"], json!([]));
    assert_eq!(
        past["totals"], body["totals"],
        "totals never depend on the page"
    );

    // The escrow clock runs out for the delivered rows only.
    server
        .send_auth(
            "POST",
            "/api/sandbox/clock",
            &server.operator_key(),
            &json!({"advanceSeconds": 7 * 24 * 3600}),
        )
        .assert_status(200);
    let escrow = &ledger(&server)["escrow"];
    assert_eq!(
        (
            escrow["heldRows"].clone(),
            escrow["heldCents"].clone(),
            escrow["releasingRows"].clone(),
            escrow["releasedRows"].clone(),
            escrow["releasedCents"].clone()
        ),
        (json!(1), json!(10_000), json!(0), json!(5), json!(22_000))
    );

    // gamma is affiliated: its row leaves the totals (not settledSales) and is disclosed.
    classify(&server, &gamma.handle, "affiliated").assert_status(200);
    let body = ledger(&server);
    let counted = fee_xa + fee_ya + fee_yb;
    assert_eq!(
        body["totals"],
        json!({
            "settledRows": 4, "settledSales": 5, "referenceListingRows": 1, "paidRows": 3,
            "zeroAmountRows": 1, "grossCents": 30_000, "platformFeeCents": counted,
            "distinctBuyers": 2, "distinctSellers": 2,
        })
    );
    assert_eq!(
        body["totals"]["settledSales"],
        server.get("/api/stats").json()["totalSales"]
    );
    let rail = &body["affiliatedRail"];
    let gamma_code = seller_code(&server, &g_paid);
    assert_eq!(rail["count"], 1);
    assert_eq!(rail["grossCents"], 2_000);
    assert_eq!(rail["distinctMerchants"], 1);
    assert_eq!(rail["merchants"], json!([gamma_code]));
    assert_eq!(
        rail["byMerchant"],
        json!([{"seller": gamma_code, "rows": 1, "grossCents": 2_000}])
    );
    assert_eq!(rail["includedInTotalsAbove"], false);
    assert_eq!(rail["countsTowardArmsLength"], false);
    assert_eq!(rail["ledger"][0]["party"], "affiliated");
    assert_eq!(body["byParty"]["affiliated"], bucket(1, 2_000, fee_xg));
    assert_eq!(body["byParty"]["unclassified"], bucket(4, 30_000, counted));
    assert_eq!(body["armsLengthClassification"]["configured"], true);
    assert_eq!(body["armsLengthCents"], 30_000);

    // buyer x is a house buyer: its rows with unclassified sellers move (gamma's stays
    // affiliated: the seller's class comes first), the reference row too (all-rows view).
    classify(&server, &x.handle, "house_buyer").assert_status(200);
    let body = ledger(&server);
    assert_eq!(body["byParty"]["house_buyer"], bucket(2, 10_000, fee_xa));
    assert_eq!(
        body["byParty"]["unclassified"],
        bucket(2, 20_000, fee_ya + fee_yb)
    );
    assert_eq!(body["byParty"]["affiliated"], bucket(1, 2_000, fee_xg));
    assert_eq!(
        body["byPartyAllRows"]["house_buyer"],
        bucket(3, 10_000, fee_xa)
    );
    assert_eq!(body["armsLengthCents"], 20_000);
    assert_eq!(
        body["totals"]["settledRows"], 4,
        "house buyers stay in totals"
    );
    assert_eq!(body["rows"][0]["party"], "house_buyer");
    assert_eq!(body["rows"][1]["party"], "affiliated");
}

/// An object's member names, sorted (a signed answer is sent in canonical order).
fn members(value: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    names
}

fn sorted<const N: usize>(mut names: [&str; N]) -> [&str; N] {
    names.sort_unstable();
    names
}

#[test]
fn the_ledger_and_its_rows_have_every_member() {
    let server = TestServer::start();
    let (alpha, _token) = server.seller("alpha", b"alpha bytes");
    let [x] = server.parties(["buyer-x"]);
    let free = list(&server, &alpha, "Alpha free", 0);
    assert_eq!(server.buy(&x, &free).json()["status"], "delivered");
    classify(&server, &alpha.handle, "affiliated").assert_status(200);
    let body = ledger(&server);
    let mut top = members(&body);
    top.retain(|name| *name != "provenance");
    assert_eq!(
        top,
        sorted([
            "externallySigned",
            "generatedAt",
            "window",
            "totals",
            "reconciliation",
            "byRail",
            "byParty",
            "byRailAllRows",
            "byPartyAllRows",
            "breakdownBasis",
            "escrow",
            "affiliatedRail",
            "armsLengthCents",
            "armsLengthClassification",
            "metric_definitions",
            "limitations",
            "verify",
            "limit",
            "offset",
            "total",
            "rows",
        ])
    );
    let row = sorted([
        "id",
        "seller",
        "buyer",
        "verticalName",
        "verticalSlug",
        "amountCents",
        "platformFeeCents",
        "rail",
        "status",
        "isReferenceListing",
        "party",
        "createdAt",
    ]);
    assert_eq!(members(&body["rows"][0]), row);
    assert_eq!(members(&body["affiliatedRail"]["ledger"][0]), row);
    assert_eq!(
        members(&body["affiliatedRail"]["byMerchant"][0]),
        sorted(["seller", "rows", "grossCents"])
    );
    assert_eq!(
        members(&body["byParty"]),
        [
            "affiliated",
            "house_buyer",
            "house_seller",
            "internal",
            "unclassified"
        ]
    );
}
