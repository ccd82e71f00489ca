//! Move-sequence pruning: a finite-state machine over the blank's moves that rejects every path
//! containing a *forbidden word*, a move sequence for which a smaller equivalent one exists
//! (Taylor and Korf 1993). The kernel carries one machine state per node and never generates a
//! child whose move leads to the dead state.
//!
//! # Which words are forbidden, and why that keeps answers optimal
//!
//! Order paths by length, then lexicographically in the kernel's move order. A word `A` is
//! forbidden when a word `B < A` leaves every tile where `A` does (the same permutation and the
//! same blank cell) and `B`'s cells lie within `A`'s bounding box, so `B` is legal wherever `A`
//! is. Take the least path `M` (in that order) from a root to the goal: if it contained a
//! forbidden `A`, swapping in `B` would give a legal path to the same goal that is smaller than
//! `M`. So `M` contains no forbidden word, is never pruned, and has optimal length: IDA* with an
//! admissible heuristic still finds an optimal answer.
//!
//! A distributed subtree task continues the machine from the state its path from the puzzle's
//! root leads to ([`MovePruning::state_after`]), so it searches below its board exactly what
//! one thread's search would. That stays sound with an iteration split at a frontier whose
//! repeated boards are dropped, keeping the first path to each in this same order: `M`'s prefix
//! is the least path to its board (a smaller one, followed by the rest of `M`, would be a
//! smaller path to the goal), so it is the copy kept, and the rest of `M` is never pruned. A
//! search started afresh at a subtree's root (the state [`START`], with the undo rule for its
//! last move) prunes less and is sound too: a subtree's part of `M` is a subword of `M`.
//!
//! # How the machine is made
//!
//! A breadth-first search over words on an unbounded grid, by length and in move order, keyed by
//! the tiles' permutation and the blank's cell, extends only the words not forbidden so far;
//! a word whose key was seen with a bounding box inside its own is forbidden. The forbidden words
//! then become an Aho-Corasick automaton, whose states are the prefixes of forbidden words that
//! contain none: its transitions say which state each move leads to.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::board::Shape;
use crate::direction::Direction;

/// The state a transition into a forbidden word leads to.
pub const DEAD: u32 = u32::MAX;
/// The machine's state before any move.
pub const START: u32 = 0;

/// The moves a search may follow from each state of the machine.
#[derive(Debug)]
pub struct MovePruning {
    /// State -> next state per direction, or [`DEAD`].
    transitions: Vec<[u32; 4]>,
    words: usize,
    /// Whether searches under this machine take a large subtree's children lowest estimate
    /// first (the kernel's `ORDER_SLACK`); the machine that forbids nothing keeps the move order
    /// of Korf's 1985 counts.
    orders_children: bool,
}

/// Which move sequences a search skips.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pruning {
    /// Only the move that undoes the previous one, children in move order: the rules Korf's
    /// 1985 node counts assume.
    UndoOnly,
    /// Every duplicate path the board size's machine knows, and a large subtree's children
    /// searched lowest estimate first (the default).
    Duplicates,
}

impl Pruning {
    pub fn name(self) -> &'static str {
        match self {
            Pruning::UndoOnly => "undo",
            Pruning::Duplicates => "duplicates",
        }
    }
}

impl std::str::FromStr for Pruning {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "undo" => Ok(Pruning::UndoOnly),
            "duplicates" => Ok(Pruning::Duplicates),
            other => Err(format!(
                "unknown pruning '{other}' (known: undo, duplicates)"
            )),
        }
    }
}

impl MovePruning {
    /// The machine that forbids nothing (the kernel's undo rule still applies).
    pub fn none() -> &'static MovePruning {
        static NONE: OnceLock<MovePruning> = OnceLock::new();
        NONE.get_or_init(|| MovePruning {
            transitions: vec![[START; 4]],
            words: 0,
            orders_children: false,
        })
    }

    /// The machine used for boards of `side` under `pruning`, made once per process from the
    /// shipped words.
    pub fn for_side(side: usize, pruning: Pruning) -> &'static MovePruning {
        static MACHINES: [OnceLock<MovePruning>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        if pruning == Pruning::UndoOnly || !(3..=5).contains(&side) {
            return MovePruning::none();
        }
        MACHINES[side - 3].get_or_init(|| {
            let depth = default_depth(side);
            let words: Vec<Word> = shipped_words().filter(|w| w.len <= depth).collect();
            MovePruning::from_words(&words)
        })
    }

    /// The machine used for boards of `shape`: a square's own; a rectangle's, that of the square
    /// of about its cells (its words, found on an unbounded grid, are forbidden on any board).
    pub fn for_shape(shape: Shape, pruning: Pruning) -> &'static MovePruning {
        match shape.square_side() {
            Some(side) => MovePruning::for_side(side, pruning),
            None if shape.cells() <= 16 => MovePruning::for_side(4, pruning),
            None => MovePruning::for_side(5, pruning),
        }
    }

    /// The machine that knows every forbidden word of at most `depth` moves, made afresh
    /// (seconds at 14 moves, growing about 3.7x per move).
    pub fn generate(depth: u32) -> MovePruning {
        MovePruning::from_words(&forbidden_words(depth.min(MAX_WORD)))
    }

    fn from_words(words: &[Word]) -> MovePruning {
        MovePruning {
            transitions: automaton(words),
            words: words.len(),
            orders_children: true,
        }
    }

    /// Every forbidden word of at most `depth` moves, as move letters, in the order found.
    pub fn forbidden_words(depth: u32) -> Vec<String> {
        forbidden_words(depth.min(MAX_WORD))
            .into_iter()
            .map(Word::letters)
            .collect()
    }

    /// The state after `direction` from `state` ([`DEAD`] if that completes a forbidden word).
    #[inline(always)]
    pub fn next(&self, state: u32, direction: usize) -> u32 {
        self.transitions[state as usize][direction & 3]
    }

    /// The state after the moves of `path` from [`START`] ([`DEAD`] once they contain a
    /// forbidden word).
    pub fn state_after(&self, path: &[Direction]) -> u32 {
        path.iter()
            .try_fold(START, |state, &d| {
                let next = self.next(state, d as usize);
                (next != DEAD).then_some(next)
            })
            .unwrap_or(DEAD)
    }

    /// Where a search resumed at the end of `path` starts the machine: [`state_after`], or
    /// afresh ([`START`]: sound, prunes less) for a path the machine forbids.
    ///
    /// [`state_after`]: MovePruning::state_after
    pub fn resumed_after(&self, path: &[Direction]) -> u32 {
        match self.state_after(path) {
            DEAD => START,
            state => state,
        }
    }

    pub fn states(&self) -> usize {
        self.transitions.len()
    }

    /// Whether searches under this machine take a large subtree's children most promising first
    /// (every machine but [`MovePruning::none`], which keeps Korf's 1985 move order).
    pub fn orders_children(&self) -> bool {
        self.orders_children
    }

    /// How many forbidden words the machine was made from.
    pub fn words(&self) -> usize {
        self.words
    }
}

/// Longest word the generator packs into a `u64` (two bits a move).
const MAX_WORD: u32 = 30;

/// Word lengths per board size: chosen by measuring nodes and node rate (BENCHMARKS.md); the
/// machine is made in well under a second at each.
fn default_depth(side: usize) -> u32 {
    match side {
        3 | 4 => 12,
        _ => 14,
    }
}

/// The forbidden words of up to [`SHIPPED_DEPTH`] moves, one per line as move letters, as
/// [`forbidden_words`] finds them (a test checks that): making them takes seconds, reading them
/// a millisecond. `cargo run --release --example pruning_machine -- --words 14` writes the file.
const SHIPPED_WORDS: &str = include_str!("forbidden-words.txt");
pub const SHIPPED_DEPTH: u32 = 14;

/// A word: its moves two bits each, the latest in the lowest bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Word {
    moves: u64,
    len: u32,
}

impl Word {
    fn then(self, direction: usize) -> Word {
        Word {
            moves: (self.moves << 2) | direction as u64,
            len: self.len + 1,
        }
    }

    fn letters(self) -> String {
        self.directions()
            .map(|d| Direction::from_index(d as u8).letter())
            .collect()
    }

    fn parse(letters: &str) -> Option<Word> {
        letters
            .chars()
            .try_fold(Word { moves: 0, len: 0 }, |word, letter| {
                let direction = Direction::ALL.iter().position(|d| d.letter() == letter)?;
                Some(word.then(direction))
            })
    }

    /// The moves, first to last.
    fn directions(self) -> impl Iterator<Item = usize> {
        (0..self.len)
            .rev()
            .map(move |i| ((self.moves >> (2 * i)) & 3) as usize)
    }
}

fn shipped_words() -> impl Iterator<Item = Word> {
    SHIPPED_WORDS
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(Word::parse)
}

/// The bounding box of a word's cells: min and max column, min and max row.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Extent([i8; 4]);

impl Extent {
    fn within(self, other: Extent) -> bool {
        self.0[0] >= other.0[0]
            && self.0[1] <= other.0[1]
            && self.0[2] >= other.0[2]
            && self.0[3] <= other.0[3]
    }
}

/// Plays words from the centre of a grid wide enough for any of them.
struct Grid {
    width: usize,
    tiles: Vec<u16>,
    touched: Vec<usize>,
    effect: Vec<u8>,
}

impl Grid {
    fn new(depth: u32) -> Grid {
        let width = 2 * depth as usize + 3;
        Grid {
            width,
            tiles: (0..(width * width) as u16).collect(),
            touched: Vec::new(),
            effect: Vec::new(),
        }
    }

    /// The word's effect (which tile ends where, and where the blank ends) as a 128-bit key, and
    /// its bounding box. The grid is restored afterwards.
    fn play(&mut self, word: Word) -> (u128, Extent) {
        let w = self.width as isize;
        let centre = (self.width / 2) as isize;
        let (mut x, mut y) = (centre, centre);
        let mut extent = Extent([0; 4]);
        self.touched.clear();
        self.touched.push((y * w + x) as usize);
        for direction in word.directions() {
            let (nx, ny) = match direction {
                0 => (x, y - 1),
                1 => (x - 1, y),
                2 => (x + 1, y),
                _ => (x, y + 1),
            };
            let (from, to) = ((y * w + x) as usize, (ny * w + nx) as usize);
            self.tiles.swap(from, to);
            self.touched.push(to);
            (x, y) = (nx, ny);
            let (dx, dy) = ((x - centre) as i8, (y - centre) as i8);
            extent.0[0] = extent.0[0].min(dx);
            extent.0[1] = extent.0[1].max(dx);
            extent.0[2] = extent.0[2].min(dy);
            extent.0[3] = extent.0[3].max(dy);
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        self.effect.clear();
        for &cell in &self.touched {
            let tile = self.tiles[cell];
            if usize::from(tile) != cell {
                self.effect.extend_from_slice(&(cell as u16).to_le_bytes());
                self.effect.extend_from_slice(&tile.to_le_bytes());
            }
        }
        self.effect
            .extend_from_slice(&((y * w + x) as u16).to_le_bytes());
        let key = xxhash_rust::xxh3::xxh3_128(&self.effect);
        // Undo the word by restoring every touched cell.
        for &cell in &self.touched {
            self.tiles[cell] = cell as u16;
        }
        (key, extent)
    }
}

/// Every forbidden word of at most `depth` moves that contains no shorter forbidden word.
fn forbidden_words(depth: u32) -> Vec<Word> {
    let mut grid = Grid::new(depth);
    let mut seen = SeenEffects::default();
    let empty = Word { moves: 0, len: 0 };
    let (key, extent) = grid.play(empty);
    seen.add(key, extent);
    let mut level = vec![empty];
    let mut words: Vec<Word> = Vec::new();
    for _ in 1..=depth {
        // Prefixes of the words extended here are clean by construction; a proper suffix may be
        // forbidden, which the reversed trie of the words found so far tells.
        let suffixes = ReversedTrie::of(&words);
        let mut next_level = Vec::with_capacity(level.len() * 3);
        for &parent in &level {
            for direction in 0..4 {
                let word = parent.then(direction);
                if suffixes.ends(word) {
                    continue;
                }
                let (key, extent) = grid.play(word);
                if seen.covers(key, extent) {
                    words.push(word);
                    continue;
                }
                seen.add(key, extent);
                next_level.push(word);
            }
        }
        level = next_level;
    }
    words
}

/// Effects already reached, each with the bounding boxes of the words that reached it.
#[derive(Default)]
struct SeenEffects {
    /// Key -> (first extent, index of the next one in `more` or `u32::MAX`).
    first: HashMap<u128, (Extent, u32), KeyHash>,
    more: Vec<(Extent, u32)>,
}

impl SeenEffects {
    /// Whether a word already reached `key` within `extent`.
    fn covers(&self, key: u128, extent: Extent) -> bool {
        let Some(&(first, mut next)) = self.first.get(&key) else {
            return false;
        };
        if first.within(extent) {
            return true;
        }
        while next != u32::MAX {
            let (other, after) = self.more[next as usize];
            if other.within(extent) {
                return true;
            }
            next = after;
        }
        false
    }

    fn add(&mut self, key: u128, extent: Extent) {
        match self.first.get_mut(&key) {
            None => {
                self.first.insert(key, (extent, u32::MAX));
            }
            Some((_, next)) => {
                self.more.push((extent, *next));
                *next = (self.more.len() - 1) as u32;
            }
        }
    }
}

/// The keys are already hashes: use their low bits.
#[derive(Default, Clone, Copy)]
struct KeyHash(u64);

impl std::hash::Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes.iter().take(8) {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u128(&mut self, key: u128) {
        self.0 = key as u64;
    }
}

impl std::hash::BuildHasher for KeyHash {
    type Hasher = KeyHash;
    fn build_hasher(&self) -> KeyHash {
        KeyHash(0)
    }
}

/// The forbidden words read backwards, to ask whether a word ends in one.
struct ReversedTrie {
    children: Vec<[u32; 4]>,
    terminal: Vec<bool>,
}

impl ReversedTrie {
    fn of(words: &[Word]) -> ReversedTrie {
        let mut trie = ReversedTrie {
            children: vec![[0; 4]],
            terminal: vec![false],
        };
        for word in words {
            let mut node = 0;
            for i in 0..word.len {
                let direction = ((word.moves >> (2 * i)) & 3) as usize;
                if trie.children[node][direction] == 0 {
                    trie.children[node][direction] = trie.children.len() as u32;
                    trie.children.push([0; 4]);
                    trie.terminal.push(false);
                }
                node = trie.children[node][direction] as usize;
            }
            trie.terminal[node] = true;
        }
        trie
    }

    /// Whether `word` ends in a forbidden word.
    fn ends(&self, word: Word) -> bool {
        let mut node = 0;
        for i in 0..word.len {
            let direction = ((word.moves >> (2 * i)) & 3) as usize;
            node = self.children[node][direction] as usize;
            if node == 0 {
                return false;
            }
            if self.terminal[node] {
                return true;
            }
        }
        false
    }
}

/// The Aho-Corasick automaton of `words`, with every state inside a forbidden word made [`DEAD`]
/// and the remaining states renumbered densely (state 0 is the empty prefix).
fn automaton(words: &[Word]) -> Vec<[u32; 4]> {
    const NONE: u32 = u32::MAX;
    let mut children: Vec<[u32; 4]> = vec![[NONE; 4]];
    let mut terminal = vec![false];
    for word in words {
        let mut node = 0usize;
        for direction in word.directions() {
            if children[node][direction] == NONE {
                children[node][direction] = children.len() as u32;
                children.push([NONE; 4]);
                terminal.push(false);
            }
            node = children[node][direction] as usize;
        }
        terminal[node] = true;
    }
    // Breadth-first: failure links, completed transitions, and deadness inherited from the
    // failure state (a state whose longest proper suffix in the trie is dead is dead too).
    let mut goto = children.clone();
    let mut fail = vec![0u32; children.len()];
    let mut queue = std::collections::VecDeque::new();
    for direction in 0..4 {
        match children[0][direction] {
            NONE => goto[0][direction] = 0,
            child => {
                fail[child as usize] = 0;
                queue.push_back(child as usize);
            }
        }
    }
    while let Some(node) = queue.pop_front() {
        let failure = fail[node] as usize;
        terminal[node] |= terminal[failure];
        for direction in 0..4 {
            match children[node][direction] {
                NONE => goto[node][direction] = goto[failure][direction],
                child => {
                    fail[child as usize] = goto[failure][direction];
                    queue.push_back(child as usize);
                }
            }
        }
    }
    let mut renumbered = vec![DEAD; goto.len()];
    let mut live = 0u32;
    for (node, &dead) in terminal.iter().enumerate() {
        if !dead {
            renumbered[node] = live;
            live += 1;
        }
    }
    goto.iter()
        .zip(&terminal)
        .filter(|(_, &dead)| !dead)
        .map(|(row, _)| row.map(|next| renumbered[next as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Board;

    #[test]
    fn undo_moves_are_the_shortest_forbidden_words() {
        let machine = MovePruning::generate(2);
        assert_eq!(machine.words(), 4);
        for d in 0..4 {
            let state = machine.next(START, d);
            assert_ne!(state, DEAD);
            assert_eq!(machine.next(state, 3 - d), DEAD);
        }
    }

    #[test]
    fn shipped_words_are_what_the_generator_finds() {
        let shipped: Vec<String> = shipped_words().map(Word::letters).collect();
        assert_eq!(shipped, MovePruning::forbidden_words(SHIPPED_DEPTH));
        assert_eq!(
            shipped.len(),
            SHIPPED_WORDS
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count(),
            "every line is a word"
        );
    }

    #[test]
    fn a_second_lap_round_a_block_is_forbidden() {
        // One lap round a 2x2 block turns three tiles; two laps turn them back the other way,
        // which one lap the other way round does in half the moves.
        let machine = MovePruning::generate(8);
        let lap = [
            Direction::Right,
            Direction::Down,
            Direction::Left,
            Direction::Up,
        ];
        let two_laps: Vec<Direction> = lap.iter().cycle().take(8).copied().collect();
        let after = |moves: &[Direction]| {
            moves
                .iter()
                .try_fold(START, |state, &d| {
                    let next = machine.next(state, d as usize);
                    (next != DEAD).then_some(next)
                })
                .unwrap_or(DEAD)
        };
        assert_ne!(after(&two_laps[..4]), DEAD);
        assert_eq!(after(&two_laps), DEAD);
    }

    /// On every board within 14 moves of a 3x3 root (13 of a 4x4 one, with the 5x5 machine), the
    /// paths the machine allows reach it as fast as all paths do: no board's distance grows.
    #[test]
    fn allowed_paths_keep_every_distance() {
        let machine = MovePruning::generate(12);
        let goal = Board::blank_last(3);
        // Roots with the blank in a corner, on an edge and in the centre.
        let centre = goal
            .apply(Direction::Up)
            .unwrap()
            .0
            .apply(Direction::Left)
            .unwrap()
            .0;
        let edge = goal.apply(Direction::Up).unwrap().0;
        let fifteen = Board::blank_last(4);
        let inner = fifteen
            .apply(Direction::Up)
            .unwrap()
            .0
            .apply(Direction::Left)
            .unwrap()
            .0;
        let deep = MovePruning::for_side(5, Pruning::Duplicates);
        for (root, machine, depth) in [
            (goal, &machine, 14),
            (edge, &machine, 14),
            (centre, &machine, 14),
            (fifteen, deep, 13),
            (inner, deep, 13),
        ] {
            let (mut all, mut allowed) = (HashMap::new(), HashMap::new());
            walk(&root, None, START, 0, depth, machine, &mut all, false);
            walk(&root, None, START, 0, depth, machine, &mut allowed, true);
            assert_eq!(all.len(), allowed.len());
            for (board, depth) in &all {
                assert_eq!(allowed.get(board), Some(depth), "{board}");
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        board: &Board,
        last: Option<Direction>,
        state: u32,
        depth: u32,
        max: u32,
        machine: &MovePruning,
        reached: &mut HashMap<Board, u32>,
        prune: bool,
    ) {
        let best = reached.entry(*board).or_insert(depth);
        *best = (*best).min(depth);
        if depth == max {
            return;
        }
        for direction in Direction::ALL {
            if last == Some(direction.opposite()) {
                continue;
            }
            let next = if prune {
                machine.next(state, direction as usize)
            } else {
                START
            };
            if next == DEAD {
                continue;
            }
            if let Some((child, _)) = board.apply(direction) {
                walk(
                    &child,
                    Some(direction),
                    next,
                    depth + 1,
                    max,
                    machine,
                    reached,
                    prune,
                );
            }
        }
    }
}
