//! Heuristic properties on boards too large to enumerate: the incremental update equals a full
//! evaluation, h changes by at most one per move, and h never exceeds a known optimal length.

mod common;

use common::Rng;
use proptest::prelude::*;
use tilesolve::board::Position;
use tilesolve::heuristic::{Heuristic, LinearConflict, TileCost};
use tilesolve::heuristic_choice::AnyHeuristic;
use tilesolve::{Board, Direction, HeuristicKind, SolveOptions, Solver};

/// Checks every legal move of `board`: incremental h == full h, and |Δh| <= 1.
fn check_moves<H: Heuristic>(name: &str, heuristic: &H, board: &Board) {
    let state = heuristic.init(&Position::new(board));
    let h = heuristic.value(state);
    for direction in Direction::ALL {
        let Some((child, tile)) = board.apply(direction) else {
            continue;
        };
        let child_position = Position::new(&child);
        let full = heuristic.estimate(&child_position);
        // The tile moved from the child's blank cell to the parent's blank cell.
        let incremental = heuristic.value(heuristic.after_move(
            &child_position,
            state,
            tile,
            child.blank(),
            board.blank(),
        ));
        assert_eq!(
            incremental, full,
            "{name}: incremental update after {direction} from {board}"
        );
        assert!(
            h.abs_diff(full) <= 1,
            "{name}: {board} -> {child} changes h from {h} to {full}"
        );
    }
}

fn check_all_heuristics(board: &Board, goal: &Board) {
    check_moves("manhattan", &TileCost::manhattan(goal), board);
    check_moves("hamming", &TileCost::hamming(goal), board);
    check_moves("linear-conflict", &LinearConflict::new(goal), board);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn incremental_and_consistent_on_random_boards(seed in any::<u64>(), side in 3usize..=5, korf_goal in any::<bool>()) {
        let goal = if korf_goal { Board::blank_first(side) } else { Board::blank_last(side) };
        let board = Rng::new(seed).solvable_board(&goal);
        check_all_heuristics(&board, &goal);
    }

    #[test]
    fn never_above_the_true_distance_of_short_walks(seed in any::<u64>(), moves in 0usize..=24) {
        let goal = Board::blank_last(4);
        let board = Rng::new(seed).walk(&goal, moves);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let optimal = solver.solve(&board, &SolveOptions::default(), None).unwrap().len() as u32;
        prop_assert!(optimal as usize <= moves);
        for kind in HeuristicKind::ALL {
            let h = AnyHeuristic::build(kind, &goal).estimate(&board);
            prop_assert!(h <= optimal, "{} gives {} > {} on {}", kind, h, optimal, board);
        }
        let manhattan = Solver::new(goal, HeuristicKind::Manhattan).solve(&board, &SolveOptions::default(), None).unwrap();
        prop_assert_eq!(manhattan.len() as u32, optimal);
    }
}

#[test]
fn never_above_published_optimal_lengths() {
    let sets = [
        ("korf100.txt", Board::blank_first(4)),
        ("examples15.txt", Board::blank_last(4)),
        ("korf24-blank-last.txt", Board::blank_last(5)),
    ];
    for (file, goal) in sets {
        for instance in common::instances(file) {
            for kind in HeuristicKind::ALL {
                let h = AnyHeuristic::build(kind, &goal).estimate(&instance.board);
                assert!(
                    h as usize <= instance.optimal,
                    "{kind} on {file} #{}: {h} > {}",
                    instance.id,
                    instance.optimal
                );
            }
            check_all_heuristics(&instance.board, &goal);
        }
    }
}
