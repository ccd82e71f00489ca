//! Placement ranks in a few vector instructions, for the search kernel.
//!
//! [`index::rank`](crate::pdb::index::rank) costs about 18 instructions a pattern tile (a load
//! chain, a popcount and a multiply that waits on the previous one), and the kernel ranks two
//! patterns for every child it generates: on the 7-8 preset that was half of all instructions.
//! On boards of up to 32 cells every cell and tile number fits in a byte lane, so two 16-byte
//! registers hold the cells of all tiles, and the byte shuffle (`pshufb`, on each half, blended)
//! both gathers the pattern tiles' cells in pattern order and maps them through the mirror
//! image's cell table. Each digit (the tile's cell less the earlier tiles on lower cells) is then
//! counted for all tiles at once by comparing the cells with themselves shifted by one to seven
//! lanes, and the digits are weighted and summed with 32-bit vector multiplies.
//!
//! Needs SSSE3 and SSE4.1, which the x86-64-v2 target this crate is built for has
//! (`.cargo/config.toml`); elsewhere [`ShuffleRank::new`] returns `None` and the kernel ranks as
//! before.

use crate::pdb::index::digit_weight;

/// Most cells on a board this ranks on (two registers of byte lanes).
const MAX_CELLS: usize = 32;
/// Byte lanes in a register.
const LANES: usize = 16;
/// Most pattern tiles this ranks (two vectors of four 32-bit weights).
pub const MAX_RANKED: usize = 8;

/// How one pattern of at most [`MAX_RANKED`] tiles is ranked, on the board and on its mirror
/// image.
#[derive(Clone, Copy, Debug)]
pub struct ShuffleRank {
    /// Lane i holds the i-th pattern tile (whose cell is picked from the board's cells); lanes
    /// past the pattern pick the blank, whose digit has weight 0.
    order: [u8; LANES],
    /// Lane i holds the tile whose cell, mirrored, is the i-th pattern tile's cell on the mirror
    /// image.
    mirror_order: [u8; LANES],
    /// Cell -> its mirror image.
    mirror_cell: [u8; MAX_CELLS],
    /// Each digit's weight: the product of the later digits' radices (0 past the pattern).
    weights: [u32; MAX_RANKED],
}

/// The cells of a board's tiles (tile -> cell, the blank being tile 0), held in registers.
#[derive(Clone, Copy, Debug)]
pub struct Cells(simd::Cells);

impl Cells {
    #[inline(always)]
    pub fn of(cells: &[u8; 32]) -> Cells {
        Cells(simd::load(cells))
    }

    /// The cells after `tile` slid onto the blank's cell `to` from `from`: built in registers,
    /// so the child's ranks do not wait for the board's bytes to be stored and read back.
    #[inline(always)]
    pub fn moved(self, tile: u8, from: u8, to: u8) -> Cells {
        Cells(simd::moved(self.0, tile, from, to))
    }
}

impl ShuffleRank {
    /// A placeholder for an array slot no table uses (it ranks every placement 0).
    pub const UNUSED: ShuffleRank = ShuffleRank {
        order: [0; LANES],
        mirror_order: [0; LANES],
        mirror_cell: [0; MAX_CELLS],
        weights: [0; MAX_RANKED],
    };

    /// The ranking of `tiles` on a board of `cells` cells, with the mirror image given as its
    /// tile and cell maps; `None` unless the board has at most 32 cells, the pattern at most
    /// [`MAX_RANKED`] tiles, and the build the vector instructions this needs.
    pub fn new(cells: usize, tiles: &[u8], mirror: Option<(&[u8], &[u8])>) -> Option<Self> {
        if !SUPPORTED || cells > MAX_CELLS || tiles.len() > MAX_RANKED {
            return None;
        }
        let k = tiles.len();
        let mut rank = ShuffleRank {
            order: [0; LANES],
            mirror_order: [0; LANES],
            mirror_cell: std::array::from_fn(|cell| cell as u8),
            weights: [0; MAX_RANKED],
        };
        rank.order[..k].copy_from_slice(tiles);
        if let Some((mirror_tile, mirror_cell)) = mirror {
            for (lane, &tile) in rank.mirror_order.iter_mut().zip(tiles) {
                *lane = mirror_tile[usize::from(tile)];
            }
            rank.mirror_cell[..cells].copy_from_slice(&mirror_cell[..cells]);
        }
        for (i, weight) in rank.weights.iter_mut().enumerate().take(k) {
            *weight = digit_weight(cells, k, i);
        }
        Some(rank)
    }

    /// The rank of the placement on the board whose tiles are on `cells` (tile -> cell; the
    /// blank is tile 0).
    #[inline(always)]
    pub fn rank(&self, cells: Cells) -> u32 {
        simd::rank(self, cells.0, false)
    }

    /// The rank of the placement on the mirror image of the board whose tiles are on `cells`.
    #[inline(always)]
    pub fn rank_mirrored(&self, cells: Cells) -> u32 {
        simd::rank(self, cells.0, true)
    }
}

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "ssse3",
    target_feature = "sse4.1"
))]
const SUPPORTED: bool = true;

#[cfg(not(all(
    target_arch = "x86_64",
    target_feature = "ssse3",
    target_feature = "sse4.1"
)))]
const SUPPORTED: bool = false;

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "ssse3",
    target_feature = "sse4.1"
))]
mod simd {
    use std::arch::x86_64::*;

    use super::ShuffleRank;

    /// Lane i of the result is `table[lane i of index]`, for a 32-byte table and indices below
    /// 32: each half looked up with `pshufb` (which reads an index's low four bits), and the high
    /// half's answer taken where the index is 16 or more.
    #[inline(always)]
    unsafe fn lookup(low: __m128i, high: __m128i, index: __m128i) -> __m128i {
        let from_high = _mm_cmpgt_epi8(index, _mm_set1_epi8(15));
        _mm_blendv_epi8(
            _mm_shuffle_epi8(low, index),
            _mm_shuffle_epi8(high, index),
            from_high,
        )
    }

    /// A 32-byte array in two registers: bytes 0-15, then 16-31.
    pub(super) type Cells = (__m128i, __m128i);

    #[inline(always)]
    pub(super) fn load(cells: &[u8; 32]) -> Cells {
        // SAFETY: two unaligned 16-byte loads at offsets 0 and 16 of a 32-byte array.
        unsafe {
            (
                _mm_loadu_si128(cells.as_ptr().cast()),
                _mm_loadu_si128(cells[16..].as_ptr().cast()),
            )
        }
    }

    /// `cells` with lane `tile` set to `to` and lane 0 (the blank's) to `from`.
    #[inline(always)]
    pub(super) fn moved((low, high): Cells, tile: u8, from: u8, to: u8) -> Cells {
        // SAFETY: SSE2 and SSE4.1 register operations only.
        unsafe {
            let lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let tile = tile as i8;
            let at_low = _mm_cmpeq_epi8(lanes, _mm_set1_epi8(tile));
            let at_high = _mm_cmpeq_epi8(lanes, _mm_set1_epi8(tile.wrapping_sub(16)));
            let to = _mm_set1_epi8(to as i8);
            let low = _mm_blendv_epi8(low, to, at_low);
            let high = _mm_blendv_epi8(high, to, at_high);
            let blank = _mm_cmpeq_epi8(lanes, _mm_setzero_si128());
            (_mm_blendv_epi8(low, _mm_set1_epi8(from as i8), blank), high)
        }
    }

    #[inline(always)]
    pub(super) fn rank(rank: &ShuffleRank, (low, high): Cells, mirrored: bool) -> u32 {
        // SAFETY: the loads read 16 bytes at offsets 0 and 16 of 32-byte arrays, or of arrays of
        // at least 16 (unaligned loads), and the instructions are all SSE2, SSSE3 or SSE4.1,
        // which this module is compiled only with.
        unsafe {
            let v = if mirrored {
                let sources = lookup(
                    low,
                    high,
                    _mm_loadu_si128(rank.mirror_order.as_ptr().cast()),
                );
                lookup(
                    _mm_loadu_si128(rank.mirror_cell.as_ptr().cast()),
                    _mm_loadu_si128(rank.mirror_cell[16..].as_ptr().cast()),
                    sources,
                )
            } else {
                lookup(low, high, _mm_loadu_si128(rank.order.as_ptr().cast()))
            };
            // Lane i compared with lane i - s: 127 fills the lanes with no earlier tile, and is
            // never below a cell. Each earlier tile on a lower cell subtracts one.
            let fill = _mm_set1_epi8(127);
            let mut digits = v;
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<15>(v, fill), v));
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<14>(v, fill), v));
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<13>(v, fill), v));
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<12>(v, fill), v));
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<11>(v, fill), v));
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<10>(v, fill), v));
            digits = _mm_add_epi8(digits, _mm_cmplt_epi8(_mm_alignr_epi8::<9>(v, fill), v));
            let low = _mm_mullo_epi32(
                _mm_cvtepu8_epi32(digits),
                _mm_loadu_si128(rank.weights.as_ptr().cast()),
            );
            let high = _mm_mullo_epi32(
                _mm_cvtepu8_epi32(_mm_srli_si128::<4>(digits)),
                _mm_loadu_si128(rank.weights[4..].as_ptr().cast()),
            );
            let sum = _mm_add_epi32(low, high);
            let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b01_00_11_10>(sum));
            let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b10_11_00_01>(sum));
            _mm_cvtsi128_si32(sum) as u32
        }
    }
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_feature = "ssse3",
    target_feature = "sse4.1"
)))]
mod simd {
    use super::ShuffleRank;

    pub(super) type Cells = [u8; 32];

    pub(super) fn load(cells: &[u8; 32]) -> Cells {
        *cells
    }

    pub(super) fn moved(mut cells: Cells, tile: u8, from: u8, to: u8) -> Cells {
        cells[usize::from(tile) & 31] = to;
        cells[0] = from;
        cells
    }

    /// Never called: [`ShuffleRank::new`] returns `None` on builds without the instructions.
    pub(super) fn rank(_rank: &ShuffleRank, _cells: Cells, _mirrored: bool) -> u32 {
        unreachable!("ShuffleRank is only made where it is supported")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::{Board, Position};
    use crate::direction::Direction;
    use crate::pdb::index::rank;

    /// Agrees with the scalar rank on random 4x4 and 5x5 boards, for every pattern size up to
    /// eight, on the board and on its mirror image, and on children built in registers.
    #[test]
    fn agrees_with_the_scalar_rank() {
        if !SUPPORTED {
            return;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for side in [4usize, 5] {
            let n = side * side;
            let transpose = |cell: usize| ((cell % side) * side + cell / side) as u8;
            let goal = Board::blank_last(side);
            let mirror_cell: Vec<u8> = (0..n).map(transpose).collect();
            let mirror_tile: Vec<u8> = (0..n)
                .map(|tile| {
                    let cell = goal.positions()[tile];
                    goal.tiles()[usize::from(transpose(usize::from(cell)))]
                })
                .collect();
            for _ in 0..2000 {
                let mut tiles: Vec<u8> = (0..n as u8).collect();
                for i in (1..n).rev() {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    tiles.swap(i, (seed >> 33) as usize % (i + 1));
                }
                let values: Vec<u64> = tiles.iter().map(|&t| u64::from(t)).collect();
                let board = Board::from_tiles(&values).unwrap();
                let position = Position::new(&board);
                // A child's cells built in registers from its parent's are the child's.
                for direction in Direction::ALL {
                    if let Some((child, tile)) = board.apply(direction) {
                        let (from, to) = (child.blank() as u8, board.blank() as u8);
                        let built = Cells::of(&position.cells).moved(tile, from, to);
                        let on_child = Position::new(&child);
                        // Tiles over both halves, and the blank with two others.
                        let spread: Vec<u8> = (1..n as u8).step_by(3).take(8).collect();
                        for pattern in [spread, vec![2, 0, 1]] {
                            let shuffle = ShuffleRank::new(n, &pattern, None).unwrap();
                            let cells = pattern.iter().map(|&t| on_child.cells[usize::from(t)]);
                            assert_eq!(shuffle.rank(built), rank(n, cells));
                        }
                    }
                }
                for k in 1..=MAX_RANKED {
                    // Distinct tiles spread over the board (7 is prime to 15 and to 24).
                    let pattern: Vec<u8> = (1..=k).map(|t| ((t * 7) % (n - 1) + 1) as u8).collect();
                    let maps = Some((&mirror_tile[..], &mirror_cell[..]));
                    let shuffle = ShuffleRank::new(n, &pattern, maps).unwrap();
                    let on_board = pattern.iter().map(|&t| position.cells[usize::from(t)]);
                    assert_eq!(shuffle.rank(Cells::of(&position.cells)), rank(n, on_board));
                    let mirrored = pattern.iter().map(|&t| {
                        let source = position.cells[usize::from(mirror_tile[usize::from(t)])];
                        mirror_cell[usize::from(source)]
                    });
                    assert_eq!(
                        shuffle.rank_mirrored(Cells::of(&position.cells)),
                        rank(n, mirrored)
                    );
                }
            }
        }
    }
}
