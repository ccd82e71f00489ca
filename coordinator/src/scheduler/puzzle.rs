//! One puzzle's state while it is searched, and what a report means for it ([`Next`]). Pure:
//! it calls no part of the scheduler; `lifecycle` acts on what it returns.

use std::collections::BTreeSet;

use rustc_hash::FxHashSet;
use std::time::Instant;

use tilesolve::heuristic::Weight;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::{Board, Direction};

use super::answer::Answer;
use super::deferred::UnauditedClaim;
use super::eta::{IterationWork, PuzzleLeft};
use super::tasks::TaskEntry;
use super::types::{TaskId, TaskOutcome, TaskReport, WorkerId, MAX_ATTEMPTS};
use crate::frontier::SubtreeTask;
use crate::queue::Place;
use crate::size_history::{PackedPath, SizeHistory};
use crate::store::{ItemLimits, ItemStatus, Priority, StoredItem};
use tilesolve::moves::{moves_from_string, moves_to_string, replay, without_loops};
use tilesolve::search::{child_order, Counters, MovePruning};
use tilesolve::{Solution, Solver};

use super::types::{PuzzleId, TaskSpec};
use crate::store::{BestPath, SearchState};

pub(super) struct Puzzle {
    pub(super) board: Board,
    pub(super) goal: Board,
    /// The heuristic as the batch named it.
    pub(super) heuristic: HeuristicChoice,
    pub(super) bound: u32,
    pub(super) next_bound: u32,
    pub(super) outstanding: FxHashSet<TaskId>,
    pub(super) nodes: u64,
    /// Seconds its tasks searched, summed over the workers' threads (what a time limit counts).
    pub(super) seconds: f64,
    pub(super) started: Instant,
    /// Sizes measured in the iteration in progress (the next split predicts from them).
    pub(super) history: SizeHistory,
    /// The bound of an iteration being split outside the lock (the puzzle has no tasks then).
    pub(super) splitting: Option<u32>,
    /// Its split iteration in progress (None while it runs as a whole task): the ETA's input.
    pub(super) iteration: Option<IterationWork>,
    /// When that iteration's tasks were queued, and the connected threads' idle thread-seconds
    /// then ([`Puzzle::iteration_ended`]).
    pub(super) iteration_began: Option<(Instant, f64)>,
    /// Workers whose reports were applied: the answer rests on them.
    pub(super) workers: BTreeSet<WorkerId>,
    /// An answer found while audits were still running.
    pub(super) held: Option<Answer>,
    /// Unaudited claims of the iteration (or whole task) that set `bound`: an answer found at
    /// it rests on them, so they are audited before it is stored.
    pub(super) proof: Vec<UnauditedClaim>,
    /// Unaudited claims of the iteration in progress: the next iteration's `proof`.
    pub(super) iteration_claims: Vec<UnauditedClaim>,
    /// A replayed path the batch line claimed (`moves=`): the answer as soon as the search has
    /// ruled out everything shorter.
    pub(super) claimed: Option<Vec<Direction>>,
    /// No solution is shorter: the bound of the iteration in progress, proven by the ones
    /// before it (the heuristic's estimate at first, or the board's stored bound).
    pub(super) proven: u32,
    /// What its batch lets it spend before it is answered bounded (see `bounded`).
    pub(super) limits: ItemLimits,
    /// Its optimal search is over and its weighted task is queued or running.
    pub(super) weighted: bool,
    /// The shortest path an earlier limited search stored for the board, with the weight (in
    /// hundredths) that found it: the answer once nothing shorter exists.
    pub(super) best: Option<(Vec<Direction>, u32)>,
    /// Whether a search state (a proven bound) may be stored for its board: only then does its
    /// end remove one (an easy board solved by its first task never stores any).
    pub(super) bound_stored: bool,
    /// Its item as stored, but for the status: the end of the puzzle writes the item's new
    /// status without reading it back.
    pub(super) item: ItemText,
}

/// What a puzzle's stored item holds besides its claim and status: kept as text, so that the
/// item it ends with is not written out again (six boards written as text an easy answer cost
/// 7% of a coordinator's instructions).
pub(super) struct ItemText {
    pub(super) text: String,
    pub(super) line: Option<u32>,
    board: Option<String>,
    goal: Option<String>,
}

impl ItemText {
    pub(super) fn of(item: &StoredItem) -> ItemText {
        ItemText {
            text: item.text.clone(),
            line: item.line,
            board: item.board.clone(),
            goal: item.goal.clone(),
        }
    }
}

/// What a result means for its puzzle.
pub(super) enum Next {
    Wait,
    /// Search these descendants of the task's board (moves from it) as tasks of their own.
    Split(Vec<Vec<Direction>>),
    Solved(Vec<Direction>),
    Iterate(u32),
    Retry,
    Fail(String),
    /// A weighted task's path, if it found one.
    Weighted(Option<(Vec<Direction>, Weight)>),
}

impl Puzzle {
    /// A puzzle starting on `item`: from the heuristic's `estimate` or the board's stored
    /// bound, whichever is larger, with the path an earlier limited search stored and the path
    /// its line claimed (each kept only if it replays). A stored bound rests on the workers
    /// that proved it, and so does what is built on it.
    pub(super) fn start(
        (batch, index): PuzzleId,
        (board, goal, heuristic): (Board, Board, HeuristicChoice),
        search_state: Option<SearchState>,
        estimate: u32,
        limits: ItemLimits,
        item: &StoredItem,
    ) -> Puzzle {
        let bound_stored = search_state.is_some();
        let best = search_state
            .as_ref()
            .and_then(|s| s.best.as_ref())
            .and_then(|best| Some((moves_from_string(&best.moves)?, best.weight_percent)))
            .map(|(moves, weight_percent)| (without_loops(&board, &moves), weight_percent))
            .filter(|(moves, _)| replay(&board, &goal, moves).is_ok());
        let (lower_bound, workers) = search_state.map_or((0, BTreeSet::new()), |s| {
            (s.lower_bound, s.workers.into_iter().collect())
        });
        let bound = estimate.max(lower_bound);
        if bound_stored {
            tracing::info!(
                batch,
                puzzle = index + 1,
                estimate,
                stored_bound = lower_bound,
                stored_path = best.as_ref().map(|(moves, _)| moves.len()),
                "search resumes from the board's stored lower bound"
            );
        }
        let claimed = item
            .claimed
            .as_deref()
            .and_then(moves_from_string)
            .map(|moves| without_loops(&board, &moves))
            .filter(|moves| replay(&board, &goal, moves).is_ok());
        Puzzle {
            board,
            goal,
            heuristic,
            bound,
            next_bound: u32::MAX,
            outstanding: FxHashSet::default(),
            nodes: 0,
            seconds: 0.0,
            started: Instant::now(),
            history: SizeHistory::default(),
            splitting: None,
            iteration: None,
            iteration_began: None,
            workers,
            held: None,
            proof: Vec::new(),
            iteration_claims: Vec::new(),
            claimed,
            proven: bound,
            limits,
            weighted: false,
            best,
            bound_stored,
            item: ItemText::of(item),
        }
    }

    /// `answer` as its answer, replayed from its board to its goal (by the report's judge, or
    /// now): a path that does not replay is an internal error.
    pub(super) fn solution(&self, answer: Answer) -> Result<Solution, String> {
        let (moves, tiles) = answer
            .replayed_from(&self.board, &self.goal)
            .map_err(|error| {
                format!("internal error: a reported solution failed replay: {error}")
            })?;
        Ok(Solution {
            board: self.board,
            goal: self.goal,
            moves,
            tiles,
            counters: Counters {
                expanded: self.nodes,
                generated: 0,
            },
            iterations: 0,
            initial_estimate: 0,
            seconds: self.started.elapsed().as_secs_f64(),
        })
    }

    /// A known path no longer than `bound` (claimed by its line, or stored by an earlier
    /// limited search): optimal once nothing shorter than `bound` exists.
    pub(super) fn known_within(&self, bound: u32) -> Option<Vec<Direction>> {
        self.claimed
            .iter()
            .chain(self.best.as_ref().map(|(moves, _)| moves))
            .filter(|moves| moves.len() as u32 <= bound)
            .min_by_key(|moves| moves.len())
            .cloned()
    }

    /// Its tasks' search time per expanded node so far (0: nothing measured yet).
    pub(super) fn seconds_per_node(&self) -> f64 {
        crate::frontier::seconds_per_node(self.nodes, self.seconds)
    }

    /// Counts `worker`'s plausible `report` of `entry` (outcome `outcome`, its claims left
    /// unaudited `unaudited`), and says what follows for the puzzle. `unproven`: whether the
    /// worker has yet to report anything true (its failures do not count against the task).
    pub(super) fn take_report(
        &mut self,
        worker: WorkerId,
        entry: &TaskEntry,
        report: &TaskReport,
        outcome: TaskOutcome,
        unaudited: Vec<UnauditedClaim>,
        unproven: bool,
    ) -> Next {
        let task = report.task;
        self.nodes = self.nodes.saturating_add(report.nodes);
        self.seconds += report.seconds;
        self.outstanding.remove(&task);
        if !matches!(outcome, TaskOutcome::Failed(_)) {
            self.workers.insert(worker);
        }
        // A whole task's answer rests on its own claim; any other claim, on the next
        // iteration's bound.
        if matches!(outcome, TaskOutcome::Found(_)) {
            self.proof.extend(unaudited);
        } else {
            self.iteration_claims.extend(unaudited);
        }
        match outcome {
            TaskOutcome::Found(suffix) => {
                let mut moves = entry.spec.path.clone();
                moves.extend(suffix);
                Next::Solved(moves)
            }
            TaskOutcome::Exceeded(next_bound) => {
                self.next_bound = self.next_bound.min(next_bound);
                record_sizes(&mut self.history, &entry.spec.path, report);
                if let Some(iteration) = &mut self.iteration {
                    iteration.reported += 1;
                }
                if self.outstanding.is_empty() {
                    Next::Iterate(self.next_bound)
                } else {
                    Next::Wait
                }
            }
            TaskOutcome::BudgetSpent(bound) => {
                // The whole task's last finished iteration, measured in parts (a worker before
                // they were measured sends none): what the first split is balanced by.
                self.history = SizeHistory::default();
                record_parts(&mut self.history, &entry.spec.path, report);
                Next::Iterate(bound)
            }
            TaskOutcome::Split {
                children,
                pruned_min_f,
            } => {
                self.next_bound = self.next_bound.min(pruned_min_f);
                Next::Split(children.into_iter().map(|child| vec![child]).collect())
            }
            TaskOutcome::HandedBack {
                paths,
                searched_min_f,
            } => {
                self.next_bound = self.next_bound.min(searched_min_f);
                record_sizes(&mut self.history, &entry.spec.path, report);
                Next::Split(paths)
            }
            TaskOutcome::Weighted(found) => Next::Weighted(found),
            // Taken back into the queue before it counts (`Puzzles::apply`): never here.
            TaskOutcome::Returned => {
                self.outstanding.insert(task);
                Next::Retry
            }
            TaskOutcome::Failed(_) if entry.attempts + 1 < MAX_ATTEMPTS || unproven => {
                self.outstanding.insert(task);
                Next::Retry
            }
            TaskOutcome::Failed(reason) => {
                Next::Fail(format!("failed {MAX_ATTEMPTS} times: {reason}"))
            }
        }
    }

    /// Its split iteration at `bound` begins now, with `idle_seconds` idled so far.
    pub(super) fn begin_iteration(&mut self, bound: u32, idle_seconds: f64) {
        self.bound = bound;
        self.iteration = Some(IterationWork::next(self.iteration, self.nodes));
        self.iteration_began = Some((Instant::now(), idle_seconds));
    }

    /// Logs the end of its split iteration (if one is in progress): how long it took, and the
    /// share of the connected `threads`' time that idled meanwhile (`idle_seconds` now): with
    /// one puzzle left, the iteration's idle tail; with several, the batch's idle while it ran.
    pub(super) fn iteration_ended(&self, id: PuzzleId, idle_seconds: f64, threads: usize) {
        let (Some((began, idle_before)), Some(iteration)) = (self.iteration_began, self.iteration)
        else {
            return;
        };
        let seconds = began.elapsed().as_secs_f64();
        let idle_thread_seconds = (idle_seconds - idle_before).max(0.0);
        let capacity = seconds * threads.max(1) as f64;
        tracing::info!(
            batch = id.0,
            puzzle = id.1 + 1,
            bound = self.bound,
            tasks = iteration.reported,
            seconds,
            idle_thread_seconds,
            idle_share = idle_thread_seconds / capacity.max(1e-9),
            "iteration ended"
        );
    }

    /// Where its search is, for the ETA.
    pub(super) fn left(&self) -> PuzzleLeft {
        match self.iteration {
            Some(iteration) => PuzzleLeft::Searching {
                iteration,
                nodes: self.nodes,
                outstanding: self.outstanding.len(),
            },
            None => PuzzleLeft::NotSplit,
        }
    }

    /// The search state that stores `bound` as the board's proven lower bound, with the
    /// workers it rests on and the path an earlier limited search found.
    pub(super) fn search_state(&self, bound: u32) -> SearchState {
        let best = self.best.as_ref().map(|(moves, weight_percent)| BestPath {
            moves: moves_to_string(moves),
            weight_percent: *weight_percent,
        });
        SearchState {
            lower_bound: bound,
            workers: self.workers.iter().copied().collect(),
            best,
        }
    }

    /// Its item with the status it ended with.
    pub(super) fn into_item(self, status: ItemStatus) -> StoredItem {
        StoredItem {
            text: self.item.text,
            line: self.item.line,
            board: self.item.board.or_else(|| Some(self.board.to_string())),
            goal: self.item.goal.or_else(|| Some(self.goal.to_string())),
            status,
            claimed: self.claimed.as_deref().map(moves_to_string),
        }
    }
}

/// The tasks of `puzzle`'s iteration split at `bound` (`tasks`, in search order), each with
/// its place in the queue and predicted size: the k-th waits for the k-th round from the first
/// `(turn, wave)`; each may spend the configured subtree budget, or more where predicted
/// (`subtree_budget`), and profiles `profile_depth` moves below its board.
pub(super) fn iteration_tasks(
    (puzzle_id, puzzle): (PuzzleId, &Puzzle),
    bound: u32,
    tasks: Vec<SubtreeTask>,
    (turn, wave): (u64, u64),
    (configured_budget, profile_depth): (u64, u32),
) -> Vec<(TaskSpec, Place, u64)> {
    (0u64..)
        .zip(tasks)
        .map(|(rank, task)| {
            let spec = TaskSpec {
                id: 0,
                puzzle: puzzle_id,
                board: task.board,
                goal: puzzle.goal,
                heuristic: puzzle.heuristic,
                path: task.path,
                bound,
                iterate: false,
                node_budget: subtree_budget(configured_budget, task.predicted),
                profile_depth,
                weighted: None,
                priority: Priority::DEFAULT,
            };
            let place = Place {
                turn: turn + rank,
                wave,
                order: task.order,
            };
            (spec, place, task.predicted)
        })
        .collect()
}

/// Adds a finished subtree task's sizes to its iteration's history: each part below its path,
/// and the nodes above the parts at the task's own path.
fn record_sizes(history: &mut SizeHistory, path: &[Direction], report: &TaskReport) {
    let parts_nodes = record_parts(history, path, report);
    let path = PackedPath::new(path.iter().map(|&d| d as u8));
    history.add(path, report.nodes.saturating_sub(parts_nodes));
}

/// Adds each part of `report` below `path` to `history`; returns their nodes.
fn record_parts(history: &mut SizeHistory, path: &[Direction], report: &TaskReport) -> u64 {
    let path = PackedPath::new(path.iter().map(|&d| d as u8));
    let mut parts_nodes = 0u64;
    for part in &report.parts {
        parts_nodes = parts_nodes.saturating_add(part.expanded);
        history.add(
            path.then(part.moves.iter().map(|&d| d as u8)),
            part.expanded,
        );
    }
    parts_nodes
}

/// A subtree task's node budget: the configured one (0: none), or more for a task predicted to
/// need it, so that only a task far larger than predicted comes back split (the nodes it
/// searched before are spent again by its children).
pub fn subtree_budget(configured: u64, predicted: u64) -> u64 {
    if configured == 0 {
        return 0;
    }
    configured.max(predicted.saturating_mul(SUBTREE_BUDGET_OVER_PREDICTION))
}

/// How many times its predicted size a subtree task may expand before it comes back split.
const SUBTREE_BUDGET_OVER_PREDICTION: u64 = 4;

/// The tasks of a subtree task's `descendants` (moves from its board), each with its place in
/// the queue: where one thread's search meets it, after the subtrees before its parent, in the
/// order its ancestors take their children (move order if the solver is somehow gone: a place,
/// never a lost descendant).
pub(super) fn children(
    solver: Option<&Solver>,
    entry: &TaskEntry,
    descendants: Vec<Vec<Direction>>,
) -> Vec<(TaskSpec, Vec<u8>)> {
    let spec = &entry.spec;
    let estimate = |board: &Board| solver.map_or(spec.bound, |s| s.estimate(board));
    let pruning = solver.map_or(MovePruning::none(), |s| s.pruning());
    descendants
        .into_iter()
        .filter_map(|moves| {
            let (mut board, mut order) = (spec.board, entry.place.order.clone());
            let mut g = spec.path.len() as u32;
            for &direction in &moves {
                let (child, _) = board.apply(direction)?;
                let parent = (spec.bound, g, estimate(&board));
                order = child_order(pruning, &order, parent, estimate(&child), direction);
                (board, g) = (child, g + 1);
            }
            let child = TaskSpec {
                id: 0,
                board,
                path: [spec.path.as_slice(), &moves].concat(),
                ..spec.clone()
            };
            Some((child, order))
        })
        .collect()
}
