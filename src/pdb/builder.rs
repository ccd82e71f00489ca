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

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

use memmap2::MmapMut;

use crate::board::{Board, Shape};
use crate::pdb::index::{placements, rank, Unranker};
use crate::pdb::prefetch;
use crate::pdb::zero_index::{flood, ZeroIndex, SEVERAL};

const CLOSED: u64 = 1;
/// Most pattern tiles a table can have (the exact 3x3 table has 8; 7-8 has 8).
const MAX_PATTERN: usize = 8;
/// Placements per block of the level flags, and blocks a thread claims at a time.
const BLOCK_SHIFT: u32 = 10;
const CLAIM_BLOCKS: usize = 16;

/// Where a build stands after a level.
#[derive(Clone, Copy, Debug)]
pub struct BuildProgress {
    pub level: u32,
    /// Placements with a value so far.
    pub reached: u64,
    pub placements: u64,
    pub seconds: f64,
}

/// Atomic integer types, for which all-zero memory is a valid value.
///
/// # Safety
/// Implement only for types whose all-zero bit pattern is a valid value.
unsafe trait ZeroIsValid: Sync + Send {}
// SAFETY: atomic integers have the size and bit validity of their integer, and 0 is an integer.
unsafe impl ZeroIsValid for AtomicU8 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for AtomicU32 {}
// SAFETY: as above.
unsafe impl ZeroIsValid for AtomicU64 {}

/// A zeroed array in anonymous memory advised to use transparent huge pages. The builder reads
/// and writes gigabytes at random; with 4 KB pages much of that time goes to TLB misses.
struct ZeroedArray<T> {
    map: MmapMut,
    len: usize,
    _items: PhantomData<T>,
}

impl<T: ZeroIsValid> ZeroedArray<T> {
    fn new(len: usize) -> std::io::Result<Self> {
        let map = MmapMut::map_anon((len * size_of::<T>()).max(1))?;
        // Only advice: where huge pages are unavailable the build is just slower.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok(ZeroedArray {
            map,
            len,
            _items: PhantomData,
        })
    }

    /// The memory itself, once the build is done with it.
    fn into_map(self) -> MmapMut {
        self.map
    }
}

impl<T: ZeroIsValid> std::ops::Deref for ZeroedArray<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the map is page-aligned (so aligned for T), holds `len` items of T, starts
        // zeroed (valid for T by `ZeroIsValid`), is only accessed through atomics while shared,
        // and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<T>(), self.len) }
    }
}

/// An atomic word of 2-bit per-cell marks: 32 bits cover 16 cells, 64 bits cover 25.
trait MarkWord: ZeroIsValid + Sized {
    fn load(&self) -> u64;
    fn set_if(&self, current: u64, new: u64) -> Result<(), u64>;
    fn flip(&self, bits: u64);
}

impl MarkWord for AtomicU32 {
    fn load(&self) -> u64 {
        u64::from(AtomicU32::load(self, Ordering::Relaxed))
    }
    fn set_if(&self, current: u64, new: u64) -> Result<(), u64> {
        self.compare_exchange_weak(
            current as u32,
            new as u32,
            Ordering::Relaxed,
            Ordering::Relaxed,
        )
        .map(|_| ())
        .map_err(u64::from)
    }
    fn flip(&self, bits: u64) {
        self.fetch_xor(bits as u32, Ordering::Relaxed);
    }
}

impl MarkWord for AtomicU64 {
    fn load(&self) -> u64 {
        AtomicU64::load(self, Ordering::Relaxed)
    }
    fn set_if(&self, current: u64, new: u64) -> Result<(), u64> {
        self.compare_exchange_weak(current, new, Ordering::Relaxed, Ordering::Relaxed)
            .map(|_| ())
    }
    fn flip(&self, bits: u64) {
        self.fetch_xor(bits, Ordering::Relaxed);
    }
}

/// Builds the table of `pattern` (tile labels) towards `goal`: for every placement of the
/// pattern tiles (with `zero_aware`, every placement and blank region), the fewest pattern-tile
/// moves that bring them home.
pub fn build(
    goal: &Board,
    pattern: &[u8],
    zero_aware: bool,
    threads: usize,
    progress: &(dyn Fn(BuildProgress) + Sync),
) -> std::io::Result<MmapMut> {
    let zero = zero_aware.then(|| ZeroIndex::new(goal.side(), pattern.len()));
    if goal.cells() <= 16 {
        Ok(Builder::<AtomicU32>::new(goal, pattern, zero)?.run(threads, progress))
    } else {
        Ok(Builder::<AtomicU64>::new(goal, pattern, zero)?.run(threads, progress))
    }
}

struct Builder<W> {
    shape: Shape,
    k: usize,
    unranker: Unranker,
    /// Weight of each digit in an index.
    weights: [i64; 32],
    all: u32,
    adjacent: [u32; 32],
    marks: ZeroedArray<W>,
    /// The result: 1 + the value, 0 while unreached (so that zeroed memory starts it); by
    /// placement, or by zero-aware state when `zero` is set.
    values: ZeroedArray<AtomicU8>,
    zero: Option<ZeroIndex>,
    /// Per block of placements: did a state in it enter the current / next level?
    active: Vec<AtomicBool>,
    next_active: Vec<AtomicBool>,
}

impl<W: MarkWord> Builder<W> {
    fn new(goal: &Board, pattern: &[u8], zero: Option<ZeroIndex>) -> std::io::Result<Self> {
        let shape = goal.shape();
        let (rows, cols) = (shape.rows(), shape.cols());
        let cells = goal.cells();
        let count = placements(cells, pattern.len()) as usize;
        let blocks = (count >> BLOCK_SHIFT) + 1;
        let mut adjacent = [0u32; 32];
        for (cell, mask) in adjacent.iter_mut().enumerate().take(cells) {
            let (row, col) = (cell / cols, cell % cols);
            if row > 0 {
                *mask |= 1 << (cell - cols);
            }
            if row + 1 < rows {
                *mask |= 1 << (cell + cols);
            }
            if col > 0 {
                *mask |= 1 << (cell - 1);
            }
            if col + 1 < cols {
                *mask |= 1 << (cell + 1);
            }
        }
        let builder = Builder::<W> {
            shape,
            k: pattern.len(),
            unranker: Unranker::new(cells, pattern.len()),
            weights: std::array::from_fn(|i| {
                if i < pattern.len() {
                    i64::from(Unranker::new(cells, pattern.len()).weight(i))
                } else {
                    0
                }
            }),
            all: ((1u64 << cells) - 1) as u32,
            adjacent,
            marks: ZeroedArray::new(count)?,
            values: ZeroedArray::new(zero.as_ref().map_or(count, |z| z.entries() as usize))?,
            zero,
            active: std::iter::repeat_with(|| AtomicBool::new(false))
                .take(blocks)
                .collect(),
            next_active: std::iter::repeat_with(|| AtomicBool::new(false))
                .take(blocks)
                .collect(),
        };
        let goal_cells = goal.positions();
        let start: Vec<u8> = pattern
            .iter()
            .map(|&tile| goal_cells[usize::from(tile)])
            .collect();
        let occupied = start.iter().fold(0u32, |m, &c| m | 1 << c);
        let region = flood(1 << goal.blank(), builder.all & !occupied, shape);
        let index = rank(cells, start.iter().copied()) as usize;
        builder.marks[index].flip(spread(region, 2));
        builder.active[index >> BLOCK_SHIFT].store(true, Ordering::Relaxed);
        Ok(builder)
    }

    fn run(mut self, threads: usize, progress: &(dyn Fn(BuildProgress) + Sync)) -> MmapMut {
        let started = Instant::now();
        let total = self.values.len() as u64;
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
                        let (states, placements) =
                            self.scan(&next_block, level, frontier_code, next_code);
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
            self.next_active
                .iter()
                .for_each(|flag| flag.store(false, Ordering::Relaxed));
            progress(BuildProgress {
                level,
                reached,
                placements: total,
                seconds: started.elapsed().as_secs_f64(),
            });
        }
        drop(self.marks);
        let mut entries = self.values.into_map();
        // Stored as value + 1 with 0 for unreached: shift back, so unreached becomes 255 (only
        // possible when the pattern holds every tile, as in the exact 3x3 table, where half the
        // placements have the wrong parity).
        entries
            .iter_mut()
            .for_each(|entry| *entry = entry.wrapping_sub(1));
        entries
    }

    /// Expands every state of the current level in the blocks this thread claims. Returns the
    /// states claimed for the next level and the placements whose value is this level.
    fn scan(
        &self,
        next_block: &AtomicUsize,
        level: u32,
        frontier_code: u64,
        next_code: u64,
    ) -> (u64, u64) {
        let mut added = 0;
        let mut valued = 0;
        let mut cells = [0u8; 32];
        let mut digits = [0u8; 32];
        // Software pipeline: the successors of one placement are claimed while the next
        // placement's successor words are on their way from memory.
        let mut expansions = [Expansion::EMPTY, Expansion::EMPTY];
        let mut current = 0;
        loop {
            let first = next_block.fetch_add(CLAIM_BLOCKS, Ordering::Relaxed);
            if first >= self.active.len() {
                added += self.claim_all(&expansions[1 - current], next_code);
                return (added, valued);
            }
            for block in first..(first + CLAIM_BLOCKS).min(self.active.len()) {
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
                    self.unranker.unrank(index as u32, &mut cells, &mut digits);
                    if let Some(zero) = &self.zero {
                        valued += self.value_regions(zero, &cells[..self.k], frontier, level);
                    } else if cells_with_code(word, CLOSED) == 0 {
                        // No state of this placement was expanded before: this level is its value.
                        self.values[index].store(level as u8 + 1, Ordering::Relaxed);
                        valued += 1;
                    }
                    let placement = Placement {
                        index: index as u32,
                        cells: &cells[..self.k],
                        digits: &digits[..self.k],
                    };
                    self.successors(&placement, frontier, &mut expansions[current]);
                    self.marks[index].flip(spread(frontier, frontier_code ^ CLOSED));
                    current = 1 - current;
                    added += self.claim_all(&expansions[current], next_code);
                    expansions[current].count = 0;
                }
            }
        }
    }

    /// Gives each blank region in `frontier` (the placement's states in this level) this level as
    /// its zero-aware value. Returns how many.
    fn value_regions(&self, zero: &ZeroIndex, cells: &[u8], mut frontier: u32, level: u32) -> u64 {
        assert!(
            level + 1 < u32::from(SEVERAL),
            "zero-aware values stay below 127"
        );
        let free = self.all & !cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let mut valued = 0;
        while frontier != 0 {
            let region = flood(frontier & frontier.wrapping_neg(), free, self.shape);
            frontier &= !region;
            let (index, several) = zero.locate(cells, region);
            let flag = if several { SEVERAL } else { 0 };
            self.values[index].store((level as u8 + 1) | flag, Ordering::Relaxed);
            valued += 1;
        }
        valued
    }

    /// The successors of one placement's states whose blank regions make up `frontier`, with
    /// their words prefetched.
    ///
    /// A successor's index is derived from the placement's rather than ranked afresh: moving tile
    /// i from `from` to `to` changes its own digit, and the digit of each later tile lying
    /// strictly between the two cells by one (none for a sideways move, since the cells are
    /// adjacent; up to side - 1 for a vertical one).
    fn successors(&self, placement: &Placement<'_>, frontier: u32, expansion: &mut Expansion) {
        let cells = placement.cells;
        expansion.count = 0;
        expansion.occupied = cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let mut taken_before = 0u32;
        for (i, &from) in cells.iter().enumerate() {
            let mut targets = self.adjacent[usize::from(from)] & frontier;
            while targets != 0 {
                let to = targets.trailing_zeros() as u8;
                targets &= targets - 1;
                let digit =
                    i64::from(to) - i64::from((taken_before & ((1u32 << to) - 1)).count_ones());
                let mut index = i64::from(placement.index)
                    + self.weights[i] * (digit - i64::from(placement.digits[i]));
                if from.abs_diff(to) > 1 {
                    let (low, high, sign) = if to > from {
                        (from, to, 1)
                    } else {
                        (to, from, -1)
                    };
                    for (&cell, &weight) in cells[i + 1..].iter().zip(&self.weights[i + 1..]) {
                        if low < cell && cell < high {
                            index += sign * weight;
                        }
                    }
                }
                let index = index as usize;
                prefetch(&self.marks[index]);
                expansion.successors[expansion.count] = (index, from, to);
                expansion.count += 1;
            }
            taken_before |= 1 << from;
        }
    }

    /// Claims the unvisited successors of an expansion; returns how many. Only for those is the
    /// flood fill of the blank's new region paid.
    fn claim_all(&self, expansion: &Expansion, next_code: u64) -> u64 {
        let successors = &expansion.successors[..expansion.count];
        let mut words = [0u64; 4 * MAX_PATTERN];
        for (word, &(index, _, _)) in words.iter_mut().zip(successors) {
            *word = self.marks[index].load();
        }
        let mut added = 0;
        for (&word, &(index, from, to)) in words.iter().zip(successors) {
            if (word >> (2 * from)) & 3 != 0 {
                continue;
            }
            let free = self.all & !(expansion.occupied ^ (1 << from) ^ (1 << to));
            added += self.claim(
                index,
                word,
                flood(1 << from, free, self.shape),
                from,
                next_code,
            );
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
}

/// A placement being expanded: its index, its tiles' cells and their digits.
struct Placement<'a> {
    index: u32,
    cells: &'a [u8],
    digits: &'a [u8],
}

/// The successors of one placement: (placement index, the cell the pattern tile left, the cell
/// it entered). The blank ends on the cell the tile left, so that cell's mark says whether the
/// successor state is new.
struct Expansion {
    successors: [(usize, u8, u8); 4 * MAX_PATTERN],
    count: usize,
    occupied: u32,
}

impl Expansion {
    const EMPTY: Expansion = Expansion {
        successors: [(0, 0, 0); 4 * MAX_PATTERN],
        count: 0,
        occupied: 0,
    };
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
