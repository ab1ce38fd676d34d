//! Seeds a data directory with a large synthetic catalogue, for benchmarks.
//!
//! ```sh
//! cargo run --release --example seed_catalog -- --data /tmp/bench100k --count 100000
//! cargo run --release -- serve --data /tmp/bench100k --listen 127.0.0.1:8080 &
//! wrk -t2 -c32 -d10s 'http://127.0.0.1:8080/api/marketplace/listings?limit=50'
//! wrk -t2 -c32 -d10s 'http://127.0.0.1:8080/api/marketplace/listings?q=vintage%20camera&limit=50'
//! ```
//!
//! Listings are written straight into the store (no seller endpoint, no history entries): the
//! result is a browse/search fixture, not a catalogue to trade on. Titles and descriptions draw
//! on a skewed 40-word vocabulary plus 20,000 rare tokens, so searches range from a handful of
//! hits to most of the catalogue. The generator is deterministic (fixed seed).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bourse::clock::{SystemClock, rfc3339};
use bourse::service::{App, DataDir, Options, catalog::reputation, hash_secret};
use bourse::store::agents::{self, AgentRow};
use bourse::store::listings::ListingRow;

const WORDS: &[&str] = &[
    "red", "guitar", "vintage", "camera", "market", "prices", "regional", "weekly", "daily",
    "index", "survey", "panel", "sensor", "traffic", "energy", "solar", "wind", "retail", "sales",
    "freight", "port", "crop", "yield", "soil", "weather", "housing", "rent", "wage", "labor",
    "health", "clinic", "drug", "trial", "gpu", "hours", "model", "prompt", "template", "contract",
    "patent",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Skewed pick: low indexes are much more likely.
    fn skewed(&mut self, n: u64) -> usize {
        let a = self.below(n);
        let b = self.below(n);
        a.min(b) as usize
    }
    fn words(&mut self, count: usize) -> String {
        (0..count)
            .map(|_| {
                if self.below(10) == 0 {
                    format!("tok{}", self.below(20_000))
                } else {
                    WORDS[self.skewed(WORDS.len() as u64)].to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn main() {
    let mut data = PathBuf::from("./bench-data");
    let mut count = 100_000usize;
    let mut sellers = 500usize;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => data = PathBuf::from(value),
            "--count" => count = value.parse().expect("--count N"),
            "--sellers" => sellers = value.parse().expect("--sellers N"),
            other => panic!("unknown flag {other}"),
        }
    }
    let started = Instant::now();
    let options = Options::new("http://127.0.0.1:8080");
    let app = App::open(&DataDir(data.clone()), options, Arc::new(SystemClock))
        .expect("open the data directory");
    let now = rfc3339(jiff::Timestamp::now());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    let mut seller_ids: Vec<(String, String, f64)> = Vec::new();
    let mut agents_rows = Vec::new();
    for i in 0..sellers {
        let agent = AgentRow {
            id: uuid::Uuid::new_v4().to_string(),
            handle: format!("A-B{i:07}"),
            name: format!("bench seller {i}"),
            display_name: None,
            email: None,
            callback_url: None,
            created_at: now.clone(),
            updated_at: now.clone(),
            rating_count: 0,
            sales_count: 0,
            restricted: None,
            via_grant: None,
        };
        let code = format!("S-{:06}", 900_000 + i);
        let reputation = reputation::seller(rng.below(500) as i64, 100, rng.below(2000) as i64);
        seller_ids.push((agent.id.clone(), code.clone(), reputation));
        agents_rows.push((
            agent,
            code,
            reputation,
            hash_secret(&format!("bench-key-{i}-{}", rng.next())),
        ));
    }
    app.store
        .write_blocking(move |tx| {
            for (agent, code, reputation, key_hash) in agents_rows {
                agents::insert(tx, &agent, &key_hash, None)?;
                agents::set_seller_code(tx, &agent.id, &code)?;
                agents::set_reputation(tx, &agent.id, reputation)?;
            }
            Ok(())
        })
        .expect("insert sellers");

    let verticals: Vec<_> = app
        .taxonomy
        .verticals
        .iter()
        .filter(|v| v.slug != "personal-health-data")
        .collect();
    // Rows are made on this thread while the writer thread loads them (one transaction, the
    // listings' indexes and search index built once at the end: `Store::seed_listings`).
    // Handed over a thousand at a time: a channel send per row cost more than making the row.
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<ListingRow>>(8);
    let loading = std::thread::spawn({
        let store = app.store.clone();
        move || store.seed_listings(receiver.into_iter().flatten())
    });
    let mut chunk = Vec::with_capacity(1000);
    for made in 1..=count {
        let vertical = verticals[rng.below(verticals.len() as u64) as usize];
        let (seller_id, seller_code, seller_reputation) =
            &seller_ids[rng.below(seller_ids.len() as u64) as usize];
        let rated = rng.below(3) == 0;
        let rating_count = if rated { 1 + rng.below(60) as i64 } else { 0 };
        let rating_sum = rating_count * (1 + rng.below(5) as i64);
        let kind = match rng.below(10) {
            0 => "exclusive",
            1 => "limited",
            _ => "standard",
        };
        let title = rng.words(4);
        let row = ListingRow {
            seq: 0,
            // Time-ordered, as the server makes them.
            id: uuid::Uuid::now_v7().to_string(),
            seller_id: seller_id.clone(),
            seller_code: seller_code.clone(),
            seller_reputation: *seller_reputation,
            vertical_slug: vertical.slug.clone(),
            category: vertical.category.clone(),
            description: format!("{title} {}", rng.words(8)),
            title,
            price_cents: if rng.below(5) == 0 {
                0
            } else {
                100 * (1 + rng.below(5000)) as i64
            },
            listing_type: kind.into(),
            max_copies: (kind == "limited").then(|| 1 + rng.below(100) as i64),
            sold_count: 0,
            purchase_count: rng.below(50) as i64,
            view_count: rng.below(5000) as i64,
            active: rng.below(50) != 0,
            exclusive_sold: false,
            fingerprint: format!("sha256:{}", hash_secret(&rng.next().to_string())),
            preview: "{}".into(),
            images: "[]".into(),
            metadata: "{}".into(),
            is_sample: false,
            physical: vertical.is_external,
            deliverable_ref: None,
            health_consent: false,
            deidentification: None,
            authorized_uses: None,
            rating_sum,
            rating_count,
            quality: reputation::quality(rating_sum, rating_count),
            created_at: now.clone(),
            version: 1,
            last_modified: None,
            modification_count: 0,
        };
        chunk.push(row);
        if (chunk.len() == 1000 || made == count)
            && sender.send(std::mem::take(&mut chunk)).is_err()
        {
            break;
        }
        if made % 100_000 == 0 {
            eprintln!("{made} listings");
        }
    }
    drop(sender);
    let written = loading
        .join()
        .expect("the loading thread")
        .expect("insert listings");
    assert_eq!(written, count, "every listing made was written");
    let loaded = started.elapsed();
    app.store.checkpoint();
    eprintln!(
        "loaded, search index optimized and analyzed at {loaded:.1?}, checkpointed at {:.1?}",
        started.elapsed()
    );
    println!(
        "seeded {count} listings from {sellers} sellers into {} in {:.1?}",
        data.display(),
        started.elapsed()
    );
}
