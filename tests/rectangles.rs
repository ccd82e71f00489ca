//! Rectangular boards: every state of the small shapes by breadth-first search from the goal
//! (the independent check), against the solvability rule, IDA*'s optimal lengths and the
//! `blocks-K` pattern tables' estimates; larger shapes by agreement between heuristics.

use std::collections::HashMap;
use std::collections::VecDeque;

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::{PdbEvent, PdbStore, Preset};
use tilesolve::{Board, BoardError, Direction, HeuristicKind, Shape, SolveOptions, Solver};

/// Every board reachable from `goal`, with its distance.
fn distances(goal: Board) -> HashMap<Board, u32> {
    let mut seen = HashMap::from([(goal, 0)]);
    let mut queue = VecDeque::from([goal]);
    while let Some(board) = queue.pop_front() {
        let distance = seen[&board];
        for direction in Direction::ALL {
            if let Some((next, _)) = board.apply(direction) {
                seen.entry(next).or_insert_with(|| {
                    queue.push_back(next);
                    distance + 1
                });
            }
        }
    }
    seen
}

fn factorial(n: usize) -> usize {
    (1..=n).product()
}

/// The permutation of 0..n numbered `index` (Lehmer code).
fn permutation(n: usize, mut index: usize) -> Vec<u64> {
    let mut left: Vec<u64> = (0..n as u64).collect();
    let mut out = Vec::with_capacity(n);
    for remaining in (1..=n).rev() {
        let f = factorial(remaining - 1);
        out.push(left.remove(index / f));
        index %= f;
    }
    out
}

#[test]
fn half_of_every_small_shape_is_reachable_and_the_rule_says_which_half() {
    for (rows, cols) in [(2, 2), (2, 3), (3, 2), (2, 4), (4, 2), (3, 3)] {
        let shape = Shape::new(rows, cols).unwrap();
        for goal in [Board::blank_last_in(shape), Board::blank_first_in(shape)] {
            let reachable = distances(goal);
            let cells = shape.cells();
            assert_eq!(reachable.len(), factorial(cells) / 2, "{shape}");
            for index in 0..factorial(cells) {
                let board = Board::from_tiles_in(&permutation(cells, index), shape).unwrap();
                let solvable = board.check_solvable(&goal);
                assert_eq!(
                    solvable.is_ok(),
                    reachable.contains_key(&board),
                    "{shape} {board}: {solvable:?}"
                );
                if !reachable.contains_key(&board) {
                    assert_eq!(solvable, Err(BoardError::Unsolvable));
                }
            }
        }
    }
}

#[test]
fn ida_finds_the_breadth_first_length_on_small_shapes() {
    let options = SolveOptions::default();
    for (rows, cols, step) in [
        (2, 3, 1),
        (3, 2, 1),
        (2, 4, 7),
        (4, 2, 7),
        (2, 5, 997),
        (5, 2, 997),
    ] {
        let shape = Shape::new(rows, cols).unwrap();
        let goal = Board::blank_last_in(shape);
        let reachable = distances(goal);
        let mut boards: Vec<(&Board, &u32)> = reachable.iter().collect();
        boards.sort_unstable_by_key(|(board, _)| board.tiles().to_vec());
        let solvers = [
            Solver::new(goal, HeuristicKind::Manhattan),
            Solver::new(goal, HeuristicKind::LinearConflict),
        ];
        for (board, &distance) in boards.into_iter().step_by(step) {
            for solver in &solvers {
                let solution = solver.solve(board, &options, None).unwrap();
                assert_eq!(
                    solution.len() as u32,
                    distance,
                    "{shape} {board} with {}",
                    solver.heuristic()
                );
            }
        }
    }
}

/// A board `steps` random moves from the goal of `shape` (deterministic for a seed).
fn walked(shape: Shape, steps: usize, seed: u64) -> Board {
    let mut board = Board::blank_last_in(shape);
    let mut state = seed;
    for _ in 0..steps {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        if let Some((next, _)) = board.apply(Direction::ALL[(state >> 33) as usize % 4]) {
            board = next;
        }
    }
    board
}

#[test]
fn larger_shapes_get_one_length_from_both_heuristics() {
    let options = SolveOptions::default();
    for (rows, cols, steps) in [
        (3, 4, 200),
        (2, 6, 200),
        (4, 3, 200),
        (4, 5, 70),
        (5, 6, 50),
    ] {
        let shape = Shape::new(rows, cols).unwrap();
        let goal = Board::blank_last_in(shape);
        let manhattan = Solver::new(goal, HeuristicKind::Manhattan);
        let conflict = Solver::new(goal, HeuristicKind::LinearConflict);
        for seed in 1..=3 {
            let board = walked(shape, steps, seed);
            let a = manhattan.solve(&board, &options, None).unwrap();
            let b = conflict.solve(&board, &options, None).unwrap();
            assert_eq!(a.len(), b.len(), "{shape} {board}");
            assert!(
                conflict.estimate(&board) <= b.len() as u32,
                "{shape} {board}"
            );
        }
    }
}

/// The solver of `blocks-k` for the blank-last goal of `shape`, its tables built into `pdbs`.
fn blocks_solver(pdbs: &PdbStore, shape: Shape, k: u8) -> Solver {
    let goal = Board::blank_last_in(shape);
    let choice = HeuristicChoice::Pdb(Preset::Blocks(k));
    let quiet = |_: PdbEvent<'_>| {};
    let built = choice.build(&goal, u64::MAX, pdbs, &quiet).unwrap();
    Solver::with_heuristic(goal, built, choice.to_string())
}

#[test]
fn blocks_tables_are_exact_where_they_hold_every_tile_and_never_overestimate() {
    let dir = tempfile::tempdir().unwrap();
    let pdbs = PdbStore::new(dir.path(), 2);
    for (rows, cols, k) in [
        (2, 4, 7),
        (4, 2, 7),
        (2, 4, 3),
        (4, 2, 2),
        (2, 5, 4),
        (5, 2, 3),
    ] {
        let shape = Shape::new(rows, cols).unwrap();
        let solver = blocks_solver(&pdbs, shape, k);
        let exact = k as usize == shape.cells() - 1;
        for (board, distance) in distances(Board::blank_last_in(shape)) {
            let estimate = solver.estimate(&board);
            match exact {
                true => assert_eq!(estimate, distance, "{shape} blocks-{k} {board}"),
                false => assert!(estimate <= distance, "{shape} blocks-{k} {board}"),
            }
        }
    }
}

#[test]
fn blocks_tables_find_the_lengths_linear_conflict_finds() {
    let dir = tempfile::tempdir().unwrap();
    let pdbs = PdbStore::new(dir.path(), 2);
    let options = SolveOptions::default();
    for (rows, cols, k, steps) in [
        (3, 4, 4, 200),
        (2, 6, 4, 200),
        (4, 3, 5, 200),
        (4, 5, 5, 70),
    ] {
        let shape = Shape::new(rows, cols).unwrap();
        let blocks = blocks_solver(&pdbs, shape, k);
        let conflict = Solver::new(Board::blank_last_in(shape), HeuristicKind::LinearConflict);
        for seed in 1..=3 {
            let board = walked(shape, steps, seed);
            let a = blocks.solve(&board, &options, None).unwrap();
            let b = conflict.solve(&board, &options, None).unwrap();
            assert_eq!(a.len(), b.len(), "{shape} {board}");
        }
    }
}
