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
