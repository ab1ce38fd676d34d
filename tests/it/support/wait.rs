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

/// Runs `task(i)` for `i` in `0..n`, each on its own thread started at once, and answers what
/// they returned in the order they finished; panics naming `what` when they have not all
/// finished within `timeout` (a stuck request fails the test instead of hanging it).
#[track_caller]
pub fn all_at_once<T: Send + 'static>(
    what: &str,
    n: usize,
    timeout: Duration,
    task: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let task = std::sync::Arc::new(task);
    let (send, answers) = std::sync::mpsc::channel();
    for i in 0..n {
        let (task, send) = (task.clone(), send.clone());
        std::thread::spawn(move || {
            let _ = send.send(task(i));
        });
    }
    let deadline = Instant::now() + timeout;
    (0..n)
        .map(|done| {
            let left = deadline.saturating_duration_since(Instant::now());
            answers.recv_timeout(left).unwrap_or_else(|_| {
                panic!("{what}: only {done} of {n} finished within {timeout:?}")
            })
        })
        .collect()
}
