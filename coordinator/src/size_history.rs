//! What one iteration of a split puzzle measured: subtree sizes by the path from the puzzle's
//! root, which the next iteration's split predicts from ([`crate::frontier`]).
//!
//! A history takes an entry for every part every subtree task measured (dozens a task), so its
//! keys are paths packed into one number ([`PackedPath`]) that sorts as the path does: with the
//! paths as byte strings, comparing them in the map was a twentieth of a coordinator's CPU on
//! hard80 through fifteen workers.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// Moves a packed path holds: a longer path is kept as its first this many, which no split
/// asks below (they stop at `frontier::MAX_SPLIT_DEPTH`).
const PACKED_MOVES: usize = 60;
/// The low bits holding a packed path's length.
const LENGTH_BITS: u32 = 8;

/// A path of direction indices (0-3) as a number: two bits a move from the top bit down, the
/// length in the low [`LENGTH_BITS`]. Numbers sort as the paths do (a path after its
/// prefixes), and the paths starting with a given one are a range ([`PackedPath::starting`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackedPath(u128);

impl PackedPath {
    pub fn new(moves: impl IntoIterator<Item = u8>) -> PackedPath {
        PackedPath(0).then(moves)
    }

    /// This path followed by `moves`.
    pub fn then(self, moves: impl IntoIterator<Item = u8>) -> PackedPath {
        let mut bits = self.0 & !Self::length_mask();
        let mut length = self.len();
        for direction in moves.into_iter().take(PACKED_MOVES - length) {
            bits |= u128::from(direction & 3) << (126 - 2 * length);
            length += 1;
        }
        PackedPath(bits | length as u128)
    }

    fn len(self) -> usize {
        (self.0 & Self::length_mask()) as usize
    }

    /// Every packed path that starts with this one (itself included).
    pub fn starting(self) -> RangeInclusive<PackedPath> {
        // The moves after this path's: every bit below its last move, above the length.
        let after = 1u128
            .checked_shl(128 - 2 * self.len() as u32)
            .map_or(u128::MAX, |bit| bit - 1)
            & !Self::length_mask();
        let last = (self.0 & !Self::length_mask()) | after | PACKED_MOVES as u128;
        self..=PackedPath(last)
    }

    fn length_mask() -> u128 {
        (1 << LENGTH_BITS) - 1
    }
}

/// Measured subtree sizes of one iteration, by the path from the puzzle's root: the tasks' own
/// sizes, or their parts' when tasks measured parts.
#[derive(Clone, Debug, Default)]
pub struct SizeHistory {
    sizes: BTreeMap<PackedPath, u64>,
    total: u64,
}

impl SizeHistory {
    pub fn add(&mut self, path: PackedPath, nodes: u64) {
        // Saturating: the sizes come from workers' reports, which are not trusted to be sane.
        self.total = self.total.saturating_add(nodes);
        let size = self.sizes.entry(path).or_default();
        *size = size.saturating_add(nodes);
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Nodes measured below `path`; `None` when nothing was measured there or deeper.
    pub fn below(&self, path: PackedPath) -> Option<u64> {
        let mut range = self.sizes.range(path.starting()).peekable();
        range.peek()?;
        Some(range.map(|(_, n)| n).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path of up to `length` moves.
    fn paths(length: usize) -> Vec<Vec<u8>> {
        let mut all = vec![Vec::new()];
        let mut last = vec![Vec::new()];
        for _ in 0..length {
            last = last
                .iter()
                .flat_map(|path: &Vec<u8>| {
                    (0..4).map(move |d| {
                        let mut next = path.clone();
                        next.push(d);
                        next
                    })
                })
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    #[test]
    fn packed_paths_sort_as_the_paths_do_and_a_prefix_is_a_range() {
        let all = paths(4);
        for a in &all {
            let packed = PackedPath::new(a.iter().copied());
            assert_eq!(packed.len(), a.len());
            for b in &all {
                let other = PackedPath::new(b.iter().copied());
                assert_eq!(packed.cmp(&other), a.cmp(b), "{a:?} against {b:?}");
                assert_eq!(
                    packed.starting().contains(&other),
                    b.starts_with(a),
                    "{b:?} starting with {a:?}"
                );
            }
        }
    }

    #[test]
    fn a_path_followed_by_moves_is_the_whole_path_and_a_long_one_keeps_its_start() {
        let start = PackedPath::new([3, 1]);
        assert_eq!(start.then([0, 2]), PackedPath::new([3, 1, 0, 2]));
        let long: Vec<u8> = (0..70).map(|i| (i % 4) as u8).collect();
        let packed = PackedPath::new(long.iter().copied());
        assert_eq!(packed.len(), PACKED_MOVES);
        assert_eq!(
            packed,
            PackedPath::new(long[..PACKED_MOVES].iter().copied())
        );
        assert!(PackedPath::new(long[..24].iter().copied())
            .starting()
            .contains(&packed));
        assert!(packed.starting().contains(&packed));
    }

    #[test]
    fn a_history_sums_what_was_measured_below_a_path() {
        let mut history = SizeHistory::default();
        history.add(PackedPath::new([0, 1]), 10);
        history.add(PackedPath::new([0, 1, 2]), 5);
        history.add(PackedPath::new([0, 1, 2]), 1);
        history.add(PackedPath::new([0, 2]), 7);
        history.add(PackedPath::new([1]), 100);
        assert_eq!(history.below(PackedPath::new([0, 1])), Some(16));
        assert_eq!(history.below(PackedPath::new([0])), Some(23));
        assert_eq!(history.below(PackedPath::new([])), Some(123));
        assert_eq!(history.below(PackedPath::new([0, 3])), None);
        assert_eq!(history.total(), 123);
    }
}
