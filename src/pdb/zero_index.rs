//! Dense indices of zero-aware pattern states: the pattern tiles' cells *and* the connected region
//! of free cells the blank is in. A placement-only table keeps, per placement, the least value
//! over every blank position; a zero-aware table keeps one value per region, which is larger
//! wherever the pattern walls the blank off from where it must go.
//!
//! Layout, placement-major so that lookups keep the placement tables' locality (a move of a
//! pattern's last tiles changes the low digits of the rank only):
//! - the first `placements(n, k)` entries are indexed by placement rank (`index::rank`) and hold
//!   the value of the placement's *main* region (its largest, the lowest cell breaking ties),
//!   with [`SEVERAL`] set when the placement's free cells fall into more than one region;
//! - the other regions follow, at `placements + (extra[map] + j) * k! + order`: `map` is the set
//!   of occupied cells (ranked in the combinatorial number system), `extra[map]` counts the
//!   non-main regions of every smaller map, `j` numbers this map's non-main regions by their
//!   lowest cell, and `order` ranks which tile sits on which of the map's cells.
//!
//! So a lookup reads one byte, and only when [`SEVERAL`] is set and the blank is off the main
//! region does it flood the free cells and read a second. 6 tiles on 5x5: 127,512,000 + 53,496,000
//! = 181,008,000 entries. The blank stays in its region while it moves over free cells, so a
//! zero-aware term changes only when one of its own tiles moves, like a placement-only one.

use crate::board::Shape;
use crate::pdb::index::{placements, rank};

/// Set on a main-region entry whose placement has more than one free region.
pub const SEVERAL: u8 = 0x80;
/// Most tiles a zero-aware pattern may have (the choose table's width less one).
pub const MAX_ZERO_AWARE_TILES: usize = 8;

/// The zero-aware index space of `k` tiles on a `side` x `side` board.
#[derive(Clone, Debug)]
pub struct ZeroIndex {
    side: usize,
    /// The cells of the first and of the last column.
    first_col: u32,
    last_col: u32,
    cells: usize,
    k: usize,
    /// k!
    orders: u32,
    /// Placements: where the non-main regions start.
    main: u32,
    /// `choose[c][i]` = C(c, i).
    choose: [[u32; 9]; 32],
    /// Per map rank: the non-main regions of every smaller map (one more entry at the end, so
    /// that map `r`'s are `extra[r]..extra[r + 1]`).
    extra: Vec<u32>,
    /// Every map's non-main regions as cell masks, by map rank and then lowest cell, so that a
    /// lookup finds the blank's region with a mask test instead of flooding the board.
    regions: Vec<u32>,
    entries: u64,
}

impl ZeroIndex {
    pub fn new(side: usize, k: usize) -> ZeroIndex {
        assert!(k <= MAX_ZERO_AWARE_TILES && side * side <= 32);
        let cells = side * side;
        let mut choose = [[0u32; 9]; 32];
        for row in choose.iter_mut() {
            row[0] = 1;
        }
        for c in 1..32 {
            for i in 1..9 {
                choose[c][i] = choose[c - 1][i - 1] + choose[c - 1][i];
            }
        }
        let all = all_cells(cells);
        let maps = choose[cells][k] as usize;
        let mut extra = Vec::with_capacity(maps + 1);
        let mut regions = Vec::new();
        // Every k-subset in rank order: Gosper's hack visits masks in increasing order, which is
        // the combinatorial number system's order.
        let mut map: u32 = (1u32 << k) - 1;
        for _ in 0..maps {
            extra.push(regions.len() as u32);
            let free = all & !map;
            let (found, count) = free_regions(free, side);
            let main = main_region(&found[..count]);
            regions.extend((0..count).filter(|&i| i != main).map(|i| found[i]));
            let lowest = map & map.wrapping_neg();
            let ripple = map + lowest;
            map = (((ripple ^ map) >> 2) / lowest) | ripple;
        }
        extra.push(regions.len() as u32);
        let total = regions.len() as u64;
        let orders: u32 = (1..=k as u32).product();
        let main = placements(cells, k);
        let first_col = (0..side).fold(0u32, |m, row| m | 1 << (row * side));
        ZeroIndex {
            side,
            first_col,
            last_col: first_col << (side - 1),
            cells,
            k,
            orders,
            main: main as u32,
            choose,
            extra,
            regions,
            entries: main + total * u64::from(orders),
        }
    }

    /// The number of pattern tiles.
    pub fn tiles(&self) -> usize {
        self.k
    }

    /// Entries of a table over this index.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The value in `entries` for the pattern tiles on `cells` (in pattern order) with the blank
    /// on `blank`.
    #[inline(always)]
    pub fn value(&self, entries: &[u8], cells: impl Iterator<Item = u8> + Clone, blank: u8) -> u8 {
        let main = entries[rank(self.cells, cells.clone()) as usize];
        self.resolve(entries, main, cells, blank)
    }

    /// The value given the placement's main entry `main` (read at the placement's rank).
    #[inline(always)]
    pub fn resolve(
        &self,
        entries: &[u8],
        main: u8,
        cells: impl Iterator<Item = u8> + Clone,
        blank: u8,
    ) -> u8 {
        if main & SEVERAL == 0 {
            return main;
        }
        self.off_main(entries, main, cells, blank)
    }

    /// The value for a placement with several regions: the main entry's, or a second read.
    #[inline(always)]
    fn off_main(
        &self,
        entries: &[u8],
        main: u8,
        cells: impl Iterator<Item = u8> + Clone,
        blank: u8,
    ) -> u8 {
        let map = cells.clone().fold(0u32, |m, c| m | 1 << c);
        if self.in_majority(1 << blank, all_cells(self.cells) & !map) {
            return main & !SEVERAL;
        }
        let map_rank = self.map_rank(map);
        match self.region_number(map_rank, 1 << blank) {
            None => main & !SEVERAL,
            Some(j) => entries[self.extra_index(map, map_rank, cells, j) as usize],
        }
    }

    /// Whether the region of `free` holding `seed` has more than half the free cells, which
    /// makes it the main region. Grown a step at a time: the blank is mostly in the main region,
    /// which passes half within a few steps, so most lookups of a placement with several regions
    /// need neither a full flood nor the region tables (which miss the cache).
    #[inline(always)]
    fn in_majority(&self, seed: u32, free: u32) -> bool {
        let half = free.count_ones() / 2;
        let mut region = seed;
        loop {
            let grown = self.grow(region, free);
            if grown.count_ones() > half {
                return true;
            }
            if grown == region {
                return false;
            }
            region = grown;
        }
    }

    /// `region` and the cells of `free` next to it.
    #[inline(always)]
    fn grow(&self, region: u32, free: u32) -> u32 {
        (region
            | (region << self.side)
            | (region >> self.side)
            | ((region & !self.last_col) << 1)
            | ((region & !self.first_col) >> 1))
            & free
    }

    /// Where the state with the pattern tiles on `cells` and the blank anywhere in `region` is
    /// kept, and whether that is a main entry of a placement with several regions (which the
    /// builder marks with [`SEVERAL`]).
    pub fn locate(&self, cells: &[u8], region: u32) -> (usize, bool) {
        let map = cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let map_rank = self.map_rank(map);
        match self.region_number(map_rank, region) {
            None => (
                rank(self.cells, cells.iter().copied()) as usize,
                self.extra[map_rank as usize + 1] > self.extra[map_rank as usize],
            ),
            Some(j) => (
                self.extra_index(map, map_rank, cells.iter().copied(), j) as usize,
                false,
            ),
        }
    }

    fn extra_index(&self, map: u32, map_rank: u32, cells: impl Iterator<Item = u8>, j: u32) -> u32 {
        self.main + (self.extra[map_rank as usize] + j) * self.orders + self.order(map, cells)
    }

    /// `None` when the region holding `seed` is the main region of the map ranked `map_rank`,
    /// else its number among the other regions by lowest cell.
    #[inline(always)]
    fn region_number(&self, map_rank: u32, seed: u32) -> Option<u32> {
        let first = self.extra[map_rank as usize] as usize;
        let end = self.extra[map_rank as usize + 1] as usize;
        self.regions[first..end]
            .iter()
            .position(|&region| region & seed != 0)
            .map(|j| j as u32)
    }

    /// The map's rank in the combinatorial number system.
    fn map_rank(&self, map: u32) -> u32 {
        let mut rest = map;
        let mut rank = 0u32;
        let mut i = 1;
        while rest != 0 {
            let cell = rest.trailing_zeros() as usize;
            rank += self.choose[cell & 31][i.min(MAX_ZERO_AWARE_TILES)];
            rest &= rest - 1;
            i += 1;
        }
        rank
    }

    /// Which tile is on which of the map's cells, as a rank of a permutation of k.
    fn order(&self, map: u32, cells: impl Iterator<Item = u8>) -> u32 {
        let mut taken = 0u32;
        let mut rank = 0u32;
        for (i, cell) in cells.enumerate() {
            // The tile's place among the map's cells, then among those not yet taken.
            let place = (map & ((1u32 << cell) - 1)).count_ones();
            let digit = place - (taken & ((1u32 << place) - 1)).count_ones();
            rank = rank * (self.k - i) as u32 + digit;
            taken |= 1 << place;
        }
        rank
    }
}

fn all_cells(cells: usize) -> u32 {
    if cells == 32 {
        u32::MAX
    } else {
        (1u32 << cells) - 1
    }
}

/// The connected regions of `free` cells, by lowest cell, and how many there are.
fn free_regions(free: u32, side: usize) -> ([u32; 32], usize) {
    let mut regions = [0u32; 32];
    let mut count = 0;
    let mut rest = free;
    while rest != 0 {
        let region = flood(rest & rest.wrapping_neg(), free, Shape::square(side));
        rest &= !region;
        regions[count] = region;
        count += 1;
    }
    (regions, count)
}

/// Which of `regions` (by lowest cell) is the main one: the largest, the first among equals.
fn main_region(regions: &[u32]) -> usize {
    (0..regions.len())
        .max_by_key(|&i| (regions[i].count_ones(), std::cmp::Reverse(i)))
        .unwrap_or(0)
}

/// Number of connected regions of `free` cells.
#[cfg(test)]
fn region_count(free: u32, side: usize) -> u32 {
    free_regions(free, side).1 as u32
}

/// The cells of `free` connected to `seed` on a board of `shape`.
pub fn flood(seed: u32, free: u32, shape: Shape) -> u32 {
    let (rows, cols) = (shape.rows(), shape.cols());
    let first_col = (0..rows).fold(0u32, |m, row| m | 1 << (row * cols));
    let last_col = first_col << (cols - 1);
    let mut region = seed & free;
    loop {
        let grown = (region
            | (region << cols)
            | (region >> cols)
            | ((region & !last_col) << 1)
            | ((region & !first_col) >> 1))
            & free;
        if grown == region {
            return region;
        }
        region = grown;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_tiles_on_five_by_five_have_the_published_size() {
        assert_eq!(ZeroIndex::new(5, 6).entries(), 181_008_000);
    }

    /// Every (placement, region) state of small spaces gets its own place, together they fill
    /// the space, and a lookup with the blank anywhere in a region finds its place.
    #[test]
    fn indices_are_dense_and_distinct() {
        for (side, k) in [(3, 3), (4, 3), (4, 4), (5, 2)] {
            let index = ZeroIndex::new(side, k);
            let cells = side * side;
            let mut seen = vec![false; index.entries() as usize];
            let mut placement = vec![0u8; k];
            // Every state's place, then a table whose entries are their own places (mod 127),
            // flagged as the builder flags them, read back with the blank on every cell.
            let mut states = Vec::new();
            visit(&mut placement, 0, cells, &mut |tiles| {
                let map = tiles.iter().fold(0u32, |m, &c| m | 1 << c);
                let free = all_cells(cells) & !map;
                let several = region_count(free, side) > 1;
                let mut rest = free;
                while rest != 0 {
                    let region = flood(rest & rest.wrapping_neg(), free, Shape::square(side));
                    rest &= !region;
                    let (i, flagged) = index.locate(tiles, region);
                    assert!(!seen[i], "{side}x{side} {tiles:?}: place {i} twice");
                    assert!(!flagged || several);
                    seen[i] = true;
                    states.push((tiles.to_vec(), region, i, flagged));
                }
            });
            let mut entries: Vec<u8> = (0..index.entries()).map(|e| (e % 127) as u8).collect();
            for &(_, _, i, flagged) in &states {
                if flagged {
                    entries[i] |= SEVERAL;
                }
            }
            for (tiles, region, i, _) in &states {
                let mut blanks = *region;
                while blanks != 0 {
                    let blank = blanks.trailing_zeros() as u8;
                    blanks &= blanks - 1;
                    let value = index.value(&entries, tiles.iter().copied(), blank);
                    assert_eq!(value, (i % 127) as u8, "{tiles:?} blank {blank}");
                }
            }
            assert!(seen.iter().all(|&s| s), "{side}x{side}, {k} tiles: dense");
        }
    }

    fn visit(tiles: &mut Vec<u8>, i: usize, cells: usize, f: &mut dyn FnMut(&[u8])) {
        if i == tiles.len() {
            f(tiles);
            return;
        }
        for cell in 0..cells as u8 {
            if !tiles[..i].contains(&cell) {
                tiles[i] = cell;
                visit(tiles, i + 1, cells, f);
            }
        }
    }
}
