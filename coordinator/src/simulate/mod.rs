//! Replaying a recorded run with any number of virtual workers (`tilesolve simulate`).
//!
//! The store keeps every task of a split puzzle with its size and time, and, when the
//! coordinator ran with `--record-depth k`, the size and time of each descendant k moves below
//! the task. Those measured pieces ("units") tile each iteration's search tree. For P virtual
//! one-thread workers the simulator applies the scheduler's own policy
//! ([`frontier::split_for`], [`frontier::order_by_previous`], the subtree budget, iteration
//! boundaries, the first solution cancelling the rest): it splits each iteration for P workers,
//! gives each task the units below it, and runs the tasks on P threads in a discrete-event
//! simulation with the scheduler's ready queue ([`crate::queue`]). Splitting an iteration costs the
//! time it takes here, on the coordinator, between iterations.
//!
//! What is modelled and what is not:
//! - A task costs its units' measured search time plus `overhead_seconds` (a poll's round trip:
//!   a thread asks for its next task only after reporting the last). `tilesolve simulate` takes
//!   the mean measured in the recording: the median left out the long waits of a few calls
//!   (a dilated run's quota periods) and read its walls 22-30% short.
//! - A share of the reports (`audit_fraction`, every k-th) is searched again as an audit, queued
//!   in the turn it is reported in.
//! - A solved puzzle's running tasks stop at once, as `serve` answers a worker's held heartbeat
//!   as soon as it has a cancellation to tell; with `heartbeat_seconds` they go on until they
//!   end or their worker's next heartbeat (each worker's beats at its own phase), as with a
//!   coordinator that answered heartbeats at once. Either way the work the coordinator counts
//!   as withdrawn. Prefetched ones are dropped.
//! - Tasks prefetched onto a busy worker and not started go to an idle thread once nothing is
//!   queued, two round trips later (`returns`: the coordinator asks their worker to return
//!   them). Then the longest running subtree tasks are asked to hand back (`hand_backs`): each
//!   stops a round trip later and hands back, at the recording's units, what it has not
//!   searched ([`hand_backs`]). A task a worker handed back in the recorded run counts with the
//!   parts it searched (and the time it spent above them), and its descendants with their own
//!   records.
//! - The coordinator serves one call at a time: each task occupies it for
//!   `coordinator_seconds_per_task`, and each split for the boards it estimates times
//!   `split_seconds_per_estimate` (a model, not a timing here, so that two replays of one
//!   recording agree); leases wait for it. A split makes no more tasks than the coordinator
//!   serves at that time a task while the threads search them, as `serve` splits.
//! - A recording holds the policy it ran under; `whole_task_budget` and `prefetch_before_idle`
//!   replay it under the scheduler before the change (c2d80a6): the whole-puzzle task runs on
//!   through the recorded iterations until its budget is spent (the iteration it was in is then
//!   split and searched again from its start), and workers hoard whole puzzles.
//! - A task that meets the goal searches the units one thread meets before it (in the order
//!   of `child_order`, best first near the root) and the goal's: the rest is never searched.
//! - Interior nodes above the units (about one per unit) are counted only where a task contains
//!   them whole; they are well under 1% of the nodes.
//! - The last iteration was cut short by the solution: tasks cancelled then were never measured.
//!   Their size is predicted from their subtrees' sizes one iteration earlier times the
//!   iteration's growth over the tasks that did finish (the same prediction the scheduler's
//!   split balances by), and the share of predicted work is reported.
//! - A finer split than the recording cannot be simulated: the split depth stops at the
//!   shallowest unit, a puzzle the recording solved whole stays whole, and the report says
//!   when either limited the run.
//!
//! Layout: `model` (the recorded run: units, iterations, predictions for cancelled tasks),
//! `threads` (the virtual workers and their events), `run` (the event loop applying the
//! scheduler's policy); the policy's knobs and the report's types are here.

use thiserror::Error;

use crate::store::StoreError;

#[derive(Debug, Error)]
pub enum SimulateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no batch {0} in the store")]
    UnknownBatch(u64),
    #[error("batch {0} has no solved puzzle to replay")]
    NothingToReplay(u64),
    #[error("batch {batch} item {index}: {reason}")]
    Unreadable {
        batch: u64,
        index: u32,
        reason: String,
    },
    #[error("pattern database: {0}")]
    Pdb(String),
}

/// The policy's knobs, as `serve` takes them.
#[derive(Clone, Debug)]
pub struct SimulationPolicy {
    pub tasks_per_thread: usize,
    pub split_balance: usize,
    pub min_split_nodes: u64,
    pub min_split_nodes_per_thread: u64,
    /// Depth below a task at which it reports its parts' sizes (the next split's predictions).
    pub profile_depth: u32,
    pub subtree_task_budget: u64,
    /// Seconds a thread spends per task outside the search.
    pub overhead_seconds: f64,
    /// Seconds the coordinator is busy per task (one call at a time: its capacity).
    pub coordinator_seconds_per_task: f64,
    /// Seconds a split takes per board it estimates; `None`:
    /// [`SPLIT_SECONDS_PER_ESTIMATE_SMALL`] or [`SPLIT_SECONDS_PER_ESTIMATE_LARGE`] by the
    /// puzzle's size.
    pub split_seconds_per_estimate: Option<f64>,
    /// Search the last iteration to its end instead of stopping at the solution: the figure
    /// for load balance alone, free of how early a parallel search happens to meet the goal.
    pub exhaustive: bool,
    /// Tasks a worker holds beyond the one it runs (`tilesolve worker --prefetch`): leased
    /// while it searches, so its next task needs no round trip.
    pub prefetch: usize,
    /// The share of task reports another worker audits (`serve --verify sample`'s
    /// [`crate::scheduler::DEFAULT_AUDIT_FRACTION`]; 0: none): each audit searches the task again.
    pub audit_fraction: f64,
    /// Tasks waiting unstarted on a busy worker go to an idle thread when nothing is queued,
    /// as `serve` asks them back (`false`: a coordinator before it did).
    pub returns: bool,
    /// Running subtree tasks hand back what they have not searched while threads idle with
    /// nothing queued, as `serve` asks them (`false`: a coordinator before e85b59b).
    pub hand_backs: bool,
    /// Seconds a task must have run before it is asked to hand back (`serve`'s
    /// [`crate::scheduler::SchedulerConfig::hand_back_after`]).
    pub hand_back_after_seconds: f64,
    /// Seconds between a busy worker's calls that can tell it of a cancellation (0: told at
    /// once, as `serve` holds heartbeats); a task of a solved puzzle runs on until then.
    pub heartbeat_seconds: f64,
    /// Nodes a puzzle's whole-puzzle task searches before its search is split, whatever the
    /// idle threads (c2d80a6's fixed `whole_task_budget`, 20 M). `None`: as the recording ran
    /// (`serve` splits after 1 M nodes while fewer than four puzzles a thread are unfinished).
    pub whole_task_budget: Option<u64>,
    /// Each worker takes all it may hold (its running task and `prefetch` more) in turn,
    /// whether threads idle elsewhere or not, as before 719555e (c2d80a6's worker, prefetching
    /// one, took two whole puzzles). `false`: idle threads first, then prefetch, as `serve`
    /// leases.
    pub prefetch_before_idle: bool,
}

/// A split's time per board it estimates on boards of at most 16 cells, and ...
///
/// Measured on M1 (2 cores) by timing every split of three replays at 15 and 256 workers: 0.6
/// us a board on hard80 with the 7-8 tables (the middle 80% of its large splits within
/// 0.34-0.66 us), 2.2 and 2.8 us on two Korf-24 recordings with the default 6-6-6-6 tables
/// (1.4-4.4 us). Timed in each replay instead, two runs of one command differed by up to 12%
/// at 1,024 workers.
pub const SPLIT_SECONDS_PER_ESTIMATE_SMALL: f64 = 0.6e-6;

/// ... on larger boards.
pub const SPLIT_SECONDS_PER_ESTIMATE_LARGE: f64 = 2.5e-6;

/// One split iteration of a recorded puzzle, summed up.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationSummary {
    pub bound: u32,
    pub units: usize,
    pub nodes: u64,
    pub seconds: f64,
    pub largest_unit_seconds: f64,
}

/// One simulated run.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulationResult {
    pub workers: usize,
    pub makespan_seconds: f64,
    pub tasks: u64,
    /// Seconds the threads spent searching (overhead excluded).
    pub busy_seconds: f64,
    /// Of `busy_seconds`, the part whose size was predicted rather than measured.
    pub predicted_seconds: f64,
    /// Seconds the coordinator spent splitting iterations.
    pub split_seconds: f64,
    /// Boards those splits estimated.
    pub split_estimates: u64,
    /// Of `busy_seconds`, the audits' ...
    pub audit_seconds: f64,
    /// ... and what tasks searched after their puzzle was solved (withdrawn).
    pub withdrawn_seconds: f64,
    /// Some iteration wanted more tasks than the recording's granularity allowed, or the
    /// puzzle that ended last was solved whole in the recording (a replay cannot split it).
    pub granularity_limited: bool,
    /// When each puzzle finished, in the order given.
    pub puzzle_seconds: Vec<f64>,
}

mod hand_backs;
mod model;
mod run;
#[cfg(test)]
mod tests;
mod threads;

pub use model::{load_run, measure_cancelled, RecordedPuzzle};
pub use run::simulate;
