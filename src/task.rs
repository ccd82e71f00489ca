//! The unit of distributed work, shared by the coordinator (which creates and judges tasks) and
//! the worker (which runs them): search one subtree under one bound, or, for a whole puzzle,
//! iterate from a proven bound within a node budget.

use std::sync::atomic::AtomicBool;

use crate::board::Board;
use crate::moves::Direction;
use crate::search::{Abort, Bounded, IdaStop, Limits};
use crate::solver::Solver;

/// What running a task found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskOutcome {
    /// Moves from the task's board to the goal.
    Found(Vec<Direction>),
    /// No goal within the bound; the smallest f over it.
    Exceeded(u32),
    /// A whole-puzzle task spent its budget during the iteration at this bound (so no solution
    /// shorter than it exists).
    BudgetSpent(u32),
    /// A subtree task spent its budget: search these children of its board instead (moves from
    /// the board, each within the bound); `pruned_min_f` is the least f of the children over it.
    Split {
        children: Vec<Direction>,
        pruned_min_f: u32,
    },
    Failed(String),
}

/// Runs a task: the subtree below `board`, reached from the puzzle's root by `path`, under
/// `bound`; with `iterate`, IDA* from `bound` until solved or `node_budget` expanded nodes are
/// spent. Returns the outcome and the nodes expanded.
pub fn run_task(
    solver: &Solver,
    board: &Board,
    path: &[Direction],
    bound: u32,
    iterate: bool,
    node_budget: u64,
    cancel: Option<&AtomicBool>,
) -> (TaskOutcome, u64) {
    if iterate {
        let limits = Limits {
            cancel,
            deadline: None,
            max_nodes: Some(node_budget.max(1)),
        };
        let outcome = solver.iterate(board, bound, limits);
        let result = match outcome.result {
            Ok(moves) => TaskOutcome::Found(moves),
            Err(IdaStop::Aborted(Abort::NodeLimit)) => TaskOutcome::BudgetSpent(outcome.bound),
            Err(IdaStop::Aborted(abort)) => TaskOutcome::Failed(format!("stopped: {abort:?}")),
            Err(IdaStop::NoSolution) => TaskOutcome::Failed("no solution exists".into()),
        };
        return (result, outcome.counters.expanded);
    }
    let limits = Limits {
        cancel,
        deadline: None,
        max_nodes: (node_budget > 0).then_some(node_budget),
    };
    let (outcome, counters) = solver.search_subtree(
        board,
        path.len() as u32,
        path.last().copied(),
        bound,
        limits,
    );
    let result = match outcome {
        Bounded::Found(moves) => TaskOutcome::Found(moves),
        Bounded::Exceeded { next_bound } => TaskOutcome::Exceeded(next_bound),
        Bounded::Aborted(Abort::NodeLimit) => split_children(solver, board, path, bound),
        Bounded::Aborted(abort) => TaskOutcome::Failed(format!("stopped: {abort:?}")),
    };
    (result, counters.expanded)
}

/// The children of a subtree's root that are worth searching under `bound`, for handing an
/// over-budget subtree back as smaller tasks (the partial search is given up: at most one
/// budget's worth of work, for no single subtree holding up its iteration).
fn split_children(solver: &Solver, board: &Board, path: &[Direction], bound: u32) -> TaskOutcome {
    let g = path.len() as u32;
    let mut children = Vec::new();
    let mut pruned_min_f = u32::MAX;
    for direction in Direction::ALL {
        if path.last() == Some(&direction.opposite()) {
            continue;
        }
        let Some((child, _)) = board.apply(direction) else {
            continue;
        };
        let f = g + 1 + solver.estimate(&child);
        if f <= bound {
            children.push(direction);
        } else {
            pruned_min_f = pruned_min_f.min(f);
        }
    }
    TaskOutcome::Split {
        children,
        pruned_min_f,
    }
}
