//! The front door for solving one board: validation against the goal, the choice of heuristic and
//! algorithm, limits, and the replay check every solution passes before anyone sees it.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::board::{Board, BoardError};
use crate::direction::Direction;
use crate::heuristic::{Heuristic, HeuristicKind};
use crate::heuristic_choice::AnyHeuristic;
use crate::moves::{replay, Neighbors, ReplayError};
use crate::search::pruning::START;
use crate::search::{
    a_star, ida_star, ida_star_measuring_last, profiled_search, AStarError, Abort, Bounded,
    Counters, IdaOutcome, IdaStop, Kernel, Limits, MovePruning, Profiled, Pruning, SubtreeRoot,
    MAX_DEPTH,
};

/// Evaluates `$body` with `$h` bound to the concrete heuristic inside an [`AnyHeuristic`], so
/// the kernel is compiled once per heuristic with no dynamic dispatch per node.
macro_rules! dispatch {
    ($any:expr, $h:ident => $body:expr) => {
        match $any {
            AnyHeuristic::TileCost(boxed) => {
                let $h = boxed.as_ref();
                $body
            }
            AnyHeuristic::LinearConflict(boxed) => {
                let $h = boxed.as_ref();
                $body
            }
            AnyHeuristic::Pdb(shared) => {
                match (shared.partitioned(), shared.partitioned_by_blank()) {
                    (Some(partitioned), _) => {
                        let $h = &partitioned;
                        $body
                    }
                    (None, Some(partitioned)) => {
                        let $h = &partitioned;
                        $body
                    }
                    (None, None) => {
                        let $h = shared.as_ref();
                        $body
                    }
                }
            }
            AnyHeuristic::WidePdb(shared) => {
                let $h = shared.as_ref();
                $body
            }
        }
    };
}

// After the macro, which it uses.
mod bounded;

pub use bounded::{Answer, BoundedSolution, OPTIMAL_SHARE};

/// Search algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Iterative deepening A*: memory linear in the depth; the default.
    Ida,
    /// A* with a memory budget.
    AStar,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ida => "ida",
            Algorithm::AStar => "astar",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown algorithm '{0}' (known: ida, astar)")]
pub struct UnknownAlgorithm(pub String);

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "ida" | "ida*" => Ok(Algorithm::Ida),
            "astar" | "a*" => Ok(Algorithm::AStar),
            other => Err(UnknownAlgorithm(other.to_string())),
        }
    }
}

/// How to search one board.
#[derive(Clone, Copy, Debug)]
pub struct SolveOptions {
    pub algorithm: Algorithm,
    pub time_limit: Option<Duration>,
    /// Budget of expanded nodes.
    pub node_limit: Option<u64>,
    /// Bytes A* may use for its tables.
    pub memory_budget: usize,
}

impl SolveOptions {
    /// The limits of a search started at `started`: the time limit from then, the node limit.
    fn limits<'a>(&self, started: Instant, cancel: Option<&'a AtomicBool>) -> Limits<'a> {
        Limits {
            cancel,
            hand_back: None,
            deadline: self.time_limit.map(|limit| started + limit),
            max_nodes: self.node_limit,
            whole_iterations: false,
        }
    }
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            algorithm: Algorithm::Ida,
            time_limit: None,
            node_limit: None,
            memory_budget: 2 << 30,
        }
    }
}

/// A solution that was replayed from the board to the goal; optimal because the heuristic is
/// admissible.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    pub board: Board,
    pub goal: Board,
    /// The blank's moves.
    pub moves: Vec<Direction>,
    /// The tile moved at each step.
    pub tiles: Vec<u8>,
    pub counters: Counters,
    /// IDA* iterations (1 for A*).
    pub iterations: u32,
    /// The heuristic's estimate of the start board.
    pub initial_estimate: u32,
    pub seconds: f64,
}

impl Solution {
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}

/// Why a board was not solved.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SolveError {
    #[error(transparent)]
    Board(#[from] BoardError),
    #[error("time limit of {limit:?} reached after {expanded} expanded nodes; no solution shorter than {bound} moves exists")]
    TimeLimit {
        limit: Duration,
        bound: u32,
        expanded: u64,
    },
    #[error("node limit of {limit} expanded nodes reached; no solution shorter than {bound} moves exists")]
    NodeLimit { limit: u64, bound: u32 },
    #[error(
        "cancelled after {expanded} expanded nodes; no solution shorter than {bound} moves exists"
    )]
    Cancelled { bound: u32, expanded: u64 },
    #[error(transparent)]
    MemoryBudget(AStarError),
    #[error("the search ended without reaching the goal")]
    NoSolution,
    /// Not an error of the search: a bounded answer was asked for instead of an optimal one.
    #[error("a path at most {weight} times the optimal length was asked for, not an optimal one")]
    Suboptimal { weight: f64 },
    #[error(
        "weight {weight} times this board's estimate of {estimate} moves passes the longest path \
         the search records ({} moves): choose a smaller weight", MAX_DEPTH - 1
    )]
    WeightTooLarge { weight: f64, estimate: u32 },
    #[error("internal error: the solver's answer failed its replay check: {0}")]
    Replay(#[from] ReplayError),
}

impl SolveError {
    /// The proven lower bound on the solution length, when the search stopped early.
    pub fn lower_bound(&self) -> Option<u32> {
        match self {
            SolveError::TimeLimit { bound, .. }
            | SolveError::NodeLimit { bound, .. }
            | SolveError::Cancelled { bound, .. } => Some(*bound),
            _ => None,
        }
    }
}

/// Solves boards towards one goal with one heuristic; its tables are built once and reused.
#[derive(Clone, Debug)]
pub struct Solver {
    goal: Board,
    neighbors: Neighbors,
    pruning: &'static MovePruning,
    heuristic_name: String,
    heuristic: AnyHeuristic,
}

impl Solver {
    /// A solver with one of the heuristics that need no tables on disk.
    pub fn new(goal: Board, kind: HeuristicKind) -> Solver {
        Solver::with_heuristic(goal, AnyHeuristic::build(kind, &goal), kind.name())
    }

    /// A solver with a heuristic built for `goal` (e.g. a pattern database), reported as `name`.
    pub fn with_heuristic(goal: Board, heuristic: AnyHeuristic, name: impl Into<String>) -> Solver {
        Solver {
            goal,
            neighbors: Neighbors::new(goal.shape()),
            pruning: MovePruning::for_shape(goal.shape(), Pruning::Duplicates),
            heuristic_name: name.into(),
            heuristic,
        }
    }

    /// The same solver skipping only what `pruning` says (by default every duplicate path the
    /// board size's pruning machine knows; [`Pruning::UndoOnly`] reproduces Korf's 1985 counts).
    pub fn with_pruning(mut self, pruning: Pruning) -> Solver {
        self.pruning = MovePruning::for_shape(self.goal.shape(), pruning);
        self
    }

    pub fn goal(&self) -> &Board {
        &self.goal
    }

    /// The heuristic's name, e.g. `manhattan` or `pdb:7-8`.
    pub fn heuristic(&self) -> &str {
        &self.heuristic_name
    }

    /// Bytes of pattern tables its heuristic reads.
    pub fn table_bytes(&self) -> u64 {
        self.heuristic.table_bytes()
    }

    /// A real path from `board` to the goal two moves longer than the shortest, visiting no
    /// board twice, whose first move is not `not_first`: the lie no replay refuses, which only
    /// an audit (a second search) can disprove. The liar tests tell it. Tries a few moves away
    /// (one to four, in turn) for a board whose own shortest path makes the total; `None` if
    /// none does.
    pub fn path_two_moves_longer(
        &self,
        board: &Board,
        not_first: Option<Direction>,
    ) -> Option<Vec<Direction>> {
        let options = SolveOptions::default();
        let wanted = self.solve(board, &options, None).ok()?.moves.len() + 2;
        let mut prefixes: Vec<(Vec<Direction>, Board)> = vec![(Vec::new(), *board)];
        for _ in 0..4 {
            let mut longer = Vec::new();
            for (prefix, at) in &prefixes {
                let not = prefix.last().map(|d| d.opposite()).or(not_first);
                for direction in Direction::ALL.into_iter().filter(|&d| Some(d) != not) {
                    let Some((next, _)) = at.apply(direction) else {
                        continue;
                    };
                    let mut path = prefix.clone();
                    path.push(direction);
                    let Ok(rest) = self.solve(&next, &options, None) else {
                        continue;
                    };
                    let mut whole = path.clone();
                    whole.extend(rest.moves);
                    if whole.len() == wanted && replay(board, &self.goal, &whole).is_ok() {
                        return Some(whole);
                    }
                    longer.push((path, next));
                }
            }
            prefixes = longer;
        }
        None
    }

    /// The heuristic's estimate of `board`'s distance to the goal.
    pub fn estimate(&self, board: &Board) -> u32 {
        self.heuristic.estimate(board)
    }

    /// Finds an optimal solution of `board`, or says why not.
    pub fn solve(
        &self,
        board: &Board,
        options: &SolveOptions,
        cancel: Option<&AtomicBool>,
    ) -> Result<Solution, SolveError> {
        board.check_solvable(&self.goal)?;
        let started = Instant::now();
        let limits = options.limits(started, cancel);
        let (found, counters, iterations) =
            dispatch!(&self.heuristic, h => self.search(h, board, options, limits));
        let moves = found.map_err(|stop| stop.into_error(options))?;
        let tiles = replay(board, &self.goal, &moves)?;
        Ok(Solution {
            board: *board,
            goal: self.goal,
            moves,
            tiles,
            counters,
            iterations,
            initial_estimate: self.estimate(board),
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// One distributed subtree task: the subtree below `board`, reached from its puzzle's root
    /// by `path`, searched under `bound` as one thread's search would search it there.
    ///
    /// Where that search has no path out of the subtree at all (the pruning forbids every way
    /// on before one passes the bound: rare, and a small tree), it has no next bound to
    /// report, and a report without one cannot be told from a claim that the puzzle has no
    /// solution. The subtree is then searched again with the machine started afresh (which
    /// prunes less, so what it finds is as sound), and that search's next bound is reported.
    pub fn search_subtree(
        &self,
        board: &Board,
        path: &[Direction],
        bound: u32,
        limits: Limits<'_>,
    ) -> (Bounded, Counters) {
        let (outcome, mut counters) =
            self.search_subtree_from(board, path, self.machine_after(path), bound, limits);
        let outcome = self.reopened(outcome, &mut counters, board, path, bound, limits);
        (outcome, counters)
    }

    /// `outcome`, or, when it says the pruning closed the subtree (no next bound), the outcome
    /// of searching it again with the machine started afresh (see [`Solver::search_subtree`]),
    /// whose nodes are added to `counters`.
    fn reopened(
        &self,
        outcome: Bounded,
        counters: &mut Counters,
        board: &Board,
        path: &[Direction],
        bound: u32,
        limits: Limits<'_>,
    ) -> Bounded {
        if !matches!(outcome, Bounded::Exceeded { next_bound } if next_bound == u32::MAX) {
            return outcome;
        }
        let (afresh, spent) = self.search_subtree_from(board, path, START, bound, limits);
        *counters += spent;
        afresh
    }

    fn search_subtree_from(
        &self,
        board: &Board,
        path: &[Direction],
        machine: u32,
        bound: u32,
        limits: Limits<'_>,
    ) -> (Bounded, Counters) {
        let (g, last) = (path.len() as u32, path.last().copied());
        dispatch!(&self.heuristic, h => {
            let mut kernel =
                Kernel::new(h, &self.neighbors, &self.goal, limits).with_pruning(self.pruning);
            let outcome = kernel.search_from(board, g, last, machine, bound);
            (outcome, kernel.counters())
        })
    }

    /// The pruning machine's state at the end of `path` from the puzzle's root, where one
    /// thread's search would have it; afresh (sound, prunes less) for a path the machine
    /// forbids, which no split of this solver's hands out.
    pub fn machine_after(&self, path: &[Direction]) -> u32 {
        self.pruning.resumed_after(path)
    }

    /// The move-sequence pruning this solver's searches follow.
    pub fn pruning(&self) -> &'static MovePruning {
        self.pruning
    }

    /// [`Solver::search_subtree`], measuring each descendant `depth` moves below `board` (see
    /// [`crate::search::profiled_search`]); `path` leads from the puzzle's root to `board`.
    pub fn search_subtree_profiled(
        &self,
        board: &Board,
        path: &[Direction],
        bound: u32,
        limits: Limits<'_>,
        depth: u32,
    ) -> Profiled {
        let mut profiled = self.profiled_from_path(board, path, bound, limits, depth);
        if !profiled.handed_back.is_empty() {
            // What was searched may well hold nothing over the bound; the rest is searched
            // elsewhere.
            return profiled;
        }
        // The parts stay as measured. A subtree the pruning closed is small: searched again
        // whole, not handed back.
        let limits = Limits {
            hand_back: None,
            ..limits
        };
        profiled.outcome = self.reopened(
            profiled.outcome,
            &mut profiled.counters,
            board,
            path,
            bound,
            limits,
        );
        profiled
    }

    fn profiled_from_path(
        &self,
        board: &Board,
        path: &[Direction],
        bound: u32,
        limits: Limits<'_>,
        depth: u32,
    ) -> Profiled {
        let estimate = |board: &Board| self.estimate(board);
        dispatch!(&self.heuristic, h => {
            let mut kernel =
                Kernel::new(h, &self.neighbors, &self.goal, limits).with_pruning(self.pruning);
            profiled_search(
                &mut kernel,
                &estimate,
                &self.goal,
                SubtreeRoot {
                    board,
                    g: path.len() as u32,
                    last: path.last().copied(),
                    machine: self.machine_after(path),
                },
                bound,
                depth,
            )
        })
    }

    /// IDA* on `board` from `start_bound` (a bound already proven), until solved or stopped by
    /// `limits`; the whole-puzzle task of the distributed search, which measures the last
    /// iterations a budget may let it finish `profile_depth` moves deep
    /// ([`ida_star_measuring_last`]; 0: none). The moves are not replayed here: the caller
    /// replays the assembled solution.
    pub fn iterate(
        &self,
        board: &Board,
        start_bound: u32,
        limits: Limits<'_>,
        profile_depth: u32,
    ) -> IdaOutcome {
        dispatch!(&self.heuristic, h => ida_star_measuring_last(
            (h, &self.neighbors, self.pruning),
            (board, &self.goal),
            start_bound,
            limits,
            profile_depth,
        ))
    }

    fn search<H: Heuristic>(
        &self,
        heuristic: &H,
        board: &Board,
        options: &SolveOptions,
        limits: Limits<'_>,
    ) -> (Result<Vec<Direction>, Stop>, Counters, u32) {
        match options.algorithm {
            Algorithm::Ida => {
                let outcome = ida_star(
                    heuristic,
                    &self.neighbors,
                    self.pruning,
                    board,
                    &self.goal,
                    0,
                    limits,
                );
                let result = outcome
                    .result
                    .map_err(|stop| Stop::of_ida(stop, outcome.bound, outcome.counters.expanded));
                (result, outcome.counters, outcome.iterations)
            }
            Algorithm::AStar => {
                let (result, counters) = a_star(
                    heuristic,
                    &self.neighbors,
                    board,
                    &self.goal,
                    limits,
                    options.memory_budget,
                );
                let result = result.map_err(|error| match error {
                    AStarError::Aborted { abort, bound } => Stop::Aborted {
                        abort,
                        bound,
                        expanded: counters.expanded,
                    },
                    AStarError::NoSolution => Stop::NoSolution,
                    budget @ AStarError::MemoryBudget { .. } => Stop::Memory(budget),
                });
                (result, counters, 1)
            }
        }
    }
}

/// An algorithm's reason for stopping, before it is phrased for the user.
enum Stop {
    Aborted {
        abort: Abort,
        bound: u32,
        expanded: u64,
    },
    Memory(AStarError),
    NoSolution,
}

impl Stop {
    /// IDA*'s reason to stop, with the bound proven and the nodes expanded by then.
    fn of_ida(stop: IdaStop, bound: u32, expanded: u64) -> Stop {
        match stop {
            IdaStop::Aborted(abort) => Stop::Aborted {
                abort,
                bound,
                expanded,
            },
            IdaStop::NoSolution => Stop::NoSolution,
        }
    }

    fn into_error(self, options: &SolveOptions) -> SolveError {
        match self {
            Stop::Aborted {
                abort: Abort::TimeLimit,
                bound,
                expanded,
            } => SolveError::TimeLimit {
                limit: options.time_limit.unwrap_or_default(),
                bound,
                expanded,
            },
            Stop::Aborted {
                abort: Abort::NodeLimit,
                bound,
                ..
            } => SolveError::NodeLimit {
                limit: options.node_limit.unwrap_or_default(),
                bound,
            },
            // A solve sets no hand-back flag: either is a stop from outside.
            Stop::Aborted {
                abort: Abort::Cancelled | Abort::HandBack,
                bound,
                expanded,
            } => SolveError::Cancelled { bound, expanded },
            Stop::Memory(error) => SolveError::MemoryBudget(error),
            Stop::NoSolution => SolveError::NoSolution,
        }
    }
}
