//! Audits and quarantine: answers stay optimal with one lying or faulty worker.
//!
//! A report claims that no path shorter than some length L leaves its task's board: a next
//! bound, a budget spent at a bound, a whole puzzle's answer. An audit searches the same board
//! on another worker under bound L - 1. Any path it finds replays to the goal and is shorter
//! than the claim, so it disproves the claim whoever found it; finding none upholds it. An audit
//! therefore needs no trust in the auditor: a lying auditor can only fail to find (which upholds
//! the claim, as an honest auditor would unless the audited worker lied too) or send moves that
//! do not replay, which count against it. An audit that spends its node budget has learned
//! nothing: like a subtree task, it goes on as one audit per child, and the answer waits for
//! them all.
//!
//! Every report of a new worker is audited until [`PROBATION_AUDITS`] were upheld, then a
//! fraction drawn with a secret seed, so a worker cannot tell which of its reports are checked.
//! No registration audits another of its own lineage ([`Lineage`]: every worker registered
//! under one worker token is one, since a token holder may register as many workers as it
//! likes, and they would uphold each other's lies): with no worker of another lineage
//! connected, the coordinator runs the audit itself, whatever its size (in chunks of
//! [`COORDINATOR_CHUNK_NODES`] on its background pool). An audit is never dropped: one whose
//! auditor falls silent, fails or leaves goes to another worker or to the coordinator. What a
//! report says of its own size only decides where its audit runs, never whether it runs.
//! A claim that no draw picked is kept while an answer's length could rest on it: before an
//! answer its heuristic does not prove is stored, every such claim it rests on (those that set
//! the bound it was found at) is audited on a worker other than the one that made it. Sampling
//! alone let a worker pass probation on lies that hide nothing and then lengthen an answer
//! unseen. A puzzle's answer waits for the audits of the reports it rests on. A disproved claim
//! quarantines its worker: its calls are refused, its tasks go back to the queue, puzzles that
//! rest on its reports start again, and stored answers and bounds that rest on them are
//! withdrawn and their items solved again.
//!
//! [`PROBATION_AUDITS`]: super::workers::PROBATION_AUDITS
//! [`Lineage`]: super::workers::Lineage

use tilesolve::moves::replay;
use tilesolve::{Board, Direction};

use super::config::{Verify, PROBATION_SAMPLE_NODES};
use super::deferred::{
    Deferred, FinishedAudit, PendingAudit, UnauditedClaim, COORDINATOR_AUDIT_NODES,
    COORDINATOR_CHUNK_NODES,
};
use super::tasks::{Audit, TaskEntry};
use super::types::{
    Lineage, PuzzleId, SchedulerError, TaskId, TaskOutcome, TaskReport, TaskSpec, WorkerId,
    MAX_ATTEMPTS,
};
use super::{batches, intake, Scheduler};
use crate::store::ItemStatus;
use crate::store::{StoreError, StoredBatch};

/// What a report says about paths: below these boards (each with its path from the puzzle's
/// root), no path to the goal is shorter than the length given.
fn claims(spec: &TaskSpec, outcome: &TaskOutcome) -> Vec<(Board, Vec<Direction>, u32)> {
    let whole = |length: u32| vec![(spec.board, spec.path.clone(), length)];
    // A whole-puzzle task starts at a bound it is given: its first iteration finds some path
    // within that bound, not the shortest, so only what it ruled out past its first iteration
    // is its own claim.
    let beyond_start = |length: u32| {
        if length > spec.bound {
            whole(length)
        } else {
            Vec::new()
        }
    };
    match outcome {
        TaskOutcome::Exceeded(next) => whole(*next),
        TaskOutcome::BudgetSpent(at) => beyond_start(*at),
        TaskOutcome::Found(suffix) if spec.iterate => {
            beyond_start((spec.path.len() + suffix.len()) as u32)
        }
        // The children it did not hand back, it says, lead to nothing below `pruned_min_f`.
        TaskOutcome::Split {
            children,
            pruned_min_f,
        } => spec
            .followed_children()
            .into_iter()
            .filter(|(d, _)| !children.contains(d))
            .map(|(d, board)| {
                let mut path = spec.path.clone();
                path.push(d);
                (board, path, *pruned_min_f)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A number in [0, 1) that only someone holding `seed` can predict for `task` (SplitMix64).
fn draw(seed: u64, task: TaskId) -> f64 {
    let mut z = seed ^ task.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl Scheduler {
    /// After `worker`'s report for `entry` was taken: audits its claims when the worker is
    /// on probation or the draw says so, on a worker of another lineage or on the coordinator.
    /// Returns the claims left unaudited (none when audits are off): an answer resting on
    /// them has them audited before it is stored (see [`Scheduler::audit_answer`]).
    pub(super) fn maybe_audit(
        &mut self,
        worker: WorkerId,
        entry: &TaskEntry,
        outcome: &TaskOutcome,
        nodes: u64,
    ) -> Vec<UnauditedClaim> {
        let verify = self.config.verify;
        if verify == Verify::Off || !self.puzzles.contains_key(&entry.puzzle) {
            return Vec::new();
        }
        let node_budget = if entry.spec.iterate {
            self.config.whole_task_budget
        } else {
            entry.spec.node_budget
        };
        let lineage = self
            .workers
            .lineage(worker)
            .unwrap_or(Lineage::Registration(worker));
        let claims: Vec<UnauditedClaim> = claims(&entry.spec, outcome)
            .into_iter()
            .filter(|&(_, _, claim)| claim > 0)
            .map(|(board, path, claim)| UnauditedClaim {
                nodes,
                spec: TaskSpec {
                    id: 0,
                    board,
                    path,
                    bound: claim - 1,
                    iterate: false,
                    node_budget,
                    profile_depth: 0,
                    ..entry.spec.clone()
                },
                audit: Audit {
                    of: worker,
                    lineage,
                    claim,
                },
            })
            .collect();
        if claims.is_empty() {
            return claims;
        }
        let on_probation = self.workers.on_probation(worker)
            && (verify == Verify::Full || nodes <= PROBATION_SAMPLE_NODES);
        let drawn =
            on_probation || draw(self.audit_seed, entry.spec.id) < self.config.audit_fraction;
        if !drawn {
            // Kept for the answer's audits under `full`; under `sample` nobody audits them.
            return match verify {
                Verify::Full => claims,
                Verify::Off | Verify::Sample => Vec::new(),
            };
        }
        for claim in claims {
            self.route_audit(entry.puzzle, claim);
        }
        Vec::new()
    }

    /// Audits `claim` on a worker of another lineage when one is connected, else on the
    /// coordinator's background pool.
    fn route_audit(&mut self, puzzle: PuzzleId, claim: UnauditedClaim) {
        if self.workers.independent_of(claim.audit.lineage) {
            self.queue_audit(puzzle, claim);
        } else if claim.nodes <= COORDINATOR_AUDIT_NODES {
            // Run in the lock cycle that drew it, as an answer's audit is: handed to the
            // background pool, a sampled audit of an easy board cost more in the hand-off
            // than in its search. A claim that said it was small and is not spends this
            // budget and goes on in its children, on the background pool.
            self.audit_here(puzzle, claim, COORDINATOR_AUDIT_NODES);
        } else {
            self.audit_here(puzzle, claim, COORDINATOR_CHUNK_NODES);
        }
    }

    /// Audits `claim` on the coordinator's own tables within `budget` nodes (any admissible
    /// heuristic finds a path under the claim's bound): deferred, to run outside the lock.
    fn audit_here(&mut self, puzzle: PuzzleId, claim: UnauditedClaim, budget: u64) {
        let Some(p) = self.puzzles.get(&puzzle) else {
            return;
        };
        let (goal, heuristic) = (p.goal, p.heuristic);
        let solver = match self.solver(&goal, heuristic) {
            Ok(solver) => solver.clone(),
            // A puzzle starts only once the coordinator holds its tables, so this is a fault.
            Err(error) => {
                let (batch, puzzle) = (puzzle.0, puzzle.1 + 1);
                tracing::error!(batch, puzzle, %error, "an audit cannot run on the coordinator");
                self.totals.audits_skipped += 1;
                return;
            }
        };
        let id = self.new_audit(puzzle);
        self.deferred.push(Deferred::Audit(PendingAudit {
            puzzle,
            claim,
            id,
            solver,
            budget,
        }));
    }

    fn queue_audit(&mut self, puzzle: PuzzleId, claim: UnauditedClaim) {
        let id = self.new_audit(puzzle);
        self.tasks.add_audit(
            puzzle,
            TaskSpec { id, ..claim.spec },
            claim.audit,
            claim.nodes,
        );
    }

    /// An id for an audit of `puzzle`, whose answer waits for it until it is resolved.
    fn new_audit(&mut self, puzzle: PuzzleId) -> TaskId {
        let id = self.next_id();
        if let Some(p) = self.puzzles.get_mut(&puzzle) {
            p.audits.insert(id);
        }
        id
    }

    /// Before `puzzle`'s answer is stored: audits each claim its length rests on that no audit
    /// checked, on the coordinator when it is small ([`COORDINATOR_AUDIT_NODES`]), else on a
    /// worker other than the one that made it. The claims of the iteration (or whole task)
    /// that set the bound the answer was found at say together that nothing is shorter, so a
    /// false one among them is the only way a longer answer gets this far; it is found before
    /// anyone reads the answer.
    pub(super) fn audit_answer(&mut self, puzzle: PuzzleId) {
        let Some(p) = self.puzzles.get_mut(&puzzle) else {
            return;
        };
        let proof = std::mem::take(&mut p.proof);
        if proof.is_empty() {
            return;
        }
        for claim in proof {
            self.totals.answer_audits += 1;
            if claim.nodes <= COORDINATOR_AUDIT_NODES {
                self.audit_here(puzzle, claim, COORDINATOR_AUDIT_NODES);
            } else {
                self.route_audit(puzzle, claim);
            }
        }
    }

    /// Takes an audit the coordinator ran: a shorter path disproves the claim, nothing found
    /// upholds it, and a spent budget hands it to a worker.
    pub(super) fn finish_audit(&mut self, finished: FinishedAudit) -> Result<(), SchedulerError> {
        let FinishedAudit {
            puzzle,
            claim,
            id,
            outcome,
        } = finished;
        // The puzzle started again or ended meanwhile: nothing waits for this audit.
        if !self
            .puzzles
            .get(&puzzle)
            .is_some_and(|p| p.audits.contains(&id))
        {
            return Ok(());
        }
        let spec = &claim.spec;
        match outcome {
            TaskOutcome::Found(suffix) if replay(&spec.board, &spec.goal, &suffix).is_ok() => {
                let length = (spec.path.len() + suffix.len()) as u32;
                return self.disproved(claim.audit, puzzle, id, length);
            }
            TaskOutcome::Exceeded(next) if next > spec.bound => {
                self.workers.audit_passed(claim.audit.of);
                self.totals.audits_upheld += 1;
            }
            TaskOutcome::Split { children, .. } => {
                self.audit_children(puzzle, spec, claim.audit, &children);
            }
            outcome => {
                // The coordinator's own search cannot fail but by a fault: a worker of another
                // lineage may still run it.
                let (batch, index) = (puzzle.0, puzzle.1 + 1);
                tracing::error!(
                    batch,
                    puzzle = index,
                    ?outcome,
                    "the coordinator's audit failed"
                );
                if self.workers.independent_of(claim.audit.lineage) {
                    self.queue_audit(puzzle, claim);
                } else {
                    self.totals.audits_skipped += 1;
                }
            }
        }
        self.audit_resolved(puzzle, id)
    }

    /// Applies the result of an audit task from `auditor`.
    pub(super) fn apply_audit(
        &mut self,
        auditor: WorkerId,
        entry: TaskEntry,
        report: TaskReport,
    ) -> Result<(), SchedulerError> {
        let (task, puzzle) = (entry.spec.id, entry.puzzle);
        let Some(audit) = entry.audit else {
            return Ok(());
        };
        let spec = &entry.spec;
        let impossible = match &report.outcome {
            TaskOutcome::Found(suffix) => match replay(&spec.board, &spec.goal, suffix) {
                Ok(_) => {
                    let length = (spec.path.len() + suffix.len()) as u32;
                    if length < audit.claim {
                        return self.disproved(audit, puzzle, task, length);
                    }
                    Some(format!(
                        "an audit at bound {} reported a {length}-move path",
                        spec.bound
                    ))
                }
                Err(error) => Some(format!(
                    "an audit reported moves that do not reach the goal: {error}"
                )),
            },
            TaskOutcome::Exceeded(next) if *next <= spec.bound => Some(format!(
                "an audit reported next bound {next}, not above bound {}",
                spec.bound
            )),
            TaskOutcome::Exceeded(_) => {
                self.workers.audit_passed(audit.of);
                self.totals.audits_upheld += 1;
                None
            }
            TaskOutcome::Failed(_) if entry.attempts + 1 < MAX_ATTEMPTS => {
                self.tasks.retry(entry);
                return Ok(());
            }
            // The audit spent its budget: its children are audited instead, under the same
            // bound and claim, and the answer waits for them all. (Taking a spent budget as
            // "nothing found" let a lie stand whose audit was larger than the task it checked.)
            TaskOutcome::Split { children, .. } => {
                self.audit_children(puzzle, spec, audit, children);
                None
            }
            // Failed for good on workers: the coordinator runs it.
            _ => {
                let claim = UnauditedClaim {
                    spec: entry.spec.clone(),
                    audit,
                    nodes: u64::MAX,
                };
                self.audit_here(puzzle, claim, COORDINATOR_CHUNK_NODES);
                None
            }
        };
        if let Some(reason) = impossible {
            let (batch, puzzle) = (entry.puzzle.0, entry.puzzle.1 + 1);
            tracing::warn!(batch, puzzle, task, worker = auditor, %reason, "impossible audit report");
            self.tasks.retry_as_new(entry);
            if self.workers.strike(auditor) {
                self.quarantine(auditor, format!("impossible reports, the last: {reason}"))?;
            }
            return Ok(());
        }
        self.audit_resolved(puzzle, task)
    }

    /// Audits each of `children` (moves from `spec`'s board within its bound) in place of the
    /// audit `spec` that spent its budget.
    fn audit_children(
        &mut self,
        puzzle: PuzzleId,
        spec: &TaskSpec,
        audit: Audit,
        children: &[Direction],
    ) {
        if !self.puzzles.contains_key(&puzzle) {
            return;
        }
        for &direction in children {
            let Some((board, _)) = spec.board.apply(direction) else {
                continue;
            };
            let mut path = spec.path.clone();
            path.push(direction);
            let spec = TaskSpec {
                board,
                path,
                ..spec.clone()
            };
            self.route_audit(
                puzzle,
                UnauditedClaim {
                    spec,
                    audit,
                    nodes: u64::MAX,
                },
            );
        }
    }

    /// An audit found a `length`-move path below a board whose report said nothing shorter
    /// than `audit.claim` existed: the reporting worker lied or is broken.
    fn disproved(
        &mut self,
        audit: Audit,
        puzzle: PuzzleId,
        task: TaskId,
        length: u32,
    ) -> Result<(), SchedulerError> {
        self.totals.audits_disproved += 1;
        if let Some(p) = self.puzzles.get_mut(&puzzle) {
            p.audits.remove(&task);
        }
        self.quarantine(
            audit.of,
            format!(
                "it reported no path shorter than {} moves, and an audit found one of {length}",
                audit.claim
            ),
        )
    }

    /// An audit of `puzzle` ended without disproving anything: an answer waiting only for it
    /// is stored now.
    fn audit_resolved(&mut self, puzzle: PuzzleId, task: TaskId) -> Result<(), SchedulerError> {
        let Some(p) = self.puzzles.get_mut(&puzzle) else {
            return Ok(());
        };
        p.audits.remove(&task);
        if p.audits.is_empty() {
            if let Some(moves) = p.held.take() {
                return self.finish_solved(puzzle, moves);
            }
        }
        Ok(())
    }

    /// Hands the coordinator the queued audits no connected worker may run (every worker of
    /// another lineage has gone) or none took within a lease timeout (the one that may never
    /// asks for work): an answer never waits for ever on an audit, and never goes without one.
    pub(super) fn audit_stranded_here(&mut self) -> Result<(), SchedulerError> {
        let workers = &self.workers;
        let stale = std::time::Instant::now().checked_sub(self.config.lease_timeout);
        let stranded = self
            .tasks
            .take_stranded_audits(stale, |lineage| workers.independent_of(lineage));
        for entry in stranded {
            self.audit_task_here(entry)?;
        }
        Ok(())
    }

    /// Runs the audit task `entry`, which no worker will report on, on the coordinator.
    pub(super) fn audit_task_here(&mut self, entry: TaskEntry) -> Result<(), SchedulerError> {
        let Some(audit) = entry.audit else {
            return Ok(());
        };
        let (puzzle, task) = (entry.puzzle, entry.spec.id);
        let claim = UnauditedClaim {
            spec: entry.spec,
            audit,
            nodes: u64::MAX,
        };
        self.audit_here(puzzle, claim, COORDINATOR_CHUNK_NODES);
        self.audit_resolved(puzzle, task)
    }

    /// Shuts `worker` out for `reason` without doubting its reports (it failed, it did not
    /// lie): every further call is refused, its tasks go back to the queue, and the attempts
    /// its failures cost are given back, so they are retried elsewhere.
    pub(super) fn shut_out(&mut self, worker: WorkerId, reason: String) {
        tracing::warn!(worker, %reason, "worker shut out: its tasks go to others");
        self.workers.quarantine(worker, reason);
        self.tasks.release(worker);
        self.tasks.forgive_failures(worker);
        self.totals.workers_quarantined += 1;
    }

    /// Shuts `worker` out for `reason` and undoes what rests on its reports: its tasks go
    /// back to the queue, live puzzles that used its reports start again, and stored answers
    /// and bounds that rest on them are withdrawn, their items solved again.
    pub(super) fn quarantine(
        &mut self,
        worker: WorkerId,
        reason: String,
    ) -> Result<(), SchedulerError> {
        tracing::warn!(worker, %reason, "worker quarantined: what rests on its reports is solved again");
        self.workers.quarantine(worker, reason.clone());
        self.tasks.release(worker);
        self.totals.workers_quarantined += 1;
        let (solutions, bounds) = self.store.withdraw_worker(worker)?;
        let live: Vec<PuzzleId> = self
            .puzzles
            .iter()
            .filter(|(_, p)| p.workers.contains(&worker))
            .map(|(&id, _)| id)
            .collect();
        for &puzzle in &live {
            self.restart_puzzle(puzzle, &format!("worker {worker} was quarantined"))?;
        }
        let mut reopened = 0;
        let store = self.store.clone();
        for batch in store.each_batch() {
            let batch = batch?;
            let mut items = self.store.items(batch.id)?;
            let mut changed = Vec::new();
            for (index, item) in items.iter_mut().enumerate() {
                // A bounded answer's lower bound rests on its workers as a solution does.
                let workers = match &item.status {
                    ItemStatus::Solved(solved) => &solved.workers,
                    ItemStatus::Bounded(bounded) => &bounded.workers,
                    ItemStatus::Queued | ItemStatus::Failed(_) => continue,
                };
                if !workers.contains(&worker) {
                    continue;
                }
                item.status = if batch.cancelled {
                    ItemStatus::Failed(format!("answer withdrawn: worker {worker} was quarantined"))
                } else {
                    ItemStatus::Queued
                };
                self.store.put_item(batch.id, index as u32, item)?;
                changed.push(index as u32);
            }
            if changed.is_empty() {
                continue;
            }
            reopened += changed.len();
            self.batches
                .reopen(batch.id, batches::counts(&items), batch.finished);
            if batch.cancelled {
                // Nothing runs again for a cancelled batch: only its figures change.
                self.close_batch(batch.id)?;
            } else if batch.finished.is_some() {
                self.store.put_batch(&StoredBatch {
                    finished: None,
                    ..batch.clone()
                })?;
            }
            if !batch.cancelled {
                // A stored batch's heuristic, as it was named at its intake.
                let heuristic = intake::parse_heuristic(&batch.heuristic)?;
                for index in changed {
                    self.start_item(batch.id, index, &items[index as usize], heuristic)?;
                }
            }
        }
        tracing::warn!(
            worker,
            solutions,
            bounds,
            live = live.len(),
            reopened,
            "withdrawn: stored boards, stored bounds, puzzles started again, answered items solved again"
        );
        self.flush_due = true;
        Ok(())
    }

    /// Starts a live puzzle over from its heuristic estimate: the reports its search rested on
    /// cannot all be true.
    pub(super) fn restart_puzzle(
        &mut self,
        puzzle: PuzzleId,
        reason: &str,
    ) -> Result<(), SchedulerError> {
        let Some(p) = self.puzzles.get(&puzzle) else {
            return Ok(());
        };
        let (goal, board, heuristic) = (p.goal, p.board, p.heuristic);
        let (batch, index) = puzzle;
        tracing::warn!(batch, puzzle = index + 1, %reason, "puzzle starts again");
        self.cancel_tasks(puzzle);
        self.puzzles.remove(&puzzle);
        self.totals.puzzles_restarted += 1;
        self.store.remove_search_state(&goal, &board)?;
        let corrupt = |what: &str| StoreError::Corrupt {
            tree: "items",
            reason: format!("batch {batch} item {index}: {what}"),
        };
        let item = self
            .store
            .item(batch, index)?
            .ok_or_else(|| corrupt("missing"))?;
        // The heuristic as the puzzle has it: a batch being taken in has no record yet.
        self.start_item(batch, index, &item, heuristic)
    }
}

#[cfg(test)]
mod tests {
    use super::draw;

    #[test]
    fn draws_spread_over_the_unit_interval() {
        let below: usize = (0..10_000).filter(|&t| draw(42, t) < 0.05).count();
        assert!((350..650).contains(&below), "{below}");
        assert!((0..10_000).all(|t| (0.0..1.0).contains(&draw(7, t))));
    }
}
