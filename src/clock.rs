//! Time, injectable so tests move it instead of sleeping.

use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now, as a UTC timestamp.
    fn now(&self) -> Timestamp;

    /// Moves the clock forward, when it can be moved (test and sandbox clocks); `false` for
    /// the real clock.
    fn advance(&self, _by: SignedDuration) -> bool {
        false
    }

    /// Returns a moved clock to real time, when it can (the sandbox clock); `false` otherwise.
    fn reset(&self) -> bool {
        false
    }

    /// The time to stamp on requests other parties check for freshness (signed requests to
    /// sellers, callbacks): the real time even when the sandbox clock has been moved, so peers
    /// do not refuse them as stale. Test clocks answer their own time.
    fn wall(&self) -> Timestamp {
        self.now()
    }
}

/// The operating system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to (tests).
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// Starts at `start`.
    pub fn new(start: Timestamp) -> ManualClock {
        ManualClock(Mutex::new(start))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: SignedDuration) {
        let mut now = self.0.lock().expect("clock lock");
        *now = now.checked_add(by).expect("clock stays in range");
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().expect("clock lock")
    }

    fn advance(&self, by: SignedDuration) -> bool {
        ManualClock::advance(self, by);
        true
    }
}

/// The system clock plus an offset: the sandbox's test clock (`POST /api/sandbox/clock`), so
/// escrow and checkout expiry can be tried without waiting. It moves forward, or back to real
/// time with a reset.
#[derive(Default)]
pub struct SandboxClock(Mutex<SignedDuration>);

impl Clock for SandboxClock {
    fn now(&self) -> Timestamp {
        let offset = *self.0.lock().expect("clock lock");
        Timestamp::now()
            .checked_add(offset)
            .unwrap_or(Timestamp::MAX)
    }

    fn advance(&self, by: SignedDuration) -> bool {
        let mut offset = self.0.lock().expect("clock lock");
        *offset = offset.saturating_add(by);
        true
    }

    fn reset(&self) -> bool {
        *self.0.lock().expect("clock lock") = SignedDuration::ZERO;
        true
    }

    fn wall(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// RFC 3339 UTC with milliseconds and a `Z`, the one timestamp format we emit.
pub fn rfc3339(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// `at + by` as [`rfc3339`], saturating at the end of time.
pub fn rfc3339_after(at: Timestamp, by: SignedDuration) -> String {
    rfc3339(at.checked_add(by).unwrap_or(Timestamp::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_always_has_millis_and_z() {
        let at: Timestamp = "2026-11-21T04:00:00Z".parse().unwrap();
        assert_eq!(rfc3339(at), "2026-11-21T04:00:00.000Z");
    }
}
