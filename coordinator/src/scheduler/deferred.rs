//! What a lock cycle leaves to do once the lock is released, in one place: CPU work
//! ([`Deferred`]: splitting an iteration into subtree tasks, audits the coordinator runs
//! itself), task records to write, and a flush when a batch ended. The parts leave it in
//! [`CycleOut`]; [`Scheduler::take_cycle`](super::Scheduler::take_cycle) hands it out as
//! [`AfterCycle`]. Each deferred item carries everything it needs (its solver included), so
//! running it touches no scheduler state; its result goes back through
//! [`Scheduler::finish_deferred`](super::Scheduler::finish_deferred).

use tilesolve::task::run_task;
use tilesolve::{Board, Solver};

use super::config::COORDINATOR_AUDIT_NODES;
use super::quarantine::{FinishedWithdrawal, PendingWithdrawal};
use super::records::TaskRecords;
use super::tasks::Audit;
use super::types::{PuzzleId, TaskId, TaskOutcome, TaskSpec};
use crate::frontier::{split_iteration, BalanceParams, Frontier};
use crate::size_history::SizeHistory;

/// What the parts leave for the end of the lock cycle.
#[derive(Default)]
pub(super) struct CycleOut {
    /// Work to run outside the lock.
    pub(super) deferred: Vec<Deferred>,
    /// Records of the tasks finished (or made unnecessary), to write outside the lock.
    pub(super) records: TaskRecords,
    /// A batch finished (or answers were withdrawn): flush the store before answering.
    pub(super) flush_due: bool,
}

impl CycleOut {
    /// Everything left, and whether tasks were queued for workers to take.
    pub(super) fn take(&mut self, tasks_ready: bool) -> AfterCycle {
        let CycleOut {
            deferred,
            records,
            flush_due,
        } = std::mem::take(self);
        AfterCycle {
            deferred,
            records,
            flush_due,
            tasks_ready,
            workers_told: Vec::new(),
        }
    }
}

/// What one lock cycle leaves to do after the lock is released: run the deferred work (and
/// hand each back to [`Scheduler::finish_deferred`](super::Scheduler::finish_deferred)), write
/// the records ([`super::Flusher::write`], a record lost in a crash only makes a replay of that
/// run less complete), flush the store when a batch ended, wake idle workers' polls when tasks
/// were queued (`tasks_ready`; a call that only finds tasks waiting wakes nobody).
pub struct AfterCycle {
    pub deferred: Vec<Deferred>,
    pub records: TaskRecords,
    pub flush_due: bool,
    pub tasks_ready: bool,
    /// Workers with something to be told ([`super::Told`]): their held heartbeats answer.
    pub workers_told: Vec<super::WorkerId>,
}

/// CPU work the scheduler leaves to its caller ([`AfterCycle`]) to run without
/// holding its lock, milliseconds each, so leases to other workers go on meanwhile.
pub enum Deferred {
    Split(PendingSplit),
    Audit(PendingAudit),
    Withdrawal(PendingWithdrawal),
}

/// Deferred work done, for [`Scheduler::finish_deferred`](super::Scheduler::finish_deferred).
pub enum DeferredDone {
    Split(FinishedSplit),
    Audit(FinishedAudit),
    Withdrawal(FinishedWithdrawal),
}

impl Deferred {
    /// Whether it may take longer than a worker's poll should wait for (an audit the
    /// coordinator runs in chunks of seconds, [`PendingAudit::is_long`]; a withdrawal's pass
    /// over the whole store).
    pub fn is_long(&self) -> bool {
        match self {
            Deferred::Split(_) => false,
            Deferred::Audit(audit) => audit.is_long(),
            Deferred::Withdrawal(_) => true,
        }
    }

    pub fn run(self) -> DeferredDone {
        match self {
            Deferred::Split(split) => DeferredDone::Split(split.run()),
            Deferred::Audit(audit) => DeferredDone::Audit(audit.run()),
            Deferred::Withdrawal(withdrawal) => DeferredDone::Withdrawal(withdrawal.run()),
        }
    }
}

/// An iteration to split: a fine frontier takes milliseconds of CPU.
pub struct PendingSplit {
    pub(super) puzzle: PuzzleId,
    pub(super) bound: u32,
    pub(super) board: Board,
    pub(super) solver: Solver,
    pub(super) history: SizeHistory,
    pub(super) nodes_so_far: u64,
    pub(super) params: BalanceParams,
}

/// A split done outside the lock, for [`Scheduler::finish_deferred`](super::Scheduler::finish_deferred).
pub struct FinishedSplit {
    pub(super) puzzle: PuzzleId,
    pub(super) bound: u32,
    pub(super) frontier: Frontier,
    pub(super) history: SizeHistory,
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

/// A claim a report made (no path shorter than `audit.claim` below `spec.board`) that no audit
/// has checked yet: `spec` is the audit that would check it, its id not yet given.
#[derive(Clone)]
pub(super) struct UnauditedClaim {
    pub(super) spec: TaskSpec,
    pub(super) audit: Audit,
    /// Nodes the report that made the claim expanded: about what its audit costs at most.
    pub(super) nodes: u64,
}

/// An audit the coordinator runs itself, taken out of the scheduler
/// ([`AfterCycle`]) to run without its lock.
pub struct PendingAudit {
    pub(super) puzzle: PuzzleId,
    pub(super) claim: UnauditedClaim,
    /// Its id in the puzzle's audits, which the answer waits for.
    pub(super) id: TaskId,
    pub(super) solver: Solver,
    /// Expanded nodes it may spend.
    pub(super) budget: u64,
}

/// A [`PendingAudit`] run, for [`Scheduler::finish_deferred`](super::Scheduler::finish_deferred).
pub struct FinishedAudit {
    pub(super) puzzle: PuzzleId,
    pub(super) claim: UnauditedClaim,
    pub(super) id: TaskId,
    pub(super) outcome: TaskOutcome,
    /// Nodes its search expanded.
    pub(super) nodes: u64,
}

impl PendingAudit {
    pub fn run(self) -> FinishedAudit {
        let spec = TaskSpec {
            node_budget: self.budget,
            ..self.claim.spec.clone()
        };
        let run = run_task(&self.solver, spec.work(), None);
        FinishedAudit {
            puzzle: self.puzzle,
            claim: self.claim,
            id: self.id,
            outcome: run.outcome,
            nodes: run.nodes,
        }
    }

    /// Whether it may take longer than a worker's poll should wait for: the service runs it
    /// on the coordinator's background pool instead.
    pub fn is_long(&self) -> bool {
        self.budget > COORDINATOR_AUDIT_NODES
    }
}
