//! What cargo sets for a process it runs (`cargo run`, `cargo test`), taken out of a nested
//! cargo command's environment: build scripts that watch such a variable (ring's read
//! `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …) would see it changed and rebuild ring, rustls,
//! ureq and bourse, and the outer command's next build would rebuild them again. Shared by the
//! bench (`examples/bench/main.rs`) and the README test (`tests/it/readme.rs`).

use std::process::Command;

/// Removes from `command`'s environment every variable cargo set for this process.
pub fn without_cargo_env(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo = [
            "CARGO_PKG_",
            "CARGO_BIN_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
        ]
        .iter()
        .any(|prefix| name.starts_with(prefix))
            || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&&*name);
        if set_by_cargo {
            command.env_remove(&*name);
        }
    }
}
