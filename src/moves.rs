//! The precomputed neighbour table the kernel walks, and solution replay.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use thiserror::Error;

use crate::board::{Board, Shape, MAX_CELLS};
use crate::direction::Direction;

/// Blank moves as one string of letters, e.g. `"ULDR"`.
pub fn moves_to_string(moves: &[Direction]) -> String {
    // Sized once (a letter is a byte): every answer and task path is written here.
    let mut text = String::with_capacity(moves.len());
    text.extend(moves.iter().map(|d| d.letter()));
    text
}

/// The moves of a string of letters U, L, R, D; `None` if any other character is in it.
pub fn moves_from_string(text: &str) -> Option<Vec<Direction>> {
    // By bytes, into a list sized once: every answer a worker reports is read here, and a
    // letter is one byte (collected through `Option`, the list grew by doubling).
    let mut moves = Vec::with_capacity(text.len());
    for byte in text.bytes() {
        moves.push(match byte {
            b'U' => Direction::Up,
            b'L' => Direction::Left,
            b'R' => Direction::Right,
            b'D' => Direction::Down,
            _ => return None,
        });
    }
    Some(moves)
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

/// Hashes the boards a path visits, for a replay that must say where a path fails and for
/// [`without_loops`]: xxh3 of each piece of a board hashed in (SipHash, the default, took a
/// tenth of the coordinator's time on a batch of easy boards). A path is at most a few hundred
/// boards, so no crafted one can cost much even if its boards collide.
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
///
/// Every answer is replayed when it is judged and again when it is stored, so on a batch of
/// easy boards this is a visible share of the coordinator's time: the boards are told apart by
/// their Zobrist keys, kept in a small table, and only a path that fails (a loop, a move off
/// the board, another end; or two keys colliding) is replayed again board by board.
pub fn replay(start: &Board, goal: &Board, moves: &[Direction]) -> Result<Vec<u8>, ReplayError> {
    match replay_by_keys(start, goal, moves) {
        Some(tiles) => Ok(tiles),
        None => replay_board_by_board(start, goal, moves),
    }
}

/// A random word for each tile on each cell (the blank's words are zero): a board's key is the
/// exclusive or of its tiles' words, so a move changes it by two words.
const ZOBRIST: [[u64; MAX_CELLS]; MAX_CELLS] = zobrist_words();

const fn zobrist_words() -> [[u64; MAX_CELLS]; MAX_CELLS] {
    let mut words = [[0; MAX_CELLS]; MAX_CELLS];
    // splitmix64, from a fixed seed: the keys are the same in every process.
    let mut state: u64 = 0x7469_6c65_736f_6c76;
    let mut tile = 1;
    while tile < MAX_CELLS {
        let mut cell = 0;
        while cell < MAX_CELLS {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            words[tile][cell] = z ^ (z >> 31);
            cell += 1;
        }
        tile += 1;
    }
    words
}

/// The tiles `moves` move when they stay on the board, end on `goal` and reach no two boards
/// of one key (so none twice); `None` otherwise, for [`replay_board_by_board`] to say why (or
/// to find that two keys collided on a sound path).
fn replay_by_keys(start: &Board, goal: &Board, moves: &[Direction]) -> Option<Vec<u8>> {
    let (rows, cols) = (start.shape().rows(), start.shape().cols());
    let mut cells = start.padded();
    let mut blank = start.blank();
    let mut key = cells.iter().enumerate().fold(0, |key, (cell, &tile)| {
        key ^ ZOBRIST[usize::from(tile) & 31][cell]
    });
    let mut stack_table = [0u64; KEYS_ON_STACK];
    let mut heap_table = Vec::new();
    let mut seen = KeysSeen::new(moves.len() + 1, &mut stack_table, &mut heap_table);
    seen.insert(key)?;
    let mut tiles = Vec::with_capacity(moves.len());
    for &direction in moves {
        let target = direction.step_within(blank, rows, cols)?;
        // The tile on `target` slides into the blank's cell.
        let tile = cells[target & 31];
        cells[blank & 31] = tile;
        cells[target & 31] = 0;
        let words = &ZOBRIST[usize::from(tile) & 31];
        key ^= words[target & 31] ^ words[blank & 31];
        seen.insert(key)?;
        tiles.push(tile);
        blank = target;
    }
    if cells != goal.padded() {
        return None;
    }
    Some(tiles)
}

/// Slots of a [`KeysSeen`] table kept on the stack (zeroed for every replay, so no more than
/// an easy board's path needs): paths of up to 63 moves.
const KEYS_ON_STACK: usize = 128;

/// The keys of a path's boards, in an open-addressing table at most half full (inserting and
/// probing a few words beat sorting the keys, which was most of a replay). A key is kept with
/// its lowest bit set, so that 0 marks an empty slot: two keys differing only there count as
/// one, and the path is replayed board by board.
struct KeysSeen<'a> {
    slots: &'a mut [u64],
}

impl<'a> KeysSeen<'a> {
    fn new(keys: usize, stack: &'a mut [u64; KEYS_ON_STACK], heap: &'a mut Vec<u64>) -> Self {
        let size = (2 * keys).next_power_of_two();
        let slots = if size <= KEYS_ON_STACK {
            &mut stack[..size]
        } else {
            heap.resize(size, 0);
            heap.as_mut_slice()
        };
        KeysSeen { slots }
    }

    /// Adds `key`; `None` if it was there.
    fn insert(&mut self, key: u64) -> Option<()> {
        let stored = key | 1;
        let mask = self.slots.len() - 1;
        let mut slot = (key >> 40) as usize & mask;
        loop {
            match self.slots[slot] {
                0 => {
                    self.slots[slot] = stored;
                    return Some(());
                }
                old if old == stored => return None,
                _ => slot = (slot + 1) & mask,
            }
        }
    }
}

/// [`replay`] keeping every board it reached: exact, and says where a path comes back.
fn replay_board_by_board(
    start: &Board,
    goal: &Board,
    moves: &[Direction],
) -> Result<Vec<u8>, ReplayError> {
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

    proptest::proptest! {
        /// The keyed replay accepts exactly the paths the board by board one accepts, with the
        /// same tiles, on random paths that loop, leave the board or end elsewhere, on squares
        /// and rectangles; and [`replay`] says what the board by board one says.
        #[test]
        fn keyed_replay_agrees_with_board_by_board(
            shape in proptest::sample::select(vec![(3usize, 3usize), (4, 4), (5, 5), (3, 4), (2, 6), (4, 8)]),
            letters in proptest::collection::vec(0usize..4, 0..400),
            end_at_goal in proptest::bool::ANY,
            no_reversals in proptest::bool::ANY,
        ) {
            let shape = Shape::new(shape.0, shape.1).unwrap();
            let start = Board::blank_last_in(shape);
            let mut moves: Vec<Direction> = Vec::new();
            for direction in letters.iter().map(|&i| Direction::ALL[i]) {
                // Without reversals, short paths rarely come back, so most are judged by keys.
                if !(no_reversals && moves.last() == Some(&direction.opposite())) {
                    moves.push(direction);
                }
            }
            let mut goal = start;
            for &direction in &moves {
                match goal.apply(direction) {
                    Some((next, _)) => goal = next,
                    None => break,
                }
            }
            if !end_at_goal {
                goal = Board::blank_first_in(shape);
            }
            let exact = replay_board_by_board(&start, &goal, &moves);
            match replay_by_keys(&start, &goal, &moves) {
                Some(tiles) => proptest::prop_assert_eq!(Ok(tiles), exact.clone()),
                None => proptest::prop_assert!(exact.is_err(), "declined a sound path"),
            }
            proptest::prop_assert_eq!(replay(&start, &goal, &moves), exact);
        }
    }
}
