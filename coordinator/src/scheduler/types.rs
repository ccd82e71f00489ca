//! The scheduler's vocabulary, shared by its parts and its callers: ids, what a worker is asked
//! and what it reports, what a submission and a sweep return, totals, errors and the limits a
//! worker's word is held to. A leaf: it names no other part of the scheduler.

use std::time::Instant;

use thiserror::Error;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::search::{MovePruning, PartSize, Pruning};
pub use tilesolve::task::TaskOutcome;
use tilesolve::task::{WeightedWork, Work};
use tilesolve::{Board, Direction};

use crate::store::{Priority, StoreError};

pub type TaskId = u64;
/// A solver's identity: the goal, and the heuristic as the batch named it (`default` is
/// resolved within the coordinator's table budget).
pub type SolverKey = (Board, HeuristicChoice);
pub type WorkerId = u64;
/// A puzzle: its batch and its index in the batch (from 0; logs show the item number, from 1).
pub type PuzzleId = (u64, u32);

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
    /// As the batch named it (`default` is resolved by each worker).
    pub heuristic: HeuristicChoice,
    /// Moves from the puzzle's root to `board`.
    pub path: Vec<Direction>,
    pub bound: u32,
    /// Whole-puzzle task: keep raising the bound until solved or `node_budget` is spent.
    pub iterate: bool,
    pub node_budget: u64,
    /// Report the sizes of the descendants this many moves below `board` (subtree tasks only).
    pub profile_depth: u32,
    /// A weighted task (see `bounded`): a path that may be longer, `bound` the proven lower
    /// bound.
    pub weighted: Option<WeightedWork>,
    /// Its batch's priority (set as it is queued): a worker runs the tasks it holds highest
    /// first.
    pub priority: Priority,
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
            weighted: self.weighted,
        }
    }

    /// The children of the task's board that a worker's search follows (workers run the board
    /// size's duplicate pruning): a split report hands some back and claims the rest.
    pub fn followed_children(&self) -> Vec<(Direction, Board)> {
        self.followed_children_below(&self.board, &[])
    }

    /// The children a worker's search follows of `board`, reached by `moves` from the task's
    /// board.
    pub fn followed_children_below(
        &self,
        board: &Board,
        moves: &[Direction],
    ) -> Vec<(Direction, Board)> {
        let pruning = MovePruning::for_shape(self.board.shape(), Pruning::Duplicates);
        let path = [self.path.as_slice(), moves].concat();
        tilesolve::task::followed_children(pruning, board, &path)
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
    pub(super) fn bounded(mut self) -> TaskReport {
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
    /// Expanded nodes of the task reports applied to their puzzles.
    pub nodes: u64,
    /// Expanded nodes of the audits workers ran (each checks another worker's report).
    pub audit_nodes: u64,
    /// Expanded nodes of the audits the coordinator ran itself (probation's cheap ones, and
    /// those no worker could run): its own CPU, not the workers'.
    pub coordinator_audit_nodes: u64,
    /// Expanded nodes of reports whose task was withdrawn before they came (their puzzle had
    /// ended, or the lease had gone elsewhere): spent for nothing. With `nodes` and
    /// `audit_nodes`, every node the workers reported.
    pub withdrawn_nodes: u64,
    pub tasks_done: u64,
    pub puzzles_solved: u64,
    pub puzzles_failed: u64,
    /// Puzzles answered with a bounded path (a limit stopped their optimal search).
    pub puzzles_bounded: u64,
    /// Puzzles whose batch was cancelled before they ended: not failures.
    pub puzzles_cancelled: u64,
    pub tasks_queued: u64,
    /// Leased tasks a worker thread runs now: each worker's leases up to its threads.
    pub tasks_running: u64,
    /// Leased tasks waiting in a worker's own queue behind the ones its threads run.
    pub tasks_prefetched: u64,
    /// Items not finished: live, waiting for tables, or waiting in the store to start.
    pub puzzles_pending: u64,
    /// Puzzles started and not finished: what the coordinator holds in memory for them (a
    /// batch keeps a window of its items live; see `starting`).
    pub puzzles_live: u64,
    pub workers: u64,
    pub worker_threads: u64,
    /// Expanded nodes per second over every connected worker.
    pub nodes_per_second: f64,
    /// The open batches' work left, in thread-seconds at the workers' pace now (the middle of
    /// each batch's ETA range; a batch without one counts a whole task's budget a puzzle): what
    /// autoscaling sizes the workers by, where the task count says little (one hard puzzle is
    /// thousands of tasks, a thousand easy ones are a thousand tasks of milliseconds).
    pub work_left_thread_seconds: f64,
    /// The coordinator's measured CPU seconds a task it served (`serve` only; 0 until
    /// measured): what its splits are sized by, within bounds (`own_cost`).
    pub coordinator_seconds_per_task: f64,
    /// Thread-seconds the connected workers' threads held no task (the idle share of a
    /// stretch is its growth over threads x seconds).
    pub idle_thread_seconds: f64,
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
    /// Tasks asked back for idle threads: returned unstarted, and handed back part searched.
    pub tasks_returned: u64,
    pub tasks_handed_back: u64,
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

/// Who stands behind a registration, for audits: registrations of one lineage may be one
/// liar, so under `full` none of them audits another ([`Workers::can_audit`]). The service gives every
/// registration under one worker token the same lineage (a token holder can register as many
/// workers as it likes); tools and tests that drive the scheduler directly give each its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lineage {
    /// Registered with the coordinator's worker token of this index (0 for the only one, or
    /// when the worker API has no token of its own).
    Token(usize),
    /// Its own lineage.
    Registration(WorkerId),
}

/// A leased task, as the hand-backs (`hand_backs::HandBacks::ask`) weigh it.
pub(super) struct HeldTask {
    pub(super) task: TaskId,
    pub(super) worker: WorkerId,
    /// When it went out.
    pub(super) since: Instant,
    /// It can hand back what it has not searched: a subtree task or an audit searched in
    /// measured parts.
    pub(super) hands_back: bool,
}
