//! The bench: bourse against its floor, interleaved on the same machine, in one run.
//!
//! ```sh
//! cargo run --release --example bench                          # 100,000 listings, 5 s per run
//! cargo run --release --example bench -- --listings 1000000 --seconds 10
//! cargo run --release --example bench -- --only detail,browse  # workloads whose name contains these
//! cargo run --release --example bench -- --listings 1000000 --data /tmp/bench1m  # seed once, reuse
//! cargo run --release --example bench -- --bourse /tmp/old/bourse  # measure another build
//! cargo run --release --example bench -- --listings 100000,1000000,10000000 --data /tmp/curve \
//!     --only "detail,browse default,browse mix,browse cold"          # the cost curve
//! cargo run --release --example bench -- --rounds 3 --only "browse mix" --require "browse mix=0.25"
//! cargo run --release --example bench -- --only "message send,listing create,purchase"  # the writes
//! ```
//!
//! Browse is measured as agents use it: "browse mix" is diverse (no page repeats within the
//! kept-answer window, so every answer is built and signed anew) and is held to the floor's cold
//! signed page (`/page`), as is "browse cold" (a new rare word each request); "browse default"
//! and "browse repeated" (11 shapes in turn) are answered from kept signed pages. The last column
//! is the share of signed answers that were kept ones (a signature seen earlier in the run).
//!
//! It builds the release binary and the `floor` and `seed_catalog` examples, seeds a temporary
//! data directory, starts `bourse serve` (with `--trusted-proxy 127.0.0.1`, so each message
//! sender counts as its own client and every limit stays on) and `examples/floor.rs`, then runs
//! each workload against bourse and its floor one after the other, with the same closed-loop load
//! generator (`examples/common/loadgen.rs`; 64 connections by default). For each run it prints
//! requests per second, p50 and p99 latency, the server's CPU time per request (from
//! `/proc/<pid>/stat`) and the ratio of bourse to its floor (by throughput, and by CPU per
//! request: the floor's over bourse's, steadier when the floor's throughput swings); at the end,
//! bourse's resident memory after start, after load and at its highest. The load
//! generator shares the machine: figures are for comparison within one run, not absolutes.
//! bourse runs on the allocator its binary sets (mimalloc); the floor, like
//! `../shared/bench/floor`, on the system one.
//! Loopback only; the temporary directory is removed at the end.

#[path = "../common/cargo_env.rs"]
mod cargo_env;
#[path = "../common/loadgen.rs"]
mod loadgen;
mod server;
mod writes;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loadgen::{Face, Requests, Run, closed_loop, get, once, senders_on};
use server::Server;

struct Options {
    /// Catalogue sizes: one runs the table; several also print the cost curve.
    listings: Vec<usize>,
    /// Interleaved rounds of each browse workload (bourse, floor, bourse, floor…); the row
    /// shows the round of median ratio.
    rounds: usize,
    /// Workloads whose median throughput ratio to the floor must reach a figure (`name=ratio`),
    /// else the bench exits with status 1: CI's guard against a regression.
    require: Vec<(String, f64)>,
    seconds: u64,
    connections: usize,
    senders: usize,
    only: Vec<String>,
    /// A data directory to seed once and keep (seeding 1M listings takes a minute).
    data: Option<PathBuf>,
    /// A `bourse` binary to measure instead of this tree's release build (an older build for
    /// an A/B, one built with frame pointers for a profile).
    bourse: Option<PathBuf>,
}

fn parse() -> Options {
    let mut options = Options {
        listings: vec![100_000],
        rounds: 1,
        require: Vec::new(),
        seconds: 5,
        connections: 64,
        senders: 3000,
        only: Vec::new(),
        data: None,
        bourse: None,
    };
    const USAGE: &str = "usage: bench [--listings N[,N…]] [--rounds N] [--require NAME=RATIO] [--seconds N] [--connections N] [--senders N] [--only a,b] [--data DIR] [--bourse PATH]";
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value; {USAGE}"));
        match flag.as_str() {
            "--listings" => {
                options.listings = value
                    .split(',')
                    .map(|n| n.parse().expect("--listings N[,N…]"))
                    .collect();
            }
            "--rounds" => options.rounds = value.parse::<usize>().expect("--rounds N").max(1),
            "--require" => {
                let (name, ratio) = value.split_once('=').expect("--require NAME=RATIO");
                options.require.push((
                    name.to_owned(),
                    ratio.parse().expect("--require NAME=RATIO"),
                ));
            }
            "--seconds" => options.seconds = value.parse().expect("--seconds N"),
            "--connections" => options.connections = value.parse().expect("--connections N"),
            "--senders" => options.senders = value.parse().expect("--senders N"),
            "--only" => options.only = value.split(',').map(str::to_owned).collect(),
            "--data" => options.data = Some(PathBuf::from(value)),
            "--bourse" => options.bourse = Some(PathBuf::from(value)),
            other => panic!("unknown flag {other}; {USAGE}"),
        }
    }
    options
}

/// One measured run against one server.
struct Measured {
    run: Run,
    cpu_per_request: Duration,
}

async fn measure(
    server: &Server,
    options: &Options,
    budget: Option<usize>,
    requests: Requests,
) -> Measured {
    let before = server.cpu();
    let run = closed_loop(
        &server.host,
        options.connections,
        Duration::from_secs(options.seconds),
        budget,
        requests,
        |status| (200..300).contains(&status) || status == 404,
    )
    .await;
    let cpu = server.cpu().saturating_sub(before);
    Measured {
        cpu_per_request: cpu / u32::try_from(run.requests.max(1)).unwrap_or(u32::MAX),
        run,
    }
}

/// One line of the table: bourse's run, the floor's, and the ratio (with `note` after it).
fn row(name: &str, ours: &Measured, floor_path: &str, theirs: &Measured, note: &str) {
    println!(
        "| {name} | {:.0} | {} | {} | {} | `{floor_path}` | {:.0} | {} | {:.2}{note} | {:.2} | {} |",
        ours.run.per_second(),
        millis(ours.run.percentile(0.5)),
        millis(ours.run.percentile(0.99)),
        micros(ours.cpu_per_request),
        theirs.run.per_second(),
        micros(theirs.cpu_per_request),
        ours.run.per_second() / theirs.run.per_second(),
        // Steadier than the throughput ratio when the floor's own throughput swings (its
        // signed commit does, run to run): the floor's CPU per request over bourse's.
        theirs.cpu_per_request.as_secs_f64() / ours.cpu_per_request.as_secs_f64().max(1e-9),
        if ours.run.signed == 0 {
            "–".to_owned()
        } else {
            format!("{:.0} %", 100.0 * ours.run.reuse_rate())
        },
    );
    if ours.run.unexpected > 0 {
        println!(
            "|  ↳ {} unexpected statuses from bourse | | | | | | | | | | |",
            ours.run.unexpected
        );
    }
}

fn rotate(requests: Vec<Vec<u8>>) -> Requests {
    Arc::new(move |n| requests[n % requests.len()].clone())
}

fn micros(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1e6)
}

fn millis(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1e3)
}

/// The release builds the bench runs: `bourse` as `cargo build --release` makes it (on its own:
/// built beside the examples it would take the dev-dependencies' features), then the examples.
fn build_everything() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for targets in [
        &["--bin", "bourse"][..],
        &[
            "--example",
            "floor",
            "--example",
            "seed_catalog",
            "--example",
            "seller_endpoint",
        ],
    ] {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        cargo_env::without_cargo_env(&mut build);
        let status = build
            .current_dir(&manifest)
            .args(["build", "--release", "--locked"])
            .args(targets)
            .status()
            .expect("cargo");
        assert!(status.success(), "the release build failed");
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| manifest.join("target"), PathBuf::from)
        .join("release")
}

fn seed(release: &Path, data: &Path, listings: usize) -> Duration {
    let started = Instant::now();
    let status = Command::new(release.join("examples/seed_catalog"))
        .arg("--data")
        .arg(data)
        .args(["--count", &listings.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("seed_catalog");
    assert!(status.success(), "seeding failed");
    started.elapsed()
}

/// Listing ids from the first browse pages.
async fn listing_ids(host: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for offset in [0, 100, 200, 300, 400, 500, 600, 700, 800, 900] {
        let request = format!(
            "GET /api/marketplace/listings?limit=100&offset={offset} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        );
        let (_, body) = once(host, &request).await;
        let page: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        ids.extend(
            page["listings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|listing| listing["id"].as_str().map(str::to_owned)),
        );
    }
    assert!(!ids.is_empty(), "the seeded catalogue lists nothing");
    ids
}

/// The browse shapes of "browse repeated": each sort, common, rare and multi-word searches,
/// filters and a deep offset, asked in turn, so after the first round every answer is a kept
/// signed page (the cost of a hot page).
const BROWSE_SHAPES: &[&str] = &[
    "limit=50",
    "limit=50&sort=price_asc",
    "limit=50&sort=price_desc",
    "limit=50&sort=popular",
    "limit=50&sort=quality",
    "limit=50&sort=trust",
    "limit=50&q=red",
    "limit=50&q=tok12345",
    "limit=50&q=vintage%20camera",
    "limit=50&category=data&sort=price_asc",
    "limit=50&offset=5000",
];

/// The "browse mix": browse as many agents send it, the distribution of
/// `examples/wrk/browse_mix.lua` (a random sort; no filter, a category, a vertical, one search
/// word, two, or a price filter with a minimum rating, one kind in six each; a page from the
/// first ones) widened in depth, so that no page repeats within the kept-answer window: each kind
/// walks its own choices (sort × value × page) in a scrambled order that visits every choice once
/// before any repeats, and the smallest kind has 2,400 of them (one repeat every 2.4 s at 6,000
/// requests per second; kept answers live 2 s).
fn browse_mix(n: usize) -> String {
    const SORTS: &[&str] = &[
        "recent",
        "popular",
        "price_asc",
        "price_desc",
        "quality",
        "trust",
    ];
    const CATEGORIES: &[&str] = &[
        "data",
        "services",
        "products",
        "documents",
        "compute",
        "capital",
        "ip",
    ];
    const VERTICALS: &[&str] = &[
        "research-data",
        "compute-gpu",
        "music",
        "legal",
        "energy",
        "training-data",
    ];
    const WORDS: &[&str] = &[
        "red", "guitar", "vintage", "camera", "market", "solar", "freight", "soil", "clinic",
        "patent",
    ];
    const PRICES: &[&str] = &["all", "paid", "free"];
    let (kind, i) = (n % 6, n / 6);
    // (choices of the filter, pages deep)
    let (values, pages) = match kind {
        0 => (1, 400),
        1 => (CATEGORIES.len(), 100),
        2 => (VERTICALS.len(), 100),
        3 => (WORDS.len(), 100),
        4 => (WORDS.len() * WORDS.len(), 21),
        _ => (PRICES.len() * 40, 21),
    };
    let choices = SORTS.len() * values * pages;
    // A prime above every `choices` visits each of them once per `choices` steps.
    let pick = (i % choices) * 1_000_003 % choices;
    let (sort, rest) = (pick % SORTS.len(), pick / SORTS.len());
    let (value, page) = (rest % values, rest / values);
    let filter = match kind {
        0 => String::new(),
        1 => format!("&category={}", CATEGORIES[value]),
        2 => format!("&vertical={}", VERTICALS[value]),
        3 => format!("&q={}", WORDS[value]),
        4 => format!(
            "&q={}%20{}",
            WORDS[value % WORDS.len()],
            WORDS[value / WORDS.len()]
        ),
        _ => format!(
            "&price={}&min_rating={}.{}",
            PRICES[value % PRICES.len()],
            1 + value / PRICES.len() / 10,
            value / PRICES.len() % 10
        ),
    };
    format!(
        "/api/marketplace/listings?limit=50&sort={}{filter}&offset={}",
        SORTS[sort],
        50 * page
    )
}

/// What one catalogue size measured, for the cost curve.
#[derive(Default)]
struct Point {
    listings: usize,
    seeded: Duration,
    startup: Duration,
    /// Listening after the first start of a fresh catalogue (its rows read), before `startup`'s
    /// restart (its snapshot read).
    first_startup: Option<Duration>,
    rss_start: f64,
    rss_end: f64,
    /// Requests per second, and the floor's `/page` beside the cold ones.
    figures: Vec<(&'static str, f64)>,
    page_floor: f64,
}

#[tokio::main]
async fn main() {
    let options = parse();
    let release = build_everything();
    let mut points = Vec::new();
    let mut failed = Vec::new();
    for &listings in &options.listings {
        let data = options.data.as_ref().map(|data| {
            if options.listings.len() > 1 {
                data.join(listings.to_string())
            } else {
                data.clone()
            }
        });
        points.push(run_size(&options, &release, listings, data, &mut failed).await);
    }
    if points.len() > 1 {
        curve(&points);
    }
    if !failed.is_empty() {
        for failure in &failed {
            println!("bench: {failure}");
        }
        std::process::exit(1);
    }
}

/// The cost curve: each size's seeding, start and memory, and its throughput on the workloads
/// that show how cost grows with the catalogue.
fn curve(points: &[Point]) {
    println!("## Cost curve");
    println!();
    let names: Vec<&str> = points[0].figures.iter().map(|(name, _)| *name).collect();
    print!(
        "| listings | seeding s | listening s (restart; first start) | RSS start MiB | RSS after load MiB | floor `/page` req/s |"
    );
    for name in &names {
        print!(" {name} req/s |");
    }
    println!();
    println!("|{}", "---|".repeat(6 + names.len()));
    for point in points {
        print!(
            "| {} | {:.1} | {:.2}{} | {:.0} | {:.0} | {:.0} |",
            point.listings,
            point.seeded.as_secs_f64(),
            point.startup.as_secs_f64(),
            point.first_startup.map_or(String::new(), |first| format!(
                "; {:.2}",
                first.as_secs_f64()
            )),
            point.rss_start,
            point.rss_end,
            point.page_floor,
        );
        for (_, figure) in &point.figures {
            print!(" {figure:.0} |");
        }
        println!();
    }
}

/// Seeds (or reuses) a catalogue of `listings`, starts bourse on it and the floor beside it,
/// and prints the table of every wanted workload.
async fn run_size(
    options: &Options,
    release: &Path,
    listings: usize,
    data: Option<PathBuf>,
    failed: &mut Vec<String>,
) -> Point {
    let wanted = |name: &str| {
        options.only.is_empty() || options.only.iter().any(|o| name.contains(o.as_str()))
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = data.unwrap_or_else(|| dir.path().join("bourse"));
    let seeded = if data.join("bourse.db").exists() {
        println!("bench: reusing the catalogue in {}", data.display());
        Duration::ZERO
    } else {
        seed(release, &data, listings)
    };
    let mut point = Point {
        listings,
        seeded,
        ..Point::default()
    };
    let binary = options
        .bourse
        .clone()
        .unwrap_or_else(|| release.join("bourse"));
    let serve = || {
        let mut command = Command::new(&binary);
        command.arg("serve").arg("--data").arg(&data).args([
            "--listen",
            "127.0.0.1:0",
            "--trusted-proxy",
            "127.0.0.1",
            // Sellers' delivery endpoint (`examples/seller_endpoint.rs`, for the write
            // workloads) is on this machine.
            "--allow-loopback-outbound",
        ]);
        command
    };
    // A catalogue without its browse snapshot yet (freshly seeded) is started once to read its
    // rows and write the snapshot, then again, as a restart finds it: both are reported.
    if listings >= 10_000 && !data.join("browse-index.snapshot").exists() {
        let (first, startup) = Server::start(serve());
        point.first_startup = Some(startup);
        println!(
            "bourse: first start (reading the rows) listening after {:.0} ms",
            startup.as_secs_f64() * 1e3
        );
        if !first.wait_for_snapshot(Duration::from_secs(600)) {
            println!("bench: no browse snapshot written within 600 s");
        }
    }
    let (bourse, startup) = Server::start(serve());
    let mut command = Command::new(release.join("examples/floor"));
    command.arg("--data").arg(dir.path().join("floor.db"));
    let (floor, _) = Server::start(command);
    let rss_start = bourse.rss_mib();
    let machine = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    println!(
        "bench: {} listings (seeded in {:.1} s), {} connections, {} s per run, {} cores ({machine})",
        listings,
        seeded.as_secs_f64(),
        options.connections,
        options.seconds,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "bourse: listening {:.0} ms after start, RSS {rss_start:.0} MiB",
        startup.as_secs_f64() * 1e3
    );
    println!();
    println!(
        "| workload | bourse req/s | p50 ms | p99 ms | CPU µs/req | floor | floor req/s | floor CPU µs/req | ratio | CPU ratio | kept answers |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");

    let (bh, fh) = (bourse.host.clone(), floor.host.clone());
    let ids = listing_ids(&bh).await;
    let mut workloads: Vec<(String, Requests, &str, Option<usize>)> = vec![
        (
            "healthz".into(),
            rotate(vec![get(&bh, "/healthz", "")]),
            "/json",
            None,
        ),
        (
            "unsigned 404".into(),
            rotate(vec![get(&bh, "/nope", "")]),
            "/json",
            None,
        ),
        (
            "listing detail".into(),
            rotate(
                ids.iter()
                    .map(|id| get(&bh, &format!("/api/marketplace/listings/{id}"), ""))
                    .collect(),
            ),
            "/db",
            None,
        ),
    ];
    workloads.push((
        "browse default (one page, kept)".into(),
        rotate(vec![get(&bh, "/api/marketplace/listings?limit=50", "")]),
        "/json",
        None,
    ));
    workloads.push((
        "browse repeated (11 shapes in turn, kept)".into(),
        rotate(
            BROWSE_SHAPES
                .iter()
                .map(|query| get(&bh, &format!("/api/marketplace/listings?{query}"), ""))
                .collect(),
        ),
        "/json",
        None,
    ));
    let mix_host = bh.clone();
    workloads.push((
        "browse mix (diverse, cold)".into(),
        Arc::new(move |n: usize| get(&mix_host, &browse_mix(n), "")),
        "/page",
        None,
    ));
    // Every page a new one: a different rare word each request (the cost of a cold page whose
    // search has few matches).
    let uncached_host = bh.clone();
    workloads.push((
        "browse cold (new rare word each request)".into(),
        Arc::new(move |n: usize| {
            get(
                &uncached_host,
                &format!("/api/marketplace/listings?limit=50&q=tok{}", n % 20_000),
                "",
            )
        }),
        "/page",
        None,
    ));
    for (name, requests, floor_path, budget) in workloads {
        if !wanted(&name) {
            continue;
        }
        let mut rounds = Vec::new();
        for _ in 0..options.rounds {
            let ours = measure(&bourse, options, budget, requests.clone()).await;
            let theirs = measure(
                &floor,
                options,
                None,
                rotate(vec![get(&fh, floor_path, "")]),
            )
            .await;
            rounds.push((ours, theirs));
        }
        let ratio = |(ours, theirs): &(Measured, Measured)| {
            ours.run.per_second() / theirs.run.per_second().max(1e-9)
        };
        rounds.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
        let median = &rounds[rounds.len() / 2];
        let note = if rounds.len() > 1 {
            let each: Vec<String> = rounds.iter().map(|r| format!("{:.2}", ratio(r))).collect();
            format!(" (median of {})", each.join(", "))
        } else {
            String::new()
        };
        row(&name, &median.0, floor_path, &median.1, &note);
        for (required, least) in &options.require {
            if name.contains(required.as_str()) && ratio(median) < *least {
                failed.push(format!(
                    "{name} at {listings} listings: {:.2}× the floor, under the required {least:.2}×",
                    ratio(median)
                ));
            }
        }
        for (short, prefix) in [
            ("detail", "listing detail"),
            ("default browse", "browse default"),
            ("browse mix", "browse mix"),
            ("cold page", "browse cold"),
        ] {
            if name.starts_with(prefix) {
                point.figures.push((short, median.0.run.per_second()));
                if floor_path == "/page" {
                    point.page_floor = median.1.run.per_second();
                }
            }
        }
    }
    // The hottest write through each face that takes it: REST, then A2A's JSON-RPC
    // `SendMessage` to the agent's endpoint (shown as a ratio to the REST send).
    let mut rest_send = None;
    for (face, name) in [(Face::Rest, "message send"), (Face::A2a, "a2a send")] {
        if !wanted(name) {
            continue;
        }
        let (requests, most) = senders_on(&bh, options.senders, face).await;
        let ours = measure(&bourse, options, Some(most), requests).await;
        let theirs = measure(
            &floor,
            options,
            None,
            rotate(vec![get(&fh, "/signwrite", "")]),
        )
        .await;
        let relative = match (face, rest_send) {
            (Face::A2a, Some(rest)) => {
                format!(" ({:.2}× the REST send)", ours.run.per_second() / rest)
            }
            _ => String::new(),
        };
        if let Face::Rest = face {
            rest_send = Some(ours.run.per_second());
        }
        let name = format!("{name} ({} senders, every limit on)", options.senders);
        row(&name, &ours, "/signwrite", &theirs, &relative);
    }
    // The other writes agents make: listings created, and purchases opened without and with a
    // spending policy (the two rows side by side are the cost of the policy check).
    let mut others: Vec<(&str, Requests, Option<usize>)> = Vec::new();
    let deliverable = dir.path().join("deliverable.csv");
    std::fs::write(&deliverable, "region,value\nnorth,1\nsouth,2\n").expect("a deliverable");
    let mut command = Command::new(release.join("examples/seller_endpoint"));
    command
        .arg("--file")
        .arg(&deliverable)
        .args(["--bourse-url", &format!("http://{bh}")]);
    let endpoint = [
        "listing create",
        "purchase (sandbox checkout, no policy)",
        "purchase (sandbox checkout, policy checked)",
    ]
    .iter()
    .any(|name| wanted(name))
    .then(|| Server::start(command).0);
    let url = endpoint
        .as_ref()
        .map(|endpoint| format!("http://{}/", endpoint.host))
        .unwrap_or_default();
    if wanted("listing create") {
        others.push((
            "listing create",
            writes::listing_create(&bh, &url).await,
            None,
        ));
    }
    for (name, policy, first) in [
        ("purchase (sandbox checkout, no policy)", None, 10_000),
        (
            "purchase (sandbox checkout, policy checked)",
            Some(writes::POLICY),
            20_000,
        ),
    ] {
        if wanted(name) {
            let (requests, most) = writes::purchases(&bh, &url, policy, first).await;
            others.push((name, requests, Some(most)));
        }
    }
    for (name, requests, budget) in others {
        let ours = measure(&bourse, options, budget, requests).await;
        let theirs = measure(
            &floor,
            options,
            None,
            rotate(vec![get(&fh, "/signwrite", "")]),
        )
        .await;
        row(name, &ours, "/signwrite", &theirs, "");
    }
    println!();
    let rss_end = bourse.rss_mib();
    println!(
        "bourse RSS: {rss_start:.0} MiB after start, {rss_end:.0} MiB after load ({:.2}×); highest since start {:.0} MiB",
        rss_end / rss_start.max(1.0),
        bourse.status_mib("VmHWM:"),
    );
    println!();
    point.startup = startup;
    point.rss_start = rss_start;
    point.rss_end = rss_end;
    point
}
