//! Answers with a proven bound. A puzzle whose batch set a time or node limit stops its optimal
//! search once it has spent [`OPTIMAL_SHARE`] of either, summed over the threads that searched
//! it (checked as each of its tasks reports, so it may overrun by the tasks in flight); one
//! weighted task then searches the whole puzzle for a path within the rest. A batch that asked
//! for a bounded answer only starts there.
//!
//! The path is replayed and stored with the lower bound the optimal search proved, as a bounded
//! answer, never as a solution; when its length meets the bound it is the optimal answer and is
//! stored as one (after the audits the bound rests on). The path is also kept with the board's
//! search state, so a later search of the board starts from the bound and ends with the path as
//! soon as it has ruled out everything shorter.
//!
//! Pure: these functions read and mark a [`Puzzle`]; `lifecycle` queues, stores and ends.

use std::time::Duration;

use tilesolve::heuristic::Weight;
use tilesolve::moves::{moves_to_string, replay};
use tilesolve::solver::OPTIMAL_SHARE;
use tilesolve::task::WeightedWork;
use tilesolve::Direction;

use super::puzzle::Puzzle;
use super::types::{PuzzleId, TaskSpec};
use crate::store::{BestPath, ItemLimits, Priority, SearchState, StoredBounded};

/// Nodes a search thread is taken to expand in a second when a time limit is turned into a
/// whole-puzzle task's node budget (no rate is measured before a puzzle's first report): about
/// the slowest kernel's, the 24-puzzle's on its largest tables, so the task ends early rather
/// than late. Korf-24 #1 under a 3 s limit spent 4.6 s in its 20-million-node whole task
/// before the limit could be checked.
const ASSUMED_NODES_PER_SECOND: f64 = 2e6;

/// A whole-puzzle task's node budget under `limits`: the configured one, cut to the optimal
/// search's share of a node limit, and of a time limit at [`ASSUMED_NODES_PER_SECOND`]: one
/// task cannot overrun a limit that is checked only as tasks report.
pub(super) fn whole_budget_within(configured: u64, limits: &ItemLimits) -> u64 {
    let nodes = limits.nodes.map(|nodes| nodes as f64);
    let timed = limits
        .seconds
        .map(|seconds| seconds * ASSUMED_NODES_PER_SECOND);
    nodes
        .into_iter()
        .chain(timed)
        .map(|limit| (limit * OPTIMAL_SHARE) as u64)
        .fold(configured, u64::min)
        .max(1)
}

/// Why an answer under `limits` is not proven optimal, for its item.
fn reason(limits: &ItemLimits) -> String {
    let mut reasons = Vec::new();
    if let Some(percent) = limits.suboptimal_percent {
        reasons.push(format!(
            "asked for a path at most {} times the optimal length",
            f64::from(percent) / 100.0
        ));
    }
    if let Some(seconds) = limits.seconds {
        reasons.push(format!("time limit {seconds} s"));
    }
    if let Some(nodes) = limits.nodes {
        reasons.push(format!("node limit {nodes}"));
    }
    reasons.join(", ")
}

/// Whether `puzzle_id`'s optimal search has spent its share of a limit: it ends, and its
/// weighted task is queued ([`weighted_task`]).
pub(super) fn over_limit(puzzle_id: PuzzleId, puzzle: &Puzzle) -> bool {
    // An answer waiting for its audits is already found.
    if puzzle.weighted || puzzle.held.is_some() {
        return false;
    }
    let limits = puzzle.limits;
    let over_time = limits
        .seconds
        .is_some_and(|limit| puzzle.seconds >= limit * OPTIMAL_SHARE);
    let over_nodes = limits
        .nodes
        .is_some_and(|limit| puzzle.nodes as f64 >= limit as f64 * OPTIMAL_SHARE);
    if !(over_time || over_nodes) {
        return false;
    }
    tracing::info!(
        batch = puzzle_id.0,
        puzzle = puzzle_id.1 + 1,
        lower_bound = puzzle.proven,
        nodes = puzzle.nodes,
        seconds = puzzle.seconds,
        "limit reached: a weighted search looks for a path"
    );
    true
}

/// Marks the puzzle's optimal search over (a split of the iteration in progress, running
/// outside the lock, is dropped; its audits go on: a found answer rests on them) and returns
/// its weighted task, with what is left of its limits: the rest after the optimal search's
/// share, or all of them for a batch asking only for a bounded answer. Its outstanding tasks
/// are the caller's to withdraw.
pub(super) fn weighted_task(puzzle_id: PuzzleId, puzzle: &mut Puzzle) -> TaskSpec {
    puzzle.outstanding.clear();
    puzzle.splitting = None;
    puzzle.weighted = true;
    let limits = puzzle.limits;
    let share = match limits.suboptimal_percent {
        Some(_) => 1.0,
        None => 1.0 - OPTIMAL_SHARE,
    };
    TaskSpec {
        id: 0,
        puzzle: puzzle_id,
        board: puzzle.board,
        goal: puzzle.goal,
        heuristic: puzzle.heuristic,
        path: Vec::new(),
        bound: puzzle.proven,
        iterate: false,
        node_budget: limits
            .nodes
            .map_or(0, |nodes| ((nodes as f64 * share) as u64).max(1)),
        profile_depth: 0,
        weighted: Some(WeightedWork {
            weight: limits
                .suboptimal_percent
                .and_then(|percent| Weight::new(percent, 100)),
            time_limit: limits
                .seconds
                .and_then(|seconds| Duration::try_from_secs_f64(seconds * share).ok()),
        }),
        priority: Priority::DEFAULT,
    }
}

/// How a puzzle ends with what its weighted task found.
pub(super) enum WeightedEnd {
    /// No path at all, or one that failed replay.
    Failed(String),
    /// A path as short as the proven bound: the optimal answer.
    Solved(Vec<Direction>),
    /// A bounded answer, and the search state that keeps its path with the board.
    Bounded(SearchState, StoredBounded),
}

/// The end of a puzzle whose weighted task found `found`: the shorter of that path and one
/// stored by an earlier limited search, as the optimal answer when it meets the proven bound,
/// else as a bounded answer (replayed first, as every answer is); without any path, failed.
/// `heuristic` names the solver's heuristic, for the answer.
pub(super) fn weighted_end(
    puzzle: &Puzzle,
    found: Option<(Vec<Direction>, Weight)>,
    heuristic: String,
) -> WeightedEnd {
    let why = reason(&puzzle.limits);
    let lower_bound = puzzle.proven;
    let best = found
        .map(|(moves, weight)| (moves, weight.percent()))
        .into_iter()
        .chain(puzzle.best.clone())
        .min_by_key(|(moves, _)| moves.len());
    let Some((moves, weight_percent)) = best else {
        return WeightedEnd::Failed(format!(
            "{why}: no solution is shorter than {lower_bound} moves, and the weighted \
             searches found no path within the limit"
        ));
    };
    if moves.len() as u32 <= lower_bound {
        return WeightedEnd::Solved(moves);
    }
    let tiles = match replay(&puzzle.board, &puzzle.goal, &moves) {
        Ok(tiles) => tiles,
        Err(error) => {
            return WeightedEnd::Failed(format!(
                "internal error: a weighted path failed replay: {error}"
            ))
        }
    };
    let workers: Vec<u64> = puzzle.workers.iter().copied().collect();
    let moves = moves_to_string(&moves);
    let state = SearchState {
        lower_bound,
        workers: workers.clone(),
        best: Some(BestPath {
            moves: moves.clone(),
            weight_percent,
        }),
    };
    let bounded = StoredBounded {
        length: tiles.len() as u32,
        moves,
        tiles,
        lower_bound,
        weight_percent,
        nodes: puzzle.nodes,
        seconds: puzzle.seconds,
        heuristic,
        reason: why,
        workers,
    };
    WeightedEnd::Bounded(state, bounded)
}
