//! The release binary is one static executable: it starts inside an otherwise empty root
//! filesystem (the binary, `/etc/hosts`, `/etc/resolv.conf` and a writable data dir, nothing
//! else: no C library, no NSS modules, no `/proc`, no `/dev`), answers `/healthz`, registers an
//! agent, and verifies a seller endpoint it reaches by a host name only that root's
//! `/etc/hosts` knows.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::json;
use tempfile::TempDir;

use crate::seller_twin::{Mode, SellerTwin};
use crate::support::{BinServer, release_binary, skip_or_fail};

const TEST: &str = "static_binary_runs_in_an_empty_root";

/// The ELF program headers name no interpreter (`PT_INTERP`): nothing is loaded at start, the
/// kernel runs the file as it is (what `ldd` reports as "statically linked").
pub(crate) fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    let u16_at = |at: usize| usize::from(u16::from_le_bytes([elf[at], elf[at + 1]]));
    let phoff = usize::try_from(u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap())).unwrap();
    let (entry_size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let at = phoff + i * entry_size;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3
    })
}

/// How to run a command inside `root`: `chroot --userspec=65532:65532 ROOT` as root (the user
/// the container image runs as); otherwise a new user namespace (`unshare --map-root-user
/// --root ROOT`) where the kernel allows one. `None` when neither works here.
fn confinement(root: &Path) -> Option<Vec<String>> {
    let root = root.to_str().unwrap().to_owned();
    let as_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
    let chroot = vec![
        "chroot".into(),
        "--userspec=65532:65532".into(),
        root.clone(),
    ];
    let unshare = vec![
        "unshare".into(),
        "--map-root-user".into(),
        "--root".into(),
        root,
    ];
    let candidates = if as_root {
        vec![chroot, unshare]
    } else {
        vec![unshare]
    };
    candidates.into_iter().find(|prefix| {
        confined(prefix, &["/bin/bourse", "--version"])
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

fn confined(prefix: &[String], args: &[&str]) -> Command {
    let mut command = Command::new(&prefix[0]);
    command.args(&prefix[1..]).args(args);
    command
}

#[test]
fn static_binary_runs_in_an_empty_root() {
    if !cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu"
    )) {
        skip_or_fail(
            TEST,
            "the static build is set up for x86_64 Linux (glibc) only",
        );
        return;
    }
    let binary = release_binary();
    let elf = fs::read(&binary).unwrap();
    assert!(
        !has_interpreter(&elf),
        "{} is dynamically linked (.cargo/config.toml links it statically)",
        binary.display()
    );

    let root = TempDir::new().unwrap();
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).unwrap();
    for dir in ["bin", "etc", "data"] {
        fs::create_dir(root.path().join(dir)).unwrap();
    }
    fs::copy(&binary, root.path().join("bin/bourse")).unwrap();
    fs::write(
        root.path().join("etc/hosts"),
        "127.0.0.1 localhost\n127.0.0.1 seller.bourse.test\n",
    )
    .unwrap();
    // Asked only for the unknown name below: nothing listens there, so that lookup fails at once.
    fs::write(
        root.path().join("etc/resolv.conf"),
        "nameserver 127.0.0.1\n",
    )
    .unwrap();
    // The data dir belongs to the unprivileged user the server runs as (as in the image).
    let _ = Command::new("chown")
        .args(["65532:65532"])
        .arg(root.path().join("data"))
        .status();
    let Some(prefix) = confinement(root.path()) else {
        skip_or_fail(
            TEST,
            "neither chroot (as root) nor an unprivileged user namespace is available",
        );
        return;
    };
    let mut listing: Vec<String> = walk(root.path());
    listing.sort();
    assert_eq!(
        listing,
        [
            "bin",
            "bin/bourse",
            "data",
            "etc",
            "etc/hosts",
            "etc/resolv.conf"
        ],
        "the root holds nothing else"
    );

    let server = BinServer::start(confined(
        &prefix,
        &[
            "/bin/bourse",
            "serve",
            "--data",
            "/data",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback-outbound",
        ],
    ));
    let client = &server.client;
    client.get("/healthz").expect(200);
    // The container image's health check, from inside the root.
    for probe in [
        vec!["--url", &client.base],
        vec!["--ready", "--url", &client.base],
    ] {
        let health = confined(&prefix, &[&["/bin/bourse", "health"], &probe[..]].concat())
            .output()
            .unwrap();
        assert!(
            health.status.success(),
            "bourse health {probe:?}: {}",
            String::from_utf8_lossy(&health.stderr)
        );
    }
    let down = confined(
        &prefix,
        &["/bin/bourse", "health", "--url", "http://127.0.0.1:9"],
    )
    .output()
    .unwrap();
    assert_eq!(
        down.status.code(),
        Some(1),
        "a server that is not there is not healthy"
    );
    let agent = client.register("static-seller");
    let key = agent["apiKey"].as_str().unwrap();

    let twin = SellerTwin::start(
        &client.base,
        b"a,b\n1,2\n".to_vec(),
        "text/csv",
        Mode::Honest,
    );
    let by_name = twin.url.replace("127.0.0.1", "seller.bourse.test");
    let verified = client
        .send_auth(
            "PUT",
            "/api/sell/delivery-endpoint",
            key,
            &json!({ "url": by_name }),
        )
        .expect(200);
    assert_eq!(verified["verified"], true, "{verified}");
    assert_eq!(verified["url"], format!("{by_name}/"), "{verified}");
    assert!(
        twin.requests().iter().any(|r| r["type"] == "bourse.verify"),
        "the seller endpoint was asked to verify"
    );
    // A name neither /etc/hosts nor any name server knows is refused with a clear error.
    let unknown = client.send_auth(
        "PUT",
        "/api/sell/delivery-endpoint",
        key,
        &json!({ "url": "http://nowhere.bourse.test:9/" }),
    );
    assert!(
        (400..500).contains(&unknown.status) && unknown.json()["error"]["code"].is_string(),
        "{} {}",
        unknown.status,
        unknown.text()
    );
    println!("unknown host: {} {}", unknown.status, unknown.text());
    assert!(root.path().join("data/bourse.db").exists());
}

fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            found.extend(
                walk(&path)
                    .into_iter()
                    .map(|inner| format!("{name}/{inner}")),
            );
        }
        found.push(name);
    }
    found
}
