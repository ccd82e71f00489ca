//! Helpers shared by the integration tests: the bundled benchmark sets and a small seeded RNG
//! (tests must be reproducible, so no entropy).

#![allow(dead_code)] // each test crate uses a different subset

use tilesolve::batch_file::board_lines;
use tilesolve::{parse_board, Board, Direction};

/// A board from a data file with its published facts.
pub struct Instance {
    pub id: u32,
    pub board: Board,
    pub optimal: usize,
    pub korf1985_nodes: Option<u64>,
}

/// Reads `tests/data/NAME`.
pub fn instances(name: &str) -> Vec<Instance> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    board_lines(&text)
        .map(|line| Instance {
            id: line
                .fact("id")
                .and_then(|v| v.parse().ok())
                .expect("id fact"),
            board: parse_board(line.board).expect("valid board"),
            optimal: line
                .fact("optimal")
                .and_then(|v| v.parse().ok())
                .expect("optimal fact"),
            korf1985_nodes: line.fact("korf1985_nodes").and_then(|v| v.parse().ok()),
        })
        .collect()
}

/// xorshift64*: enough randomness for test boards, fully determined by the seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    /// A uniformly random board of `side` that can reach `goal`.
    pub fn solvable_board(&mut self, goal: &Board) -> Board {
        let cells = goal.cells();
        let mut values: Vec<u64> = (0..cells as u64).collect();
        for i in (1..cells).rev() {
            values.swap(i, self.below(i + 1));
        }
        let board = Board::from_tiles(&values).expect("a permutation is a board");
        if board.check_solvable(goal).is_ok() {
            return board;
        }
        // Swapping two tiles (not the blank) flips the parity.
        let (a, b) = if values[0] != 0 && values[1] != 0 {
            (0, 1)
        } else {
            (cells - 2, cells - 1)
        };
        values.swap(a, b);
        Board::from_tiles(&values).expect("a permutation is a board")
    }

    /// The board reached from `start` by `moves` random moves, never undoing the previous one.
    pub fn walk(&mut self, start: &Board, moves: usize) -> Board {
        let mut board = *start;
        let mut last: Option<Direction> = None;
        let mut made = 0;
        while made < moves {
            let direction = Direction::ALL[self.below(4)];
            if last == Some(direction.opposite()) {
                continue;
            }
            if let Some((next, _)) = board.apply(direction) {
                board = next;
                last = Some(direction);
                made += 1;
            }
        }
        board
    }
}
