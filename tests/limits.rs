//! Limits end a search with a clear reason and a proven lower bound, never a hang; A* agrees with
//! IDA* where it fits in memory and says so plainly where it does not.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tilesolve::heuristic::TileCost;
use tilesolve::moves::Neighbors;
use tilesolve::search::{ida_star, Bounded, Kernel, Limits};
use tilesolve::{Algorithm, Board, HeuristicKind, SolveError, SolveOptions, Solver};

/// Korf #88: 65 moves and about six billion nodes with Manhattan, far beyond any limit below.
fn hard_board() -> Board {
    common::instances("korf100.txt")
        .into_iter()
        .find(|i| i.id == 88)
        .unwrap()
        .board
}

fn korf_solver(kind: HeuristicKind) -> Solver {
    Solver::new(Board::blank_first(4), kind)
}

#[test]
fn time_limit_reports_the_bound_reached() {
    let options = SolveOptions {
        time_limit: Some(Duration::from_millis(200)),
        ..SolveOptions::default()
    };
    let error = korf_solver(HeuristicKind::Manhattan)
        .solve(&hard_board(), &options, None)
        .unwrap_err();
    let SolveError::TimeLimit { bound, .. } = error else {
        panic!("expected a time limit, got {error}")
    };
    assert!(
        (43..=65).contains(&bound),
        "bound {bound} lies between h(root) and the optimal 65"
    );
    assert!(error.to_string().contains("time limit"));
    assert_eq!(error.lower_bound(), Some(bound));
}

#[test]
fn node_limit_and_cancel_stop_the_search() {
    let options = SolveOptions {
        node_limit: Some(100_000),
        ..SolveOptions::default()
    };
    let error = korf_solver(HeuristicKind::Manhattan)
        .solve(&hard_board(), &options, None)
        .unwrap_err();
    assert!(
        matches!(error, SolveError::NodeLimit { limit: 100_000, .. }),
        "{error}"
    );

    let cancel = AtomicBool::new(true);
    let error = korf_solver(HeuristicKind::Manhattan)
        .solve(&hard_board(), &SolveOptions::default(), Some(&cancel))
        .unwrap_err();
    assert!(matches!(error, SolveError::Cancelled { .. }), "{error}");
}

#[test]
fn astar_memory_budget_is_a_clear_error() {
    let options = SolveOptions {
        algorithm: Algorithm::AStar,
        memory_budget: 1 << 20,
        ..SolveOptions::default()
    };
    let error = korf_solver(HeuristicKind::Manhattan)
        .solve(&hard_board(), &options, None)
        .unwrap_err();
    assert!(matches!(error, SolveError::MemoryBudget(_)), "{error}");
    assert!(
        error.to_string().starts_with("memory budget exceeded"),
        "{error}"
    );
}

#[test]
fn astar_agrees_with_ida_on_15_puzzles() {
    let solver = korf_solver(HeuristicKind::LinearConflict);
    let astar = SolveOptions {
        algorithm: Algorithm::AStar,
        ..SolveOptions::default()
    };
    let mut instances = common::instances("korf100.txt");
    instances.sort_by_key(|i| i.korf1985_nodes);
    for instance in instances.iter().take(3) {
        let a = solver.solve(&instance.board, &astar, None).unwrap();
        assert_eq!(a.len(), instance.optimal, "A* on #{}", instance.id);
    }
}

#[test]
fn kernel_searches_a_subtree_under_a_bound() {
    // A subtree task as the coordinator will send it: a board at depth g with the bound T.
    let goal = Board::blank_last(4);
    let neighbors = Neighbors::new(tilesolve::Shape::square(4));
    let manhattan = TileCost::manhattan(&goal);
    let start = common::Rng::new(7).walk(&goal, 30);
    let outcome = ida_star(
        &manhattan,
        &neighbors,
        tilesolve::search::MovePruning::none(),
        &start,
        &goal,
        0,
        Limits::default(),
    );
    let moves = outcome.result.unwrap();
    let optimal = moves.len() as u32;
    // Step down the optimal path: the rest is found from depth 1 under the same bound...
    let (child, _) = start.apply(moves[0]).unwrap();
    let mut kernel = Kernel::new(&manhattan, &neighbors, &goal, Limits::default());
    assert_eq!(
        kernel.search(&child, 1, Some(moves[0]), optimal),
        Bounded::Found(moves[1..].to_vec())
    );
    // ...and under a smaller bound the subtree reports the next bound instead.
    assert!(
        matches!(kernel.search(&child, 1, Some(moves[0]), optimal - 2), Bounded::Exceeded { next_bound } if next_bound > optimal - 2)
    );
}
