//! Named partitions of a board's tiles into disjoint patterns.
//!
//! The squares' presets are one list, [`PRESETS`]: each entry is everything about a preset
//! (its name, board size, sets, table layout, where `default` ranks it and what the help says
//! of it), and the parser, `default`, the table store, the CLI's help and the error messages
//! all read that list. A new preset is one entry there:
//!
//! ```
//! use tilesolve::pdb::{NamedPreset, Preset, PRESETS};
//! // A 4x4 preset of two 4-tile rows and the rest in a 7-tile block.
//! static ROWS: NamedPreset = NamedPreset {
//!     name: "4-4-7",
//!     side: 4,
//!     sets: &[&[&[0, 1, 2, 3], &[4, 5, 6, 7], &[8, 9, 10, 11, 12, 13, 14]]],
//!     zero_aware: false,
//!     default_rank: None,
//!     help: "two rows and a block",
//! };
//! let mut registry = PRESETS.to_vec();
//! registry.push(&ROWS);
//! let preset = Preset::parse_in("4-4-7", &registry).unwrap();
//! assert_eq!(preset.tables(), 3);
//! assert!(Preset::help_in(&registry).contains("4-4-7 (4x4: two rows and a block)"));
//! ```
//!
//! A rectangle's preset is `blocks-K`: its cells cut into at most four blocks of at most K
//! tiles (bands of rows, each cut into runs of columns; of the cuts that fit, the one whose
//! group sizes' squares sum highest, so an exact table where one fits), and `default` takes the
//! largest K whose tables fit the budget and hold at most [`BLOCK_TABLE_ENTRIES`] entries each.
//!
//! Groups are given as goal *cells* for a goal whose blank is in the last cell, so each group is
//! a compact block of the board (compact groups interact less with the others and give
//! markedly larger values than scattered ones of the same size). For a goal with the blank in
//! the first cell (Korf's) the blocks are rotated 180 degrees; for any other goal the non-blank
//! cells are cut into consecutive row-major runs of the same sizes.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use thiserror::Error;

use crate::board::{Board, Shape};
use crate::pdb::file::{PatternSpec, MAX_TABLE_CELLS};
use crate::pdb::lookup::MAX_GROUPS;

/// One named preset of the squares: everything about it, in one place.
#[derive(Debug)]
pub struct NamedPreset {
    /// Its name (`pdb:NAME` on the command line, in table file names and stored batches).
    pub name: &'static str,
    /// The side of the square boards it is for.
    pub side: usize,
    /// Its additive sets, each a partition of the cells of the goal with its blank last into
    /// groups (the heuristic is the maximum over the sets' sums).
    pub sets: &'static [&'static [&'static [u8]]],
    /// Whether its tables keep one entry per blank region (see `zero_index`).
    pub zero_aware: bool,
    /// Where `default` ranks it among its size's presets (0 first, the strongest), when its
    /// tables fit the memory budget; None: only by name.
    pub default_rank: Option<u8>,
    /// What the help says of it, after its name and size.
    pub help: &'static str,
}

/// The squares' presets: the one list a new preset is added to.
pub const PRESETS: &[&NamedPreset] = &[
    &NamedPreset {
        name: "exact",
        side: 3,
        sets: &[EXACT],
        zero_aware: false,
        default_rank: Some(0),
        help: "one table of all eight tiles, the exact distance of every board",
    },
    &NamedPreset {
        name: "4-4-4-3",
        side: 4,
        sets: &[P4443],
        zero_aware: false,
        default_rank: Some(3),
        help: "four tables",
    },
    &NamedPreset {
        name: "5-5-5",
        side: 4,
        sets: &[P555],
        zero_aware: false,
        default_rank: Some(2),
        help: "three tables",
    },
    &NamedPreset {
        name: "6-6-3",
        side: 4,
        sets: &[P663],
        zero_aware: false,
        default_rank: Some(1),
        help: "three tables",
    },
    &NamedPreset {
        name: "7-8",
        side: 4,
        sets: &[P78],
        zero_aware: false,
        default_rank: Some(0),
        help: "two tables: the strongest 4x4 preset",
    },
    &NamedPreset {
        name: "7-8-zero",
        side: 4,
        sets: &[P78],
        zero_aware: true,
        default_rank: None,
        help: "7-8 with zero-aware tables held by the blank's cell, 2.3 GB",
    },
    &NamedPreset {
        name: "6-6-6-6",
        side: 5,
        sets: &[P6666],
        zero_aware: false,
        default_rank: Some(2),
        help: "four tables",
    },
    &NamedPreset {
        name: "6-6-6-6-zero",
        side: 5,
        sets: &[P6666],
        zero_aware: true,
        default_rank: Some(1),
        help: "6-6-6-6 with zero-aware tables",
    },
    &NamedPreset {
        name: "6-6-6-6-max",
        side: 5,
        sets: P6666_MAX,
        zero_aware: true,
        default_rank: Some(0),
        help: "the maximum over seven zero-aware 6-6-6-6 sets (14 tables): the strongest 5x5 \
               preset",
    },
];

/// A preset: a named one of the squares, or `blocks-K` for a rectangle.
#[derive(Clone, Copy, Debug)]
pub enum Preset {
    Named(&'static NamedPreset),
    /// A rectangle's tiles in at most four blocks of at most this many tiles (2 to 8).
    Blocks(u8),
}

impl PartialEq for Preset {
    fn eq(&self, other: &Preset) -> bool {
        match (self, other) {
            (Preset::Named(a), Preset::Named(b)) => a.name == b.name,
            (Preset::Blocks(a), Preset::Blocks(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Preset {}

impl Hash for Preset {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Preset::Named(named) => named.name.hash(state),
            Preset::Blocks(k) => k.hash(state),
        }
    }
}

/// The most entries `default` lets a `blocks-K` table have: a table of 130 M entries (the 4x6
/// board's 6-tile ones) builds in about a minute here, and the next size up would be the 4x5
/// board's 7-tile tables at 390 M.
pub const BLOCK_TABLE_ENTRIES: u64 = 130_000_000;

/// The largest K of `blocks-K`: the table builder's most pattern tiles.
const MAX_BLOCK_TILES: u8 = 8;

const EXACT: &[&[u8]] = &[&[0, 1, 2, 3, 4, 5, 6, 7]];
//  0  1  2  3
//  4  5  6  7
//  8  9 10 11
// 12 13 14 [15]
const P4443: &[&[u8]] = &[&[0, 1, 4, 5], &[2, 3, 6, 7], &[8, 9, 12, 13], &[10, 11, 14]];
const P555: &[&[u8]] = &[&[0, 1, 4, 5, 8], &[2, 3, 6, 7, 11], &[9, 10, 12, 13, 14]];
const P663: &[&[u8]] = &[&[0, 1, 4, 5, 8, 9], &[2, 3, 6, 7, 10, 11], &[12, 13, 14]];
const P78: &[&[u8]] = &[&[0, 1, 2, 3, 4, 5, 6, 7], &[8, 9, 10, 11, 12, 13, 14]];
//  0  1  2  3  4
//  5  6  7  8  9
// 10 11 12 13 14
// 15 16 17 18 19
// 20 21 22 23 [24]
const P6666: &[&[u8]] = &[
    &[0, 1, 2, 5, 6, 7],
    &[3, 4, 8, 9, 13, 14],
    &[10, 11, 15, 16, 20, 21],
    &[12, 17, 18, 19, 22, 23],
];

/// The sets of `6-6-6-6-max`, in the order a greedy choice by mean estimate over 2,000 random
/// boards took them (`examples/choose_sets.rs`; BENCHMARKS.md has the figures). Candidates were
/// our 6-6-6-6 and the seven partitions of Clausecker's 24puzzle "small" catalogue; ours came
/// fifth and cost four tables of its own for +0.09 of mean estimate, so the cut at the wide
/// state's 15 tables leaves it out.
const P6666_MAX: &[&[&[u8]]] = &[
    &[
        &[13, 14, 18, 19, 22, 23],
        &[12, 15, 16, 17, 20, 21],
        &[0, 1, 5, 6, 10, 11],
        &[2, 3, 4, 7, 8, 9],
    ],
    &[
        &[4, 9, 14, 18, 19, 23],
        &[15, 16, 17, 20, 21, 22],
        &[6, 7, 8, 11, 12, 13],
        &[0, 1, 2, 3, 5, 10],
    ],
    &[
        &[13, 14, 18, 19, 22, 23],
        &[0, 5, 10, 15, 20, 21],
        &[1, 6, 11, 12, 16, 17],
        &[2, 3, 4, 7, 8, 9],
    ],
    &[
        &[4, 9, 14, 18, 19, 23],
        &[15, 16, 17, 20, 21, 22],
        &[2, 3, 7, 8, 12, 13],
        &[0, 1, 5, 6, 10, 11],
    ],
    &[
        &[13, 14, 18, 19, 22, 23],
        &[12, 15, 16, 17, 20, 21],
        &[6, 7, 8, 9, 10, 11],
        &[0, 1, 2, 3, 4, 5],
    ],
    &[
        &[12, 13, 14, 18, 19, 23],
        &[15, 16, 17, 20, 21, 22],
        &[6, 7, 8, 9, 10, 11],
        &[0, 1, 2, 3, 4, 5],
    ],
    &[
        &[12, 13, 14, 18, 19, 23],
        &[15, 16, 17, 20, 21, 22],
        &[0, 1, 5, 6, 10, 11],
        &[2, 3, 4, 7, 8, 9],
    ],
];

impl Preset {
    /// The preset named `name` among `registry` (see [`PRESETS`]), or `blocks-K`.
    pub fn parse_in(
        name: &str,
        registry: &[&'static NamedPreset],
    ) -> Result<Preset, UnknownPreset> {
        if let Some(k) = name.strip_prefix("blocks-") {
            return k
                .parse::<u8>()
                .ok()
                .filter(|k| (2..=MAX_BLOCK_TILES).contains(k))
                .map(Preset::Blocks)
                .ok_or_else(|| UnknownPreset(name.to_string()));
        }
        registry
            .iter()
            .find(|named| named.name == name)
            .map(|named| Preset::Named(named))
            .ok_or_else(|| UnknownPreset(name.to_string()))
    }

    /// The presets of `registry` as the help names them: each with its size and what it is.
    pub fn help_in(registry: &[&'static NamedPreset]) -> String {
        let named: Vec<String> = registry
            .iter()
            .map(|p| format!("{} ({}x{}: {})", p.name, p.side, p.side, p.help))
            .collect();
        format!(
            "{}; blocks-2 to blocks-{MAX_BLOCK_TILES} for rectangles",
            named.join(", ")
        )
    }

    /// The names of every preset, for messages.
    pub fn names() -> String {
        let named: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        format!(
            "{}; blocks-2 to blocks-{MAX_BLOCK_TILES} for rectangles",
            named.join(", ")
        )
    }

    pub fn name(self) -> String {
        match self {
            Preset::Named(named) => named.name.to_string(),
            Preset::Blocks(k) => format!("blocks-{k}"),
        }
    }

    /// The side of the square boards the preset is for; None for `blocks-K`, which is for
    /// rectangles.
    pub fn square_side(self) -> Option<usize> {
        match self {
            Preset::Named(named) => Some(named.side),
            Preset::Blocks(_) => None,
        }
    }

    /// Whether the preset's tables can be made for boards of `shape`.
    pub fn fits(self, shape: Shape) -> bool {
        match self {
            Preset::Blocks(k) => {
                shape.square_side().is_none()
                    && shape.cells() <= MAX_TABLE_CELLS
                    && block_groups(shape, usize::from(k)).is_some()
            }
            square => square.square_side() == shape.square_side(),
        }
    }

    /// The boards the preset fits, for messages.
    pub fn fits_what(self) -> String {
        match self {
            Preset::Blocks(k) => format!(
                "rectangles (not squares) of at most {MAX_TABLE_CELLS} cells whose tiles make at most {MAX_GROUPS} blocks of at most {k}"
            ),
            square => {
                let side = square.square_side().unwrap_or_default();
                format!("{side}x{side} boards")
            }
        }
    }

    /// The presets of a board size `default` may take, strongest first: it takes the first
    /// whose tables fit the memory budget.
    pub fn by_strength(side: usize) -> Vec<Preset> {
        let mut ranked: Vec<&'static NamedPreset> = PRESETS
            .iter()
            .copied()
            .filter(|p| p.side == side && p.default_rank.is_some())
            .collect();
        ranked.sort_by_key(|p| p.default_rank);
        ranked.into_iter().map(Preset::Named).collect()
    }

    /// The strongest preset for `goal` whose tables take at most `budget` bytes, if any does:
    /// for a rectangle, `blocks-K` of the largest K whose tables each hold at most
    /// [`BLOCK_TABLE_ENTRIES`].
    pub fn strongest_within(goal: &Board, budget: u64) -> Option<Preset> {
        let shape = goal.shape();
        let Some(side) = shape.square_side() else {
            // Each K named by its largest block (blocks-7 of a 4x5 board is its blocks-6: the
            // same cut), largest first.
            return (2..=MAX_BLOCK_TILES)
                .rev()
                .filter_map(|k| {
                    block_groups(shape, usize::from(k))?
                        .iter()
                        .map(Vec::len)
                        .max()
                })
                .map(|largest| Preset::Blocks(largest as u8))
                .find(|preset| {
                    crate::pdb::PdbStore::specs(*preset, goal).is_ok_and(|specs| {
                        specs.iter().map(PatternSpec::entries).sum::<u64>() <= budget
                            && specs
                                .iter()
                                .all(|spec| spec.entries() <= BLOCK_TABLE_ENTRIES)
                    })
                });
        };
        Preset::by_strength(side)
            .into_iter()
            .find(|preset| preset.table_bytes(goal) <= budget)
    }

    /// Bytes of memory the preset's tables take for `goal` (one byte an entry).
    pub fn table_bytes(self, goal: &Board) -> u64 {
        crate::pdb::PdbStore::specs(self, goal).map_or(u64::MAX, |specs| {
            specs.iter().map(|spec| spec.entries()).sum()
        })
    }

    /// Whether the mirror image about the main diagonal adds anything: not for an exact table
    /// (one set of one group of every tile).
    pub fn reflects(self) -> bool {
        match self {
            Preset::Named(named) => !(named.sets.len() == 1 && named.sets[0].len() == 1),
            Preset::Blocks(_) => true,
        }
    }

    /// Whether the tables keep one entry per blank region (see `zero_index`).
    pub fn zero_aware(self) -> bool {
        matches!(self, Preset::Named(named) if named.zero_aware)
    }

    /// How many distinct tables the preset has (for `blocks-K`, the most it can have).
    pub fn tables(self) -> usize {
        match self.square_side() {
            Some(side) => self.layout(&Board::blank_last(side)).0.len(),
            None => MAX_GROUPS,
        }
    }

    /// The additive sets, each a partition of the cells of a goal of `shape` with its blank last
    /// into groups.
    fn cell_sets(self, shape: Shape) -> Vec<Vec<Vec<usize>>> {
        let sets: &[&[&[u8]]] = match self {
            Preset::Named(named) => named.sets,
            Preset::Blocks(k) => {
                return vec![block_groups(shape, usize::from(k)).unwrap_or_default()];
            }
        };
        sets.iter()
            .map(|set| {
                set.iter()
                    .map(|g| g.iter().map(|&c| usize::from(c)).collect())
                    .collect()
            })
            .collect()
    }

    /// The distinct patterns of every set, as tiles of `goal` (each sorted by goal cell), and
    /// each set as indices into them. For a goal with the blank in neither corner, only the first
    /// set is used, its groups cut from the cells in row-major order.
    pub fn layout(self, goal: &Board) -> (Vec<Vec<u8>>, Vec<Vec<usize>>) {
        let cells = goal.cells();
        let blank = goal.blank();
        let blank_last = self.cell_sets(goal.shape());
        let cell_sets: Vec<Vec<Vec<usize>>> = if blank == cells - 1 {
            blank_last
        } else if blank == 0 {
            // Turned half round: the same blocks, the blank's corner to the other.
            blank_last
                .iter()
                .map(|set| {
                    set.iter()
                        .map(|g| g.iter().rev().map(|&c| cells - 1 - c).collect())
                        .collect()
                })
                .collect()
        } else {
            let mut others = (0..cells).filter(|&c| c != blank);
            vec![blank_last[0]
                .iter()
                .map(|g| others.by_ref().take(g.len()).collect())
                .collect()]
        };
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let sets = cell_sets
            .iter()
            .map(|set| {
                set.iter()
                    .map(|group| {
                        let tiles: Vec<u8> = group.iter().map(|&cell| goal.tiles()[cell]).collect();
                        match patterns.iter().position(|p| *p == tiles) {
                            Some(i) => i,
                            None => {
                                patterns.push(tiles);
                                patterns.len() - 1
                            }
                        }
                    })
                    .collect()
            })
            .collect();
        (patterns, sets)
    }
}

/// The memory budget for pattern tables when none is given: half the machine's memory (from
/// `/proc/meminfo`), or 4 GiB where that cannot be read.
pub fn default_memory_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024 / 2)
        })
        .unwrap_or(4 << 30)
}

/// The cells of a `shape` goal with its blank last, but for the blank, cut into at most
/// [`MAX_GROUPS`] blocks of at most `k` cells: bands of `h` rows, each cut into runs of `w`
/// columns (the last band and run as they fall). Of every (h, w) that fits, the one whose
/// blocks' sizes' squares sum highest (larger tables estimate more); None if none fits or `k`
/// is past what the builder takes.
fn block_groups(shape: Shape, k: usize) -> Option<Vec<Vec<usize>>> {
    let (rows, cols) = (shape.rows(), shape.cols());
    if !(2..=usize::from(MAX_BLOCK_TILES)).contains(&k) {
        return None;
    }
    let blank = shape.cells() - 1;
    let mut best: Option<(usize, Vec<Vec<usize>>)> = None;
    for h in 1..=rows {
        for w in 1..=cols {
            if rows.div_ceil(h) * cols.div_ceil(w) > MAX_GROUPS {
                continue;
            }
            let mut groups = Vec::new();
            for band in (0..rows).step_by(h) {
                for run in (0..cols).step_by(w) {
                    let group: Vec<usize> = (band..rows.min(band + h))
                        .flat_map(|row| (run..cols.min(run + w)).map(move |col| row * cols + col))
                        .filter(|&cell| cell != blank)
                        .collect();
                    if !group.is_empty() {
                        groups.push(group);
                    }
                }
            }
            if groups.iter().any(|group| group.len() > k) {
                continue;
            }
            let score = groups.iter().map(|g| g.len() * g.len()).sum();
            if best.as_ref().is_none_or(|(best, _)| score > *best) {
                best = Some((score, groups));
            }
        }
    }
    best.map(|(_, groups)| groups)
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown pattern database '{0}' (known: {known})", known = Preset::names())]
pub struct UnknownPreset(pub String);

impl FromStr for Preset {
    type Err = UnknownPreset;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Preset::parse_in(name, PRESETS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> Preset {
        name.parse().unwrap()
    }

    #[test]
    fn the_strongest_preset_that_fits_the_budget() {
        let goal = Board::blank_last(5);
        assert_eq!(preset("6-6-6-6-max").table_bytes(&goal), 14 * 181_008_000);
        assert_eq!(preset("6-6-6-6-zero").table_bytes(&goal), 4 * 181_008_000);
        assert_eq!(preset("6-6-6-6").table_bytes(&goal), 4 * 127_512_000);
        for (budget, expected) in [
            (3 << 30, Some(preset("6-6-6-6-max"))),
            (14 * 181_008_000, Some(preset("6-6-6-6-max"))),
            (14 * 181_008_000 - 1, Some(preset("6-6-6-6-zero"))),
            (700_000_000, Some(preset("6-6-6-6"))),
            (100_000_000, None),
        ] {
            assert_eq!(
                Preset::strongest_within(&goal, budget),
                expected,
                "{budget}"
            );
        }
        let goal = Board::blank_last(4);
        assert_eq!(
            Preset::strongest_within(&goal, 1 << 30),
            Some(preset("7-8"))
        );
        assert_eq!(
            Preset::strongest_within(&goal, 100 << 20),
            Some(preset("6-6-3"))
        );
    }

    #[test]
    fn every_preset_partitions_the_tiles() {
        let rectangles = [
            (2, 3),
            (3, 4),
            (2, 6),
            (4, 5),
            (5, 4),
            (4, 6),
            (5, 5),
            (3, 8),
        ]
        .map(|(rows, cols)| Shape::new(rows, cols).unwrap());
        let presets = PRESETS
            .iter()
            .map(|&named| (Preset::Named(named), Shape::square(named.side)))
            .chain((2..=MAX_BLOCK_TILES).flat_map(|k| {
                rectangles
                    .into_iter()
                    .filter(move |&shape| Preset::Blocks(k).fits(shape))
                    .map(move |shape| (Preset::Blocks(k), shape))
            }));
        for (preset, shape) in presets {
            for goal in [Board::blank_last_in(shape), Board::blank_first_in(shape)] {
                let (patterns, sets) = preset.layout(&goal);
                for set in sets {
                    let mut tiles: Vec<u8> =
                        set.iter().flat_map(|&p| patterns[p].clone()).collect();
                    tiles.sort_unstable();
                    let expected: Vec<u8> = (1..goal.cells() as u8).collect();
                    assert_eq!(tiles, expected, "{preset} on {goal}");
                }
            }
        }
    }

    #[test]
    fn blocks_cut_a_rectangle_into_at_most_four_compact_groups() {
        let sizes = |rows, cols, k| {
            let shape = Shape::new(rows, cols).unwrap();
            block_groups(shape, k).map(|groups| groups.iter().map(Vec::len).collect::<Vec<_>>())
        };
        assert_eq!(sizes(2, 3, 5), Some(vec![5]), "exact");
        assert_eq!(sizes(3, 4, 4), Some(vec![4, 4, 3]));
        assert_eq!(sizes(3, 4, 6), Some(vec![6, 5]));
        assert_eq!(sizes(4, 5, 6), Some(vec![6, 4, 6, 3]));
        assert_eq!(sizes(5, 6, 6), None, "29 tiles in four groups of six");
        assert_eq!(
            block_groups(Shape::new(3, 4).unwrap(), 6),
            Some(vec![vec![0, 1, 4, 5, 8, 9], vec![2, 3, 6, 7, 10]])
        );
        let goal = |rows, cols| Board::blank_last_in(Shape::new(rows, cols).unwrap());
        assert_eq!(
            Preset::strongest_within(&goal(4, 5), 1 << 30),
            Some(Preset::Blocks(6)),
            "the 7-tile tables pass the entry cap"
        );
        assert_eq!(
            Preset::strongest_within(&goal(4, 5), 10_000_000),
            Some(Preset::Blocks(5))
        );
        assert_eq!(Preset::strongest_within(&goal(5, 6), 1 << 40), None);
        assert_eq!("blocks-6".parse(), Ok(Preset::Blocks(6)));
        assert!("blocks-9".parse::<Preset>().is_err());
        assert!(!Preset::Blocks(6).fits(Shape::square(4)));
        assert!(!preset("7-8").fits(Shape::new(3, 4).unwrap()));
    }
}
