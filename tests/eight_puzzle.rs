//! Exhaustive checks on the 8-puzzle: a breadth-first search from the goal gives the true
//! distance of all 181,440 solvable boards, against which the solver, the heuristics and the
//! solvability rule are checked board by board.

mod common;

use std::collections::HashMap;

use tilesolve::heuristic_choice::AnyHeuristic;
use tilesolve::{Algorithm, Board, Direction, HeuristicKind, SolveOptions, Solver};

/// Boards packed 4 bits per cell.
fn key(board: &Board) -> u64 {
    board
        .tiles()
        .iter()
        .fold(0, |k, &t| (k << 4) | u64::from(t))
}

/// Every board reachable from `goal` with its distance, in breadth-first order.
fn distances(goal: &Board) -> (Vec<(Board, u8)>, HashMap<u64, u8>) {
    let mut order = vec![(*goal, 0u8)];
    let mut seen = HashMap::from([(key(goal), 0u8)]);
    let mut next = 0;
    while let Some(&(board, d)) = order.get(next) {
        next += 1;
        for direction in Direction::ALL {
            if let Some((child, _)) = board.apply(direction) {
                if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(key(&child)) {
                    slot.insert(d + 1);
                    order.push((child, d + 1));
                }
            }
        }
    }
    (order, seen)
}

/// Solves `boards` on two threads and checks each length against the BFS distance.
fn check_lengths(solver: &Solver, options: &SolveOptions, boards: &[(Board, u8)]) {
    std::thread::scope(|scope| {
        for half in boards.chunks(boards.len().div_ceil(2)) {
            scope.spawn(move || {
                for &(board, distance) in half {
                    let solution = solver
                        .solve(&board, options, None)
                        .unwrap_or_else(|e| panic!("{board}: {e}"));
                    assert_eq!(
                        solution.len(),
                        distance as usize,
                        "{board} with {} {}",
                        solver.heuristic(),
                        options.algorithm
                    );
                }
            });
        }
    });
}

#[test]
fn all_181440_boards_match_breadth_first_search() {
    let goal = Board::blank_last(3);
    let (boards, _) = distances(&goal);
    assert_eq!(boards.len(), 181_440);
    assert_eq!(
        boards.iter().filter(|(_, d)| *d == 31).count(),
        2,
        "exactly two boards need 31 moves"
    );
    assert_eq!(boards.iter().map(|(_, d)| *d).max(), Some(31));
    let solver = Solver::new(goal, HeuristicKind::Manhattan);
    check_lengths(&solver, &SolveOptions::default(), &boards);
}

#[test]
fn other_heuristics_and_astar_match_on_a_sample() {
    let goal = Board::blank_last(3);
    let (boards, _) = distances(&goal);
    let sample =
        |step: usize| -> Vec<(Board, u8)> { boards.iter().copied().step_by(step).collect() };
    let linear = Solver::new(goal, HeuristicKind::LinearConflict);
    check_lengths(&linear, &SolveOptions::default(), &sample(7));
    let hamming = Solver::new(goal, HeuristicKind::Hamming);
    check_lengths(&hamming, &SolveOptions::default(), &sample(211));
    let astar = SolveOptions {
        algorithm: Algorithm::AStar,
        ..SolveOptions::default()
    };
    check_lengths(&linear, &astar, &sample(101));
    check_lengths(&hamming, &astar, &sample(401));
}

#[test]
fn korf_goal_matches_breadth_first_search() {
    let goal = Board::blank_first(3);
    let (boards, _) = distances(&goal);
    assert_eq!(boards.len(), 181_440);
    let solver = Solver::new(goal, HeuristicKind::LinearConflict);
    let sample: Vec<_> = boards.iter().copied().step_by(13).collect();
    check_lengths(&solver, &SolveOptions::default(), &sample);
}

#[test]
fn heuristics_are_admissible_and_consistent_on_every_board() {
    let goal = Board::blank_last(3);
    let (boards, distance) = distances(&goal);
    for kind in HeuristicKind::ALL {
        let heuristic = AnyHeuristic::build(kind, &goal);
        for &(board, d) in &boards {
            let h = heuristic.estimate(&board);
            assert!(h <= u32::from(d), "{kind} overestimates {board}: {h} > {d}");
            assert_eq!(h == 0, d == 0, "{kind} is 0 exactly on the goal");
            for direction in Direction::ALL {
                if let Some((child, _)) = board.apply(direction) {
                    let child_h = heuristic.estimate(&child);
                    assert!(
                        h.abs_diff(child_h) <= 1,
                        "{kind}: {board} -> {child} changes h by more than 1"
                    );
                    assert!(distance.contains_key(&key(&child)));
                }
            }
        }
    }
}

#[test]
fn parity_rule_accepts_exactly_the_reachable_boards() {
    let goal = Board::blank_last(3);
    let (_, reachable) = distances(&goal);
    let mut values: Vec<u64> = (0..9).collect();
    let mut permutations = 0;
    // Heap's algorithm over all 9! arrangements.
    let mut counters = [0usize; 9];
    let mut check = |values: &[u64]| {
        let board = Board::from_tiles(values).unwrap();
        assert_eq!(
            board.check_solvable(&goal).is_ok(),
            reachable.contains_key(&key(&board)),
            "{board}"
        );
        permutations += 1;
    };
    check(&values);
    let mut i = 1;
    while i < 9 {
        if counters[i] < i {
            let j = if i % 2 == 0 { 0 } else { counters[i] };
            values.swap(j, i);
            check(&values);
            counters[i] += 1;
            i = 1;
        } else {
            counters[i] = 0;
            i += 1;
        }
    }
    assert_eq!(permutations, 362_880);
}
