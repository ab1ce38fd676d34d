//! Optional tools (the MCP SDK, Chromium, Docker, Litestream): skipped with a `SKIPPED` line
//! when missing, failed when CI requires them.

/// Whether a missing optional tool (the official MCP SDK, Chromium for the page screenshots)
/// fails a test instead of skipping it: when `CI` is set (CI runs `.ci/run` with `CI=true`) or
/// `BOURSE_REQUIRE_SDK=1`.
pub fn optional_tools_required() -> bool {
    let set =
        |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("BOURSE_REQUIRE_SDK")
}

/// Ends a test whose optional tool is missing: a failure where tools are required (see
/// [`optional_tools_required`]), else a line `SKIPPED <test>: <why>` written to the terminal
/// itself, past the test harness's capture, so a run shows what it did not test.
#[track_caller]
pub fn skip_or_fail(test: &str, why: &str) {
    assert!(
        !optional_tools_required(),
        "{test} cannot run: {why} (a missing tool fails here because CI or BOURSE_REQUIRE_SDK=1 is set)"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {why} (listed as ok, yet it tested nothing)"
    );
}
