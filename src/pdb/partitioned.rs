//! The kernel's form of an [`AdditivePdb`] whose one set of tables partitions the tiles (every
//! preset but 6-6-6-6-max): a heuristic type of its own, so the kernel compiled for it holds none
//! of the general path's code, with a state that keeps what a move needs.
//!
//! A move changes exactly one term on each side (the board and its mirror image), so the state
//! keeps each side's sum and a child's sum is the parent's less the old term plus the new one.
//! The state also keeps every table's placement rank on each side: a move is horizontal on one
//! side (on the board, or on the mirror image, which transposes a vertical move into a
//! horizontal one), and a horizontal move changes only the moved tile's digit, by one (the
//! tile's cell goes up or down by one and passes no other tile), so the child's rank there is
//! the parent's plus or minus that digit's weight. Only the other side is ranked.
//!
//! With packed tables (see `packed`) the state keeps each table's halved excess rather than its
//! term, and a move adds to a side's sum the change in the moved tile's distance home there
//! plus twice the change in its table's excess.
//!
//! Tables stored by blank cell (`blank_cells`) are read at the rank times their free cells plus
//! the blank's place among them, counted from each table's occupied cells, which the state then
//! keeps too (`OCC`). That form is a kernel of its own, so that the others neither check for it
//! nor copy the larger state.

use crate::board::Position;
use crate::heuristic::Heuristic;
use crate::pdb::additive::AdditivePdb;
use crate::pdb::blank_cells;
use crate::pdb::lookup::{Mirror, MAX_GROUPS, NARROW};
use crate::pdb::partition::{Partition, BOARD, MIRRORED};
use crate::pdb::shuffle_rank::Cells;

impl<const SLOTS: usize> AdditivePdb<SLOTS> {
    /// This heuristic in the form the solver's kernel runs when its one set's tables partition
    /// the tiles (every preset but 6-6-6-6-max) and none is stored by blank cell; `None`
    /// otherwise.
    pub fn partitioned(&self) -> Option<Partitioned<'_, SLOTS>> {
        self.partition
            .as_ref()
            .filter(|partition| !partition.by_blank())
            .map(|partition| Partitioned::new(self, partition))
    }

    /// The same form for a partition with tables stored by blank cell (`7-8-zero`): a kernel of
    /// its own, as checking for them cost the others about 6%.
    pub fn partitioned_by_blank(&self) -> Option<Partitioned<'_, SLOTS, MAX_GROUPS>> {
        self.partition
            .as_ref()
            .filter(|partition| partition.by_blank())
            .map(|partition| Partitioned::new(self, partition))
    }
}

/// Each table's term (its halved excess, for packed tables) and placement rank on each side, and
/// each side's sum. Two states are equal when these are: which side is read first depends on the
/// path taken, not on the board.
///
/// With tables stored by blank cell (`OCC` = [`MAX_GROUPS`]) it also keeps each table's
/// occupied cells on each side, to place the blank among its free cells; other presets' states
/// keep none (`OCC` = 0), as the state is copied at every node.
#[derive(Clone, Copy, Debug)]
pub struct PartitionState<const OCC: usize = 0> {
    terms: [[u8; MAX_GROUPS]; 2],
    sums: [u16; 2],
    /// The side whose sum was the larger: the one a child reads first.
    best: u8,
    ranks: [[u32; MAX_GROUPS]; 2],
    occupied: [[u16; OCC]; 2],
}

impl<const OCC: usize> PartialEq for PartitionState<OCC> {
    fn eq(&self, other: &Self) -> bool {
        (self.terms, self.sums, self.ranks) == (other.terms, other.sums, other.ranks)
    }
}

impl<const OCC: usize> Eq for PartitionState<OCC> {}

/// A child's ranks on each side, as [`Partitioned::prefetch_child`] worked them out (and asked
/// for their entries).
#[derive(Clone, Copy, Debug, Default)]
pub struct ChildRanks(Option<[u32; 2]>);

/// An [`AdditivePdb`] whose one set partitions the tiles, from [`AdditivePdb::partitioned`]
/// (or with `OCC` = [`MAX_GROUPS`], from [`AdditivePdb::partitioned_by_blank`]).
#[derive(Clone, Copy, Debug)]
pub struct Partitioned<'a, const SLOTS: usize = NARROW, const OCC: usize = 0> {
    pdb: &'a AdditivePdb<SLOTS>,
    partition: &'a Partition,
}

impl<'a, const SLOTS: usize, const OCC: usize> Partitioned<'a, SLOTS, OCC> {
    pub(super) fn new(pdb: &'a AdditivePdb<SLOTS>, partition: &'a Partition) -> Self {
        Partitioned { pdb, partition }
    }

    /// The mirror map of `side`: `None` on the board.
    #[inline(always)]
    fn mirror(&self, side: usize) -> Option<&'a Mirror> {
        self.pdb.mirror.as_ref().filter(|_| side == MIRRORED)
    }

    /// The rank of table `i` on `side` of `position`, its entry asked for.
    #[inline(always)]
    fn rank(&self, side: usize, i: usize, position: &Position) -> u32 {
        match self.mirror(side) {
            Some(mirror) => self.pdb.probe_mirrored(mirror, i, position),
            None => self.pdb.probe(i, position),
        }
    }

    /// The cells `from` and `to` on `side`: themselves on the board, their images on the mirror.
    #[inline(always)]
    fn side_cells(&self, side: usize, from: usize, to: usize) -> (u32, u32) {
        match self.mirror(side) {
            Some(mirror) => (
                u32::from(mirror.cell[from & 31]),
                u32::from(mirror.cell[to & 31]),
            ),
            None => (from as u32, to as u32),
        }
    }

    /// Table `i`'s entry index on `side` for placement `rank` after a tile of its moved from
    /// `from` to `to` from `state`, and the table's occupied cells there: the rank itself unless
    /// the table is stored by blank cell, where the blank is now on `from`, placed among the
    /// cells the table leaves free.
    #[inline(always)]
    fn entry_after(
        &self,
        state: &PartitionState<OCC>,
        side: usize,
        i: usize,
        rank: u32,
        (from, to): (usize, usize),
    ) -> (u32, u16) {
        let slot = i % MAX_GROUPS;
        let (free, Some(&occupied)) = (self.partition.free[slot], state.occupied[side].get(slot))
        else {
            return (rank, 0);
        };
        if free == 0 {
            return (rank, 0);
        }
        let (from, to) = self.side_cells(side, from, to);
        let occupied = occupied ^ (1 << (from & 15)) ^ (1 << (to & 15));
        let place = blank_cells::blank_place(u32::from(occupied), from & 15);
        (blank_cells::index(rank, free, place), occupied)
    }

    /// The rank of table `i` on `side` after tile `t` moved from `from` to `to` from `state`,
    /// where the move is horizontal: the parent's, stepped by the tile's digit weight. Its entry
    /// is asked for.
    #[inline(always)]
    fn step(
        &self,
        state: &PartitionState<OCC>,
        side: usize,
        i: usize,
        t: usize,
        (from, to): (usize, usize),
    ) -> u32 {
        let parent = state.ranks[side][i % MAX_GROUPS];
        let weight = self.partition.weight[side][t & 31];
        // The tile's cell (its image's, on the mirror image) rises with `to > from`.
        let rank = if to > from {
            parent.wrapping_add(weight)
        } else {
            parent.wrapping_sub(weight)
        };
        self.pdb
            .prefetch(i, self.entry_after(state, side, i, rank, (from, to)).0);
        rank
    }

    /// Table `i`'s occupied cells on `side` of `position`.
    fn occupied(&self, side: usize, i: usize, position: &Position) -> u16 {
        let cells = match self.mirror(side) {
            Some(mirror) => self
                .pdb
                .mirrored_cells(mirror, i, position)
                .fold(0, or_cell),
            None => self.pdb.cells(i, position).fold(0, or_cell),
        };
        cells as u16
    }

    /// The ranks after the move of `tile` on `position` (the board after the move), computed
    /// whole.
    #[inline(always)]
    fn ranks_of(&self, position: &Position, tile: u8) -> [u32; 2] {
        let tile = usize::from(tile) & 31;
        let board = self.rank(
            BOARD,
            usize::from(self.partition.table[BOARD][tile]),
            position,
        );
        match self.pdb.mirror {
            Some(_) => {
                let i = usize::from(self.partition.table[MIRRORED][tile]);
                [board, self.rank(MIRRORED, i, position)]
            }
            None => [board, 0],
        }
    }

    /// Reads table `i`'s entry for placement `rank` on `position` (the board after `tile` moved
    /// from cell `from` to `to`), or on its mirror image when `mirror` is given, into `state`,
    /// and returns that side's new sum.
    #[inline(always)]
    fn update(
        &self,
        state: &mut PartitionState<OCC>,
        i: usize,
        rank: u32,
        mirror: Option<&Mirror>,
        position: &Position,
        (tile, from, to): (u8, usize, usize),
    ) -> u32 {
        let slot = i % MAX_GROUPS;
        let side = usize::from(mirror.is_some());
        let old = i32::from(state.terms[side][slot]);
        let (term, change) = if self.partition.packed {
            let (entry, occupied) = self.entry_after(state, side, i, rank, (from, to));
            if let Some(kept) = state.occupied[side].get_mut(slot) {
                *kept = occupied;
            }
            let excess = self.pdb.half_excess(i, entry);
            let distance = &self.partition.distance[side][usize::from(tile) & 31];
            let moved = i32::from(distance[to & 31]) - i32::from(distance[from & 31]);
            (excess, 2 * (i32::from(excess) - old) + moved)
        } else {
            let term = self.pdb.read_term(i, rank, mirror, position);
            (term, i32::from(term) - old)
        };
        let sum = (i32::from(state.sums[side]) + change) as u16;
        state.terms[side][slot] = term;
        state.ranks[side][slot] = rank;
        state.sums[side] = sum;
        u32::from(sum)
    }
}

impl<const SLOTS: usize, const OCC: usize> Heuristic for Partitioned<'_, SLOTS, OCC> {
    type State = PartitionState<OCC>;

    fn init(&self, position: &Position) -> PartitionState<OCC> {
        let mut state = PartitionState::<OCC> {
            terms: [[0; MAX_GROUPS]; 2],
            sums: [0; 2],
            best: 0,
            ranks: [[0; MAX_GROUPS]; 2],
            occupied: [[0; OCC]; 2],
        };
        let sides = if self.pdb.mirror.is_some() { 2 } else { 1 };
        for side in 0..sides {
            for i in 0..self.partition.tables {
                let rank = self.rank(side, i, position);
                let term = self.pdb.read_term(i, rank, self.mirror(side), position);
                let slot = i % MAX_GROUPS;
                if let Some(kept) = state.occupied[side].get_mut(slot) {
                    *kept = self.occupied(side, i, position);
                }
                // As if the blank had come to its cell from where it is: no tile moved.
                let blank = usize::from(position.cells[0]);
                let (entry, _) = self.entry_after(&state, side, i, rank, (blank, blank));
                state.terms[side][slot] = if self.partition.packed {
                    self.pdb.half_excess(i, entry)
                } else {
                    term
                };
                state.ranks[side][slot] = rank;
                state.sums[side] += u16::from(term);
            }
        }
        state.best = u8::from(state.sums[MIRRORED] > state.sums[BOARD]);
        state
    }

    #[inline(always)]
    fn value(&self, state: PartitionState<OCC>) -> u32 {
        u32::from(state.sums[BOARD].max(state.sums[MIRRORED]))
    }

    fn after_move(
        &self,
        position: &Position,
        state: PartitionState<OCC>,
        tile: u8,
        from: usize,
        to: usize,
    ) -> PartitionState<OCC> {
        let (state, _) = self
            .after_move_within(position, state, tile, from, to, u32::MAX, ChildRanks(None))
            .unwrap_or((state, 0));
        state
    }

    type Probe = ChildRanks;

    const PREFETCHES: bool = true;

    /// Steps the parent's rank on the side the move is horizontal on, ranks the child on the
    /// other (with vector ranks, on the child's cells built in registers), and asks for both
    /// entries.
    #[inline(always)]
    fn prefetch_child(
        &self,
        position: &Position,
        state: PartitionState<OCC>,
        tile: u8,
        from: usize,
        to: usize,
    ) -> ChildRanks {
        let t = usize::from(tile) & 31;
        let board = usize::from(self.partition.table[BOARD][t]);
        let mirrored = usize::from(self.partition.table[MIRRORED][t]);
        let step = |side: usize, i: usize| self.step(&state, side, i, t, (from, to));
        let ranked = |side: usize, i: usize| {
            let rank = if self.pdb.vector {
                let cells = Cells::of(&position.cells).moved(tile, from as u8, to as u8);
                let shuffle = &self.pdb.shuffles[i % SLOTS];
                match side {
                    MIRRORED => shuffle.rank_mirrored(cells),
                    _ => shuffle.rank(cells),
                }
            } else {
                let mut child = *position;
                child.slide(from, to);
                match self.mirror(side) {
                    Some(mirror) => self.pdb.rank_of_mirrored(mirror, i, &child),
                    None => self.pdb.rank_of(i, &child),
                }
            };
            self.pdb
                .prefetch(i, self.entry_after(&state, side, i, rank, (from, to)).0);
            rank
        };
        // A move by one cell is horizontal on the board, and on the mirror image otherwise.
        let ranks = match (&self.pdb.mirror, from.abs_diff(to) == 1) {
            (None, true) => [step(BOARD, board), 0],
            (None, false) => [ranked(BOARD, board), 0],
            (Some(_), true) => [step(BOARD, board), ranked(MIRRORED, mirrored)],
            (Some(_), false) => [ranked(BOARD, board), step(MIRRORED, mirrored)],
        };
        ChildRanks(Some(ranks))
    }

    /// Reads first the side that was larger before the move: when it alone puts the child over
    /// `limit`, the child is cut without waiting on the other read.
    #[inline(always)]
    fn after_move_within(
        &self,
        position: &Position,
        mut state: PartitionState<OCC>,
        tile: u8,
        from: usize,
        to: usize,
        limit: u32,
        ranks: ChildRanks,
    ) -> Result<(PartitionState<OCC>, u32), u32> {
        let ranks = match ranks.0 {
            Some(ranks) => ranks,
            None => self.ranks_of(position, tile),
        };
        let t = usize::from(tile) & 31;
        let board = usize::from(self.partition.table[BOARD][t]);
        let moved = (tile, from, to);
        let Some(mirror) = &self.pdb.mirror else {
            let h = self.update(&mut state, board, ranks[BOARD], None, position, moved);
            return if h <= limit { Ok((state, h)) } else { Err(h) };
        };
        let mirrored = usize::from(self.partition.table[MIRRORED][t]);
        let read_board = |state: &mut PartitionState<OCC>| {
            self.update(state, board, ranks[BOARD], None, position, moved)
        };
        let read_mirrored = |state: &mut PartitionState<OCC>| {
            self.update(
                state,
                mirrored,
                ranks[MIRRORED],
                Some(mirror),
                position,
                moved,
            )
        };
        let first_side = usize::from(state.best);
        let (first, second) = if first_side == BOARD {
            let first = read_board(&mut state);
            if first > limit {
                return Err(first);
            }
            (first, read_mirrored(&mut state))
        } else {
            let first = read_mirrored(&mut state);
            if first > limit {
                return Err(first);
            }
            (first, read_board(&mut state))
        };
        let h = first.max(second);
        if h > limit {
            return Err(h);
        }
        let second_side = 1 - first_side;
        state.best = if second > first {
            second_side as u8
        } else {
            first_side as u8
        };
        Ok((state, h))
    }
}

/// `mask` with `cell` added.
fn or_cell(mask: u32, cell: u8) -> u32 {
    mask | 1 << (cell & 31)
}
