//! Sliding-window rate limits: at most `max` events per `window` per key, exactly (a log of
//! the last `max` event times per key, so "10 per hour" never admits an 11th within any hour).
//! A check costs two hash lookups and the events that expired since the last one; it allocates
//! only for a key it has not seen.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use jiff::{SignedDuration, Timestamp};

use crate::clock::Clock;
use crate::error::Error;

/// One limit: its name (part of the key space), size and window.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub name: &'static str,
    pub max: usize,
    pub window: SignedDuration,
    /// What is being limited, for the 429 message ("registrations").
    pub what: &'static str,
    /// Keyed by client address (lifted by `--relaxed-limits`), rather than by agent.
    pub per_client: bool,
}

/// 10 registrations per hour per client IP.
pub const REGISTRATION: Rule = Rule {
    name: "register",
    max: 10,
    window: SignedDuration::from_hours(1),
    what: "registrations",
    per_client: true,
};

/// 100 OAuth client registrations per hour per client IP (hosted clients register once per
/// person, from shared addresses).
pub const CLIENT_REGISTRATION: Rule = Rule {
    name: "oauth-register",
    max: 100,
    window: SignedDuration::from_hours(1),
    what: "OAuth client registrations",
    per_client: true,
};

/// 10 fetches of client metadata documents per minute per host (a fetched document is kept an
/// hour, so a real client seldom needs another; this bounds what a stranger can make bourse dial).
pub const CLIENT_DOCUMENTS: Rule = Rule {
    name: "oauth-documents",
    max: 10,
    window: SignedDuration::from_mins(1),
    what: "client metadata document fetches for this host",
    per_client: false,
};

/// 5 client metadata document fetches per minute per client IP: what one address can make
/// bourse dial through `/oauth/authorize` (and the token and revocation endpoints) before it
/// has any credential, whatever hosts it names.
pub const CLIENT_DOCUMENT_REQUESTERS: Rule = Rule {
    name: "oauth-documents-requester",
    max: 5,
    window: SignedDuration::from_mins(1),
    what: "client metadata document fetches from this address",
    per_client: true,
};

/// 60 client metadata document fetches per minute from all requesters together (key
/// [`ALL_REQUESTERS`]): many addresses cannot make bourse a fetching proxy either.
pub const CLIENT_DOCUMENTS_IN_ALL: Rule = Rule {
    name: "oauth-documents-all",
    max: 60,
    window: SignedDuration::from_mins(1),
    what: "client metadata document fetches",
    per_client: false,
};

/// The one key of a rule counted for every requester together.
pub const ALL_REQUESTERS: &str = "all";

/// 120 admissions (lookup, inbox, send; REST and MCP together) per minute per client IP.
pub const ADMISSION: Rule = Rule {
    name: "admission",
    max: 120,
    window: SignedDuration::from_mins(1),
    what: "lookup, inbox and send requests",
    per_client: true,
};

/// 30 new messages per sender per minute, REST and MCP together (idempotent repeats are free).
pub const NEW_MESSAGES: Rule = Rule {
    name: "messages",
    max: 30,
    window: SignedDuration::from_mins(1),
    what: "new messages",
    per_client: false,
};

/// 20 new inquiries (ideas, contact messages, service requests) per hour per client IP.
pub const INQUIRIES: Rule = Rule {
    name: "inquiries",
    max: 20,
    window: SignedDuration::from_hours(1),
    what: "inquiries",
    per_client: true,
};

/// The limiter shared by every request.
pub struct RateLimiter {
    clock: Arc<dyn Clock>,
    /// Per-client rules are lifted (`--relaxed-limits`).
    relaxed: bool,
    windows: Mutex<Windows>,
}

/// Every log, by rule name and key: looked up with the caller's `&str`, so a check allocates
/// only for a key it has not seen.
#[derive(Clone, Default)]
struct Windows {
    rules: HashMap<&'static str, HashMap<Box<str>, Log>>,
    /// Logs across every rule, for the sweep.
    logs: usize,
    /// When the last sweep ran (nanoseconds) and how many logs it left.
    swept_at: i64,
    kept: usize,
    /// Events refused so far, by rule name (for the metrics).
    refused: HashMap<&'static str, u64>,
}

/// The recent events of one key under one rule, with that rule's window (so a sweep knows
/// when the whole log has expired whichever rule made it). Times are nanoseconds since the Unix
/// epoch, ascending: 8 bytes an event.
#[derive(Clone)]
struct Log {
    window: i64,
    events: VecDeque<i64>,
}

/// Above this many logs, a check may sweep the expired ones: when the logs have doubled since
/// the last sweep, or a minute has passed. So a sweep's cost is spread over the checks that
/// made it due, even when many clients are active at once (a sweep that finds every log live
/// is not repeated at the next check).
const SWEEP_ABOVE: usize = 10_000;
const SWEEP_EVERY: i64 = 60 * 1_000_000_000;

fn nanos(at: Timestamp) -> i64 {
    i64::try_from(at.as_nanosecond()).unwrap_or(i64::MAX)
}

impl Windows {
    fn sweep_due(&self, now: i64) -> bool {
        self.logs > SWEEP_ABOVE
            && (self.logs > 2 * self.kept || !(0..SWEEP_EVERY).contains(&(now - self.swept_at)))
    }

    /// Drops the logs whose last event is older than their window.
    fn sweep(&mut self, now: i64) {
        for keys in self.rules.values_mut() {
            keys.retain(|_, log| {
                log.events
                    .back()
                    .is_some_and(|last| now - last < log.window)
            });
        }
        self.rules.retain(|_, keys| !keys.is_empty());
        self.logs = self.rules.values().map(HashMap::len).sum();
        self.swept_at = now;
        self.kept = self.logs;
    }
}

impl RateLimiter {
    /// A limiter reading time from `clock`; `relaxed` lifts the per-client rules.
    pub fn new(clock: Arc<dyn Clock>, relaxed: bool) -> RateLimiter {
        RateLimiter {
            clock,
            relaxed,
            windows: Mutex::new(Windows::default()),
        }
    }

    /// Refuses, as [`RateLimiter::check`] would, when `key` is already at its limit under
    /// `rule`, without recording an event: for rules that count failures only (console
    /// sign-ins), checked before the attempt.
    ///
    /// # Errors
    /// `RATE_LIMITED` with `retry_after_secs` ≥ 1.
    pub fn over(&self, rule: Rule, key: &str) -> Result<(), Error> {
        if self.relaxed && rule.per_client {
            return Ok(());
        }
        let (live, now, window) = self.live(rule, key);
        if live.len() < rule.max {
            return Ok(());
        }
        let wait = window - (now - live[0]);
        Err(refusal(rule, wait))
    }

    /// The events of `key` under `rule` still in its window now, oldest first, with now and the
    /// window (in nanoseconds): one lock and one pass over that key's log.
    fn live(&self, rule: Rule, key: &str) -> (Vec<i64>, i64, i64) {
        let now = nanos(self.clock.now());
        let window = i64::try_from(rule.window.as_nanos()).unwrap_or(i64::MAX);
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let live = windows
            .rules
            .get(rule.name)
            .and_then(|keys| keys.get(key))
            .map(|log| {
                log.events
                    .iter()
                    .copied()
                    .filter(|at| *at <= now && now - at < window)
                    .collect()
            })
            .unwrap_or_default();
        (live, now, window)
    }

    /// How many events `key` has in `rule`'s window now (what a check would count), without
    /// recording one: for the console's agent page.
    pub fn in_window(&self, rule: Rule, key: &str) -> usize {
        self.live(rule, key).0.len()
    }

    /// Records one event for `key` under `rule`, or refuses it with the wait in seconds.
    ///
    /// # Errors
    /// `RATE_LIMITED` with `retry_after_secs` ≥ 1.
    pub fn check(&self, rule: Rule, key: &str) -> Result<(), Error> {
        if self.relaxed && rule.per_client {
            return Ok(());
        }
        let now = nanos(self.clock.now());
        let window = i64::try_from(rule.window.as_nanos()).unwrap_or(i64::MAX);
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.sweep_due(now) {
            windows.sweep(now);
        }
        let Windows {
            rules,
            logs,
            refused,
            ..
        } = &mut *windows;
        let keys = rules.entry(rule.name).or_default();
        if !keys.contains_key(key) {
            keys.insert(
                key.into(),
                Log {
                    window,
                    events: VecDeque::new(),
                },
            );
            *logs += 1;
        }
        let events = &mut keys.get_mut(key).expect("inserted above").events;
        // Events stamped later than now come from a sandbox clock since reset to real time:
        // they never happened in this timeline (and, times being ascending, they are the last).
        while events.back().is_some_and(|last| *last > now) {
            events.pop_back();
        }
        while events.front().is_some_and(|first| now - first >= window) {
            events.pop_front();
        }
        if events.len() < rule.max {
            events.push_back(now);
            return Ok(());
        }
        let oldest = *events.front().expect("full window is not empty");
        *refused.entry(rule.name).or_default() += 1;
        Err(refusal(rule, window - (now - oldest)))
    }
}

/// The refusal of `rule` for a wait of `wait` nanoseconds.
fn refusal(rule: Rule, wait: i64) -> Error {
    let retry_after_secs = u64::try_from(wait)
        .unwrap_or(0)
        .div_ceil(1_000_000_000)
        .max(1);
    Error::RateLimited {
        retry_after_secs,
        message: format!(
            "too many {}: at most {} per {}; retry after {retry_after_secs} s",
            rule.what,
            rule.max,
            describe(rule.window)
        ),
    }
}

impl RateLimiter {
    /// Events refused since start, by rule name.
    pub fn refusals(&self) -> Vec<(&'static str, u64)> {
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        windows
            .refused
            .iter()
            .map(|(name, n)| (*name, *n))
            .collect()
    }
}

fn describe(window: SignedDuration) -> String {
    match window.as_secs() {
        3600 => "hour".into(),
        60 => "minute".into(),
        secs => format!("{secs} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn eleventh_in_the_window_is_refused_until_the_oldest_expires() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let limiter = RateLimiter::new(clock.clone(), false);
        for _ in 0..10 {
            limiter.check(REGISTRATION, "1.2.3.4").unwrap();
            clock.advance(SignedDuration::from_mins(1));
        }
        let Err(Error::RateLimited {
            retry_after_secs, ..
        }) = limiter.check(REGISTRATION, "1.2.3.4")
        else {
            panic!("the 11th registration must be refused");
        };
        assert_eq!(retry_after_secs, 50 * 60);
        limiter.check(REGISTRATION, "5.6.7.8").unwrap();
        clock.advance(SignedDuration::from_mins(50));
        limiter.check(REGISTRATION, "1.2.3.4").unwrap();
    }

    #[test]
    fn a_sweep_drops_logs_whose_own_window_has_passed() {
        let clock = Arc::new(ManualClock::new(Timestamp::UNIX_EPOCH));
        let limiter = RateLimiter::new(clock.clone(), false);
        for i in 0..=SWEEP_ABOVE {
            limiter
                .check(INQUIRIES, &format!("10.0.{}.{}", i / 256, i % 256))
                .unwrap();
        }
        limiter.check(REGISTRATION, "kept").unwrap();
        clock.advance(SignedDuration::from_mins(61));
        limiter.check(NEW_MESSAGES, "agent").unwrap();
        // Every hour-long log has expired; only the new one is left.
        assert_eq!(limiter.windows.lock().unwrap().logs, 1);
    }

    #[test]
    fn a_sweep_that_finds_every_log_live_waits_before_the_next() {
        let clock = Arc::new(ManualClock::new(Timestamp::UNIX_EPOCH));
        let limiter = RateLimiter::new(clock.clone(), false);
        for i in 0..=SWEEP_ABOVE + 1 {
            limiter.check(ADMISSION, &format!("client {i}")).unwrap();
        }
        let swept = |limiter: &RateLimiter| limiter.windows.lock().unwrap().swept_at;
        let first = swept(&limiter);
        clock.advance(SignedDuration::from_secs(1));
        limiter.check(ADMISSION, "client 0").unwrap();
        assert_eq!(swept(&limiter), first, "no sweep a second later");
        clock.advance(SignedDuration::from_mins(1));
        limiter.check(ADMISSION, "client 0").unwrap();
        assert_ne!(swept(&limiter), first, "a minute later, the next one");
        assert_eq!(limiter.windows.lock().unwrap().logs, 1);
    }

    #[test]
    fn relaxed_limits_lift_per_client_rules_only() {
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::ManualClock::new(Timestamp::UNIX_EPOCH));
        let limiter = RateLimiter::new(clock, true);
        for _ in 0..50 {
            limiter.check(REGISTRATION, "1.2.3.4").unwrap();
        }
        for _ in 0..NEW_MESSAGES.max {
            limiter.check(NEW_MESSAGES, "agent").unwrap();
        }
        assert!(limiter.check(NEW_MESSAGES, "agent").is_err());
    }

    #[test]
    fn events_from_a_clock_since_moved_back_do_not_count() {
        let clock = Arc::new(crate::clock::ManualClock::new(Timestamp::UNIX_EPOCH));
        let limiter = RateLimiter::new(clock.clone(), false);
        clock.advance(SignedDuration::from_hours(24));
        for _ in 0..REGISTRATION.max {
            limiter.check(REGISTRATION, "1.2.3.4").unwrap();
        }
        assert!(limiter.check(REGISTRATION, "1.2.3.4").is_err());
        // Back to the start (a sandbox clock reset): those ten never happened here.
        let back = RateLimiter {
            clock: Arc::new(crate::clock::ManualClock::new(Timestamp::UNIX_EPOCH)),
            relaxed: false,
            windows: std::sync::Mutex::new(limiter.windows.lock().unwrap().clone()),
        };
        back.check(REGISTRATION, "1.2.3.4").unwrap();
    }
}
