//! The access log: one line per request on stderr, written within moments (access lines are
//! held together for at most `logs::HOLD`, a tenth of a second, or until `logs::HELD_BYTES`
//! gather), in order with every other line, and all of them by the time a stopped server has
//! exited.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{BinServer, bourse};

/// The targets of the access lines in `log`, in the order written.
fn access_targets(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| line.contains(" access: "))
        .filter_map(|line| line.split("target=\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

/// `bourse serve` with its stderr in `log` and the log filter `filter`.
fn serve_logged(dir: &std::path::Path, log: &std::path::Path, filter: &str) -> BinServer {
    let mut command = bourse();
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.join("data"))
        .env("BOURSE_LOG", filter)
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()));
    BinServer::start(command)
}

/// Requests `/healthz` with each target of `probes` (each about 1.5 KB: enough lines to fill the
/// held bytes several times a tenth of a second) and stops the server: the log it left.
fn probe_then_stop(server: BinServer, log: &std::path::Path, probes: &[String]) -> String {
    for target in probes {
        assert_eq!(server.client.get(target).status, 200);
    }
    let (status, _) = server.terminate();
    assert!(status.success());
    std::fs::read_to_string(log).unwrap()
}

fn probes(n: usize) -> Vec<String> {
    let padding = "p".repeat(1_500);
    (0..n)
        .map(|i| format!("/healthz?probe={i}&pad={padding}"))
        .collect()
}

#[test]
fn access_lines_arrive_within_moments_in_order_and_all_of_them_at_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = serve_logged(dir.path(), &log, "info");

    // One request, then nothing: its line is written without more traffic or a stop.
    assert_eq!(server.client.get("/healthz?probe=alone").status, 200);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let written = std::fs::read_to_string(&log).unwrap();
        if access_targets(&written).contains(&"/healthz?probe=alone".to_owned()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the access line of a lone request was not written within 3 s:\n{written}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    // Many requests, then a stop: every line, in order, before the lines the stop writes.
    let many = probes(600);
    let written = probe_then_stop(server, &log, &many);
    let expected: Vec<String> = std::iter::once("/healthz?probe=alone".to_owned())
        .chain(many)
        .collect();
    assert_eq!(access_targets(&written), expected);
    let last_access = written.rfind(" access: ").unwrap();
    let stopping = written.find("shutting down").expect("the stop is logged");
    assert!(
        last_access < stopping,
        "every access line comes before the stop's lines"
    );
}

#[test]
fn with_only_access_lines_logged_a_stop_still_writes_every_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    // No other line at info, and fewer lines than the held bytes: only the thread that writes
    // held lines out, or the stop's own flush, can write them before the process exits.
    let server = serve_logged(dir.path(), &log, "warn,access=info");
    let few = probes(5);
    let written = probe_then_stop(server, &log, &few);
    assert_eq!(access_targets(&written), few);
    assert!(
        !written.contains("shutting down"),
        "the filter leaves only access lines at info"
    );
}
