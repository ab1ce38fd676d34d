//! Signed answers kept for reuse: a public answer whose content has not changed carries a
//! signature made earlier (its `signedAt` says when), so a hot listing, or a browse page many
//! agents ask for, is signed once per change rather than once per request.
//!
//! An entry is good while nothing that could change its content has happened since it was made:
//! its stamp (the browse index's generation, bumped by every committed catalogue write, ratings
//! and sales included; the known-agents generation, bumped by every change of an agent row) is
//! still current, and it is younger than the counter flush interval, so the view counts it shows
//! lag no more than they would anyway. A change of the provenance block clears every entry.
//! Bounded in entries and in bytes (a browse page is tens of KB); the oldest half goes when
//! either is full.

use jiff::{SignedDuration, Timestamp};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::counters::FLUSH_INTERVAL;
use crate::service::App;

/// Most answers kept.
const MAX_ENTRIES: usize = 4096;

/// Most bytes of answers kept (a listing detail is a few KB, a browse page of 50 tens of KB);
/// an answer over an eighth of it (1 MiB) is not kept.
const MAX_BYTES: usize = 8 << 20;

/// What must be unchanged for an entry to be reused.
pub type Stamp = [u64; 3];

/// The stamp of catalogue answers (listing detail, browse pages): the catalogue's generation and
/// the known agents' (the sellers they show). The view counts they show are bounded by age.
pub fn catalogue_stamp(app: &App) -> Stamp {
    [app.browse.generation(), app.known_agents.generation(), 0]
}

/// The stamp of the other public reads (statistics, fees, the demand ledger…): every commit,
/// every catalogue change and every counted view or query (the statistics show unflushed ones).
pub fn database_stamp(app: &App) -> Stamp {
    [
        app.store.commits(),
        app.browse.generation(),
        app.counters.version(),
    ]
}

/// A signed answer's bytes, shared without copying.
pub type Body = Arc<[u8]>;

struct Entry {
    body: Body,
    /// The listing's `seq`, so a reused answer still counts its view.
    seq: i64,
    stamp: Stamp,
    /// By the server's clock (injected: tests control it).
    made: Timestamp,
}

impl Entry {
    /// Younger than the counter flush interval (and not from a sandbox clock since set back).
    fn young(&self, now: Timestamp) -> bool {
        let max_age = SignedDuration::try_from(FLUSH_INTERVAL).unwrap_or(SignedDuration::ZERO);
        self.made <= now && now.duration_since(self.made) < max_age
    }
}

/// Signed answers by key (a listing id, a browse query).
#[derive(Default)]
pub struct SignedAnswers {
    entries: Mutex<Entries>,
    /// Lookups that found a good answer, and those that did not (for the metrics).
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<String, Entry>,
    bytes: usize,
}

impl SignedAnswers {
    /// The kept answer for `key` and its listing's `seq`, if still good under `stamp`.
    pub fn get(&self, key: &str, stamp: Stamp, now: Timestamp) -> Option<(Body, i64)> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let found = entries
            .map
            .get(key)
            .filter(|entry| entry.stamp == stamp && entry.young(now))
            .map(|entry| (entry.body.clone(), entry.seq));
        let tally = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        tally.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Lookups so far: (hits, misses).
    pub fn lookups(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Lets go of the answers too old to be reused (the counter flusher calls it each pass), so
    /// what a burst of distinct pages left behind does not stay resident once the burst ends.
    pub fn forget_expired(&self, now: Timestamp) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Entries { map, bytes } = &mut *entries;
        map.retain(|_, entry| entry.young(now));
        *bytes = map.values().map(|entry| entry.body.len()).sum();
        if map.is_empty() {
            // An emptied map still holds the table it grew to.
            *map = HashMap::new();
        }
    }

    /// Keeps an answer made under `stamp`.
    pub fn put(&self, key: &str, stamp: Stamp, seq: i64, body: Body, now: Timestamp) {
        if body.len() > MAX_BYTES / 8 {
            return; // too large to be worth a place
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let Entries { map, bytes } = &mut *entries;
        if map.len() >= MAX_ENTRIES || *bytes + body.len() > MAX_BYTES {
            let mut ages: Vec<Timestamp> = map.values().map(|entry| entry.made).collect();
            ages.sort_unstable();
            let cutoff = ages[ages.len() / 2];
            map.retain(|_, entry| entry.made > cutoff && entry.stamp == stamp);
            *bytes = map.values().map(|entry| entry.body.len()).sum();
        }
        *bytes += body.len();
        if let Some(replaced) = map.insert(
            key.to_owned(),
            Entry {
                body,
                seq,
                stamp,
                made: now,
            },
        ) {
            *bytes -= replaced.body.len();
        }
    }

    /// Forgets every answer (the signing identity or provenance changed).
    pub fn clear(&self) {
        *self.entries.lock().unwrap_or_else(|p| p.into_inner()) = Entries::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_reused_only_under_the_same_stamp_and_the_store_stays_bounded() {
        let answers = SignedAnswers::default();
        let now: Timestamp = "2026-11-24T00:00:00Z".parse().unwrap();
        let later = |secs| now.checked_add(SignedDuration::from_secs(secs)).unwrap();
        answers.put("a", [1, 1, 0], 7, Body::from(&b"{}"[..]), now);
        assert_eq!(
            answers.get("a", [1, 1, 0], later(1)).map(|(_, seq)| seq),
            Some(7)
        );
        assert!(
            answers.get("a", [1, 1, 0], later(2)).is_none(),
            "older than a flush"
        );
        assert!(answers.get("a", [2, 1, 0], now).is_none());
        assert!(answers.get("b", [1, 1, 0], now).is_none());
        for i in 0..MAX_ENTRIES + 10 {
            answers.put(&i.to_string(), [1, 1, 0], 0, Body::from(&b""[..]), now);
        }
        assert!(answers.entries.lock().unwrap().map.len() <= MAX_ENTRIES);
        // Large answers are bounded by bytes too.
        let page = Body::from(vec![b' '; 64 << 10]);
        for i in 0..2 * MAX_BYTES / page.len() {
            answers.put(&format!("page {i}"), [1, 1, 0], -1, page.clone(), now);
        }
        let entries = answers.entries.lock().unwrap();
        assert!(entries.bytes <= MAX_BYTES);
        assert_eq!(
            entries.bytes,
            entries.map.values().map(|e| e.body.len()).sum::<usize>()
        );
        drop(entries);
        // Young answers stay; answers older than a flush go.
        let kept = answers.entries.lock().unwrap().map.len();
        answers.forget_expired(later(1));
        assert_eq!(answers.entries.lock().unwrap().map.len(), kept);
        answers.forget_expired(later(2));
        assert_eq!(answers.entries.lock().unwrap().bytes, 0);
        answers.put("a", [1, 1, 0], 7, Body::from(&b"{}"[..]), now);
        answers.clear();
        assert!(answers.get("a", [1, 1, 0], now).is_none());
    }
}
