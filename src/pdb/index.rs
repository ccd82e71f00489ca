//! Dense indices of pattern placements: the cells of k distinct pattern tiles on an n-cell board,
//! ranked as a k-permutation of n in mixed radix n, n-1, ..., n-k+1. Each digit is the tile's
//! cell among the cells not taken by earlier tiles, found with one popcount, so ranking costs O(k)
//! and the kernel recomputes one pattern's rank when one of its tiles moves.

/// Number of placements of `k` tiles on `n` cells: n! / (n-k)!.
pub fn placements(n: usize, k: usize) -> u64 {
    (0..k).map(|i| (n - i) as u64).product()
}

/// The weight of digit `i` in the rank of a placement of `k` tiles on `n` cells: the product of
/// the later digits' radices, so a change of one in that digit changes the rank by this.
pub fn digit_weight(n: usize, k: usize, i: usize) -> u32 {
    placements(n - i - 1, k - i - 1) as u32
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

/// Turns indices back into placements of `k` tiles on `n` cells. Division by each radix is done
/// by multiplication with a precomputed reciprocal (Lemire, Kaser and Kurz 2019: exact for every
/// 32-bit numerator), because the builder unranks hundreds of millions of indices.
#[derive(Clone, Debug)]
pub struct Unranker {
    n: usize,
    k: usize,
    /// `ceil(2^64 / radix)` for the radix of each digit.
    reciprocal: [u64; 32],
}

impl Unranker {
    pub fn new(n: usize, k: usize) -> Unranker {
        let mut reciprocal = [0u64; 32];
        for (i, r) in reciprocal.iter_mut().enumerate().take(k) {
            *r = u64::MAX / (n - i) as u64 + 1;
        }
        Unranker { n, k, reciprocal }
    }

    /// The placement with `index`: writes the pattern tiles' cells into `cells[..k]` and their
    /// digits (each cell's position among the cells not taken by earlier tiles) into `digits`.
    #[inline(always)]
    pub fn unrank(&self, mut index: u32, cells: &mut [u8], digits: &mut [u8]) {
        let (cells, digits) = (&mut cells[..self.k], &mut digits[..self.k]);
        for i in (0..self.k).rev() {
            let radix = (self.n - i) as u64;
            let reciprocal = self.reciprocal[i];
            let quotient = ((u128::from(reciprocal) * u128::from(index)) >> 64) as u32;
            let fraction = reciprocal.wrapping_mul(u64::from(index));
            digits[i] = ((u128::from(fraction) * u128::from(radix)) >> 64) as u8;
            index = quotient;
        }
        cells.copy_from_slice(digits);
        select_free(cells);
    }

    /// The weight of digit `i` in an index: the product of the later digits' radices.
    pub fn weight(&self, i: usize) -> u32 {
        digit_weight(self.n, self.k, i)
    }
}

/// Turns digits (positions among the cells not yet taken) into cells, in place.
#[inline(always)]
fn select_free(cells: &mut [u8]) {
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
        for (n, k) in [(9, 8), (16, 3), (16, 5), (16, 8), (25, 4), (25, 6)] {
            let count = placements(n, k);
            let step = (count / 5000).max(1) as usize;
            let unranker = Unranker::new(n, k);
            let mut cells = vec![0u8; k];
            let mut digits = vec![0u8; k];
            for index in (0..count as u32).step_by(step) {
                unranker.unrank(index, &mut cells, &mut digits);
                let recomposed: u32 = digits
                    .iter()
                    .enumerate()
                    .map(|(i, &d)| u32::from(d) * unranker.weight(i))
                    .sum();
                assert_eq!(recomposed, index);
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
