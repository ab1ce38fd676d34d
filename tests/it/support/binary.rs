//! The real `bourse` binary: built for these tests, the release build, serving on port 0.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use super::Client;

/// The `bourse` binary built for these tests.
pub fn bourse() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bourse"))
}

/// The release binary users run: `BOURSE_RELEASE_BIN` (`.ci/run` sets it to
/// `target/release/bourse` after building it), else the binary under test; the output says which.
pub fn release_binary() -> PathBuf {
    match std::env::var_os("BOURSE_RELEASE_BIN").filter(|path| !path.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "BOURSE_RELEASE_BIN={} is not a file",
                path.display()
            );
            eprintln!("note: testing BOURSE_RELEASE_BIN={}", path.display());
            std::fs::canonicalize(path).unwrap()
        }
        None => {
            let path = PathBuf::from(env!("CARGO_BIN_EXE_bourse"));
            eprintln!(
                "note: testing {} (set BOURSE_RELEASE_BIN to test another build)",
                path.display()
            );
            path
        }
    }
}

/// The executable of example `name` (`seller_endpoint`, `roundtrip` or `seed_catalog`): the
/// three are built once per test run, with this test's cargo and profile (`cargo build
/// --example … --message-format=json`, which names the executables).
pub fn example(name: &str) -> PathBuf {
    const EXAMPLES: [&str; 3] = ["seller_endpoint", "roundtrip", "seed_catalog"];
    static BUILT: OnceLock<Vec<PathBuf>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        // This test binary is target/<profile>/deps/it-<hash>: build into the same profile.
        let exe = std::env::current_exe().unwrap();
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .unwrap_or("debug")
            .to_owned();
        let mut build = Command::new(env!("CARGO"));
        super::cargo_env::without_cargo_env(&mut build);
        build.current_dir(env!("CARGO_MANIFEST_DIR")).args([
            "build",
            "--quiet",
            "--message-format=json",
        ]);
        for example in EXAMPLES {
            build.args(["--example", example]);
        }
        match profile.as_str() {
            "debug" => {}
            "release" => {
                build.arg("--release");
            }
            other => {
                build.args(["--profile", other]);
            }
        }
        let output = build.stderr(Stdio::inherit()).output().unwrap();
        assert!(output.status.success(), "building the examples failed");
        let executable = |name: &str| -> PathBuf {
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
                .find_map(|m| m["executable"].as_str().map(PathBuf::from))
                .unwrap_or_else(|| panic!("cargo named no executable for the example {name}"))
        };
        EXAMPLES.map(executable).to_vec()
    });
    let at = EXAMPLES
        .iter()
        .position(|&example| example == name)
        .unwrap_or_else(|| panic!("{name} is not among the examples the tests build"));
    built[at].clone()
}

/// The real binary serving on port 0; killed on drop.
pub struct BinServer {
    pub child: Child,
    pub client: Client,
    pub listening_line: String,
}

impl BinServer {
    /// Starts `bourse serve --listen 127.0.0.1:0 --data DIR` and waits for its listening line.
    pub fn spawn(data: &Path, extra: &[&str]) -> BinServer {
        BinServer::spawn_with_stderr(data, extra, Stdio::piped())
    }

    /// As [`BinServer::spawn`], its stderr (the access log too) written to `log`: for a server
    /// that answers more requests than a pipe nobody reads can hold.
    pub fn spawn_logged(data: &Path, extra: &[&str], log: &Path) -> BinServer {
        let file = std::fs::File::create(log).unwrap();
        BinServer::spawn_with_stderr(data, extra, Stdio::from(file))
    }

    fn spawn_with_stderr(data: &Path, extra: &[&str], stderr: Stdio) -> BinServer {
        let mut command = bourse();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(extra)
            .stderr(stderr);
        BinServer::start(command)
    }

    /// Runs `command` (a `bourse serve` however it is wrapped: it must exec the server so that
    /// killing the child stops it) and waits for its listening line.
    pub fn start(mut command: Command) -> BinServer {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let line = line.trim_end().to_owned();
        let base = line
            .strip_prefix("bourse listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        BinServer {
            client: Client::new(base),
            listening_line: line.clone(),
            child,
        }
    }

    /// Stops the server with SIGTERM: its exit status and, when it was spawned with piped
    /// stderr, what it wrote there (empty for `spawn_logged`, whose log is the file).
    pub fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = self.child.wait().unwrap();
        let mut stderr = String::new();
        use std::io::Read;
        // A server spawned with its stderr in a log file (`spawn_logged`) has none to read here.
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr).unwrap();
        }
        (status, stderr)
    }
}

impl Drop for BinServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
