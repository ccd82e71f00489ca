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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use thiserror::Error;
use tilesolve::batch_file::BatchLine;
use tilesolve::heuristic::HeuristicChoice;
use tilesolve::moves::{moves_to_string, replay};
use tilesolve::pdb::{default_memory_budget, PdbEvent, PdbStore};
use tilesolve::search::{Counters, PartSize};
pub use tilesolve::task::TaskOutcome;
use tilesolve::task::Work;
use tilesolve::{parse_board, Board, Direction, Goal, Solution, Solver};

use crate::frontier::{split_iteration, BalanceParams, Frontier, SizeHistory};
use crate::queue::ReadyQueue;
use crate::store::{
    ItemStatus, RecordedOutcome, SearchState, Store, StoreError, StoredItem, StoredSolution,
    TaskRecord,
};

pub type TaskId = u64;
pub type WorkerId = u64;
type PuzzleId = (u64, u32);

/// Most lines a batch may hold.
pub const MAX_BATCH_LINES: usize = 100_000;
/// Attempts (failures reported by a worker, or leases lost with their worker) before a task's
/// puzzle is marked failed.
pub const MAX_ATTEMPTS: u32 = 3;
/// Most search threads one worker may declare.
pub const MAX_WORKER_THREADS: u32 = 4096;
/// Most tasks a worker may hold per thread beyond the one it runs (prefetched).
pub const MAX_PREFETCH: u32 = 4;
/// Longest submitted line text kept with an item that failed to parse.
const MAX_KEPT_TEXT: usize = 200;

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
}

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
            max_pending_puzzles: 1_000_000,
            profile_depth: 4,
            table_budget: default_memory_budget(),
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
    ResourceExhausted(String),
    #[error("pattern database: {0}")]
    Pdb(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// What a worker is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    pub id: TaskId,
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

impl TaskReport {
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

/// A batch's progress.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchProgress {
    pub batch: u64,
    pub total: u32,
    pub solved: u32,
    pub failed: u32,
    pub done: bool,
    pub bounds: Vec<u32>,
    pub nodes: u64,
    pub nodes_per_second: f64,
    pub workers: u32,
    /// Since the batch was submitted to (or resumed by) this process.
    pub seconds: f64,
}

struct Puzzle {
    board: Board,
    goal: Board,
    heuristic: String,
    bound: u32,
    next_bound: u32,
    outstanding: HashSet<TaskId>,
    nodes: u64,
    started: Instant,
    /// Sizes measured in the iteration in progress (the next split predicts from them).
    history: SizeHistory,
    /// The bound of an iteration being split outside the lock (the puzzle has no tasks then).
    splitting: Option<u32>,
}

struct Lease {
    worker: WorkerId,
    expires: Instant,
    since: Instant,
}

struct TaskEntry {
    spec: TaskSpec,
    puzzle: PuzzleId,
    lease: Option<Lease>,
    attempts: u32,
    /// Its wave (whole task or split iteration) and the nodes the policy predicts it will
    /// expand: its place in the ready queue.
    wave: u64,
    predicted: u64,
}

struct WorkerInfo {
    threads: u32,
    host: String,
    /// What `default` means on the worker, e.g. "5x5 pdb:6-6-6-6-max".
    default_heuristics: Vec<String>,
    registered: Instant,
    last_seen: Instant,
    nodes: u64,
    tasks_done: u64,
    /// (when, nodes reported so far) at each poll within the last [`RATE_WINDOW`].
    reports: VecDeque<(Instant, u64)>,
}

/// The span a worker's nodes/s is measured over: long enough to smooth out tasks finishing in
/// bursts, short enough to show a worker that has gone idle.
const RATE_WINDOW: Duration = Duration::from_secs(30);

impl WorkerInfo {
    fn record(&mut self, now: Instant) {
        self.reports.push_back((now, self.nodes));
        while self
            .reports
            .front()
            .is_some_and(|&(when, _)| now.duration_since(when) > RATE_WINDOW)
        {
            self.reports.pop_front();
        }
    }

    /// Nodes per second over the window, counted from the report before it when there is one.
    fn nodes_per_second(&self, now: Instant) -> f64 {
        let (since, before) = self
            .reports
            .front()
            .copied()
            .unwrap_or((self.registered, 0));
        let seconds = now.duration_since(since).as_secs_f64();
        if seconds < 1e-3 {
            return 0.0;
        }
        (self.nodes - before) as f64 / seconds
    }
}

/// A connected worker, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerView {
    pub id: WorkerId,
    pub host: String,
    pub threads: u32,
    /// What `default` means on the worker, e.g. "5x5 pdb:6-6-6-6-max".
    pub default_heuristics: Vec<String>,
    /// Expanded nodes reported per second over the last 30 seconds.
    pub nodes_per_second: f64,
    pub tasks_done: u64,
    pub seconds_since_seen: f64,
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
}

/// Makes the store's writes durable and writes task records; held outside the scheduler's lock,
/// because a flush waits for the disk and everyone else would wait for the flush, and records
/// (encoded and written per task) cost as much as the rest of a poll.
#[derive(Clone)]
pub struct Flusher(Store);

impl Flusher {
    pub fn flush(&self) -> Result<(), SchedulerError> {
        Ok(self.0.flush()?)
    }

    /// Writes the records taken with [`Scheduler::take_records`].
    pub fn write(&self, records: TaskRecords) -> Result<(), SchedulerError> {
        for (goal, board, task, record) in records.0 {
            self.0.put_task_record(&goal, &board, task, &record)?;
        }
        Ok(())
    }
}

/// Task records made under the scheduler's lock, to be written after it is released.
#[derive(Debug, Default)]
pub struct TaskRecords(Vec<(Board, Board, TaskId, TaskRecord)>);

/// An iteration to split, taken out of the scheduler ([`Scheduler::take_splits`]) so that the
/// split, milliseconds of CPU for a fine frontier, runs without holding the scheduler's lock:
/// leases to other workers go on meanwhile.
pub struct PendingSplit {
    puzzle: PuzzleId,
    bound: u32,
    board: Board,
    solver: Solver,
    history: SizeHistory,
    nodes_so_far: u64,
    params: BalanceParams,
}

/// A split done outside the lock, for [`Scheduler::finish_split`].
pub struct FinishedSplit {
    puzzle: PuzzleId,
    bound: u32,
    frontier: Frontier,
    history: SizeHistory,
}

impl PendingSplit {
    pub fn run(self) -> FinishedSplit {
        let frontier = split_iteration(
            &self.board,
            &self.solver,
            self.bound,
            &self.history,
            self.nodes_so_far,
            self.params,
            &|_| true,
        );
        FinishedSplit {
            puzzle: self.puzzle,
            bound: self.bound,
            frontier,
            history: self.history,
        }
    }
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

pub struct Scheduler {
    store: Store,
    pdbs: PdbStore,
    config: SchedulerConfig,
    solvers: HashMap<(Board, String), Solver>,
    /// Ordered by (batch, index), so one batch's puzzles are a range.
    puzzles: BTreeMap<PuzzleId, Puzzle>,
    tasks: HashMap<TaskId, TaskEntry>,
    ready: ReadyQueue<TaskId>,
    waves: u64,
    workers: HashMap<WorkerId, WorkerInfo>,
    /// Cancellations not yet told to the worker holding the task.
    cancelled: HashMap<WorkerId, Vec<TaskId>>,
    batch_started: HashMap<u64, Instant>,
    /// Seconds a batch took, once it is done (so its figures stop drifting).
    batch_seconds: HashMap<u64, f64>,
    /// (total, solved, failed) of batches this process has seen, so progress is cheap to ask.
    batch_counts: HashMap<u64, (u32, u32, u32)>,
    batch_nodes: HashMap<u64, u64>,
    next_id: u64,
    /// A batch finished since the last [`Scheduler::take_flush_due`].
    flush_due: bool,
    /// Records not yet taken by [`Scheduler::take_records`].
    records: TaskRecords,
    /// Splits not yet taken by [`Scheduler::take_splits`].
    splits: Vec<PendingSplit>,
    totals: SchedulerTotals,
}

/// A request's heuristic name; empty means `default`.
fn parse_heuristic(name: &str) -> Result<HeuristicChoice, SchedulerError> {
    let name = if name.is_empty() { "default" } else { name };
    name.parse()
        .map_err(|e| SchedulerError::InvalidArgument(format!("heuristic: {e}")))
}

/// A request's goal; empty means the default goal.
fn parse_goal(text: &str) -> Result<Goal, SchedulerError> {
    if text.is_empty() {
        return Ok(Goal::BlankLast);
    }
    text.parse()
        .map_err(|e| SchedulerError::InvalidArgument(format!("goal: {e}")))
}

/// Why a worker's report cannot be right for its task, if it cannot. A subtree task searches
/// exactly at its bound (nothing shorter exists: every smaller bound was exhausted or is below an
/// admissible estimate), and a whole-puzzle task starts at a proven lower bound; a report outside
/// that comes from a faulty worker, and taking it could store a path that is not optimal.
fn implausible(spec: &TaskSpec, outcome: &TaskOutcome) -> Option<String> {
    let bound = spec.bound;
    match outcome {
        TaskOutcome::Found(suffix) => {
            let length = (spec.path.len() + suffix.len()) as u32;
            let fits = if spec.iterate {
                length >= bound
            } else {
                length == bound
            };
            (!fits).then(|| format!("a worker reported a {length}-move answer at bound {bound}"))
        }
        TaskOutcome::Exceeded(next) if *next <= bound => Some(format!(
            "a worker reported next bound {next}, not above bound {bound}"
        )),
        TaskOutcome::BudgetSpent(at) if *at < bound => Some(format!(
            "a worker reported spending its budget at bound {at}, below {bound}"
        )),
        TaskOutcome::Split { pruned_min_f, .. } if *pruned_min_f <= bound => Some(format!(
            "a worker reported pruned f {pruned_min_f}, not above bound {bound}"
        )),
        _ => None,
    }
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

/// The submitted text kept with an item: a hostile megabyte line is not stored whole.
fn kept_text(text: &str) -> String {
    match text.char_indices().nth(MAX_KEPT_TEXT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// (total, solved, failed) of a batch's items.
fn counts(items: &[StoredItem]) -> (u32, u32, u32) {
    let solved = items
        .iter()
        .filter(|i| matches!(i.status, ItemStatus::Solved(_)))
        .count() as u32;
    let failed = items
        .iter()
        .filter(|i| matches!(i.status, ItemStatus::Failed(_)))
        .count() as u32;
    (items.len() as u32, solved, failed)
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Scheduler {
    /// A scheduler over `store` that resumes every unfinished item of every stored batch.
    pub fn new(
        store: Store,
        pdbs: PdbStore,
        config: SchedulerConfig,
    ) -> Result<Scheduler, SchedulerError> {
        let incarnation = store.next_incarnation()?;
        let mut scheduler = Scheduler {
            store,
            pdbs,
            config,
            solvers: HashMap::new(),
            puzzles: BTreeMap::new(),
            tasks: HashMap::new(),
            ready: ReadyQueue::default(),
            waves: 0,
            workers: HashMap::new(),
            cancelled: HashMap::new(),
            batch_started: HashMap::new(),
            batch_seconds: HashMap::new(),
            batch_counts: HashMap::new(),
            batch_nodes: HashMap::new(),
            next_id: incarnation << 40,
            flush_due: false,
            records: TaskRecords::default(),
            splits: Vec::new(),
            totals: SchedulerTotals::default(),
        };
        for batch in scheduler.store.batches()? {
            if batch.cancelled {
                continue;
            }
            let items = scheduler.store.items(batch.id)?;
            scheduler.batch_counts.insert(batch.id, counts(&items));
            scheduler.batch_started.insert(batch.id, Instant::now());
            for (index, item) in items.into_iter().enumerate() {
                if item.status == ItemStatus::Queued {
                    scheduler.start_item(batch.id, index as u32, &item, &batch.heuristic)?;
                }
            }
        }
        Ok(scheduler)
    }

    /// A new wave: a puzzle's whole task or one split iteration, queued behind the waves before
    /// it (see [`ReadyQueue`]).
    fn next_wave(&mut self) -> u64 {
        self.waves += 1;
        self.waves
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Bytes this scheduler's pattern tables may take (see [`SchedulerConfig::table_budget`]).
    pub fn table_budget(&self) -> u64 {
        self.config.table_budget
    }

    /// The solver for a goal and heuristic name, loading (or building) pattern databases.
    fn solver(&mut self, goal: &Board, heuristic: &str) -> Result<&Solver, SchedulerError> {
        let key = (*goal, heuristic.to_string());
        if !self.solvers.contains_key(&key) {
            let choice: HeuristicChoice = heuristic
                .parse()
                .map_err(|e| SchedulerError::InvalidArgument(format!("{e}")))?;
            let quiet = |_: PdbEvent<'_>| {};
            let budget = self.config.table_budget;
            let built = choice
                .build(goal, budget, &self.pdbs, &quiet)
                .map_err(|e| SchedulerError::Pdb(e.to_string()))?;
            let name = choice.resolve(goal, budget).to_string();
            self.solvers
                .insert(key.clone(), Solver::with_heuristic(*goal, built, name));
        }
        Ok(&self.solvers[&key])
    }

    /// Accepts a batch: parses every line (bad lines become failed items naming the line and
    /// the reason), answers boards already in the store, writes the batch to disk, and queues
    /// the rest.
    pub fn submit(
        &mut self,
        lines: &[String],
        heuristic: &str,
        goal: &str,
    ) -> Result<Submitted, SchedulerError> {
        if lines.len() > MAX_BATCH_LINES {
            return Err(SchedulerError::ResourceExhausted(format!(
                "a batch may hold at most {MAX_BATCH_LINES} lines, not {}",
                lines.len()
            )));
        }
        let choice = parse_heuristic(heuristic)?;
        let goal = parse_goal(goal)?;
        let mut items = Vec::new();
        let (mut invalid, mut from_store) = (0, 0);
        for (number, raw) in lines.iter().enumerate() {
            let Some(line) = BatchLine::read(number + 1, raw) else {
                continue;
            };
            let mut item = StoredItem {
                text: kept_text(line.board),
                line: Some(line.number as u32),
                board: None,
                goal: None,
                status: ItemStatus::Queued,
            };
            let parsed = parse_board(line.board).and_then(|board| {
                let goal = goal.for_side(board.side());
                board.check_solvable(&goal).map(|()| (board, goal))
            });
            match parsed {
                Ok((board, goal)) => {
                    item.board = Some(board.to_string());
                    item.goal = Some(goal.to_string());
                    if let Some(stored) = self.store.solution(&goal, &board)? {
                        if Store::verified(&goal, &board, &stored).is_some() {
                            item.status = ItemStatus::Solved(stored);
                            from_store += 1;
                        }
                    }
                }
                Err(error) => {
                    item.status = ItemStatus::Failed(format!("line {}: {error}", line.number));
                    invalid += 1;
                }
            }
            items.push(item);
        }
        if items.is_empty() {
            return Err(SchedulerError::InvalidArgument(
                "the batch holds no boards (only blank or comment lines)".into(),
            ));
        }
        let queued = items
            .iter()
            .filter(|i| i.status == ItemStatus::Queued)
            .count();
        self.check_capacity(queued)?;
        let batch = self
            .store
            .create_batch(&choice.to_string(), &items, now_unix_ms())?;
        self.batch_started.insert(batch, Instant::now());
        self.batch_counts.insert(batch, counts(&items));
        for (index, item) in items.iter().enumerate() {
            if item.status == ItemStatus::Queued {
                self.start_item(batch, index as u32, item, &choice.to_string())?;
            }
        }
        Ok(Submitted {
            batch,
            items: items.len() as u32,
            invalid,
            from_store,
        })
    }

    /// Refuses `puzzles` more unfinished puzzles if they would pass the configured limit. Called
    /// with the count of board lines before any work is done for a batch (a refused batch must
    /// not first trigger a pattern database build), and again with the exact count in `submit`.
    pub fn check_capacity(&self, puzzles: usize) -> Result<(), SchedulerError> {
        if self.puzzles.len() + puzzles > self.config.max_pending_puzzles {
            return Err(SchedulerError::ResourceExhausted(format!(
                "the coordinator holds {} unfinished puzzles; {puzzles} more would pass its limit of {}: \
                 resubmit when some have finished",
                self.puzzles.len(),
                self.config.max_pending_puzzles
            )));
        }
        Ok(())
    }

    /// Makes sure the pattern databases a batch needs are on disk, building any that are
    /// missing. Called without the scheduler's lock held, because a build can take minutes and
    /// heartbeats must not wait for it; `submit` then only loads the files.
    pub fn prepare(
        pdbs: &PdbStore,
        lines: &[String],
        heuristic: &str,
        goal: &str,
        table_budget: u64,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<(), SchedulerError> {
        // Bad names are reported by `submit`; there is nothing to build for them.
        let (Ok(choice), Ok(goal)) = (parse_heuristic(heuristic), parse_goal(goal)) else {
            return Ok(());
        };
        let mut sides: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter_map(|(number, raw)| BatchLine::read(number + 1, raw))
            .filter_map(|line| parse_board(line.board).ok().map(|board| board.side()))
            .collect();
        sides.sort_unstable();
        sides.dedup();
        for side in sides {
            choice
                .build(&goal.for_side(side), table_budget, pdbs, events)
                .map_err(|e| SchedulerError::Pdb(e.to_string()))?;
        }
        Ok(())
    }

    /// Queues the whole-puzzle task of a stored, queued item.
    fn start_item(
        &mut self,
        batch: u64,
        index: u32,
        item: &StoredItem,
        heuristic: &str,
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
        // Tasks name the heuristic as the batch asked for it, so each worker resolves `default`
        // within its own memory budget.
        let requested = parse_heuristic(heuristic)?.to_string();
        let lower_bound = self
            .store
            .search_state(&goal, &board)?
            .map_or(0, |s| s.lower_bound);
        let bound = self
            .solver(&goal, heuristic)?
            .estimate(&board)
            .max(lower_bound);
        let puzzle = (batch, index);
        self.puzzles.insert(
            puzzle,
            Puzzle {
                board,
                goal,
                heuristic: heuristic.to_string(),
                bound,
                next_bound: u32::MAX,
                outstanding: HashSet::new(),
                nodes: 0,
                started: Instant::now(),
                history: SizeHistory::default(),
                splitting: None,
            },
        );
        let spec = TaskSpec {
            id: 0,
            board,
            goal,
            heuristic: requested,
            path: Vec::new(),
            bound,
            iterate: true,
            node_budget: self.config.whole_task_budget,
            profile_depth: 4,
        };
        let (wave, predicted) = (self.next_wave(), self.config.whole_task_budget);
        self.add_task(puzzle, spec, wave, predicted);
        Ok(())
    }

    fn add_task(&mut self, puzzle: PuzzleId, mut spec: TaskSpec, wave: u64, predicted: u64) {
        let id = self.next_id();
        spec.id = id;
        if let Some(p) = self.puzzles.get_mut(&puzzle) {
            p.outstanding.insert(id);
        }
        self.tasks.insert(
            id,
            TaskEntry {
                spec,
                puzzle,
                lease: None,
                attempts: 0,
                wave,
                predicted,
            },
        );
        self.ready.push(puzzle.0, wave, predicted, id);
    }

    /// A worker joins with `threads` search threads (1 to [`MAX_WORKER_THREADS`]).
    pub fn register(&mut self, threads: u32, host: &str) -> Result<WorkerId, SchedulerError> {
        if !(1..=MAX_WORKER_THREADS).contains(&threads) {
            return Err(SchedulerError::InvalidArgument(format!(
                "threads must be 1 to {MAX_WORKER_THREADS}, not {threads}"
            )));
        }
        let id = self.next_id();
        let now = Instant::now();
        self.workers.insert(
            id,
            WorkerInfo {
                threads,
                host: host.chars().take(100).collect(),
                default_heuristics: Vec::new(),
                registered: now,
                last_seen: now,
                nodes: 0,
                tasks_done: 0,
                reports: VecDeque::new(),
            },
        );
        Ok(id)
    }

    /// A worker reports results and asks for up to `free_slots` tasks (at most [`MAX_PREFETCH`]
    /// per thread beyond its threads). Returns its new tasks and the tasks it holds that were
    /// cancelled.
    pub fn poll(
        &mut self,
        worker: WorkerId,
        free_slots: u32,
        results: Vec<TaskReport>,
    ) -> Result<(Vec<TaskSpec>, Vec<TaskId>), SchedulerError> {
        let now = Instant::now();
        // A worker this process does not know (forgotten by the sweep, or registered with a
        // coordinator that has since restarted) must register again; its results are dropped
        // because its leases are gone.
        let info = self
            .workers
            .get_mut(&worker)
            .ok_or(SchedulerError::UnknownWorker(worker))?;
        info.last_seen = now;
        info.tasks_done += results.len() as u64;
        info.nodes += results.iter().map(|report| report.nodes).sum::<u64>();
        info.record(now);
        let free_slots = free_slots.min(info.threads.saturating_mul(1 + MAX_PREFETCH)) as usize;
        for report in results {
            self.apply(worker, report)?;
        }
        let mut leased = Vec::new();
        while leased.len() < free_slots {
            let Some(id) = self.ready.pop() else {
                break;
            };
            // Withdrawn tasks leave their ids behind; a leased task is never handed out twice.
            let Some(entry) = self.tasks.get_mut(&id).filter(|t| t.lease.is_none()) else {
                continue;
            };
            entry.lease = Some(Lease {
                worker,
                expires: now + self.config.lease_timeout,
                since: now,
            });
            leased.push(entry.spec.clone());
        }
        Ok((leased, self.cancelled.remove(&worker).unwrap_or_default()))
    }

    /// Whether some task may be waiting for a worker (withdrawn tasks may still be counted).
    pub fn has_ready_tasks(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Renews the leases of the tasks a worker is running; returns its cancellations.
    pub fn heartbeat(
        &mut self,
        worker: WorkerId,
        running: &[TaskId],
    ) -> Result<Vec<TaskId>, SchedulerError> {
        let now = Instant::now();
        self.workers
            .get_mut(&worker)
            .ok_or(SchedulerError::UnknownWorker(worker))?
            .last_seen = now;
        for id in running {
            if let Some(Lease {
                worker: holder,
                expires,
                ..
            }) = self.tasks.get_mut(id).and_then(|t| t.lease.as_mut())
            {
                if *holder == worker {
                    *expires = now + self.config.lease_timeout;
                }
            }
        }
        Ok(self.cancelled.remove(&worker).unwrap_or_default())
    }

    /// Returns expired leases to the queue, fails the puzzles of tasks that lost their worker
    /// [`MAX_ATTEMPTS`] times, and forgets silent workers.
    pub fn sweep(&mut self) -> Result<Swept, SchedulerError> {
        let now = Instant::now();
        let timeout = self.config.lease_timeout;
        let mut swept = Swept::default();
        self.workers.retain(|&id, info| {
            let alive = now.duration_since(info.last_seen) < timeout;
            if !alive {
                swept.workers_lost.push(id);
            }
            alive
        });
        for id in &swept.workers_lost {
            self.cancelled.remove(id);
        }
        let mut expired: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.lease.as_ref().is_some_and(|lease| lease.expires <= now))
            .map(|(id, _)| *id)
            .collect();
        expired.sort_unstable();
        let mut exhausted = Vec::new();
        // Requeued ahead of their batch's other tasks, in their original order: they were leased
        // first, so they are the ones an iteration is waiting for.
        for &id in &expired {
            let Some(entry) = self.tasks.get_mut(&id) else {
                continue;
            };
            entry.lease = None;
            entry.attempts += 1;
            if entry.attempts >= MAX_ATTEMPTS {
                exhausted.push((entry.puzzle, id));
            } else {
                self.ready.push(entry.puzzle.0, entry.wave, u64::MAX, id);
                swept.tasks_requeued += 1;
            }
        }
        for (puzzle, task) in exhausted {
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
        Ok(swept)
    }

    fn apply(&mut self, worker: WorkerId, report: TaskReport) -> Result<(), SchedulerError> {
        let (task, nodes) = (report.task, report.nodes);
        // A result for a task this worker no longer holds (expired, cancelled, reassigned) is
        // ignored: whoever holds it now will report.
        let held = self
            .tasks
            .get(&task)
            .and_then(|t| t.lease.as_ref())
            .is_some_and(|l| l.worker == worker);
        if !held {
            return Ok(());
        }
        let Some(entry) = self.tasks.remove(&task) else {
            return Ok(());
        };
        let puzzle_id = entry.puzzle;
        let outcome = match implausible(&entry.spec, &report.outcome) {
            Some(reason) => TaskOutcome::Failed(reason),
            None => report.outcome.clone(),
        };
        self.record(&entry, &report, &outcome)?;
        *self.batch_nodes.entry(puzzle_id.0).or_default() += nodes;
        self.totals.nodes += nodes;
        self.totals.tasks_done += 1;
        enum Next {
            Wait,
            Split(Vec<Direction>),
            Solved(Vec<Direction>),
            Iterate(u32),
            Retry,
            Fail(String),
        }
        let next = {
            let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) else {
                return Ok(());
            };
            puzzle.nodes += nodes;
            puzzle.outstanding.remove(&task);
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
                TaskOutcome::Failed(_) if entry.attempts + 1 < MAX_ATTEMPTS => {
                    puzzle.outstanding.insert(task);
                    Next::Retry
                }
                TaskOutcome::Failed(reason) => {
                    Next::Fail(format!("failed {MAX_ATTEMPTS} times: {reason}"))
                }
            }
        };
        match next {
            Next::Wait => Ok(()),
            Next::Split(children) => {
                let spec = entry.spec;
                let predicted = entry.predicted / children.len().max(1) as u64;
                for direction in children {
                    let Some((board, _)) = spec.board.apply(direction) else {
                        continue;
                    };
                    let mut path = spec.path.clone();
                    path.push(direction);
                    self.add_task(
                        puzzle_id,
                        TaskSpec {
                            id: 0,
                            board,
                            path,
                            ..spec.clone()
                        },
                        entry.wave,
                        predicted,
                    );
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
                let attempts = entry.attempts + 1;
                self.tasks.insert(
                    task,
                    TaskEntry {
                        spec: entry.spec,
                        puzzle: puzzle_id,
                        lease: None,
                        attempts,
                        wave: entry.wave,
                        predicted: entry.predicted,
                    },
                );
                self.ready
                    .push(puzzle_id.0, entry.wave, entry.predicted, task);
                Ok(())
            }
            Next::Fail(reason) => self.finish_failed(puzzle_id, reason),
        }
    }

    /// Keeps a finished task's size and time in the store, for replaying the run (failures are
    /// not part of the search and are not kept, nor are the tasks of puzzles solved whole).
    fn record(
        &mut self,
        entry: &TaskEntry,
        report: &TaskReport,
        outcome: &TaskOutcome,
    ) -> Result<(), SchedulerError> {
        let recorded = match outcome {
            TaskOutcome::Found(suffix) => {
                RecordedOutcome::Found((entry.spec.path.len() + suffix.len()) as u32)
            }
            TaskOutcome::Exceeded(next) => RecordedOutcome::Exceeded(*next),
            TaskOutcome::BudgetSpent(at) => RecordedOutcome::BudgetSpent(*at),
            TaskOutcome::Split { .. } => RecordedOutcome::Split,
            TaskOutcome::Failed(_) => return Ok(()),
        };
        // A puzzle solved by its whole-puzzle task has nothing to replay: its stored solution
        // already says what it cost.
        if matches!(recorded, RecordedOutcome::Found(_)) && entry.spec.iterate {
            return Ok(());
        }
        let Some(puzzle) = self.puzzles.get(&entry.puzzle) else {
            return Ok(());
        };
        let record = TaskRecord {
            batch: entry.puzzle.0,
            index: entry.puzzle.1,
            bound: entry.spec.bound,
            path: moves_to_string(&entry.spec.path),
            iterate: entry.spec.iterate,
            outcome: recorded,
            nodes: report.nodes,
            seconds: report.seconds,
            // Lease to report, less the time it waited on the worker behind another task.
            round_trip_seconds: entry.lease.as_ref().map_or(0.0, |lease| {
                (lease.since.elapsed().as_secs_f64() - report.queued_seconds).max(0.0)
            }),
            parts: report
                .parts
                .iter()
                .map(|part| (moves_to_string(&part.moves), part.expanded, part.micros))
                .collect(),
            measured_after: false,
        };
        self.records
            .0
            .push((puzzle.goal, puzzle.board, report.task, record));
        Ok(())
    }

    /// Records the subtree tasks a solution made unnecessary, so a replay knows which parts of
    /// the last iteration were never measured.
    fn record_cancelled(&mut self, puzzle_id: PuzzleId) -> Result<(), SchedulerError> {
        let Some(puzzle) = self.puzzles.get(&puzzle_id) else {
            return Ok(());
        };
        let mut pending = Vec::new();
        for id in &puzzle.outstanding {
            let Some(entry) = self.tasks.get(id).filter(|t| !t.spec.iterate) else {
                continue;
            };
            let record = TaskRecord {
                batch: puzzle_id.0,
                index: puzzle_id.1,
                bound: entry.spec.bound,
                path: moves_to_string(&entry.spec.path),
                iterate: false,
                outcome: RecordedOutcome::Cancelled,
                nodes: 0,
                seconds: 0.0,
                round_trip_seconds: 0.0,
                parts: Vec::new(),
                measured_after: false,
            };
            pending.push((puzzle.goal, puzzle.board, *id, record));
        }
        self.records.0.extend(pending);
        Ok(())
    }

    /// Starts the iteration at `bound`: stores it as the puzzle's proven lower bound and queues
    /// its split for [`Scheduler::take_splits`].
    fn next_iteration(&mut self, puzzle_id: PuzzleId, bound: u32) -> Result<(), SchedulerError> {
        let Some(puzzle) = self.puzzles.get(&puzzle_id) else {
            return Ok(());
        };
        let (board, goal, heuristic) = (puzzle.board, puzzle.goal, puzzle.heuristic.clone());
        if bound as usize >= tilesolve::search::MAX_DEPTH {
            return self.finish_failed(
                puzzle_id,
                "no solution within the longest supported path".into(),
            );
        }
        self.store
            .put_search_state(&goal, &board, SearchState { lower_bound: bound })?;
        let threads: usize = self
            .workers
            .values()
            .map(|w| w.threads as usize)
            .sum::<usize>()
            .max(1);
        let params = BalanceParams {
            threads,
            tasks_per_thread: self.config.tasks_per_thread,
            balance: self.config.split_balance,
            min_split_nodes: self.config.min_split_nodes,
            min_split_nodes_per_thread: self.config.min_split_nodes_per_thread,
            max_depth: u32::MAX,
        };
        let solver = self.solver(&goal, &heuristic)?.clone();
        let Some(puzzle) = self.puzzles.get_mut(&puzzle_id) else {
            return Ok(());
        };
        puzzle.splitting = Some(bound);
        self.splits.push(PendingSplit {
            puzzle: puzzle_id,
            bound,
            board,
            solver,
            history: std::mem::take(&mut puzzle.history),
            nodes_so_far: puzzle.nodes,
            params,
        });
        Ok(())
    }

    /// Iterations waiting to be split: run each ([`PendingSplit::run`], outside the lock) and
    /// hand it back to [`Scheduler::finish_split`].
    pub fn take_splits(&mut self) -> Vec<PendingSplit> {
        std::mem::take(&mut self.splits)
    }

    /// Queues a split iteration's tasks, or finishes the puzzle when the split met the goal; an
    /// iteration with nothing within its bound goes straight on to the next. A split for a
    /// puzzle that ended meanwhile (its batch cancelled) is dropped.
    pub fn finish_split(&mut self, split: FinishedSplit) -> Result<(), SchedulerError> {
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
            item = puzzle_id.1 + 1,
            bound,
            tasks = frontier.tasks.len(),
            seconds = puzzle.started.elapsed().as_secs_f64(),
            "iteration split"
        );
        let goal = puzzle.goal;
        let heuristic = parse_heuristic(&puzzle.heuristic)?.to_string();
        let wave = self.next_wave();
        for task in frontier.tasks {
            let spec = TaskSpec {
                id: 0,
                board: task.board,
                goal,
                heuristic: heuristic.clone(),
                path: task.path,
                bound,
                iterate: false,
                node_budget: subtree_budget(self.config.subtree_task_budget, task.predicted),
                profile_depth: self.config.profile_depth,
            };
            self.add_task(puzzle_id, spec, wave, task.predicted);
        }
        Ok(())
    }

    /// Runs every pending split here, under the caller's `&mut` (for callers that own the
    /// scheduler outright: tests and tools; the service splits outside its lock instead).
    pub fn split_pending(&mut self) -> Result<(), SchedulerError> {
        loop {
            let splits = self.take_splits();
            if splits.is_empty() {
                return Ok(());
            }
            for split in splits {
                self.finish_split(split.run())?;
            }
        }
    }

    /// Removes a puzzle's remaining tasks, telling workers about the leased ones.
    fn cancel_tasks(&mut self, puzzle_id: PuzzleId) {
        let ids: Vec<TaskId> = self
            .puzzles
            .get(&puzzle_id)
            .map(|p| p.outstanding.iter().copied().collect())
            .unwrap_or_default();
        for id in ids {
            if let Some(TaskEntry {
                lease: Some(lease), ..
            }) = self.tasks.remove(&id)
            {
                self.cancelled.entry(lease.worker).or_default().push(id);
            }
        }
        // Withdrawn ids stay in `ready` until popped (and skipped): removing them here would
        // cost a pass over the whole queue for every finished puzzle.
    }

    fn finish_solved(
        &mut self,
        puzzle_id: PuzzleId,
        moves: Vec<Direction>,
    ) -> Result<(), SchedulerError> {
        let Some(puzzle) = self.puzzles.get(&puzzle_id) else {
            return Ok(());
        };
        let (board, goal, heuristic, nodes, seconds) = (
            puzzle.board,
            puzzle.goal,
            puzzle.heuristic.clone(),
            puzzle.nodes,
            puzzle.started.elapsed().as_secs_f64(),
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
        self.record_cancelled(puzzle_id)?;
        let name = self.solver(&goal, &heuristic)?.heuristic().to_string();
        self.store.put_solution(&solution, &name)?;
        let stored = StoredSolution {
            length: solution.len() as u32,
            moves: tilesolve::moves::moves_to_string(&solution.moves),
            tiles: solution.tiles.clone(),
            nodes: solution.counters.expanded,
            seconds: solution.seconds,
            heuristic: name,
        };
        self.finish(puzzle_id, ItemStatus::Solved(stored))
    }

    fn finish_failed(&mut self, puzzle_id: PuzzleId, reason: String) -> Result<(), SchedulerError> {
        self.finish(puzzle_id, ItemStatus::Failed(reason))
    }

    fn finish(&mut self, puzzle_id: PuzzleId, status: ItemStatus) -> Result<(), SchedulerError> {
        self.cancel_tasks(puzzle_id);
        self.puzzles.remove(&puzzle_id);
        let (batch, index) = puzzle_id;
        match status {
            ItemStatus::Solved(_) => self.totals.puzzles_solved += 1,
            ItemStatus::Failed(_) => self.totals.puzzles_failed += 1,
            ItemStatus::Queued => {}
        }
        if let Some((_, solved, failed)) = self.batch_counts.get_mut(&batch) {
            match status {
                ItemStatus::Solved(_) => *solved += 1,
                ItemStatus::Failed(_) => *failed += 1,
                ItemStatus::Queued => {}
            }
        }
        if let Some(mut item) = self.store.item(batch, index)? {
            item.status = status;
            self.store.put_item(batch, index, &item)?;
        }
        // Each answer is not flushed on its own (sled writes it out within half a second, and a
        // lost answer is recomputed from the flushed batch); a finished batch is flushed by the
        // caller, outside the lock (see `take_flush_due`).
        if self
            .batch_counts
            .get(&batch)
            .is_some_and(|&(total, solved, failed)| solved + failed == total)
        {
            self.flush_due = true;
            if let Some(started) = self.batch_started.get(&batch) {
                self.batch_seconds
                    .insert(batch, started.elapsed().as_secs_f64());
            }
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

    /// A handle that flushes the store without the scheduler's lock.
    pub fn flusher(&self) -> Flusher {
        Flusher(self.store.clone())
    }

    /// A batch's progress.
    pub fn progress(&self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        let (total, solved, failed) = match self.batch_counts.get(&batch) {
            Some(&counts) => counts,
            None => {
                self.store
                    .batch(batch)?
                    .ok_or(SchedulerError::UnknownBatch(batch))?;
                counts(&self.store.items(batch)?)
            }
        };
        let nodes = self.batch_nodes.get(&batch).copied().unwrap_or(0);
        let seconds = match self.batch_seconds.get(&batch) {
            Some(&seconds) => seconds,
            None => self
                .batch_started
                .get(&batch)
                .map_or(0.0, |s| s.elapsed().as_secs_f64()),
        };
        let mut bounds: Vec<u32> = self
            .puzzles
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(_, p)| p.bound)
            .collect();
        bounds.sort_unstable();
        Ok(BatchProgress {
            batch,
            total,
            solved,
            failed,
            done: solved + failed == total,
            bounds,
            nodes,
            nodes_per_second: if seconds > 0.0 {
                nodes as f64 / seconds
            } else {
                0.0
            },
            workers: self.workers.len() as u32,
            seconds,
        })
    }

    /// Records what `default` means on a worker (as it said when registering): a few short
    /// names are kept, the rest dropped, so a hostile registration cannot grow the table.
    pub fn set_default_heuristics(&mut self, worker: WorkerId, names: &[String]) {
        if let Some(info) = self.workers.get_mut(&worker) {
            info.default_heuristics = names
                .iter()
                .take(8)
                .map(|name| name.chars().take(60).collect())
                .collect();
        }
    }

    /// The connected workers.
    pub fn workers(&self) -> Vec<WorkerView> {
        let now = Instant::now();
        let mut views: Vec<WorkerView> = self
            .workers
            .iter()
            .map(|(&id, info)| WorkerView {
                id,
                host: info.host.clone(),
                threads: info.threads,
                default_heuristics: info.default_heuristics.clone(),
                nodes_per_second: info.nodes_per_second(now),
                tasks_done: info.tasks_done,
                seconds_since_seen: now.duration_since(info.last_seen).as_secs_f64(),
            })
            .collect();
        views.sort_by_key(|w| w.id);
        views
    }

    /// Totals since start and the queue now.
    pub fn totals(&self) -> SchedulerTotals {
        let running = self.tasks.values().filter(|t| t.lease.is_some()).count() as u64;
        let workers = self.workers();
        SchedulerTotals {
            tasks_queued: self.tasks.len() as u64 - running,
            tasks_running: running,
            puzzles_pending: self.puzzles.len() as u64,
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

    /// Every stored batch's progress, oldest first.
    pub fn list(&self) -> Result<Vec<BatchProgress>, SchedulerError> {
        self.store
            .batches()?
            .iter()
            .map(|batch| self.progress(batch.id))
            .collect()
    }

    /// Cancels a batch: its unfinished items fail as cancelled (their tasks are withdrawn and
    /// workers told); answers already found stay.
    pub fn cancel(&mut self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        let mut stored = self
            .store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?;
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
        self.store.flush()?;
        self.progress(batch)
    }

    /// A batch's items, in order.
    pub fn items(&self, batch: u64) -> Result<Vec<StoredItem>, SchedulerError> {
        self.store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?;
        Ok(self.store.items(batch)?)
    }

    /// Up to `limit` of a batch's items from index `start` on, with their indices.
    pub fn items_page(
        &self,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<Vec<(u32, StoredItem)>, SchedulerError> {
        self.store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?;
        Ok(self.store.items_page(batch, start, limit)?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tilesolve::task::run_task;

    /// A scheduler over a store and pattern databases in `dir` (reopened if already there).
    fn scheduler_in(dir: &std::path::Path, config: SchedulerConfig) -> Scheduler {
        let store = crate::store::reopen(&dir.join("store"));
        Scheduler::new(store, PdbStore::new(dir.join("pdb"), 1), config).unwrap()
    }

    /// Drives a scheduler with `threads` simulated worker threads running the real kernel.
    fn run_to_completion(scheduler: &mut Scheduler, batch: u64, threads: u32) {
        let worker = scheduler.register(threads, "test").unwrap();
        let mut results = Vec::new();
        for _ in 0..1_000_000 {
            if scheduler.progress(batch).unwrap().done {
                return;
            }
            let (tasks, _) = scheduler
                .poll(worker, threads, std::mem::take(&mut results))
                .unwrap();
            scheduler.split_pending().unwrap();
            for task in tasks {
                let solver = Solver::new(task.goal, tilesolve::HeuristicKind::LinearConflict);
                let run = run_task(&solver, task.work(), None);
                results.push(TaskReport {
                    parts: run.parts,
                    ..TaskReport::new(task.id, run.outcome, run.nodes)
                });
            }
        }
        panic!("batch {batch} did not finish");
    }

    fn examples() -> Vec<(String, u32)> {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/data/examples15.txt"
        ))
        .unwrap();
        tilesolve::batch_file::board_lines(&text)
            .take(6)
            .map(|l| {
                (
                    l.board.to_string(),
                    l.fact("optimal").unwrap().parse().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn split_puzzles_are_solved_optimally_stored_and_resumed() {
        let data = tempfile::tempdir().unwrap();
        let open = || {
            let config = SchedulerConfig {
                // Tiny budgets, so puzzles are split and subtrees split again.
                whole_task_budget: 2_000,
                subtree_task_budget: 3_000,
                tasks_per_thread: 8,
                ..SchedulerConfig::default()
            };
            scheduler_in(data.path(), config)
        };
        let examples = examples();
        let mut lines: Vec<String> = examples.iter().map(|(b, _)| b.clone()).collect();
        lines.insert(2, "1,2,3".into());
        let batch = {
            let mut scheduler = open();
            let submitted = scheduler.submit(&lines, "linear-conflict", "").unwrap();
            assert_eq!(
                (submitted.items, submitted.invalid, submitted.from_store),
                (7, 1, 0)
            );
            run_to_completion(&mut scheduler, submitted.batch, 3);
            scheduler.flusher().flush().unwrap();
            submitted.batch
        };
        // A new scheduler over the same files: everything is still there, and a resubmission is
        // answered from the store.
        let mut scheduler = open();
        let items = scheduler.items(batch).unwrap();
        let lengths: Vec<Option<u32>> = items
            .iter()
            .map(|i| match &i.status {
                ItemStatus::Solved(s) => Some(s.length),
                _ => None,
            })
            .collect();
        let mut expected: Vec<Option<u32>> = examples.iter().map(|(_, o)| Some(*o)).collect();
        expected.insert(2, None);
        assert_eq!(lengths, expected);
        assert!(
            matches!(&items[2].status, ItemStatus::Failed(reason) if reason.starts_with("line 3:"))
        );
        let again = scheduler.submit(&lines, "linear-conflict", "").unwrap();
        assert_eq!(again.from_store, 6);
        assert!(scheduler.progress(again.batch).unwrap().done);
        let (board, optimal) = &examples[5];
        assert_eq!(
            scheduler.query(board, "").unwrap().map(|s| s.length),
            Some(*optimal)
        );
    }

    #[test]
    fn expired_leases_return_to_the_queue_and_late_results_are_ignored() {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(
            data.path(),
            SchedulerConfig {
                lease_timeout: Duration::from_millis(1),
                ..SchedulerConfig::default()
            },
        );
        let submitted = scheduler
            .submit(&["1,2,3,4,5,6,7,0,8".to_string()], "manhattan", "")
            .unwrap();
        let lost = scheduler.register(1, "test").unwrap();
        let (tasks, _) = scheduler.poll(lost, 1, Vec::new()).unwrap();
        assert_eq!(tasks.len(), 1);
        std::thread::sleep(Duration::from_millis(5));
        let swept = scheduler.sweep().unwrap();
        assert_eq!((swept.workers_lost, swept.tasks_requeued), (vec![lost], 1));
        let late = TaskReport::new(tasks[0].id, TaskOutcome::Found(vec![Direction::Up]), 1);
        assert!(
            matches!(
                scheduler.poll(lost, 0, vec![late.clone()]),
                Err(SchedulerError::UnknownWorker(_))
            ),
            "a forgotten worker must register again"
        );
        let again = scheduler.register(1, "test").unwrap();
        scheduler.poll(again, 0, vec![late]).unwrap();
        assert!(
            !scheduler.progress(submitted.batch).unwrap().done,
            "a wrong late answer from an expired lease is ignored"
        );
        run_to_completion(&mut scheduler, submitted.batch, 1);
        assert_eq!(
            scheduler
                .query("1,2,3,4,5,6,7,0,8", "")
                .unwrap()
                .map(|s| s.length),
            Some(1)
        );
    }

    #[test]
    fn a_task_that_keeps_losing_its_worker_fails_its_puzzle_not_the_batch() {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(
            data.path(),
            SchedulerConfig {
                lease_timeout: Duration::from_millis(1),
                ..SchedulerConfig::default()
            },
        );
        let lines = ["8,6,7,2,5,4,3,0,1".to_string()];
        let submitted = scheduler.submit(&lines, "manhattan", "").unwrap();
        let mut swept = Swept::default();
        for _ in 0..MAX_ATTEMPTS {
            let worker = scheduler.register(1, "test").unwrap();
            assert_eq!(scheduler.poll(worker, 1, Vec::new()).unwrap().0.len(), 1);
            std::thread::sleep(Duration::from_millis(5));
            swept = scheduler.sweep().unwrap();
        }
        assert_eq!(swept.puzzles_failed, 1);
        let progress = scheduler.progress(submitted.batch).unwrap();
        assert!(progress.done && progress.failed == 1);
        let items = scheduler.items(submitted.batch).unwrap();
        assert!(
            matches!(&items[0].status, ItemStatus::Failed(reason) if reason.contains("lost its worker 3 times")),
            "{:?}",
            items[0].status
        );
    }

    #[test]
    fn impossible_reports_are_failed_attempts_never_answers() {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
        // Optimal is 31 moves; a faulty worker claims a 1-move answer, then a next bound below
        // the task's own, then a real but non-optimal path.
        let board = "8,6,7,2,5,4,3,0,1";
        let submitted = scheduler
            .submit(&[board.to_string()], "manhattan", "")
            .unwrap();
        let worker = scheduler.register(1, "test").unwrap();
        let (mut tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
        let reports = [
            TaskOutcome::Found(vec![Direction::Up]),
            TaskOutcome::Exceeded(1),
        ];
        for report in reports {
            let task = tasks.pop().unwrap();
            tasks = scheduler
                .poll(worker, 1, vec![TaskReport::new(task.id, report, 10)])
                .unwrap()
                .0;
            assert_eq!(tasks.len(), 1, "the same task is offered again");
        }
        assert!(!scheduler.progress(submitted.batch).unwrap().done);
        // Now the real search, by the worker that holds the task.
        let task = tasks.pop().unwrap();
        let solver = Solver::new(task.goal, tilesolve::HeuristicKind::Manhattan);
        let run = run_task(&solver, task.work(), None);
        scheduler
            .poll(
                worker,
                0,
                vec![TaskReport::new(task.id, run.outcome, run.nodes)],
            )
            .unwrap();
        assert!(scheduler.progress(submitted.batch).unwrap().done);
        assert_eq!(
            scheduler.query(board, "").unwrap().map(|s| s.length),
            Some(31)
        );
    }

    #[test]
    fn a_split_done_outside_the_lock_for_a_puzzle_that_ended_meanwhile_is_dropped() {
        let data = tempfile::tempdir().unwrap();
        let config = SchedulerConfig {
            whole_task_budget: 1_000,
            ..SchedulerConfig::default()
        };
        let mut scheduler = scheduler_in(data.path(), config);
        let (board, _) = examples().into_iter().next().unwrap();
        let submitted = scheduler.submit(&[board], "manhattan", "").unwrap();
        let worker = scheduler.register(1, "test").unwrap();
        let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
        let solver = Solver::new(tasks[0].goal, tilesolve::HeuristicKind::Manhattan);
        let run = run_task(&solver, tasks[0].work(), None);
        assert!(
            matches!(run.outcome, TaskOutcome::BudgetSpent(_)),
            "a hard puzzle"
        );
        let report = TaskReport::new(tasks[0].id, run.outcome, run.nodes);
        let (leased, _) = scheduler.poll(worker, 1, vec![report]).unwrap();
        assert!(leased.is_empty(), "the next iteration is not split yet");
        let splits = scheduler.take_splits();
        assert_eq!(splits.len(), 1);
        scheduler.cancel(submitted.batch).unwrap();
        for split in splits {
            scheduler.finish_split(split.run()).unwrap();
        }
        assert!(
            scheduler.poll(worker, 1, Vec::new()).unwrap().0.is_empty(),
            "no tasks for a cancelled batch"
        );
    }

    #[test]
    fn a_cancelled_batch_withdraws_its_tasks() {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
        let lines: Vec<String> = examples().into_iter().map(|(b, _)| b).collect();
        let submitted = scheduler.submit(&lines, "manhattan", "").unwrap();
        let worker = scheduler.register(1, "test").unwrap();
        let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
        let progress = scheduler.cancel(submitted.batch).unwrap();
        assert!(progress.done);
        assert_eq!(progress.failed, lines.len() as u32);
        assert_eq!(
            scheduler.heartbeat(worker, &[tasks[0].id]).unwrap(),
            vec![tasks[0].id],
            "the worker is told"
        );
        assert!(
            scheduler.poll(worker, 1, Vec::new()).unwrap().0.is_empty(),
            "nothing left to do"
        );
        assert_eq!(scheduler.list().unwrap().len(), 1);
    }
}
