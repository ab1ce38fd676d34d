//! Waiting for something observable: one bounded poll, [`wait_until`], for every wait.

use std::fmt::Display;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen promptly.
pub const WAIT: Duration = Duration::from_secs(10);

/// What a [`wait_until`] condition answers: `true`, `Some(value)` or `Ok(value)` when it holds;
/// `Err(seen)` says what was seen instead, for the message when time runs out.
pub trait Outcome {
    type Value;
    fn done(self) -> Result<Self::Value, String>;
}

impl Outcome for bool {
    type Value = ();
    fn done(self) -> Result<(), String> {
        if self { Ok(()) } else { Err(String::new()) }
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

impl<T, E: Display> Outcome for Result<T, E> {
    type Value = T;
    fn done(self) -> Result<T, String> {
        self.map_err(|seen| seen.to_string())
    }
}

/// Polls `condition` until it holds or `timeout` has passed: what it answered, or the last
/// thing it saw. The one polling loop of these tests; [`wait_until`] and [`exit_within`] use it.
pub fn poll_until<O: Outcome>(
    timeout: Duration,
    mut condition: impl FnMut() -> O,
) -> Result<O::Value, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let seen = match condition().done() {
            Ok(value) => return Ok(value),
            Err(seen) => seen,
        };
        if Instant::now() >= deadline {
            return Err(seen);
        }
        // The polling interval, not a wait for the thing itself.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `condition` until it holds and returns what it answered; panics naming `what` (and
/// the last thing seen) when it still does not hold after `timeout`.
#[track_caller]
pub fn wait_until<O: Outcome>(
    what: &str,
    timeout: Duration,
    condition: impl FnMut() -> O,
) -> O::Value {
    match poll_until(timeout, condition) {
        Ok(value) => value,
        Err(seen) if seen.is_empty() => panic!("timed out after {timeout:?} waiting until {what}"),
        Err(seen) => panic!("timed out after {timeout:?} waiting until {what}; last seen: {seen}"),
    }
}

/// Waits for `child` to exit, at most `limit`: its exit status, or `None` while it still runs
/// (the caller decides how to end it and what to report).
pub fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    poll_until(limit, || child.try_wait().unwrap()).ok()
}
