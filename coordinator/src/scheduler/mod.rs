//! The scheduler: batches in, subtree tasks out, results back in, optimal answers into the store.
//!
//! Per puzzle: first one whole-puzzle task (IDA* from the proven lower bound, with a
//! node budget), so that cheap puzzles cost one round trip. A puzzle that spends the budget is
//! hard: each IDA* iteration is then split at a frontier depth into many deduplicated subtree
//! tasks under the iteration's bound. The first subtree that finds a goal ends the puzzle (its
//! other tasks are cancelled); when none does, the next bound is the smallest f reported, and the
//! finished bound is stored as a proven lower bound so that a restart resumes there.
//!
//! Tasks are leased to workers; a lease that is not renewed by polls or heartbeats within the
//! timeout returns its task to the queue, and a result for a task no longer leased is ignored.
//! A task that keeps failing or keeps losing its worker fails its puzzle, with the reason, after
//! [`MAX_ATTEMPTS`]. Task and worker ids carry the coordinator's incarnation (how many times it
//! has started on these files), so a worker's report from before a restart never matches a task
//! of the new process.
//! The scheduler is plain synchronous code behind a mutex: no tokio, no gRPC types.
//!
//! `Scheduler`'s methods live with the part of its job they do:
//! - here: `new` (resuming the store's unfinished batches), registration and `poll`, `heartbeat`,
//!   `sweep`, `leave`, the read-only views (`progress`, `list`, `query`, `totals`, ...), and
//!   `cancel` and `prune`;
//! - `intake`: `read_batch`, `open_batch`, `start_part`, `abandon`, `line_errors`;
//! - `lifecycle`: `start_item`, `apply` (one report), the iterations and their splits,
//!   `take_deferred` / `finish_deferred`, `finish_solved`, `finish_failed`;
//! - `audits`: `maybe_audit`, `audit_answer`, `apply_audit`, `quarantine`, `restart_puzzle`;
//! - `tables`: `prepare`, `start_or_wait`, `table_needs`, `install_solver`, waiting batches.
//!
//! Shared types are in `types` and `config`; the CPU work handed out of the lock in `deferred`.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::PdbStore;
use tilesolve::{parse_board, Board, Solver};

use crate::store::{Store, StoredBatch, StoredBounded, StoredItem, StoredSolution};

mod audits;
mod batches;
mod bounded;
mod config;
mod deferred;
mod intake;
mod judge;
mod lifecycle;
mod records;
mod tables;
mod tasks;
#[cfg(test)]
mod tests;
mod types;
mod workers;

pub use batches::BatchProgress;
pub use config::{
    SchedulerConfig, Verify, DEFAULT_AUDIT_FRACTION, DEFAULT_MAX_PENDING, PROBATION_SAMPLE_NODES,
};
pub use deferred::{Deferred, DeferredDone};
pub use intake::{now_unix_ms, Intake, ReadBatch};
pub use lifecycle::subtree_budget;
pub use records::{Flusher, TaskRecords};
pub use tables::{SolverKey, TableNeed};
pub use types::*;
pub use workers::{WorkerView, RATE_WINDOW};

use batches::Batches;
use intake::parse_goal;
use lifecycle::Puzzle;
use tasks::{Tasks, LEASE_MIN_NODE_RATE};
use workers::{Workers, MAX_FAILURES_IN_A_ROW};

/// The coordinator's state, behind one mutex. Its parts keep their own state private
/// (`workers`, `tasks`, `batches`, `records`); the puzzles (whose life `lifecycle` runs), the
/// solvers and the batches waiting for tables are its own.
pub struct Scheduler {
    store: Store,
    pdbs: PdbStore,
    config: SchedulerConfig,
    solvers: HashMap<SolverKey, Solver>,
    /// Batches stored and acknowledged whose tables are still being obtained.
    waiting: BTreeMap<u64, tables::WaitingBatch>,
    /// What the table supply is doing for each solver waiting batches need.
    preparing: HashMap<SolverKey, String>,
    /// Ordered by (batch, index), so one batch's puzzles are a range.
    puzzles: BTreeMap<PuzzleId, Puzzle>,
    tasks: Tasks,
    workers: Workers,
    batches: Batches,
    next_id: u64,
    /// The largest batch id this process handed out (batches being taken in are not stored
    /// whole yet).
    last_batch_id: u64,
    /// Queued items of batches being taken in, not started yet (they count against the
    /// pending limit).
    intake_pending: usize,
    /// A batch finished since the last [`Scheduler::take_flush_due`].
    flush_due: bool,
    /// Records not yet taken by [`Scheduler::take_records`].
    records: TaskRecords,
    /// Work not yet taken by [`Scheduler::take_deferred`].
    deferred: Vec<Deferred>,
    totals: SchedulerTotals,
    /// Decides which reports are audited; secret, so a worker cannot tell.
    audit_seed: u64,
}

impl Scheduler {
    /// A scheduler over `store` that resumes every unfinished item of every stored batch.
    pub fn new(
        store: Store,
        pdbs: PdbStore,
        config: SchedulerConfig,
    ) -> Result<Scheduler, SchedulerError> {
        let incarnation = store.next_incarnation()?;
        let mut seed = [0u8; 8];
        getrandom::getrandom(&mut seed)
            .map_err(|e| SchedulerError::Internal(format!("no randomness for audits: {e}")))?;
        let mut scheduler = Scheduler {
            store,
            pdbs,
            config,
            solvers: HashMap::new(),
            waiting: BTreeMap::new(),
            preparing: HashMap::new(),
            puzzles: BTreeMap::new(),
            tasks: Tasks::default(),
            workers: Workers::default(),
            batches: Batches::default(),
            next_id: incarnation << 40,
            last_batch_id: 0,
            intake_pending: 0,
            flush_due: false,
            records: TaskRecords::default(),
            deferred: Vec::new(),
            totals: SchedulerTotals::default(),
            audit_seed: u64::from_le_bytes(seed),
        };
        // One record at a time: a store of 866,432 batches collected whole took the starting
        // coordinator to 122 MiB of anonymous memory, six times what it runs in.
        let store = scheduler.store.clone();
        for batch in store.each_batch() {
            let batch = batch?;
            if batch.cancelled || batch.finished.is_some() {
                continue;
            }
            let items = scheduler.store.items(batch.id)?;
            let counts = batches::counts(&items);
            scheduler.batches.open(batch.id, counts);
            scheduler.batches.set_limits(batch.id, batch.limits);
            let heuristic = intake::parse_heuristic(&batch.heuristic)?;
            scheduler.start_or_wait(batch.id, 0, &items, heuristic)?;
            if counts.done() {
                // Finished before its figures were stored (a store from an older version).
                scheduler.close_batch(batch.id)?;
            }
        }
        Ok(scheduler)
    }

    /// Task and worker ids: one counter, prefixed with the incarnation.
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Bytes this scheduler's pattern tables may take (see [`SchedulerConfig::table_budget`]).
    pub fn table_budget(&self) -> u64 {
        self.config.table_budget
    }

    /// The solver for a goal and heuristic name: ready for every started puzzle (see `tables`).
    fn solver(&self, goal: &Board, heuristic: HeuristicChoice) -> Result<&Solver, SchedulerError> {
        self.solvers.get(&(*goal, heuristic)).ok_or_else(|| {
            SchedulerError::Internal(format!(
                "no solver loaded for {heuristic} on {} boards",
                goal.shape()
            ))
        })
    }

    /// Accepts a batch: parses every line (bad lines become failed items naming the line and
    /// the reason), answers boards already in the store, writes the batch to disk, and queues
    /// the rest. All under the caller's `&mut`; the service takes a batch in a part at a time
    /// instead ([`Scheduler::open_batch`]), releasing the lock between parts.
    pub fn submit(
        &mut self,
        lines: &[String],
        heuristic: &str,
        goal: &str,
    ) -> Result<Submitted, SchedulerError> {
        let read = Scheduler::read_batch(&self.store, lines, heuristic, goal)?;
        let mut intake = self.open_batch(read)?;
        let store = self.store.clone();
        let taken_in = (|| {
            while intake.store_part(&store)? {
                self.start_part(&mut intake)?;
            }
            Ok(())
        })();
        if let Err(error) = taken_in {
            self.abandon(&intake);
            return Err(error);
        }
        Ok(intake.submitted())
    }

    /// Refuses `puzzles` more unfinished puzzles if they would pass the configured limit
    /// (started ones and those waiting for tables), before anything of the batch is stored.
    pub fn check_capacity(&self, puzzles: usize) -> Result<(), SchedulerError> {
        let pending = self.puzzles.len() + self.waiting_items() + self.intake_pending;
        if pending + puzzles > self.config.max_pending_puzzles {
            return Err(SchedulerError::ResourceExhausted(format!(
                "the coordinator holds {pending} unfinished puzzles; {puzzles} more would pass its limit of {}: \
                 resubmit when some have finished",
                self.config.max_pending_puzzles
            )));
        }
        Ok(())
    }

    /// A worker joins with `threads` search threads (1 to [`MAX_WORKER_THREADS`]).
    pub fn register(&mut self, threads: u32, host: &str) -> Result<WorkerId, SchedulerError> {
        let id = self.next_id();
        self.workers
            .register(id, Lineage::Registration(id), threads, host)?;
        Ok(id)
    }

    /// Registers a worker that presented the worker token of index `token`: every
    /// registration under one token is one lineage, and none audits another's reports.
    pub fn register_with_token(
        &mut self,
        threads: u32,
        host: &str,
        token: usize,
    ) -> Result<WorkerId, SchedulerError> {
        let id = self.next_id();
        self.workers
            .register(id, Lineage::Token(token), threads, host)?;
        Ok(id)
    }

    /// The secret a worker must send with every call after registering (see
    /// [`Scheduler::check_worker`]).
    pub fn worker_secret(&self, worker: WorkerId) -> Result<String, SchedulerError> {
        self.workers.secret(worker)
    }

    /// Refuses a call for `worker` that does not carry its secret: worker ids are sequential,
    /// so without it anyone could poll, report or heartbeat for another worker.
    pub fn check_worker(&self, worker: WorkerId, secret: &str) -> Result<(), SchedulerError> {
        self.workers.check_secret(worker, secret)
    }

    /// Records what `default` means on a worker, as it said when registering.
    pub fn set_default_heuristics(&mut self, worker: WorkerId, names: &[String]) {
        self.workers.set_default_heuristics(worker, names);
    }

    /// A worker reports results and asks for up to `free_slots` tasks (it holds at most
    /// 1 + [`MAX_PREFETCH`] per thread, counting those it has, or more while its tasks are short:
    /// [`tilesolve::task::TaskTimes`]). Returns its new tasks and the tasks it holds that
    /// were cancelled.
    pub fn poll(
        &mut self,
        worker: WorkerId,
        free_slots: u32,
        results: Vec<TaskReport>,
    ) -> Result<(Vec<TaskSpec>, Vec<TaskId>), SchedulerError> {
        let now = Instant::now();
        let results: Vec<TaskReport> = results.into_iter().map(TaskReport::bounded).collect();
        // An unknown worker's results are dropped, because its leases are gone.
        let nodes = results
            .iter()
            .fold(0u64, |sum, report| sum.saturating_add(report.nodes));
        // Only times that could be true count toward packing (see `Workers::reported`): a
        // worker claiming impossible speed holds no more than one that reports nothing.
        let timed = results
            .iter()
            .filter(|report| {
                report.seconds > 0.0 && report.nodes as f64 <= report.seconds * MAX_NODE_RATE
            })
            .fold((0u64, 0.0), |(count, sum), report| {
                (count + 1, sum + report.seconds)
            });
        let holding = self
            .workers
            .reported(worker, now, (results.len() as u64, nodes), timed)?;
        for report in results {
            self.apply(worker, report)?;
            // A worker quarantined by one of its reports gets nothing more: the rest of its
            // reports are void, and its next call is refused. (Not refused here: what the
            // reports before did, splits and flushes, still has to be taken by the caller.)
            if self.workers.is_quarantined(worker) {
                return Ok((Vec::new(), Vec::new()));
            }
        }
        // A worker holds at most one running and MAX_PREFETCH waiting tasks per thread (more
        // only while its tasks are short), however often it asks: one that asks for everything
        // and never reports cannot starve the rest.
        let leased = self.tasks.lease(
            worker,
            free_slots as usize,
            holding,
            now,
            self.config.lease_timeout,
        );
        Ok((leased, self.workers.take_cancelled(worker)))
    }

    /// `worker` is stopping: every task it holds goes back to the queue now (no lease timeout
    /// waited out, no attempt counted) and it is forgotten. Returns how many tasks went back.
    pub fn leave(&mut self, worker: WorkerId) -> Result<usize, SchedulerError> {
        self.workers.seen(worker, Instant::now())?;
        let returned = self.tasks.release(worker);
        self.workers.forget(worker);
        self.audit_stranded_here()?;
        Ok(returned)
    }

    /// Whether some task may be waiting for a worker (withdrawn tasks may still be counted).
    pub fn has_ready_tasks(&self) -> bool {
        self.tasks.has_ready()
    }

    /// Renews the leases of the tasks a worker is running; returns its cancellations.
    pub fn heartbeat(
        &mut self,
        worker: WorkerId,
        running: &[TaskId],
    ) -> Result<Vec<TaskId>, SchedulerError> {
        let now = Instant::now();
        self.workers.seen(worker, now)?;
        self.tasks
            .renew(worker, running, now, self.config.lease_timeout);
        Ok(self.workers.take_cancelled(worker))
    }

    /// Returns expired leases to the queue, fails the puzzles of tasks that lost their worker
    /// [`MAX_ATTEMPTS`] times, and forgets silent workers.
    pub fn sweep(&mut self) -> Result<Swept, SchedulerError> {
        let now = Instant::now();
        let workers_lost = self.workers.forget_silent(now, self.config.lease_timeout);
        let expired = self.tasks.expire(now);
        let mut swept = Swept {
            workers_lost,
            tasks_requeued: expired.requeued,
            puzzles_failed: 0,
        };
        for worker in expired.overdue {
            if self.workers.failed(worker) {
                self.shut_out(
                    worker,
                    format!(
                        "it held {MAX_FAILURES_IN_A_ROW} tasks in a row past their deadlines \
                         (their node budgets at {LEASE_MIN_NODE_RATE} nodes a second) without \
                         reporting them"
                    ),
                );
            }
        }
        for (puzzle, task) in expired.exhausted {
            // An audit whose auditors keep falling silent is run by the coordinator.
            if let Some(entry) = self.tasks.take_unleased_audit(task) {
                self.audit_task_here(entry)?;
                continue;
            }
            if self.puzzles.contains_key(&puzzle) {
                swept.puzzles_failed += 1;
                self.finish_failed(
                    puzzle,
                    format!(
                        "task {task} lost its worker {MAX_ATTEMPTS} times \
                         (the workers running it stopped responding)"
                    ),
                )?;
            }
        }
        self.audit_stranded_here()?;
        Ok(swept)
    }

    /// Moves a finished batch's figures from memory into its stored record: a coordinator that
    /// runs for months keeps nothing per finished batch.
    fn close_batch(&mut self, batch: u64) -> Result<(), SchedulerError> {
        let Some(figures) = self.batches.close(batch) else {
            return Ok(());
        };
        tracing::info!(
            batch,
            solved = figures.solved,
            failed = figures.failed,
            nodes = figures.nodes,
            seconds = figures.seconds,
            "batch finished"
        );
        if let Some(stored) = self.store.batch(batch)? {
            self.store.finish_batch(&crate::store::StoredBatch {
                finished: Some(figures),
                ..stored
            })?;
        }
        Ok(())
    }

    /// Whether a batch finished since the last call: its answers should then be flushed (with
    /// [`Scheduler::flusher`], after the lock is released) before the worker's call returns.
    pub fn take_flush_due(&mut self) -> bool {
        std::mem::take(&mut self.flush_due)
    }

    /// The task records made since the last call, for [`Flusher::write`] once the lock is
    /// released (a record lost in a crash only makes a replay of that run less complete).
    pub fn take_records(&mut self) -> TaskRecords {
        std::mem::take(&mut self.records)
    }

    /// The store, to read at length without the scheduler's lock (an export).
    pub fn store_reader(&self) -> Store {
        self.store.clone()
    }

    /// A handle that flushes the store without the scheduler's lock.
    pub fn flusher(&self) -> Flusher {
        Flusher::new(self.store.clone())
    }

    /// A batch's progress.
    pub fn progress(&self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        // A batch still being taken in has counts here and no record yet.
        self.progress_of(batch, self.store.batch(batch)?)
    }

    /// [`Scheduler::progress`] of `batch`, whose record (if stored) is `stored`.
    fn progress_of(
        &self,
        batch: u64,
        stored: Option<StoredBatch>,
    ) -> Result<BatchProgress, SchedulerError> {
        let submitted = |progress: BatchProgress| match &stored {
            Some(stored) => BatchProgress {
                submitted_unix_ms: stored.submitted_unix_ms,
                heuristic: stored.heuristic.clone(),
                goal: stored.goal.clone().unwrap_or_default(),
                ..progress
            },
            None => progress,
        };
        let counts = match self.batches.counts(batch) {
            Some(counts) => counts,
            None => {
                let stored = stored.as_ref().ok_or(SchedulerError::UnknownBatch(batch))?;
                if let Some(figures) = &stored.finished {
                    return Ok(submitted(BatchProgress {
                        cancelled: stored.cancelled,
                        ..Batches::finished(batch, stored.items, figures)
                    }));
                }
                batches::counts(&self.store.items(batch)?)
            }
        };
        let mut bounds: Vec<u32> = self
            .puzzles
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(_, p)| p.bound)
            .collect();
        bounds.sort_unstable();
        let mut progress = self
            .batches
            .progress(batch, counts, bounds, self.workers.len() as u32);
        progress.preparing = self.preparing(batch);
        Ok(submitted(progress))
    }

    /// The connected workers.
    pub fn workers(&self) -> Vec<WorkerView> {
        self.workers.views()
    }

    /// Workers that left, were lost or were quarantined lately (see `GONE_SHOWN`), newest first.
    pub fn gone_workers(&self) -> Vec<WorkerView> {
        self.workers.gone_views()
    }

    /// The lines of a batch that intake would refuse, with why, for `goal` (a request's goal
    /// text): checked without submitting anything.
    pub fn line_errors(lines: &[String], goal: &str) -> Result<Vec<(u32, String)>, SchedulerError> {
        Ok(intake::line_errors(lines, intake::parse_goal(goal)?))
    }

    /// (queued, running) tasks of `batch` now: for the dashboard's batch page.
    pub fn batch_tasks(&self, batch: u64) -> (u64, u64) {
        self.tasks.batch_counts(batch)
    }

    /// Tasks `worker` holds now (running or prefetched).
    pub fn tasks_held(&self, worker: WorkerId) -> usize {
        self.tasks.held(worker)
    }

    /// Records the name a worker gave when registering.
    pub fn set_worker_name(&mut self, worker: WorkerId, name: &str) {
        self.workers.set_name(worker, name);
    }

    /// Totals since start and the queue now.
    pub fn totals(&self) -> SchedulerTotals {
        let (queued, running) = self.tasks.counts();
        let workers = self.workers();
        SchedulerTotals {
            tasks_queued: queued,
            tasks_running: running,
            puzzles_pending: (self.puzzles.len() + self.waiting_items()) as u64,
            workers: workers.len() as u64,
            worker_threads: workers.iter().map(|w| u64::from(w.threads)).sum(),
            nodes_per_second: workers.iter().map(|w| w.nodes_per_second).sum(),
            ..self.totals.clone()
        }
    }

    /// Bytes the store takes on disk.
    pub fn store_bytes(&self) -> u64 {
        self.store.size_on_disk()
    }

    /// Free and total bytes of the store's file system.
    pub fn store_disk_space(&self) -> Option<(u64, u64)> {
        self.store.disk_space()
    }

    /// The progress of up to `count` stored batches after (or, `newest_first`, before) the
    /// batch `after`.
    pub fn list(
        &self,
        after: Option<u64>,
        count: usize,
        newest_first: bool,
    ) -> Result<Vec<BatchProgress>, SchedulerError> {
        self.store
            .batches_page(after, count, newest_first)?
            .into_iter()
            .map(|batch| self.progress_of(batch.id, Some(batch)))
            .collect()
    }

    /// Finished batches submitted before `cutoff_unix_ms`, oldest first, up to `count` after
    /// the batch `after`: what a prune removes, a page at a time so the lock is held briefly.
    pub fn finished_before(
        &self,
        cutoff_unix_ms: u64,
        after: Option<u64>,
        count: usize,
    ) -> Result<(Vec<u64>, Option<u64>), SchedulerError> {
        let page = self.store.batches_page(after, count, false)?;
        // Ids are handed out in submission order: past the first batch submitted after the
        // cutoff, none is older.
        let reached_cutoff = page.iter().any(|b| b.submitted_unix_ms >= cutoff_unix_ms);
        let last = (page.len() == count && !reached_cutoff)
            .then(|| page.last().map(|b| b.id))
            .flatten();
        let old = page
            .iter()
            .take_while(|b| b.submitted_unix_ms < cutoff_unix_ms)
            .filter(|b| b.finished.is_some())
            .map(|b| b.id)
            .collect();
        Ok((old, last))
    }

    /// Removes a finished batch and its items (and, with `solutions`, its answers and the
    /// boards on their paths); returns (items, boards) removed. A batch still running is left.
    pub fn prune(&mut self, batch: u64, solutions: bool) -> Result<(usize, usize), SchedulerError> {
        let finished = self
            .store
            .batch(batch)?
            .is_some_and(|b| b.finished.is_some());
        if !finished || self.batches.counts(batch).is_some() {
            return Ok((0, 0));
        }
        Ok(self.store.remove_batch(batch, solutions)?)
    }

    /// Cancels a batch: its unfinished items fail as cancelled (their tasks are withdrawn and
    /// workers told); answers already found stay. The caller flushes the store after releasing
    /// the lock ([`Scheduler::flusher`]) before it answers.
    pub fn cancel(&mut self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        let mut stored = self
            .store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?;
        // A finished batch is history: cancelling it changes nothing (`cancelled` says whether
        // it was cancelled before it finished).
        let progress = self.progress(batch)?;
        if progress.done {
            return Ok(progress);
        }
        stored.cancelled = true;
        self.store.put_batch(&stored)?;
        let puzzles: Vec<PuzzleId> = self
            .puzzles
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(id, _)| *id)
            .collect();
        for puzzle in puzzles {
            self.finish_failed(puzzle, "cancelled".into())?;
        }
        self.fail_waiting_batch(batch, "cancelled")?;
        self.progress(batch).map(|progress| BatchProgress {
            cancelled: true,
            ..progress
        })
    }

    /// A batch's items, in order.
    pub fn items(&self, batch: u64) -> Result<Vec<StoredItem>, SchedulerError> {
        self.store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?;
        Ok(self.store.items(batch)?)
    }

    /// The batch as submitted, and up to `limit` of its items from index `start` on, with
    /// their indices.
    /// Read from `store` (the scheduler's, [`Scheduler::store_reader`]) without the lock: a
    /// page of 10,000 items took the lock from every worker for milliseconds.
    pub fn items_page(
        store: &Store,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<(StoredBatch, Vec<(u32, StoredItem)>), SchedulerError> {
        let stored = store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?;
        Ok((stored, store.items_page(batch, start, limit)?))
    }

    /// A stored solution, replayed before it is returned.
    pub fn query(&self, board: &str, goal: &str) -> Result<Option<StoredSolution>, SchedulerError> {
        let (board, goal) = query_boards(board, goal)?;
        let stored = self.store.solution(&goal, &board)?;
        Ok(stored.filter(|s| Store::verified(&goal, &board, s).is_some()))
    }

    /// Without a stored solution: the path a limited search stored for the board, replayed,
    /// with the lower bound proven so far (its search's nodes and seconds are not kept).
    pub fn query_bounded(
        &self,
        board: &str,
        goal: &str,
    ) -> Result<Option<StoredBounded>, SchedulerError> {
        let (board, goal) = query_boards(board, goal)?;
        let Some(state) = self.store.search_state(&goal, &board)? else {
            return Ok(None);
        };
        let Some(best) = state.best else {
            return Ok(None);
        };
        let replayed = tilesolve::moves::moves_from_string(&best.moves)
            .and_then(|moves| tilesolve::moves::replay(&board, &goal, &moves).ok());
        Ok(replayed.map(|tiles| StoredBounded {
            length: tiles.len() as u32,
            moves: best.moves,
            tiles,
            lower_bound: state.lower_bound,
            weight_percent: best.weight_percent,
            nodes: 0,
            seconds: 0.0,
            heuristic: String::new(),
            reason: "stored by a limited search: the optimal search resumes from its lower bound"
                .into(),
            workers: state.workers,
        }))
    }
}

/// A query's board and its goal, as a client typed them.
fn query_boards(board: &str, goal: &str) -> Result<(Board, Board), SchedulerError> {
    let board =
        parse_board(board).map_err(|e| SchedulerError::InvalidArgument(format!("board: {e}")))?;
    let goal = parse_goal(goal)?.for_shape(board.shape());
    Ok((board, goal))
}
