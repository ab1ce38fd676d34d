//! A server under the bench (bourse or the floor), started as a child process: where it
//! listens, how long it took to, its CPU time and memory, and whether it has written its browse
//! snapshot (a line of its log).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// A server process and where it listens.
pub struct Server {
    child: Child,
    pub host: String,
    /// Hears once its log says `browse snapshot written`.
    snapshot_written: Receiver<()>,
}

impl Server {
    /// Starts a server and waits for its `listening on http://…` line on stdout.
    pub fn start(mut command: Command) -> (Server, Duration) {
        let started = Instant::now();
        let (written, heard) = channel();
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        // Owned by a `Server` at once: its drop kills and reaps the process on every path.
        let mut server = Server {
            child: command.spawn().expect("start a server"),
            host: String::new(),
            snapshot_written: heard,
        };
        // Its log, read for the one line the bench waits on (and drained so the server never
        // blocks on a full pipe).
        let log = BufReader::new(server.child.stderr.take().expect("stderr"));
        std::thread::spawn(move || {
            for line in log.lines().map_while(Result::ok) {
                if line.contains("browse snapshot written") {
                    let _ = written.send(());
                }
            }
        });
        let mut reader = BufReader::new(server.child.stdout.take().expect("stdout"));
        let mut line = String::new();
        while server.host.is_empty() {
            line.clear();
            let read = reader.read_line(&mut line).unwrap_or(0);
            assert!(read > 0, "the server exited before listening");
            if let Some(at) = line.find("http://") {
                server.host = line[at + 7..].trim().trim_end_matches('/').to_owned();
            }
        }
        // Keep draining the pipe so the server never blocks on a full one.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        (server, started.elapsed())
    }

    /// User plus system CPU time so far.
    pub fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the parenthesised command name: state is field 3; utime 14, stime 15.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 = fields
            .get(11)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            + fields
                .get(12)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        // The kernel's USER_HZ is 100 on Linux.
        Duration::from_millis(ticks * 10)
    }

    /// Resident memory in MiB.
    pub fn rss_mib(&self) -> f64 {
        self.status_mib("VmRSS:")
    }

    /// A memory figure of `/proc/<pid>/status` (`VmRSS:` now, `VmHWM:` the highest so far), in
    /// MiB.
    pub fn status_mib(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

impl Server {
    /// Waits (at most `limit`) for the server to have written its browse snapshot.
    pub fn wait_for_snapshot(&self, limit: Duration) -> bool {
        self.snapshot_written.recv_timeout(limit).is_ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
