//! The admission door: signed ADMIT / REFUSE, byte-identical replays, 409 on a conflicting
//! reuse, 403 without a class, and offline verification with the published keys.

use bourse::crypto::keys::verify_with;
use bourse::crypto::{b64url, b64url_decode, jcs};
use ed25519_compact::{KeyPair, Seed};
use serde_json::{Value, json};

use crate::support::{Resp, TestServer};

struct Stranger(KeyPair);

impl Stranger {
    fn new(seed: u8) -> Stranger {
        Stranger(KeyPair::from_seed(Seed::new([seed; 32])))
    }

    fn public_key(&self) -> String {
        b64url(self.0.pk.as_ref())
    }

    /// The door's body for `request`, signed by this key.
    fn sign(&self, request: &Value) -> Value {
        let signature = self.0.sk.sign(jcs::canonicalize(request), None);
        json!({"publicKey": self.public_key(), "request": request, "signature": b64url(signature.as_ref())})
    }
}

fn knock(server: &TestServer, body: &Value) -> Resp {
    server.post("/api/ingress", body)
}

fn request(class: &str, key: &str) -> Value {
    json!({"class": class, "idempotencyKey": key, "issuedAt": "2026-11-21T04:00:00Z", "purpose": "catalogue research"})
}

/// Checks an answer with nothing but the published keys.
fn verify_offline(server: &TestServer, answer: &Value) {
    let keys = server.get("/api/ingress/keys").json();
    let mut payload = answer.clone();
    let object = payload.as_object_mut().unwrap();
    object
        .remove("provenance")
        .expect("a public answer opens with provenance");
    let signature = object.remove("decisionSignature").unwrap();
    assert_eq!(signature["digest"], jcs::digest(&payload).as_str());
    let key = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["keyId"] == signature["keyId"])
        .expect("the signing key is published");
    let input = format!(
        "{}.{}.{}",
        signature["keyId"].as_str().unwrap(),
        signature["signedAt"].as_str().unwrap(),
        signature["digest"].as_str().unwrap()
    );
    let sig = b64url_decode(signature["signature"].as_str().unwrap()).unwrap();
    verify_with(key["publicKey"].as_str().unwrap(), input.as_bytes(), &sig).unwrap();
}

#[test]
fn admits_a_signed_stranger_and_replays_the_identical_answer() {
    let server = TestServer::start();
    let stranger = Stranger::new(7);
    let body = stranger.sign(&request("research", "k-1"));

    let first = knock(&server, &body);
    first.assert_status(200);
    assert_eq!(first.header("idempotent-replayed"), Some("false"));
    let answer = first.json();
    assert_eq!(answer["decision"], "ADMIT");
    assert_eq!(answer["reason"], "ADMITTED");
    assert_eq!(answer["class"], "RESEARCH");
    assert_eq!(answer["publicKey"], stranger.public_key().as_str());
    assert!(answer["admissionId"].as_str().unwrap().starts_with("adm_"));
    assert!(answer["grants"].as_str().unwrap().contains("no API key"));
    verify_offline(&server, &answer);
    let checked = server.post("/api/verify-receipt", &json!({"signed": answer}));
    assert_eq!(checked.json()["valid"], true, "{}", checked.json());

    // The same request later: the very same bytes, even after the clock moved.
    server.clock.advance(jiff::SignedDuration::from_hours(2));
    let again = knock(&server, &body);
    again.assert_status(200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);

    // The same idempotency key for another request: 409, and nothing changes.
    let other = stranger.sign(&request("FINANCE", "k-1"));
    knock(&server, &other).assert_error(409, "IDEMPOTENCY_CONFLICT");
    assert_eq!(knock(&server, &body).body, first.body);

    // A new key for the same class: admitted already, same admission.
    let mut fresh = request("RESEARCH", "k-2");
    fresh["issuedAt"] = json!("2026-11-21T06:00:00Z");
    let second = knock(&server, &stranger.sign(&fresh)).json();
    assert_eq!(second["decision"], "ADMIT");
    assert_eq!(second["reason"], "ALREADY_ADMITTED");
    assert_eq!(second["admissionId"], answer["admissionId"]);

    // The same key in another class: a second admission, still one admitted key.
    let mut finance = request("FINANCE", "k-3");
    finance["issuedAt"] = json!("2026-11-21T06:00:00Z");
    assert_eq!(
        knock(&server, &stranger.sign(&finance)).json()["reason"],
        "ADMITTED"
    );

    let door = server.get("/api/ingress");
    let door = door.expect(200);
    assert!(door["provenance"]["receipt"].is_object());
    assert_eq!(door["figures"]["admittedKeys"], 1);
    assert_eq!(door["figures"]["byClass"]["RESEARCH"]["admittedKeys"], 1);
    assert_eq!(door["figures"]["byClass"]["FINANCE"]["admittedKeys"], 1);
    assert_eq!(door["figures"]["byClass"]["DIGITAL"]["admittedKeys"], 0);
}

#[test]
fn refusals_are_signed_and_replayed_too() {
    let server = TestServer::start();
    let stranger = Stranger::new(9);

    let unknown = knock(&server, &stranger.sign(&request("GAMBLING", "a")));
    unknown.assert_status(200);
    let refused = unknown.json();
    assert_eq!(refused["decision"], "REFUSE");
    assert_eq!(refused["reason"], "UNKNOWN_CLASS");
    assert!(refused.get("admissionId").is_none());
    verify_offline(&server, &refused);
    assert_eq!(
        knock(&server, &stranger.sign(&request("GAMBLING", "a"))).body,
        unknown.body
    );

    let mut stale = request("COMMERCE", "b");
    stale["issuedAt"] = json!("2026-11-21T03:50:00Z");
    let stale = knock(&server, &stranger.sign(&stale)).json();
    assert_eq!(stale["decision"], "REFUSE");
    assert_eq!(stale["reason"], "STALE_REQUEST");
    assert_eq!(server.get("/api/ingress").json()["figures"]["refusals"], 2);
}

#[test]
fn bad_requests_are_refused_before_any_decision() {
    let server = TestServer::start();
    let stranger = Stranger::new(11);

    // Signed, but without a class.
    let no_class = json!({"idempotencyKey": "x", "issuedAt": "2026-11-21T04:00:00Z"});
    knock(&server, &stranger.sign(&no_class)).assert_error(403, "MISSING_CLASS");

    // A signature by another key, or over other bytes, proves nothing.
    let mut forged = stranger.sign(&request("RESEARCH", "x"));
    forged["publicKey"] = json!(Stranger::new(12).public_key());
    knock(&server, &forged).assert_error(401, "UNAUTHENTICATED");
    let mut altered = stranger.sign(&request("RESEARCH", "x"));
    altered["request"]["class"] = json!("FINANCE");
    knock(&server, &altered).assert_error(401, "UNAUTHENTICATED");

    // Shape errors.
    knock(&server, &json!({})).assert_error(400, "INVALID_ARGUMENT");
    let mut short = stranger.sign(&request("RESEARCH", "x"));
    short["publicKey"] = json!("abc");
    knock(&server, &short).assert_error(400, "INVALID_ARGUMENT");
    let mut extra = request("RESEARCH", "x");
    extra["admin"] = json!(true);
    knock(&server, &stranger.sign(&extra)).assert_error(400, "INVALID_ARGUMENT");
    let mut no_key = request("RESEARCH", "x");
    no_key.as_object_mut().unwrap().remove("idempotencyKey");
    knock(&server, &stranger.sign(&no_key)).assert_error(400, "INVALID_ARGUMENT");

    // None of that was recorded: the key is still free for a real request.
    let admitted = knock(&server, &stranger.sign(&request("RESEARCH", "x"))).json();
    assert_eq!(admitted["decision"], "ADMIT");
    assert_eq!(server.get("/api/ingress").json()["figures"]["refusals"], 0);
}
