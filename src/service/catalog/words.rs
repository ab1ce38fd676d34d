//! A search's matches, word by word: each word's matches kept per generation of the index
//! (so the many pairs of a few common words cost one FTS5 search each word), brought up to date
//! after a catalogue write by asking FTS5 about the changed listings alone, and a word not kept
//! yet looked up off the reader threads, at most [`ASIDE`] at once ([`BrowseIndex::look_up_aside`]):
//! a common word at 10M listings costs FTS5 about half a second, and reader threads held by
//! such lookups would hold up every other read meanwhile.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::Connection;

use super::{BrowseIndex, CACHE_MAX, FTS_CACHE_BYTES, Kept};
use crate::error::Result;
use crate::service::catalog::matches::Matches;
use crate::store::Store;
use crate::store::listings as store;

/// Most word lookups at once off the reader threads: the pool's connections beyond the readers'
/// (`store::Store::open_with`), so a lookup never waits for a connection; two keep both cores
/// busy with lookups of new rare words, which one at a time would serialize.
pub const ASIDE: usize = 2;

impl BrowseIndex {
    /// The matches of a search expression: each of its words' (kept per word, so the many
    /// pairs of a few common words cost one search each word, not one each pair), joined.
    pub(super) fn fts_matches(
        &self,
        conn: &Connection,
        expression: &str,
        generation: u64,
    ) -> Result<Arc<Matches>> {
        let listings = self.listings();
        // `fts_query` made the expression: quoted words without blanks, one blank apart.
        let mut each = Vec::new();
        for word in expression.split(' ') {
            each.push(self.word_matches(conn, word, generation)?);
        }
        // Fewest first: a list filtered by the others stays small.
        each.sort_by_key(|matches| !matches!(**matches, Matches::Few(_)));
        let mut words = each.into_iter();
        let first = words
            .next()
            .unwrap_or_else(|| Arc::new(Matches::Few(Vec::new())));
        Ok(words.fold(first, |joined, next| Arc::new(joined.and(&next, listings))))
    }

    /// The positions of the entries one quoted word matches, from the kept ones while the
    /// catalogue is unchanged (positions never change: entries are only appended).
    fn word_matches(&self, conn: &Connection, word: &str, generation: u64) -> Result<Arc<Matches>> {
        let kept = || {
            self.fts_cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(word)
                .filter(|kept| kept.generation == generation)
                .map(|kept| kept.matches.clone())
        };
        if let Some(matches) = kept() {
            return Ok(matches);
        }
        let turn = self
            .resolving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(word.to_owned())
            .or_default()
            .clone();
        let _turn = turn.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(matches) = kept() {
            return Ok(matches);
        }
        let looked_up = match self.patch(conn, word, generation) {
            Some(patched) => patched,
            None => self.look_up(conn, word, generation),
        };
        self.resolving
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(word);
        looked_up
    }

    /// A word's kept matches from an earlier generation, brought up to `generation` by asking
    /// FTS5 which of the listings changed since match the word; `None` when none is kept or the
    /// log no longer covers the changes since (then the word is looked up anew).
    fn patch(
        &self,
        conn: &Connection,
        word: &str,
        generation: u64,
    ) -> Option<Result<Arc<Matches>>> {
        let (since, matches) = {
            let cache = self.fts_cache.lock().unwrap_or_else(|p| p.into_inner());
            let kept = cache.get(word)?;
            (kept.generation, kept.matches.clone())
        };
        let changed = self
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .since(since, generation)?;
        let patched = (|| {
            let seqs: Vec<i64> = {
                let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
                changed.iter().map(|&at| entries.list[at].seq).collect()
            };
            let found = store::fts_rowids_among(conn, word, &seqs)?;
            let now: Vec<(usize, bool)> = changed
                .iter()
                .zip(&seqs)
                .map(|(&at, seq)| (at, found.contains(seq)))
                .collect();
            let patched = Arc::new(matches.patched(&now));
            self.keep_matches(word, generation, patched.clone());
            Ok(patched)
        })();
        Some(patched)
    }

    fn look_up(&self, conn: &Connection, word: &str, generation: u64) -> Result<Arc<Matches>> {
        let rowids = store::fts_rowids(conn, word)?;
        let (positions, listings) = {
            let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
            let positions: Vec<i64> = rowids
                .into_iter()
                .filter_map(|seq| Some(entries.at(seq)? as i64))
                .collect();
            (positions, entries.list.len())
        };
        let matches = Arc::new(Matches::new(positions, listings, listings as i64 - 1));
        self.keep_matches(word, generation, matches.clone());
        Ok(matches)
    }

    /// Keeps a word's matches as of `generation`, within the cache's bounds.
    fn keep_matches(&self, word: &str, generation: u64, matches: Arc<Matches>) {
        let listings = self.listings();
        // Room for at least 64 common words, however large the catalogue (a bitset is one bit
        // per listing).
        let budget = FTS_CACHE_BYTES.max(64 * listings.div_ceil(8));
        let mut cache = self.fts_cache.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = |cache: &HashMap<String, Kept>| -> usize {
            cache.values().map(|k| k.matches.bytes()).sum::<usize>() + matches.bytes()
        };
        if cache.len() >= CACHE_MAX || bytes(&cache) > budget {
            cache.retain(|_, k| k.generation == generation);
            if cache.len() >= CACHE_MAX || bytes(&cache) > budget {
                cache.clear();
            }
        }
        cache.insert(
            word.to_owned(),
            Kept {
                generation,
                matches,
            },
        );
    }

    /// The words of `expression` with no matches kept (of any generation: kept ones are brought
    /// up to date cheaply where they are asked).
    fn unkept(&self, expression: &str) -> Vec<String> {
        let cache = self.fts_cache.lock().unwrap_or_else(|p| p.into_inner());
        expression
            .split(' ')
            .filter(|word| !cache.contains_key(*word))
            .map(str::to_owned)
            .collect()
    }

    /// Looks up the words of `expression` not kept yet, on a connection of `store`'s pool in a
    /// blocking task rather than on a reader thread, at most [`ASIDE`] such lookups at once: the
    /// browse that then runs on a reader finds them kept.
    ///
    /// # Errors
    /// Database failure.
    pub async fn look_up_aside(self: &Arc<Self>, store: &Store, expression: &str) -> Result<()> {
        if self.unkept(expression).is_empty() {
            return Ok(());
        }
        let _turn = self.lookups.acquire().await;
        // Another browse may have looked them up while this one waited.
        let words = self.unkept(expression);
        if words.is_empty() {
            return Ok(());
        }
        let (index, store) = (self.clone(), store.clone());
        tokio::task::spawn_blocking(move || {
            store.read_blocking(|conn| {
                for word in &words {
                    index.word_matches(conn, word, index.generation())?;
                }
                Ok(())
            })
        })
        .await
        .map_err(|e| crate::error::Error::Internal(format!("a word lookup stopped: {e}")))?
    }
}
