//! The listings a search expression matches, as the browse index keeps them between requests:
//! the matching `seq`s themselves when they are few (4 bytes each: a rare word at a million
//! listings is a few hundred bytes), a bitset over `seq` when they are many (one bit per listing
//! whatever the count, 125 KB at a million). At the switch, one match in [`FEW`] listings, the
//! two are the same size.

/// A search whose matches are fewer than one in this many listings keeps them as a list, and a
/// browse by it visits its matches only instead of walking the catalogue.
pub const FEW: usize = 32;

/// The matches of one search expression.
#[derive(Debug, PartialEq)]
pub enum Matches {
    /// Ascending `seq`s, no repeats.
    Few(Vec<u32>),
    /// Bit `seq % 64` of word `seq / 64` is set for a match.
    Many(Vec<u64>),
}

impl Matches {
    /// The matches `seqs` (in any order) among `listings` listings whose highest `seq` is
    /// `last`. A `seq` outside `0..=last` names no listing of the index and is left out (so the
    /// bitset is sized by the index, never by a stray rowid); the index holds far fewer than
    /// 2³² listings, so every `seq` it has fits 32 bits.
    pub fn new(seqs: Vec<i64>, listings: usize, last: i64) -> Matches {
        let mut seqs: Vec<u32> = seqs
            .into_iter()
            .filter(|&seq| seq <= last)
            .filter_map(|seq| u32::try_from(seq).ok())
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        if seqs.is_empty() || seqs.len().saturating_mul(FEW) < listings {
            seqs.shrink_to_fit();
            return Matches::Few(seqs);
        }
        let words = seqs.last().map_or(0, |&max| max as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for seq in seqs {
            let seq = seq as usize;
            bits[seq / 64] |= 1 << (seq % 64);
        }
        Matches::Many(bits)
    }

    /// Whether listing `seq` matches.
    /// The matches of both `self` and `other` (a search of several words matches each): a
    /// list filtered by the other's membership, or two bitsets joined word by word, kept as a
    /// list when the result is few among `listings`.
    pub fn and(&self, other: &Matches, listings: usize) -> Matches {
        match (self, other) {
            (Matches::Few(seqs), set) | (set, Matches::Few(seqs)) => Matches::Few(
                seqs.iter()
                    .copied()
                    .filter(|&seq| set.contains(i64::from(seq)))
                    .collect(),
            ),
            (Matches::Many(a), Matches::Many(b)) => {
                let bits: Vec<u64> = a.iter().zip(b).map(|(x, y)| x & y).collect();
                let count: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
                if count.saturating_mul(FEW) >= listings {
                    return Matches::Many(bits);
                }
                let mut seqs = Vec::with_capacity(count);
                for (i, &word) in bits.iter().enumerate() {
                    let mut word = word;
                    while word != 0 {
                        seqs.push((i * 64) as u32 + word.trailing_zeros());
                        word &= word - 1;
                    }
                }
                Matches::Few(seqs)
            }
        }
    }

    /// These matches with the members `changes` names (ascending, each with whether it matches
    /// now) put right: a listing edited or added since they were made.
    pub fn patched(&self, changes: &[(usize, bool)]) -> Matches {
        match self {
            Matches::Few(members) => {
                let changed = |m: &u32| {
                    changes
                        .binary_search_by_key(&(*m as usize), |&(at, _)| at)
                        .is_ok()
                };
                let mut members: Vec<u32> =
                    members.iter().copied().filter(|m| !changed(m)).collect();
                members.extend(
                    changes
                        .iter()
                        .filter(|&&(_, now)| now)
                        .filter_map(|&(at, _)| u32::try_from(at).ok()),
                );
                members.sort_unstable();
                members.dedup();
                Matches::Few(members)
            }
            Matches::Many(bits) => {
                let mut bits = bits.clone();
                for &(at, now) in changes {
                    if at / 64 >= bits.len() {
                        if !now {
                            continue;
                        }
                        bits.resize(at / 64 + 1, 0);
                    }
                    if now {
                        bits[at / 64] |= 1 << (at % 64);
                    } else {
                        bits[at / 64] &= !(1 << (at % 64));
                    }
                }
                Matches::Many(bits)
            }
        }
    }

    pub fn contains(&self, seq: i64) -> bool {
        let Ok(seq) = u32::try_from(seq) else {
            return false;
        };
        match self {
            Matches::Few(seqs) => seqs.binary_search(&seq).is_ok(),
            Matches::Many(bits) => {
                let seq = seq as usize;
                bits.get(seq / 64)
                    .is_some_and(|word| word & (1 << (seq % 64)) != 0)
            }
        }
    }

    /// The bytes this set holds (what the index's budget for kept searches counts).
    pub fn bytes(&self) -> usize {
        match self {
            Matches::Few(seqs) => seqs.len() * size_of::<u32>(),
            Matches::Many(bits) => bits.len() * size_of::<u64>(),
        }
    }
}

/// Most (generation, position) changes remembered for patching kept word matches.
pub const CHANGES_MAX: usize = 4096;

/// Most changed listings a patch asks FTS5 about; past that, the word is looked up anew.
pub const PATCH_MAX: usize = 512;

/// The listings recent generations changed, oldest first.
#[derive(Default)]
pub struct Changes {
    log: std::collections::VecDeque<(u64, usize)>,
    /// Every change made at a generation above this one is in `log`.
    complete_after: u64,
}

impl Changes {
    pub fn record(&mut self, generation: u64, positions: &[usize]) {
        self.log
            .extend(positions.iter().map(|&at| (generation, at)));
        while self.log.len() > CHANGES_MAX {
            if let Some((dropped, _)) = self.log.pop_front() {
                self.complete_after = self.complete_after.max(dropped);
            }
        }
    }

    /// Everything before `generation` is unknown (the index was replaced).
    pub fn forget(&mut self, generation: u64) {
        self.log.clear();
        self.complete_after = generation;
    }

    /// The positions changed after generation `since` up to `until`, ascending, when the log
    /// holds all of them and they are few enough to ask about.
    pub fn since(&self, since: u64, until: u64) -> Option<Vec<usize>> {
        if since < self.complete_after {
            return None;
        }
        let mut positions: Vec<usize> = self
            .log
            .iter()
            .filter(|(generation, _)| (since + 1..=until).contains(generation))
            .map(|&(_, at)| at)
            .collect();
        positions.sort_unstable();
        positions.dedup();
        (positions.len() <= PATCH_MAX).then_some(positions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_matches_are_kept_as_a_sorted_list_and_many_as_bits() {
        let few = Matches::new(vec![70, 3, 70, 9], 1_000, 1_000);
        assert_eq!(few, Matches::Few(vec![3, 9, 70]));
        assert_eq!(few.bytes(), 12);
        let many = Matches::new((0..100).map(|n| n * 3).collect(), 1_000, 1_000);
        assert!(matches!(many, Matches::Many(_)), "one in ten is not few");
        assert_eq!(many.bytes(), (297 / 64 + 1) * 8);
        for set in [&few, &many] {
            for seq in [-1, 0, 3, 9, 70, 297, 298, 100_000, i64::MAX] {
                let expected = match set {
                    Matches::Few(_) => [3, 9, 70].contains(&seq),
                    Matches::Many(_) => (0..300).contains(&seq) && seq % 3 == 0,
                };
                assert_eq!(set.contains(seq), expected, "{seq} in {set:?}");
            }
        }
    }

    #[test]
    fn both_words_match_what_each_matches() {
        let threes = Matches::new((0..1000).map(|n| n * 3).collect(), 3000, 3000);
        let fives = Matches::new((0..600).map(|n| n * 5).collect(), 3000, 3000);
        let few = Matches::new(vec![5, 9, 15, 2999], 3000, 3000);
        let expect =
            |pick: &dyn Fn(i64) -> bool| -> Vec<i64> { (0..3001).filter(|&s| pick(s)).collect() };
        let members = |m: &Matches| -> Vec<i64> { (0..3001).filter(|&s| m.contains(s)).collect() };
        let both = threes.and(&fives, 3000);
        assert!(
            matches!(both, Matches::Many(_)),
            "one in fifteen of 3000 is many"
        );
        assert_eq!(members(&both), expect(&|s| s % 15 == 0 && s < 2998));
        let rare = threes.and(&fives, 100_000);
        assert!(matches!(rare, Matches::Few(_)), "200 of 100,000 are few");
        assert_eq!(members(&rare), members(&both));
        for combined in [few.and(&threes, 3000), threes.and(&few, 3000)] {
            assert_eq!(combined, Matches::Few(vec![9, 15]));
        }
    }

    #[test]
    fn patched_matches_are_what_matching_anew_finds() {
        let members: Vec<i64> = (0..300).map(|n| n * 7).collect();
        let changes = [
            (0, false),
            (3, true),
            (7, false),
            (8, true),
            (5000, true),
            (6000, false),
        ];
        let mut expected: Vec<i64> = members
            .iter()
            .copied()
            .filter(|&m| m != 0 && m != 7)
            .collect();
        expected.extend([3, 8, 5000]);
        expected.sort_unstable();
        for listings in [10_000, 100] {
            let kept = Matches::new(members.clone(), listings, 10_000);
            let patched = kept.patched(&changes);
            let found: Vec<i64> = (0..7000).filter(|&s| patched.contains(s)).collect();
            assert_eq!(found, expected, "{kept:?}");
        }
    }

    #[test]
    fn rowids_the_index_cannot_hold_are_left_out() {
        let set = Matches::new(vec![-5, 7, 1 << 40, 2_000], 1_000, 1_000);
        assert_eq!(set, Matches::Few(vec![7]));
        let dense = Matches::new((0..600).chain([1 << 40]).collect(), 1_000, 1_000);
        assert_eq!(
            dense.bytes(),
            (599 / 64 + 1) * 8,
            "sized by the index, not the stray"
        );
    }

    #[test]
    fn nothing_found_is_an_empty_list() {
        assert_eq!(Matches::new(Vec::new(), 0, 0), Matches::Few(Vec::new()));
        assert!(!Matches::new(Vec::new(), 0, 0).contains(0));
    }
}
