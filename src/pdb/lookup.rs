//! What the additive heuristic reads of its tables, shared by its general form (`additive`) and
//! its partitioned form (`partitioned`): each table's lookup, the mirror map and the slot limits.

use std::sync::Arc;

use crate::board::Board;
use crate::pdb::file::PatternTable;
use crate::pdb::packed::Distances;
use crate::pdb::zero_index::ZeroIndex;

/// At most this many tables in one additive set.
pub const MAX_GROUPS: usize = 4;
/// Term slots of the heuristic for presets of at most 7 tables. The state is copied at every
/// node, so its size is felt: 8 slots run the 6-6-6-6 kernel about 30% faster than 16.
pub const NARROW: usize = 8;
/// Term slots of the heuristic for catalogues of up to 15 tables.
pub const WIDE: usize = 16;

/// The mirror image about the main diagonal: the board's tile `t` on cell `c` becomes tile
/// `tile[t]` on cell `cell[c]`. Both maps are involutions.
#[derive(Clone, Debug)]
pub(super) struct Mirror {
    pub(super) tile: [u8; 32],
    pub(super) cell: [u8; 32],
}

impl Mirror {
    /// The mirror map for `goal`, if the goal is its own mirror image (a square, its blank on
    /// the diagonal): a rectangle's transpose is another shape.
    pub(super) fn of(goal: &Board) -> Option<Mirror> {
        let side = goal.shape().square_side()?;
        let transpose = |cell: usize| (cell % side) * side + cell / side;
        let goal_blank = goal.blank();
        if transpose(goal_blank) != goal_blank {
            return None;
        }
        let goal_cell = goal.positions();
        let mut mirror = Mirror {
            tile: [0; 32],
            cell: [0; 32],
        };
        for cell in 0..goal.cells() {
            mirror.cell[cell] = transpose(cell) as u8;
        }
        for (tile, &cell) in goal_cell.iter().enumerate().take(goal.cells()) {
            mirror.tile[tile] = goal.tiles()[transpose(usize::from(cell))];
        }
        Some(mirror)
    }
}

/// What a lookup needs of one table, kept together so the kernel reads one place: the pattern
/// tiles, how entries are indexed, and the entries.
#[derive(Debug)]
pub(super) struct Lookup {
    pub(super) tiles: [u8; 8],
    pub(super) len: usize,
    pub(super) zero: Option<Arc<ZeroIndex>>,
    /// The pattern tiles' distances home, for a packed table: its entries hold only the excess.
    pub(super) distances: Option<Distances>,
    /// How far an entry's index shifts right to give its byte: 1 for a packed table.
    pub(super) shift: u32,
    /// The cells the pattern leaves free, for a zero-aware table stored by blank cell
    /// (`blank_cells`): its entries are indexed by placement rank times this, plus the blank's
    /// place among them.
    pub(super) blank_cells: Option<u32>,
    pub(super) table: Arc<PatternTable>,
}

impl Lookup {
    pub(super) fn tiles(&self) -> &[u8] {
        &self.tiles[..self.len.min(8)]
    }

    pub(super) fn packed(&self) -> bool {
        self.distances.is_some()
    }
}
