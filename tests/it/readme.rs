//! The README runs as written: its walkthrough's shell blocks (each marked by a
//! `<!-- walkthrough -->` line before its ```` ```sh ```` fence), joined into one bash script
//! under `set -euo pipefail`, run against the real binary; and `examples/roundtrip.rs` plays
//! its round trip against a server it starts and against one started here.
//!
//! The binary under test is `BOURSE_RELEASE_BIN` when set (CI points it at
//! `target/release/bourse`), else the one cargo built for these tests. The two examples the
//! tests need (`seller_endpoint`, `roundtrip`) come from `support::example`.
//! Without bash, curl or python3 (what the walkthrough needs) it says SKIPPED, and fails
//! under `CI` or `BOURSE_REQUIRE_SDK=1`.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value;

use crate::support::{
    BinServer, cargo_env, example, exit_within, release_binary, skip_or_fail, wait_until,
};

/// The line before each block the test runs.
const MARKER: &str = "<!-- walkthrough -->";

/// How long the whole walkthrough (or one round trip) may take; it takes a few seconds.
const DEADLINE: Duration = Duration::from_secs(120);

/// The walkthrough's shell blocks, in order, from the README's text.
fn walkthrough_blocks(readme: &str) -> Vec<String> {
    marked_blocks(readme, MARKER)
}

/// The shell blocks marked by a `marker` line before their fence, in order.
fn marked_blocks(readme: &str, marker: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim() != marker {
            continue;
        }
        assert_eq!(
            lines.next(),
            Some("```sh"),
            "a {marker} line must be followed by a ```sh fence"
        );
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        blocks.push(block.join("\n"));
    }
    blocks
}

/// A process started in its own process group: on drop, the whole group (the script's
/// background jobs too) is killed and the process reaped.
struct Group {
    child: Child,
    exited: Option<ExitStatus>,
}

impl Group {
    fn spawn(mut command: Command) -> Group {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        Group {
            child: command.spawn().unwrap(),
            exited: None,
        }
    }

    /// Waits for the process to exit, at most `limit`; `None` when it is still running then.
    fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        self.exited = exit_within(&mut self.child, limit);
        self.exited
    }

    /// Whether any process of the group is still alive (`kill -0 -PGID`).
    fn any_alive(&self) -> bool {
        Command::new("kill")
            .args(["-0", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        if self.exited.is_none() {
            let _ = self.child.wait();
        }
    }
}

/// Runs `command` (stdout and stderr to files in `dir`) in its own process group, within
/// [`DEADLINE`]; returns its exit status, stdout and stderr. Panics at the deadline, with
/// what it wrote.
fn run_bounded(mut command: Command, dir: &Path, what: &str) -> (ExitStatus, String, String) {
    let out_path = dir.join(format!("{what}.stdout"));
    let err_path = dir.join(format!("{what}.stderr"));
    command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let started = Instant::now();
    let mut group = Group::spawn(command);
    let status = group.exit_within(DEADLINE);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    let Some(status) = status else {
        drop(group);
        panic!(
            "{what} still running after {DEADLINE:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
    };
    eprintln!("{what} took {:.1} s", started.elapsed().as_secs_f64());
    if status.success() {
        // What it started in the background, it stopped: nothing of its group remains.
        wait_until(
            &format!("no process of the {what} remains"),
            Duration::from_secs(10),
            || !group.any_alive(),
        );
    }
    (status, stdout, stderr)
}

#[test]
fn the_walkthrough_marks_only_its_own_blocks_and_names_no_placeholder() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let blocks = walkthrough_blocks(&readme);
    assert_eq!(
        blocks.len(),
        3,
        "the walkthrough, selling and buying blocks"
    );
    let script = blocks.join("\n");
    // Every value comes from an earlier command: no placeholder to fill in by hand, and no
    // build (the test hands the script built binaries).
    for absent in ["XXXXXXXX", "PORT", "…", "<id>", "{id}", "cargo "] {
        let found = script
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .find(|l| l.contains(absent));
        assert!(found.is_none(), "{absent:?} in the walkthrough: {found:?}");
    }
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    // What the walkthrough says it needs besides bourse (bash runs it).
    for tool in ["bash", "curl", "python3"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            skip_or_fail(
                "readme::the_readme_walkthrough_runs_as_written",
                &format!("the walkthrough needs {tool}, which is not on PATH"),
            );
            return;
        }
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    // On a failure, the script stops the jobs it started in the background and reaps them.
    let script = format!(
        "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n{}\n",
        walkthrough_blocks(&readme).join("\n")
    );
    let bourse = release_binary();
    let seller_endpoint = &example("seller_endpoint");
    let dir = tempfile::tempdir().unwrap();
    let (bin, work, tmp) = (
        dir.path().join("bin"),
        dir.path().join("work"),
        dir.path().join("tmp"),
    );
    for d in [&bin, &work, &tmp] {
        std::fs::create_dir(d).unwrap();
    }
    std::os::unix::fs::symlink(&bourse, bin.join("bourse")).unwrap();
    std::fs::write(dir.path().join("walkthrough.sh"), &script).unwrap();

    let mut command = Command::new("bash");
    command
        .arg(dir.path().join("walkthrough.sh"))
        .current_dir(&work);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("BOURSE_") {
            command.env_remove(name);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.clone()];
    paths.extend(std::env::split_paths(&path));
    command
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("SELLER_ENDPOINT", seller_endpoint)
        // mktemp -d makes the walkthrough's $W in here, removed with the test's dir.
        .env("TMPDIR", &tmp);
    let (status, stdout, stderr) = run_bounded(command, dir.path(), "walkthrough");
    let shown = format!("--- script\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    assert!(
        status.success(),
        "the walkthrough failed: {status}\n{shown}"
    );

    // What a reader would check: the reply, the deliveries, the verdicts, the rotation.
    for expected in [
        "Hello! Do you sell tide tables?\n",
        "Yes: weekly tides, listed in a minute.\n",
        "{\"status\":\"complete\"}\n",
        "{\"sample\": true",
        "is delivered: {\"rows\": 3}\n",
        "old key: 401\n",
    ] {
        assert!(stdout.contains(expected), "no {expected:?} in\n{shown}");
    }
    assert_eq!(
        stdout.matches("\"valid\": true").count(),
        4,
        "four offline verifications\n{shown}"
    );
    assert!(!stdout.contains("\"valid\": false"), "{shown}");

    // The backup is a database holding both agents.
    let w = stdout
        .lines()
        .find_map(|l| l.strip_prefix("done; files in "))
        .unwrap_or_else(|| panic!("no closing line\n{shown}"));
    assert!(Path::new(w).starts_with(&tmp), "{w} is not under TMPDIR");
    let backup = Connection::open(Path::new(w).join("backup.db")).unwrap();
    let agents: i64 = backup
        .query_row("SELECT count(*) FROM agents WHERE is_house = 0", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(agents, 2, "{shown}");
    assert!(
        std::fs::read_dir(&work).unwrap().next().is_none(),
        "the walkthrough wrote into its working directory"
    );
}

#[test]
fn the_roundtrip_example_plays_against_its_own_server_and_a_running_one() {
    let roundtrip = &example("roundtrip");
    let dir = tempfile::tempdir().unwrap();
    let expect_complete = |stdout: &str, stderr: &str| {
        for expected in [
            "seller registered as A-",
            "payouts connected",
            " delivered: {\"rows\":3}\n",
            "rated 5/5",
            "buyer read the reply: Not yet: next month.\n",
            "round trip complete\n",
        ] {
            assert!(
                stdout.contains(expected),
                "no {expected:?} in\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
            );
        }
    };

    let mut own = Command::new(roundtrip);
    own.arg("--bourse").arg(release_binary());
    let (status, stdout, stderr) = run_bounded(own, dir.path(), "roundtrip");
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    assert!(stdout.starts_with("started "), "{stdout}");
    expect_complete(&stdout, &stderr);

    let server = BinServer::spawn_logged(
        &dir.path().join("data"),
        &["--allow-loopback-outbound"],
        &dir.path().join("serve.log"),
    );
    let mut against = Command::new(roundtrip);
    against.args(["--url", &server.client.base]);
    let (status, stdout, stderr) = run_bounded(against, dir.path(), "roundtrip-url");
    assert!(status.success(), "{status}\n{stdout}\n{stderr}");
    expect_complete(&stdout, &stderr);
    drop(server);

    // A failure names the step and the server's answer, and exits 1.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut refused = Command::new(roundtrip);
    refused.args(["--url", &nobody]);
    let (status, _, stderr) = run_bounded(refused, dir.path(), "roundtrip-refused");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("roundtrip: POST {nobody}/api/agents/register")),
        "{stderr}"
    );
}

/// The README's setup block (build, then find the binaries wherever cargo put them) and its CI
/// recipe (start a throwaway server, check it, stop it on exit) run as written; `.ci/run` runs
/// them with a non-default `CARGO_TARGET_DIR`, as CI caches often set.
#[test]
fn the_setup_and_ci_snippets_find_the_binary_wherever_cargo_put_it() {
    let test = "readme::the_setup_and_ci_snippets_find_the_binary_wherever_cargo_put_it";
    if std::env::var_os("BOURSE_RELEASE_BIN").is_none() {
        // Locally this would be a release build of minutes; .ci/run has built it.
        crate::support::skip_unless_ci(
            test,
            "needs the release build (.ci/run sets BOURSE_RELEASE_BIN)",
        );
        return;
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut metadata = Command::new(env!("CARGO"));
    cargo_env::without_cargo_env(&mut metadata);
    let metadata = metadata
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .unwrap();
    let target: Value = serde_json::from_slice(&metadata.stdout).unwrap();
    let target = target["target_directory"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    for (marker, check, expected) in [
        (
            "<!-- setup -->",
            "command -v bourse; echo \"$SELLER_ENDPOINT\"",
            vec![
                format!("{target}/release/bourse"),
                format!("{target}/release/examples/seller_endpoint"),
            ],
        ),
        (
            "<!-- ci -->",
            "echo \"serving at $BOURSE_URL\"",
            vec!["serving at http://127.0.0.1:".to_owned()],
        ),
    ] {
        let blocks = marked_blocks(&readme, marker);
        assert_eq!(blocks.len(), 1, "one block marked {marker}");
        let mut command = Command::new("bash");
        cargo_env::without_cargo_env(&mut command);
        command
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-c", &format!("{}\n{check}\n", blocks[0])]);
        let what = marker.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let (status, stdout, stderr) = run_bounded(command, dir.path(), what);
        assert!(status.success(), "{marker}:\n{stdout}\n{stderr}");
        for line in expected {
            assert!(
                stdout.contains(&line),
                "{marker}: {line:?} not in\n{stdout}"
            );
        }
    }
}
