//! Walks of the browse index, and kept walks: the matches of one filter set in one sort's
//! order, as deep as browses have asked (positions in the index's entries), with their total.
//! A page of the same filters and sort at any offset up to that depth (an agent paging on,
//! another agent asking the same shape) is a slice of it rather than a walk of the order from
//! its start (a vertical's page at offset 4,950 walks about 400k elements) or a selection among
//! all of a word's matches (searches of more than a thousand; rarer ones are selected again).
//!
//! Valid for one stamp: the index's generation, like the kept totals, and for the popular order
//! the count of view flushes too (they move it within a generation). A walk asked deeper than kept
//! is walked anew to twice the kept depth (or the asked one, if deeper), so paging on costs
//! about twice the deepest walk once per generation. Bounded in bytes (4 per position; the
//! filter sets themselves are not counted); the least recently used half goes when full.

use std::cmp::Ordering;
use std::collections::HashMap;

use std::sync::atomic::Ordering as AtomicOrdering;

use rusqlite::Connection;

use super::{
    Admit, BrowseIndex, Entries, Entry, FEW_MATCHES_TO_KEEP, Filters, Matches, Query, Result, Sort,
    compare, keep,
};

/// Most bytes of kept positions: one walk as deep as the deepest offset allowed (100,000) is
/// 400 KB, the browse mix's deepest kinds a few dozen KB each.
const BYTES: usize = 8 << 20;

/// Room a walk or a selection reserves at first: a deep walk may find far fewer than it asked.
const RESERVE: usize = 4096;

/// Most positions one kept walk holds (1 MiB): a page deeper than that is walked to from the
/// start each time, collecting only the page.
pub(super) const MOST_POSITIONS: usize = BYTES / 8 / 4;

/// Most filter sets kept.
const MAX_FILTER_SETS: usize = 4096;

/// What must be unchanged for a kept walk to be used: the index's generation, and the view
/// flushes recorded (for the popular order; 0 for the others).
pub(super) type Stamp = (u64, u64);

struct Walk {
    stamp: Stamp,
    /// The first matches in the sort's order, as positions of the index's entries.
    positions: Vec<u32>,
    /// Whether `positions` holds every match (the walk ended before the depth it was asked).
    complete: bool,
    total: usize,
    /// When it was last used (a tick of [`Walks`]), for eviction.
    used: u64,
}

/// The kept walks, per filter set and sort.
#[derive(Default)]
pub(super) struct Walks {
    map: HashMap<Filters, [Option<Walk>; Sort::ALL.len()]>,
    bytes: usize,
    tick: u64,
}

fn slot(sort: Sort) -> usize {
    Sort::ALL.iter().position(|&s| s == sort).unwrap_or(0)
}

impl Walks {
    /// The positions of the page `offset..offset + limit` of `filters` under `sort`, and the
    /// total of matches, when a walk of this generation went that deep.
    pub fn page(
        &mut self,
        filters: &Filters,
        sort: Sort,
        stamp: Stamp,
        (offset, limit): (usize, usize),
    ) -> Option<(Vec<u32>, usize)> {
        self.tick += 1;
        let walk = self.map.get_mut(filters)?[slot(sort)].as_mut()?;
        let end = offset.saturating_add(limit);
        if walk.stamp != stamp || (walk.positions.len() < end && !walk.complete) {
            return None;
        }
        walk.used = self.tick;
        let positions = walk.positions.get(offset.min(walk.positions.len())..);
        let page = positions.unwrap_or_default().iter().take(limit).copied();
        Some((page.collect(), walk.total))
    }

    /// How deep a walk asked for `wanted` matches should go: twice the depth kept under this
    /// stamp, if more than `wanted` (a deeper page is likely asked next).
    pub fn depth(&self, filters: &Filters, sort: Sort, stamp: Stamp, wanted: usize) -> usize {
        let kept = self
            .map
            .get(filters)
            .and_then(|walks| walks[slot(sort)].as_ref())
            .filter(|walk| walk.stamp == stamp)
            .map_or(0, |walk| walk.positions.len());
        wanted.max(kept.saturating_mul(2).min(MOST_POSITIONS))
    }

    /// Keeps a walk: `positions` in the sort's order, all the matches if `complete`.
    pub fn keep(
        &mut self,
        (filters, sort): (&Filters, Sort),
        stamp: Stamp,
        mut positions: Vec<u32>,
        complete: bool,
        total: usize,
    ) {
        if positions.len() > MOST_POSITIONS {
            return;
        }
        // A walk kept meanwhile by another browse may be newer, or as new and deeper.
        let kept = self
            .map
            .get(filters)
            .and_then(|walks| walks[slot(sort)].as_ref());
        if kept.is_some_and(|kept| {
            kept.stamp > stamp
                || (kept.stamp == stamp
                    && (kept.complete || kept.positions.len() >= positions.len()))
        }) {
            return;
        }
        positions.shrink_to_fit();
        let size = positions.len() * 4;
        while self.bytes + size > BYTES || self.map.len() >= MAX_FILTER_SETS {
            self.evict();
        }
        self.tick += 1;
        let walk = Walk {
            stamp,
            positions,
            complete,
            total,
            used: self.tick,
        };
        let walks = match self.map.get_mut(filters) {
            Some(walks) => walks,
            None => self.map.entry(filters.clone()).or_default(),
        };
        let kept = &mut walks[slot(sort)];
        self.bytes -= kept.as_ref().map_or(0, |old| old.positions.len() * 4);
        self.bytes += size;
        *kept = Some(walk);
    }

    /// Lets the least recently used half of the walks go (by filter set).
    fn evict(&mut self) {
        let last_used = |walks: &[Option<Walk>; Sort::ALL.len()]| {
            walks
                .iter()
                .flatten()
                .map(|walk| walk.used)
                .max()
                .unwrap_or(0)
        };
        let mut uses: Vec<u64> = self.map.values().map(last_used).collect();
        uses.sort_unstable();
        let cutoff = uses
            .get(uses.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or(u64::MAX);
        self.map.retain(|_, walks| last_used(walks) > cutoff);
        self.bytes = self
            .map
            .values()
            .flat_map(|walks| walks.iter().flatten())
            .map(|walk| walk.positions.len() * 4)
            .sum();
    }
}

impl BrowseIndex {
    /// What a kept walk of `sort` is good for: the index's generation, and for the popular
    /// order the view flushes too (they move it within a generation). Both move only under the
    /// entries' write lock.
    pub(super) fn stamp(&self, sort: Sort) -> Stamp {
        let generation = self.generation.load(AtomicOrdering::SeqCst);
        match sort {
            Sort::Popular => (generation, self.flushes.load(AtomicOrdering::SeqCst)),
            _ => (generation, 0),
        }
    }

    /// The query's page and total from a walk to `depth` matches, and the walk, when it may be
    /// kept: from the first match, of the stamp read under the same lock as the entries it
    /// walked, made with the search matches of that generation, and worth its room.
    pub(super) fn walk(
        &self,
        conn: &Connection,
        query: &Query,
        generation: u64,
        depth: usize,
    ) -> Result<Walked> {
        let matches = match &query.filters.fts {
            Some(expression) => Some(self.fts_matches(conn, expression, generation)?),
            None => None,
        };
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        let stamp = self.stamp(query.sort);
        // Deeper than a walk can be kept: only the page is collected, after skipping to it.
        let skip = if depth > MOST_POSITIONS {
            query.offset
        } else {
            0
        };
        let (positions, total, from_start) = self.positions(
            &entries,
            matches.as_deref(),
            query,
            generation,
            (skip, depth),
        );
        let page = match from_start {
            true => positions.get(query.offset..).unwrap_or_default(),
            false => &positions[..],
        };
        let page = seqs_at(&entries, &page[..page.len().min(query.limit)]);
        // A search of a few hundred matches (a rare word) selects them again in less time than
        // keeping its walk would take from the others.
        let worth = query.filters.fts.is_none() || total > FEW_MATCHES_TO_KEEP;
        let kept = (from_start && worth && stamp.0 == generation).then(|| {
            let complete = positions.len() < depth || positions.len() == total;
            (stamp, positions, complete)
        });
        Ok(Walked { page, total, kept })
    }

    /// The positions of the matches `skip..depth` of the query's filters in its sort's order
    /// (fewer when there are fewer), the total of matches, and whether the positions run from
    /// the first match (no skip, and not left out for a page past the last match).
    fn positions(
        &self,
        entries: &Entries,
        matches: Option<&Matches>,
        query: &Query,
        generation: u64,
        (skip, depth): (usize, usize),
    ) -> (Vec<u32>, usize, bool) {
        let list = &entries.list;
        if let Some(Matches::Few(positions)) = matches {
            let matching = positions
                .iter()
                .filter_map(|&at| Some((at, list.get(at as usize)?)))
                .filter(|(_, e)| keep(e, &query.filters));
            // Counted while selecting (the walk kept, if it is, keeps the total).
            let (mut found, total) = select(matching, query.sort, depth);
            found.drain(..skip.min(found.len()));
            return (found, total, skip == 0);
        }
        let admit = Admit::new(&query.filters);
        let admits = |flags: u32, at: usize| {
            admit.admits(flags)
                && matches.is_none_or(|m| m.contains(at as i64))
                && (!admit.recheck || keep(&list[at], &query.filters))
        };
        // Without a search, the total is counted over the census of flags, exact at every write.
        let total = if matches.is_none() && !admit.recheck {
            entries
                .census
                .iter()
                .filter(|&(&flags, _)| admit.admits(flags))
                .map(|(_, &count)| count as usize)
                .sum()
        } else {
            let known_total = self
                .totals
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&query.filters)
                .filter(|(cached, _)| *cached == generation)
                .map(|(_, total)| *total);
            match known_total {
                Some(total) => total,
                None => {
                    let total = match matches {
                        // Only the matches are visited: a common word at 10M listings is a third of
                        // them, and each costs one look at its flags.
                        Some(Matches::Many(bits)) => bits
                            .iter()
                            .enumerate()
                            .map(|(i, &word)| {
                                let (mut word, mut n) = (word, 0);
                                while word != 0 {
                                    let at = i * 64 + word.trailing_zeros() as usize;
                                    word &= word - 1;
                                    n += usize::from(
                                        entries
                                            .flags
                                            .get(at)
                                            .is_some_and(|&flags| admits(flags, at)),
                                    );
                                }
                                n
                            })
                            .sum(),
                        _ => entries
                            .flags
                            .iter()
                            .enumerate()
                            .filter(|&(at, &flags)| admits(flags, at))
                            .count(),
                    };
                    self.remember_total(&query.filters, generation, total);
                    total
                }
            }
        };
        if query.offset >= total && total > 0 {
            return (Vec::new(), total, false); // a page past the last match: nothing to walk
        }
        let walked = walk_to(
            entries,
            query.sort,
            (skip, depth.min(total)),
            &admit,
            &admits,
        );
        (walked, total, skip == 0)
    }
}

/// A walk made for a browse: its page, the total, and the walk to keep (its stamp, positions
/// from the first match, and whether they are all of them), if it may be kept.
pub(super) struct Walked {
    pub page: Vec<i64>,
    pub total: usize,
    pub kept: Option<(Stamp, Vec<u32>, bool)>,
}

/// The `seq`s of the entries at `positions`.
pub(super) fn seqs_at(entries: &Entries, positions: &[u32]) -> Vec<i64> {
    let found = positions
        .iter()
        .filter_map(|&at| entries.list.get(at as usize));
    found.map(|entry| entry.seq).collect()
}

/// The positions of the entries the filters admit from the `skip`th to the `depth`th, in
/// `sort`'s order: the order walked in sequence until that many are found.
pub(super) fn walk_to(
    entries: &Entries,
    sort: Sort,
    (skip, depth): (usize, usize),
    admit: &Admit,
    admits: &impl Fn(u32, usize) -> bool,
) -> Vec<u32> {
    let mut positions = Vec::with_capacity(depth.saturating_sub(skip).min(RESERVE));
    let mut found = 0;
    if depth > skip {
        entries.walk(sort, admit.prefilter(), |flags, at| {
            if admits(flags, at) {
                if found >= skip {
                    positions.push(at as u32);
                }
                found += 1;
            }
            found < depth
        });
    }
    positions
}

/// The first `depth` of `matching` (unordered, with their positions) under `sort`, and their
/// total: after the first `depth` entries, one is kept only if it beats the worst kept one, so
/// selection costs about one comparison per entry.
pub(super) fn select<'a>(
    matching: impl Iterator<Item = (u32, &'a Entry)>,
    sort: Sort,
    depth: usize,
) -> (Vec<u32>, usize) {
    let order = |a: &(u32, &Entry), b: &(u32, &Entry)| compare(a.1, b.1, sort);
    let mut total = 0;
    let mut best: Vec<(u32, &Entry)> = Vec::with_capacity((2 * depth).min(RESERVE));
    let mut threshold: Option<(u32, &Entry)> = None;
    for entry in matching {
        total += 1;
        if threshold.is_some_and(|worst| order(&entry, &worst) != Ordering::Less) {
            continue;
        }
        best.push(entry);
        if best.len() == 2 * depth {
            best.select_nth_unstable_by(depth - 1, order);
            best.truncate(depth);
            threshold = best.iter().copied().max_by(order);
        }
    }
    best.sort_unstable_by(order);
    best.truncate(depth);
    (best.into_iter().map(|(at, _)| at).collect(), total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::catalog::Samples;

    fn filters(vertical: u16) -> Filters {
        Filters {
            vertical: Some(vertical),
            samples: Samples::Exclude,
            ..Filters::none()
        }
    }

    #[test]
    fn a_kept_walk_answers_pages_within_its_depth_under_its_stamp_only() {
        let mut walks = Walks::default();
        let f = filters(3);
        assert_eq!(walks.page(&f, Sort::Recent, (1, 0), (0, 50)), None);
        assert_eq!(walks.depth(&f, Sort::Recent, (1, 0), 100), 100);
        walks.keep((&f, Sort::Recent), (1, 0), (0..100).collect(), false, 5_000);
        assert_eq!(
            walks.page(&f, Sort::Recent, (1, 0), (50, 50)),
            Some(((50..100).collect(), 5_000))
        );
        assert_eq!(
            walks.page(&f, Sort::Recent, (1, 0), (60, 50)),
            None,
            "too deep"
        );
        assert_eq!(
            walks.page(&f, Sort::Recent, (2, 0), (0, 50)),
            None,
            "generation"
        );
        assert_eq!(
            walks.page(&f, Sort::Recent, (1, 1), (0, 50)),
            None,
            "view flushes"
        );
        assert_eq!(walks.page(&f, Sort::Popular, (1, 0), (0, 50)), None, "sort");
        assert_eq!(walks.page(&filters(4), Sort::Recent, (1, 0), (0, 50)), None);
        // Deeper asks double the kept depth.
        assert_eq!(walks.depth(&f, Sort::Recent, (1, 0), 150), 200);
        assert_eq!(walks.depth(&f, Sort::Recent, (1, 0), 500), 500);
        assert_eq!(walks.depth(&f, Sort::Recent, (2, 0), 150), 150);
        // A complete walk answers any offset, past its end with an empty page.
        walks.keep((&f, Sort::Trust), (1, 0), vec![7, 3, 5], true, 3);
        assert_eq!(
            walks.page(&f, Sort::Trust, (1, 0), (1, 50)),
            Some((vec![3, 5], 3))
        );
        assert_eq!(
            walks.page(&f, Sort::Trust, (1, 0), (90, 50)),
            Some((vec![], 3))
        );
        assert_eq!(walks.bytes, 4 * 103);
        // A walk of the same stamp, shallower or not deeper, does not replace one kept
        // meanwhile; a newer one does, and the old one's bytes are let go.
        walks.keep((&f, Sort::Recent), (1, 0), (0..60).collect(), false, 5_000);
        walks.keep((&f, Sort::Trust), (1, 0), vec![1], true, 1);
        assert_eq!(walks.bytes, 4 * 103);
        walks.keep((&f, Sort::Recent), (1, 0), (0..150).collect(), false, 5_000);
        assert_eq!(
            walks.bytes,
            4 * 153,
            "a deeper walk of the same stamp replaces it"
        );
        walks.keep((&f, Sort::Trust), (2, 0), vec![1], true, 1);
        assert_eq!(walks.bytes, 4 * 151);
        walks.keep((&f, Sort::Trust), (1, 0), vec![7, 3, 5], true, 3);
        assert_eq!(
            walks.bytes,
            4 * 151,
            "an older stamp never replaces a newer one"
        );
    }

    #[test]
    fn the_kept_walks_stay_within_their_bytes_and_keep_the_recently_used() {
        let mut walks = Walks::default();
        let deep: Vec<u32> = (0..(BYTES / 8 / 4) as u32).collect();
        for vertical in 0..40 {
            walks.keep(
                (&filters(vertical), Sort::Recent),
                (1, 0),
                deep.clone(),
                false,
                1,
            );
            // The first filter set is asked for again and again.
            assert!(
                walks
                    .page(&filters(0), Sort::Recent, (1, 0), (0, 1))
                    .is_some()
            );
            assert!(walks.bytes <= BYTES);
        }
        assert_eq!(
            walks.bytes,
            walks.map.len() * deep.len() * 4,
            "bytes counted right after evictions"
        );
        // Too deep to keep at all.
        let mut fresh = Walks::default();
        fresh.keep(
            (&filters(1), Sort::Recent),
            (1, 0),
            vec![0; BYTES / 8 / 4 + 1],
            false,
            1,
        );
        assert!(fresh.map.is_empty());
    }
}
