//! The real binary: listening line, signals, backup, refusal of foreign databases, flags.

use std::path::Path;
use std::process::Output;

use rusqlite::Connection;

use crate::support::{BinServer, bourse};

#[test]
fn serve_prints_the_listening_line_with_the_real_port_and_exits_0_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &[]);
    let url = server
        .listening_line
        .strip_prefix("bourse listening on http://127.0.0.1:")
        .unwrap();
    let port: u16 = url.parse().unwrap();
    assert_ne!(port, 0);
    assert_eq!(server.client.get("/healthz").status, 200);
    let (status, _) = server.terminate();
    assert_eq!(status.code(), Some(0));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| {
            std::fs::metadata(dir.path().join("data").join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(""), 0o700);
        assert_eq!(mode("signing.key"), 0o600);
        assert_eq!(mode("operator.key"), 0o600);
    }
}

#[test]
fn access_logs_never_contain_api_keys_and_json_logs_are_json() {
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &["--log-format", "json"]);
    let agent = server.client.register("logged");
    let key = agent["apiKey"].as_str().unwrap();
    server.client.get(&format!("/api/agents?api_key={key}"));
    server.client.get_auth("/api/agents/me", key);
    let (status, stderr) = server.terminate();
    assert!(status.success());
    assert!(!stderr.contains(key), "the API key leaked into the log");
    assert!(stderr.contains("api_key=REDACTED"));
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
}

#[test]
fn flags_come_from_env_and_flags_win_over_env() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bourse()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("BOURSE_DATA", dir.path().join("from-env"))
        .env("BOURSE_LISTEN", "127.0.0.1:1")
        .env("BOURSE_PUBLIC_URL", "https://market.example/")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let base = line
        .trim()
        .strip_prefix("bourse listening on ")
        .unwrap()
        .to_owned();
    assert!(
        !base.ends_with(":1"),
        "the flag wins over BOURSE_LISTEN: {base}"
    );
    let client = crate::support::Client::new(&base);
    let body = client.get("/api/meta").json();
    assert_eq!(
        body["provenance"]["receipt"]["verify"],
        "https://market.example/api/verify-receipt"
    );
    assert!(dir.path().join("from-env").join("bourse.db").exists());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn version_and_bad_arguments() {
    let version = bourse().arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("bourse "));
    let unknown = bourse().args(["serve", "--no-such-flag"]).output().unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--no-such-flag"));
    let bad = bourse()
        .args(["serve", "--listen", "not-an-address"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--listen"));
    let bad_format = bourse()
        .args(["serve", "--log-format", "xml"])
        .output()
        .unwrap();
    assert!(!bad_format.status.success());
}

#[test]
fn version_completions_port_and_help_examples() {
    let version = bourse().arg("version").output().unwrap();
    assert!(version.status.success());
    let with_flag = bourse().arg("--version").output().unwrap();
    assert_eq!(version.stdout, with_flag.stdout);
    for (shell, marker) in [
        ("bash", "complete -F _bourse"),
        ("zsh", "#compdef bourse"),
        ("fish", "complete -c bourse"),
    ] {
        let script = bourse().args(["completions", shell]).output().unwrap();
        assert!(script.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&script.stdout);
        assert!(
            text.contains(marker) && text.contains("serve"),
            "{shell}: {text}"
        );
    }
    let help = bourse()
        .args(["fees", "announce", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("bourse fees announce --data") && help.contains("--schedule '{"),
        "{help}"
    );
    // `--port` sets the port of the --listen address; 0 picks a free one.
    let dir = tempfile::tempdir().unwrap();
    let mut command = bourse();
    command
        .args(["serve", "--port", "0", "--data"])
        .stderr(std::process::Stdio::null())
        .arg(dir.path().join("data"));
    let server = BinServer::start(command);
    assert!(
        server
            .listening_line
            .starts_with("bourse listening on http://127.0.0.1:")
            && !server.listening_line.ends_with(":8080"),
        "{}",
        server.listening_line
    );
    server.client.get("/healthz").assert_status(200);
}

/// `bourse backup --data DATA OUT`, run to completion.
fn run_backup(data: &Path, out: &Path) -> Output {
    bourse()
        .args(["backup", "--data"])
        .arg(data)
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn backup_while_serving_yields_a_database_holding_the_agents() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = BinServer::spawn(&data, &[]);
    let handles: Vec<String> = (0..3)
        .map(|i| {
            server.client.register(&format!("backed-up-{i}"))["handle"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let out = dir.path().join("backup.db");
    let backup = run_backup(&data, &out);
    assert!(
        backup.status.success(),
        "{}",
        String::from_utf8_lossy(&backup.stderr)
    );
    assert_eq!(
        server.client.get("/readyz").status,
        200,
        "the server keeps serving"
    );

    let copy = Connection::open(&out).unwrap();
    let mut stored: Vec<String> = copy
        .prepare("SELECT handle FROM agents WHERE is_house = 0 ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    stored.sort();
    let mut expected = handles.clone();
    expected.sort();
    assert_eq!(stored, expected);
    let integrity: String = copy
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");

    let again = run_backup(&data, &out);
    assert!(
        !again.status.success(),
        "an existing file is never overwritten"
    );
}

#[test]
fn a_database_of_another_application_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("bourse.db");
    {
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA application_id = 1234; CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine');")
            .unwrap();
    }
    let before = std::fs::read(&db).unwrap();
    let output = bourse()
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("another application"), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "no listening line for a refused start"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the file is byte-identical"
    );
    assert!(!data.join("bourse.db-wal").exists());
}

#[test]
fn chair_bind_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = BinServer::spawn(&data, &[]);
    server
        .client
        .get("/api/agents/lookup?handle=chair")
        .assert_error(503, "CHAIR_UNBOUND");
    let agent = server.client.register("chair-agent");
    let handle = agent["handle"].as_str().unwrap();
    let bind = bourse()
        .args(["chair", "bind", handle, "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        bind.status.success(),
        "{}",
        String::from_utf8_lossy(&bind.stderr)
    );
    let lookup = server.client.get("/api/agents/lookup?handle=chair").json();
    assert_eq!(lookup["agents"][0]["handle"], handle);
    assert_eq!(lookup["agents"][0]["verified"], true);
    let unknown = bourse()
        .args(["chair", "bind", "A-NOPE0000", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!unknown.status.success());
}

#[test]
fn fees_announce_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = BinServer::spawn(&data, &[]);
    let announce = |effective: &str| {
        bourse()
            .args(["fees", "announce", "--effective-from", effective])
            .args([
                "--schedule",
                r#"{"standardBps": 400}"#,
                "--note",
                "lower standard band",
            ])
            .arg("--data")
            .arg(&data)
            .output()
            .unwrap()
    };
    let done = announce("2031-01-01");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let fees = server.client.get("/api/fees").json();
    let announced = &fees["announced"][0];
    assert_eq!(announced["effectiveFrom"], "2031-01-01", "{fees}");
    assert_eq!(announced["status"], "draft");
    assert_eq!(announced["schedule"]["standardBps"], 400);

    // Before the lock ends: refused, nothing recorded.
    let locked = announce("2027-06-01");
    assert!(!locked.status.success());
    assert!(String::from_utf8_lossy(&locked.stderr).contains("2027-06-30"));
    let fees = server.client.get("/api/fees").json();
    assert_eq!(fees["announced"].as_array().unwrap().len(), 1);
}

#[test]
fn small_truths_of_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = BinServer::spawn(&data, &[]);
    server.client.register("kept");

    // A backup into a missing folder names the folder; a backup is readable by its owner only.
    let missing = run_backup(&data, &dir.path().join("no-such-folder").join("x.db"));
    assert!(!missing.status.success());
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(
        said.contains("no-such-folder") && said.contains("does not exist"),
        "{said}"
    );
    let out = dir.path().join("copy.db");
    let made = run_backup(&data, &out);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // `verify`: 1 for a document that does not verify, 2 for input it cannot judge.
    let key = server.client.get("/api/signing-key").json()["publicKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let forged = dir.path().join("forged.json");
    let body = server.client.get("/api/meta").json().to_string();
    std::fs::write(&forged, body.replacen("bourse", "bourze", 1)).unwrap();
    let verdict = |file: &std::path::Path| {
        bourse()
            .arg("verify")
            .arg(file)
            .args(["--public-key", &key])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(verdict(&forged), Some(1));
    assert_eq!(verdict(&dir.path().join("absent.json")), Some(2));
    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "{nope").unwrap();
    assert_eq!(verdict(&not_json), Some(2));

    // A port alone gets a hint.
    let port_only = bourse()
        .args(["serve", "--listen", "8080"])
        .output()
        .unwrap();
    assert!(!port_only.status.success());
    assert!(String::from_utf8_lossy(&port_only.stderr).contains("127.0.0.1:8080"));

    // The sandbox clock: moved, kept across a restart, and reset to real time.
    let operator = std::fs::read_to_string(data.join("operator.key")).unwrap();
    let clock = |server: &BinServer, body: serde_json::Value| {
        server
            .client
            .send_auth("POST", "/api/sandbox/clock", operator.trim(), &body)
    };
    // The server answers in whole milliseconds, so the real time it is compared with is too.
    let real = jiff::Timestamp::from_millisecond(jiff::Timestamp::now().as_millisecond()).unwrap();
    let moved = clock(&server, serde_json::json!({"advanceSeconds": 86_400})).ok();
    let now: jiff::Timestamp = moved["now"].as_str().unwrap().parse().unwrap();
    assert!(now.duration_since(real).as_secs() >= 86_400);
    clock(
        &server,
        serde_json::json!({"advanceSeconds": 5, "reset": true}),
    )
    .assert_error(400, "INVALID_ARGUMENT");
    drop(server.terminate());
    let server = BinServer::spawn(&data, &[]);
    let resumed: jiff::Timestamp =
        clock(&server, serde_json::json!({"advanceSeconds": 1})).ok()["now"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
    assert!(
        resumed.duration_since(jiff::Timestamp::now()).as_secs() >= 86_000,
        "kept"
    );
    let reset = clock(&server, serde_json::json!({"reset": true})).ok();
    let back: jiff::Timestamp = reset["now"].as_str().unwrap().parse().unwrap();
    assert!(
        back.duration_since(jiff::Timestamp::now()).as_secs().abs() < 60,
        "{reset}"
    );
    drop(server.terminate());
}

#[test]
fn first_start_explains_itself_without_colour_codes_when_not_at_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = BinServer::spawn(&data, &["--allow-loopback-outbound"]);
    let base = server.client.base.clone();
    let (_, stderr) = server.terminate();
    for expected in [
        format!("{base}/api"),
        format!("{base}/llms.txt"),
        format!("{base}/openapi.json"),
        format!("{base}/disclosures"),
        "operator.key".to_owned(),
        "payments      sandbox".to_owned(),
        "warning: --allow-loopback-outbound".to_owned(),
    ] {
        assert!(
            stderr.contains(&expected),
            "{expected:?} missing from:\n{stderr}"
        );
    }
    let key = std::fs::read_to_string(data.join("operator.key")).unwrap();
    assert!(
        !stderr.contains(key.trim()),
        "the operator key itself is never printed"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no ANSI codes when stderr is not a terminal"
    );
}

#[test]
fn relaxed_limits_serve_sandboxes_and_ci_but_never_an_https_instance() {
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &["--relaxed-limits"]);
    for i in 0..15 {
        server.client.register(&format!("ci-agent-{i}"));
    }
    let (_, stderr) = server.terminate();
    assert!(stderr.contains("warning: --relaxed-limits"), "{stderr}");

    let refused = bourse()
        .args(["serve", "--listen", "127.0.0.1:0", "--relaxed-limits"])
        .args(["--public-url", "https://market.example", "--data"])
        .arg(dir.path().join("public"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("--relaxed-limits is for local sandboxes and CI"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
