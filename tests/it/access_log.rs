//! The access log: one line per request on stderr, written within moments (access lines are
//! held together for at most `logs::HOLD`, a tenth of a second), in order with every other
//! line, and all of them by the time a stopped server has exited.

use std::time::{Duration, Instant};

use crate::support::BinServer;

fn access_targets(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| line.contains(" access: "))
        .filter_map(|line| line.split("target=\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn access_lines_arrive_within_moments_in_order_and_all_of_them_at_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let server = BinServer::spawn_logged(&dir.path().join("data"), &[], &log);

    // One request, then nothing: its line is written without waiting for more traffic or a stop.
    assert_eq!(server.client.get("/healthz?probe=alone").status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let written = std::fs::read_to_string(&log).unwrap();
        if access_targets(&written).contains(&"/healthz?probe=alone".to_owned()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the access line of a lone request was not written within 10 s:\n{written}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    // Many requests (more than one batch of held lines), then a stop: every line, in order,
    // before the lines the stop writes.
    for i in 0..600 {
        assert_eq!(
            server.client.get(&format!("/healthz?probe={i}")).status,
            200
        );
    }
    let (status, _) = server.terminate();
    assert!(status.success());
    let written = std::fs::read_to_string(&log).unwrap();
    let expected: Vec<String> = std::iter::once("/healthz?probe=alone".to_owned())
        .chain((0..600).map(|i| format!("/healthz?probe={i}")))
        .collect();
    assert_eq!(access_targets(&written), expected);
    let last_access = written.rfind(" access: ").unwrap();
    let stopping = written.find("shutting down").expect("the stop is logged");
    assert!(
        last_access < stopping,
        "every access line comes before the stop's lines"
    );
}
