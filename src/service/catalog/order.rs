//! A kept sort order of the browse index as a sequence of chunks: one `u64` element per
//! listing, ascending as the caller compares them, held in chunks of at most [`MAX`] elements.
//!
//! Why: a plain sorted `Vec` makes every insert or move a memmove of up to the whole order
//! (8 MB per order at a million listings, four orders a listing create), so a write's cost grew
//! with the catalogue. Here an insert or a removal moves the elements of one chunk (at most
//! 32 KB) and a search is a binary search over the chunks' last elements, then within one
//! chunk, so both cost O(log n + [`MAX`]) whatever the catalogue holds. A walk is still a plain
//! pass over memory, chunk after chunk, forwards or backwards.

use std::fmt;

/// Most elements a chunk holds: one over, and it splits in two halves.
const MAX: usize = 4096;
/// Elements per chunk when built from a sorted sequence: room for a quarter more before a
/// chunk splits.
const FILL: usize = MAX * 3 / 4;

/// Where an element is (or would go): its chunk and its place in that chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cursor {
    chunk: usize,
    at: usize,
}

/// The order: never an empty chunk; every element of a chunk sorts before the next chunk's.
#[derive(Default)]
pub(super) struct Order {
    chunks: Vec<Vec<u64>>,
    len: usize,
}

impl Order {
    /// The order of `sorted` (already in order), chunked.
    pub fn from_sorted(sorted: impl IntoIterator<Item = u64>) -> Order {
        let mut order = Order::default();
        let mut chunk = Vec::with_capacity(FILL);
        for element in sorted {
            chunk.push(element);
            if chunk.len() == FILL {
                order.len += FILL;
                order
                    .chunks
                    .push(std::mem::replace(&mut chunk, Vec::with_capacity(FILL)));
            }
        }
        if !chunk.is_empty() {
            order.len += chunk.len();
            chunk.shrink_to_fit();
            order.chunks.push(chunk);
        }
        order
    }

    /// The elements in order, as one `Vec`.
    pub fn to_vec(&self) -> Vec<u64> {
        let mut all = Vec::with_capacity(self.len);
        for chunk in &self.chunks {
            all.extend_from_slice(chunk);
        }
        all
    }

    /// Visits the elements whose bits under `mask` are `want`, in order (or backwards), until
    /// `visit` answers `false`: a plain loop over each chunk in turn, the test inlined in it (a
    /// browse with a selective filter skips most elements, so the loop is the skipping).
    pub fn walk(&self, backwards: bool, mask: u64, want: u64, mut visit: impl FnMut(u64) -> bool) {
        let mut each = |element: u64| element & mask != want || visit(element);
        if backwards {
            for chunk in self.chunks.iter().rev() {
                if !chunk.iter().rev().all(|&element| each(element)) {
                    return;
                }
            }
        } else {
            for chunk in &self.chunks {
                if !chunk.iter().all(|&element| each(element)) {
                    return;
                }
            }
        }
    }

    /// Rewrites every element in place (`edit` may change what an element holds, never where it
    /// sorts).
    pub fn edit_all(&mut self, mut edit: impl FnMut(&mut u64)) {
        for chunk in &mut self.chunks {
            chunk.iter_mut().for_each(&mut edit);
        }
    }

    /// The place of the first element for which `before` is false (`before` holds for a
    /// leading run of the elements and for none after it), as `slice::partition_point`.
    pub fn partition_point(&self, before: impl Fn(u64) -> bool) -> Cursor {
        let chunk = self
            .chunks
            .partition_point(|chunk| chunk.last().is_some_and(|&last| before(last)));
        match self.chunks.get(chunk) {
            Some(elements) => Cursor {
                chunk,
                at: elements.partition_point(|&e| before(e)),
            },
            None => self.end(),
        }
    }

    /// The place after the last element.
    fn end(&self) -> Cursor {
        match self.chunks.last() {
            Some(last) => Cursor {
                chunk: self.chunks.len() - 1,
                at: last.len(),
            },
            None => Cursor { chunk: 0, at: 0 },
        }
    }

    /// The element at `cursor`, if it holds one.
    pub fn get(&self, cursor: Cursor) -> Option<u64> {
        self.chunks.get(cursor.chunk)?.get(cursor.at).copied()
    }

    /// Overwrites the element at `cursor` (which must hold one) with one that sorts the same.
    pub fn set(&mut self, cursor: Cursor, element: u64) {
        self.chunks[cursor.chunk][cursor.at] = element;
    }

    /// Inserts `element` at `cursor` (from [`Order::partition_point`] since the last change).
    pub fn insert(&mut self, cursor: Cursor, element: u64) {
        self.len += 1;
        let Some(chunk) = self.chunks.get_mut(cursor.chunk) else {
            self.chunks.push(vec![element]);
            return;
        };
        chunk.insert(cursor.at, element);
        if chunk.len() > MAX {
            let tail = chunk.split_off(chunk.len() / 2);
            self.chunks.insert(cursor.chunk + 1, tail);
        }
    }

    /// Removes the element at `cursor` (which must hold one). A chunk left empty goes; one left
    /// small is merged with its next one when both fit in a built chunk's size.
    pub fn remove(&mut self, cursor: Cursor) -> u64 {
        let element = self.chunks[cursor.chunk].remove(cursor.at);
        self.len -= 1;
        let left = self.chunks[cursor.chunk].len();
        if left == 0 {
            self.chunks.remove(cursor.chunk);
        } else if left < MAX / 4
            && let Some(next) = self.chunks.get(cursor.chunk + 1)
            && left + next.len() <= FILL
        {
            let next = self.chunks.remove(cursor.chunk + 1);
            self.chunks[cursor.chunk].extend_from_slice(&next);
        }
        element
    }
}

impl PartialEq for Order {
    /// Same elements in the same order, however chunked.
    fn eq(&self, other: &Order) -> bool {
        self.len == other.len
            && self
                .chunks
                .iter()
                .flatten()
                .eq(other.chunks.iter().flatten())
    }
}

impl fmt::Debug for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.chunks.iter().flatten())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator: the test's only source of randomness.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// The chunks' invariants: none empty, none over [`MAX`], `len` their sum.
    fn check(order: &Order) {
        assert!(order.chunks.iter().all(|c| !c.is_empty() && c.len() <= MAX));
        assert_eq!(order.len, order.chunks.iter().map(Vec::len).sum::<usize>());
    }

    /// Inserts, removals, moves and overwrites against a plain sorted `Vec` doing the same;
    /// both must hold the same elements after every step.
    fn against_a_vec(seed: u64, start: usize, steps: usize) {
        let mut rng = Rng(seed | 1);
        // Distinct values (a value's low bits are its identity, as positions are).
        let mut plain: Vec<u64> = (0..start as u64)
            .map(|i| (rng.next() % 1_000_000) << 32 | i)
            .collect();
        plain.sort_unstable();
        let mut order = Order::from_sorted(plain.iter().copied());
        let mut next_id = start as u64;
        for step in 0..steps {
            let kind = rng.below(10);
            if kind < 4 || plain.is_empty() {
                // A new element anywhere (often at either end, as new listings sort).
                let key = match rng.below(3) {
                    0 => 0,
                    1 => 999_999,
                    _ => rng.next() % 1_000_000,
                };
                let value = key << 32 | next_id;
                next_id += 1;
                let to = plain.partition_point(|&e| e < value);
                plain.insert(to, value);
                let cursor = order.partition_point(|e| e < value);
                order.insert(cursor, value);
            } else if kind < 8 {
                // A move: out, then back in under a new key.
                let from = rng.below(plain.len());
                let value = plain.remove(from);
                let cursor = order.partition_point(|e| e < value);
                assert_eq!(order.get(cursor), Some(value), "seed {seed} step {step}");
                assert_eq!(order.remove(cursor), value);
                if kind < 7 {
                    let moved = (rng.next() % 1_000_000) << 32 | (value & 0xffff_ffff);
                    let to = plain.partition_point(|&e| e < moved);
                    plain.insert(to, moved);
                    let cursor = order.partition_point(|e| e < moved);
                    order.insert(cursor, moved);
                }
            } else {
                // An overwrite in place (same place in the order).
                let at = rng.below(plain.len());
                let value = plain[at];
                let cursor = order.partition_point(|e| e < value);
                order.set(cursor, value);
            }
            if step % 97 == 0 {
                check(&order);
                assert_eq!(order.to_vec(), plain, "seed {seed} step {step}");
            }
        }
        check(&order);
        assert_eq!(order.to_vec(), plain, "seed {seed}");
        assert_eq!(order.len, plain.len(), "seed {seed}");
        let (mut forwards, mut backwards) = (Vec::new(), Vec::new());
        order.walk(false, 0, 0, |e| {
            forwards.push(e);
            true
        });
        order.walk(true, 0, 0, |e| {
            backwards.push(e);
            true
        });
        backwards.reverse();
        assert_eq!(forwards, plain, "seed {seed}");
        assert_eq!(backwards, plain, "seed {seed}");
        // A walk under a mask visits exactly the elements with those bits, and stops when told.
        let (mask, want) = (0b101 << 32, 0b100 << 32);
        let masked: Vec<u64> = plain.iter().copied().filter(|e| e & mask == want).collect();
        let mut visited = Vec::new();
        order.walk(false, mask, want, |e| {
            visited.push(e);
            true
        });
        assert_eq!(visited, masked, "seed {seed}");
        let mut last = Vec::new();
        order.walk(true, mask, want, |e| {
            last.push(e);
            last.len() < 3
        });
        let tail: Vec<u64> = masked.iter().rev().take(3).copied().collect();
        assert_eq!(last, tail, "seed {seed}");
    }

    #[test]
    fn random_changes_match_a_plain_sorted_vec_for_any_seed() {
        // Many fixed seeds, and one from the clock so every run tries a new one.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let seeds = (1..=24u64)
            .map(|s| s.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .chain([now]);
        for seed in seeds {
            let run = std::panic::catch_unwind(|| {
                // Small orders (chunks come and go), and ones past several chunks.
                against_a_vec(seed, (seed % 3) as usize * 5_000, 6_000);
            });
            if let Err(panic) = run {
                eprintln!("failed with seed {seed}");
                std::panic::resume_unwind(panic);
            }
        }
    }

    #[test]
    fn chunks_split_when_full_and_merge_when_small() {
        let mut order = Order::from_sorted((0..(2 * FILL as u64)).map(|i| 2 * i));
        assert_eq!(order.chunks.len(), 2);
        // Filling the first chunk past MAX (odd values between its even ones) splits it.
        for i in 0..=(MAX - FILL) as u64 {
            let value = 2 * i + 1;
            let cursor = order.partition_point(|e| e < value);
            order.insert(cursor, value);
        }
        assert_eq!(order.chunks.len(), 3);
        check(&order);
        // Emptying the front merges what is left of it into the next one.
        while order.chunks.len() == 3 {
            order.remove(Cursor { chunk: 0, at: 0 });
        }
        check(&order);
        while order.len > 0 {
            let cursor = order.partition_point(|_| false);
            order.remove(cursor);
        }
        assert!(order.chunks.is_empty());
        let cursor = order.partition_point(|_| true);
        order.insert(cursor, 7);
        assert_eq!(order.to_vec(), [7]);
    }

    #[test]
    fn an_empty_order_walks_nothing_and_takes_an_insert() {
        let mut order = Order::from_sorted([]);
        order.walk(false, 0, 0, |_| panic!("nothing to visit"));
        assert_eq!(order.get(order.partition_point(|_| true)), None);
        order.insert(order.partition_point(|e| e < 3), 3);
        order.insert(order.partition_point(|e| e < 1), 1);
        assert_eq!(order.to_vec(), [1, 3]);
    }
}
