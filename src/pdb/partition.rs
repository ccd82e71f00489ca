//! Which table holds each tile of an additive set that partitions the tiles, on the board and
//! on its mirror image: what [`Partitioned`](super::Partitioned) reads at every move.

use crate::board::Board;
use crate::pdb::index::digit_weight;
use crate::pdb::lookup::{Lookup, Mirror, MAX_GROUPS};
use crate::pdb::packed::cell_distances;

/// The board's side of a partition's arrays.
pub(super) const BOARD: usize = 0;
/// The mirror image's side.
pub(super) const MIRRORED: usize = 1;

/// Which table holds each tile on each side, and the weight of the tile's digit in that table's
/// rank.
#[derive(Clone, Debug)]
pub(super) struct Partition {
    /// Side -> tile -> the table holding it there (on the mirror image: holding its image).
    pub(super) table: [[u8; 32]; 2],
    /// Side -> tile -> the weight of its digit (of its image's, on the mirror image).
    pub(super) weight: [[u32; 32]; 2],
    pub(super) tables: usize,
    /// Every table is packed (a partition of packed and unpacked tables takes the general path).
    pub(super) packed: bool,
    /// Table -> the cells it leaves free if it is stored by blank cell (`blank_cells`), else 0.
    pub(super) free: [u32; MAX_GROUPS],
    /// Side -> tile -> cell -> the distance home of the tile on that cell (of its image on the
    /// image cell, on the mirror image), for packed tables.
    pub(super) distance: [[[u8; 32]; 32]; 2],
}

impl Partition {
    /// Whether some table is stored by blank cell.
    pub(super) fn by_blank(&self) -> bool {
        self.free.iter().any(|&free| free > 0)
    }

    /// The partition, if `sets` is one set whose tables hold every tile exactly once.
    pub(super) fn of(
        goal: &Board,
        tables_of: &[u32; 32],
        sets: &[[u8; MAX_GROUPS]],
        lookups: &[Lookup],
        mirror: Option<&Mirror>,
    ) -> Option<Partition> {
        let [set] = sets else { return None };
        if lookups.len() > MAX_GROUPS {
            return None;
        }
        let in_set = set
            .iter()
            .fold(0u32, |mask, &table| mask | 1 << (table & 31));
        let packed = lookups.iter().all(Lookup::packed);
        if !packed && lookups.iter().any(Lookup::packed) {
            return None;
        }
        let mut free = [0; MAX_GROUPS];
        for (free, lookup) in free.iter_mut().zip(lookups) {
            *free = lookup.blank_cells.unwrap_or_default();
        }
        let mut partition = Partition {
            table: [[0; 32]; 2],
            weight: [[0; 32]; 2],
            tables: lookups.len(),
            packed,
            free,
            distance: [[[0; 32]; 32]; 2],
        };
        let (shape, home) = (goal.shape(), goal.positions());
        for (distance, &cell) in partition.distance[BOARD]
            .iter_mut()
            .zip(&home)
            .take(goal.cells())
        {
            *distance = cell_distances(shape, usize::from(cell));
        }
        for (tile, &tables) in tables_of.iter().enumerate().take(goal.cells()).skip(1) {
            if tables.count_ones() != 1 || tables & in_set == 0 {
                return None;
            }
            let table = tables.trailing_zeros() as usize;
            let pattern = lookups[table].tiles();
            let digit = pattern.iter().position(|&t| usize::from(t) == tile)?;
            partition.table[BOARD][tile] = table as u8;
            partition.weight[BOARD][tile] = digit_weight(goal.cells(), pattern.len(), digit);
        }
        if let Some(mirror) = mirror {
            for tile in 1..goal.cells() {
                let image = usize::from(mirror.tile[tile]) & 31;
                partition.table[MIRRORED][tile] = partition.table[BOARD][image];
                partition.weight[MIRRORED][tile] = partition.weight[BOARD][image];
                let to_home = cell_distances(shape, usize::from(home[image]));
                for cell in 0..goal.cells() {
                    partition.distance[MIRRORED][tile][cell] =
                        to_home[usize::from(mirror.cell[cell]) & 31];
                }
            }
        }
        Some(partition)
    }
}
