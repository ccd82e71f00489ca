//! Boards: a validated arrangement of tiles on a rectangular grid, and the goal it is solved
//! towards.
//!
//! A board is stored as a fixed `[u8; MAX_CELLS]` so it is `Copy` and never allocates; only the
//! first `rows * cols` cells are meaningful. Tile 0 is the blank. A square is inferred from a
//! count of values (9, 16, 25); any other rectangle of at most [`MAX_CELLS`] cells is given as a
//! [`Shape`].

use std::fmt;

use thiserror::Error;

use crate::direction::Direction;

/// Largest supported side of a square inferred from its count (5x5, the 24-puzzle).
pub const MAX_SIDE: usize = 5;
/// Cells of the largest supported board (a rectangle such as 4x8; the kernel's padded arrays).
pub const MAX_CELLS: usize = 32;
/// Longest row or column of a supported rectangle (2x16).
pub const MAX_EDGE: usize = MAX_CELLS / 2;
/// Squares inferred from a count of values: 3x3, 4x4 and 5x5.
pub const SUPPORTED_SIDES: [usize; 3] = [3, 4, 5];

/// A board's rows and columns: 2 <= each, at most [`MAX_CELLS`] cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    rows: u8,
    cols: u8,
}

impl Shape {
    /// `rows` x `cols`, if supported.
    pub fn new(rows: usize, cols: usize) -> Result<Shape, BoardError> {
        if rows < 2 || cols < 2 || rows * cols > MAX_CELLS {
            return Err(BoardError::UnsupportedShape { rows, cols });
        }
        Ok(Shape {
            rows: rows as u8,
            cols: cols as u8,
        })
    }

    /// The `side` x `side` square (a supported side: 2 to 5).
    pub fn square(side: usize) -> Shape {
        Shape {
            rows: side as u8,
            cols: side as u8,
        }
    }

    pub fn rows(self) -> usize {
        usize::from(self.rows)
    }

    pub fn cols(self) -> usize {
        usize::from(self.cols)
    }

    pub fn cells(self) -> usize {
        self.rows() * self.cols()
    }

    /// The side of a square shape; None for any other rectangle.
    pub fn square_side(self) -> Option<usize> {
        (self.rows == self.cols).then_some(self.rows())
    }
}

/// `RxC`, rows then columns, as `--size` and the `size=` fact take it.
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

impl std::str::FromStr for Shape {
    type Err = BoardError;

    fn from_str(text: &str) -> Result<Shape, BoardError> {
        let refused = || BoardError::BadShape {
            text: text.chars().take(20).collect(),
        };
        let (rows, cols) = text.trim().split_once(['x', 'X']).ok_or_else(refused)?;
        let rows = rows.trim().parse().map_err(|_| refused())?;
        let cols = cols.trim().parse().map_err(|_| refused())?;
        Shape::new(rows, cols)
    }
}

/// Tiles by cell, padded to 32 cells: the kernel's working copy of a board. The padding lets hot
/// loops index with `cell & 31`, which the compiler proves in bounds without `unsafe`.
pub type PaddedTiles = [u8; 32];

/// Why a board (or a goal) was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BoardError {
    #[error("empty board: no tile values given")]
    Empty,
    #[error("unexpected '{}' at column {column}", found.escape_debug())]
    UnexpectedChar { found: char, column: usize },
    #[error("bytes that are not UTF-8 text at column {column} (is this a binary file?)")]
    NotText { column: usize },
    #[error("{chars} characters is far too long for a board (at most {max})")]
    TooLong { chars: usize, max: usize },
    #[error("missing value before '{found}' at column {column}")]
    MissingValue { found: char, column: usize },
    #[error("unbalanced braces: {detail}")]
    Braces { detail: String },
    #[error("row {row} has {len} values but row 1 has {expected}")]
    RaggedRows {
        row: usize,
        len: usize,
        expected: usize,
    },
    #[error(
        "{count} values is a {side}x{side} board, an unsupported size (supported: 3x3, 4x4, 5x5)"
    )]
    UnsupportedSide { count: usize, side: usize },
    #[error(
        "{count} values is not a square board (3x3 = 9, 4x4 = 16, 5x5 = 25 values); a rectangle \
         needs its shape: --size RxC, a ` # size=RxC` fact, or its rows in braces ({{{{1,2,3}},{{4,5,0}}}})"
    )]
    UnsupportedCount { count: usize },
    #[error("tile {tile} is out of range (a {shape} board has tiles 0..={max})")]
    OutOfRange { tile: u64, shape: Shape, max: usize },
    #[error(
        "{rows}x{cols} is not a supported shape: rows and columns of at least 2, at most {MAX_CELLS} cells"
    )]
    UnsupportedShape { rows: usize, cols: usize },
    #[error("size '{text}' is not rows x columns, e.g. 3x4")]
    BadShape { text: String },
    #[error("{count} values do not fill a {shape} board ({} cells)", shape.cells())]
    CountNotShape { count: usize, shape: Shape },
    #[error("tile {tile} appears twice")]
    Duplicate { tile: u8 },
    #[error("board is {board} but the goal is {goal}")]
    SizeMismatch { board: Shape, goal: Shape },
    #[error(
        "board is unsolvable: its permutation parity does not match the goal's, so no sequence of \
         moves reaches the goal"
    )]
    Unsolvable,
}

/// A validated board: every tile `0..rows*cols` exactly once.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Board {
    shape: Shape,
    tiles: [u8; MAX_CELLS],
}

impl Board {
    /// Builds a square board from its tiles, row by row. The count must be 9, 16 or 25.
    pub fn from_tiles(values: &[u64]) -> Result<Board, BoardError> {
        if values.is_empty() {
            return Err(BoardError::Empty);
        }
        let side = side_for_count(values.len())?;
        Board::from_tiles_in(values, Shape::square(side))
    }

    /// Builds a board of `shape` from its tiles, row by row.
    pub fn from_tiles_in(values: &[u64], shape: Shape) -> Result<Board, BoardError> {
        let count = values.len();
        if count == 0 {
            return Err(BoardError::Empty);
        }
        if count != shape.cells() {
            return Err(BoardError::CountNotShape { count, shape });
        }
        let mut tiles = [0u8; MAX_CELLS];
        let mut seen = [false; MAX_CELLS];
        for (cell, &value) in values.iter().enumerate() {
            if value >= count as u64 {
                return Err(BoardError::OutOfRange {
                    tile: value,
                    shape,
                    max: count - 1,
                });
            }
            let tile = value as u8;
            if seen[tile as usize] {
                return Err(BoardError::Duplicate { tile });
            }
            seen[tile as usize] = true;
            tiles[cell] = tile;
        }
        Ok(Board { shape, tiles })
    }

    /// The square goal with tiles in order and the blank last: `1,2,...,N-1,0`.
    pub fn blank_last(side: usize) -> Board {
        Board::blank_last_in(Shape::square(side))
    }

    /// Korf's square goal, blank first: `0,1,...,N-1`.
    pub fn blank_first(side: usize) -> Board {
        Board::blank_first_in(Shape::square(side))
    }

    /// The goal of `shape` with tiles in order and the blank last.
    pub fn blank_last_in(shape: Shape) -> Board {
        let mut tiles = [0u8; MAX_CELLS];
        for (cell, tile) in tiles.iter_mut().enumerate().take(shape.cells() - 1) {
            *tile = cell as u8 + 1;
        }
        Board { shape, tiles }
    }

    /// The goal of `shape` with the blank first.
    pub fn blank_first_in(shape: Shape) -> Board {
        let mut tiles = [0u8; MAX_CELLS];
        for (cell, tile) in tiles.iter_mut().enumerate().take(shape.cells()) {
            *tile = cell as u8;
        }
        Board { shape, tiles }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The width: the side of a square board (what pattern tables, presets and the store's
    /// keys of square boards are named by).
    pub fn side(&self) -> usize {
        self.shape.cols()
    }

    pub fn cells(&self) -> usize {
        self.shape.cells()
    }

    /// The tiles, row by row.
    pub fn tiles(&self) -> &[u8] {
        &self.tiles[..self.cells()]
    }

    /// The tiles padded to 32 cells (padding cells hold 0 and are never read as board cells).
    pub fn padded(&self) -> PaddedTiles {
        self.tiles
    }

    /// The blank's cell.
    pub fn blank(&self) -> usize {
        self.tiles().iter().position(|&t| t == 0).unwrap_or(0)
    }

    /// The cell of every tile: `positions()[tile] = cell`.
    pub fn positions(&self) -> [u8; MAX_CELLS] {
        let mut positions = [0u8; MAX_CELLS];
        for (cell, &tile) in self.tiles().iter().enumerate() {
            positions[tile as usize] = cell as u8;
        }
        positions
    }

    /// The board after the blank moves one step in `direction`, if that stays on the board.
    /// Also returns the tile that moved.
    pub fn apply(&self, direction: Direction) -> Option<(Board, u8)> {
        let blank = self.blank();
        let target = direction.step_within(blank, self.shape.rows(), self.shape.cols())?;
        let mut next = *self;
        let tile = next.tiles[target];
        next.tiles[blank] = tile;
        next.tiles[target] = 0;
        Some((next, tile))
    }

    /// Checks that `goal` has this board's size and that the goal is reachable.
    ///
    /// Every move swaps the blank with a neighbour: one transposition, and one step of the
    /// blank's taxicab distance. So a board reaches the goal exactly when the parity of the
    /// permutation taking it to the goal equals the parity of the blank's distance to its goal
    /// cell. This holds for any width, odd or even, and any number of rows, which is why no
    /// odd/even-width case split is needed (the textbook rules for odd and even widths are this
    /// one with the goal's blank in its corner).
    pub fn check_solvable(&self, goal: &Board) -> Result<(), BoardError> {
        if self.shape != goal.shape {
            return Err(BoardError::SizeMismatch {
                board: self.shape,
                goal: goal.shape,
            });
        }
        let goal_cell = goal.positions();
        let cells = self.cells();
        let mut visited = [false; MAX_CELLS];
        let mut transpositions = 0;
        for start in 0..cells {
            let mut cell = start;
            let mut cycle_len = 0;
            while !visited[cell] {
                visited[cell] = true;
                cell = goal_cell[self.tiles[cell] as usize] as usize;
                cycle_len += 1;
            }
            if cycle_len > 0 {
                transpositions += cycle_len - 1;
            }
        }
        let cols = self.shape.cols();
        let (blank, goal_blank) = (self.blank(), goal.blank());
        let blank_distance =
            (blank / cols).abs_diff(goal_blank / cols) + (blank % cols).abs_diff(goal_blank % cols);
        if transpositions % 2 == blank_distance % 2 {
            Ok(())
        } else {
            Err(BoardError::Unsolvable)
        }
    }
}

/// The side of a square board with `count` cells, if supported.
fn side_for_count(count: usize) -> Result<usize, BoardError> {
    let side = (1..=count)
        .take_while(|s| s * s <= count)
        .last()
        .unwrap_or(0);
    if side * side != count {
        return Err(BoardError::UnsupportedCount { count });
    }
    if !SUPPORTED_SIDES.contains(&side) {
        return Err(BoardError::UnsupportedSide { count, side });
    }
    Ok(side)
}

/// The arrangement a board is solved towards. Named goals adapt to the board's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Tiles in order, blank last: `1,2,...,N-1,0`. The default.
    BlankLast,
    /// Korf's convention, blank first: `0,1,...,N-1`.
    BlankFirst,
    /// A given board; only boards of its size can be solved towards it.
    Custom(Board),
}

impl Goal {
    /// The goal board for a square board of `side`.
    pub fn for_side(&self, side: usize) -> Board {
        self.for_shape(Shape::square(side))
    }

    /// The goal board for a board of `shape`.
    pub fn for_shape(&self, shape: Shape) -> Board {
        match self {
            Goal::BlankLast => Board::blank_last_in(shape),
            Goal::BlankFirst => Board::blank_first_in(shape),
            Goal::Custom(board) => *board,
        }
    }
}

impl fmt::Display for Goal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Goal::BlankLast => f.write_str("blank-last"),
            Goal::BlankFirst => f.write_str("korf"),
            Goal::Custom(board) => write!(f, "{board}"),
        }
    }
}

/// The kernel's working copy of a board: tiles by cell and the cell of every tile, both padded to
/// 32 entries so hot loops index with `& 31`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub tiles: PaddedTiles,
    pub cells: PaddedTiles,
}

impl Position {
    pub fn new(board: &Board) -> Position {
        let cells = board.positions();
        Position {
            tiles: board.padded(),
            cells,
        }
    }

    /// Slides the tile on `from` into the blank on `to` and returns it. Sliding back from `to` to
    /// `from` undoes the move.
    #[inline(always)]
    pub fn slide(&mut self, from: usize, to: usize) -> u8 {
        let tile = self.tiles[from & 31];
        self.tiles[to & 31] = tile;
        self.tiles[from & 31] = 0;
        self.cells[usize::from(tile) & 31] = to as u8;
        self.cells[0] = from as u8;
        tile
    }
}

/// Comma-separated tiles, row by row: the form every input parser accepts.
impl fmt::Display for Board {
    /// A square's tiles separated by commas; a rectangle's rows in braces
    /// (`{{1,2,3},{4,5,0}}`), since its count of tiles does not tell its shape and every
    /// reader (a task, a stored item, a results file) parses the text back. Written into one
    /// buffer and passed on in one call: the coordinator writes a board's text for every task
    /// and every stored item, and a formatting call per tile was most of that.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // At most two digits and a separator a cell, a brace and a separator a row, the outer
        // pair: within four bytes a cell.
        let mut text = [0u8; 4 * MAX_CELLS + 4];
        let mut len = 0;
        let mut push = |byte: u8| {
            text[len] = byte;
            len += 1;
        };
        let braced = self.shape.square_side().is_none();
        let cols = self.shape.cols();
        if braced {
            push(b'{');
        }
        for (cell, &tile) in self.tiles().iter().enumerate() {
            let row_start = cell % cols == 0;
            if cell > 0 && (!braced || !row_start) {
                push(b',');
            }
            if braced && row_start {
                if cell > 0 {
                    push(b'}');
                    push(b',');
                }
                push(b'{');
            }
            if tile >= 10 {
                push(b'0' + tile / 10);
            }
            push(b'0' + tile % 10);
        }
        if braced {
            push(b'}');
            push(b'}');
        }
        f.write_str(std::str::from_utf8(&text[..len]).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Board({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(values: &[u64]) -> Result<Board, BoardError> {
        Board::from_tiles(values)
    }

    #[test]
    fn sizes() {
        assert_eq!(
            board(&[1, 2, 3]),
            Err(BoardError::UnsupportedCount { count: 3 })
        );
        let six: Vec<u64> = (0..36).collect();
        assert_eq!(
            board(&six),
            Err(BoardError::UnsupportedSide { count: 36, side: 6 })
        );
        assert!(board(&(0..25).collect::<Vec<_>>()).is_ok());
    }

    #[test]
    fn duplicates_and_range() {
        assert_eq!(
            board(&[1, 1, 2, 3, 4, 5, 6, 7, 0]),
            Err(BoardError::Duplicate { tile: 1 })
        );
        assert_eq!(
            board(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
            Err(BoardError::OutOfRange {
                tile: 9,
                shape: Shape::square(3),
                max: 8
            })
        );
    }

    #[test]
    fn solvability_matches_known_cases() {
        let goal = Board::blank_last(4);
        assert!(goal.check_solvable(&goal).is_ok());
        // Swapping two tiles of the goal (Sam Loyd's 14-15 puzzle) is unsolvable.
        let mut swapped: Vec<u64> = goal.tiles().iter().map(|&t| t as u64).collect();
        swapped.swap(13, 14);
        assert_eq!(
            board(&swapped).unwrap().check_solvable(&goal),
            Err(BoardError::Unsolvable)
        );
        // Korf's goal (blank first) is one 9-cycle plus an even blank distance away from the
        // default goal on 3x3, but one 16-cycle (odd) plus an even distance on 4x4.
        assert!(Board::blank_first(3)
            .check_solvable(&Board::blank_last(3))
            .is_ok());
        assert!(Board::blank_first(4)
            .check_solvable(&Board::blank_last(4))
            .is_err());
        assert_eq!(
            Board::blank_last(3).check_solvable(&Board::blank_last(4)),
            Err(BoardError::SizeMismatch {
                board: Shape::square(3),
                goal: Shape::square(4)
            })
        );
    }

    #[test]
    fn apply_moves_blank() {
        let goal = Board::blank_last(3);
        let (up, tile) = goal.apply(Direction::Up).unwrap();
        assert_eq!(up.to_string(), "1,2,3,4,5,0,7,8,6");
        assert_eq!(tile, 6);
        assert!(goal.apply(Direction::Down).is_none());
        assert!(goal.apply(Direction::Right).is_none());
    }

    #[test]
    fn text_is_the_tiles_joined_by_commas_and_parses_back() {
        for side in SUPPORTED_SIDES {
            let goal = Board::blank_last(side);
            let board = [
                Direction::Up,
                Direction::Left,
                Direction::Up,
                Direction::Left,
            ]
            .iter()
            .fold(goal, |board, &d| board.apply(d).unwrap().0);
            let joined: Vec<String> = board.tiles().iter().map(|t| t.to_string()).collect();
            assert_eq!(board.to_string(), joined.join(","));
            assert_eq!(crate::parse_board(&board.to_string()), Ok(board));
        }
    }

    #[test]
    fn a_rectangle_is_written_in_rows_and_parses_back_to_its_shape() {
        let shape = Shape::new(2, 3).unwrap();
        assert_eq!(Board::blank_last_in(shape).to_string(), "{{1,2,3},{4,5,0}}");
        for (rows, cols) in [(2, 16), (16, 2), (4, 8), (5, 6), (3, 4), (6, 5)] {
            let shape = Shape::new(rows, cols).unwrap();
            for goal in [Board::blank_last_in(shape), Board::blank_first_in(shape)] {
                let board = goal
                    .apply(Direction::Left)
                    .unwrap_or_else(|| goal.apply(Direction::Right).unwrap())
                    .0;
                assert_eq!(crate::parse_board(&board.to_string()), Ok(board), "{shape}");
            }
        }
    }
}
