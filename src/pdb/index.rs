//! Dense indices of pattern placements: the cells of k distinct pattern tiles on an n-cell board,
//! ranked as a k-permutation of n in mixed radix n, n-1, ..., n-k+1. Each digit is the tile's
//! cell among the cells not taken by earlier tiles, found with one popcount, so ranking costs O(k)
//! and the kernel recomputes one pattern's rank when one of its tiles moves.

/// Number of placements of `k` tiles on `n` cells: n! / (n-k)!.
pub fn placements(n: usize, k: usize) -> u64 {
    (0..k).map(|i| (n - i) as u64).product()
}

/// The rank of a placement given as the pattern tiles' cells, in pattern order.
#[inline(always)]
pub fn rank(n: usize, cells: impl Iterator<Item = u8>) -> u32 {
    let mut taken = 0u32;
    let mut index = 0u32;
    for (i, cell) in cells.enumerate() {
        let below = taken & ((1u32 << cell) - 1);
        let digit = u32::from(cell) - below.count_ones();
        index = index * (n - i) as u32 + digit;
        taken |= 1 << cell;
    }
    index
}

/// The placement with `index`: writes the pattern tiles' cells into `cells` (one per tile).
pub fn unrank(n: usize, mut index: u32, cells: &mut [u8]) {
    let k = cells.len();
    for i in (0..k).rev() {
        let radix = (n - i) as u32;
        cells[i] = (index % radix) as u8;
        index /= radix;
    }
    let mut taken = 0u32;
    for cell in cells.iter_mut() {
        // The digit-th cell not yet taken.
        let mut free = !taken;
        for _ in 0..*cell {
            free &= free - 1;
        }
        *cell = free.trailing_zeros() as u8;
        taken |= 1 << *cell;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_and_unrank_are_inverse_and_dense() {
        for (n, k) in [(9, 8), (16, 3), (16, 5), (25, 4)] {
            let count = placements(n, k);
            let step = (count / 5000).max(1) as usize;
            let mut cells = vec![0u8; k];
            for index in (0..count as u32).step_by(step) {
                unrank(n, index, &mut cells);
                assert!(cells.iter().all(|&c| (c as usize) < n));
                let mut sorted = cells.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), k, "distinct cells");
                assert_eq!(rank(n, cells.iter().copied()), index);
            }
        }
        assert_eq!(placements(16, 8), 518_918_400);
        assert_eq!(placements(25, 6), 127_512_000);
    }
}
