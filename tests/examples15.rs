//! Published optimal lengths of 40- to 62-move 15-puzzles (tests/data/examples15.txt), for every
//! heuristic on the instances that are cheap for it; `tilesolve bench` runs the rest.

mod common;

use tilesolve::{Board, HeuristicKind, SolveOptions, Solver};

fn check(kind: HeuristicKind, ids: &[u32]) {
    let solver = Solver::new(Board::blank_last(4), kind);
    let instances = common::instances("examples15.txt");
    for id in ids {
        let instance = instances.iter().find(|i| i.id == *id).expect("instance");
        let solution = solver
            .solve(&instance.board, &SolveOptions::default(), None)
            .unwrap();
        assert_eq!(solution.len(), instance.optimal, "{kind} on #{id}");
    }
}

#[test]
fn linear_conflict() {
    check(HeuristicKind::LinearConflict, &[1, 2, 3, 4, 5, 6]);
}

#[test]
fn manhattan() {
    check(HeuristicKind::Manhattan, &[1, 2, 3, 4, 5]);
}

/// Hamming is weak: #1 (40 moves) takes about 4 billion nodes, half a minute. The 43-move and
/// longer instances take hours, so Hamming's optimality is otherwise checked on every 8-puzzle.
#[test]
fn hamming() {
    check(HeuristicKind::Hamming, &[1]);
}
