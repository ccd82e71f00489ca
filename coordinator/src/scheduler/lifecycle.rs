//! A puzzle's life: its whole-puzzle task, then iterations split into subtree tasks, each
//! result applied, until a replayed answer is stored or the puzzle fails. Runs on the
//! [`Scheduler`]'s parts (tasks, workers, batches, records) through their own methods.

use std::collections::{BTreeSet, HashSet};
use std::time::Instant;

use tilesolve::heuristic::Weight;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::{moves_from_string, moves_to_string, replay};
use tilesolve::search::{child_order, Counters, MovePruning};
use tilesolve::{parse_board, Board, Direction, Solution};

use super::bounded::whole_budget_within;
use super::deferred::{Deferred, DeferredDone, FinishedSplit, PendingSplit, UnauditedClaim};
use super::judge::{judge, Verdict};
use super::records;
use super::tasks::TaskEntry;
use super::types::{
    PuzzleId, SchedulerError, TaskId, TaskOutcome, TaskReport, TaskSpec, WorkerId, MAX_ATTEMPTS,
};
use super::workers::{MAX_FAILURES_IN_A_ROW, MAX_STRIKES};
use super::Scheduler;
use crate::frontier::{BalanceParams, SizeHistory};
use crate::store::{
    BestPath, ItemLimits, ItemStatus, PathBoards, SearchState, StoreError, StoredItem,
    StoredSolution,
};

/// Answers whose search expanded at least this many nodes (a few hundredths of a second of one
/// thread) have every board on their path stored too.
pub const PATH_BOARDS_MIN_NODES: u64 = 100_000;

pub(super) struct Puzzle {
    pub(super) board: Board,
    pub(super) goal: Board,
    /// The heuristic as the batch named it.
    pub(super) heuristic: HeuristicChoice,
    pub(super) bound: u32,
    next_bound: u32,
    pub(super) outstanding: HashSet<TaskId>,
    pub(super) nodes: u64,
    /// Seconds its tasks searched, summed over the workers' threads (what a time limit counts).
    pub(super) seconds: f64,
    pub(super) started: Instant,
    /// Sizes measured in the iteration in progress (the next split predicts from them).
    history: SizeHistory,
    /// The bound of an iteration being split outside the lock (the puzzle has no tasks then).
    pub(super) splitting: Option<u32>,
    /// Workers whose reports were applied: the answer rests on them.
    pub(super) workers: BTreeSet<WorkerId>,
    /// Audits of those reports still running: the answer waits for them.
    pub(super) audits: HashSet<TaskId>,
    /// An answer found while audits were still running.
    pub(super) held: Option<Vec<Direction>>,
    /// Unaudited claims of the iteration (or whole task) that set `bound`: an answer found at
    /// it rests on them, so they are audited before it is stored.
    pub(super) proof: Vec<UnauditedClaim>,
    /// Unaudited claims of the iteration in progress: the next iteration's `proof`.
    iteration_claims: Vec<UnauditedClaim>,
    /// A replayed path the batch line claimed (`moves=`): the answer as soon as the search has
    /// ruled out everything shorter.
    claimed: Option<Vec<Direction>>,
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

/// What a puzzle's stored item holds besides its board, goal, claim and status.
pub(super) struct ItemText {
    text: String,
    line: Option<u32>,
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

/// Adds a finished subtree task's sizes to its iteration's history: each part below its path,
/// and the nodes above the parts at the task's own path.
fn record_sizes(history: &mut SizeHistory, path: &[Direction], report: &TaskReport) {
    let path: Vec<u8> = path.iter().map(|&d| d as u8).collect();
    let mut parts_nodes = 0u64;
    for part in &report.parts {
        let mut full = path.clone();
        full.extend(part.moves.iter().map(|&d| d as u8));
        parts_nodes = parts_nodes.saturating_add(part.expanded);
        history.add(full, part.expanded);
    }
    history.add(path, report.nodes.saturating_sub(parts_nodes));
}

/// What a result means for its puzzle.
enum Next {
    Wait,
    Split(Vec<Direction>),
    Solved(Vec<Direction>),
    Iterate(u32),
    Retry,
    Fail(String),
    /// A weighted task's path, if it found one.
    Weighted(Option<(Vec<Direction>, Weight)>),
}

impl Scheduler {
    /// Queues the whole-puzzle task of a stored, queued item.
    pub(super) fn start_item(
        &mut self,
        batch: u64,
        index: u32,
        item: &StoredItem,
        heuristic: HeuristicChoice,
    ) -> Result<(), SchedulerError> {
        let (Some(board), Some(goal)) = (&item.board, &item.goal) else {
            return Ok(());
        };
        let (board, goal) = match (parse_board(board), parse_board(goal)) {
            (Ok(board), Ok(goal)) => (board, goal),
            _ => {
                return Err(StoreError::Corrupt {
                    tree: "items",
                    reason: format!("batch {batch} item {index}"),
                }
                .into())
            }
        };
        // A stored bound rests on the workers that proved it, and so does what is built on it.
        let search_state = self.store.search_state(&goal, &board)?;
        let bound_stored = search_state.is_some();
        let best = search_state
            .as_ref()
            .and_then(|s| s.best.as_ref())
            .and_then(|best| Some((moves_from_string(&best.moves)?, best.weight_percent)))
            .filter(|(moves, _)| replay(&board, &goal, moves).is_ok());
        let (lower_bound, workers) = search_state.map_or((0, BTreeSet::new()), |s| {
            (s.lower_bound, s.workers.into_iter().collect())
        });
        let estimate = self.solver(&goal, heuristic)?.estimate(&board);
        let limits = self.batches.limits(batch);
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
            .filter(|moves| replay(&board, &goal, moves).is_ok());
        let puzzle = (batch, index);
        self.puzzles.insert(
            puzzle,
            Puzzle {
                board,
                goal,
                heuristic,
                bound,
                next_bound: u32::MAX,
                outstanding: HashSet::new(),
                nodes: 0,
                seconds: 0.0,
                started: Instant::now(),
                history: SizeHistory::default(),
                splitting: None,
                workers,
                audits: HashSet::new(),
                held: None,
                proof: Vec::new(),
                iteration_claims: Vec::new(),
                claimed: claimed.clone(),
                proven: bound,
                limits,
                weighted: false,
                best: best.clone(),
                bound_stored,
                item: ItemText {
                    text: item.text.clone(),
                    line: item.line,
                },
            },
        );
        let known = claimed.into_iter().chain(best.map(|(moves, _)| moves));
        if let Some(moves) = known
            .filter(|moves| moves.len() as u32 == bound)
            .min_by_key(Vec::len)
        {
            // As long as a proven lower bound: optimal without a search.
            return self.finish_solved(puzzle, moves);
        }
        if limits.suboptimal_percent.is_some() {
            return self.start_weighted(puzzle);
        }
        let spec = TaskSpec {
            id: 0,
            puzzle,
            board,
            goal,
            // As the batch asked for it, so each worker resolves `default` within its own
            // memory budget.
            heuristic,
            path: Vec::new(),
            bound,
            iterate: true,
            node_budget: whole_budget_within(self.config.whole_task_budget, &limits),
            profile_depth: 4,
            weighted: None,
        };
        let (wave, predicted) = (self.tasks.next_wave(), self.config.whole_task_budget);
        self.add_task(puzzle, spec, (wave, Vec::new()), predicted);
        Ok(())
    }

    /// Queues `spec` for `puzzle` in `wave`, at `order` within it (see [`TaskEntry::order`]).
    pub(super) fn add_task(
        &mut self,
        puzzle: PuzzleId,
        mut spec: TaskSpec,
        (wave, order): (u64, Vec<u8>),
        predicted: u64,
    ) {
        let id = self.next_id();
        spec.id = id;
        spec.puzzle = puzzle;
        if let Some(p) = self.puzzles.get_mut(&puzzle) {
            p.outstanding.insert(id);
        }
        self.tasks.add(puzzle, spec, (wave, order), predicted);
    }

    /// Applies one result `worker` reported.
    pub(super) fn apply(
        &mut self,
        worker: WorkerId,
        report: TaskReport,
    ) -> Result<(), SchedulerError> {
        let (task, nodes) = (report.task, report.nodes);
        let Some(entry) = self.tasks.take_held(task, worker) else {
            return Ok(());
        };
        if entry.audit.is_some() {
            return self.apply_audit(worker, entry, report);
        }
        let puzzle_id = entry.puzzle;
        let (batch, puzzle) = (puzzle_id.0, puzzle_id.1 + 1);
        tracing::debug!(
            batch,
            puzzle,
            task,
            worker,
            nodes,
            seconds = report.seconds,
            outcome = report.outcome.kind(),
            "task reported"
        );
        let outcome = match judge(&entry.spec, &report.outcome) {
            Verdict::Plausible => report.outcome.clone(),
            verdict => return self.refuse(worker, entry, verdict),
        };
        if let TaskOutcome::Failed(reason) = &outcome {
            if self.workers.failed(worker) {
                // The worker is at fault, not the task: shut out, its failures retried elsewhere.
                let reason = format!(
                    "its last {MAX_FAILURES_IN_A_ROW} reports were failures, the last: {reason}"
                );
                self.tasks.retry_as_new(entry);
                self.shut_out(worker, reason);
                return Ok(());
            }
        } else {
            self.workers.succeeded(worker);
        }
        let unaudited = self.maybe_audit(worker, &entry, &outcome, nodes);
        if let (Some(record), Some(puzzle)) = (
            records::finished(&entry, &report, &outcome),
            self.puzzles.get(&puzzle_id),
        ) {
            self.records.push(puzzle.goal, puzzle.board, task, record);
        }
        self.batches.add_nodes(puzzle_id.0, nodes);
        self.totals.nodes = self.totals.nodes.saturating_add(nodes);
        self.totals.tasks_done += 1;
        let unproven = self.workers.unproven(worker);
        let next = {
            let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) else {
                return Ok(());
            };
            puzzle.nodes = puzzle.nodes.saturating_add(nodes);
            puzzle.seconds += report.seconds;
            puzzle.outstanding.remove(&task);
            if !matches!(outcome, TaskOutcome::Failed(_)) {
                puzzle.workers.insert(worker);
            }
            // A whole task's answer rests on its own claim; any other claim, on the next
            // iteration's bound.
            if matches!(outcome, TaskOutcome::Found(_)) {
                puzzle.proof.extend(unaudited);
            } else {
                puzzle.iteration_claims.extend(unaudited);
            }
            match outcome {
                TaskOutcome::Found(suffix) => {
                    let mut moves = entry.spec.path.clone();
                    moves.extend(suffix);
                    Next::Solved(moves)
                }
                TaskOutcome::Exceeded(next_bound) => {
                    puzzle.next_bound = puzzle.next_bound.min(next_bound);
                    record_sizes(&mut puzzle.history, &entry.spec.path, &report);
                    if puzzle.outstanding.is_empty() {
                        Next::Iterate(puzzle.next_bound)
                    } else {
                        Next::Wait
                    }
                }
                TaskOutcome::BudgetSpent(bound) => Next::Iterate(bound),
                TaskOutcome::Split {
                    children,
                    pruned_min_f,
                } => {
                    puzzle.next_bound = puzzle.next_bound.min(pruned_min_f);
                    Next::Split(children)
                }
                TaskOutcome::Weighted(found) => Next::Weighted(found),
                TaskOutcome::Failed(_) if entry.attempts + 1 < MAX_ATTEMPTS || unproven => {
                    puzzle.outstanding.insert(task);
                    Next::Retry
                }
                TaskOutcome::Failed(reason) => {
                    Next::Fail(format!("failed {MAX_ATTEMPTS} times: {reason}"))
                }
            }
        };
        self.follow(puzzle_id, entry, worker, next)?;
        self.check_limits(puzzle_id)
    }

    /// Refuses a report [`judge`] found impossible or disproved: an impossible one counts
    /// against its worker and its task goes back to the queue; a path shorter than the task's
    /// bound proves an earlier report false, and the puzzle starts again.
    fn refuse(
        &mut self,
        worker: WorkerId,
        entry: TaskEntry,
        verdict: Verdict,
    ) -> Result<(), SchedulerError> {
        let (batch, puzzle, task) = (entry.puzzle.0, entry.puzzle.1 + 1, entry.spec.id);
        let puzzle_id = entry.puzzle;
        match verdict {
            Verdict::Plausible => Ok(()),
            Verdict::Impossible(reason) => {
                tracing::warn!(batch, puzzle, task, worker, %reason, "impossible report: the task goes back to the queue");
                let struck_out = self.workers.strike(worker);
                // Not the task's fault: it does not lose an attempt (the worker's strikes bound
                // how often this can happen).
                self.tasks.retry_as_new(entry);
                if struck_out {
                    self.quarantine(
                        worker,
                        format!("{MAX_STRIKES} impossible reports, the last: {reason}"),
                    )?;
                }
                Ok(())
            }
            Verdict::Shorter(length) => self.restart_puzzle(
                puzzle_id,
                &format!(
                    "a {length}-move path below bound {}: an earlier report was false",
                    entry.spec.bound
                ),
            ),
        }
    }

    /// Does what an applied report leaves to do for its puzzle: wait, queue the children of a
    /// split subtree, store the answer, start the next iteration, retry or fail.
    fn follow(
        &mut self,
        puzzle_id: PuzzleId,
        entry: TaskEntry,
        worker: WorkerId,
        next: Next,
    ) -> Result<(), SchedulerError> {
        match next {
            Next::Wait => Ok(()),
            Next::Split(children) => {
                let spec = &entry.spec;
                let predicted = entry.predicted / children.len().max(1) as u64;
                // Each child queued where one thread's search meets it: after the subtrees
                // before its parent, in the order its parent takes its children (move order if
                // the solver is somehow gone: a place, never a lost child).
                let solver = self.solver(&spec.goal, spec.heuristic).ok();
                let estimate = |board: &Board| solver.map_or(spec.bound, |s| s.estimate(board));
                let parent = (spec.bound, spec.path.len() as u32, estimate(&spec.board));
                let pruning = solver.map_or(MovePruning::none(), |s| s.pruning());
                let queued: Vec<(TaskSpec, Vec<u8>)> = children
                    .into_iter()
                    .filter_map(|direction| {
                        let (board, _) = spec.board.apply(direction)?;
                        let order =
                            child_order(pruning, &entry.order, parent, estimate(&board), direction);
                        let mut path = spec.path.clone();
                        path.push(direction);
                        let child = TaskSpec {
                            id: 0,
                            board,
                            path,
                            ..spec.clone()
                        };
                        Some((child, order))
                    })
                    .collect();
                for (child, order) in queued {
                    self.add_task(puzzle_id, child, (entry.wave, order), predicted);
                }
                // A board with no child within the bound ends its subtree here.
                let next = self
                    .puzzles
                    .get(&puzzle_id)
                    .filter(|p| p.outstanding.is_empty())
                    .map(|p| p.next_bound);
                match next {
                    Some(bound) => self.next_iteration(puzzle_id, bound),
                    None => Ok(()),
                }
            }
            Next::Solved(moves) => self.finish_solved(puzzle_id, moves),
            Next::Iterate(bound) => self.next_iteration(puzzle_id, bound),
            Next::Retry => {
                self.tasks.retry_failed(entry, worker);
                Ok(())
            }
            Next::Fail(reason) => self.finish_failed(puzzle_id, reason),
            Next::Weighted(found) => self.finish_weighted(puzzle_id, found),
        }
    }

    /// Starts the iteration at `bound`: stores it as the puzzle's proven lower bound and queues
    /// its split for [`Scheduler::take_deferred`].
    fn next_iteration(&mut self, puzzle_id: PuzzleId, bound: u32) -> Result<(), SchedulerError> {
        let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) else {
            return Ok(());
        };
        // `bound` rests on the claims of the iteration that just ended, and on no earlier ones.
        puzzle.proof = std::mem::take(&mut puzzle.iteration_claims);
        puzzle.proven = puzzle.proven.max(bound);
        let known = puzzle
            .claimed
            .iter()
            .chain(puzzle.best.as_ref().map(|(moves, _)| moves));
        if let Some(moves) = known
            .filter(|moves| moves.len() as u32 <= bound)
            .min_by_key(|moves| moves.len())
            .cloned()
        {
            // Nothing shorter than `bound` exists, and the claimed path is no longer.
            return self.finish_solved(puzzle_id, moves);
        }
        let (board, goal, heuristic) = (puzzle.board, puzzle.goal, puzzle.heuristic);
        let workers: Vec<u64> = puzzle.workers.iter().copied().collect();
        let best = puzzle
            .best
            .as_ref()
            .map(|(moves, weight_percent)| BestPath {
                moves: moves_to_string(moves),
                weight_percent: *weight_percent,
            });
        if bound as usize >= tilesolve::search::MAX_DEPTH {
            return self.finish_failed(
                puzzle_id,
                "no solution within the longest supported path".into(),
            );
        }
        self.store.put_search_state(
            &goal,
            &board,
            SearchState {
                lower_bound: bound,
                workers,
                best,
            },
        )?;
        if let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) {
            puzzle.bound_stored = true;
        }
        let threads = self.workers.threads().max(1);
        let params = BalanceParams {
            threads,
            tasks_per_thread: self.config.tasks_per_thread,
            balance: self.config.split_balance,
            min_split_nodes: self.config.min_split_nodes,
            min_split_nodes_per_thread: self.config.min_split_nodes_per_thread,
            max_depth: u32::MAX,
        };
        let solver = self.solver(&goal, heuristic)?.clone();
        let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) else {
            return Ok(());
        };
        puzzle.splitting = Some(bound);
        self.deferred.push(Deferred::Split(PendingSplit {
            puzzle: puzzle_id,
            bound,
            board,
            solver,
            history: std::mem::take(&mut puzzle.history),
            nodes_so_far: puzzle.nodes,
            params,
        }));
        Ok(())
    }

    /// Splits and audits waiting to run: run each ([`Deferred::run`], outside the lock) and
    /// hand it back to [`Scheduler::finish_deferred`].
    pub fn take_deferred(&mut self) -> Vec<Deferred> {
        std::mem::take(&mut self.deferred)
    }

    /// Takes deferred work its caller ran outside the lock.
    pub fn finish_deferred(&mut self, done: DeferredDone) -> Result<(), SchedulerError> {
        match done {
            DeferredDone::Split(split) => self.finish_split(split),
            DeferredDone::Audit(audit) => self.finish_audit(audit),
        }
    }

    /// Queues a split iteration's tasks, or finishes the puzzle when the split met the goal; an
    /// iteration with nothing within its bound goes straight on to the next. A split for a
    /// puzzle that ended meanwhile (its batch cancelled) is dropped.
    fn finish_split(&mut self, split: FinishedSplit) -> Result<(), SchedulerError> {
        let FinishedSplit {
            puzzle: puzzle_id,
            bound,
            frontier,
            history,
        } = split;
        let Some(puzzle) = self
            .puzzles
            .get_mut(&puzzle_id)
            .filter(|p| p.splitting == Some(bound))
        else {
            return Ok(());
        };
        puzzle.splitting = None;
        if let Some(moves) = frontier.solution {
            return self.finish_solved(puzzle_id, moves);
        }
        if frontier.tasks.is_empty() {
            puzzle.history = history;
            return self.next_iteration(puzzle_id, frontier.pruned_min_f);
        }
        puzzle.bound = bound;
        puzzle.next_bound = frontier.pruned_min_f;
        // Every split iteration proves that no solution is shorter than its bound.
        tracing::info!(
            batch = puzzle_id.0,
            puzzle = puzzle_id.1 + 1,
            bound,
            tasks = frontier.tasks.len(),
            seconds = puzzle.started.elapsed().as_secs_f64(),
            "iteration split"
        );
        let goal = puzzle.goal;
        let heuristic = puzzle.heuristic;
        let wave = self.tasks.next_wave();
        for task in frontier.tasks {
            let spec = TaskSpec {
                id: 0,
                puzzle: puzzle_id,
                board: task.board,
                goal,
                heuristic,
                path: task.path,
                bound,
                iterate: false,
                node_budget: subtree_budget(self.config.subtree_task_budget, task.predicted),
                profile_depth: self.config.profile_depth,
                weighted: None,
            };
            self.add_task(puzzle_id, spec, (wave, task.order), task.predicted);
        }
        Ok(())
    }

    /// Runs all deferred work here, under the caller's `&mut` (for callers that own the
    /// scheduler outright: tests and tools; the service runs it outside its lock instead).
    pub fn run_deferred(&mut self) -> Result<(), SchedulerError> {
        loop {
            let deferred = self.take_deferred();
            if deferred.is_empty() {
                return Ok(());
            }
            for work in deferred {
                self.finish_deferred(work.run())?;
            }
        }
    }

    /// Removes a puzzle's remaining tasks and audits, telling workers about the leased ones.
    pub(super) fn cancel_tasks(&mut self, puzzle_id: PuzzleId) {
        let ids: Vec<TaskId> = self
            .puzzles
            .get(&puzzle_id)
            .map(|p| p.outstanding.iter().chain(&p.audits).copied().collect())
            .unwrap_or_default();
        for (worker, task) in self.tasks.withdraw(ids) {
            self.workers.tell_cancelled(worker, task);
        }
    }

    /// Records the subtree tasks a solution made unnecessary, so a replay knows which parts of
    /// the last iteration were never measured.
    pub(super) fn record_cancelled(&mut self, puzzle_id: PuzzleId) {
        let Some(puzzle) = self.puzzles.get(&puzzle_id) else {
            return;
        };
        for &id in &puzzle.outstanding {
            if let Some(record) = self
                .tasks
                .get(id)
                .and_then(|entry| records::cancelled(puzzle_id, entry))
            {
                self.records.push(puzzle.goal, puzzle.board, id, record);
            }
        }
    }

    pub(super) fn finish_solved(
        &mut self,
        puzzle_id: PuzzleId,
        moves: Vec<Direction>,
    ) -> Result<(), SchedulerError> {
        self.audit_answer(puzzle_id);
        let Some(puzzle) = self.puzzles.get(&puzzle_id) else {
            return Ok(());
        };
        if !puzzle.audits.is_empty() {
            // The answer waits for the audits of the reports it rests on; the search is over.
            let ids: Vec<TaskId> = puzzle.outstanding.iter().copied().collect();
            self.record_cancelled(puzzle_id);
            for (worker, task) in self.tasks.withdraw(ids) {
                self.workers.tell_cancelled(worker, task);
            }
            if let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) {
                puzzle.outstanding.clear();
                puzzle.held = Some(moves);
            }
            return Ok(());
        }
        let workers: Vec<u64> = puzzle.workers.iter().copied().collect();
        let (board, goal, heuristic, nodes, seconds, bound_stored) = (
            puzzle.board,
            puzzle.goal,
            puzzle.heuristic,
            puzzle.nodes,
            puzzle.started.elapsed().as_secs_f64(),
            puzzle.bound_stored,
        );
        // Replayed before it is stored or reported: a wrong answer is a failure, never a result.
        let tiles = match replay(&board, &goal, &moves) {
            Ok(tiles) => tiles,
            Err(error) => {
                return self.finish_failed(
                    puzzle_id,
                    format!("internal error: a reported solution failed replay: {error}"),
                )
            }
        };
        let solution = Solution {
            board,
            goal,
            moves,
            tiles,
            counters: Counters {
                expanded: nodes,
                generated: 0,
            },
            iterations: 0,
            initial_estimate: 0,
            seconds,
        };
        self.record_cancelled(puzzle_id);
        let name = self.solver(&goal, heuristic)?.heuristic().to_string();
        // A path board of an answer found this cheaply is searched again faster than 40 to 80
        // store entries per answer are written (measured: they were 40% of the coordinator's
        // time on a batch of easy boards).
        let path_boards = if nodes >= PATH_BOARDS_MIN_NODES {
            PathBoards::Stored
        } else {
            PathBoards::Skipped
        };
        self.store
            .put_solution(&solution, &name, &workers, path_boards)?;
        if bound_stored {
            self.store.remove_search_state(&goal, &board)?;
        }
        let stored = StoredSolution {
            length: solution.len() as u32,
            moves: moves_to_string(&solution.moves),
            tiles: solution.tiles.clone(),
            nodes: solution.counters.expanded,
            seconds: solution.seconds,
            heuristic: name,
            workers,
        };
        self.finish(puzzle_id, ItemStatus::Solved(stored))
    }

    pub(super) fn finish_failed(
        &mut self,
        puzzle_id: PuzzleId,
        reason: String,
    ) -> Result<(), SchedulerError> {
        self.finish(puzzle_id, ItemStatus::Failed(reason))
    }

    pub(super) fn finish(
        &mut self,
        puzzle_id: PuzzleId,
        status: ItemStatus,
    ) -> Result<(), SchedulerError> {
        self.cancel_tasks(puzzle_id);
        let puzzle = self.puzzles.remove(&puzzle_id);
        let (batch, index) = puzzle_id;
        match status {
            ItemStatus::Solved(_) => self.totals.puzzles_solved += 1,
            ItemStatus::Failed(_) => self.totals.puzzles_failed += 1,
            ItemStatus::Bounded(_) => self.totals.puzzles_bounded += 1,
            ItemStatus::Queued => {}
        }
        let batch_done = self.batches.item_finished(batch, &status);
        let item = match puzzle {
            Some(puzzle) => Some(StoredItem {
                text: puzzle.item.text,
                line: puzzle.item.line,
                board: Some(puzzle.board.to_string()),
                goal: Some(puzzle.goal.to_string()),
                status,
                claimed: puzzle.claimed.as_deref().map(moves_to_string),
            }),
            // An item that never started (its tables cannot be had): as stored.
            None => self
                .store
                .item(batch, index)?
                .map(|item| StoredItem { status, ..item }),
        };
        match item {
            // An answer this cheap is found again faster than its own entry is written: held
            // and written into its part with others (a crash forgets it; see `store::ended`).
            Some(
                item @ StoredItem {
                    status: ItemStatus::Solved(StoredSolution { nodes, .. }),
                    ..
                },
            ) if nodes < PATH_BOARDS_MIN_NODES => self.store.put_item_later(batch, index, item)?,
            Some(item) => self.store.put_item(batch, index, &item)?,
            None => {}
        }
        // Each answer is not flushed on its own (sled writes it out within half a second, and a
        // lost answer is recomputed from the flushed batch); a finished batch is flushed by the
        // caller, outside the lock (see `take_flush_due`).
        if batch_done {
            self.close_batch(batch)?;
            self.flush_due = true;
        }
        Ok(())
    }
}
