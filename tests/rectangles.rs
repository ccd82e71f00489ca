//! Rectangular boards: every state of the small shapes by breadth-first search from the goal
//! (the independent check), against the solvability rule and against IDA*'s optimal lengths;
//! larger shapes by agreement between heuristics.

use std::collections::HashMap;
use std::collections::VecDeque;

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
