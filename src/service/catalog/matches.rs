//! The listings a search expression matches, as the browse index keeps them between requests:
//! the matching `seq`s themselves when they are few (a rare word at a million listings is a few
//! dozen bytes), a bitset over `seq` when they are many (125 KB at a million listings, one bit
//! per listing whatever the count).

/// A search whose matches are fewer than one in this many listings keeps them as a list, and a
/// browse by it visits its matches only instead of walking the catalogue.
pub const FEW: usize = 32;

/// The matches of one search expression.
#[derive(Debug, PartialEq)]
pub enum Matches {
    /// Ascending `seq`s, no repeats.
    Few(Vec<i64>),
    /// Bit `seq % 64` of word `seq / 64` is set for a match.
    Many(Vec<u64>),
}

impl Matches {
    /// The matches `seqs` (in any order) among `listings` listings.
    pub fn new(mut seqs: Vec<i64>, listings: usize) -> Matches {
        seqs.retain(|&seq| seq >= 0);
        if seqs.is_empty() || seqs.len().saturating_mul(FEW) < listings {
            seqs.sort_unstable();
            seqs.dedup();
            seqs.shrink_to_fit();
            return Matches::Few(seqs);
        }
        let words = seqs.iter().max().map_or(0, |&max| max as usize / 64 + 1);
        let mut bits = vec![0u64; words];
        for seq in seqs {
            let seq = seq as usize;
            bits[seq / 64] |= 1 << (seq % 64);
        }
        Matches::Many(bits)
    }

    /// Whether listing `seq` matches.
    pub fn contains(&self, seq: i64) -> bool {
        match self {
            Matches::Few(seqs) => seqs.binary_search(&seq).is_ok(),
            Matches::Many(bits) => usize::try_from(seq).is_ok_and(|seq| {
                bits.get(seq / 64)
                    .is_some_and(|word| word & (1 << (seq % 64)) != 0)
            }),
        }
    }

    /// The bytes this set holds (what the index's budget for kept searches counts).
    pub fn bytes(&self) -> usize {
        match self {
            Matches::Few(seqs) => seqs.len() * size_of::<i64>(),
            Matches::Many(bits) => bits.len() * size_of::<u64>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_matches_are_kept_as_a_sorted_list_and_many_as_bits() {
        let few = Matches::new(vec![70, 3, 70, 9], 1_000);
        assert_eq!(few, Matches::Few(vec![3, 9, 70]));
        assert_eq!(few.bytes(), 24);
        let many = Matches::new((0..100).map(|n| n * 3).collect(), 1_000);
        assert!(matches!(many, Matches::Many(_)), "one in ten is not few");
        assert_eq!(many.bytes(), (297 / 64 + 1) * 8);
        for set in [&few, &many] {
            for seq in [-1, 0, 3, 9, 70, 297, 298, 100_000] {
                let expected = match set {
                    Matches::Few(_) => [3, 9, 70].contains(&seq),
                    Matches::Many(_) => (0..300).contains(&seq) && seq % 3 == 0,
                };
                assert_eq!(set.contains(seq), expected, "{seq} in {set:?}");
            }
        }
    }

    #[test]
    fn nothing_found_is_an_empty_list() {
        assert_eq!(Matches::new(Vec::new(), 0), Matches::Few(Vec::new()));
        assert!(!Matches::new(Vec::new(), 0).contains(0));
    }
}
