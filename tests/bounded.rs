//! A board stopped by a time or node limit comes back with a replayed path and the lower bound
//! the admissible search proved, checked against published optimal lengths: the bound is never
//! above the optimal length, the path never below it nor over the weight's guarantee; and a path
//! is called optimal only when it is.

mod common;

use std::time::Duration;

use tilesolve::heuristic::{Weight, Weighted};
use tilesolve::moves::{replay, Neighbors};
use tilesolve::search::{ida_star, Limits, MovePruning, Pruning};
use tilesolve::solver::{Answer, BoundedSolution};
use tilesolve::{Board, HeuristicKind, SolveError, SolveOptions, Solver};

fn korf_solver() -> Solver {
    Solver::new(Board::blank_first(4), HeuristicKind::LinearConflict)
}

/// What is proven about `answer` holds for a board of `optimal` moves.
fn assert_sound(answer: &BoundedSolution, optimal: usize) {
    assert!(answer.lower_bound as usize <= optimal, "{answer:?}");
    assert!(answer.len() > optimal.max(answer.lower_bound as usize) - 1);
    assert!(
        answer.len() as f64 <= answer.weight * optimal as f64,
        "{answer:?}"
    );
    assert!(replay(&answer.board, &answer.goal, &answer.moves).is_ok());
    assert_eq!(answer.tiles.len(), answer.len());
}

#[test]
fn a_board_stopped_by_a_node_limit_comes_back_with_a_path_and_its_bound() {
    let korf88 = common::instances("korf100.txt")
        .into_iter()
        .find(|i| i.id == 88)
        .unwrap();
    let options = SolveOptions {
        node_limit: Some(200_000),
        ..SolveOptions::default()
    };
    let Ok(Answer::Bounded(answer)) = korf_solver().solve_or_bound(&korf88.board, &options, None)
    else {
        panic!("Korf #88 (65 moves) is far beyond 200,000 nodes with linear conflict")
    };
    assert_sound(&answer, korf88.optimal);
    assert!(
        matches!(answer.stopped, SolveError::NodeLimit { limit: 200_000, bound } if bound == answer.lower_bound),
        "{}",
        answer.stopped
    );
}

#[test]
fn every_answer_under_a_limit_is_optimal_or_soundly_bounded() {
    let options = SolveOptions {
        node_limit: Some(30_000),
        ..SolveOptions::default()
    };
    let solver = korf_solver();
    let (mut optimal, mut bounded, mut unanswered) = (0, 0, 0);
    for instance in common::instances("korf100.txt").iter().take(25) {
        match solver.solve_or_bound(&instance.board, &options, None) {
            Ok(Answer::Optimal(solution)) => {
                assert_eq!(solution.len(), instance.optimal, "Korf #{}", instance.id);
                optimal += 1;
            }
            Ok(Answer::Bounded(answer)) => {
                assert_sound(&answer, instance.optimal);
                bounded += 1;
            }
            // Not even the heaviest weight reached the goal in what the limit left.
            Err(SolveError::NodeLimit { bound, .. }) => {
                assert!(bound as usize <= instance.optimal, "Korf #{}", instance.id);
                unanswered += 1;
            }
            Err(error) => panic!("Korf #{}: {error}", instance.id),
        }
    }
    assert!(
        bounded > 20,
        "{optimal} optimal, {bounded} bounded, {unanswered} unanswered"
    );
}

#[test]
fn without_limits_the_answer_is_the_optimal_solution() {
    let board = common::Rng::new(7).walk(&Board::blank_first(4), 30);
    let solver = korf_solver();
    let options = SolveOptions::default();
    let Ok(Answer::Optimal(answer)) = solver.solve_or_bound(&board, &options, None) else {
        panic!("no limits, no bounded answer")
    };
    let solved = solver.solve(&board, &options, None).unwrap();
    assert_eq!(
        (&answer.moves, answer.counters),
        (&solved.moves, solved.counters)
    );
    let generous = SolveOptions {
        time_limit: Some(Duration::from_secs(60)),
        ..SolveOptions::default()
    };
    let Ok(Answer::Optimal(within)) = solver.solve_or_bound(&board, &generous, None) else {
        panic!("an easy board within a minute is solved optimally")
    };
    assert_eq!(within.moves, answer.moves);
}

#[test]
fn weighted_ida_finds_paths_within_the_weight_of_the_optimal_on_the_8_puzzle() {
    let goal = Board::blank_last(3);
    let manhattan = tilesolve::heuristic::TileCost::manhattan(&goal);
    let neighbors = Neighbors::new(tilesolve::Shape::square(3));
    let pruning = MovePruning::for_side(3, Pruning::Duplicates);
    let solver = Solver::new(goal, HeuristicKind::Manhattan);
    let mut rng = common::Rng::new(11);
    for _ in 0..200 {
        let board = rng.solvable_board(&goal);
        let optimal = solver
            .solve(&board, &SolveOptions::default(), None)
            .unwrap()
            .len();
        for (numerator, denominator) in [(2, 1), (3, 2), (5, 4)] {
            let weight = Weight::new(numerator, denominator).unwrap();
            let outcome = ida_star(
                &Weighted::new(&manhattan, weight),
                &neighbors,
                pruning,
                &board,
                &goal,
                0,
                Limits::default(),
            );
            let moves = outcome.result.unwrap();
            assert!(replay(&board, &goal, &moves).is_ok());
            assert!(moves.len() >= optimal);
            assert!(moves.len() as f64 <= weight.as_f64() * optimal as f64);
        }
    }
}

#[test]
fn a_weight_that_scales_the_estimate_past_the_longest_path_is_refused_plainly() {
    let korf88 = common::instances("korf100.txt")
        .into_iter()
        .find(|i| i.id == 88)
        .unwrap();
    let solver = korf_solver();
    assert!(solver.estimate(&korf88.board) * 10 > 255);
    let error = solver
        .solve_weighted(
            &korf88.board,
            Weight::new(10, 1).unwrap(),
            &SolveOptions::default(),
            None,
        )
        .unwrap_err();
    assert!(
        matches!(error, SolveError::WeightTooLarge { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("choose a smaller weight"));
}
