//! The precomputed neighbour table the kernel walks, and solution replay.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
    /// A path that comes back to a board holds a shorter one (its loop cut out), so it is never
    /// a shortest path: padding (`...UD`) is refused here, wherever a path is replayed.
    #[error(
        "move {index} ({direction}) comes back to the board {after}: a shortest path visits no \
         board twice"
    )]
    Revisits {
        index: usize,
        direction: Direction,
        after: Reached,
    },
}

/// Where a path first reached a board it comes back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    Start,
    AfterMove(usize),
}

impl std::fmt::Display for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reached::Start => f.write_str("it started from"),
            Reached::AfterMove(index) => write!(f, "of move {index}"),
        }
    }
}

/// Hashes the boards a path visits, for [`replay`] and [`without_loops`]: xxh3 of each piece
/// of a board hashed in. SipHash, the default, took a tenth of the coordinator's time on a
/// batch of easy boards (each answer is replayed when judged, solved and stored); a path is at
/// most a few hundred boards, so no crafted one can cost much even if its boards collide.
#[derive(Default)]
struct PathHasher(u64);

impl Hasher for PathHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
}

/// Boards of a path, each with a number (where the path reached it).
type BoardsSeen = HashMap<Board, usize, BuildHasherDefault<PathHasher>>;

/// Plays `moves` from `start` and checks that they end on `goal` and visit no board twice.
/// Returns the tile moved by each.
pub fn replay(start: &Board, goal: &Board, moves: &[Direction]) -> Result<Vec<u8>, ReplayError> {
    let mut board = *start;
    let mut tiles = Vec::with_capacity(moves.len());
    // Boards reached, each with the number of moves that reached it (0: the start).
    let mut seen = BoardsSeen::with_capacity_and_hasher(moves.len() + 1, Default::default());
    seen.insert(board, 0);
    for (index, &direction) in moves.iter().enumerate() {
        let (next, tile) = board.apply(direction).ok_or(ReplayError::OffBoard {
            index: index + 1,
            direction,
        })?;
        if let Some(&earlier) = seen.get(&next) {
            return Err(ReplayError::Revisits {
                index: index + 1,
                direction,
                after: match earlier {
                    0 => Reached::Start,
                    moved => Reached::AfterMove(moved),
                },
            });
        }
        seen.insert(next, index + 1);
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

/// `moves` with every loop cut out: from `start` to where `moves` end, visiting no board twice.
/// For paths no search proved shortest (weighted searches, a line's claim), which may come
/// back to a board and are still worth their shorter part. Moves from a move that leaves the
/// board on are kept as they are, for [`replay`] to refuse.
pub fn without_loops(start: &Board, moves: &[Direction]) -> Vec<Direction> {
    let mut path: Vec<Direction> = Vec::with_capacity(moves.len());
    // The boards along `path` (the start first), and where each is in it.
    let mut boards = vec![*start];
    let mut at = BoardsSeen::with_capacity_and_hasher(moves.len() + 1, Default::default());
    at.insert(*start, 0);
    for (index, &direction) in moves.iter().enumerate() {
        let Some((next, _)) = boards[path.len()].apply(direction) else {
            path.extend_from_slice(&moves[index..]);
            return path;
        };
        match at.get(&next) {
            Some(&back_to) => {
                for board in boards.drain(back_to + 1..) {
                    at.remove(&board);
                }
                path.truncate(back_to);
            }
            None => {
                path.push(direction);
                boards.push(next);
                at.insert(next, path.len());
            }
        }
    }
    path
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

    /// Every loop a path can hold (a reversal, or the blank around a 2x2 block three times)
    /// is refused by replay, and cut out by `without_loops`, which keeps the path's end.
    #[test]
    fn a_path_visiting_a_board_twice_is_refused_and_its_loops_cut() {
        use Direction::{Down, Left, Right, Up};
        let goal = Board::blank_last(3);
        let (start, _) = goal.apply(Up).unwrap();
        let padded = [Left, Right, Down];
        assert_eq!(
            replay(&start, &goal, &padded),
            Err(ReplayError::Revisits {
                index: 2,
                direction: Right,
                after: Reached::Start
            })
        );
        assert_eq!(without_loops(&start, &padded), vec![Down]);
        let mut looped: Vec<Direction> = [Left, Down, Right, Up].repeat(3);
        looped.push(Down);
        assert!(matches!(
            replay(&start, &goal, &looped),
            Err(ReplayError::Revisits {
                index: 12,
                after: Reached::Start,
                ..
            })
        ));
        assert!(matches!(
            replay(&start, &goal, &[Left, Down, Right, Up, Left, Right]),
            Err(ReplayError::Revisits {
                index: 6,
                after: Reached::AfterMove(4),
                ..
            })
        ));
        let cut = without_loops(&start, &looped);
        assert_eq!(cut, vec![Down]);
        assert_eq!(replay(&start, &goal, &cut), Ok(vec![6]));
        // Off the board: the rest is kept for replay to refuse.
        assert_eq!(without_loops(&goal, &[Down, Up]), vec![Down, Up]);
    }
}
