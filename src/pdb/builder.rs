//! The pattern database builder: a breadth-first search backwards from the goal over placements
//! of the pattern tiles, in which a move costs 1 only when it moves a pattern tile. Moves of other
//! tiles are free, so the blank roams its whole connected region of non-pattern cells at no cost;
//! a search state is therefore (placement, blank region), and every edge between such states
//! costs exactly 1, which makes the 0-1 search a plain level-by-level BFS.
//!
//! Memory: one word per placement with 2 bits per cell telling, for the blank on that cell,
//! whether the state is unvisited, closed, or in the current or next level (the last two swap
//! roles each level), plus the one-byte result per placement. For 8 tiles on 4x4 that is
//! 2.1 GB + 0.5 GB. Levels are scanned in parallel over blocks of placements; a block is skipped
//! unless a state in it entered the current level, which keeps the sparse first and last levels
//! cheap. Writes to other threads' placements are compare-and-swap on the word, so a state is
//! claimed once.
//!
//! The build is bound by memory latency (each successor's word is a random access into gigabytes),
//! so the work is arranged to overlap misses: all successors of a placement are computed first
//! and their words loaded together, and a placement's result byte is written while scanning it
//! (the first level at which it has a frontier state), never at random.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

use crate::board::Board;
use crate::pdb::index::{placements, rank, unrank};

/// A placement never reached (only possible when the pattern holds every tile, as in the exact
/// 3x3 table, where half the placements have the wrong parity).
pub const UNREACHED: u8 = u8::MAX;

const CLOSED: u64 = 1;
/// Most pattern tiles a table can have (the exact 3x3 table has 8; 7-8 has 8).
const MAX_PATTERN: usize = 8;
const BLOCK_SHIFT: u32 = 10;

/// Where a build stands after a level.
#[derive(Clone, Copy, Debug)]
pub struct BuildProgress {
    pub level: u32,
    /// Placements with a value so far.
    pub reached: u64,
    pub placements: u64,
    pub seconds: f64,
}

/// An atomic word of 2-bit per-cell marks: 32 bits cover 16 cells, 64 bits cover 25.
trait MarkWord: Sync + Send + Sized {
    fn zero() -> Self;
    fn load(&self) -> u64;
    fn set_if(&self, current: u64, new: u64) -> Result<(), u64>;
    fn flip(&self, bits: u64);
}

impl MarkWord for AtomicU32 {
    fn zero() -> Self {
        AtomicU32::new(0)
    }
    fn load(&self) -> u64 {
        u64::from(AtomicU32::load(self, Ordering::Relaxed))
    }
    fn set_if(&self, current: u64, new: u64) -> Result<(), u64> {
        self.compare_exchange_weak(current as u32, new as u32, Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| ())
            .map_err(u64::from)
    }
    fn flip(&self, bits: u64) {
        self.fetch_xor(bits as u32, Ordering::Relaxed);
    }
}

impl MarkWord for AtomicU64 {
    fn zero() -> Self {
        AtomicU64::new(0)
    }
    fn load(&self) -> u64 {
        AtomicU64::load(self, Ordering::Relaxed)
    }
    fn set_if(&self, current: u64, new: u64) -> Result<(), u64> {
        self.compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed).map(|_| ())
    }
    fn flip(&self, bits: u64) {
        self.fetch_xor(bits, Ordering::Relaxed);
    }
}

/// Builds the table of `pattern` (tile labels) towards `goal`: for every placement of the
/// pattern tiles, the fewest pattern-tile moves that bring them home.
pub fn build(goal: &Board, pattern: &[u8], threads: usize, progress: &(dyn Fn(BuildProgress) + Sync)) -> Vec<u8> {
    if goal.cells() <= 16 {
        Builder::<AtomicU32>::new(goal, pattern).run(threads, progress)
    } else {
        Builder::<AtomicU64>::new(goal, pattern).run(threads, progress)
    }
}

struct Builder<W> {
    side: usize,
    cells: usize,
    k: usize,
    all: u32,
    adjacent: [u32; 32],
    marks: Vec<W>,
    values: Vec<AtomicU8>,
    /// Per block of placements: did a state in it enter the current / next level?
    active: Vec<AtomicBool>,
    next_active: Vec<AtomicBool>,
}

impl<W: MarkWord> Builder<W> {
    fn new(goal: &Board, pattern: &[u8]) -> Self {
        let side = goal.side();
        let cells = goal.cells();
        let count = placements(cells, pattern.len()) as usize;
        let blocks = (count >> BLOCK_SHIFT) + 1;
        let mut adjacent = [0u32; 32];
        for (cell, mask) in adjacent.iter_mut().enumerate().take(cells) {
            let (row, col) = (cell / side, cell % side);
            if row > 0 {
                *mask |= 1 << (cell - side);
            }
            if row + 1 < side {
                *mask |= 1 << (cell + side);
            }
            if col > 0 {
                *mask |= 1 << (cell - 1);
            }
            if col + 1 < side {
                *mask |= 1 << (cell + 1);
            }
        }
        let mut builder = Builder {
            side,
            cells,
            k: pattern.len(),
            all: ((1u64 << cells) - 1) as u32,
            adjacent,
            marks: std::iter::repeat_with(W::zero).take(count).collect(),
            values: std::iter::repeat_with(|| AtomicU8::new(UNREACHED)).take(count).collect(),
            active: std::iter::repeat_with(|| AtomicBool::new(false)).take(blocks).collect(),
            next_active: std::iter::repeat_with(|| AtomicBool::new(false)).take(blocks).collect(),
        };
        let goal_cells = goal.positions();
        let start: Vec<u8> = pattern.iter().map(|&tile| goal_cells[usize::from(tile)]).collect();
        let occupied = start.iter().fold(0u32, |m, &c| m | 1 << c);
        let region = builder.flood(1 << goal.blank(), builder.all & !occupied);
        let index = rank(cells, start.iter().copied()) as usize;
        builder.marks[index] = W::zero();
        builder.marks[index].flip(spread(region, 2));
        builder.active[index >> BLOCK_SHIFT].store(true, Ordering::Relaxed);
        builder
    }

    fn run(mut self, threads: usize, progress: &(dyn Fn(BuildProgress) + Sync)) -> Vec<u8> {
        let started = Instant::now();
        let total = self.marks.len() as u64;
        let mut reached = 0u64;
        let mut level = 0u32;
        loop {
            let frontier_code = 2 + u64::from(level % 2);
            let next_code = 5 - frontier_code;
            let next_block = AtomicUsize::new(0);
            let new_states = AtomicU64::new(0);
            let valued = AtomicU64::new(0);
            std::thread::scope(|scope| {
                for _ in 0..threads.max(1) {
                    scope.spawn(|| {
                        let (states, placements) = self.scan(&next_block, level, frontier_code, next_code);
                        new_states.fetch_add(states, Ordering::Relaxed);
                        valued.fetch_add(placements, Ordering::Relaxed);
                    });
                }
            });
            reached += valued.into_inner();
            if new_states.into_inner() == 0 {
                break;
            }
            level += 1;
            std::mem::swap(&mut self.active, &mut self.next_active);
            self.next_active.iter().for_each(|flag| flag.store(false, Ordering::Relaxed));
            progress(BuildProgress { level, reached, placements: total, seconds: started.elapsed().as_secs_f64() });
        }
        drop(std::mem::take(&mut self.marks));
        self.values.into_iter().map(AtomicU8::into_inner).collect()
    }

    /// Expands every state of the current level in the blocks this thread claims. Returns the
    /// states claimed for the next level and the placements whose value is this level.
    fn scan(&self, next_block: &AtomicUsize, level: u32, frontier_code: u64, next_code: u64) -> (u64, u64) {
        const CLAIM: usize = 16;
        let mut added = 0;
        let mut valued = 0;
        let mut cells = [0u8; 32];
        loop {
            let first = next_block.fetch_add(CLAIM, Ordering::Relaxed);
            if first >= self.active.len() {
                return (added, valued);
            }
            for block in first..(first + CLAIM).min(self.active.len()) {
                if !self.active[block].load(Ordering::Relaxed) {
                    continue;
                }
                let start = block << BLOCK_SHIFT;
                let end = ((block + 1) << BLOCK_SHIFT).min(self.marks.len());
                for index in start..end {
                    let word = self.marks[index].load();
                    let frontier = cells_with_code(word, frontier_code);
                    if frontier == 0 {
                        continue;
                    }
                    if cells_with_code(word, CLOSED) == 0 {
                        // No state of this placement was expanded before: this level is its value.
                        self.values[index].store(level as u8, Ordering::Relaxed);
                        valued += 1;
                    }
                    unrank(self.cells, index as u32, &mut cells[..self.k]);
                    added += self.expand(&mut cells[..self.k], frontier, next_code);
                    self.marks[index].flip(spread(frontier, frontier_code ^ CLOSED));
                }
            }
        }
    }

    /// Expands the states of one placement whose blank regions make up `frontier`; returns the
    /// number of states claimed for the next level.
    fn expand(&self, cells: &mut [u8], frontier: u32, next_code: u64) -> u64 {
        // Every successor: (placement index, the cell the tile left, the cell it entered). The
        // blank ends on the cell the tile left, so that cell's mark says if the state is new.
        let mut successors = [(0usize, 0u8, 0u8); 4 * MAX_PATTERN];
        let mut count = 0;
        let occupied = cells.iter().fold(0u32, |m, &c| m | 1 << c);
        for i in 0..cells.len() {
            let from = cells[i];
            let mut targets = self.adjacent[usize::from(from)] & frontier;
            while targets != 0 {
                let to = targets.trailing_zeros() as u8;
                targets &= targets - 1;
                cells[i] = to;
                successors[count] = (rank(self.cells, cells.iter().copied()) as usize, from, to);
                count += 1;
            }
            cells[i] = from;
        }
        // Independent loads first, so their cache misses overlap; then claim the unvisited, and
        // only for those pay for the flood fill of the blank's new region.
        let mut words = [0u64; 4 * MAX_PATTERN];
        for (word, &(index, _, _)) in words.iter_mut().zip(&successors[..count]) {
            *word = self.marks[index].load();
        }
        let mut added = 0;
        for (&word, &(index, from, to)) in words.iter().zip(&successors[..count]) {
            if (word >> (2 * from)) & 3 != 0 {
                continue;
            }
            let free = self.all & !(occupied ^ (1 << from) ^ (1 << to));
            added += self.claim(index, word, self.flood(1 << from, free), from, next_code);
        }
        added
    }

    /// Marks (placement, region) as reached for the next level unless it was reached before;
    /// `current` is the placement's word as last seen. Returns 1 if this call claimed it.
    fn claim(&self, index: usize, mut current: u64, region: u32, probe: u8, next_code: u64) -> u64 {
        let word = &self.marks[index];
        let fields = spread(region, next_code);
        loop {
            if (current >> (2 * probe)) & 3 != 0 {
                return 0;
            }
            match word.set_if(current, current | fields) {
                Ok(()) => break,
                Err(actual) => current = actual,
            }
        }
        self.next_active[index >> BLOCK_SHIFT].store(true, Ordering::Relaxed);
        1
    }

    /// The cells of `free` connected to `seed`.
    fn flood(&self, seed: u32, free: u32) -> u32 {
        let side = self.side as u32;
        let first_col = (0..self.side).fold(0u32, |m, row| m | 1 << (row * self.side));
        let last_col = first_col << (side - 1);
        let mut region = seed & free;
        loop {
            let grown = (region | (region << side) | (region >> side) | ((region & !last_col) << 1) | ((region & !first_col) >> 1)) & free;
            if grown == region {
                return region;
            }
            region = grown;
        }
    }
}

/// The cells whose 2-bit mark equals `code`, as a cell mask.
fn cells_with_code(word: u64, code: u64) -> u32 {
    const LOW: u64 = 0x5555_5555_5555_5555;
    let low = word & LOW;
    let high = (word >> 1) & LOW;
    let mut hits = match code {
        2 => high & !low,
        3 => high & low,
        _ => low & !high,
    };
    let mut cells = 0u32;
    while hits != 0 {
        cells |= 1 << (hits.trailing_zeros() / 2);
        hits &= hits - 1;
    }
    cells
}

/// `code` in the 2-bit field of every cell of `cells`.
fn spread(mut cells: u32, code: u64) -> u64 {
    let mut fields = 0u64;
    while cells != 0 {
        fields |= code << (2 * cells.trailing_zeros());
        cells &= cells - 1;
    }
    fields
}
