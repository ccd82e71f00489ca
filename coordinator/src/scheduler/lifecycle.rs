//! A puzzle's life: its whole-puzzle task, then iterations split into subtree tasks, each
//! result applied, until a replayed answer is stored or the puzzle fails. [`Puzzles`] owns the
//! live puzzles; it works on the leaf parts ([`Parts`]) and asks the [`Audits`] below it, which
//! answer with [`AuditEvent`]s instead of calling back. `bounded` and `quarantine` hold the
//! rules of limits and of undoing a liar's work, as functions this module calls.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::time::Instant;

use tilesolve::Direction;

use super::answer::{Answer, Replayed};
use super::audits::{AuditEvent, Audits};
use super::bounded::{self, whole_budget_within, WeightedEnd};
use super::deferred::{Deferred, FinishedSplit, PendingSplit};
use super::intake::QueuedItem;
use super::judge::{judge, Verdict};
use super::puzzle::{iteration_tasks, Next, Puzzle};
use super::quarantine;
use super::records;
use super::tasks::TaskEntry;
use super::types::{PuzzleId, SchedulerError, TaskId, TaskOutcome, TaskReport, TaskSpec, WorkerId};
use super::workers::{MAX_FAILURES_IN_A_ROW, MAX_STRIKES};
use super::Parts;
use crate::queue::Place;
use crate::store::{ItemStatus, PathBoards, Priority, StoreError, StoredItem, StoredSolution};

/// Answers whose search expanded at least this many nodes (a few hundredths of a second of one
/// thread) have every board on their path stored too.
pub const PATH_BOARDS_MIN_NODES: u64 = 100_000;

/// The live puzzles, ordered by (batch, index), so one batch's puzzles are a range.
#[derive(Default)]
pub(super) struct Puzzles {
    /// Boxed: a B-tree shifts its values within a node on every insert and removal.
    map: BTreeMap<PuzzleId, Box<Puzzle>>,
    /// How many of each batch's puzzles are live (a batch with none has no entry).
    live_in: FxHashMap<u64, usize>,
}

impl Puzzles {
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn contains(&self, puzzle: PuzzleId) -> bool {
        self.map.contains_key(&puzzle)
    }

    /// How many of `batch`'s puzzles are live.
    pub(super) fn live_in(&self, batch: u64) -> usize {
        self.live_in.get(&batch).copied().unwrap_or(0)
    }

    /// The ids of `batch`'s live puzzles.
    fn of_batch(&self, batch: u64) -> Vec<PuzzleId> {
        self.map
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(&id, _)| id)
            .collect()
    }

    /// The live puzzles whose search rests on `worker`'s reports.
    pub(super) fn resting_on(&self, worker: WorkerId) -> Vec<PuzzleId> {
        self.map
            .iter()
            .filter(|(_, p)| p.workers.contains(&worker))
            .map(|(&id, _)| id)
            .collect()
    }

    /// `batch`'s live puzzles.
    pub(super) fn live(&self, batch: u64) -> impl Iterator<Item = &Puzzle> {
        self.map
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(_, p)| &**p)
    }

    /// Queues the whole-puzzle task of a stored, queued item.
    pub(super) fn start_item(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle: PuzzleId,
        queued: &QueuedItem,
    ) -> Result<(), SchedulerError> {
        let batch = puzzle.0;
        let (item, Some((board, goal))) = (&queued.item, queued.boards) else {
            return Ok(());
        };
        let heuristic = parts.batches.heuristic(batch).ok_or_else(|| {
            SchedulerError::Internal(format!("batch {batch} started without its heuristic"))
        })?;
        let search_state = parts.store.search_state(&goal, &board)?;
        let estimate = parts.solver(&(goal, heuristic))?.estimate(&board);
        let limits = parts.batches.limits(batch);
        let item_boards = (board, goal, heuristic);
        let state = Puzzle::start(puzzle, item_boards, search_state, estimate, limits, item);
        let bound = state.bound;
        let known = state
            .known_within(bound)
            .filter(|m| m.len() as u32 == bound);
        if self.map.insert(puzzle, Box::new(state)).is_none() {
            *self.live_in.entry(batch).or_default() += 1;
        }
        if let Some(moves) = known {
            // As long as a proven lower bound: optimal without a search.
            return self.finish_solved(parts, audits, puzzle, moves);
        }
        if limits.suboptimal_percent.is_some() {
            return self.start_weighted(parts, puzzle);
        }
        let spec = TaskSpec {
            id: 0,
            puzzle,
            board,
            goal,
            // As the batch asked for it: each worker resolves `default` within its memory.
            heuristic,
            path: Vec::new(),
            bound,
            iterate: true,
            node_budget: whole_budget_within(parts.config.whole_task_budget, &limits),
            // Its last iteration, measured as deep as subtree tasks measure theirs, sizes the
            // first split's tasks.
            profile_depth: parts.config.profile_depth,
            weighted: None,
            priority: Priority::DEFAULT,
        };
        self.add_whole_task(parts, puzzle, spec);
        Ok(())
    }

    /// Queues a task of the whole puzzle (its first, or its weighted one) in a wave of its own,
    /// predicted at the whole-task budget.
    fn add_whole_task(&mut self, parts: &mut Parts, puzzle: PuzzleId, spec: TaskSpec) {
        let place = Place {
            turn: parts.tasks.turn_now(),
            wave: parts.tasks.next_wave(),
            order: Vec::new(),
        };
        let predicted = parts.config.whole_task_budget;
        self.add_task(parts, puzzle, spec, place, predicted);
    }

    /// Queues `spec` for `puzzle` at `place` (see [`TaskEntry::place`]).
    fn add_task(
        &mut self,
        parts: &mut Parts,
        puzzle: PuzzleId,
        mut spec: TaskSpec,
        place: Place,
        predicted: u64,
    ) {
        let id = parts.ids.next();
        spec.id = id;
        spec.puzzle = puzzle;
        if let Some(p) = self.map.get_mut(&puzzle) {
            p.outstanding.insert(id);
        }
        let lane = parts.batches.lane(puzzle.0);
        parts.tasks.add((puzzle, lane), spec, place, predicted);
    }

    /// Applies one result `worker` reported.
    pub(super) fn apply(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        worker: WorkerId,
        report: TaskReport,
    ) -> Result<(), SchedulerError> {
        let (task, nodes) = (report.task, report.nodes);
        let Some(entry) = parts.tasks.take_held(task, worker) else {
            tracing::debug!(task, worker, nodes, "report of a task no longer held");
            parts.totals.withdrawn_nodes = parts.totals.withdrawn_nodes.saturating_add(nodes);
            return Ok(());
        };
        if entry.audit.is_some() {
            tracing::debug!(task, worker, nodes, "audit reported");
            parts.totals.audit_nodes = parts.totals.audit_nodes.saturating_add(nodes);
            let events = audits.apply(parts, worker, entry, report);
            return self.take_events(parts, audits, events);
        }
        let puzzle_id = entry.puzzle;
        let (batch, puzzle) = (puzzle_id.0, puzzle_id.1 + 1);
        tracing::debug!(
            batch,
            puzzle,
            task,
            worker,
            bound = entry.spec.bound,
            nodes,
            seconds = report.seconds,
            outcome = report.outcome.kind(),
            "task reported"
        );
        let (outcome, replayed) = match judge(&entry.spec, &report.outcome) {
            Verdict::Plausible => (report.outcome.clone(), None),
            Verdict::Reaches(path) => (report.outcome.clone(), Some(path)),
            verdict => return self.refuse(parts, audits, worker, entry, verdict),
        };
        if let TaskOutcome::Failed(reason) = &outcome {
            if parts.workers.failed(worker) {
                // The worker is at fault, not the task: shut out, its failures retried elsewhere.
                let reason = format!(
                    "its last {MAX_FAILURES_IN_A_ROW} reports were failures, the last: {reason}"
                );
                parts.tasks.retry_as_new(entry);
                parts.shut_out(worker, reason);
                return Ok(());
            }
        } else {
            parts.workers.succeeded(worker);
        }
        let unaudited = match self.map.contains_key(&puzzle_id) {
            true => audits.maybe_audit(parts, worker, &entry, (&outcome, &report.parts), nodes),
            false => Vec::new(),
        };
        if let (Some(record), Some(puzzle)) = (
            records::finished(&entry, &report, &outcome),
            self.map.get(&puzzle_id),
        ) {
            parts
                .out
                .records
                .push(puzzle.goal, puzzle.board, task, record);
        }
        parts.batches.add_nodes(puzzle_id.0, nodes);
        parts.totals.nodes = parts.totals.nodes.saturating_add(nodes);
        parts.totals.tasks_done += 1;
        let unproven = parts.workers.unproven(worker);
        let Some(puzzle) = self.map.get_mut(&puzzle_id) else {
            return Ok(());
        };
        let next = puzzle.take_report(worker, &entry, &report, outcome, unaudited, unproven);
        self.follow(parts, audits, (entry, worker), next, replayed)?;
        self.check_limits(parts, puzzle_id)
    }

    /// Acts on what the audits found: an answer held for them is stored, a liar quarantined.
    pub(super) fn take_events(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        events: Vec<AuditEvent>,
    ) -> Result<(), SchedulerError> {
        for event in events {
            match event {
                AuditEvent::Resolved(puzzle) => {
                    let held = self.map.get_mut(&puzzle).and_then(|p| p.held.take());
                    if let Some(answer) = held {
                        self.finish_solved(parts, audits, puzzle, answer)?;
                    }
                }
                AuditEvent::Quarantine(worker, reason) => {
                    self.quarantine(parts, audits, worker, reason)?;
                }
            }
        }
        Ok(())
    }

    /// Refuses a report [`judge`] found impossible or disproved: an impossible one counts
    /// against its worker and its task goes back to the queue; a path shorter than the task's
    /// bound proves an earlier report false, and the puzzle starts again.
    fn refuse(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        worker: WorkerId,
        entry: TaskEntry,
        verdict: Verdict,
    ) -> Result<(), SchedulerError> {
        let (batch, puzzle, task) = (entry.puzzle.0, entry.puzzle.1 + 1, entry.spec.id);
        let puzzle_id = entry.puzzle;
        match verdict {
            Verdict::Plausible | Verdict::Reaches(_) => Ok(()),
            Verdict::Impossible(reason) => {
                tracing::warn!(batch, puzzle, task, worker, %reason, "impossible report: the task goes back to the queue");
                let struck_out = parts.workers.strike(worker);
                // Not the task's fault: it does not lose an attempt (the worker's strikes bound
                // how often this can happen).
                parts.tasks.retry_as_new(entry);
                if struck_out {
                    let reason = format!("{MAX_STRIKES} impossible reports, the last: {reason}");
                    self.quarantine(parts, audits, worker, reason)?;
                }
                Ok(())
            }
            Verdict::Shorter(length) => self.restart(
                parts,
                audits,
                puzzle_id,
                &format!(
                    "a {length}-move path below bound {}: an earlier report was false",
                    entry.spec.bound
                ),
            ),
        }
    }

    /// Does what an applied report leaves to do for its puzzle: wait, queue the children of a
    /// split subtree, store the answer, start the next iteration, retry or fail (`replayed`:
    /// the path the report found, as its judge replayed it).
    fn follow(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        (entry, worker): (TaskEntry, WorkerId),
        next: Next,
        replayed: Option<Replayed>,
    ) -> Result<(), SchedulerError> {
        let puzzle_id = entry.puzzle;
        if let (Next::Solved(_) | Next::Iterate(_), Some(puzzle)) =
            (&next, self.map.get(&puzzle_id))
        {
            let idle = parts.workers.idle_seconds(Instant::now());
            puzzle.iteration_ended(puzzle_id, idle, parts.workers.threads());
        }
        match next {
            Next::Wait => Ok(()),
            Next::Split(children) => self.queue_children(parts, audits, entry, children),
            Next::Solved(moves) => {
                let answer = Answer::of(moves, replayed);
                self.finish_solved(parts, audits, puzzle_id, answer)
            }
            Next::Iterate(bound) => {
                let whole = entry.cut_short.then_some(entry.spec);
                self.next_iteration(parts, audits, (puzzle_id, bound), whole)
            }
            Next::Retry => {
                parts.tasks.retry_failed(entry, worker);
                Ok(())
            }
            Next::Fail(reason) => self.finish_failed(parts, audits, puzzle_id, reason),
            Next::Weighted(found) => self.finish_weighted(parts, audits, puzzle_id, found),
        }
    }

    /// Queues the `children` (descendants) of a subtree task that spent its budget or handed
    /// its work back, in its turn, each where one thread's search meets it
    /// (`puzzle::children`).
    fn queue_children(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        entry: TaskEntry,
        children: Vec<Vec<Direction>>,
    ) -> Result<(), SchedulerError> {
        let (puzzle_id, spec) = (entry.puzzle, &entry.spec);
        let predicted = entry.predicted / children.len().max(1) as u64;
        let solver = parts.solver(&(spec.goal, spec.heuristic)).ok();
        let queued = super::puzzle::children(solver, &entry, children);
        for (child, order) in queued {
            let place = Place {
                order,
                ..entry.place.clone()
            };
            self.add_task(parts, puzzle_id, child, place, predicted);
        }
        // A board with no child within the bound ends its subtree here.
        let next = self
            .map
            .get(&puzzle_id)
            .filter(|p| p.outstanding.is_empty())
            .map(|p| p.next_bound);
        match next {
            Some(bound) => self.next_iteration(parts, audits, (puzzle_id, bound), None),
            None => Ok(()),
        }
    }

    /// Starts the iteration at `bound`: stores it as the puzzle's proven lower bound and queues
    /// its split, to run outside the lock. After a whole task cut short for its worker's
    /// probation (`cut_short`, that task), the puzzle goes on whole from `bound` instead: split
    /// there, every later iteration of a puzzle that may well be cheap would be, at a bound the
    /// cut chose.
    fn next_iteration(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        (puzzle_id, bound): (PuzzleId, u32),
        cut_short: Option<TaskSpec>,
    ) -> Result<(), SchedulerError> {
        // The puzzles the threads are shared among, this one too: its split is for its share.
        let unfinished = self.map.len() + parts.puzzles_not_started();
        let Some(puzzle) = self.map.get_mut(&puzzle_id) else {
            return Ok(());
        };
        // `bound` rests on the claims of the iteration that just ended, and on no earlier ones.
        puzzle.proof = std::mem::take(&mut puzzle.iteration_claims);
        puzzle.proven = puzzle.proven.max(bound);
        if let Some(moves) = puzzle.known_within(bound) {
            // Nothing shorter than `bound` exists, and the claimed path is no longer.
            return self.finish_solved(parts, audits, puzzle_id, moves);
        }
        if bound as usize >= tilesolve::search::MAX_DEPTH {
            let reason = "no solution within the longest supported path".into();
            return self.finish_failed(parts, audits, puzzle_id, reason);
        }
        let state = puzzle.search_state(bound);
        parts
            .store
            .put_search_state(&puzzle.goal, &puzzle.board, state)?;
        puzzle.bound_stored = true;
        if let Some(spec) = cut_short {
            puzzle.bound = bound;
            let limits = parts.batches.limits(puzzle_id.0);
            let budget = whole_budget_within(parts.config.whole_task_budget, &limits);
            let spec = TaskSpec {
                bound,
                node_budget: budget,
                ..spec
            };
            self.add_whole_task(parts, puzzle_id, spec);
            return Ok(());
        }
        let params = parts.config.balance(
            parts.workers.threads(),
            unfinished,
            puzzle.seconds_per_node(),
            parts.own_cost.seconds_per_task(&parts.config),
        );
        let solver = parts.solver(&(puzzle.goal, puzzle.heuristic))?.clone();
        puzzle.splitting = Some(bound);
        parts.out.deferred.push(Deferred::Split(PendingSplit {
            puzzle: puzzle_id,
            bound,
            board: puzzle.board,
            solver,
            history: std::mem::take(&mut puzzle.history),
            nodes_so_far: puzzle.nodes,
            params,
        }));
        Ok(())
    }

    /// Queues a split iteration's tasks, or finishes the puzzle when the split met the goal; an
    /// iteration with nothing within its bound goes straight on to the next. A split for a
    /// puzzle that ended meanwhile (its batch cancelled) is dropped.
    pub(super) fn finish_split(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        split: FinishedSplit,
    ) -> Result<(), SchedulerError> {
        let FinishedSplit {
            puzzle: puzzle_id,
            bound,
            frontier,
            history,
        } = split;
        let Some(puzzle) = self
            .map
            .get_mut(&puzzle_id)
            .filter(|p| p.splitting == Some(bound))
        else {
            return Ok(());
        };
        puzzle.splitting = None;
        if let Some(moves) = frontier.solution {
            return self.finish_solved(parts, audits, puzzle_id, moves);
        }
        if frontier.tasks.is_empty() {
            puzzle.history = history;
            let bound = frontier.pruned_min_f;
            return self.next_iteration(parts, audits, (puzzle_id, bound), None);
        }
        puzzle.begin_iteration(bound, parts.workers.idle_seconds(Instant::now()));
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
        let first = (parts.tasks.turn_now(), parts.tasks.next_wave());
        let budgets = (parts.config.subtree_task_budget, parts.config.profile_depth);
        let tasks = iteration_tasks((puzzle_id, &*puzzle), bound, frontier.tasks, first, budgets);
        for (spec, place, predicted) in tasks {
            self.add_task(parts, puzzle_id, spec, place, predicted);
        }
        Ok(())
    }

    /// Withdraws `ids` (tasks or audits), telling workers about the leased ones.
    fn withdraw(parts: &mut Parts, ids: Vec<TaskId>) {
        for (worker, task) in parts.tasks.withdraw(ids) {
            parts.workers.tell_cancelled(worker, task);
        }
    }

    /// Records the subtree tasks a solution made unnecessary, so a replay knows which parts of
    /// the last iteration were never measured.
    fn record_cancelled(&self, parts: &mut Parts, puzzle_id: PuzzleId) {
        let Some(puzzle) = self.map.get(&puzzle_id) else {
            return;
        };
        for &id in &puzzle.outstanding {
            if let Some(record) = parts
                .tasks
                .get(id)
                .and_then(|entry| records::cancelled(puzzle_id, entry))
            {
                parts
                    .out
                    .records
                    .push(puzzle.goal, puzzle.board, id, record);
            }
        }
    }

    /// Withdraws the puzzle's outstanding tasks (not its audits): nothing more is searched.
    fn stop_search(&mut self, parts: &mut Parts, puzzle_id: PuzzleId) {
        self.record_cancelled(parts, puzzle_id);
        let ids = self
            .map
            .get_mut(&puzzle_id)
            .map(|p| p.outstanding.drain().collect())
            .unwrap_or_default();
        Puzzles::withdraw(parts, ids);
    }

    /// One of `batch`'s live puzzles is gone.
    fn count_ended(&mut self, batch: u64) {
        if let Some(live) = self.live_in.get_mut(&batch) {
            *live -= 1;
            if *live == 0 {
                self.live_in.remove(&batch);
            }
        }
    }

    /// Removes a live puzzle: its tasks and audits withdrawn, workers told.
    fn remove(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle_id: PuzzleId,
    ) -> Option<Box<Puzzle>> {
        let puzzle = self.map.remove(&puzzle_id);
        if puzzle.is_some() {
            self.count_ended(puzzle_id.0);
        }
        let mut ids: Vec<TaskId> = audits.forget(parts, puzzle_id);
        ids.extend(puzzle.iter().flat_map(|p| p.outstanding.iter().copied()));
        Puzzles::withdraw(parts, ids);
        puzzle
    }

    /// Ends the puzzle's optimal search once it has spent its share of a limit, and queues its
    /// weighted task.
    fn check_limits(
        &mut self,
        parts: &mut Parts,
        puzzle_id: PuzzleId,
    ) -> Result<(), SchedulerError> {
        match self.map.get(&puzzle_id) {
            Some(puzzle) if bounded::over_limit(puzzle_id, puzzle) => {
                self.start_weighted(parts, puzzle_id)
            }
            _ => Ok(()),
        }
    }

    /// Withdraws the puzzle's optimal search and queues its weighted task.
    fn start_weighted(
        &mut self,
        parts: &mut Parts,
        puzzle_id: PuzzleId,
    ) -> Result<(), SchedulerError> {
        self.stop_search(parts, puzzle_id);
        let Some(puzzle) = self.map.get_mut(&puzzle_id) else {
            return Ok(());
        };
        let spec = bounded::weighted_task(puzzle_id, puzzle);
        self.add_whole_task(parts, puzzle_id, spec);
        Ok(())
    }

    /// Ends a puzzle with what its weighted task found (see [`bounded::weighted_end`]).
    fn finish_weighted(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle_id: PuzzleId,
        found: Option<(Vec<Direction>, tilesolve::heuristic::Weight)>,
    ) -> Result<(), SchedulerError> {
        let Some(puzzle) = self.map.get(&puzzle_id) else {
            return Ok(());
        };
        let name = parts
            .solver(&(puzzle.goal, puzzle.heuristic))?
            .heuristic()
            .to_string();
        match bounded::weighted_end(puzzle, found, name) {
            WeightedEnd::Failed(reason) => self.finish_failed(parts, audits, puzzle_id, reason),
            WeightedEnd::Solved(moves) => self.finish_solved(parts, audits, puzzle_id, moves),
            WeightedEnd::Bounded(state, bounded) => {
                parts
                    .store
                    .put_search_state(&puzzle.goal, &puzzle.board, state)?;
                self.finish(parts, audits, puzzle_id, ItemStatus::Bounded(bounded))
            }
        }
    }

    /// Stores `moves` as the puzzle's answer, once replayed and once every audit its length
    /// rests on has ended (until then the answer is held and the search is over).
    pub(super) fn finish_solved(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle_id: PuzzleId,
        answer: impl Into<Answer>,
    ) -> Result<(), SchedulerError> {
        let (Some(puzzle), answer) = (self.map.get_mut(&puzzle_id), answer.into()) else {
            return Ok(());
        };
        let proof = std::mem::take(&mut puzzle.proof);
        audits.answer(parts, puzzle_id, proof);
        if audits.pending(puzzle_id) {
            // The answer waits for the audits of the reports it rests on; the search is over.
            self.stop_search(parts, puzzle_id);
            if let Some(puzzle) = self.map.get_mut(&puzzle_id) {
                puzzle.held = Some(answer);
            }
            return Ok(());
        }
        let Some(puzzle) = self.map.get(&puzzle_id) else {
            return Ok(());
        };
        let workers: Vec<u64> = puzzle.workers.iter().copied().collect();
        let (board, goal, nodes) = (puzzle.board, puzzle.goal, puzzle.nodes);
        // Replayed before it is stored or reported: a wrong answer is a failure, never a result.
        let solution = match puzzle.solution(answer) {
            Ok(solution) => solution,
            Err(reason) => return self.finish_failed(parts, audits, puzzle_id, reason),
        };
        self.record_cancelled(parts, puzzle_id);
        let name = parts
            .solver(&(goal, puzzle.heuristic))?
            .heuristic()
            .to_string();
        // A path board of an answer found this cheaply is searched again faster than 40 to 80
        // store entries per answer are written (measured: they were 40% of the coordinator's
        // time on a batch of easy boards).
        let path_boards = if nodes >= PATH_BOARDS_MIN_NODES {
            PathBoards::Stored
        } else {
            PathBoards::Skipped
        };
        // The item keeps the record as stored, with the nodes its search counted.
        let stored = StoredSolution {
            nodes: solution.counters.expanded,
            ..parts
                .store
                .put_solution(&solution, &name, &workers, path_boards)?
        };
        if puzzle.bound_stored {
            parts.store.remove_search_state(&goal, &board)?;
        }
        self.finish(parts, audits, puzzle_id, ItemStatus::Solved(stored))
    }

    pub(super) fn finish_failed(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle_id: PuzzleId,
        reason: String,
    ) -> Result<(), SchedulerError> {
        self.finish(parts, audits, puzzle_id, ItemStatus::Failed(reason))
    }

    /// Ends a puzzle (or an item that never started) with `status`: its tasks withdrawn, its
    /// item written, its batch closed when it was the last.
    fn finish(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle_id: PuzzleId,
        status: ItemStatus,
    ) -> Result<(), SchedulerError> {
        let item = match self.remove(parts, audits, puzzle_id) {
            Some(puzzle) => Some(puzzle.into_item(status.clone())),
            None => parts
                .store
                .item(puzzle_id.0, puzzle_id.1)?
                .map(|item| StoredItem {
                    status: status.clone(),
                    ..item
                }),
        };
        parts.end_item(puzzle_id, item, status)
    }

    /// Withdraws every live puzzle of a batch whose intake failed (it was never acknowledged).
    pub(super) fn withdraw_batch(&mut self, parts: &mut Parts, audits: &mut Audits, batch: u64) {
        for puzzle in self.of_batch(batch) {
            self.remove(parts, audits, puzzle);
        }
    }

    /// Ends every live puzzle of `batch` with `status` (cancelled, with its batch).
    pub(super) fn end_live(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        batch: u64,
        status: ItemStatus,
    ) -> Result<(), SchedulerError> {
        for puzzle in self.of_batch(batch) {
            self.finish(parts, audits, puzzle, status.clone())?;
        }
        Ok(())
    }

    /// Shuts `worker` out for `reason` and undoes what rests on its reports: its tasks go
    /// back to the queue, live puzzles that used its reports start again, and stored answers
    /// and bounds that rest on them are withdrawn (`quarantine`: unread from now on, removed
    /// by a pass outside the lock), their items solved again ([`Puzzles::finish_withdrawal`]).
    fn quarantine(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        worker: WorkerId,
        reason: String,
    ) -> Result<(), SchedulerError> {
        tracing::warn!(worker, %reason, "worker quarantined: what rests on its reports is solved again");
        let withdrawal = quarantine::begin(parts, worker, reason);
        let live: Vec<PuzzleId> = self.resting_on(worker);
        let why = format!("worker {worker} was quarantined");
        for &puzzle in &live {
            self.restart(parts, audits, puzzle, &why)?;
        }
        parts.out.deferred.push(Deferred::Withdrawal(withdrawal));
        Ok(())
    }

    /// Takes the pass that withdrew a quarantined worker's stored answers: the items it found
    /// answered with them are solved again.
    pub(super) fn finish_withdrawal(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        withdrawal: quarantine::FinishedWithdrawal,
    ) -> Result<(), SchedulerError> {
        for (batch, items) in quarantine::finish(parts, withdrawal)? {
            for (index, item) in items {
                let queued = QueuedItem::stored(batch, index, &item)?;
                self.start_item(parts, audits, (batch, index), &queued)?;
            }
        }
        Ok(())
    }

    /// Starts a live puzzle over from its heuristic estimate: the reports its search rested on
    /// cannot all be true.
    fn restart(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle: PuzzleId,
        reason: &str,
    ) -> Result<(), SchedulerError> {
        let Some(p) = self.remove(parts, audits, puzzle) else {
            return Ok(());
        };
        let (batch, index) = puzzle;
        tracing::warn!(batch, puzzle = index + 1, %reason, "puzzle starts again");
        parts.totals.puzzles_restarted += 1;
        parts.store.remove_search_state(&p.goal, &p.board)?;
        let item = parts
            .store
            .item(batch, index)?
            .ok_or_else(|| StoreError::Corrupt {
                tree: "items",
                reason: format!("batch {batch} item {index}: missing"),
            })?;
        self.start_item(
            parts,
            audits,
            puzzle,
            &QueuedItem::stored(batch, index, &item)?,
        )
    }
}
