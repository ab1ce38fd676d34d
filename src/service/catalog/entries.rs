//! The browse index's entries (one compact [`Entry`] per listing, ascending by `seq`) and its
//! kept orders: for each sort but `recent`, the positions of the entries in that sort's order.
//!
//! The orders are built with the entries (at start, or when a follower reloads) and kept in
//! step with every change, so no browse ever waits for one. Building sorts packed keys
//! (16 bytes per entry, contiguous) rather than comparing entries in place, which is 3–4×
//! faster at a million listings: the comparisons read memory in order instead of two random
//! 48-byte entries each. A change of a few entries moves each by binary search; a change of
//! many (a seller's reputation across their listings, a flush of view counts, a follower's
//! catch-up) takes them out of each order in one pass, sorts them, and merges them back in
//! one pass.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use crate::service::catalog::order::{Cursor, Order};
use crate::service::catalog::radix;

/// Sort order (read at the edge as a closed choice).
pub use crate::request::catalog::Sort;

/// 48 bytes: the pass over all entries is bound by memory bandwidth, so counters are `u32`
/// (saturating) and scores `f32` (they are rounded to two decimals anyway).
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub seq: i64,
    pub price_cents: i64,
    pub rating_sum: u32,
    pub rating_count: u32,
    pub purchase_count: u32,
    pub view_count: u32,
    pub quality: f32,
    pub reputation: f32,
    pub category: u16,
    pub vertical: u16,
    pub listing_type: u8,
    pub active: bool,
    pub sample: bool,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 48);

/// The sorts kept as orders; `PriceDesc` walks the price order backwards (its comparison is the
/// exact reverse), `Recent` is the entries themselves, newest last.
const ORDERED: [Sort; 4] = [Sort::PriceAsc, Sort::Quality, Sort::Trust, Sort::Popular];
const POPULAR: usize = 3;
/// Every kept order: what an edit of an entry may move.
const ALL: [usize; 4] = [0, 1, 2, POPULAR];

/// A change of up to this many entries moves each by binary search (two moves of memory per
/// order each); more are taken out and merged back in one pass per order.
const FEW: usize = 8;

/// The kept order a sort walks, and whether backwards.
pub(super) fn slot(sort: Sort) -> Option<(usize, bool)> {
    match sort {
        Sort::Recent => None,
        Sort::PriceAsc => Some((0, false)),
        Sort::PriceDesc => Some((0, true)),
        Sort::Quality => Some((1, false)),
        Sort::Trust => Some((2, false)),
        Sort::Popular => Some((POPULAR, false)),
    }
}

/// How two entries compare under a sort (never `Equal` for two listings: `seq` breaks ties).
pub(super) fn compare(a: &Entry, b: &Entry, sort: Sort) -> Ordering {
    let float = |x: f32, y: f32| y.partial_cmp(&x).unwrap_or(Ordering::Equal);
    match sort {
        Sort::Recent => b.seq.cmp(&a.seq),
        Sort::Popular => b
            .purchase_count
            .cmp(&a.purchase_count)
            .then(b.view_count.cmp(&a.view_count))
            .then(b.seq.cmp(&a.seq)),
        Sort::PriceAsc => a.price_cents.cmp(&b.price_cents).then(a.seq.cmp(&b.seq)),
        Sort::PriceDesc => b.price_cents.cmp(&a.price_cents).then(b.seq.cmp(&a.seq)),
        Sort::Quality => float(a.quality, b.quality).then(b.seq.cmp(&a.seq)),
        Sort::Trust => float(a.reputation, b.reputation).then(b.seq.cmp(&a.seq)),
    }
}

/// The entries and their kept orders.
#[derive(Default)]
pub(super) struct Entries {
    /// Ascending by `seq` (listings are only ever appended), so a listing is found by binary
    /// search: no map beside it (a million entries would need 36 MB more).
    pub list: Vec<Entry>,
    /// Each entry's [`flags`], beside `list` (a pass over every entry reads 4 bytes each, not
    /// 48).
    pub flags: Vec<u32>,
    /// How many entries carry each distinct [`flags`] value: a browse without a search counts
    /// its total over these (a few thousand values) instead of over every entry, and the counts
    /// are kept in step with every change, so no write makes a total stale.
    pub census: HashMap<u32, u32>,
    /// Per sort of [`ORDERED`]: each entry's [`flags`] and position in `list` (`flags << 32 |
    /// position`), ascending by [`compare`] (8 bytes per listing per order): a walk reads the
    /// order in sequence and tests the filters without reading the entries it skips. Chunked
    /// ([`Order`]), so an insert or a move costs the same at any catalogue size.
    orders: [Order; 4],
}

/// What the filters of a browse test, packed in 32 bits (see [`flags`]).
pub(super) mod flag {
    pub const ACTIVE: u32 = 1;
    pub const SAMPLE: u32 = 1 << 1;
    pub const PAID: u32 = 1 << 2;
    pub const FREE: u32 = 1 << 3;
    /// Two bits: the listing type's position.
    pub const TYPE_SHIFT: u32 = 4;
    /// Six bits: the average rating in whole tenths, rounded down (at most 62), or [`UNRATED`].
    pub const RATING_SHIFT: u32 = 6;
    pub const UNRATED: u32 = 63;
    /// Eight bits: the vertical's position, [`MANY_VERTICALS`] for that one and any later.
    pub const VERTICAL_SHIFT: u32 = 12;
    pub const MANY_VERTICALS: u16 = 255;
    /// Five bits: the category's position, [`MANY_CATEGORIES`] for that one and any later.
    pub const CATEGORY_SHIFT: u32 = 20;
    pub const MANY_CATEGORIES: u16 = 31;
}

/// An entry's filter flags: active, sample, paid, free, type, rating, vertical and category, as
/// [`flag`] lays them out. A vertical or category past what its bits hold shares the last code,
/// so a browse by one of those checks the entry too.
pub(super) fn flags(e: &Entry) -> u32 {
    let rating = if e.rating_count == 0 {
        flag::UNRATED
    } else {
        let tenths = u64::from(e.rating_sum) * 10 / u64::from(e.rating_count);
        u32::try_from(tenths.min(62)).unwrap_or(62)
    };
    let mut bits = u32::from(e.listing_type & 3) << flag::TYPE_SHIFT
        | rating << flag::RATING_SHIFT
        | u32::from(e.vertical.min(flag::MANY_VERTICALS)) << flag::VERTICAL_SHIFT
        | u32::from(e.category.min(flag::MANY_CATEGORIES)) << flag::CATEGORY_SHIFT;
    for (set, bit) in [
        (e.active, flag::ACTIVE),
        (e.sample, flag::SAMPLE),
        (e.price_cents > 0, flag::PAID),
        (e.price_cents == 0, flag::FREE),
    ] {
        if set {
            bits |= bit;
        }
    }
    bits
}

fn packed(flags: u32, at: usize) -> u64 {
    u64::from(flags) << 32 | at as u64
}

/// The position in `list` an order element holds.
pub(super) fn position(element: u64) -> usize {
    element as u32 as usize
}

impl Entries {
    /// The entries of `list` (ascending by `seq`) with every order built.
    pub fn new(list: Vec<Entry>) -> Entries {
        debug_assert!(list.windows(2).all(|pair| pair[0].seq < pair[1].seq));
        let flags: Vec<u32> = list.iter().map(flags).collect();
        // The orders are independent: a second thread builds two of them (unless the catalogue
        // is small, or no thread can be started: then this one builds all four).
        let orders = std::thread::scope(|scope| {
            let (list, flags) = (&list, &flags);
            let half = (list.len() >= 50_000)
                .then(|| {
                    std::thread::Builder::new()
                        .name("bourse-orders".into())
                        .spawn_scoped(scope, move || {
                            [2, 3].map(|n| sorted(list, flags, ORDERED[n]))
                        })
                        .ok()
                })
                .flatten();
            let [first, second] = [0, 1].map(|n| sorted(list, flags, ORDERED[n]));
            let [third, fourth] = match half {
                Some(half) => half
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => [2, 3].map(|n| sorted(list, flags, ORDERED[n])),
            };
            [first, second, third, fourth]
        });
        let mut census = HashMap::new();
        for &f in &flags {
            *census.entry(f).or_default() += 1;
        }
        Entries {
            list,
            flags,
            census,
            orders,
        }
    }

    /// The position of listing `seq` in `list`.
    pub fn at(&self, seq: i64) -> Option<usize> {
        find(&self.list, seq).ok()
    }

    /// Visits the flags and position of every entry whose flags under `mask` are `want`, in
    /// `sort`'s order (`recent`: newest first), until `visit` answers `false`: a plain loop over
    /// one array, in sequence, that tests the flags itself.
    pub fn walk(
        &self,
        sort: Sort,
        (mask, want): (u32, u32),
        mut visit: impl FnMut(u32, usize) -> bool,
    ) {
        match slot(sort) {
            None => {
                for (at, &flags) in self.flags.iter().enumerate().rev() {
                    if flags & mask == want && !visit(flags, at) {
                        return;
                    }
                }
            }
            Some((slot, backwards)) => {
                let (mask, want) = (u64::from(mask) << 32, u64::from(want) << 32);
                self.orders[slot].walk(backwards, mask, want, |e| {
                    visit((e >> 32) as u32, position(e))
                });
            }
        }
    }

    /// Replaces the entries with the same `seq`, appends the new ones (rows arrive in `seq`
    /// order: loaded ascending, then appended after each insert), and moves them in every order.
    pub fn upsert(&mut self, changed: &[Entry]) {
        self.apply(changed, &ALL);
    }

    /// Adds flushed view counts (`(seq, views)`), which move entries in the popular order only.
    pub fn add_views(&mut self, views: &[(i64, i64)]) {
        let mut summed: BTreeMap<i64, i64> = BTreeMap::new();
        for &(seq, n) in views {
            let sum = summed.entry(seq).or_default();
            *sum = sum.saturating_add(n);
        }
        let changed: Vec<Entry> = summed
            .into_iter()
            .filter_map(|(seq, n)| {
                let mut entry = self.list[self.at(seq)?];
                entry.view_count = entry.view_count.saturating_add(saturate(n));
                Some(entry)
            })
            .collect();
        self.apply(&changed, &[POPULAR]);
    }

    /// Writes `changed` into `list` and moves them in the orders of `slots` (the orders whose
    /// keys the change may touch).
    fn apply(&mut self, changed: &[Entry], slots: &[usize]) {
        let Entries {
            list,
            flags: all_flags,
            census,
            orders,
        } = self;
        let mut recount = |was: Option<u32>, now: u32| {
            if was == Some(now) {
                return;
            }
            if let Some(was) = was
                && let Some(count) = census.get_mut(&was)
            {
                *count -= 1;
                if *count == 0 {
                    census.remove(&was);
                }
            }
            *census.entry(now).or_default() += 1;
        };
        if changed.len() <= FEW {
            for entry in changed {
                let now = flags(entry);
                match find(list, entry.seq) {
                    Ok(at) => {
                        let old = list[at];
                        list[at] = *entry;
                        let was = std::mem::replace(&mut all_flags[at], now);
                        recount(Some(was), now);
                        for slot in 0..orders.len() {
                            if slots.contains(&slot) {
                                shift(&mut orders[slot], list, at, &old, now, ORDERED[slot]);
                            } else if was != now {
                                // Not moved in this order, but its flags are kept there too.
                                restamp(&mut orders[slot], list, at, now, ORDERED[slot]);
                            }
                        }
                    }
                    Err(_) => {
                        let at = append(list, *entry);
                        all_flags.push(now);
                        recount(None, now);
                        for (slot, order) in orders.iter_mut().enumerate() {
                            let to = order.partition_point(|i| {
                                compare(&list[position(i)], entry, ORDERED[slot]) == Ordering::Less
                            });
                            order.insert(to, packed(now, at));
                        }
                    }
                }
            }
            return;
        }
        let mut restamped = false;
        let mut moved: Vec<u32> = changed
            .iter()
            .map(|entry| match find(list, entry.seq) {
                Ok(at) => {
                    list[at] = *entry;
                    let now = flags(entry);
                    let was = std::mem::replace(&mut all_flags[at], now);
                    recount(Some(was), now);
                    restamped |= was != now;
                    at as u32
                }
                Err(_) => {
                    all_flags.push(flags(entry));
                    recount(None, flags(entry));
                    append(list, *entry) as u32
                }
            })
            .collect();
        moved.sort_unstable();
        moved.dedup();
        let mut out = vec![0u64; list.len().div_ceil(64)];
        for &at in &moved {
            out[at as usize / 64] |= 1 << (at % 64);
        }
        let is_moved = |i: usize| out[i / 64] & (1 << (i % 64)) != 0;
        for (slot, order) in orders.iter_mut().enumerate() {
            let sort = ORDERED[slot];
            if !slots.contains(&slot) {
                if !restamped {
                    continue;
                }
                // Not moved in this order: their flags are restamped in place.
                order.edit_all(|element| {
                    let at = position(*element);
                    if is_moved(at) {
                        *element = packed(all_flags[at], at);
                    }
                });
                continue;
            }
            // Taken out and merged back in one pass over the whole order, then chunked again.
            let mut flat = order.to_vec();
            flat.retain(|&i| !is_moved(position(i)));
            let mut back: Vec<u64> = moved
                .iter()
                .map(|&at| packed(all_flags[at as usize], at as usize))
                .collect();
            back.sort_unstable_by(|&a, &b| compare(&list[position(a)], &list[position(b)], sort));
            merge(&mut flat, &back, |a, b| {
                compare(&list[position(a)], &list[position(b)], sort) == Ordering::Greater
            });
            *order = Order::from_sorted(flat);
        }
    }
}

/// Moves position `at` (whose entry in `list` was `old` and is now the new one, with flags
/// `now`) to where the new entry belongs in `order`: out of its chunk and into the one where it
/// belongs (an edit that keeps this sort's key, a new title say, moves nothing).
fn shift(order: &mut Order, list: &[Entry], at: usize, old: &Entry, now: u32, sort: Sort) {
    let Some(from) = place(order, list, at, old, sort) else {
        return;
    };
    let new = &list[at];
    if compare(new, old, sort) == Ordering::Equal {
        order.set(from, packed(now, at));
        return;
    }
    order.remove(from);
    let to = order.partition_point(|i| compare(&list[position(i)], new, sort) == Ordering::Less);
    order.insert(to, packed(now, at));
}

/// Writes new flags for position `at`, whose entry did not move in `order`.
fn restamp(order: &mut Order, list: &[Entry], at: usize, now: u32, sort: Sort) {
    if let Some(from) = place(order, list, at, &list[at], sort) {
        order.set(from, packed(now, at));
    }
}

/// Where position `at` is in `order`, its entry comparing as `key` there.
fn place(order: &Order, list: &[Entry], at: usize, key: &Entry, sort: Sort) -> Option<Cursor> {
    let found = order.partition_point(|i| {
        let e = if position(i) == at {
            key
        } else {
            &list[position(i)]
        };
        compare(e, key, sort) == Ordering::Less
    });
    let held = order.get(found).is_some_and(|i| position(i) == at);
    debug_assert!(held, "position {at} is missing from the {sort:?} order");
    held.then_some(found)
}

/// Where listing `seq` is in `list`, or would go. Listings are appended and never removed, so
/// `seq`s run without gaps and the first guess (`seq` less the first one's) is nearly always
/// right: one read of memory instead of the twenty a binary search over a million entries
/// makes, each a likely cache miss. Anything else falls back to the binary search.
fn find(list: &[Entry], seq: i64) -> Result<usize, usize> {
    let guess = list
        .first()
        .and_then(|first| usize::try_from(seq.checked_sub(first.seq)?).ok());
    if let Some(at) = guess
        && list.get(at).is_some_and(|entry| entry.seq == seq)
    {
        return Ok(at);
    }
    list.binary_search_by_key(&seq, |e| e.seq)
}

/// A count as an entry keeps it: negative as 0, past `u32::MAX` as `u32::MAX`.
pub(super) fn saturate(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

fn append(list: &mut Vec<Entry>, entry: Entry) -> usize {
    debug_assert!(list.last().is_none_or(|last| last.seq < entry.seq));
    list.push(entry);
    list.len() - 1
}

/// Merges ascending `back` into ascending `order` in place, from the end (`after(a, b)`: `a`
/// sorts after `b`); only the part after the first merged position moves.
fn merge(order: &mut Vec<u64>, back: &[u64], after: impl Fn(u64, u64) -> bool) {
    let (mut i, mut j) = (order.len(), back.len());
    order.resize(i + j, 0);
    let mut to = order.len();
    while j > 0 {
        to -= 1;
        if i > 0 && after(order[i - 1], back[j - 1]) {
            order[to] = order[i - 1];
            i -= 1;
        } else {
            order[to] = back[j - 1];
            j -= 1;
        }
    }
}

/// The positions of `list` in `sort`'s order, with their flags. Each entry's sort key is made a
/// `u64` whose plain order is [`compare`]'s but for the `seq` tie-break. When the keys differ
/// in at most 32 bits (nearly always), those bits and the position make one `u64`, radix-sorted
/// stably from positions in the tie-break's order (see `radix`); otherwise the key, position
/// and flags make one `u128`, sorted. The entries are read in sequence, once.
fn sorted(list: &[Entry], flags: &[u32], sort: Sort) -> Order {
    // Descending keys are complemented; so is a descending `seq` tie-break's position.
    let descending_seq = !matches!(sort, Sort::PriceAsc);
    let key = |e: &Entry| -> u64 {
        match sort {
            Sort::PriceAsc => (e.price_cents as u64) ^ (1 << 63),
            Sort::Quality => !u64::from(ordered_bits(e.quality)),
            Sort::Trust => !u64::from(ordered_bits(e.reputation)),
            Sort::Popular => !((u64::from(e.purchase_count) << 32) | u64::from(e.view_count)),
            Sort::Recent | Sort::PriceDesc => unreachable!("not a kept order"),
        }
    };
    let (any, all) = list.iter().fold((0u64, u64::MAX), |(any, all), e| {
        (any | key(e), all & key(e))
    });
    if let Some(runs) = radix::compaction(any & !all) {
        let element =
            |at: usize| u64::from(radix::compact(key(&list[at]), &runs)) << 32 | at as u64;
        // A stable sort keeps the positions' order among equal keys.
        let mut elements: Vec<u64> = if descending_seq {
            (0..list.len()).rev().map(element).collect()
        } else {
            (0..list.len()).map(element).collect()
        };
        radix::sort_by_upper_half(&mut elements);
        return Order::from_sorted(elements.into_iter().map(|element| {
            let at = position(element);
            packed(flags[at], at)
        }));
    }
    let mut keys: Vec<u128> = list
        .iter()
        .zip(flags)
        .enumerate()
        .map(|(at, (e, &f))| {
            let at = at as u32;
            let at = if descending_seq { !at } else { at };
            (u128::from(key(e)) << 64) | (u128::from(at) << 32) | u128::from(f)
        })
        .collect();
    keys.sort_unstable();
    Order::from_sorted(keys.into_iter().map(|key| {
        let at = (key >> 32) as u32;
        let at = if descending_seq { !at } else { at } as usize;
        packed(key as u32, at)
    }))
}

/// A score as bits that order as the scores do (`-0.0` as `0.0`; scores are never NaN).
fn ordered_bits(x: f32) -> u32 {
    let bits = if x == 0.0 { 0 } else { x.to_bits() };
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | (1 << 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: i64, price_cents: i64, score: f32, purchases: u32, views: u32) -> Entry {
        Entry {
            seq,
            price_cents,
            rating_sum: 0,
            rating_count: 0,
            purchase_count: purchases,
            view_count: views,
            quality: score,
            reputation: -score,
            category: 0,
            vertical: 0,
            listing_type: 0,
            active: true,
            sample: false,
        }
    }

    /// `n` listings with prices and scores cycling through `prices` and `scores` values, and
    /// the index built from them.
    fn catalogue(n: i64, prices: i64, scores: i64) -> (Vec<Entry>, Entries) {
        let list: Vec<Entry> = (1..=n)
            .map(|seq| {
                entry(
                    seq,
                    seq % prices,
                    (seq % scores) as f32,
                    (seq % 3) as u32,
                    0,
                )
            })
            .collect();
        let entries = Entries::new(list.clone());
        (list, entries)
    }

    #[test]
    fn built_orders_are_exactly_the_comparison_sorts() {
        // Ties on every key, negative prices and scores, and both zeros.
        let scores = [0.0, -0.0, 1.5, -2.25, 4.99, 1e-30, -1e-30, 3.0];
        let list: Vec<Entry> = (0..5_000i64)
            .map(|i| {
                let n = (i * 7919) % 101;
                entry(
                    2 * i + 1,
                    (n - 50) * 100,
                    scores[(n % 8) as usize],
                    (n % 5) as u32,
                    (n % 13) as u32,
                )
            })
            .collect();
        let entries = Entries::new(list.clone());
        for sort in ORDERED {
            let mut expected: Vec<u64> = (0..list.len())
                .map(|at| packed(flags(&list[at]), at))
                .collect();
            expected.sort_by(|&a, &b| compare(&list[position(a)], &list[position(b)], sort));
            let flags: Vec<u32> = list.iter().map(flags).collect();
            assert_eq!(sorted(&list, &flags, sort).to_vec(), expected, "{sort:?}");
            let (slot, _) = slot(sort).unwrap();
            assert_eq!(entries.orders[slot].to_vec(), expected, "{sort:?}");
        }
    }

    #[test]
    fn one_edit_at_a_time_lands_where_a_fresh_build_puts_it() {
        let (mut list, mut entries) = catalogue(300, 17, 7);
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for round in 0..400 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let seq = 1 + (x % 300) as i64;
            let mut edited = list[(seq - 1) as usize];
            // Up, down, or no key moved at all (a field no sort reads).
            match round % 4 {
                0 => edited.price_cents = (x % 23) as i64 - 5,
                1 => edited.quality = (x % 9) as f32 - 4.0,
                2 => edited.purchase_count = (x % 4) as u32,
                // Flags only: no order moves, each restamps it.
                _ => {
                    edited.rating_sum += 4;
                    edited.rating_count += 1;
                    edited.active = x.is_multiple_of(2);
                }
            }
            edited.reputation = -edited.quality;
            entries.upsert(&[edited]);
            list[(seq - 1) as usize] = edited;
            if round % 50 == 0 {
                let views = [(seq, 2), (1 + (x % 7) as i64, 1)];
                entries.add_views(&views);
                for (seq, n) in views {
                    list[(seq - 1) as usize].view_count += n as u32;
                }
            }
        }
        let fresh = Entries::new(list);
        assert_eq!(entries.orders, fresh.orders);
        assert_eq!(entries.flags, fresh.flags);
        assert_eq!(entries.census, fresh.census);
    }

    #[test]
    fn single_edits_and_creates_across_many_chunks_land_where_a_fresh_build_puts_them() {
        // Past several chunks of each order: moves cross chunks, and creates split them.
        let (mut list, mut entries) = catalogue(20_000, 97, 13);
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for round in 0..3_000i64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if round % 3 == 0 {
                let seq = list.len() as i64 + 1;
                let created = entry(seq, (x % 97) as i64, (x % 13) as f32, 0, 0);
                entries.upsert(&[created]);
                list.push(created);
                continue;
            }
            let at = (x % list.len() as u64) as usize;
            let mut edited = list[at];
            edited.purchase_count += 1 + (x % 3) as u32;
            edited.price_cents = (x % 1_000) as i64;
            edited.quality = (x % 17) as f32 - 8.0;
            edited.reputation = -edited.quality;
            entries.upsert(&[edited]);
            list[at] = edited;
        }
        let fresh = Entries::new(list);
        assert_eq!(entries.orders, fresh.orders);
        assert_eq!(entries.flags, fresh.flags);
        assert_eq!(entries.census, fresh.census);
    }

    #[test]
    fn many_moved_at_once_land_where_a_fresh_build_puts_them() {
        let (mut list, mut entries) = catalogue(2_000, 37, 11);
        // Edits of existing entries, a repeat, and appended new ones, in one batch.
        let mut changed: Vec<Entry> = (0..40i64)
            .map(|i| entry(1 + (i * 53) % 2_000, 99 - i, -(i as f32), 7, i as u32))
            .collect();
        changed.push(entry(1, 5, 5.0, 1, 1));
        // Flags moved too: a listing deactivated, one made free.
        changed.push(Entry {
            active: false,
            ..entry(3, 0, 1.0, 0, 0)
        });
        changed.extend((2_001..=2_010).map(|seq| entry(seq, seq % 5, 2.0, 0, 9)));
        entries.upsert(&changed);
        for e in &changed {
            match list.binary_search_by_key(&e.seq, |x| x.seq) {
                Ok(at) => list[at] = *e,
                Err(_) => list.push(*e),
            }
        }
        // Views of many listings, one of them twice.
        let views: Vec<(i64, i64)> = (0..30).map(|i| (1 + i * 61, 3)).chain([(62, 4)]).collect();
        entries.add_views(&views);
        for &(seq, n) in &views {
            list[(seq - 1) as usize].view_count += n as u32;
        }
        let fresh = Entries::new(list);
        assert_eq!(entries.list.len(), fresh.list.len());
        assert_eq!(entries.orders, fresh.orders);
        assert_eq!(entries.flags, fresh.flags);
        assert_eq!(entries.census, fresh.census);
    }
}
