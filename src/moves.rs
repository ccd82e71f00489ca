//! Moves of the blank, the precomputed neighbour table the kernel walks, and solution replay.

use std::fmt;

use thiserror::Error;

use crate::board::{Board, MAX_CELLS};

/// A direction the blank moves in. The order (up, left, right, down) is Korf's 1985 move order,
/// which the kernel follows so that its node counts can be compared with his table; the
/// numbering makes the opposite of `d` equal to `3 - d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Direction {
    Up = 0,
    Left = 1,
    Right = 2,
    Down = 3,
}

impl Direction {
    /// Every direction, in search order.
    pub const ALL: [Direction; 4] = [
        Direction::Up,
        Direction::Left,
        Direction::Right,
        Direction::Down,
    ];

    pub fn from_index(index: u8) -> Direction {
        Direction::ALL[usize::from(index & 3)]
    }

    pub fn opposite(self) -> Direction {
        Direction::from_index(3 - self as u8)
    }

    pub fn letter(self) -> char {
        match self {
            Direction::Up => 'U',
            Direction::Left => 'L',
            Direction::Right => 'R',
            Direction::Down => 'D',
        }
    }

    /// The cell the blank reaches from `cell` on a board of `side`, if it stays on the board.
    pub fn step(self, cell: usize, side: usize) -> Option<usize> {
        let (row, col) = (cell / side, cell % side);
        match self {
            Direction::Up if row > 0 => Some(cell - side),
            Direction::Down if row + 1 < side => Some(cell + side),
            Direction::Left if col > 0 => Some(cell - 1),
            Direction::Right if col + 1 < side => Some(cell + 1),
            _ => None,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// Blank moves as one string of letters, e.g. `"ULDR"`.
pub fn moves_to_string(moves: &[Direction]) -> String {
    moves.iter().map(|d| d.letter()).collect()
}

/// Marks a missing neighbour in [`Neighbors`].
pub const NO_CELL: u8 = u8::MAX;

/// For each cell, the cell the blank reaches in each direction (or [`NO_CELL`]).
///
/// Sized to 32 cells so the kernel can index with `cell & 31`, which lets the compiler drop
/// bounds checks on the hot path without `unsafe`.
#[derive(Clone, Debug)]
pub struct Neighbors {
    table: [[u8; 4]; 32],
}

impl Neighbors {
    pub fn new(side: usize) -> Neighbors {
        let mut table = [[NO_CELL; 4]; 32];
        for (cell, row) in table.iter_mut().enumerate().take(side * side) {
            for direction in Direction::ALL {
                if let Some(next) = direction.step(cell, side) {
                    row[direction as usize] = next as u8;
                }
            }
        }
        Neighbors { table }
    }

    #[inline(always)]
    pub fn of(&self, cell: usize) -> &[u8; 4] {
        &self.table[cell & 31]
    }
}

/// Why a move sequence does not solve a board. Seeing one from the solver is a bug: solutions are
/// replayed before anyone sees them precisely to catch it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReplayError {
    #[error("move {index} ({direction}) takes the blank off the board")]
    OffBoard { index: usize, direction: Direction },
    #[error("the moves end on {reached}, not on the goal {goal}")]
    NotGoal { reached: Board, goal: Board },
}

/// Plays `moves` from `start` and checks that they end on `goal`. Returns the tile moved by each.
pub fn replay(start: &Board, goal: &Board, moves: &[Direction]) -> Result<Vec<u8>, ReplayError> {
    let mut board = *start;
    let mut tiles = Vec::with_capacity(moves.len());
    for (index, &direction) in moves.iter().enumerate() {
        let (next, tile) = board.apply(direction).ok_or(ReplayError::OffBoard {
            index: index + 1,
            direction,
        })?;
        board = next;
        tiles.push(tile);
    }
    if board != *goal {
        return Err(ReplayError::NotGoal {
            reached: board,
            goal: *goal,
        });
    }
    Ok(tiles)
}

const _: () = assert!(
    MAX_CELLS <= 32,
    "neighbour tables are indexed with `cell & 31`"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opposite_is_three_minus() {
        for d in Direction::ALL {
            assert_eq!(d.opposite() as u8, 3 - d as u8);
            assert_eq!(d.opposite().opposite(), d);
        }
    }

    #[test]
    fn replay_checks_the_goal() {
        let goal = Board::blank_last(3);
        let (start, _) = goal.apply(Direction::Up).unwrap();
        assert_eq!(replay(&start, &goal, &[Direction::Down]), Ok(vec![6]));
        assert!(matches!(
            replay(&start, &goal, &[Direction::Up]),
            Err(ReplayError::NotGoal { .. })
        ));
        assert!(matches!(
            replay(&goal, &goal, &[Direction::Down]),
            Err(ReplayError::OffBoard { .. })
        ));
    }
}
