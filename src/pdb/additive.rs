//! The pattern database heuristic: the sum of disjoint patterns' table values (admissible because
//! each table counts only its own tiles' moves), maxed with the same sum on the board's mirror
//! image about the main diagonal when the goal is its own mirror image.
//!
//! Admissible but not consistent: a table entry is the least number of pattern moves over every
//! position of the blank, so one move can change a term by more than one. IDA* needs only
//! admissibility for optimal answers; A* here reopens boards reached more cheaply, so it stays
//! optimal too.
//!
//! The per-node state holds every term, so a move recomputes one rank on the board and one on
//! its mirror: the moved tile belongs to exactly one pattern in each.

use std::sync::Arc;

use crate::board::{Board, Position};
use crate::heuristic::Heuristic;
use crate::pdb::file::PatternTable;
use crate::pdb::index::rank;

/// At most this many patterns (6-6-6-6 has four).
pub const MAX_PATTERNS: usize = 4;
const NO_GROUP: u8 = u8::MAX;

/// The mirror image about the main diagonal: the board's tile `t` on cell `c` becomes tile
/// `tile[t]` on cell `cell[c]`. Both maps are involutions.
#[derive(Clone, Debug)]
struct Mirror {
    tile: [u8; 32],
    cell: [u8; 32],
}

impl Mirror {
    /// The mirror map for `goal`, if the goal is its own mirror image (its blank on the diagonal).
    fn of(goal: &Board) -> Option<Mirror> {
        let side = goal.side();
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

/// Terms of the sum on the board (`0..MAX_PATTERNS`) and on its mirror image (the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdbState {
    terms: [u8; 2 * MAX_PATTERNS],
}

#[derive(Debug)]
pub struct AdditivePdb {
    cells: usize,
    tables: Vec<Arc<PatternTable>>,
    /// Tile -> index of its pattern.
    group_of: [u8; 32],
    mirror: Option<Mirror>,
}

impl AdditivePdb {
    /// Combines tables whose patterns are disjoint and cover every tile of `goal`; `reflect` adds
    /// the mirror lookup when the goal allows it.
    pub fn new(goal: &Board, tables: Vec<Arc<PatternTable>>, reflect: bool) -> AdditivePdb {
        let mut group_of = [NO_GROUP; 32];
        for (group, table) in tables.iter().enumerate() {
            for &tile in &table.spec.tiles {
                group_of[usize::from(tile)] = group as u8;
            }
        }
        let mirror = if reflect { Mirror::of(goal) } else { None };
        AdditivePdb {
            cells: goal.cells(),
            tables,
            group_of,
            mirror,
        }
    }

    /// Whether the mirror lookup is in use.
    pub fn reflects(&self) -> bool {
        self.mirror.is_some()
    }

    #[inline(always)]
    fn term(&self, group: usize, position: &Position) -> u8 {
        let table = &self.tables[group];
        let index = rank(
            self.cells,
            table
                .spec
                .tiles
                .iter()
                .map(|&t| position.cells[usize::from(t) & 31]),
        );
        table.entries()[index as usize]
    }

    #[inline(always)]
    fn mirror_term(&self, mirror: &Mirror, group: usize, position: &Position) -> u8 {
        let table = &self.tables[group];
        let cells = table.spec.tiles.iter().map(|&t| {
            let original = mirror.tile[usize::from(t) & 31];
            mirror.cell[usize::from(position.cells[usize::from(original) & 31]) & 31]
        });
        table.entries()[rank(self.cells, cells) as usize]
    }
}

impl Heuristic for AdditivePdb {
    type State = PdbState;

    fn init(&self, position: &Position) -> PdbState {
        let mut terms = [0u8; 2 * MAX_PATTERNS];
        for group in 0..self.tables.len() {
            terms[group] = self.term(group, position);
            if let Some(mirror) = &self.mirror {
                terms[MAX_PATTERNS + group] = self.mirror_term(mirror, group, position);
            }
        }
        PdbState { terms }
    }

    #[inline(always)]
    fn value(&self, state: PdbState) -> u32 {
        let sum = |terms: &[u8]| terms.iter().map(|&t| u32::from(t)).sum::<u32>();
        sum(&state.terms[..MAX_PATTERNS]).max(sum(&state.terms[MAX_PATTERNS..]))
    }

    #[inline(always)]
    fn after_move(
        &self,
        position: &Position,
        mut state: PdbState,
        tile: u8,
        _from: usize,
        _to: usize,
    ) -> PdbState {
        let group = usize::from(self.group_of[usize::from(tile) & 31]);
        state.terms[group & (MAX_PATTERNS - 1)] = self.term(group, position);
        if let Some(mirror) = &self.mirror {
            let mirrored =
                usize::from(self.group_of[usize::from(mirror.tile[usize::from(tile) & 31]) & 31]);
            state.terms[MAX_PATTERNS + (mirrored & (MAX_PATTERNS - 1))] =
                self.mirror_term(mirror, mirrored, position);
        }
        state
    }
}
