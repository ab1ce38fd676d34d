//! Sorting the browse index's packed keys at start: a stable LSD radix sort of `u64`s by their
//! upper 32 bits, a byte a pass, skipping any byte every key shares (four passes at most, over
//! memory read and written in sequence), and the compaction of a 64-bit key to the 32 bits that
//! differ between the keys, which keeps their order.
//!
//! Why: at 10M listings a comparison sort of 16-byte keys took most of a second per order;
//! a sort key rarely uses more than 32 distinct bits (a score is 32 bits; prices and counts
//! are small), so most orders sort as 8-byte elements in a few passes.

/// Below this many elements a comparison sort is as quick.
const SMALL: usize = 1 << 12;

/// Sorts `elements` by their upper 32 bits, stably (equal keys keep their order).
pub(super) fn sort_by_upper_half(elements: &mut Vec<u64>) {
    let n = elements.len();
    if n < SMALL {
        elements.sort_by_key(|e| e >> 32);
        return;
    }
    let mut counts = [[0usize; 256]; 4];
    for &e in elements.iter() {
        for (byte, count) in counts.iter_mut().enumerate() {
            count[usize::from((e >> (32 + 8 * byte)) as u8)] += 1;
        }
    }
    let mut spare = vec![0u64; n];
    for (byte, count) in counts.iter().enumerate() {
        if count.contains(&n) {
            // Every element has the same byte here: this pass would move nothing.
            continue;
        }
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (digit, &c) in count.iter().enumerate() {
            next[digit] = sum;
            sum += c;
        }
        let shift = 32 + 8 * byte;
        for &e in elements.iter() {
            let digit = usize::from((e >> shift) as u8);
            spare[next[digit]] = e;
            next[digit] += 1;
        }
        std::mem::swap(elements, &mut spare);
    }
}

/// How to compact keys whose bits differ only within `varying` (at most 32 of them): the runs
/// of those bits, highest first, as `(shift, width)`. `None` when more than 32 bits differ.
pub(super) fn compaction(varying: u64) -> Option<Vec<(u32, u32)>> {
    if varying.count_ones() > 32 {
        return None;
    }
    let mut runs = Vec::new();
    let mut bit = 64u32;
    while bit > 0 {
        bit -= 1;
        if varying >> bit & 1 == 1 {
            let top = bit;
            while bit > 0 && varying >> (bit - 1) & 1 == 1 {
                bit -= 1;
            }
            runs.push((bit, top - bit + 1));
        }
    }
    Some(runs)
}

/// `key` with only the bits of `runs` kept, side by side: two keys that differ only in those
/// bits compare as their compactions do.
pub(super) fn compact(key: u64, runs: &[(u32, u32)]) -> u32 {
    let mut compacted = 0u64;
    for &(shift, width) in runs {
        compacted = compacted << width | (key >> shift) & ((1u64 << width) - 1);
    }
    compacted as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn sorts_as_a_stable_sort_by_key_for_any_seed() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        for seed in (1..=8u64)
            .map(|s| s.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .chain([now])
        {
            let mut x = seed | 1;
            // Keys of every width (so some bytes are shared and skipped), many ties; the low
            // half numbers the elements, so stability shows.
            for bits in [1u32, 8, 13, 24, 32] {
                let n = SMALL * 3 + (xorshift(&mut x) % 1000) as usize;
                let mut elements: Vec<u64> = (0..n as u64)
                    .map(|i| (xorshift(&mut x) >> (64 - bits)) << 32 | i)
                    .collect();
                let mut expected = elements.clone();
                expected.sort_by_key(|e| e >> 32);
                sort_by_upper_half(&mut elements);
                assert!(elements == expected, "seed {seed}, {bits} bits");
            }
        }
    }

    #[test]
    fn compacted_keys_keep_their_order() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for mask in [
            0xffff_ffffu64,
            0xf0f0_0000_00ff_f00f,
            1 << 63 | 1,
            0xffff_0000_0000_ffff,
            0,
        ] {
            let base = xorshift(&mut x) & !mask;
            let runs = compaction(mask).expect("at most 32 bits");
            let mut keys: Vec<u64> = (0..500).map(|_| base | xorshift(&mut x) & mask).collect();
            keys.sort_unstable();
            let compacted: Vec<u32> = keys.iter().map(|&k| compact(k, &runs)).collect();
            assert!(compacted.windows(2).all(|w| w[0] <= w[1]), "mask {mask:x}");
            for pair in keys.windows(2) {
                assert_eq!(
                    pair[0] == pair[1],
                    compact(pair[0], &runs) == compact(pair[1], &runs)
                );
            }
        }
        assert_eq!(compaction(u64::MAX), None);
    }
}
