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
use crate::pdb::blank_cells;
use crate::pdb::file::PatternTable;
use crate::pdb::index::rank;
use crate::pdb::lookup::{Lookup, Mirror, MAX_GROUPS, NARROW};
use crate::pdb::packed::{self, Distances};
use crate::pdb::partition::Partition;
use crate::pdb::prefetch;
use crate::pdb::shuffle_rank::{Cells, ShuffleRank};
use crate::pdb::zero_index::ZeroIndex;

/// Terms of every table on the board (`0..SLOTS`) and on its mirror image (the rest). The last
/// slot of each half stays zero: it pads sets of fewer than [`MAX_GROUPS`] tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdbState<const SLOTS: usize> {
    board: [u8; SLOTS],
    mirrored: [u8; SLOTS],
    /// The set with the largest sum when the terms were last all read (sets on the mirror image
    /// numbered after the board's): the first one a child checks against its limit.
    best: u8,
}

/// The reads a move needs, asked for and not yet waited on: the tables holding the moved tile
/// on the board and on the mirror image, and where each is read first.
struct Probes<const SLOTS: usize> {
    tables: u32,
    index: [u32; SLOTS],
    mirrored_tables: u32,
    mirrored_index: [u32; SLOTS],
}

/// The heuristic over at most `SLOTS - 1` distinct tables.
#[derive(Debug)]
pub struct AdditivePdb<const SLOTS: usize = NARROW> {
    cells: usize,
    pub(super) lookups: Vec<Lookup>,
    /// Each table's vector ranking, when `vector` says every table has one (boards of at most 32
    /// cells, on builds with the instructions); else tables are ranked one tile at a time. A
    /// fixed array, so the kernel indexes it with a mask and no bounds check.
    pub(super) shuffles: [ShuffleRank; SLOTS],
    pub(super) vector: bool,
    /// Each set's tables, padded with the zero slot `SLOTS - 1`.
    sets: Vec<[u8; MAX_GROUPS]>,
    /// Tile -> the tables holding it, as a bit mask.
    tables_of: [u32; 32],
    /// Per set, tile -> the set's table holding it.
    holder: Vec<[u8; 32]>,
    pub(super) mirror: Option<Mirror>,
    /// Set when the one set's tables partition the tiles: the solver's kernel then runs
    /// [`Partitioned`](super::Partitioned).
    pub(super) partition: Option<Partition>,
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
        let holder = sets
            .iter()
            .map(|set| {
                let mut holder = [0u8; 32];
                for &table in set {
                    for &tile in &tables[table].spec.tiles {
                        holder[usize::from(tile) & 31] = table as u8;
                    }
                }
                holder
            })
            .collect();
        let sets: Vec<[u8; MAX_GROUPS]> = sets
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
        let mirror = if reflect { Mirror::of(goal) } else { None };
        // One index per pattern size, shared: its region masks are read at every off-main
        // lookup, so one copy stays in cache where one per table would not.
        let mut zero_indices: Vec<Arc<ZeroIndex>> = Vec::new();
        let lookups: Vec<Lookup> = tables
            .into_iter()
            .map(|table| {
                let spec = &table.spec;
                let k = spec.tiles.len();
                let mut tiles = [0u8; 8];
                tiles[..k].copy_from_slice(&spec.tiles);
                let by_blank = spec.zero_aware && table.packed;
                let zero = (spec.zero_aware && !by_blank).then(|| {
                    match zero_indices.iter().find(|index| index.tiles() == k) {
                        Some(index) => Arc::clone(index),
                        None => {
                            let index = Arc::new(ZeroIndex::new(goal.side(), k));
                            zero_indices.push(Arc::clone(&index));
                            index
                        }
                    }
                });
                Lookup {
                    tiles,
                    len: k,
                    zero,
                    distances: table.packed.then(|| Distances::new(goal, &spec.tiles)),
                    shift: u32::from(table.packed),
                    blank_cells: by_blank.then_some((goal.cells() - k) as u32),
                    table,
                }
            })
            .collect();
        let mirror_maps = mirror
            .as_ref()
            .map(|mirror| (&mirror.tile[..], &mirror.cell[..]));
        let mut shuffles = [ShuffleRank::UNUSED; SLOTS];
        let mut vector = true;
        for (shuffle, lookup) in shuffles.iter_mut().zip(&lookups) {
            match ShuffleRank::new(goal.cells(), lookup.tiles(), mirror_maps) {
                Some(rank) => *shuffle = rank,
                None => vector = false,
            }
        }
        let partition = Partition::of(goal, &tables_of, &sets, &lookups, mirror.as_ref());
        AdditivePdb {
            cells: goal.cells(),
            lookups,
            shuffles,
            vector,
            sets,
            tables_of,
            holder,
            mirror,
            partition,
        }
    }

    /// Bytes of entries in the tables read.
    pub fn table_bytes(&self) -> u64 {
        self.lookups
            .iter()
            .map(|lookup| lookup.table.len() as u64)
            .sum()
    }

    /// Whether the mirror lookup is in use.
    pub fn reflects(&self) -> bool {
        self.mirror.is_some()
    }

    /// The pattern tiles' cells on the board, in table `i`'s pattern order.
    #[inline(always)]
    pub(super) fn cells<'p>(
        &'p self,
        i: usize,
        position: &'p Position,
    ) -> impl Iterator<Item = u8> + Clone + 'p {
        self.lookups[i]
            .tiles()
            .iter()
            .map(|&t| position.cells[usize::from(t) & 31])
    }

    /// The cells on the mirror image of the tiles of table `i`'s pattern.
    #[inline(always)]
    pub(super) fn mirrored_cells<'p>(
        &'p self,
        mirror: &'p Mirror,
        i: usize,
        position: &'p Position,
    ) -> impl Iterator<Item = u8> + Clone + 'p {
        self.lookups[i].tiles().iter().map(|&t| {
            let original = mirror.tile[usize::from(t) & 31];
            mirror.cell[usize::from(position.cells[usize::from(original) & 31]) & 31]
        })
    }

    /// Table `i`'s placement rank on the board.
    #[inline(always)]
    pub(super) fn rank_of(&self, i: usize, position: &Position) -> u32 {
        if self.vector {
            self.shuffles[i % SLOTS].rank(Cells::of(&position.cells))
        } else {
            rank(self.cells, self.cells(i, position))
        }
    }

    /// Table `i`'s placement rank on the mirror image.
    #[inline(always)]
    pub(super) fn rank_of_mirrored(&self, mirror: &Mirror, i: usize, position: &Position) -> u32 {
        if self.vector {
            self.shuffles[i % SLOTS].rank_mirrored(Cells::of(&position.cells))
        } else {
            rank(self.cells, self.mirrored_cells(mirror, i, position))
        }
    }

    /// Where table `i`'s entry for the board is read first (its placement rank), asking for that
    /// byte's cache line at once so that the reads of several tables overlap.
    #[inline(always)]
    pub(super) fn probe(&self, i: usize, position: &Position) -> u32 {
        let rank = self.rank_of(i, position);
        let cells = self.cells(i, position);
        self.prefetch(i, self.entry(i, rank, cells, position.cells[0]));
        rank
    }

    /// [`Self::probe`] for table `i` on the mirror image.
    #[inline(always)]
    pub(super) fn probe_mirrored(&self, mirror: &Mirror, i: usize, position: &Position) -> u32 {
        let rank = self.rank_of_mirrored(mirror, i, position);
        let cells = self.mirrored_cells(mirror, i, position);
        let blank = mirror.cell[usize::from(position.cells[0]) & 31];
        self.prefetch(i, self.entry(i, rank, cells, blank));
        rank
    }

    /// Asks for the cache line of table `i`'s entry `index`, and returns the index.
    #[inline(always)]
    pub(super) fn prefetch(&self, i: usize, index: u32) -> u32 {
        let lookup = &self.lookups[i];
        if let Some(entry) = lookup.table.entries().get((index >> lookup.shift) as usize) {
            prefetch(entry);
        }
        index
    }

    /// The index of table `i`'s first entry for placement `rank` (its tiles on `cells`) with the
    /// blank on `blank`: the rank itself unless the table is stored by blank cell.
    #[inline(always)]
    fn entry(&self, i: usize, rank: u32, cells: impl Iterator<Item = u8>, blank: u8) -> u32 {
        match self.lookups[i].blank_cells {
            None => rank,
            Some(free) => {
                let occupied = cells.fold(0u32, |m, c| m | 1 << (c & 31));
                blank_cells::index(rank, free, blank_cells::blank_place(occupied, blank.into()))
            }
        }
    }

    /// Table `i`'s term, from the first read at placement rank `index` (from [`Self::probe`] on
    /// `cells`).
    #[inline(always)]
    fn read(&self, i: usize, index: u32, cells: impl Iterator<Item = u8> + Clone, blank: u8) -> u8 {
        let lookup = &self.lookups[i];
        let entries = lookup.table.entries();
        if let Some(distances) = &lookup.distances {
            let entry = self.entry(i, index, cells.clone(), blank);
            return distances.of(cells) + 2 * packed::half_excess(entries, entry);
        }
        let first = entries[index as usize];
        match &lookup.zero {
            None => first,
            Some(zero) => zero.resolve(entries, first, cells, blank),
        }
    }

    /// Table `i`'s halved excess at `index`, when it is packed.
    #[inline(always)]
    pub(super) fn half_excess(&self, i: usize, index: u32) -> u8 {
        packed::half_excess(self.lookups[i].table.entries(), index)
    }

    #[inline(always)]
    fn term(&self, i: usize, position: &Position) -> u8 {
        self.read_term(i, self.probe(i, position), None, position)
    }

    #[inline(always)]
    fn mirror_term(&self, mirror: &Mirror, i: usize, position: &Position) -> u8 {
        let index = self.probe_mirrored(mirror, i, position);
        self.read_term(i, index, Some(mirror), position)
    }

    /// Table `i`'s term at `index`, on the board, or on the mirror image given.
    #[inline(always)]
    pub(super) fn read_term(
        &self,
        i: usize,
        index: u32,
        mirror: Option<&Mirror>,
        position: &Position,
    ) -> u8 {
        match mirror {
            Some(mirror) => {
                let blank = mirror.cell[usize::from(position.cells[0]) & 31];
                self.read(i, index, self.mirrored_cells(mirror, i, position), blank)
            }
            None => self.read(i, index, self.cells(i, position), position.cells[0]),
        }
    }

    /// [`Self::read_term`] into `state`'s term of table `i` on that side.
    #[inline(always)]
    fn read_into(
        &self,
        i: usize,
        index: u32,
        mirror: Option<&Mirror>,
        position: &Position,
        state: &mut PdbState<SLOTS>,
    ) {
        let term = self.read_term(i, index, mirror, position);
        match mirror {
            Some(_) => state.mirrored[i % SLOTS] = term,
            None => state.board[i % SLOTS] = term,
        }
    }

    #[inline(always)]
    fn sum(&self, set: usize, terms: &[u8; SLOTS]) -> u32 {
        self.sets[set]
            .iter()
            .map(|&slot| u32::from(terms[usize::from(slot) % SLOTS]))
            .sum()
    }

    /// The largest set sum and its set (mirror-image sets numbered after the board's).
    #[inline(always)]
    fn best_set(&self, state: &PdbState<SLOTS>) -> (u32, u8) {
        let mut best = (0, 0);
        for set in 0..self.sets.len() {
            let sum = self.sum(set, &state.board);
            if sum > best.0 {
                best = (sum, set as u8);
            }
        }
        if self.mirror.is_some() {
            for set in 0..self.sets.len() {
                let sum = self.sum(set, &state.mirrored);
                if sum > best.0 {
                    best = (sum, (self.sets.len() + set) as u8);
                }
            }
        }
        best
    }

    /// Asks for every read the move of `tile` needs (every read is asked for before any is
    /// waited on: the tables are far larger than the caches, so the reads miss, and their misses
    /// overlap instead of following each other).
    /// `tables` are the tables to read, as bit masks on the board and on the mirror image.
    #[inline(always)]
    fn probe_moved(&self, position: &Position, tables: (u32, u32)) -> Probes<SLOTS> {
        let (tables, mirrored_tables) = tables;
        let mut probes = Probes {
            tables,
            index: [0; SLOTS],
            mirrored_tables: 0,
            mirrored_index: [0; SLOTS],
        };
        for i in Bits(tables) {
            probes.index[i % SLOTS] = self.probe(i, position);
        }
        if let Some(mirror) = &self.mirror {
            probes.mirrored_tables = mirrored_tables;
            for i in Bits(mirrored_tables) {
                probes.mirrored_index[i % SLOTS] = self.probe_mirrored(mirror, i, position);
            }
        }
        probes
    }

    /// Reads every probed term into `state`.
    #[inline(always)]
    fn read_moved(&self, probes: &Probes<SLOTS>, position: &Position, state: &mut PdbState<SLOTS>) {
        for i in Bits(probes.tables) {
            self.read_into(i, probes.index[i % SLOTS], None, position, state);
        }
        if let Some(mirror) = &self.mirror {
            for i in Bits(probes.mirrored_tables) {
                let index = probes.mirrored_index[i % SLOTS];
                self.read_into(i, index, Some(mirror), position, state);
            }
        }
    }

    /// The table of set `set` (numbered as in [`PdbState::best`]) that the move of `tile`
    /// changes, with the mirror map when the set is on the mirror image, and the set's number
    /// within its half.
    #[inline(always)]
    fn moved_table(&self, set: usize, tile: u8) -> (Option<&Mirror>, usize, usize) {
        // Numbers come from `best_set`, so they are below twice the set count (below it without
        // the mirror), and the indexing below never fails; no `%`, which is a division here, on
        // every child.
        let sets = self.sets.len();
        match &self.mirror {
            Some(mirror) if set >= sets => {
                let set = set - sets;
                let mirrored = mirror.tile[usize::from(tile) & 31];
                let table = usize::from(self.holder[set][usize::from(mirrored) & 31]);
                (Some(mirror), set, table)
            }
            _ => (
                None,
                set,
                usize::from(self.holder[set][usize::from(tile) & 31]),
            ),
        }
    }

    /// The tables the move of `tile` changes, as bit masks on the board and on the mirror image.
    #[inline(always)]
    fn tables_moved(&self, tile: u8) -> (u32, u32) {
        let board = self.tables_of[usize::from(tile) & 31];
        let mirrored = match &self.mirror {
            Some(mirror) => self.tables_of[usize::from(mirror.tile[usize::from(tile) & 31]) & 31],
            None => 0,
        };
        (board, mirrored)
    }

    /// The tables the move of `tile` changes besides the one of set `set` (numbered as in
    /// [`PdbState::best`]), as bit masks on the board and on the mirror image.
    #[inline(always)]
    fn others_moved(&self, set: usize, tile: u8) -> (u32, u32) {
        let (board, mirrored) = self.tables_moved(tile);
        match self.moved_table(set, tile) {
            (Some(_), _, i) => (board, mirrored & !(1 << i)),
            (None, _, i) => (board & !(1 << i), mirrored),
        }
    }

    /// Where the reads of the move of `tile` are, the one of set `set` first, asking for them.
    #[inline(always)]
    fn locate(&self, set: usize, position: &Position, tile: u8) -> ChildReads {
        self.locate_with(set, tile, |i, mirror| match mirror {
            Some(mirror) => self.probe_mirrored(mirror, i, position),
            None => self.probe(i, position),
        })
    }

    /// [`Self::locate`] with `probe(i, mirror)` asking for table `i`'s read on the board, or on
    /// the mirror image given.
    #[inline(always)]
    fn locate_with(
        &self,
        set: usize,
        tile: u8,
        probe: impl Fn(usize, Option<&Mirror>) -> u32,
    ) -> ChildReads {
        let (mirror, _, i) = self.moved_table(set, tile);
        let first = probe(i, mirror);
        let (board, mirrored) = self.others_moved(set, tile);
        let (other, other_index) = match (board.count_ones(), mirrored.count_ones(), &self.mirror) {
            (0, 0, _) => (NO_OTHER, 0),
            (1, 0, _) => {
                let i = board.trailing_zeros() as usize;
                (i as u8, probe(i, None))
            }
            (0, 1, Some(mirror)) => {
                let i = mirrored.trailing_zeros() as usize;
                (i as u8 | MIRRORED, probe(i, Some(mirror)))
            }
            _ => (OTHERS, 0),
        };
        ChildReads {
            first,
            other,
            other_index,
        }
    }

    /// Reads the terms of the move of `tile` other than set `set`'s, located by [`Self::locate`].
    #[inline(always)]
    fn read_others(
        &self,
        set: usize,
        reads: ChildReads,
        position: &Position,
        tile: u8,
        state: &mut PdbState<SLOTS>,
    ) {
        match reads.other {
            NO_OTHER => {}
            OTHERS => {
                let probes = self.probe_moved(position, self.others_moved(set, tile));
                self.read_moved(&probes, position, state);
            }
            other => {
                let mirror = self.mirror.as_ref().filter(|_| other & MIRRORED != 0);
                let i = usize::from(other & !MIRRORED);
                self.read_into(i, reads.other_index, mirror, position, state);
            }
        }
    }

    /// The sum of set `set` (numbered as in [`PdbState::best`]) after the move of `tile`, reading
    /// the one term of it that the move changed, at `index` (from [`Self::locate`]).
    #[inline(always)]
    fn moved_sum(
        &self,
        set: usize,
        position: &Position,
        state: &mut PdbState<SLOTS>,
        tile: u8,
        index: u32,
    ) -> u32 {
        let (mirror, set, i) = self.moved_table(set, tile);
        self.read_into(i, index, mirror, position, state);
        match mirror {
            Some(_) => self.sum(set, &state.mirrored),
            None => self.sum(set, &state.board),
        }
    }
}

/// Where a child's reads are, as [`AdditivePdb::prefetch_child`] found them: the first one and,
/// when the move needs exactly one more (as with 7-8 and 6-6-6-6, whose tiles are each in one
/// table), that one. Kept this small because the kernel holds one per child on its stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildReads {
    /// [`NOT_LOCATED`] when the caller did not ask: [`AdditivePdb::after_move_within`] then
    /// locates every read itself.
    first: u32,
    /// The other read's table, with [`MIRRORED`] set for a lookup on the mirror image; or
    /// [`NO_OTHER`], or [`OTHERS`] when there are several (located after the first read).
    other: u8,
    other_index: u32,
}

const NOT_LOCATED: u32 = u32::MAX;
const MIRRORED: u8 = 0x40;
const NO_OTHER: u8 = 0x80;
const OTHERS: u8 = 0x81;

impl Default for ChildReads {
    fn default() -> Self {
        ChildReads {
            first: NOT_LOCATED,
            other: OTHERS,
            other_index: 0,
        }
    }
}

impl<const SLOTS: usize> Heuristic for AdditivePdb<SLOTS> {
    type State = PdbState<SLOTS>;

    fn init(&self, position: &Position) -> PdbState<SLOTS> {
        let mut state = PdbState {
            board: [0; SLOTS],
            mirrored: [0; SLOTS],
            best: 0,
        };
        for i in 0..self.lookups.len() {
            state.board[i] = self.term(i, position);
            if let Some(mirror) = &self.mirror {
                state.mirrored[i] = self.mirror_term(mirror, i, position);
            }
        }
        state.best = self.best_set(&state).1;
        state
    }

    #[inline(always)]
    fn value(&self, state: PdbState<SLOTS>) -> u32 {
        self.best_set(&state).0
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
        let probes = self.probe_moved(position, self.tables_moved(tile));
        self.read_moved(&probes, position, &mut state);
        state
    }

    type Probe = ChildReads;

    const PREFETCHES: bool = true;

    /// Asks for every read of the child, the first one first. With vector ranks the child's cells
    /// are built in registers from the parent's; else on a copy of the board.
    #[inline(always)]
    fn prefetch_child(
        &self,
        position: &Position,
        state: PdbState<SLOTS>,
        tile: u8,
        from: usize,
        to: usize,
    ) -> ChildReads {
        let set = usize::from(state.best);
        if !self.vector {
            let mut child = *position;
            child.slide(from, to);
            return self.locate(set, &child, tile);
        }
        let cells = Cells::of(&position.cells).moved(tile, from as u8, to as u8);
        self.locate_with(set, tile, |i, mirror| {
            let shuffle = &self.shuffles[i % SLOTS];
            let index = match mirror {
                Some(_) => shuffle.rank_mirrored(cells),
                None => shuffle.rank(cells),
            };
            self.prefetch(i, index)
        })
    }

    /// Reads first the term of the set that was largest before the move: when that set alone
    /// exceeds `limit`, the child is cut without waiting on the other reads (about half the
    /// children IDA* generates are cut).
    #[inline(always)]
    fn after_move_within(
        &self,
        position: &Position,
        mut state: PdbState<SLOTS>,
        tile: u8,
        _from: usize,
        _to: usize,
        limit: u32,
        reads: ChildReads,
    ) -> Result<(PdbState<SLOTS>, u32), u32> {
        let best = usize::from(state.best);
        let reads = match reads.first {
            NOT_LOCATED => self.locate(best, position, tile),
            _ => reads,
        };
        let first = self.moved_sum(best, position, &mut state, tile, reads.first);
        if first > limit {
            return Err(first);
        }
        self.read_others(best, reads, position, tile, &mut state);
        let (h, best) = self.best_set(&state);
        state.best = best;
        if h <= limit {
            Ok((state, h))
        } else {
            Err(h)
        }
    }
}

/// The set bits of a mask, lowest first.
struct Bits(u32);

impl Iterator for Bits {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(bit)
    }
}
