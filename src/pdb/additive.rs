//! The pattern database heuristic: the maximum over additive *sets* of the sum of their disjoint
//! patterns' table values (each sum admissible because each table counts only its own tiles'
//! moves, so the maximum is too), maxed with the same on the board's mirror image about the
//! main diagonal when the goal is its own mirror image. Looking a table up on the mirrored board
//! is looking up the transposed pattern's table on the board, so reflection doubles the sets
//! without a byte more of tables.
//!
//! Admissible but not consistent: a placement-only entry is the least number of pattern moves
//! over every position of the blank, so one move can change a term by more than one. IDA* needs
//! only admissibility for optimal answers; A* here reopens boards reached more cheaply, so it
//! stays optimal too.
//!
//! The per-node state holds one term per distinct table (sets share tables) and one per table on
//! the mirror image, so a move recomputes only the terms of the tables holding the moved tile
//! (zero-aware tables too: the blank keeps to its region unless one of the table's tiles moves).

use std::sync::Arc;

use crate::board::{Board, Position};
use crate::heuristic::Heuristic;
use crate::pdb::file::PatternTable;
use crate::pdb::index::rank;
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

/// Terms of every table on the board (`0..SLOTS`) and on its mirror image (the rest). The last
/// slot of each half stays zero: it pads sets of fewer than [`MAX_GROUPS`] tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdbState<const SLOTS: usize> {
    board: [u8; SLOTS],
    mirrored: [u8; SLOTS],
}

/// What a lookup needs of one table, kept together so the kernel reads one place: the pattern
/// tiles, how entries are indexed, and the entries.
#[derive(Debug)]
struct Lookup {
    tiles: [u8; 8],
    len: usize,
    zero: Option<ZeroIndex>,
    table: Arc<PatternTable>,
}

impl Lookup {
    fn tiles(&self) -> &[u8] {
        &self.tiles[..self.len.min(8)]
    }
}

/// The heuristic over at most `SLOTS - 1` distinct tables.
#[derive(Debug)]
pub struct AdditivePdb<const SLOTS: usize = NARROW> {
    cells: usize,
    lookups: Vec<Lookup>,
    /// Each set's tables, padded with the zero slot `SLOTS - 1`.
    sets: Vec<[u8; MAX_GROUPS]>,
    /// Tile -> the tables holding it, as a bit mask.
    tables_of: [u32; 32],
    mirror: Option<Mirror>,
}

impl<const SLOTS: usize> AdditivePdb<SLOTS> {
    /// Most distinct tables this width holds.
    pub const MAX_TABLES: usize = SLOTS - 1;

    /// Combines `tables` into `sets` (each a list of indices into `tables` whose patterns are
    /// disjoint and cover every tile of `goal`); `reflect` adds the mirror lookup when the goal
    /// allows it.
    ///
    /// # Panics
    /// With more than `SLOTS - 1` tables or a set of more than [`MAX_GROUPS`]: callers pick the
    /// width from the table count, and presets stay within [`MAX_GROUPS`].
    pub fn new(
        goal: &Board,
        tables: Vec<Arc<PatternTable>>,
        sets: &[Vec<usize>],
        reflect: bool,
    ) -> Self {
        assert!(tables.len() < SLOTS, "at most {} tables", SLOTS - 1);
        let mut tables_of = [0u32; 32];
        for (i, table) in tables.iter().enumerate() {
            for &tile in &table.spec.tiles {
                tables_of[usize::from(tile)] |= 1 << i;
            }
        }
        let sets = sets
            .iter()
            .map(|set| {
                assert!(set.len() <= MAX_GROUPS, "at most {MAX_GROUPS} tables a set");
                let mut slots = [(SLOTS - 1) as u8; MAX_GROUPS];
                for (slot, &table) in slots.iter_mut().zip(set) {
                    *slot = table as u8;
                }
                slots
            })
            .collect();
        let lookups = tables
            .into_iter()
            .map(|table| {
                let spec = &table.spec;
                let mut tiles = [0u8; 8];
                tiles[..spec.tiles.len()].copy_from_slice(&spec.tiles);
                Lookup {
                    tiles,
                    len: spec.tiles.len(),
                    zero: spec
                        .zero_aware
                        .then(|| ZeroIndex::new(goal.side(), spec.tiles.len())),
                    table,
                }
            })
            .collect();
        let mirror = if reflect { Mirror::of(goal) } else { None };
        AdditivePdb {
            cells: goal.cells(),
            lookups,
            sets,
            tables_of,
            mirror,
        }
    }

    /// Whether the mirror lookup is in use.
    pub fn reflects(&self) -> bool {
        self.mirror.is_some()
    }

    /// Table `i`'s entry for the pattern tiles on `cells` with the blank on `blank`.
    #[inline(always)]
    fn lookup(&self, lookup: &Lookup, cells: impl Iterator<Item = u8> + Clone, blank: u8) -> u8 {
        let entries = lookup.table.entries();
        match &lookup.zero {
            None => entries[rank(self.cells, cells) as usize],
            Some(zero) => zero.value(entries, cells, blank),
        }
    }

    #[inline(always)]
    fn term(&self, i: usize, position: &Position) -> u8 {
        let lookup = &self.lookups[i];
        let cells = lookup
            .tiles()
            .iter()
            .map(|&t| position.cells[usize::from(t) & 31]);
        self.lookup(lookup, cells, position.cells[0])
    }

    #[inline(always)]
    fn mirror_term(&self, mirror: &Mirror, i: usize, position: &Position) -> u8 {
        let lookup = &self.lookups[i];
        let cells = lookup.tiles().iter().map(|&t| {
            let original = mirror.tile[usize::from(t) & 31];
            mirror.cell[usize::from(position.cells[usize::from(original) & 31]) & 31]
        });
        let blank = mirror.cell[usize::from(position.cells[0]) & 31];
        self.lookup(lookup, cells, blank)
    }

    #[inline(always)]
    fn best_sum(&self, terms: &[u8; SLOTS]) -> u32 {
        let mut best = 0;
        for set in &self.sets {
            let mut sum = 0;
            for &slot in set {
                sum += u32::from(terms[usize::from(slot) % SLOTS]);
            }
            best = best.max(sum);
        }
        best
    }
}

impl<const SLOTS: usize> Heuristic for AdditivePdb<SLOTS> {
    type State = PdbState<SLOTS>;

    fn init(&self, position: &Position) -> PdbState<SLOTS> {
        let mut state = PdbState {
            board: [0; SLOTS],
            mirrored: [0; SLOTS],
        };
        for i in 0..self.lookups.len() {
            state.board[i] = self.term(i, position);
            if let Some(mirror) = &self.mirror {
                state.mirrored[i] = self.mirror_term(mirror, i, position);
            }
        }
        state
    }

    #[inline(always)]
    fn value(&self, state: PdbState<SLOTS>) -> u32 {
        let value = self.best_sum(&state.board);
        if self.mirror.is_some() {
            value.max(self.best_sum(&state.mirrored))
        } else {
            value
        }
    }

    #[inline(always)]
    fn after_move(
        &self,
        position: &Position,
        mut state: PdbState<SLOTS>,
        tile: u8,
        _from: usize,
        _to: usize,
    ) -> PdbState<SLOTS> {
        let mut tables = self.tables_of[usize::from(tile) & 31];
        while tables != 0 {
            let i = tables.trailing_zeros() as usize;
            tables &= tables - 1;
            state.board[i % SLOTS] = self.term(i, position);
        }
        if let Some(mirror) = &self.mirror {
            let mirrored = mirror.tile[usize::from(tile) & 31];
            let mut tables = self.tables_of[usize::from(mirrored) & 31];
            while tables != 0 {
                let i = tables.trailing_zeros() as usize;
                tables &= tables - 1;
                state.mirrored[i % SLOTS] = self.mirror_term(mirror, i, position);
            }
        }
        state
    }
}
