//! Linear conflict (Hansson, Mayer and Yung 1992): Manhattan distance plus two moves for each tile
//! that must leave its goal row (or column) so that the tiles already in that line can pass each
//! other.
//!
//! Per line, the tiles standing in their goal line form a sequence of goal indices; the fewest
//! tiles to remove so the rest are in order is the sequence's length minus its longest increasing
//! subsequence. Row conflicts force extra vertical moves and column conflicts extra horizontal
//! ones, so the two sums add up admissibly.
//!
//! Each line is summarised by a key: one base-(side+1) digit per cell, 0 for a tile not in its
//! goal line (or the blank) and 1 + goal index otherwise. A table maps every key to its conflict
//! count, so a move costs two key sums and four table reads.

use crate::board::{Board, PaddedTiles, Position, MAX_SIDE};
use crate::heuristic::{Heuristic, TileCost};

#[derive(Clone, Debug)]
pub struct LinearConflict {
    manhattan: TileCost,
    side: usize,
    /// `row_digit[tile][cell]`: the tile's digit in its row's key, already scaled by the cell's
    /// place value.
    row_digit: [[u16; 32]; 32],
    col_digit: [[u16; 32]; 32],
    /// Conflicting tiles (to be removed) by line key.
    conflicts: Vec<u8>,
}

impl LinearConflict {
    pub fn new(goal: &Board) -> LinearConflict {
        let side = goal.side();
        let base = side + 1;
        let goal_cell = goal.positions();
        let mut row_digit = [[0u16; 32]; 32];
        let mut col_digit = [[0u16; 32]; 32];
        for tile in 1..goal.cells() {
            let target = goal_cell[tile] as usize;
            let (goal_row, goal_col) = (target / side, target % side);
            for cell in 0..goal.cells() {
                let (row, col) = (cell / side, cell % side);
                if row == goal_row {
                    row_digit[tile][cell] = ((goal_col + 1) * base.pow(col as u32)) as u16;
                }
                if col == goal_col {
                    col_digit[tile][cell] = ((goal_row + 1) * base.pow(row as u32)) as u16;
                }
            }
        }
        let conflicts = (0..base.pow(side as u32))
            .map(|key| conflicts_in_key(key, side))
            .collect();
        LinearConflict {
            manhattan: TileCost::manhattan(goal),
            side,
            row_digit,
            col_digit,
            conflicts,
        }
    }

    #[inline(always)]
    fn row_key(&self, tiles: &PaddedTiles, row: usize) -> usize {
        let first = row * self.side;
        (first..first + self.side)
            .map(|cell| usize::from(self.row_digit[usize::from(tiles[cell & 31]) & 31][cell & 31]))
            .sum()
    }

    #[inline(always)]
    fn col_key(&self, tiles: &PaddedTiles, col: usize) -> usize {
        (0..self.side)
            .map(|row| {
                let cell = row * self.side + col;
                usize::from(self.col_digit[usize::from(tiles[cell & 31]) & 31][cell & 31])
            })
            .sum()
    }

    #[inline(always)]
    fn conflicts_of(&self, key: usize) -> i32 {
        i32::from(self.conflicts.get(key).copied().unwrap_or(0))
    }
}

/// Tiles to remove from the line described by `key` so the rest stand in goal order.
fn conflicts_in_key(mut key: usize, side: usize) -> u8 {
    let mut sequence = [0usize; MAX_SIDE];
    let mut len = 0;
    for _ in 0..side {
        let digit = key % (side + 1);
        key /= side + 1;
        if digit > 0 {
            sequence[len] = digit;
            len += 1;
        }
    }
    // Longest strictly increasing subsequence, quadratic: lines hold at most five tiles.
    let mut longest = [1usize; MAX_SIDE];
    for i in 0..len {
        for j in 0..i {
            if sequence[j] < sequence[i] {
                longest[i] = longest[i].max(longest[j] + 1);
            }
        }
    }
    let lis = longest[..len].iter().copied().max().unwrap_or(0);
    (len - lis) as u8
}

impl Heuristic for LinearConflict {
    type State = u32;
    type Probe = ();

    fn init(&self, position: &Position) -> u32 {
        let tiles = &position.tiles;
        let line_conflicts: i32 = (0..self.side)
            .map(|line| {
                self.conflicts_of(self.row_key(tiles, line))
                    + self.conflicts_of(self.col_key(tiles, line))
            })
            .sum();
        self.manhattan.init(position) + 2 * line_conflicts as u32
    }

    #[inline(always)]
    fn value(&self, h: u32) -> u32 {
        h
    }

    /// A horizontal move keeps the tile's order within its row and changes two columns; a vertical
    /// move changes two rows. The keys before the move differ from the keys after it only by the
    /// moved tile's digit, so they are derived rather than recomputed.
    #[inline(always)]
    fn after_move(&self, position: &Position, h: u32, tile: u8, from: usize, to: usize) -> u32 {
        let tiles = &position.tiles;
        let t = usize::from(tile) & 31;
        let (left, entered, digit) = if from / self.side == to / self.side {
            (
                self.col_key(tiles, from % self.side),
                self.col_key(tiles, to % self.side),
                &self.col_digit[t],
            )
        } else {
            (
                self.row_key(tiles, from / self.side),
                self.row_key(tiles, to / self.side),
                &self.row_digit[t],
            )
        };
        let left_before = left + usize::from(digit[from & 31]);
        let entered_before = entered - usize::from(digit[to & 31]);
        let delta = self.conflicts_of(left) + self.conflicts_of(entered)
            - self.conflicts_of(left_before)
            - self.conflicts_of(entered_before);
        let h = self.manhattan.after_move(position, h, tile, from, to) as i32 + 2 * delta;
        h as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_by_longest_increasing_subsequence() {
        // Side 3, base 4: digits are (goal index + 1) per cell, least significant cell first.
        let key = |digits: [usize; 3]| digits[0] + 4 * digits[1] + 16 * digits[2];
        assert_eq!(conflicts_in_key(key([1, 2, 3]), 3), 0);
        assert_eq!(conflicts_in_key(key([2, 1, 0]), 3), 1);
        assert_eq!(conflicts_in_key(key([3, 2, 1]), 3), 2);
        assert_eq!(conflicts_in_key(key([0, 3, 1]), 3), 1);
        assert_eq!(conflicts_in_key(0, 3), 0);
    }
}
