//! Zero-aware tables stored by the blank's cell: one packed entry (half a byte, as `packed` says)
//! per placement and free cell, at `rank * free + j`, where `free` is the number of cells the
//! pattern leaves free and `j` the blank's place among them (its cell less the pattern tiles on
//! lower cells). A zero-aware value is the same wherever the blank is in its region, so this holds
//! the same values as the region layout of `zero_index`, repeated per cell.
//!
//! Why: on 4x4, 8 pattern tiles wall the blank off from the main region in most placements, and
//! the region layout then needs a flood and a second read at nearly every lookup (45% of the
//! kernel's time with the 7-8 tables). Here every lookup is one read at an index the kernel works
//! out with a popcount. The cost is size: 8 entries a placement for the 8-tile table (2.08 GB
//! packed, against 1.43 GB of region bytes). So the layout is used on boards of at most 16 cells
//! ([`suits`]), where every table stays within a few GB and patterns wall the blank off often;
//! not on 5x5, where 6 tiles leave 19 free cells (6.7x the region layout's bytes) and the blank
//! is rarely walled off (0.42 extra regions a placement).

use crate::board::Board;
use crate::pdb::index::{placements, Unranker};
use crate::pdb::packed::{packed_len, Distances, MAX_HALF_EXCESS};
use crate::pdb::zero_index::ZeroIndex;

/// Entries of a table of `k` tiles on `cells` cells in this layout.
pub fn entries(cells: usize, k: usize) -> u64 {
    placements(cells, k) * (cells - k) as u64
}

/// Whether a zero-aware table of `k` tiles on `cells` cells is stored this way.
pub fn suits(cells: usize, k: usize) -> bool {
    cells <= 16 && entries(cells, k) <= u64::from(u32::MAX)
}

/// The blank's place among the cells of `occupied`'s complement: its cell less the occupied
/// cells below it.
#[inline(always)]
pub fn blank_place(occupied: u32, blank: u32) -> u32 {
    blank - (occupied & ((1u32 << blank) - 1)).count_ones()
}

/// The index of the entry for placement `rank` with the blank at `place` among the free cells.
#[inline(always)]
pub fn index(rank: u32, free: u32, place: u32) -> u32 {
    rank.wrapping_mul(free).wrapping_add(place)
}

/// The zero-aware `values` (a byte per state, laid out as `zero` says) of `tiles` on `goal`'s
/// board in this layout, packed; `None` if some state is unreached or its excess over the
/// pattern's Manhattan distance does not fit four bits. Runs on `threads` threads.
pub fn pack(
    goal: &Board,
    tiles: &[u8],
    zero: &ZeroIndex,
    values: &[u8],
    threads: usize,
) -> Option<Vec<u8>> {
    let (cells, k) = (goal.cells(), tiles.len());
    let free = cells - k;
    let ranks = placements(cells, k) as usize;
    let mut packed = vec![0u8; packed_len(entries(cells, k)) as usize];
    // Chunks of an even number of placements, so that no byte is shared between threads.
    let per_thread = ranks.div_ceil(threads.max(1)).next_multiple_of(2).max(2);
    let context = Context {
        distances: Distances::new(goal, tiles),
        unranker: Unranker::new(cells, k),
        zero,
        values,
        free,
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = packed
            .chunks_mut(per_thread * free / 2)
            .enumerate()
            .map(|(chunk, packed)| {
                let context = &context;
                scope.spawn(move || context.pack_chunk(chunk * per_thread, packed))
            })
            .collect();
        workers
            .into_iter()
            .all(|worker| worker.join().unwrap_or(false))
    })
    .then_some(packed)
}

struct Context<'a> {
    distances: Distances,
    unranker: Unranker,
    zero: &'a ZeroIndex,
    values: &'a [u8],
    free: usize,
}

impl Context<'_> {
    /// Packs the placements from rank `first` on into `packed`.
    fn pack_chunk(&self, first: usize, packed: &mut [u8]) -> bool {
        let (mut cells, mut digits) = ([0u8; 32], [0u8; 32]);
        let k = self.distances.tiles();
        let all = (1u32 << (k + self.free)) - 1;
        for offset in 0..packed.len() * 2 / self.free {
            let rank = (first + offset) as u32;
            self.unranker.unrank(rank, &mut cells, &mut digits);
            let placed = &cells[..k];
            let distance = self.distances.of(placed.iter().copied());
            let main = self.values[rank as usize];
            let occupied = placed.iter().fold(0u32, |m, &c| m | 1 << c);
            let mut blanks = all & !occupied;
            let mut entry = offset * self.free;
            while blanks != 0 {
                let blank = blanks.trailing_zeros() as u8;
                blanks &= blanks - 1;
                let value = self
                    .zero
                    .resolve(self.values, main, placed.iter().copied(), blank);
                let Some(excess) = value.checked_sub(distance) else {
                    return false;
                };
                if excess % 2 != 0 || excess / 2 > MAX_HALF_EXCESS || value == u8::MAX {
                    return false;
                }
                packed[entry / 2] |= (excess / 2) << ((entry & 1) << 2);
                entry += 1;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::builder;
    use crate::pdb::packed::half_excess;

    /// Every state of a small zero-aware table reads back the region layout's value, with the
    /// blank on each of the placement's free cells.
    #[test]
    fn holds_the_region_values_at_every_blank_cell() {
        let goal = Board::blank_last(4);
        let tiles = [1u8, 2, 5];
        let zero = ZeroIndex::new(4, tiles.len());
        let values = builder::build(&goal, &tiles, true, 2, &|_| {}).unwrap();
        let packed = pack(&goal, &tiles, &zero, &values, 3).unwrap();
        let distances = Distances::new(&goal, &tiles);
        let unranker = Unranker::new(16, 3);
        let (mut cells, mut digits) = ([0u8; 32], [0u8; 32]);
        for rank in 0..placements(16, 3) as u32 {
            unranker.unrank(rank, &mut cells, &mut digits);
            let placed = &cells[..3];
            let occupied = placed.iter().fold(0u32, |m, &c| m | 1 << c);
            for blank in (0..16u32).filter(|&c| occupied & 1 << c == 0) {
                let at = index(rank, 13, blank_place(occupied, blank));
                let read = distances.of(placed.iter().copied()) + 2 * half_excess(&packed, at);
                let want = zero.value(&values, placed.iter().copied(), blank as u8);
                assert_eq!(read, want, "{placed:?}, blank on {blank}");
            }
        }
    }

    #[test]
    fn four_by_four_only() {
        assert!(suits(16, 8) && suits(16, 7));
        assert!(!suits(25, 6), "19 entries a placement on 5x5");
        assert_eq!(entries(16, 8), 4_151_347_200);
    }
}
