//! The floor bourse is measured against: the same stack (hyper, tokio, rusqlite + r2d2, SQLite
//! WAL, ed25519-compact, sha2, serde_json) doing the minimum of each workload. Ported from the
//! floor program of the reference material; `examples/bench` starts it beside bourse.
//!
//! ```sh
//! cargo run --release --example floor -- --data /tmp/floor.db
//! ```
//!
//! Routes: `/json` (a tiny JSON answer), `/db` (a point SELECT via `spawn_blocking`), `/dbi` (the
//! same SELECT inline on the async worker), `/sign` (SHA-256 and an Ed25519 signature over a
//! ~300-byte JSON: the minimum of a signed answer), `/signwrite` (the same, then one row committed
//! by a single writer thread with group commit, `synchronous=NORMAL`: the minimum of a signed,
//! durable write), `/page` (a cold page: 50 consecutive rows from a random place, each made into a
//! ~1.3 KB JSON object, the ~64 KB page hashed with SHA-256 and signed once: the minimum of a
//! signed browse page no cache has seen). It listens on a free loopback port and prints
//! `listening on http://…`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use sha2::Digest;
use tokio::net::TcpListener;

type Pool = r2d2::Pool<r2d2_sqlite::SqliteConnectionManager>;
type WriteJob = (String, tokio::sync::oneshot::Sender<()>);

/// Rows in the point-SELECT table.
const ITEMS: i64 = 100_000;

static COUNTER: AtomicU64 = AtomicU64::new(1);
static KEY: std::sync::LazyLock<ed25519_compact::KeyPair> = std::sync::LazyLock::new(|| {
    ed25519_compact::KeyPair::from_seed(ed25519_compact::Seed::new([7u8; 32]))
});
static WRITER: OnceLock<Mutex<mpsc::Sender<WriteJob>>> = OnceLock::new();

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn signed_body() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let payload = format!(
        "{{\"body\":\"Hello there, this is a message of ordinary length for a floor measurement.\",\"clientMessageId\":\"m-{n}\",\"recipient\":\"A-BCDEFGHJ\",\"sender\":\"A-KLMNPQRS\",\"sentAt\":\"2026-11-24T03:00:00.000Z\",\"sequence\":{n}}}"
    );
    let digest = format!("sha256:{}", hex(&sha2::Sha256::digest(payload.as_bytes())));
    let signed = format!("ed25519-floor.2026-11-24T03:00:00.000Z.{digest}");
    let signature = hex(KEY.sk.sign(signed.as_bytes(), None).as_ref());
    format!("{{\"payload\":{payload},\"digest\":\"{digest}\",\"signature\":\"{signature}\"}}")
}

/// Creates and fills the tables once.
fn prepare(path: &str) {
    let mut conn = rusqlite::Connection::open(path).expect("open the floor database");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
         CREATE TABLE IF NOT EXISTS items(id INTEGER PRIMARY KEY, k TEXT, body TEXT, created INTEGER);
         CREATE INDEX IF NOT EXISTS items_k ON items(k);
         CREATE TABLE IF NOT EXISTS signed(id INTEGER PRIMARY KEY, body TEXT);",
    )
    .expect("schema");
    let count: i64 = conn
        .query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .expect("count");
    if count < ITEMS {
        let tx = conn.transaction().expect("begin");
        {
            let mut insert = tx
                .prepare(
                    "INSERT OR REPLACE INTO items(id, k, body, created) VALUES (?1, ?2, ?3, ?4)",
                )
                .expect("insert");
            let body = "x".repeat(200);
            for id in 0..ITEMS {
                insert
                    .execute(rusqlite::params![id, format!("k{}", id % 1000), body, id])
                    .expect("row");
            }
        }
        tx.commit().expect("commit");
    }
}

fn start_writer(path: String) {
    let (sender, jobs) = mpsc::channel::<WriteJob>();
    std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            .expect("pragmas");
        while let Ok(first) = jobs.recv() {
            let mut batch = vec![first];
            while batch.len() < 256 {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
            {
                let mut insert = conn
                    .prepare_cached("INSERT INTO signed(body) VALUES (?1)")
                    .expect("insert");
                for (body, _) in &batch {
                    insert.execute([body]).expect("row");
                }
            }
            conn.execute_batch("COMMIT").expect("commit");
            for (_, done) in batch {
                let _ = done.send(());
            }
        }
    });
    let _ = WRITER.set(Mutex::new(sender));
}

fn select(pool: &Pool) -> serde_json::Value {
    let id = (COUNTER.fetch_add(7919, Ordering::Relaxed) as i64) % ITEMS;
    let conn = pool.get().expect("a connection");
    let mut statement = conn
        .prepare_cached("SELECT id, k, body, created FROM items WHERE id = ?1")
        .expect("select");
    statement
        .query_row([id], |r| {
            Ok(serde_json::json!({"id": r.get::<_, i64>(0)?, "k": r.get::<_, String>(1)?, "created": r.get::<_, i64>(3)?}))
        })
        .expect("a row")
}

/// A cold signed page, as `../shared/bench/floor`'s `/page` makes it (inline on the worker).
fn page(pool: &Pool) -> Vec<u8> {
    let start = (COUNTER.fetch_add(7919, Ordering::Relaxed) as i64) % (ITEMS - 100);
    let conn = pool.get().expect("a connection");
    let mut statement = conn
        .prepare_cached(
            "SELECT id, k, body, created FROM items WHERE id >= ?1 ORDER BY id LIMIT 50",
        )
        .expect("select");
    let rows: Vec<serde_json::Value> = statement
        .query_map([start], |r| {
            let body: String = r.get(2)?;
            Ok(serde_json::json!({
                "id": r.get::<_, i64>(0)?, "k": r.get::<_, String>(1)?, "created": r.get::<_, i64>(3)?,
                "title": format!("Listing {}", r.get::<_, i64>(0)?),
                "description": body.repeat(5), "priceCents": 2500, "active": true,
            }))
        })
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("a page");
    drop(statement);
    drop(conn);
    let page =
        serde_json::to_vec(&serde_json::json!({"listings": rows, "total": ITEMS, "limit": 50}))
            .expect("json");
    let digest = format!("sha256:{}", hex(&sha2::Sha256::digest(&page)));
    let signed = format!("ed25519-floor.2026-11-24T03:00:00.000Z.{digest}");
    let signature = hex(KEY.sk.sign(signed.as_bytes(), None).as_ref());
    let mut out =
        format!("{{\"digest\":\"{digest}\",\"signature\":\"{signature}\",\"page\":").into_bytes();
    out.extend_from_slice(&page);
    out.push(b'}');
    out
}

async fn handle(
    request: Request<hyper::body::Incoming>,
    pool: Arc<Pool>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (body, status) = match request.uri().path() {
        "/json" => (br#"{"message":"Hello, World!"}"#.to_vec(), StatusCode::OK),
        "/db" => {
            let row = tokio::task::spawn_blocking(move || select(&pool))
                .await
                .expect("the blocking task");
            (serde_json::to_vec(&row).expect("json"), StatusCode::OK)
        }
        "/dbi" => (
            serde_json::to_vec(&select(&pool)).expect("json"),
            StatusCode::OK,
        ),
        "/sign" => (signed_body().into_bytes(), StatusCode::OK),
        "/page" => (page(&pool), StatusCode::OK),
        "/signwrite" => {
            let body = signed_body();
            let (done, wait) = tokio::sync::oneshot::channel();
            let sent = WRITER
                .get()
                .expect("the writer")
                .lock()
                .expect("lock")
                .send((body.clone(), done));
            sent.expect("the writer runs");
            wait.await.expect("committed");
            (body.into_bytes(), StatusCode::OK)
        }
        _ => (br#"{"error":"not found"}"#.to_vec(), StatusCode::NOT_FOUND),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut data, mut workers) = ("floor.db".to_owned(), 2usize);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => data = value,
            "--workers" => workers = value.parse().expect("--workers N"),
            other => panic!("unknown flag {other}; use --data PATH --workers N"),
        }
    }
    prepare(&data);
    start_writer(data.clone());
    let manager = r2d2_sqlite::SqliteConnectionManager::file(&data)
        .with_init(|c| c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"));
    let pool = Arc::new(
        r2d2::Pool::builder()
            .max_size(4)
            .build(manager)
            .expect("a pool"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let address = listener.local_addr().expect("an address");
        println!("listening on http://{address}");
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            stream.set_nodelay(true).ok();
            let pool = pool.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| handle(request, pool.clone()));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}
