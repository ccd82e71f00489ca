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
//! It is made of parts that own their state, each behind its own methods, and calls go one
//! way, down this list:
//! - [`Scheduler`] (here): what the service asks, and the rules that join the parts below;
//! - `lifecycle` ([`lifecycle::Puzzles`]): each puzzle's life, from its first task to its stored
//!   answer (`bounded`: limits and weighted answers; `quarantine`: undoing a liar's work);
//! - `audits` ([`audits::Audits`]): which reports are checked, where, and what waits for them;
//!   it reports what it found ([`audits::AuditEvent`]) instead of calling back;
//! - the leaves, which call no other part: `tasks` (the queue and leases), `workers` (the
//!   registry), `batches` (counts and figures), `tables` (solvers and the batches waiting for
//!   tables), [`Ids`], and `deferred` (what a lock cycle leaves to do outside the lock).
//!
//! `intake` reads a batch's lines (no lock) and takes it in a part at a time; `reads` answers
//! from the store alone (no lock); `owned` drives a scheduler owned outright (tests, tools).

use tilesolve::pdb::PdbStore;
use tilesolve::Solver;

use crate::owners::OwnerName;
use crate::store::{ItemStatus, OwnerNodes, Store, StoredBatch, StoredItem, StoredSolution};

mod answer;
mod audits;
mod backlog;
mod batches;
mod bounded;
mod config;
mod deferred;
pub mod eta;
mod hand_backs;
mod handed_back;
mod holders;
mod ids;
mod intake;
mod judge;
mod lifecycle;
mod own_cost;
mod owned;
mod puzzle;
mod quarantine;
mod rate;
pub mod reads;
mod records;
mod starting;
mod tables;
mod tasks;
#[cfg(test)]
mod tests;
mod types;
mod workers;

pub use batches::{BatchProgress, OwnerUsage};
pub use config::{
    SchedulerConfig, Verify, DEFAULT_AUDIT_FRACTION, DEFAULT_MAX_PENDING, PROBATION_WHOLE_BUDGET,
};
pub use deferred::{AfterCycle, Deferred, DeferredDone};
pub use intake::{
    line_errors, now_unix_ms, parse_goal, parse_heuristic, read_batch, take_in, BatchTerms, Intake,
    ReadBatch, SchedulerAccess,
};
pub use owned::Owned;
pub use puzzle::subtree_budget;
pub use rate::RATE_WINDOW;
pub use records::{Flusher, TaskRecords};
pub use tables::{TableNeed, Tables};
pub use types::*;
pub use workers::{Told, WorkerDescription, WorkerView};

use audits::Audits;
use backlog::Backlog;
use batches::{Batches, ItemCounts};
use deferred::CycleOut;
use eta::EtaRange;
use hand_backs::HandBacks;
use ids::Ids;
use intake::QueuedItem;
use lifecycle::{Puzzles, PATH_BOARDS_MIN_NODES};
use own_cost::OwnCost;
use puzzle::Puzzle;
use tasks::{Tasks, LEASE_MIN_NODE_RATE};
use workers::{Workers, FIRST_LEASES, MAX_FAILURES_IN_A_ROW};

/// The parts that call no other part, and what a lock cycle leaves behind: what the puzzles'
/// lifecycle and the audits work on. Each field is a part with private state.
struct Parts {
    store: Store,
    config: SchedulerConfig,
    ids: Ids,
    tables: Tables,
    tasks: Tasks,
    workers: Workers,
    batches: Batches,
    backlog: Backlog,
    out: CycleOut,
    totals: SchedulerTotals,
    hand_backs: HandBacks,
    own_cost: OwnCost,
}

/// The coordinator's state, behind one mutex: the parts, the puzzles' lifecycle over them,
/// and the audits below it.
pub struct Scheduler {
    parts: Parts,
    puzzles: Puzzles,
    audits: Audits,
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
            parts: Parts {
                tables: Tables::new(pdbs, config.table_budget, config.build_tables),
                own_cost: OwnCost::default(),
                store,
                config,
                ids: Ids::new(incarnation),
                tasks: Tasks::default(),
                workers: Workers::default(),
                batches: Batches::default(),
                backlog: Backlog::default(),
                out: CycleOut::default(),
                totals: SchedulerTotals::default(),
                hand_backs: HandBacks::default(),
            },
            puzzles: Puzzles::default(),
            audits: Audits::new(u64::from_le_bytes(seed)),
        };
        // A damaged count costs only today's count (owners start the day again), not the start.
        match scheduler.parts.store.owner_nodes() {
            Ok(Some(nodes)) => scheduler.parts.batches.restore_owner_nodes(nodes),
            Ok(None) => {}
            Err(error) => tracing::error!(%error, "owners' nodes today not read: counted from 0"),
        }
        // One record at a time: a store of 866,432 batches collected whole took the starting
        // coordinator to 122 MiB of anonymous memory, six times what it runs in.
        let store = scheduler.parts.store.clone();
        for batch in store.each_batch() {
            let batch = batch?;
            if batch.cancelled || batch.finished.is_some() {
                continue;
            }
            let items = store.items(batch.id)?;
            let counts = batches::counts(&items);
            // The stored text of the batch's heuristic, read once, here.
            let heuristic = intake::stored_heuristic(&batch)?;
            let parts = &mut scheduler.parts;
            parts.batches.open(batch.id, counts, heuristic);
            parts.batches.set_limits(batch.id, batch.limits);
            parts.batches.set_priority(batch.id, batch.priority);
            parts.batches.set_owner(batch.id, batch.owner.clone());
            if counts.done() {
                // Finished before its figures were stored (a store from an older version).
                parts.batches.close_stored(&parts.store, batch.id)?;
                continue;
            }
            let queued = QueuedItem::stored_all(batch.id, 0, &items)?;
            scheduler.start_items(batch.id, 0, &queued)?;
        }
        Ok(scheduler)
    }

    /// A worker joins with `threads` search threads (1 to [`MAX_WORKER_THREADS`]). With the
    /// index of the worker token it presented, every registration under that token is one
    /// lineage, and none audits another's reports; without, it is a lineage of its own.
    pub fn register(
        &mut self,
        threads: u32,
        host: &str,
        token: Option<usize>,
    ) -> Result<WorkerId, SchedulerError> {
        let id = self.parts.ids.next();
        let lineage = token.map_or(Lineage::Registration(id), Lineage::Token);
        let parts = &mut self.parts;
        parts.workers.register(id, lineage, threads, host)?;
        parts.tasks.join(id, token, parts.workers.capacity(id));
        Ok(id)
    }

    /// Records what a worker said of itself when registering (its name, what `default` means
    /// on it, the table files it holds); returns the secret it must send with every call after.
    pub fn describe_worker(
        &mut self,
        worker: WorkerId,
        description: &WorkerDescription,
    ) -> Result<String, SchedulerError> {
        self.parts.workers.describe(worker, description);
        self.parts.workers.secret(worker)
    }

    /// Refuses a call for `worker` that does not carry its secret: worker ids are sequential,
    /// so without it anyone could poll, report or heartbeat for another worker.
    pub fn check_worker(&self, worker: WorkerId, secret: &str) -> Result<(), SchedulerError> {
        self.parts.workers.check_secret(worker, secret)
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
    ) -> Result<(Vec<TaskSpec>, Told), SchedulerError> {
        let now = std::time::Instant::now();
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
        let parts = &mut self.parts;
        let scale = parts.config.time_scale;
        let done = (results.len() as u64, nodes);
        let mut holding = parts.workers.reported(worker, now, done, timed, scale)?;
        parts.own_cost.reported(results.len(), &parts.config);
        for report in results {
            if hand_backs::take_returned(parts, worker, &report) {
                continue;
            }
            self.puzzles
                .apply(parts, &mut self.audits, worker, report)?;
            // A worker quarantined by one of its reports gets nothing more: the rest of its
            // reports are void, and its next call is refused. (Not refused here: what the
            // reports before did, splits and flushes, still has to be taken by the caller.)
            if parts.workers.is_quarantined(worker) {
                return Ok((Vec::new(), Told::default()));
            }
        }
        // Puzzles its reports ended make room for a batch's next ones, leased in this call.
        self.start_backlog();
        let parts = &mut self.parts;
        // A worker holds at most one running and MAX_PREFETCH waiting tasks per thread (more
        // only while its tasks are short), however often it asks: one that asks for everything
        // and never reports cannot starve the rest; and it prefetches only what the idle
        // threads elsewhere leave over (counted once its reports are applied).
        parts.tasks.set_capacity(worker, holding.threads);
        // What it holds beyond its own earnings comes from its token's pool, one fresh
        // registration's allowance: registering again and again buys no more.
        parts.tasks.set_earned(worker, holding.earned);
        holding.token_room = parts.tasks.token_room(worker, FIRST_LEASES);
        holding.idle_elsewhere = parts.tasks.idle_threads_except(worker);
        // With few puzzles left per thread, whole puzzles are split early to use every thread.
        let unfinished = self.puzzles.len() + parts.puzzles_not_started();
        holding.whole_task_budget = parts
            .config
            .whole_task_budget_now(unfinished, parts.workers.threads());
        if parts.config.verify == Verify::Sample
            && holding.whole_task_budget > parts.config.spread_task_budget
        {
            // A worker on probation runs its first few whole tasks short: their reports are
            // cheap enough to be drawn for probation and audited at once, and it passes before
            // an answer rests on the claims it keeps meanwhile. With whole 80-move boards on
            // two fresh workers, no report was cheap, and the coordinator audited every
            // answer's claims (12 CPU-s against the workers' 14). A cut never splits a puzzle
            // (`Puzzles::next_iteration`). Puzzles spread over every thread are split after a
            // short whole task anyway: cheap parts of their subtree reports are drawn instead.
            holding.short_whole_tasks = parts.workers.probation_short_left(worker);
            holding.short_whole_budget = PROBATION_WHOLE_BUDGET;
        }
        let leased = parts.tasks.lease(
            worker,
            free_slots as usize,
            holding,
            now,
            parts.config.lease_timeout,
        );
        parts.workers.took_short_whole(worker, &leased, &holding);
        parts.workers.note_idle(now, parts.tasks.idle_threads());
        let starved = leased.len() < free_slots as usize;
        hand_backs::ask_work_back(parts, worker, starved, now);
        Ok((leased, parts.workers.take_told(worker)))
    }

    /// `worker` is stopping: every task it holds goes back to the queue now (no lease timeout
    /// waited out, no attempt counted) and it is forgotten. Returns how many tasks went back.
    pub fn leave(&mut self, worker: WorkerId) -> Result<usize, SchedulerError> {
        let parts = &mut self.parts;
        parts.workers.seen(worker, std::time::Instant::now())?;
        let returned = parts.tasks.release(worker);
        parts.workers.forget(worker);
        let events = self.audits.run_stranded_here(parts);
        self.puzzles.take_events(parts, &mut self.audits, events)?;
        Ok(returned)
    }

    /// Renews the leases of the tasks a worker is running; returns what it is told of them.
    pub fn heartbeat(
        &mut self,
        worker: WorkerId,
        running: &[TaskId],
    ) -> Result<Told, SchedulerError> {
        let now = std::time::Instant::now();
        let parts = &mut self.parts;
        parts.workers.seen(worker, now)?;
        parts
            .tasks
            .renew(worker, running, now, parts.config.lease_timeout);
        Ok(parts.workers.take_told(worker))
    }

    /// What `worker` has not been told yet of the tasks it holds.
    pub fn take_told(&mut self, worker: WorkerId) -> Told {
        self.parts.workers.take_told(worker)
    }

    /// Returns expired leases to the queue, fails the puzzles of tasks that lost their worker
    /// [`MAX_ATTEMPTS`] times, and forgets silent workers.
    pub fn sweep(&mut self) -> Result<Swept, SchedulerError> {
        let now = std::time::Instant::now();
        let parts = &mut self.parts;
        let workers_lost = parts.workers.forget_silent(now, parts.config.lease_timeout);
        for &worker in &workers_lost {
            parts.tasks.set_capacity(worker, 0);
        }
        let expired = parts.tasks.expire(now);
        let mut swept = Swept {
            workers_lost,
            tasks_requeued: expired.requeued,
            puzzles_failed: 0,
        };
        for worker in expired.overdue {
            if parts.workers.failed(worker) {
                parts.shut_out(
                    worker,
                    format!(
                        "it held {MAX_FAILURES_IN_A_ROW} tasks in a row past their deadlines \
                         (their node budgets at {LEASE_MIN_NODE_RATE} nodes a second) without \
                         reporting them"
                    ),
                );
            }
        }
        let mut events = Vec::new();
        for (puzzle, task) in expired.exhausted {
            // An audit whose auditors keep falling silent is run by the coordinator.
            if let Some(entry) = parts.tasks.take_unleased_audit(task) {
                events.extend(self.audits.run_task_here(parts, entry));
                continue;
            }
            if self.puzzles.contains(puzzle) {
                swept.puzzles_failed += 1;
                self.puzzles.finish_failed(
                    parts,
                    &mut self.audits,
                    puzzle,
                    format!(
                        "task {task} lost its worker {MAX_ATTEMPTS} times \
                         (the workers running it stopped responding)"
                    ),
                )?;
            }
        }
        events.extend(self.audits.run_stranded_here(parts));
        self.puzzles.take_events(parts, &mut self.audits, events)?;
        self.start_backlog();
        Ok(swept)
    }

    /// Accepts a read batch: refuses it if it would pass the pending limit or needs tables
    /// nobody can supply, hands out its id and opens its counts. Nothing is stored yet; see
    /// [`take_in`] for the rest of its way in.
    pub fn open_batch(&mut self, read: ReadBatch) -> Result<Intake, SchedulerError> {
        self.check_capacity(read.queued())?;
        let parts = &mut self.parts;
        let keys = read.solver_keys();
        // Whether its items start as their parts are stored: all its solvers ready.
        let in_parts = parts.tables.check_obtainable(&keys, &parts.workers)?;
        let batch = parts.ids.next_batch(&parts.store)?;
        Ok(read.open(batch, in_parts, &mut parts.batches))
    }

    /// Refuses `puzzles` more unfinished puzzles if they would pass the configured limit
    /// (started ones, those waiting for tables and those being taken in), before anything of
    /// the batch is stored.
    fn check_capacity(&self, puzzles: usize) -> Result<(), SchedulerError> {
        let parts = &self.parts;
        let pending = self.puzzles.len()
            + parts.tables.waiting_items()
            + parts.batches.intake_pending()
            + parts.backlog.queued();
        if pending + puzzles > parts.config.max_pending_puzzles {
            return Err(SchedulerError::ResourceExhausted(format!(
                "the coordinator holds {pending} unfinished puzzles; {puzzles} more would pass its limit of {}: \
                 resubmit when some have finished",
                parts.config.max_pending_puzzles
            )));
        }
        Ok(())
    }

    /// Forgets a batch whose intake failed part way: it was never acknowledged, so its
    /// started puzzles are withdrawn and its counts dropped.
    pub fn abandon(&mut self, intake: &Intake) {
        let batch = intake.batch();
        let parts = &mut self.parts;
        self.puzzles.withdraw_batch(parts, &mut self.audits, batch);
        parts.tables.stop_waiting(batch);
        parts.backlog.remove(batch);
        parts.batches.close(batch);
        parts.batches.intake_done(intake.queued_left());
    }

    /// A batch's progress.
    pub fn progress(&self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        // A batch still being taken in has counts here and no record yet.
        self.progress_of(batch, self.parts.store.batch(batch)?)
    }

    /// [`Scheduler::progress`] of `batch`, whose record (if stored) is `stored`.
    fn progress_of(
        &self,
        batch: u64,
        stored: Option<StoredBatch>,
    ) -> Result<BatchProgress, SchedulerError> {
        let parts = &self.parts;
        let submitted = |progress: BatchProgress| match &stored {
            Some(stored) => BatchProgress {
                submitted_unix_ms: stored.submitted_unix_ms,
                heuristic: stored.heuristic.clone(),
                goal: stored.goal.clone().unwrap_or_default(),
                priority: stored.priority,
                retry_of: stored.retry_of,
                owner: stored.owner.clone(),
                ..progress
            },
            None => progress,
        };
        let counts = match parts.batches.counts(batch) {
            Some(counts) => counts,
            None => {
                let stored = stored.as_ref().ok_or(SchedulerError::UnknownBatch(batch))?;
                if let Some(figures) = &stored.finished {
                    return Ok(submitted(BatchProgress {
                        cancelled: stored.cancelled,
                        ..Batches::finished(batch, stored.items, figures)
                    }));
                }
                batches::counts(&parts.store.items(batch)?)
            }
        };
        let mut bounds: Vec<u32> = self.puzzles.live(batch).map(|p| p.bound).collect();
        bounds.sort_unstable();
        let workers = parts.workers.len() as u32;
        let mut progress = parts.batches.progress(batch, counts, bounds, workers);
        progress.preparing = parts.tables.preparing(batch);
        if !progress.done {
            progress.eta = self.eta(batch, counts, progress.nodes_per_second);
        }
        Ok(submitted(progress))
    }

    /// The open batches' work left in thread-seconds at `thread_rate` nodes/s a thread (see
    /// [`SchedulerTotals::work_left_thread_seconds`]).
    fn work_left(&self, thread_rate: f64) -> f64 {
        let budget = self.parts.config.whole_task_budget as f64;
        let nodes: f64 = (self.parts.batches.running())
            .map(
                |(batch, counts, rate)| match self.eta(batch, counts, rate) {
                    Some(eta) => eta.middle().as_secs_f64() * rate,
                    None => f64::from(counts.total.saturating_sub(counts.ended())) * budget,
                },
            )
            .sum();
        let thread_rate = match thread_rate > 0.0 {
            true => thread_rate,
            false => eta::NOMINAL_THREAD_RATE,
        };
        nodes / thread_rate
    }

    /// `batch`'s time left from its unfinished puzzles' searches (those not live yet wait in
    /// intake or for tables: not split).
    fn eta(&self, batch: u64, counts: ItemCounts, nodes_per_second: f64) -> Option<EtaRange> {
        let live = self.puzzles.live(batch).map(Puzzle::left);
        let unfinished = counts.total.saturating_sub(counts.ended());
        let finished = self.parts.batches.finished_costs(batch);
        eta::estimate(live, unfinished, &finished, nodes_per_second)
    }

    /// The progress of up to `count` stored batches after (or, `newest_first`, before) the
    /// batch `after`.
    pub fn list(
        &self,
        after: Option<u64>,
        count: usize,
        newest_first: bool,
    ) -> Result<Vec<BatchProgress>, SchedulerError> {
        self.parts
            .store
            .batches_page(after, count, newest_first)?
            .into_iter()
            .map(|batch| self.progress_of(batch.id, Some(batch)))
            .collect()
    }

    /// Totals since start and the queue now.
    /// What each owner has open, and has spent today.
    pub fn owner_usage(&self) -> std::collections::BTreeMap<OwnerName, OwnerUsage> {
        self.parts.batches.owner_usage()
    }

    /// The nodes each owner's batches searched today, to be kept in the store.
    pub fn owner_nodes(&self) -> OwnerNodes {
        self.parts.batches.owner_nodes().clone()
    }

    pub fn totals(&self) -> SchedulerTotals {
        let parts = &self.parts;
        let (queued, leased) = parts.tasks.counts();
        let running = parts.tasks.running().min(leased);
        let workers = parts.workers.views();
        let nodes_per_second: f64 = workers.iter().map(|w| w.nodes_per_second).sum();
        let thread_rate = match running {
            0 => 0.0,
            running => nodes_per_second / running as f64,
        };
        SchedulerTotals {
            tasks_queued: queued,
            tasks_running: running,
            tasks_prefetched: leased - running,
            puzzles_pending: (self.puzzles.len()
                + parts.tables.waiting_items()
                + parts.backlog.queued()) as u64,
            puzzles_live: self.puzzles.len() as u64,
            workers: workers.len() as u64,
            worker_threads: workers.iter().map(|w| u64::from(w.threads)).sum(),
            nodes_per_second,
            work_left_thread_seconds: self.work_left(thread_rate),
            idle_thread_seconds: parts.workers.idle_seconds(std::time::Instant::now()),
            coordinator_seconds_per_task: parts.own_cost.measured().unwrap_or(0.0),
            ..parts.totals.clone()
        }
    }

    /// Removes a finished batch and its items (and, with `solutions`, its answers and the
    /// boards on their paths); returns (items, boards) removed. A batch still running is left.
    pub fn prune(&mut self, batch: u64, solutions: bool) -> Result<(usize, usize), SchedulerError> {
        let store = &self.parts.store;
        let finished = store.batch(batch)?.is_some_and(|b| b.finished.is_some());
        if !finished || self.parts.batches.counts(batch).is_some() {
            return Ok((0, 0));
        }
        Ok(store.remove_batch(batch, solutions)?)
    }

    /// Cancels a batch: its unfinished items end cancelled, not failed (their tasks are
    /// withdrawn and workers told); answers already found stay. The cycle flushes the store after releasing
    /// the lock, before its caller answers.
    pub fn cancel(&mut self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        let mut stored = self
            .parts
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
        let parts = &mut self.parts;
        parts.store.put_batch(&stored)?;
        let cancelled = ItemStatus::Cancelled;
        (self.puzzles).end_live(parts, &mut self.audits, batch, cancelled.clone())?;
        // Then the items waiting for tables and those not started yet.
        let waited = parts.tables.stop_waiting(batch);
        if parts.backlog.remove(batch).is_some() || waited {
            self.puzzles
                .end_unstarted(parts, batch, cancelled, u32::MAX)?;
        }
        parts.out.flush_due = true;
        self.progress(batch).map(|progress| BatchProgress {
            cancelled: true,
            ..progress
        })
    }

    /// What this lock cycle leaves to do once the lock is released (see [`AfterCycle`]).
    pub fn take_cycle(&mut self) -> AfterCycle {
        let parts = &mut self.parts;
        let mut after = parts.out.take(parts.tasks.take_newly_queued());
        after.workers_told = parts.workers.take_newly_told();
        after
    }

    /// Takes deferred work its caller ran outside the lock.
    pub fn finish_deferred(&mut self, done: DeferredDone) -> Result<(), SchedulerError> {
        let parts = &mut self.parts;
        match done {
            DeferredDone::Split(split) => self.puzzles.finish_split(parts, &mut self.audits, split),
            DeferredDone::Audit(audit) => {
                let events = self.audits.finish_here(parts, audit);
                self.puzzles.take_events(parts, &mut self.audits, events)
            }
            DeferredDone::Withdrawal(withdrawal) => {
                self.puzzles
                    .finish_withdrawal(parts, &mut self.audits, withdrawal)
            }
        }
    }

    /// The connected workers, each with the tasks it holds.
    pub fn workers(&self) -> Vec<WorkerView> {
        let mut views = self.parts.workers.views();
        for view in &mut views {
            view.tasks_held = self.parts.tasks.held(view.id);
        }
        views
    }

    /// Workers that left, were lost or were quarantined lately (see `GONE_SHOWN`), newest first.
    pub fn gone_workers(&self) -> Vec<WorkerView> {
        self.parts.workers.gone_views()
    }

    /// The connected workers holding the table file `name`, with the checksums they stated.
    pub fn table_holders(&self, name: &str) -> Vec<(WorkerId, u64)> {
        self.parts.workers.holders(name)
    }

    /// (queued, running) tasks of `batch` now: for the dashboard's batch page.
    pub fn batch_tasks(&self, batch: u64) -> (u64, u64) {
        self.parts.tasks.batch_counts(batch)
    }

    /// The solvers, and the batches waiting for tables.
    pub fn tables(&self) -> &Tables {
        &self.parts.tables
    }

    /// A solver the table supply loaded (outside the lock), with what it is doing for the
    /// solvers still missing; starts every waiting batch whose solvers are now all ready and
    /// returns their ids.
    pub fn install_solvers(
        &mut self,
        loaded: Vec<(SolverKey, Solver)>,
        preparing: Option<std::collections::HashMap<SolverKey, String>>,
    ) -> Result<Vec<u64>, SchedulerError> {
        let parts = &mut self.parts;
        for (key, solver) in loaded {
            parts.tables.install(key, solver);
        }
        if let Some(preparing) = preparing {
            parts.tables.set_preparing(preparing);
        }
        let ready = parts.tables.take_ready();
        for &batch in &ready {
            let items = self.parts.store.items(batch)?;
            let queued = QueuedItem::stored_all(batch, 0, &items)?;
            self.start_items(batch, 0, &queued)?;
        }
        Ok(ready)
    }

    /// Fails the waiting items of every batch that waits for `key`, with `reason` (its tables
    /// could not be obtained); returns those batches. The cycle flushes them.
    pub fn fail_waiting(
        &mut self,
        key: &SolverKey,
        reason: &str,
    ) -> Result<Vec<u64>, SchedulerError> {
        let parts = &mut self.parts;
        let batches = parts.tables.waiting_on(key);
        for &batch in &batches {
            parts.tables.stop_waiting(batch);
            // Those waiting: every queued item not live before the backlog, if any.
            let below = parts.backlog.get(batch).map_or(u32::MAX, |held| held.next);
            let failed = ItemStatus::Failed(reason.to_string());
            self.puzzles.end_unstarted(parts, batch, failed, below)?;
        }
        parts.out.flush_due = true;
        Ok(batches)
    }

    /// The store, to read at length without the scheduler's lock ([`reads`], exports).
    pub fn store(&self) -> Store {
        self.parts.store.clone()
    }
}

impl Parts {
    /// Puzzles accepted but not started: being taken in, or waiting in the backlog. With the
    /// started ones, the unfinished puzzles the threads are shared among.
    fn puzzles_not_started(&self) -> usize {
        self.batches.intake_pending() + self.backlog.queued()
    }

    /// Shuts `worker` out for `reason` without doubting its reports (it failed, it did not
    /// lie): every further call is refused, its tasks go back to the queue, and the attempts
    /// its failures cost are given back, so they are retried elsewhere.
    fn shut_out(&mut self, worker: WorkerId, reason: String) {
        tracing::warn!(worker, %reason, "worker shut out: its tasks go to others");
        self.workers.quarantine(worker, reason);
        self.tasks.release(worker);
        self.tasks.forgive_failures(worker);
        self.totals.workers_quarantined += 1;
    }

    /// Counts and writes an item that ended with `status` (`item`: as its live puzzle had it,
    /// or as stored for one that never started; None when its record is gone), and closes its
    /// batch when it was the last. Each answer is not flushed on its own (sled writes it out
    /// within half a second, and a lost answer is recomputed from the flushed batch); a
    /// finished batch is flushed after the lock cycle, outside the lock ([`AfterCycle`]).
    fn end_item(
        &mut self,
        (batch, index): PuzzleId,
        item: Option<StoredItem>,
        status: ItemStatus,
    ) -> Result<(), SchedulerError> {
        match status {
            ItemStatus::Solved(_) => self.totals.puzzles_solved += 1,
            ItemStatus::Failed(_) => self.totals.puzzles_failed += 1,
            ItemStatus::Bounded(_) => self.totals.puzzles_bounded += 1,
            ItemStatus::Cancelled => self.totals.puzzles_cancelled += 1,
            ItemStatus::Queued => {}
        }
        let batch_done = self.batches.item_finished(batch, &status);
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
        if batch_done {
            self.batches.close_stored(&self.store, batch)?;
            self.out.flush_due = true;
        }
        Ok(())
    }

    /// The solver for a goal and heuristic: ready for every started puzzle (see `tables`).
    fn solver(&self, key: &SolverKey) -> Result<&Solver, SchedulerError> {
        self.tables.solver(key)
    }
}
