//! Dense indices of zero-aware pattern states: the pattern tiles' cells *and* the connected region
//! of free cells the blank is in. A placement-only table keeps, per placement, the least value
//! over every blank position; a zero-aware table keeps one value per region, which is larger
//! wherever the pattern walls the blank off from where it must go.
//!
//! An index is `(offset[map] + region) * k! + order`: `map` is the set of cells the k tiles
//! occupy (ranked in the combinatorial number system), `region` numbers the free regions of that
//! map by their lowest cell, and `order` ranks which tile sits on which of the map's cells (a
//! permutation of k). `offset` counts the regions of every smaller map, so the index is dense:
//! 181,008,000 entries for 6 tiles on 5x5, against 127,512,000 placements.
//!
//! The blank stays in its region while it moves over free cells, so a zero-aware term changes
//! only when one of its own tiles moves, like a placement-only one.

/// The zero-aware index space of `k` tiles on a `side` x `side` board.
#[derive(Clone, Debug)]
pub struct ZeroIndex {
    side: usize,
    cells: usize,
    k: usize,
    /// k!
    orders: u32,
    /// `choose[c][i]` = C(c, i).
    choose: [[u32; 9]; 32],
    /// Per map rank: the regions of all smaller maps (low 31 bits), and whether this map has
    /// more than one region (the top bit).
    offsets: Vec<u32>,
    entries: u64,
}

const SEVERAL_REGIONS: u32 = 1 << 31;
/// Most tiles a zero-aware pattern may have (the choose table's width less one).
pub const MAX_ZERO_AWARE_TILES: usize = 8;

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
        let maps = choose[cells][k] as usize;
        let all = if cells == 32 {
            u32::MAX
        } else {
            (1u32 << cells) - 1
        };
        let mut offsets = vec![0u32; maps];
        let mut total = 0u64;
        // Visit every k-subset in rank order (Gosper's hack enumerates them in increasing order
        // of the mask, which is the combinatorial number system's order).
        let mut map: u32 = (1u32 << k) - 1;
        for offset in offsets.iter_mut() {
            let regions = region_count(all & !map, side);
            *offset = total as u32 | if regions > 1 { SEVERAL_REGIONS } else { 0 };
            total += u64::from(regions);
            let lowest = map & map.wrapping_neg();
            let ripple = map + lowest;
            map = (((ripple ^ map) >> 2) / lowest) | ripple;
        }
        let orders = (1..=k as u32).product();
        ZeroIndex {
            side,
            cells,
            k,
            orders,
            choose,
            offsets,
            entries: total * u64::from(orders),
        }
    }

    /// Entries of a table over this index.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The index of the pattern tiles on `cells` (in pattern order) with the blank on `blank`.
    #[inline(always)]
    pub fn index(&self, cells: impl Iterator<Item = u8> + Clone, blank: u8) -> u32 {
        let map = cells.clone().fold(0u32, |m, c| m | 1 << c);
        let (base, several) = self.map_base(map);
        let region = if several {
            self.region_of(map, 1 << blank)
        } else {
            0
        };
        (base + region) * self.orders + self.order(map, cells)
    }

    /// The index of the pattern tiles on `cells` with the blank anywhere in `region`.
    pub fn index_in_region(&self, cells: &[u8], region: u32) -> u32 {
        let map = cells.iter().fold(0u32, |m, &c| m | 1 << c);
        let (base, several) = self.map_base(map);
        let region = if several {
            self.region_of(map, region)
        } else {
            0
        };
        (base + region) * self.orders + self.order(map, cells.iter().copied())
    }

    /// The map's first region number, and whether it has more than one region.
    #[inline(always)]
    fn map_base(&self, map: u32) -> (u32, bool) {
        let mut rest = map;
        let mut rank = 0u32;
        let mut i = 1;
        while rest != 0 {
            let cell = rest.trailing_zeros() as usize;
            rank += self.choose[cell & 31][i.min(MAX_ZERO_AWARE_TILES)];
            rest &= rest - 1;
            i += 1;
        }
        let offset = self.offsets[rank as usize];
        (offset & !SEVERAL_REGIONS, offset & SEVERAL_REGIONS != 0)
    }

    /// Which tile is on which of the map's cells, as a rank of a permutation of k.
    #[inline(always)]
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

    /// The number of the free region of `map` that holds `seed`: how many regions have a lower
    /// lowest cell.
    #[cold]
    fn region_of(&self, map: u32, seed: u32) -> u32 {
        let free = self.all() & !map;
        let lowest = flood(seed & free, free, self.side).trailing_zeros();
        let mut below = free & ((1u32 << lowest) - 1);
        let mut number = 0;
        while below != 0 {
            below &= !flood(below & below.wrapping_neg(), free, self.side);
            number += 1;
        }
        number
    }

    fn all(&self) -> u32 {
        if self.cells == 32 {
            u32::MAX
        } else {
            (1u32 << self.cells) - 1
        }
    }
}

/// Number of connected regions of `free` cells.
fn region_count(free: u32, side: usize) -> u32 {
    let mut rest = free;
    let mut count = 0;
    while rest != 0 {
        rest &= !flood(rest & rest.wrapping_neg(), free, side);
        count += 1;
    }
    count
}

/// The cells of `free` connected to `seed` on a `side` x `side` board.
pub fn flood(seed: u32, free: u32, side: usize) -> u32 {
    let first_col = (0..side).fold(0u32, |m, row| m | 1 << (row * side));
    let last_col = first_col << (side - 1);
    let mut region = seed & free;
    loop {
        let grown = (region
            | (region << side)
            | (region >> side)
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

    /// Every (placement, region) state of small spaces gets its own index, and together they
    /// fill the space.
    #[test]
    fn indices_are_dense_and_distinct() {
        for (side, k) in [(3, 3), (4, 3), (4, 4), (5, 2)] {
            let index = ZeroIndex::new(side, k);
            let cells = side * side;
            let mut seen = vec![false; index.entries() as usize];
            let mut placement = vec![0u8; k];
            visit(&mut placement, 0, cells, &mut |tiles| {
                let map = tiles.iter().fold(0u32, |m, &c| m | 1 << c);
                let free = index.all() & !map;
                let mut rest = free;
                while rest != 0 {
                    let region = flood(rest & rest.wrapping_neg(), free, side);
                    rest &= !region;
                    let i = index.index_in_region(tiles, region) as usize;
                    assert!(!seen[i], "{side}x{side} {tiles:?}: index {i} twice");
                    seen[i] = true;
                    let blank = region.trailing_zeros() as u8;
                    assert_eq!(index.index(tiles.iter().copied(), blank) as usize, i);
                }
            });
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
