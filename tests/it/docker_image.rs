//! The `Dockerfile`, built and run as its users do: `docker build` from this checkout (the build
//! stage on `BOURSE_DOCKER_RUST_IMAGE`, the `RUST_IMAGE` build argument), then the image checked
//! from the outside. Its configuration is user 65532, a volume on `/data`, the health check
//! `/bourse health`, `/bourse serve` on 0.0.0.0:8080; its layers hold `/bourse` (static) and an
//! empty `/data` owned by 65532, nothing else. Run with its defaults alone it becomes healthy;
//! on the host's network with `BOURSE_LISTEN` and `BOURSE_HEALTH_URL` moved to another port it
//! answers `/healthz`, registers an agent, writes its keys and database into a named volume as
//! 65532, becomes healthy, and `docker stop` ends it cleanly (exit 0, the shutdown logged); a
//! new container on that volume still knows the agent.
//!
//! Building takes minutes, so the test runs only when `BOURSE_DOCKER_RUST_IMAGE` names the
//! build image (`rust:1.95-bookworm` where Docker Hub is reachable; `.ci/run` makes a stand-in
//! with `.ci/rust-image`) and a Docker daemon answers; otherwise it is skipped, or fails in CI.
//! Everything it creates (images, containers, the volume) is removed at the end.

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tempfile::TempDir;

use crate::static_binary::has_interpreter;
use crate::support::{Client, exit_within, skip_or_fail, wait_until};

const TEST: &str = "dockerfile_image_builds_and_runs_as_documented";

/// How long the image may take to build (a release build from scratch: about four minutes on
/// two cores).
const BUILD_LIMIT: Duration = Duration::from_secs(20 * 60);
/// How long any other docker command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(120);
/// How long a container may take to answer, or to be reported healthy.
const START_LIMIT: Duration = Duration::from_secs(60);

/// A line on the terminal itself, past the harness's capture: what was done and how long it took.
fn progress(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{TEST}: {line}");
}

/// The last `count` lines of `text`.
fn tail(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// Runs `command` to its end, its output captured (through files, so a talkative command never
/// blocks on a full pipe); killed and failed after `limit`.
fn run_bounded(command: &mut Command, limit: Duration) -> Output {
    let spool = TempDir::new().unwrap();
    let (out_path, err_path) = (spool.path().join("out"), spool.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let Some(status) = exit_within(&mut child, limit) else {
        let _ = child.kill();
        let _ = child.wait();
        let err = fs::read_to_string(&err_path).unwrap_or_default();
        panic!(
            "{command:?} still running after {limit:?}; its last output:\n{}",
            tail(&err, 40)
        );
    };
    Output {
        status,
        stdout: fs::read(&out_path).unwrap(),
        stderr: fs::read(&err_path).unwrap(),
    }
}

fn docker_command(args: &[&str]) -> Command {
    let mut command = Command::new("docker");
    command.args(args);
    command
}

/// Runs `docker ARGS`, asserts it succeeded, and returns its stdout.
#[track_caller]
fn docker(args: &[&str]) -> String {
    let out = run_bounded(&mut docker_command(args), COMMAND_LIMIT);
    assert!(
        out.status.success(),
        "docker {}: {}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What `docker inspect --format '{{json FIELD}}' NAME` says.
#[track_caller]
fn inspect(name: &str, field: &str) -> Value {
    let text = docker(&[
        "inspect",
        "--format",
        &format!("{{{{json {field}}}}}"),
        name,
    ]);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{field} of {name}: {e}: {text}"))
}

/// The names of everything the test creates; dropping it removes them all.
struct Created {
    prefix: String,
    /// The images the legacy builder made for each step (the build stage's are untagged, and
    /// stay after a failed build), newest last.
    layers: Vec<String>,
}

impl Created {
    fn new() -> Created {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        Created {
            prefix: format!("bourse-it-{}-{nanos}", std::process::id()),
            layers: Vec::new(),
        }
    }
    /// Notes the step images the legacy builder names in its output (` ---> 0123456789ab`),
    /// except `base`, the image it starts from. BuildKit names none (it keeps no step images).
    fn record_layers(&mut self, output: &str, base: &str) {
        let ids = output.lines().filter_map(|line| {
            let id = line.trim().strip_prefix("---> ")?;
            let hex = id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit());
            (hex && !base.trim_start_matches("sha256:").starts_with(id)).then(|| id.to_owned())
        });
        self.layers.extend(ids);
    }
    fn image(&self) -> String {
        format!("{}:image", self.prefix)
    }
    fn container(&self, role: &str) -> String {
        format!("{}-{role}", self.prefix)
    }
    fn volume(&self) -> String {
        format!("{}-data", self.prefix)
    }
}

const ROLES: [&str; 3] = ["defaults", "served", "again"];

impl Drop for Created {
    fn drop(&mut self) {
        let quietly = |args: Vec<String>| {
            let _ = docker_command(&args.iter().map(String::as_str).collect::<Vec<_>>())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        let mut rm = vec!["rm".to_owned(), "--force".into(), "--volumes".into()];
        rm.extend(ROLES.iter().map(|role| self.container(role)));
        quietly(rm);
        quietly(vec!["volume".into(), "rm".into(), self.volume()]);
        quietly(vec!["rmi".into(), self.image()]);
        // Newest first: an image goes once nothing is built on it.
        for layer in self.layers.iter().rev() {
            quietly(vec!["rmi".into(), layer.clone()]);
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until the container `name` runs and something accepts connections on `addr`; fails at
/// once, with its logs, if the container stops.
fn wait_answering(name: &str, addr: SocketAddr) {
    wait_until(
        &format!("{name} accepts connections on {addr}"),
        START_LIMIT,
        || {
            if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
                return Ok(());
            }
            let state = inspect(name, ".State");
            if state["Running"] != true {
                panic!("{name} stopped: {state}\n{}", tail(&logs(name), 30));
            }
            std::thread::sleep(Duration::from_millis(100));
            Err("no connection".to_owned())
        },
    );
}

/// Waits until Docker reports the container `name` healthy (its HEALTHCHECK passed); fails at
/// once if it is reported unhealthy or stops.
fn wait_healthy(name: &str) {
    wait_until(&format!("{name} is healthy"), START_LIMIT, || {
        let state = inspect(name, ".State");
        match state["Health"]["Status"].as_str() {
            Some("healthy") => return Ok(()),
            Some("unhealthy") => panic!("{name} is unhealthy: {}", state["Health"]),
            _ if state["Running"] != true => {
                panic!("{name} stopped: {state}\n{}", tail(&logs(name), 30))
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(200));
        Err(state["Health"].to_string())
    });
}

/// The container's stdout and stderr.
fn logs(name: &str) -> String {
    let out = run_bounded(&mut docker_command(&["logs", name]), COMMAND_LIMIT);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// An archive entry as `tar --numeric-owner -tv` lists it: mode, owner (uid/gid) and path.
type Entry = (String, String, String);

/// The entries of an archive, in order.
fn tar_entries(archive: &Path) -> Vec<Entry> {
    let out = run_bounded(
        Command::new("tar")
            .arg("--numeric-owner")
            .arg("-tvf")
            .arg(archive),
        COMMAND_LIMIT,
    );
    assert!(
        out.status.success(),
        "tar -tvf {}: {}",
        archive.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert!(fields.len() >= 6, "unexpected tar listing line {line:?}");
            (
                fields[0].to_owned(),
                fields[1].to_owned(),
                fields[5..].join(" "),
            )
        })
        .collect()
}

/// The image's layers, from `docker save` unpacked into `work/image`: each layer's path there
/// and its entries.
fn image_layers(image: &str, work: &Path) -> Vec<(String, Vec<Entry>)> {
    let archive = work.join("image.tar");
    docker(&["save", "--output", archive.to_str().unwrap(), image]);
    let unpacked = work.join("image");
    fs::create_dir(&unpacked).unwrap();
    let out = run_bounded(
        Command::new("tar")
            .arg("-xf")
            .arg(&archive)
            .arg("-C")
            .arg(&unpacked),
        COMMAND_LIMIT,
    );
    assert!(out.status.success(), "unpacking docker save's archive");
    let manifest: Value =
        serde_json::from_str(&fs::read_to_string(unpacked.join("manifest.json")).unwrap()).unwrap();
    manifest[0]["Layers"]
        .as_array()
        .unwrap_or_else(|| panic!("no Layers in docker save's manifest.json: {manifest}"))
        .iter()
        .map(|layer| {
            let path = layer.as_str().unwrap().to_owned();
            let entries = tar_entries(&unpacked.join(&path));
            (path, entries)
        })
        .collect()
}

#[test]
fn dockerfile_image_builds_and_runs_as_documented() {
    let Some(rust_image) = std::env::var("BOURSE_DOCKER_RUST_IMAGE")
        .ok()
        .filter(|image| !image.is_empty())
    else {
        skip_or_fail(
            TEST,
            "BOURSE_DOCKER_RUST_IMAGE is not set: it names the build stage's image \
             (rust:1.95-bookworm, or the stand-in .ci/rust-image makes, as .ci/run does); \
             building the image takes minutes",
        );
        return;
    };
    let answers = docker_command(&["version", "--format", "{{.Server.Version}}"])
        .stdin(Stdio::null())
        .output();
    if !answers.as_ref().is_ok_and(|out| out.status.success()) {
        let why = match answers {
            Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            Err(e) => format!("docker: {e}"),
        };
        skip_or_fail(
            TEST,
            &format!("no Docker daemon answers `docker version` ({why})"),
        );
        return;
    }
    let started = Instant::now();
    let mut created = Created::new();
    let work = TempDir::new().unwrap();
    let checkout = env!("CARGO_MANIFEST_DIR");

    // The build, as the README gives it, with the build image named; no cache, so every layer
    // is this build's own. The legacy builder is used where buildx is missing.
    let buildx = docker_command(&["buildx", "version"])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|out| out.status.success());
    let rust_arg = format!("RUST_IMAGE={rust_image}");
    let mut build = docker_command(&[
        "build",
        "--no-cache",
        "--network",
        "host",
        "--build-arg",
        &rust_arg,
        "--tag",
        &created.image(),
    ]);
    if !buildx {
        // A failed step's container is removed too (it would keep its image).
        build.arg("--force-rm").env("DOCKER_BUILDKIT", "0");
    }
    build.arg(checkout);
    let out = run_bounded(&mut build, BUILD_LIMIT);
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The build image's id, so that it is never taken for one of the build's own (the build
    // pulled it if it was not here).
    let base = run_bounded(
        &mut docker_command(&["image", "inspect", "--format", "{{.Id}}", &rust_image]),
        COMMAND_LIMIT,
    );
    let base = String::from_utf8_lossy(&base.stdout);
    created.record_layers(&output, base.trim());
    assert!(
        out.status.success(),
        "docker build --build-arg {rust_arg} failed ({}):\n{}",
        out.status,
        tail(&output, 60)
    );
    progress(&format!(
        "built the image on {rust_image} in {:.0?}",
        started.elapsed()
    ));
    let image = created.image();

    // The image's configuration.
    let config = inspect(&image, ".Config");
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(
        config["Volumes"],
        serde_json::json!({ "/data": {} }),
        "{config}"
    );
    assert_eq!(
        config["ExposedPorts"],
        serde_json::json!({ "8080/tcp": {} }),
        "{config}"
    );
    assert_eq!(
        config["Healthcheck"]["Test"],
        serde_json::json!(["CMD", "/bourse", "health"]),
        "{config}"
    );
    assert_eq!(config["Entrypoint"], serde_json::json!(["/bourse"]));
    assert_eq!(config["Cmd"], serde_json::json!(["serve"]));
    let env: Vec<&str> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for wanted in [
        "BOURSE_DATA=/data",
        "BOURSE_LISTEN=0.0.0.0:8080",
        "BOURSE_HEALTH_URL=http://127.0.0.1:8080",
    ] {
        assert!(env.contains(&wanted), "no {wanted} in {env:?}");
    }

    // Its files: the layers hold /bourse and /data, nothing else.
    let layers = image_layers(&image, work.path());
    let mut files: Vec<Entry> = layers
        .iter()
        .flat_map(|(_, entries)| entries.iter().cloned())
        .collect();
    files.sort();
    let expected = [
        ("-rwxr-xr-x", "0/0", "bourse"),
        ("drwxr-xr-x", "65532/65532", "data/"),
    ]
    .map(|(mode, owner, path)| (mode.to_owned(), owner.to_owned(), path.to_owned()));
    assert_eq!(files, expected, "the image's files (layers: {layers:?})");
    let (binary_layer, _) = layers
        .iter()
        .find(|(_, entries)| entries.iter().any(|(_, _, path)| path == "bourse"))
        .unwrap();
    let binary_dir = work.path().join("binary");
    fs::create_dir(&binary_dir).unwrap();
    let out = run_bounded(
        Command::new("tar")
            .arg("-xf")
            .arg(work.path().join("image").join(binary_layer))
            .arg("-C")
            .arg(&binary_dir)
            .arg("bourse"),
        COMMAND_LIMIT,
    );
    assert!(out.status.success(), "extracting /bourse");
    assert!(
        !has_interpreter(&fs::read(binary_dir.join("bourse")).unwrap()),
        "the image's /bourse is dynamically linked"
    );

    // Arguments after the image name go to /bourse.
    let version = docker(&["run", "--rm", "--network", "none", &image, "--version"]);
    assert_eq!(
        version.trim(),
        format!("bourse {}", env!("CARGO_PKG_VERSION"))
    );

    // With its defaults alone (in a network of its own: 0.0.0.0:8080 and a health check that
    // asks 127.0.0.1:8080), the container becomes healthy.
    let defaults = created.container("defaults");
    docker(&[
        "run",
        "--detach",
        "--name",
        &defaults,
        "--network",
        "none",
        "--health-interval=1s",
        "--health-start-period=1s",
        &image,
    ]);
    wait_healthy(&defaults);
    let log = logs(&defaults);
    assert!(
        log.contains("bourse listening on http://0.0.0.0:8080"),
        "{log}"
    );
    docker(&["rm", "--force", "--volumes", &defaults]);
    progress(&format!(
        "the image's defaults are healthy ({:.0?})",
        started.elapsed()
    ));

    // On the host's network, on a free loopback port (the listen address and the health
    // check's URL moved together, as the Dockerfile says), with a named volume on /data.
    let volume = created.volume();
    docker(&["volume", "create", &volume]);
    let serve = |role: &str| -> (String, Client) {
        let name = created.container(role);
        let port = free_port();
        let listen = format!("BOURSE_LISTEN=127.0.0.1:{port}");
        let health = format!("BOURSE_HEALTH_URL=http://127.0.0.1:{port}");
        let mount = format!("{volume}:/data");
        docker(&[
            "run",
            "--detach",
            "--name",
            &name,
            "--network",
            "host",
            "--env",
            &listen,
            "--env",
            &health,
            "--health-interval=1s",
            "--health-start-period=1s",
            "--volume",
            &mount,
            &image,
        ]);
        wait_answering(&name, SocketAddr::from(([127, 0, 0, 1], port)));
        (name, Client::new(&format!("http://127.0.0.1:{port}")))
    };
    let (served, client) = serve("served");
    client.get("/healthz").expect(200);
    let agent = client.register("docker");
    let key = agent["apiKey"].as_str().unwrap().to_owned();
    wait_healthy(&served);

    // The data landed in the volume, written by the image's user.
    let data_tar = work.path().join("data.tar");
    let out = run_bounded(
        &mut docker_command(&["cp", &format!("{served}:/data"), "-"]),
        COMMAND_LIMIT,
    );
    assert!(
        out.status.success(),
        "docker cp {served}:/data -: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::write(&data_tar, &out.stdout).unwrap();
    let data = tar_entries(&data_tar);
    for (path, mode) in [
        ("data/", "drwxr-xr-x"),
        ("data/bourse.db", "-rw-r--r--"),
        ("data/signing.key", "-rw-------"),
        ("data/operator.key", "-rw-------"),
    ] {
        assert!(
            data.iter()
                .any(|(m, owner, p)| p == path && m == mode && owner == "65532/65532"),
            "{path} ({mode}, 65532/65532) in the volume: {data:?}"
        );
    }

    // docker stop: SIGTERM to /bourse (PID 1), which drains and exits 0 within the grace time.
    docker(&["stop", "--time", "20", &served]);
    let state = inspect(&served, ".State");
    let log = logs(&served);
    assert_eq!(state["ExitCode"], 0, "{state}\n{}", tail(&log, 30));
    assert_eq!(state["OOMKilled"], false, "{state}");
    assert!(
        log.contains("shutting down: draining in-flight requests") && log.contains("stopped"),
        "{}",
        tail(&log, 30)
    );

    // A new container on the same volume knows the agent.
    let (again, client) = serve("again");
    let me = client.get_auth("/api/agents/me", &key).ok();
    assert_eq!(me["handle"], agent["handle"], "{me}");
    docker(&["stop", "--time", "20", &again]);
    assert_eq!(inspect(&again, ".State.ExitCode"), 0);

    drop(created);
    progress(&format!(
        "checked and cleaned up in {:.0?}",
        started.elapsed()
    ));
}
