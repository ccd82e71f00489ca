//! The scheduler: batches in, subtree tasks out, results back in, optimal answers into the store.
//!
//! Per puzzle (DESIGN.md): first one whole-puzzle task (IDA* from the proven lower bound, with a
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

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use thiserror::Error;
use tilesolve::pdb::{default_memory_budget, PdbStore};
use tilesolve::search::PartSize;
pub use tilesolve::task::TaskOutcome;
use tilesolve::task::Work;
use tilesolve::{parse_board, Board, Direction, Solver};

use crate::store::{ItemStatus, Store, StoreError, StoredBatch, StoredItem, StoredSolution};

mod audits;
mod batches;
mod intake;
mod lifecycle;
mod records;
mod tables;
mod tasks;
#[cfg(test)]
mod tests;
mod workers;

pub use batches::BatchProgress;
pub use intake::{Intake, ReadBatch};
pub use lifecycle::{subtree_budget, Deferred, DeferredDone};
pub use records::{Flusher, TaskRecords};
pub use tables::{SolverKey, TableNeed};
pub use workers::{Lineage, WorkerView};

use batches::Batches;
use intake::parse_goal;
use lifecycle::Puzzle;
use tasks::{Tasks, LEASE_MIN_NODE_RATE};
use workers::{Workers, MAX_FAILURES_IN_A_ROW};

pub type TaskId = u64;
pub type WorkerId = u64;
/// A puzzle: its batch and its index in the batch (from 0; logs show the item number, from 1).
pub type PuzzleId = (u64, u32);

/// Most lines a batch may hold.
pub const MAX_BATCH_LINES: usize = 100_000;
/// Attempts (failures reported by a worker, or leases lost with their worker) before a task's
/// puzzle is marked failed.
pub const MAX_ATTEMPTS: u32 = 3;
/// Most search threads one worker may declare: beyond the largest machines (a two-socket
/// server has a few hundred hardware threads), so that one registration cannot claim a share
/// of the queue no machine could run.
pub const MAX_WORKER_THREADS: u32 = 1024;
/// Most tasks a worker may hold per thread beyond the one it runs (prefetched), unless its
/// tasks are short (see [`MAX_PACKED_HELD`]).
pub const MAX_PREFETCH: u32 = 4;
/// Seconds of work, at the worker's measured pace, above which a task is not prefetched: it
/// goes only to a thread with nothing to do. A 24-puzzle's last iteration (24 subtree tasks,
/// the largest four 1-3.5 s each) went whole to the worker whose report had ended the
/// iteration before, and its packing (its tasks had been short) let it take them all: the
/// other worker sat idle for 10 of the batch's 17 s. A long task waits for a round trip at
/// most (about a millisecond) by going out one at a time.
pub const PREFETCH_MOST_SECONDS: f64 = 0.25;
/// Most tasks one worker may hold when its tasks are short and packed
/// ([`tilesolve::task::TaskTimes`]), whatever thread count it declared: a worker that
/// hoards cannot take more of the queue than this.
pub const MAX_PACKED_HELD: usize = 4096;
/// Expanded nodes a second no search thread reaches (ten times the Manhattan kernel's rate): a
/// report claiming more says nothing true about its time.
pub const MAX_NODE_RATE: f64 = 1e9;

#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Expanded nodes a whole-puzzle task may spend before the puzzle is split.
    pub whole_task_budget: u64,
    /// A lease not renewed for this long returns its task to the queue.
    pub lease_timeout: Duration,
    /// Most subtree tasks per worker thread when splitting an iteration.
    pub tasks_per_thread: usize,
    /// Split an iteration until no task is predicted above its size / (threads x this).
    pub split_balance: usize,
    /// Never split a subtree predicted smaller than this (expanded nodes) ...
    pub min_split_nodes: u64,
    /// ... nor smaller than this many nodes per connected worker thread.
    pub min_split_nodes_per_thread: u64,
    /// Expanded nodes a subtree task may spend before it comes back split into its children.
    pub subtree_task_budget: u64,
    /// Unfinished puzzles the coordinator holds at most; a batch that would go over is refused
    /// (ResourceExhausted) rather than letting a flood of submissions exhaust memory.
    pub max_pending_puzzles: usize,
    /// Subtree tasks report the size of each descendant this many moves below their board: the
    /// next iteration's split predicts from them, and the store records them, so `tilesolve
    /// simulate` can replay the run at a finer split than it ran with.
    pub profile_depth: u32,
    /// Bytes the coordinator's pattern tables may take: `default` resolves to the strongest
    /// preset that fits, for splitting iterations and for the name stored with results. Workers
    /// resolve `default` within their own budgets (every choice is admissible, so a proof that
    /// combines bounds from several of them still holds).
    pub table_budget: u64,
    /// The share of a worker's reports audited once it is past probation (see `audits`):
    /// each audit costs about one more task. 0 turns audits off (every worker trusted).
    pub audit_fraction: f64,
    /// Whether the coordinator may build a pattern table that no connected worker can send
    /// it (`serve --no-table-builds` turns it off: a batch needing such a table is refused).
    pub build_tables: bool,
}

/// The default [`SchedulerConfig::max_pending_puzzles`]: an unfinished puzzle holds about 4 KB
/// of the coordinator's memory (its state and its queued task: 295 MB for 70,147 of them,
/// measured), so this caps that at about 1 GB, and still takes two full 100,000-line batches.
pub const DEFAULT_MAX_PENDING: usize = 250_000;

/// The default [`SchedulerConfig::audit_fraction`]: about 5% more work; a worker whose reports
/// hide a shorter path one time in ten is caught within about 920 reports with 99% certainty
/// (one that always lies, on probation, at once).
pub const DEFAULT_AUDIT_FRACTION: f64 = 0.05;

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            whole_task_budget: 20_000_000,
            lease_timeout: Duration::from_secs(10),
            tasks_per_thread: 200,
            split_balance: 4,
            min_split_nodes: 30_000,
            min_split_nodes_per_thread: 250,
            subtree_task_budget: 200_000_000,
            max_pending_puzzles: DEFAULT_MAX_PENDING,
            profile_depth: 4,
            table_budget: default_memory_budget(),
            audit_fraction: DEFAULT_AUDIT_FRACTION,
            build_tables: true,
        }
    }
}

#[derive(Debug, Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("no batch {0}")]
    UnknownBatch(u64),
    #[error("unknown worker {0}: register again")]
    UnknownWorker(u64),
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    ResourceExhausted(String),
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("pattern database: {0}")]
    Pdb(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a worker is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    pub id: TaskId,
    /// The puzzle the task works for.
    pub puzzle: PuzzleId,
    pub board: Board,
    pub goal: Board,
    pub heuristic: String,
    /// Moves from the puzzle's root to `board`.
    pub path: Vec<Direction>,
    pub bound: u32,
    /// Whole-puzzle task: keep raising the bound until solved or `node_budget` is spent.
    pub iterate: bool,
    pub node_budget: u64,
    /// Report the sizes of the descendants this many moves below `board` (subtree tasks only).
    pub profile_depth: u32,
}

impl TaskSpec {
    /// The task as [`tilesolve::task::run_task`] takes it (for running tasks in process).
    pub fn work(&self) -> Work<'_> {
        Work {
            board: &self.board,
            path: &self.path,
            bound: self.bound,
            iterate: self.iterate,
            node_budget: self.node_budget,
            profile_depth: self.profile_depth,
        }
    }
}

/// What a worker reports for one task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskReport {
    pub task: TaskId,
    pub outcome: TaskOutcome,
    /// Expanded nodes.
    pub nodes: u64,
    /// The search's wall time on the worker.
    pub seconds: f64,
    /// Seconds it waited on the worker (prefetched) before a thread took it.
    pub queued_seconds: f64,
    /// Measured descendants, when the task asked for them.
    pub parts: Vec<PartSize>,
}

/// Most expanded nodes one report may claim: a year of a fast core (3e7 nodes/s), far past any
/// real task, so a worker's `u64::MAX` cannot wrap a counter.
pub const MAX_REPORTED_NODES: u64 = 1_000_000_000_000_000;
/// Longest failure reason kept from a worker.
pub const MAX_REPORTED_REASON: usize = 500;

impl TaskReport {
    /// The report with what a worker says cut to sane sizes: nodes at [`MAX_REPORTED_NODES`],
    /// a failure reason at [`MAX_REPORTED_REASON`] characters.
    fn bounded(mut self) -> TaskReport {
        self.nodes = self.nodes.min(MAX_REPORTED_NODES);
        if let TaskOutcome::Failed(reason) = &mut self.outcome {
            if let Some((end, _)) = reason.char_indices().nth(MAX_REPORTED_REASON) {
                reason.truncate(end);
                reason.push_str("...");
            }
        }
        self
    }

    pub fn new(task: TaskId, outcome: TaskOutcome, nodes: u64) -> TaskReport {
        TaskReport {
            task,
            outcome,
            nodes,
            seconds: 0.0,
            queued_seconds: 0.0,
            parts: Vec::new(),
        }
    }
}

/// A submitted batch, as acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    pub batch: u64,
    pub items: u32,
    pub invalid: u32,
    pub from_store: u32,
}

/// Totals since this process started, and the state of the queue now (for `/metrics`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchedulerTotals {
    pub nodes: u64,
    pub tasks_done: u64,
    pub puzzles_solved: u64,
    pub puzzles_failed: u64,
    pub tasks_queued: u64,
    pub tasks_running: u64,
    pub puzzles_pending: u64,
    pub workers: u64,
    pub worker_threads: u64,
    /// Expanded nodes per second over every connected worker.
    pub nodes_per_second: f64,
    /// Audits that upheld the report they checked, that disproved it, and that were dropped
    /// or skipped (no other worker to run them, or they spent their budget).
    pub audits_upheld: u64,
    pub audits_disproved: u64,
    pub audits_skipped: u64,
    /// Audits queued before an answer was stored, of the claims it rested on that no draw
    /// had picked.
    pub answer_audits: u64,
    pub workers_quarantined: u64,
    /// Puzzles started over because a report their search rested on was false.
    pub puzzles_restarted: u64,
}

/// What a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Workers silent for longer than the lease timeout, now forgotten.
    pub workers_lost: Vec<WorkerId>,
    /// Tasks whose lease expired, back in the queue.
    pub tasks_requeued: usize,
    /// Puzzles failed because one of their tasks lost its worker too often.
    pub puzzles_failed: usize,
}

/// The coordinator's state, behind one mutex: a thin owner of its parts, each of which keeps
/// its own state private (`workers`, `tasks`, `batches`, `records`) and of the puzzles whose
/// life `lifecycle` runs.
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
        for batch in scheduler.store.batches()? {
            if batch.cancelled || batch.finished.is_some() {
                continue;
            }
            let items = scheduler.store.items(batch.id)?;
            let counts = batches::counts(&items);
            scheduler.batches.open(batch.id, counts);
            scheduler.start_or_wait(batch.id, 0, &items, &batch.heuristic)?;
            if counts.1 + counts.2 == counts.0 {
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
    fn solver(&self, goal: &Board, heuristic: &str) -> Result<&Solver, SchedulerError> {
        self.solvers
            .get(&(*goal, heuristic.to_string()))
            .ok_or_else(|| {
                SchedulerError::Internal(format!(
                    "no solver loaded for {heuristic} on {}x{} boards",
                    goal.side(),
                    goal.side()
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
            self.store.put_batch(&crate::store::StoredBatch {
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
        let counts = match self.batches.counts(batch) {
            Some(counts) => counts,
            None => {
                let stored = self
                    .store
                    .batch(batch)?
                    .ok_or(SchedulerError::UnknownBatch(batch))?;
                if let Some(figures) = &stored.finished {
                    return Ok(BatchProgress {
                        cancelled: stored.cancelled,
                        ..Batches::finished(batch, stored.items, figures)
                    });
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
        Ok(progress)
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

    /// The progress of the `count` most recent batches, newest first.
    pub fn recent(&self, count: usize) -> Result<Vec<BatchProgress>, SchedulerError> {
        self.store
            .recent_batches(count)?
            .iter()
            .map(|batch| self.progress(batch.id))
            .collect()
    }

    /// Bytes the store takes on disk.
    pub fn store_bytes(&self) -> u64 {
        self.store.size_on_disk()
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
            .iter()
            .map(|batch| self.progress(batch.id))
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
        let board = parse_board(board)
            .map_err(|e| SchedulerError::InvalidArgument(format!("board: {e}")))?;
        let goal = parse_goal(goal)?.for_side(board.side());
        let stored = self.store.solution(&goal, &board)?;
        Ok(stored.filter(|s| Store::verified(&goal, &board, s).is_some()))
    }
}
