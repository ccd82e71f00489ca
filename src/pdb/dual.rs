//! Dual lookups: the partition's tables read on the board's dual, where each tile stands on the
//! home of the tile that stands on its own home.
//!
//! Name every tile by its home cell. Renaming every tile of a board `s` after the cell it
//! stands on turns `s` into the goal with the blank on its cell `b`, and turns the goal into the
//! dual `d`: tile `t` on the home of the tile standing on `t`'s home in `s`. A path from `d` to
//! that goal is a path between `s` and the goal, so the moves of any tile set that leaves out
//! the blank's new name `b` (the tile whose home is `b`) count no more than `s`'s distance. A
//! table of tiles without that tile is read on the dual as it is read on a board; the table
//! that holds it contributes its other tiles' distances home on the dual instead. With the blank
//! home no tile is left out, and the dual is the inverse permutation of the usual account.
//!
//! The dual is admissible but not consistent with the board's own estimate, so the kernel
//! reads it only for children the board's estimate keeps, and takes the larger.

use crate::board::Position;
use crate::pdb::partition::{BOARD, MIRRORED};
use crate::pdb::Partitioned;

impl<const SLOTS: usize, const OCC: usize> Partitioned<'_, SLOTS, OCC> {
    /// The estimate read on `position`'s dual, on the board and on its mirror image; stops at the
    /// first side over `limit` and returns that side's.
    pub(super) fn dual_value(&self, position: &Position, limit: u32) -> u32 {
        let partition = self.partition;
        let mut dual = Position {
            tiles: [0; 32],
            cells: [0; 32],
        };
        for tile in 0..partition.cells {
            let on_home = position.tiles[usize::from(partition.home[tile]) & 31];
            let cell = partition.home[usize::from(on_home) & 31];
            dual.cells[tile] = cell;
        }
        // The blank's new name is the tile whose home the blank is on, and that tile's dual cell
        // is the blank's home: zero-aware tables read it there.
        let left_out = usize::from(partition.goal_tile[usize::from(position.cells[0]) & 31]);
        dual.cells.swap(0, left_out);
        for tile in 0..partition.cells {
            dual.tiles[usize::from(dual.cells[tile]) & 31] = tile as u8;
        }
        let mut best = 0;
        for side in [BOARD, MIRRORED] {
            let mirror = self.mirror(side);
            if side == MIRRORED && mirror.is_none() {
                break;
            }
            let mut sum = 0;
            for i in 0..partition.tables {
                let blank = match mirror {
                    Some(mirror) => mirror.cell[usize::from(position.cells[0]) & 31],
                    None => position.cells[0],
                };
                if partition.goal_region[i] & 1 << (blank & 31) == 0 {
                    sum += (1..partition.cells)
                        .filter(|&t| t != left_out && usize::from(partition.table[side][t]) == i)
                        .map(|t| {
                            u32::from(partition.distance[side][t][usize::from(dual.cells[t]) & 31])
                        })
                        .sum::<u32>();
                    continue;
                }
                let rank = match mirror {
                    Some(mirror) => self.pdb.rank_of_mirrored(mirror, i, &dual),
                    None => self.pdb.rank_of(i, &dual),
                };
                let term = u32::from(self.pdb.read_term(i, rank, mirror, &dual));
                if std::env::var_os("DUAL_DEBUG").is_some() {
                    eprintln!("table {i} rank {rank} term {term} est {}", crate::heuristic::Heuristic::estimate(self.pdb, &dual));
                }
                sum += term;
            }
            if std::env::var_os("DUAL_DEBUG").is_some() {
                eprintln!("side {side} sum {sum} dual {:?} left_out {left_out}", &dual.cells[..partition.cells]);
            }
            if sum > limit {
                return sum;
            }
            best = best.max(sum);
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use crate::board::Board;
    use crate::direction::Direction;
    use crate::pdb::{AdditivePdb, PatternSpec, PdbStore};

    #[test]
    fn dual_is_admissible_on_3x3() {
        let dir = tempfile::tempdir().unwrap();
        let store = PdbStore::new(dir.path(), 2);
        for (goal, zero_aware) in [
            (Board::blank_last(3), false),
            (Board::blank_first(3), false),
            (Board::blank_last(3), true),
            (Board::blank_first(3), true),
        ] {
            let mut distance = HashMap::from([(goal, 0u32)]);
            let mut queue = VecDeque::from([goal]);
            while let Some(board) = queue.pop_front() {
                let d = distance[&board];
                for direction in Direction::ALL {
                    if let Some((child, _)) = board.apply(direction) {
                        distance.entry(child).or_insert_with(|| {
                            queue.push_back(child);
                            d + 1
                        });
                    }
                }
            }
            let tiles: Vec<Vec<u8>> = vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]];
            let tables = tiles
                .into_iter()
                .map(|tiles| {
                    let spec = PatternSpec {
                        goal,
                        tiles,
                        zero_aware,
                    };
                    store.table(&spec, &|_| {}).unwrap()
                })
                .collect();
            let pdb = AdditivePdb::<8>::new(&goal, tables, &[vec![0, 1]], true);
            let over = match (pdb.partitioned(), pdb.partitioned_by_blank()) {
                (Some(partitioned), _) => super::overestimates(&partitioned, &distance),
                (None, Some(partitioned)) => super::overestimates(&partitioned, &distance),
                (None, None) => panic!("not a partition"),
            };
            assert_eq!(over, 0, "{goal} zero-aware {zero_aware}");
        }
    }
}

#[cfg(test)]
fn overestimates<const OCC: usize>(
    partitioned: &crate::pdb::Partitioned<'_, 8, OCC>,
    distance: &std::collections::HashMap<crate::board::Board, u32>,
) -> usize {
    let (mut raised, mut over) = (0, 0);
    for (board, d) in distance {
        let position = crate::board::Position::new(board);
        let h = crate::heuristic::Heuristic::estimate(partitioned, &position);
        let dual = partitioned.dual_value(&position, u32::MAX);
        over += usize::from(dual > *d);
        raised += usize::from(dual > h);
    }
    eprintln!("raised {raised}, over {over}");
    over
}
