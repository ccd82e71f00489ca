//! Heuristics that sum a per-tile cost of the tile's cell: Manhattan distance and Hamming
//! distance (misplaced tiles). A move changes one term, so the update is two table reads.

use crate::board::{Board, Position};
use crate::heuristic::Heuristic;

/// `cost[tile][cell]`: the cost of `tile` standing on `cell`; the blank costs nothing.
#[derive(Clone, Debug)]
pub struct TileCost {
    cost: [[u8; 32]; 32],
}

impl TileCost {
    /// Manhattan distance: the sum of each tile's row and column distance to its goal cell.
    pub fn manhattan(goal: &Board) -> TileCost {
        let side = goal.side();
        TileCost::from_fn(goal, |cell, goal_cell| {
            (cell / side).abs_diff(goal_cell / side) + (cell % side).abs_diff(goal_cell % side)
        })
    }

    /// Hamming distance: the number of tiles not on their goal cell.
    pub fn hamming(goal: &Board) -> TileCost {
        TileCost::from_fn(goal, |cell, goal_cell| usize::from(cell != goal_cell))
    }

    fn from_fn(goal: &Board, cost_of: impl Fn(usize, usize) -> usize) -> TileCost {
        let goal_cell = goal.positions();
        let mut cost = [[0u8; 32]; 32];
        for tile in 1..goal.cells() {
            for (cell, entry) in cost[tile].iter_mut().enumerate().take(goal.cells()) {
                *entry = cost_of(cell, goal_cell[tile] as usize) as u8;
            }
        }
        TileCost { cost }
    }

    /// The cost of `tile` on `cell`.
    #[inline(always)]
    pub fn of(&self, tile: u8, cell: usize) -> u32 {
        u32::from(self.cost[usize::from(tile) & 31][cell & 31])
    }
}

impl Heuristic for TileCost {
    type State = u32;
    type Probe = ();

    fn init(&self, position: &Position) -> u32 {
        position
            .tiles
            .iter()
            .enumerate()
            .map(|(cell, &tile)| self.of(tile, cell))
            .sum()
    }

    #[inline(always)]
    fn value(&self, h: u32) -> u32 {
        h
    }

    #[inline(always)]
    fn after_move(&self, _position: &Position, h: u32, tile: u8, from: usize, to: usize) -> u32 {
        h + self.of(tile, to) - self.of(tile, from)
    }
}
