//! Chooses the additive sets of a 5x5 catalogue by measuring: builds the zero-aware tables of
//! every candidate set into a data directory, estimates a sample of uniformly random solvable
//! boards with each set (and its mirror image), and greedily adds the set that most raises the
//! mean of the maximum. Prints each step, and the tables it needs, so a catalogue can be cut at
//! any size.
//!
//!     cargo run --release --example choose_sets -- DATA_DIR [SAMPLE]
//!
//! Candidates are given as goal cells for the blank-last goal (blank on cell 24): our 6-6-6-6
//! and the seven partitions of Clausecker's "small" catalogue (doc of the 24puzzle project,
//! rotated from its blank-first goal), which are compact blocks round the blank's corner.

use std::sync::Arc;

use tilesolve::board::Position;
use tilesolve::heuristic::Heuristic;
use tilesolve::pdb::{AdditivePdb, PatternSpec, PdbEvent, PdbStore, WIDE};
use tilesolve::Board;

const CANDIDATES: &[[[u8; 6]; 4]] = &[
    // tilesolve's 6-6-6-6
    [
        [0, 1, 2, 5, 6, 7],
        [3, 4, 8, 9, 13, 14],
        [10, 11, 15, 16, 20, 21],
        [12, 17, 18, 19, 22, 23],
    ],
    // Clausecker's seven, cell c of the blank-first goal as 24 - c
    [
        [12, 13, 14, 18, 19, 23],
        [15, 16, 17, 20, 21, 22],
        [0, 1, 5, 6, 10, 11],
        [2, 3, 4, 7, 8, 9],
    ],
    [
        [13, 14, 18, 19, 22, 23],
        [12, 15, 16, 17, 20, 21],
        [0, 1, 5, 6, 10, 11],
        [2, 3, 4, 7, 8, 9],
    ],
    [
        [12, 13, 14, 18, 19, 23],
        [15, 16, 17, 20, 21, 22],
        [6, 7, 8, 9, 10, 11],
        [0, 1, 2, 3, 4, 5],
    ],
    [
        [13, 14, 18, 19, 22, 23],
        [12, 15, 16, 17, 20, 21],
        [6, 7, 8, 9, 10, 11],
        [0, 1, 2, 3, 4, 5],
    ],
    [
        [4, 9, 14, 18, 19, 23],
        [15, 16, 17, 20, 21, 22],
        [2, 3, 7, 8, 12, 13],
        [0, 1, 5, 6, 10, 11],
    ],
    [
        [13, 14, 18, 19, 22, 23],
        [0, 5, 10, 15, 20, 21],
        [11, 12, 16, 17, 6, 1],
        [2, 3, 4, 7, 8, 9],
    ],
    [
        [4, 9, 14, 18, 19, 23],
        [15, 16, 17, 20, 21, 22],
        [6, 7, 8, 11, 12, 13],
        [0, 1, 2, 3, 5, 10],
    ],
];

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| "tilesolve-data".into());
    let samples: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let goal = Board::blank_last(5);
    let store = PdbStore::new(&dir, 2);
    let events = |event: PdbEvent<'_>| {
        if let PdbEvent::Built { path, seconds } = event {
            eprintln!("built {} in {seconds:.1} s", path.display());
        }
    };
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut tables = Vec::new();
    let sets: Vec<Vec<usize>> = CANDIDATES
        .iter()
        .map(|set| {
            set.iter()
                .map(|cells| {
                    let mut tiles: Vec<u8> =
                        cells.iter().map(|&c| goal.tiles()[c as usize]).collect();
                    tiles.sort_unstable();
                    if let Some(i) = names.iter().position(|t| *t == tiles) {
                        return i;
                    }
                    let spec = PatternSpec {
                        goal,
                        tiles: tiles.clone(),
                        zero_aware: true,
                    };
                    tables.push(store.table(&spec, &events).expect("table"));
                    names.push(tiles);
                    names.len() - 1
                })
                .collect()
        })
        .collect();
    eprintln!("{} candidate sets over {} tables", sets.len(), tables.len());
    let single: Vec<AdditivePdb<WIDE>> = sets
        .iter()
        .map(|set| {
            let used: Vec<Arc<_>> = set.iter().map(|&i| tables[i].clone()).collect();
            AdditivePdb::new(&goal, used, &[vec![0, 1, 2, 3]], true)
        })
        .collect();
    let boards = random_boards(&goal, samples, 0x5eed_1234_abcd_0001);
    let estimates: Vec<Vec<u32>> = single
        .iter()
        .map(|pdb| {
            boards
                .iter()
                .map(|b| pdb.estimate(&Position::new(b)))
                .collect()
        })
        .collect();
    let mut best = vec![0u32; boards.len()];
    let mut chosen: Vec<usize> = Vec::new();
    let mut used_tables: Vec<usize> = Vec::new();
    println!("step  set  mean h (max over chosen, with reflection)  tables");
    while chosen.len() < sets.len() {
        let (pick, mean) = (0..sets.len())
            .filter(|s| !chosen.contains(s))
            .map(|s| {
                let total: u64 = best
                    .iter()
                    .zip(&estimates[s])
                    .map(|(&b, &e)| u64::from(b.max(e)))
                    .sum();
                (s, total as f64 / boards.len() as f64)
            })
            .fold((usize::MAX, -1.0), |a, b| if b.1 > a.1 { b } else { a });
        chosen.push(pick);
        for (b, &e) in best.iter_mut().zip(&estimates[pick]) {
            *b = (*b).max(e);
        }
        for &t in &sets[pick] {
            if !used_tables.contains(&t) {
                used_tables.push(t);
            }
        }
        println!(
            "{:4}  {pick:3}  {mean:.3}  {}",
            chosen.len(),
            used_tables.len()
        );
    }
    println!("order: {chosen:?}");
}

/// Uniformly random solvable boards: a random permutation, fixed by one swap of two tiles when
/// its parity is wrong.
fn random_boards(goal: &Board, count: usize, seed: u64) -> Vec<Board> {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let mut tiles: Vec<u64> = (0..goal.cells() as u64).collect();
            for i in (1..tiles.len()).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                tiles.swap(i, j);
            }
            let board = Board::from_tiles(&tiles).expect("a permutation");
            if board.check_solvable(goal).is_ok() {
                return board;
            }
            let (a, b) = if tiles[0] != 0 && tiles[1] != 0 {
                (0, 1)
            } else {
                (2, 3)
            };
            tiles.swap(a, b);
            Board::from_tiles(&tiles).expect("a permutation")
        })
        .collect()
}
