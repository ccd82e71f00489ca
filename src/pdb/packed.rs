//! Packed entries: half a byte per placement instead of a byte.
//!
//! A table entry counts the pattern tiles' moves, and each tile moves at least its Manhattan
//! distance, in steps that keep the parity of that distance: so an entry is the pattern's
//! Manhattan distance plus an even excess. A packed table stores that excess halved, in four
//! bits, and the reader adds the distance back, which it knows from the cells it ranked (the
//! kernel keeps it as it moves). Half the bytes means half the memory a worker holds, half the
//! disk and download, half the checksum at start and twice the placements per cache line.
//!
//! A table whose excess does not fit (or that has unreachable placements, or is zero-aware) is
//! kept at a byte per entry; [`pack`] says which.

use crate::board::{Board, Shape};
use crate::pdb::index::Unranker;

/// The largest halved excess four bits hold.
pub(crate) const MAX_HALF_EXCESS: u8 = 15;

/// Cell -> Manhattan distance from the cell to each pattern tile's home, by the tile's place in
/// the pattern.
#[derive(Clone, Debug)]
pub struct Distances {
    to_home: [[u8; 32]; 8],
    len: usize,
}

impl Distances {
    pub fn new(goal: &Board, tiles: &[u8]) -> Distances {
        let home = goal.positions();
        let mut to_home = [[0u8; 32]; 8];
        for (distances, &tile) in to_home.iter_mut().zip(tiles) {
            *distances = cell_distances(goal.shape(), usize::from(home[usize::from(tile)]));
        }
        Distances {
            to_home,
            len: tiles.len().min(8),
        }
    }

    /// The number of pattern tiles.
    pub fn tiles(&self) -> usize {
        self.len
    }

    /// The pattern's Manhattan distance with its tiles on `cells`, in pattern order.
    #[inline(always)]
    pub fn of(&self, cells: impl Iterator<Item = u8>) -> u8 {
        cells
            .zip(&self.to_home[..self.len])
            .map(|(cell, distances)| distances[usize::from(cell) & 31])
            .sum()
    }
}

/// Cell -> its Manhattan distance to `home` on a board of `shape`.
pub fn cell_distances(shape: Shape, home: usize) -> [u8; 32] {
    let cols = shape.cols();
    let mut distances = [0u8; 32];
    for (cell, distance) in distances.iter_mut().enumerate().take(shape.cells()) {
        *distance =
            ((cell / cols).abs_diff(home / cols) + (cell % cols).abs_diff(home % cols)) as u8;
    }
    distances
}

/// Bytes a packed table of `entries` placements takes.
pub fn packed_len(entries: u64) -> u64 {
    entries.div_ceil(2)
}

/// The halved excess of placement `index` in a packed table.
#[inline(always)]
pub fn half_excess(packed: &[u8], index: u32) -> u8 {
    (packed[(index >> 1) as usize] >> ((index & 1) << 2)) & 15
}

/// `values` (one byte per placement of `tiles` on `goal`'s board) packed, or `None` if some
/// placement is unreachable or lies further above its Manhattan distance than four bits hold.
/// Runs on `threads` threads: it unranks every placement (half a billion for the 8-tile table).
pub fn pack(goal: &Board, tiles: &[u8], values: &[u8], threads: usize) -> Option<Vec<u8>> {
    let distances = Distances::new(goal, tiles);
    let unranker = Unranker::new(goal.cells(), tiles.len());
    let mut packed = vec![0u8; packed_len(values.len() as u64) as usize];
    // Chunks of an even number of placements, so that no byte is shared between threads.
    let per_thread = values
        .len()
        .div_ceil(threads.max(1))
        .next_multiple_of(2)
        .max(2);
    let fits = std::thread::scope(|scope| {
        let workers: Vec<_> = values
            .chunks(per_thread)
            .zip(packed.chunks_mut(per_thread / 2))
            .enumerate()
            .map(|(chunk, (values, packed))| {
                let (distances, unranker) = (&distances, &unranker);
                let first = chunk * per_thread;
                scope.spawn(move || pack_chunk(distances, unranker, first, values, packed))
            })
            .collect();
        workers
            .into_iter()
            .all(|worker| worker.join().unwrap_or(false))
    });
    fits.then_some(packed)
}

fn pack_chunk(
    distances: &Distances,
    unranker: &Unranker,
    first: usize,
    values: &[u8],
    packed: &mut [u8],
) -> bool {
    let (mut cells, mut digits) = ([0u8; 32], [0u8; 32]);
    for (offset, &value) in values.iter().enumerate() {
        let index = (first + offset) as u32;
        unranker.unrank(index, &mut cells, &mut digits);
        let distance = distances.of(cells.iter().copied());
        let Some(excess) = value.checked_sub(distance) else {
            return false;
        };
        if excess % 2 != 0 || excess / 2 > MAX_HALF_EXCESS || value == u8::MAX {
            return false;
        }
        packed[offset / 2] |= (excess / 2) << ((index & 1) << 2);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdb::index::placements;

    /// The values of the placements of tile 1 alone on a 2x2 board: its distance home plus
    /// `extra` moves on every cell.
    fn one_tile_values(extra: u8) -> (Board, Vec<u8>) {
        let goal = Board::blank_last(2);
        let home = cell_distances(Shape::square(2), 0);
        let values = (0..placements(4, 1) as usize)
            .map(|cell| home[cell] + extra)
            .collect();
        (goal, values)
    }

    #[test]
    fn packs_values_with_even_excess_and_reads_them_back() {
        for extra in [0, 2, 2 * MAX_HALF_EXCESS] {
            let (goal, values) = one_tile_values(extra);
            let packed = pack(&goal, &[1], &values, 3).unwrap();
            assert_eq!(packed.len(), 2);
            let distances = Distances::new(&goal, &[1]);
            for (index, &value) in values.iter().enumerate() {
                let read = distances.of([index as u8].into_iter())
                    + 2 * half_excess(&packed, index as u32);
                assert_eq!(read, value, "cell {index}");
            }
        }
    }

    #[test]
    fn refuses_what_four_bits_cannot_hold() {
        // Odd excess, excess past four bits, an unreachable placement, a value under the distance.
        let (goal, odd) = one_tile_values(1);
        assert!(pack(&goal, &[1], &odd, 1).is_none());
        let (goal, far) = one_tile_values(2 * MAX_HALF_EXCESS + 2);
        assert!(pack(&goal, &[1], &far, 1).is_none());
        let (goal, mut unreachable) = one_tile_values(0);
        unreachable[3] = u8::MAX;
        assert!(pack(&goal, &[1], &unreachable, 1).is_none());
        let (goal, mut under) = one_tile_values(0);
        under[3] = 0;
        assert!(pack(&goal, &[1], &under, 1).is_none());
    }
}
