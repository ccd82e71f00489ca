//! The four directions the blank moves in. Depends on nothing else in the crate, so the board,
//! the move tables and the parser can all use it.

use std::fmt;

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

    /// The cell the blank reaches from `cell` on a board of `rows` x `cols`, if it stays on the
    /// board.
    pub fn step_within(self, cell: usize, rows: usize, cols: usize) -> Option<usize> {
        let (row, col) = (cell / cols, cell % cols);
        match self {
            Direction::Up if row > 0 => Some(cell - cols),
            Direction::Down if row + 1 < rows => Some(cell + cols),
            Direction::Left if col > 0 => Some(cell - 1),
            Direction::Right if col + 1 < cols => Some(cell + 1),
            _ => None,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}
