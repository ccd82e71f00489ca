//! The precomputed neighbour table the kernel walks, and solution replay.

use thiserror::Error;

use crate::board::{Board, Shape, MAX_CELLS};
use crate::direction::Direction;

/// Blank moves as one string of letters, e.g. `"ULDR"`.
pub fn moves_to_string(moves: &[Direction]) -> String {
    moves.iter().map(|d| d.letter()).collect()
}

/// The moves of a string of letters U, L, R, D; `None` if any other character is in it.
pub fn moves_from_string(text: &str) -> Option<Vec<Direction>> {
    text.chars()
        .map(|c| Direction::ALL.into_iter().find(|d| d.letter() == c))
        .collect()
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
    pub fn new(shape: Shape) -> Neighbors {
        let mut table = [[NO_CELL; 4]; 32];
        for (cell, row) in table.iter_mut().enumerate().take(shape.cells()) {
            for direction in Direction::ALL {
                if let Some(next) = direction.step_within(cell, shape.rows(), shape.cols()) {
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
