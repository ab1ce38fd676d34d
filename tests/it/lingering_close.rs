//! An answer sent before the request's body was read (a 413 for an upload past the limit)
//! reaches a client that writes its whole body before it reads, as Python's `http.client` (and
//! so `urllib` and `requests`) does; and a client that keeps sending without reading cannot hold
//! the connection open: the server stops reading after a bounded amount.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{BinServer, skip_or_fail};

const CLIENT: &str = r#"
import http.client, json, sys
host, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
connection = http.client.HTTPConnection(host, port, timeout=30)
connection.request("POST", "/api/agents/register", body=b"x" * size,
                   headers={"content-type": "application/json"})
response = connection.getresponse()
print(response.status)
print(response.read().decode())
"#;

#[test]
fn a_refused_upload_reaches_a_client_that_writes_the_whole_body_first() {
    let test =
        "lingering_close::a_refused_upload_reaches_a_client_that_writes_the_whole_body_first";
    if Command::new("python3").arg("--version").output().is_err() {
        skip_or_fail(test, "python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &[]);
    let address = server.client.base.trim_start_matches("http://").to_owned();
    let (host, port) = address.rsplit_once(':').unwrap();
    for mib in [3, 12] {
        let output = Command::new("python3")
            .args(["-c", CLIENT, host, port, &(mib << 20).to_string()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{mib} MiB: the client did not get its answer: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let (status, body) = stdout.split_once('\n').unwrap();
        assert_eq!(status, "413", "{mib} MiB: {stdout}");
        let body: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
        assert_eq!(body["error"]["code"], "PAYLOAD_TOO_LARGE", "{body}");
        assert_eq!(body["error"]["status"], 413);
    }
    // The server still answers afterwards.
    server.client.get("/healthz").assert_status(200);
}

#[test]
fn a_client_that_sends_without_end_and_never_reads_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let server = BinServer::spawn(&dir.path().join("data"), &[]);
    let address = server.client.base.trim_start_matches("http://").to_owned();
    let mut stream = TcpStream::connect(&address).unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let head = format!(
        "POST /api/agents/register HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        1u64 << 40
    );
    stream.write_all(head.as_bytes()).unwrap();
    // Never read; keep writing until the server lets go (its bound is 64 MiB or 10 s).
    let chunk = vec![b'x'; 1 << 20];
    let started = Instant::now();
    let mut sent = 0usize;
    let refused = loop {
        if let Err(error) = stream.write_all(&chunk) {
            break error;
        }
        sent += chunk.len();
        assert!(
            started.elapsed() < Duration::from_secs(60) && sent < 1 << 30,
            "the server kept reading: {} MiB in {:?}",
            sent >> 20,
            started.elapsed()
        );
    };
    assert!(
        matches!(
            refused.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        ),
        "{refused}"
    );
    // Whatever arrived before the cut is the 413 answer.
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 413"),
        "{answer}"
    );
    server.client.get("/healthz").assert_status(200);
}
