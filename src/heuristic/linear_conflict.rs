//! Linear conflict (Hansson, Mayer and Yung 1992): Manhattan distance plus two moves for each tile
//! that must leave its goal row (or column) so that the tiles already in that line can pass each
//! other.
//!
//! Per line, the tiles standing in their goal line form a sequence of goal indices; the fewest
//! tiles to remove so the rest are in order is the sequence's length minus its longest increasing
//! subsequence. Row conflicts force extra vertical moves and column conflicts extra horizontal
//! ones, so the two sums add up admissibly.
//!
//! Each line is summarised by a key: one base-(len+1) digit per cell of a line of `len` cells, 0
//! for a tile not in its goal line (or the blank) and 1 + goal index otherwise. A table maps every key to its conflict
//! count, so a move costs two key sums and four table reads.

use crate::board::{Board, PaddedTiles, Position};
use crate::heuristic::{Heuristic, TileCost};

/// Longest line whose conflicts are tabled (6^5 = 7,776 keys, each digit's place value within
/// a `u16`). A longer line (the long side of a rectangle, 6 to 16 cells) adds no conflicts:
/// leaving a term out keeps the estimate admissible, and such a line's keys would not fit (a
/// 6-cell line's digits pass `u16::MAX`; 17^16 keys on 2x16).
const MAX_TABLED_LINE: usize = 5;

#[derive(Clone, Debug)]
pub struct LinearConflict {
    manhattan: TileCost,
    rows: usize,
    cols: usize,
    /// `row_digit[tile][cell]`: the tile's digit in its row's key, already scaled by the cell's
    /// place value (0 throughout when rows are too long to table).
    row_digit: [[u16; 32]; 32],
    col_digit: [[u16; 32]; 32],
    /// Conflicting tiles (to be removed) by line key: of a row (`cols` cells) and of a column
    /// (`rows` cells).
    row_conflicts: Vec<u8>,
    col_conflicts: Vec<u8>,
}

/// The conflicts of every key of a line of `len` cells; empty for a line too long to table.
fn conflict_table(len: usize) -> Vec<u8> {
    if len > MAX_TABLED_LINE {
        return Vec::new();
    }
    (0..(len + 1).pow(len as u32))
        .map(|key| conflicts_in_key(key, len))
        .collect()
}

impl LinearConflict {
    pub fn new(goal: &Board) -> LinearConflict {
        let (rows, cols) = (goal.shape().rows(), goal.shape().cols());
        let tabled = |len: usize| len <= MAX_TABLED_LINE;
        let goal_cell = goal.positions();
        let mut row_digit = [[0u16; 32]; 32];
        let mut col_digit = [[0u16; 32]; 32];
        for tile in 1..goal.cells() {
            let target = goal_cell[tile] as usize;
            let (goal_row, goal_col) = (target / cols, target % cols);
            for cell in 0..goal.cells() {
                let (row, col) = (cell / cols, cell % cols);
                if row == goal_row && tabled(cols) {
                    row_digit[tile][cell] = ((goal_col + 1) * (cols + 1).pow(col as u32)) as u16;
                }
                if col == goal_col && tabled(rows) {
                    col_digit[tile][cell] = ((goal_row + 1) * (rows + 1).pow(row as u32)) as u16;
                }
            }
        }
        LinearConflict {
            manhattan: TileCost::manhattan(goal),
            rows,
            cols,
            row_digit,
            col_digit,
            row_conflicts: conflict_table(cols),
            col_conflicts: conflict_table(rows),
        }
    }

    #[inline(always)]
    fn row_key(&self, tiles: &PaddedTiles, row: usize) -> usize {
        let first = row * self.cols;
        (first..first + self.cols)
            .map(|cell| usize::from(self.row_digit[usize::from(tiles[cell & 31]) & 31][cell & 31]))
            .sum()
    }

    #[inline(always)]
    fn col_key(&self, tiles: &PaddedTiles, col: usize) -> usize {
        (0..self.rows)
            .map(|row| {
                let cell = row * self.cols + col;
                usize::from(self.col_digit[usize::from(tiles[cell & 31]) & 31][cell & 31])
            })
            .sum()
    }

    #[inline(always)]
    fn conflicts_of(table: &[u8], key: usize) -> i32 {
        i32::from(table.get(key).copied().unwrap_or(0))
    }
}

/// Tiles to remove from the line of `len` cells described by `key` so the rest stand in goal
/// order.
fn conflicts_in_key(mut key: usize, len: usize) -> u8 {
    let mut sequence = [0usize; MAX_TABLED_LINE];
    let mut count = 0;
    for _ in 0..len {
        let digit = key % (len + 1);
        key /= len + 1;
        if digit > 0 {
            sequence[count] = digit;
            count += 1;
        }
    }
    // Longest strictly increasing subsequence, quadratic: tabled lines hold at most five tiles.
    let mut longest = [1usize; MAX_TABLED_LINE];
    for i in 0..count {
        for j in 0..i {
            if sequence[j] < sequence[i] {
                longest[i] = longest[i].max(longest[j] + 1);
            }
        }
    }
    let lis = longest[..count].iter().copied().max().unwrap_or(0);
    (count - lis) as u8
}

impl Heuristic for LinearConflict {
    type State = u32;
    type Probe = ();

    fn init(&self, position: &Position) -> u32 {
        let tiles = &position.tiles;
        let rows: i32 = (0..self.rows)
            .map(|row| Self::conflicts_of(&self.row_conflicts, self.row_key(tiles, row)))
            .sum();
        let cols: i32 = (0..self.cols)
            .map(|col| Self::conflicts_of(&self.col_conflicts, self.col_key(tiles, col)))
            .sum();
        self.manhattan.init(position) + 2 * (rows + cols) as u32
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
        let (left, entered, digit, table) = if from / self.cols == to / self.cols {
            (
                self.col_key(tiles, from % self.cols),
                self.col_key(tiles, to % self.cols),
                &self.col_digit[t],
                &self.col_conflicts,
            )
        } else {
            (
                self.row_key(tiles, from / self.cols),
                self.row_key(tiles, to / self.cols),
                &self.row_digit[t],
                &self.row_conflicts,
            )
        };
        let left_before = left + usize::from(digit[from & 31]);
        let entered_before = entered - usize::from(digit[to & 31]);
        let delta = Self::conflicts_of(table, left) + Self::conflicts_of(table, entered)
            - Self::conflicts_of(table, left_before)
            - Self::conflicts_of(table, entered_before);
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
