//! The zero-aware table builder: the breadth-first search of `builder` over (placement, blank
//! region) states, with no marks beside the values. A state's entry is its mark: 0 while
//! unreached, else 1 + its level (with [`SEVERAL`] on a main entry whose placement has several
//! regions), so a level's frontier is the entries holding that level, and a build takes one
//! byte per state. 7 tiles on 5x5 have 4.07 G states: 4.07 GB here, where `builder`'s 2-bit
//! marks per cell of each placement would add 19.5 GB (more than a 24 GB machine has to spare).
//!
//! Each level scans the entries of the blocks that a state entered at the level before, decodes
//! each frontier state ([`ZeroIndex::state`]), and claims every successor still at 0 with a
//! compare-and-swap, so a state is claimed once. A successor is a pattern tile moved onto a cell
//! of the blank's region; the blank ends on the cell the tile left, which names the successor's
//! region (the index keeps every placement's regions, so nothing is flooded). A state's successors are computed, and their entries prefetched, while
//! the previous state's are claimed: the claims are random reads over gigabytes.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

use memmap2::MmapMut;

use crate::board::Board;
use crate::pdb::builder::BuildProgress;
use crate::pdb::prefetch;
use crate::pdb::zero_index::{flood, ZeroIndex, MAX_ZERO_AWARE_TILES, SEVERAL};
use crate::pdb::zeroed::{adjacent_cells, ZeroedArray};

/// Entries per block of the level flags, and blocks a thread claims at a time.
const BLOCK_SHIFT: u32 = 12;
const CLAIM_BLOCKS: usize = 16;
/// The most successors of one state: each pattern tile moved to each of its neighbours.
const MAX_SUCCESSORS: usize = 4 * MAX_ZERO_AWARE_TILES;

/// Builds the zero-aware table of `pattern` (tile labels) towards `goal`: for every placement of
/// the pattern tiles and blank region, the fewest pattern-tile moves that bring them home,
/// laid out as [`ZeroIndex`] says.
pub fn build(
    goal: &Board,
    pattern: &[u8],
    threads: usize,
    progress: &(dyn Fn(BuildProgress) + Sync),
) -> std::io::Result<MmapMut> {
    Ok(Builder::new(goal, pattern)?.run(threads, progress))
}

struct Builder {
    k: usize,
    all: u32,
    adjacent: [u32; 32],
    zero: ZeroIndex,
    /// 1 + each state's value, 0 while unreached, [`SEVERAL`] as the table keeps it.
    values: ZeroedArray<AtomicU8>,
    /// Per block of entries: did a state in it enter the current / next level?
    active: Vec<AtomicBool>,
    next_active: Vec<AtomicBool>,
}

impl Builder {
    fn new(goal: &Board, pattern: &[u8]) -> std::io::Result<Self> {
        let shape = goal.shape();
        let zero = ZeroIndex::new(goal.side(), pattern.len());
        let entries = zero.entries() as usize;
        let blocks = (entries >> BLOCK_SHIFT) + 1;
        let flags = || {
            std::iter::repeat_with(|| AtomicBool::new(false))
                .take(blocks)
                .collect()
        };
        let builder = Builder {
            k: pattern.len(),
            all: ((1u64 << goal.cells()) - 1) as u32,
            adjacent: adjacent_cells(shape),
            values: ZeroedArray::new(entries)?,
            zero,
            active: flags(),
            next_active: flags(),
        };
        let goal_cells = goal.positions();
        let start: Vec<u8> = pattern
            .iter()
            .map(|&tile| goal_cells[usize::from(tile)])
            .collect();
        let occupied = start.iter().fold(0u32, |m, &c| m | 1 << c);
        let region = flood(1 << goal.blank(), builder.all & !occupied, shape);
        let (index, several) = builder.zero.locate(&start, region);
        builder.values[index].store(1 | several_flag(several), Ordering::Relaxed);
        builder.active[index >> BLOCK_SHIFT].store(true, Ordering::Relaxed);
        Ok(builder)
    }

    fn run(mut self, threads: usize, progress: &(dyn Fn(BuildProgress) + Sync)) -> MmapMut {
        let started = Instant::now();
        let total = self.values.len() as u64;
        let mut reached = 1u64;
        let mut level = 0u32;
        loop {
            assert!(
                level + 2 < u32::from(SEVERAL),
                "zero-aware values stay below 127"
            );
            let next_block = AtomicUsize::new(0);
            let added = AtomicU64::new(0);
            std::thread::scope(|scope| {
                for _ in 0..threads.max(1) {
                    scope.spawn(|| {
                        added.fetch_add(self.scan(&next_block, level), Ordering::Relaxed);
                    });
                }
            });
            let added = added.into_inner();
            reached += added;
            if added == 0 {
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
        let mut entries = self.values.into_map();
        // Stored as value + 1 with 0 for unreached: shift back, so unreached becomes 255.
        entries
            .iter_mut()
            .for_each(|entry| *entry = entry.wrapping_sub(1));
        entries
    }

    /// Expands every state of `level` in the blocks this thread claims. Returns the states it
    /// claimed for the next level.
    fn scan(&self, next_block: &AtomicUsize, level: u32) -> u64 {
        let frontier = level as u8 + 1;
        let mut added = 0;
        let mut expansions = [Successors::EMPTY, Successors::EMPTY];
        let mut current = 0;
        loop {
            let first = next_block.fetch_add(CLAIM_BLOCKS, Ordering::Relaxed);
            if first >= self.active.len() {
                return added + self.claim_all(&expansions[1 - current], frontier + 1);
            }
            for block in first..(first + CLAIM_BLOCKS).min(self.active.len()) {
                if !self.active[block].load(Ordering::Relaxed) {
                    continue;
                }
                let start = block << BLOCK_SHIFT;
                let end = ((block + 1) << BLOCK_SHIFT).min(self.values.len());
                for index in start..end {
                    if self.values[index].load(Ordering::Relaxed) & !SEVERAL != frontier {
                        continue;
                    }
                    self.successors(index as u32, &mut expansions[current]);
                    current = 1 - current;
                    added += self.claim_all(&expansions[current], frontier + 1);
                }
            }
        }
    }

    /// The successors of the state at `index`, with their entries prefetched.
    fn successors(&self, index: u32, successors: &mut Successors) {
        let mut cells = [0u8; 32];
        let region = self.zero.state(index, &mut cells);
        let cells = &mut cells[..self.k];
        successors.count = 0;
        for i in 0..self.k {
            let from = cells[i];
            let mut targets = self.adjacent[usize::from(from)] & region;
            while targets != 0 {
                let to = targets.trailing_zeros() as u8;
                targets &= targets - 1;
                cells[i] = to;
                // The blank is on `from`: its region is the one holding that cell.
                let (successor, several) = self.zero.locate(cells, 1 << from);
                prefetch(&self.values[successor]);
                successors.entries[successors.count] = (successor, several_flag(several));
                successors.count += 1;
            }
            cells[i] = from;
        }
    }

    /// Claims the unreached successors for the level whose entries hold `next`; returns how many.
    fn claim_all(&self, successors: &Successors, next: u8) -> u64 {
        let mut added = 0;
        for &(index, flag) in &successors.entries[..successors.count] {
            let claimed = self.values[index]
                .compare_exchange(0, next | flag, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
            if claimed {
                self.next_active[index >> BLOCK_SHIFT].store(true, Ordering::Relaxed);
                added += 1;
            }
        }
        added
    }
}

fn several_flag(several: bool) -> u8 {
    if several {
        SEVERAL
    } else {
        0
    }
}

/// One state's successors: each one's entry and the flag its main entry carries.
struct Successors {
    entries: [(usize, u8); MAX_SUCCESSORS],
    count: usize,
}

impl Successors {
    const EMPTY: Successors = Successors {
        entries: [(0, 0); MAX_SUCCESSORS],
        count: 0,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;

    /// The same table, byte for byte, as the builder with per-cell marks makes.
    #[test]
    fn builds_what_the_marking_builder_builds() {
        let cases: [(Board, &[u8]); 4] = [
            (Board::blank_last(3), &[1, 2, 3, 4]),
            (Board::blank_first(4), &[1, 2, 5, 6]),
            (Board::blank_last(4), &[9, 10, 13, 14, 15]),
            (Board::blank_last(5), &[1, 2, 3]),
        ];
        for (goal, pattern) in cases {
            let marked = crate::pdb::builder::build(&goal, pattern, true, 2, &|_| {}).unwrap();
            let lean = build(&goal, pattern, 2, &|_| {}).unwrap();
            assert!(marked[..] == lean[..], "{pattern:?} on {goal:?}");
        }
    }
}
