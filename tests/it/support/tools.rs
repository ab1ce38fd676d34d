//! Optional tools (the MCP SDK, the agent SDKs, Chromium, Docker, Litestream, moto): skipped
//! with a `SKIPPED` line when missing, failed when CI requires them, and counted in one line at
//! the end of the run.

use std::sync::Mutex;

/// Whether a missing optional tool (the official MCP SDK, Chromium for the page screenshots)
/// fails a test instead of skipping it: when `CI` is set (CI runs `.ci/run` with `CI=true`) or
/// `BOURSE_REQUIRE_SDK=1`.
pub fn optional_tools_required() -> bool {
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("BOURSE_REQUIRE_SDK")
}

/// The tests skipped in this run, with why.
static SKIPPED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Ends a test whose optional tool is missing: a failure where tools are required (see
/// [`optional_tools_required`]), else a line `SKIPPED <test>: <why>` written to the terminal
/// itself, past the test harness's capture, so a run shows what it did not test; and, once the
/// harness has printed its result, one line counting the skipped tests ([`summary`]).
#[track_caller]
pub fn skip_or_fail(test: &str, why: &str) {
    assert!(
        !optional_tools_required(),
        "{test} cannot run: {why} (a missing tool fails here because CI or BOURSE_REQUIRE_SDK=1 is set)"
    );
    note_skipped(test, why);
}

/// Says that `test` tested nothing, now and in the closing count.
fn note_skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {why} (listed as ok, yet it tested nothing)"
    );
    let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if skipped.is_empty() {
        unsafe extern "C" {
            fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
        }
        // SAFETY: `atexit` is the C library's; `summary` neither panics nor unwinds.
        unsafe { atexit(summary) };
    }
    skipped.push((test.to_owned(), why.to_owned()));
}

/// Ends a test that needs what only CI prepares (the release build): a failure under `CI`,
/// else skipped as [`skip_or_fail`] skips (`BOURSE_REQUIRE_SDK` asks for tools, not builds).
#[track_caller]
pub fn skip_unless_ci(test: &str, why: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(!ci, "{test} cannot run: {why} (CI is set)");
    note_skipped(test, why);
}

/// Printed as the process exits, after the harness's `test result` line: how many tests passed
/// without testing anything, and why, so a green run that skipped is not mistaken for a whole one.
extern "C" fn summary() {
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let mut why: Vec<&str> = skipped.iter().map(|(_, why)| why.as_str()).collect();
    why.sort_unstable();
    why.dedup();
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {} of the tests above (counted as passed, they tested nothing): {}. \
         `.ci/test-tools && . target/test-tools.env` installs every optional tool.",
        skipped.len(),
        why.join("; ")
    );
}
