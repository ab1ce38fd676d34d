//! An in-process twin of `examples/seller_endpoint.rs`: a seller delivery endpoint on
//! 127.0.0.1:0 that really verifies bourse's signed requests with `bourse::seller_kit`, so a
//! test that gets a 200 from it proves bourse signed correctly.
//!
//! Its clock is bourse's: test servers run on a `ManualClock`, so on every request the twin
//! fetches `GET {bourse}/api/signing-key` and takes "now" from the `signedAt` of that answer's
//! signed provenance block (falling back to the system clock). The same fetch refreshes the
//! keys, so key rotations are followed. It also checks that `X-Bourse-Request-Type` repeats the
//! body's `type`.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bourse::seller_kit::{self, Keys, SignedRequest};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// How the twin answers a request that verified.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Echoes the challenge; serves the deliverable.
    Honest,
    /// Answers `{"challenge":"not-the-same"}` to `bourse.verify`; serves the deliverable.
    WrongEcho,
    /// Answers this status with a small JSON body.
    Status(u16),
    /// Answers 302 with `Location: https://example.com/`.
    Redirect,
}

/// A running twin; stopped on drop.
pub struct SellerTwin {
    /// `http://127.0.0.1:PORT`; any path is served.
    pub url: String,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    bourse: String,
    deliverable: Mutex<Vec<u8>>,
    content_type: String,
    mode: Mode,
    log: Mutex<Vec<Value>>,
}

impl SellerTwin {
    /// Starts on 127.0.0.1:0 in a background thread with its own tokio runtime; keys fetched
    /// from bourse_base (GET /api/signing-key).
    pub fn start(
        bourse_base: &str,
        deliverable: Vec<u8>,
        content_type: &str,
        mode: Mode,
    ) -> SellerTwin {
        let bourse = bourse_base.trim_end_matches('/').to_owned();
        Keys::fetch(&bourse).unwrap_or_else(|e| panic!("seller twin: {e}"));
        let shared = Arc::new(Shared {
            bourse,
            deliverable: Mutex::new(deliverable),
            content_type: content_type.to_owned(),
            mode,
            log: Mutex::new(Vec::new()),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, mut shutdown_rx) = oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                loop {
                    let stream = tokio::select! {
                        accepted = listener.accept() => match accepted {
                            Ok((stream, _)) => stream,
                            Err(_) => continue,
                        },
                        _ = &mut shutdown_rx => break,
                    };
                    let state = state.clone();
                    let service = service_fn(move |request| handle(state.clone(), request));
                    tokio::spawn(
                        hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service),
                    );
                }
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
        });
        let addr = addr_rx.recv().expect("seller twin started");
        SellerTwin {
            url: format!("http://{addr}"),
            shared,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        }
    }

    /// Later requests serve these bytes (tests of fingerprint refresh).
    pub fn set_deliverable(&self, bytes: Vec<u8>) {
        *self.shared.deliverable.lock().unwrap() = bytes;
    }

    /// Every verified request body received, in order (signature included).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.log.lock().unwrap().clone()
    }
}

impl Drop for SellerTwin {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

fn error(status: u16, message: &str) -> Reply {
    let body = json!({ "error": message }).to_string().into_bytes();
    reply(status, "application/json", body)
}

/// bourse's keys and bourse's clock, read from its signed `GET /api/signing-key` answer.
fn bourse_keys_and_now(bourse: &str) -> Result<(Keys, jiff::Timestamp), String> {
    let url = format!("{bourse}/api/signing-key");
    let text = ureq::get(&url)
        .call()
        .and_then(|mut response| response.body_mut().read_to_string())
        .map_err(|e| format!("cannot fetch {url}: {e}"))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let now = document["provenance"]["receipt"]["signedAt"]
        .as_str()
        .and_then(|at| at.parse().ok())
        .unwrap_or_else(jiff::Timestamp::now);
    Ok((Keys::from_document(&document)?, now))
}

async fn handle(state: Arc<Shared>, request: Request<Incoming>) -> Result<Reply, hyper::Error> {
    if request.method() != hyper::Method::POST {
        return Ok(error(405, "only POST is served"));
    }
    let header_type = request
        .headers()
        .get(seller_kit::REQUEST_TYPE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Ok(body) = Limited::new(request.into_body(), seller_kit::MAX_BODY_BYTES)
        .collect()
        .await
    else {
        return Ok(error(413, "the body is too large"));
    };
    let body = body.to_bytes();
    let bourse = state.bourse.clone();
    let (keys, now) = match tokio::task::spawn_blocking(move || bourse_keys_and_now(&bourse)).await
    {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => return Ok(error(503, &e)),
        Err(e) => return Ok(error(503, &e.to_string())),
    };
    let verified = match seller_kit::check_request(&body, &keys, now, seller_kit::MAX_SKEW) {
        Ok(verified) => verified,
        Err(refusal) => return Ok(error(refusal.status(), &refusal.message)),
    };
    if header_type.as_deref() != Some(verified.type_name()) {
        let message = format!(
            "{} is {header_type:?}, the body's type is {}",
            seller_kit::REQUEST_TYPE_HEADER,
            verified.type_name()
        );
        return Ok(error(400, &message));
    }
    let document = serde_json::from_slice(&body).expect("verified JSON");
    state.log.lock().unwrap().push(document);
    Ok(match (state.mode, verified) {
        (Mode::Status(status), _) => error(status, "the seller twin was told to answer this"),
        (Mode::Redirect, _) => Response::builder()
            .status(302)
            .header("location", "https://example.com/")
            .body(Full::new(Bytes::new()))
            .unwrap(),
        (Mode::WrongEcho, SignedRequest::Verify { .. }) => {
            let body = json!({ "challenge": "not-the-same" }).to_string();
            reply(200, "application/json", body.into_bytes())
        }
        (_, SignedRequest::Verify { challenge, .. }) => {
            let body = json!({ "challenge": challenge }).to_string();
            reply(200, "application/json", body.into_bytes())
        }
        (_, SignedRequest::Fingerprint { .. } | SignedRequest::Delivery { .. }) => {
            let bytes = state.deliverable.lock().unwrap().clone();
            reply(200, &state.content_type, bytes)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::{Client, TestServer};
    use bourse::clock::{Clock, rfc3339};
    use bourse::crypto::keys::Keyring;
    use bourse::crypto::receipt::sign_object;

    /// Signs `body` with the test server's own key, stamped `issuedAt` = its clock + `offset`.
    fn signed(server: &TestServer, mut body: Value, offset_secs: i64) -> Vec<u8> {
        let keyring = Keyring::load(&server.data.join("signing.key")).unwrap();
        let at = server.clock.now() + jiff::SignedDuration::from_secs(offset_secs);
        body["issuedAt"] = rfc3339(at).into();
        sign_object(&keyring, body.as_object_mut().unwrap(), &rfc3339(at));
        body.to_string().into_bytes()
    }

    fn post(twin: &SellerTwin, kind: &str, body: &[u8]) -> crate::support::Resp {
        let header = [(seller_kit::REQUEST_TYPE_HEADER, kind)];
        Client::new(&twin.url).request("POST", "/deliver", &header, Some(body))
    }

    fn verify_body() -> Value {
        json!({"type": "bourse.verify", "challenge": "ch-1", "sellerHandle": "A-7KQ2M9XD"})
    }

    #[test]
    fn unsigned_or_forged_requests_are_refused_and_not_logged() {
        let server = TestServer::start();
        let twin = SellerTwin::start(
            &server.base,
            b"a,b\n1,2\n".to_vec(),
            "text/csv",
            Mode::Honest,
        );
        let unsigned = json!({"type": "bourse.verify", "challenge": "x",
            "sellerHandle": "A-7KQ2M9XD", "issuedAt": rfc3339(server.clock.now())});
        let response = Client::new(&twin.url).post("/", &unsigned);
        assert!(
            matches!(response.status, 400 | 401),
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        assert!(response.json()["error"].as_str().is_some());

        let mut forged: Value = serde_json::from_slice(&signed(&server, verify_body(), 0)).unwrap();
        forged["challenge"] = "ch-2".into();
        let response = post(&twin, "bourse.verify", forged.to_string().as_bytes());
        assert_eq!(response.status, 401);

        let stale = signed(&server, verify_body(), -301);
        assert_eq!(post(&twin, "bourse.verify", &stale).status, 400);
        assert!(twin.requests().is_empty());
    }

    #[test]
    fn signed_requests_are_answered_and_logged_in_order() {
        let server = TestServer::start();
        let twin = SellerTwin::start(
            &server.base,
            b"a,b\n1,2\n".to_vec(),
            "text/csv",
            Mode::Honest,
        );
        let response = post(&twin, "bourse.verify", &signed(&server, verify_body(), 0));
        assert_eq!(response.status, 200);
        assert_eq!(response.json(), json!({"challenge": "ch-1"}));

        let fingerprint = json!({"type": "bourse.fingerprint", "listingId": "L-1",
            "deliverableRef": null, "sellerHandle": "A-7KQ2M9XD"});
        server.clock.advance(jiff::SignedDuration::from_secs(3600));
        let response = post(
            &twin,
            "bourse.fingerprint",
            &signed(&server, fingerprint, 0),
        );
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"a,b\n1,2\n");
        assert_eq!(response.header("content-type"), Some("text/csv"));

        twin.set_deliverable(b"new".to_vec());
        let delivery = json!({"type": "bourse.delivery", "listingId": "L-1", "purchaseId": "P-1",
            "deliverableRef": "v2", "sellerHandle": "A-7KQ2M9XD"});
        let body = signed(&server, delivery, 0);
        assert_eq!(post(&twin, "bourse.delivery", &body).body, b"new");
        assert_eq!(
            post(&twin, "bourse.verify", &body).status,
            400,
            "header mismatch"
        );

        let types: Vec<Value> = twin.requests().iter().map(|r| r["type"].clone()).collect();
        assert_eq!(
            types,
            ["bourse.verify", "bourse.fingerprint", "bourse.delivery"]
        );
    }

    #[test]
    fn misbehaving_modes_answer_as_told() {
        let server = TestServer::start();
        let body = signed(&server, verify_body(), 0);
        let wrong = SellerTwin::start(&server.base, vec![], "text/plain", Mode::WrongEcho);
        let response = post(&wrong, "bourse.verify", &body);
        assert_eq!(response.json(), json!({"challenge": "not-the-same"}));
        let failing = SellerTwin::start(&server.base, vec![], "text/plain", Mode::Status(503));
        assert_eq!(post(&failing, "bourse.verify", &body).status, 503);
        let redirect = SellerTwin::start(&server.base, vec![], "text/plain", Mode::Redirect);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .build()
            .into();
        let response = agent
            .post(&redirect.url)
            .header(seller_kit::REQUEST_TYPE_HEADER, "bourse.verify")
            .content_type("application/json")
            .send(&body[..])
            .unwrap();
        assert_eq!(response.status(), 302);
        assert_eq!(response.headers()["location"], "https://example.com/");
        assert_eq!(redirect.requests().len(), 1);
    }
}
