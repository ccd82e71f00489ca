//! An answer when a limit stops the optimal search: the shortest path weighted IDA* finds in what
//! is left of the limits, beside the lower bound the admissible search proved. Such an answer is
//! never called optimal, unless its length meets the bound, which proves it is.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::{Solution, SolveError, SolveOptions, Solver, Stop};
use crate::board::Board;
use crate::direction::Direction;
use crate::heuristic::{Weight, Weighted};
use crate::heuristic_choice::AnyHeuristic;
use crate::moves::{replay, without_loops};
use crate::search::{ida_star, Counters, IdaStop, Limits, MAX_DEPTH};

/// The share of a time or node limit the optimal search may spend; the weighted searches take
/// the rest, and find a path in a small part of the optimal search's work.
pub const OPTIMAL_SHARE: f64 = 0.75;

/// Weights tried in turn while the limits allow, as fractions: the first finds a path soonest;
/// each later one finds a path at most that many times the optimal length, and costs more (Korf
/// 24 #1, 95 moves: 1.5 gave 117 moves in 3,173 nodes, 1.2 gave 99 in 246,451, 1.1 gave 97 in
/// 3.4 million).
const WEIGHTS: [(u32, u32); 8] = [
    (3, 1),
    (2, 1),
    (3, 2),
    (13, 10),
    (6, 5),
    (23, 20),
    (11, 10),
    (21, 20),
];

/// What [`Solver::solve_or_bound`] gives.
#[derive(Clone, Debug)]
pub enum Answer {
    Optimal(Solution),
    Bounded(BoundedSolution),
}

/// A replayed path that is not proven optimal, with what is proven about the optimal length.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundedSolution {
    pub board: Board,
    pub goal: Board,
    pub moves: Vec<Direction>,
    /// The tile moved at each step.
    pub tiles: Vec<u8>,
    /// No solution is shorter: proven by the admissible search before it stopped.
    pub lower_bound: u32,
    /// The weight of the search that found the path: it is at most this many times the optimal.
    pub weight: f64,
    /// Both searches' nodes.
    pub counters: Counters,
    pub seconds: f64,
    /// Why this is not an optimal solution: the limit that stopped the optimal search, or
    /// [`SolveError::Suboptimal`] when only a bounded answer was asked for.
    pub stopped: SolveError,
}

impl BoundedSolution {
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}

impl Solver {
    /// [`Solver::solve`]; and when a time or node limit stops it (after [`OPTIMAL_SHARE`] of
    /// each), the shortest path weighted IDA* finds in the rest, as a bounded answer. A path
    /// whose length meets the proven lower bound is returned as the optimal solution it is.
    /// Without limits this is [`Solver::solve`].
    pub fn solve_or_bound(
        &self,
        board: &Board,
        options: &SolveOptions,
        cancel: Option<&AtomicBool>,
    ) -> Result<Answer, SolveError> {
        if options.time_limit.is_none() && options.node_limit.is_none() {
            return self.solve(board, options, cancel).map(Answer::Optimal);
        }
        let started = Instant::now();
        let first = SolveOptions {
            time_limit: options.time_limit.map(|t| t.mul_f64(OPTIMAL_SHARE)),
            node_limit: options
                .node_limit
                .map(|n| (n as f64 * OPTIMAL_SHARE) as u64),
            ..*options
        };
        // The error names the user's limits, not the share the optimal search had.
        let (stopped, lower_bound, limit_spent) = match self.solve(board, &first, cancel) {
            Ok(solution) => return Ok(Answer::Optimal(solution)),
            Err(SolveError::TimeLimit {
                bound, expanded, ..
            }) => (
                SolveError::TimeLimit {
                    limit: options.time_limit.unwrap_or_default(),
                    bound,
                    expanded,
                },
                bound,
                expanded,
            ),
            Err(SolveError::NodeLimit { bound, limit }) => (
                SolveError::NodeLimit {
                    limit: options.node_limit.unwrap_or_default(),
                    bound,
                },
                bound,
                limit,
            ),
            Err(other) => return Err(other),
        };
        let (best, searched) =
            self.shortest_weighted_path(board, lower_bound, None, |spent| Limits {
                max_nodes: options
                    .node_limit
                    .map(|limit| limit.saturating_sub(spent.saturating_add(limit_spent))),
                ..options.limits(started, cancel)
            });
        let counters = Counters {
            expanded: limit_spent.saturating_add(searched.expanded),
            generated: searched.generated,
        };
        let Some((moves, weight)) = best else {
            return Err(stopped);
        };
        self.answer(
            board,
            (moves, weight, counters),
            lower_bound,
            started,
            stopped,
        )
    }

    /// The shortest path weighted IDA* finds for `board`: with `weight` alone, or else with
    /// [`WEIGHTS`] in turn (each finding a path at most that many times the optimal length),
    /// stopping once a path meets `lower_bound` (a proven one) or `limits` (given the nodes
    /// spent so far) stop a search. The path, if any, with the weight that found it, and every
    /// search's nodes. What a worker runs for a board whose optimal search a limit stopped.
    pub fn shortest_weighted_path<'a>(
        &self,
        board: &Board,
        lower_bound: u32,
        weight: Option<Weight>,
        limits: impl Fn(u64) -> Limits<'a>,
    ) -> (Option<(Vec<Direction>, Weight)>, Counters) {
        let mut counters = Counters::default();
        let mut best: Option<(Vec<Direction>, Weight)> = None;
        let estimate = self.estimate(board);
        let weights: Vec<Weight> = match weight {
            Some(weight) => vec![weight],
            None => WEIGHTS
                .iter()
                .filter_map(|&(n, d)| Weight::new(n, d))
                .collect(),
        };
        // A weight whose scaled estimate of the board passes the longest path the kernel
        // records has nothing to search.
        let searchable = |weight: &Weight| (weight.scale(estimate) as usize) < MAX_DEPTH;
        for weight in weights.into_iter().filter(searchable) {
            let (found, spent) = self.weighted_path(board, weight, limits(counters.expanded));
            counters += spent;
            let moves = match found {
                Ok(moves) => moves,
                Err(IdaStop::NoSolution) => continue,
                Err(IdaStop::Aborted(_)) => break,
            };
            if best
                .as_ref()
                .is_none_or(|(shortest, _)| moves.len() < shortest.len())
            {
                best = Some((moves, weight));
            }
            if best
                .as_ref()
                .is_some_and(|(shortest, _)| shortest.len() as u32 <= lower_bound)
            {
                break;
            }
        }
        (best, counters)
    }

    /// A path found by weighted IDA* with `weight` alone, within `options`' limits, as a bounded
    /// answer whose lower bound is the heuristic's estimate of `board` (or as the optimal
    /// solution, when its length meets that estimate).
    pub fn solve_weighted(
        &self,
        board: &Board,
        weight: Weight,
        options: &SolveOptions,
        cancel: Option<&AtomicBool>,
    ) -> Result<Answer, SolveError> {
        board.check_solvable(&self.goal)?;
        let lower_bound = self.estimate(board);
        if weight.scale(lower_bound) as usize >= MAX_DEPTH {
            return Err(SolveError::WeightTooLarge {
                weight: weight.as_f64(),
                estimate: lower_bound,
            });
        }
        let started = Instant::now();
        let (found, counters) = self.weighted_path(board, weight, options.limits(started, cancel));
        let moves = found.map_err(|stop| {
            Stop::of_ida(stop, lower_bound, counters.expanded).into_error(options)
        })?;
        let stopped = SolveError::Suboptimal {
            weight: weight.as_f64(),
        };
        self.answer(
            board,
            (moves, weight, counters),
            lower_bound,
            started,
            stopped,
        )
    }

    /// Weighted IDA* on `board` within `limits`: the path, if it found one, and its nodes.
    fn weighted_path(
        &self,
        board: &Board,
        weight: Weight,
        limits: Limits<'_>,
    ) -> (Result<Vec<Direction>, IdaStop>, Counters) {
        let outcome = dispatch!(&self.heuristic, h => ida_star(
            &Weighted::new(h, weight),
            &self.neighbors,
            self.pruning,
            board,
            &self.goal,
            0,
            limits,
        ));
        // A weighted search may pass a board twice on its way (no bound keeps it shortest);
        // the path without those loops is shorter, and is the only kind replay accepts.
        let result = outcome.result.map(|moves| without_loops(board, &moves));
        (result, outcome.counters)
    }

    /// `moves`, found with `weight` in `counters`' nodes, replayed: the optimal solution when
    /// its length meets `lower_bound`, which proves it; else a bounded answer.
    fn answer(
        &self,
        board: &Board,
        (moves, weight, counters): (Vec<Direction>, Weight, Counters),
        lower_bound: u32,
        started: Instant,
        stopped: SolveError,
    ) -> Result<Answer, SolveError> {
        let tiles = replay(board, &self.goal, &moves)?;
        let seconds = started.elapsed().as_secs_f64();
        if moves.len() as u32 <= lower_bound {
            return Ok(Answer::Optimal(Solution {
                board: *board,
                goal: self.goal,
                moves,
                tiles,
                counters,
                iterations: 0,
                initial_estimate: self.estimate(board),
                seconds,
            }));
        }
        Ok(Answer::Bounded(BoundedSolution {
            board: *board,
            goal: self.goal,
            moves,
            tiles,
            lower_bound,
            weight: weight.as_f64(),
            counters,
            seconds,
            stopped,
        }))
    }
}
