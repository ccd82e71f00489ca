//! The task table: every task not yet finished, its lease, its attempts, and the ready queue
//! that decides which task goes out next. It knows puzzles only by id and workers only by id.

use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

use super::holders::{Holders, TokenRoom};
use super::types::{HeldTask, Lineage, PuzzleId, TaskId, TaskSpec, WorkerId, MAX_ATTEMPTS};
use crate::queue::{Lane, Place, ReadyQueue};

pub(super) struct Lease {
    pub(super) worker: WorkerId,
    expires: Instant,
    /// When the task went out, for its round trip in the task records.
    pub(super) since: Instant,
    /// No renewal goes past this: the task's node budget at [`LEASE_MIN_NODE_RATE`], plus a
    /// lease timeout (none for a task without a budget).
    deadline: Option<Instant>,
}

/// Expanded nodes a second below which no worker runs a task (a hundredth of the kernel's
/// rate): a lease held longer than its task's budget takes at this rate is overdue, however
/// often its worker says it is running it. A registration that heartbeats the tasks it took
/// and never runs them loses them then, and each counts as its failure.
pub const LEASE_MIN_NODE_RATE: f64 = 100_000.0;

/// When a lease of a task with `node_budget` taken at `now` is overdue.
fn deadline(node_budget: u64, now: Instant, timeout: Duration) -> Option<Instant> {
    let seconds = node_budget as f64 / LEASE_MIN_NODE_RATE;
    (node_budget > 0 && seconds < 1e7).then(|| now + Duration::from_secs_f64(seconds) + timeout)
}

/// What an audit task checks: that no path shorter than `claim` exists below the task's board,
/// as the report of `of` said (the audit searches one move short of the claim, so any path it
/// finds disproves it).
#[derive(Clone, Copy, Debug)]
pub(super) struct Audit {
    pub(super) of: WorkerId,
    /// No worker of this lineage runs it: under `full` the reporter's (one token, one liar);
    /// under `sample` the reporter's own registration (see `Audits::maybe_audit`).
    pub(super) lineage: Lineage,
    pub(super) claim: u32,
    /// Only a worker past its probation may run it (under `sample`, where registrations of
    /// one token audit each other): registrations that all lie never uphold each other's
    /// claims before one of them has had its own upheld by another worker or the coordinator.
    pub(super) trusted_only: bool,
    /// Drawn for its reporter's probation: upheld, it counts toward it. A sampled audit, or one
    /// an answer waits for, does not: a liar that claims huge searches is never drawn for
    /// probation, and passing it on the answers' audits of its true claims let it lie unseen
    /// afterwards.
    pub(super) probation: bool,
}

impl Audit {
    /// Whether `worker`, of `lineage`, past its probation or not (`trusted`), may run this
    /// audit: never the reporter itself, nor a worker of the lineage it is kept from.
    pub(super) fn may_run_on(&self, worker: WorkerId, lineage: Lineage, trusted: bool) -> bool {
        worker != self.of && lineage != self.lineage && (trusted || !self.trusted_only)
    }
}

pub(super) struct TaskEntry {
    pub(super) spec: TaskSpec,
    pub(super) puzzle: PuzzleId,
    pub(super) lease: Option<Lease>,
    pub(super) attempts: u32,
    /// Set for an audit task, which never goes to a worker of the lineage it audits.
    pub(super) audit: Option<Audit>,
    /// Its place in the ready queue: its turn, its wave (whole task or split iteration), and
    /// where one thread's search meets its subtree within the wave
    /// (`frontier::SubtreeTask::order`; empty for a whole task or an audit).
    pub(super) place: Place,
    /// Its batch's lane (priority, then owner), which ranks it in the queue ahead of its place.
    lane: Lane,
    /// The nodes the policy predicts it will expand.
    pub(super) predicted: u64,
    /// When it was queued (or queued again after a failure): an audit nobody takes within a
    /// lease timeout is run by the coordinator instead.
    queued: Instant,
    /// The workers whose failed reports cost it attempts: given back if one is shut out.
    failed_by: Vec<WorkerId>,
    /// A whole task leased with a budget cut short for its worker's probation
    /// ([`Holding::short_whole_tasks`]): when it spends that budget, its puzzle goes on whole
    /// rather than being split.
    pub(super) cut_short: bool,
}

/// How much a worker may hold, from its threads and measured pace
/// ([`super::workers::Workers::reported`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Holding {
    /// Its lineage: it takes no audit of a report of that lineage.
    pub(super) lineage: Lineage,
    /// It is past its probation: it may run audits only such workers may.
    pub(super) trusted: bool,
    /// Leases it may hold in all, prefetched ones included.
    pub(super) most: usize,
    /// Leases its own reports earned: those it holds beyond them come from its worker token's
    /// pool ([`Holding::token_room`]).
    pub(super) earned: usize,
    pub(super) threads: usize,
    /// A task predicted to expand more nodes than this is long: it goes out only to a thread
    /// with nothing to do (see [`super::PREFETCH_MOST_SECONDS`]).
    pub(super) long_above_nodes: u64,
    /// Threads of the other connected workers with nothing to do: a worker prefetches only
    /// from the queued tasks beyond what they could take.
    pub(super) idle_elsewhere: usize,
    /// Most a whole-puzzle task leased now may spend (`SchedulerConfig::whole_task_budget_now`).
    pub(super) whole_task_budget: u64,
    /// The first this many whole-puzzle tasks leased now may spend only `short_whole_budget`
    /// (a worker on probation: `Workers::probation_short_left`).
    pub(super) short_whole_tasks: usize,
    pub(super) short_whole_budget: u64,
    /// What its worker token's pool of unearned leases leaves it (filled in by the scheduler).
    pub(super) token_room: TokenRoom,
}

/// Whether a worker leaves `entry` for an idle thread: a long task when it would prefetch it
/// (`busy`), or a subtree task of a puzzle whose earlier one it left (`held_back`, which gains
/// the puzzle). A later subtree task taken past a left one would be searched before it, out of
/// the order one thread meets them: in the iteration that holds the goal, the work past the
/// goal then comes first (serve + 1 worker searched 1.14x one thread's nodes).
fn left_for_idle_thread(
    entry: &TaskEntry,
    holding: &Holding,
    busy: bool,
    held_back: &mut Vec<PuzzleId>,
) -> bool {
    let in_search_order = !entry.spec.iterate && entry.audit.is_none();
    if in_search_order && held_back.contains(&entry.puzzle) {
        return true;
    }
    // A whole task's `predicted` is its budget, not a prediction: it is never long.
    if busy && !entry.spec.iterate && entry.predicted > holding.long_above_nodes {
        if in_search_order {
            held_back.push(entry.puzzle);
        }
        return true;
    }
    false
}

/// Long tasks a lease looks past, at most, for shorter ones a busy worker may prefetch. The
/// queue takes puzzles in turns (`queue`), so its first entries hold each queued puzzle's next
/// task, and a puzzle whose next task is long has the rest held back behind it: past the first
/// round a scan meets mostly tasks it must pass again. Each costs a pop, a lookup and a push
/// back, and nearly every poll of a one-thread worker that holds a task is such a scan: at 256,
/// on the Korf-24 five through fifteen workers, the lease loop was 7.4% of the coordinator's
/// samples (3.5% at 32) and its CPU about a tenth more, with walls no shorter (history.md,
/// sixty-first session).
const MOST_LONG_PASSED: usize = 32;

/// What expiring leases did.
#[derive(Default)]
pub(super) struct Expired {
    /// Tasks back in the queue.
    pub(super) requeued: usize,
    /// Tasks that lost their worker [`MAX_ATTEMPTS`] times, with their puzzles.
    pub(super) exhausted: Vec<(PuzzleId, TaskId)>,
    /// Workers that held a lease past its deadline while saying they ran it, once a lease:
    /// those leases cost their tasks no attempt (the workers' failures bound them).
    pub(super) overdue: Vec<WorkerId>,
}

#[derive(Default)]
pub(super) struct Tasks {
    /// Keyed by the coordinator's own sequence numbers, never a caller's: no need of SipHash.
    /// Boxed: an entry is a few hundred bytes, which the map's growth moved (a twentieth of
    /// the coordinator's time taking in 10,000 easy boards) and every removal copied out.
    entries: FxHashMap<TaskId, Box<TaskEntry>>,
    ready: ReadyQueue<TaskId>,
    waves: u64,
    /// Leases each worker holds, so a poll can be capped by what the worker already has
    /// without a pass over every task, and the threads with nothing to do.
    holders: Holders,
    /// A task was queued (or queued again) since [`Tasks::take_newly_queued`]: idle workers'
    /// long polls are woken for that, not for every call that finds tasks waiting.
    newly_queued: bool,
}

impl Tasks {
    /// A new wave: a puzzle's whole task or one split iteration, queued behind the waves before
    /// it that wait for the same turn (see [`ReadyQueue`]).
    pub(super) fn next_wave(&mut self) -> u64 {
        self.waves += 1;
        self.waves
    }

    /// The round in progress: a wave queued now has its `k`-th task wait for this turn plus `k`
    /// (see [`ReadyQueue`]).
    pub(super) fn turn_now(&self) -> u64 {
        self.ready.turn_now()
    }

    /// Queues `spec` (whose id is set) for `puzzle`, whose batch waits in `lane`, at `place`.
    pub(super) fn add(
        &mut self,
        (puzzle, lane): (PuzzleId, Lane),
        spec: TaskSpec,
        place: Place,
        predicted: u64,
    ) {
        self.insert((puzzle, lane), spec, place, predicted, None);
    }

    /// Queues an audit task (whose id is set) ahead of every wave, since the puzzle's answer
    /// waits for it, predicted to expand about `predicted` nodes (the audited report's).
    pub(super) fn add_audit(
        &mut self,
        (puzzle, lane): (PuzzleId, Lane),
        spec: TaskSpec,
        audit: Audit,
        predicted: u64,
    ) {
        self.insert(
            (puzzle, lane),
            spec,
            Place::default(),
            predicted,
            Some(audit),
        );
    }

    /// Room for a part's tasks at once (growing by doublings moved every entry again).
    pub(super) fn reserve(&mut self, additional: usize) {
        self.entries.reserve(additional);
    }

    fn insert(
        &mut self,
        (puzzle, lane): (PuzzleId, Lane),
        mut spec: TaskSpec,
        place: Place,
        predicted: u64,
        audit: Option<Audit>,
    ) {
        let id = spec.id;
        spec.priority = lane.priority;
        self.entries.insert(
            id,
            Box::new(TaskEntry {
                spec,
                puzzle,
                lease: None,
                attempts: 0,
                audit,
                place: place.clone(),
                lane: lane.clone(),
                predicted,
                queued: Instant::now(),
                failed_by: Vec::new(),
                cut_short: false,
            }),
        );
        self.newly_queued = true;
        self.ready.push(&lane, puzzle.0, place, id);
    }

    /// Leases ready tasks to `worker` until `now + timeout`, up to `count` or until it holds
    /// `holding.most` leases in all: a worker that asks again and again, or never reports,
    /// cannot take the whole queue from the others. A long task goes only into a thread with
    /// nothing to do, so the long tasks at an iteration's end spread over every worker instead
    /// of waiting one behind another in the worker that asked first; and the same puzzle's
    /// later subtree tasks wait with it, so a worker never searches them before it. And a
    /// worker prefetches (takes more than its threads with nothing to do) only the tasks left
    /// over once every idle thread elsewhere could have one ([`Holding::idle_elsewhere`]):
    /// sixteen whole puzzles of unknown cost went to the first four of fifteen workers to ask,
    /// five each, while the other eleven idled.
    pub(super) fn lease(
        &mut self,
        worker: WorkerId,
        count: usize,
        mut holding: Holding,
        now: Instant,
        timeout: Duration,
    ) -> Vec<TaskSpec> {
        let held = self.held(worker);
        let count = count.min(holding.most.saturating_sub(held));
        let room = holding.token_room;
        let (mut from_pool, mut refused) = (0, false);
        let mut leased = Vec::new();
        let mut passed_over = Vec::new();
        let mut long_passed = 0;
        // Puzzles whose next subtree task (in search order) waits for an idle thread.
        let mut held_back: Vec<PuzzleId> = Vec::new();
        let mut remaining = self.ready.len();
        while leased.len() < count && long_passed < MOST_LONG_PASSED {
            let Some(queued) = self.ready.pop_entry() else {
                break;
            };
            let id = *queued.item();
            remaining = remaining.saturating_sub(1);
            // Withdrawn tasks leave their ids behind; a leased task is never handed out twice.
            let Some(entry) = self.entries.get_mut(&id).filter(|t| t.lease.is_none()) else {
                continue;
            };
            if entry
                .audit
                .is_some_and(|audit| !audit.may_run_on(worker, holding.lineage, holding.trusted))
            {
                passed_over.push(queued);
                continue;
            }
            let prefetch = held + leased.len() >= holding.threads;
            if prefetch && remaining < holding.idle_elsewhere {
                // What is left is the idle threads' elsewhere (and so is every later task).
                passed_over.push(queued);
                break;
            }
            if left_for_idle_thread(entry, &holding, prefetch, &mut held_back) {
                passed_over.push(queued);
                long_passed += 1;
                continue;
            }
            // Past its own earnings a lease comes from the token's pool, and goes to a
            // prefetch only while the pool could still give each idle registration one.
            let on_pool = leased.len() >= room.earned;
            if on_pool
                && (from_pool >= room.pool
                    || (prefetch && room.pool - from_pool <= room.idle_elsewhere))
            {
                passed_over.push(queued);
                refused = true;
                break;
            }
            from_pool += usize::from(on_pool);
            self.ready.taken(&queued);
            if entry.spec.iterate && entry.spec.weighted.is_none() && entry.audit.is_none() {
                let full = entry.spec.node_budget.min(holding.whole_task_budget);
                let mut budget = full;
                if holding.short_whole_tasks > 0 {
                    holding.short_whole_tasks -= 1;
                    budget = budget.min(holding.short_whole_budget);
                }
                entry.cut_short |= budget < full;
                entry.spec.node_budget = budget;
            }
            entry.lease = Some(Lease {
                worker,
                expires: now + timeout,
                since: now,
                deadline: deadline(entry.spec.node_budget, now, timeout),
            });
            tracing::debug!(
                batch = entry.puzzle.0,
                puzzle = entry.puzzle.1 + 1,
                task = id,
                worker,
                bound = entry.spec.bound,
                audit = entry.audit.is_some(),
                "task leased"
            );
            leased.push(entry.spec.clone());
        }
        for queued in passed_over {
            self.ready.put_back(queued);
        }
        if !leased.is_empty() {
            self.holders.leased(worker, leased.len());
        }
        if refused {
            self.holders.refused(worker);
        }
        leased
    }

    /// Returns every task `worker` holds to the queue at once, ahead of their batch's other
    /// tasks, without counting an attempt (it was quarantined or is leaving: its tasks are not
    /// at fault); returns how many.
    pub(super) fn release(&mut self, worker: WorkerId) -> usize {
        let mut ids: Vec<TaskId> = self
            .entries
            .iter()
            .filter(|(_, t)| t.lease.as_ref().is_some_and(|l| l.worker == worker))
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        for &id in &ids {
            if let Some(entry) = self.entries.get_mut(&id) {
                entry.lease = None;
                self.newly_queued = true;
                self.ready
                    .push(&entry.lane, entry.puzzle.0, entry.place.clone(), id);
            }
        }
        self.holders.forget(worker);
        self.wake_if_freed();
        ids.len()
    }

    /// Takes out the audit tasks waiting in the queue that no connected worker may run
    /// (`can_audit` is false for them), or that were queued
    /// before `stale` (a worker that may run them never asks for work).
    pub(super) fn take_stranded_audits(
        &mut self,
        stale: Option<Instant>,
        can_audit: impl Fn(&Audit) -> bool,
    ) -> Vec<TaskEntry> {
        let ids: Vec<TaskId> = self
            .entries
            .iter()
            .filter(|(_, t)| t.lease.is_none())
            .filter(|(_, t)| {
                t.audit.is_some_and(|audit| {
                    !can_audit(&audit) || stale.is_some_and(|stale| t.queued <= stale)
                })
            })
            .map(|(&id, _)| id)
            .collect();
        ids.into_iter()
            .filter_map(|id| self.entries.remove(&id))
            .map(|entry| *entry)
            .collect()
    }

    /// Takes out `task` if it is an audit that holds no lease (one the sweep left out of
    /// attempts).
    pub(super) fn take_unleased_audit(&mut self, task: TaskId) -> Option<TaskEntry> {
        match self.entries.get(&task) {
            Some(entry) if entry.lease.is_none() && entry.audit.is_some() => {
                self.entries.remove(&task).map(|entry| *entry)
            }
            _ => None,
        }
    }

    /// Leases `worker` holds now.
    pub(super) fn held(&self, worker: WorkerId) -> usize {
        self.holders.held(worker)
    }

    /// A lease of `worker` ended (reported, expired, withdrawn).
    fn released(&mut self, worker: WorkerId) {
        self.holders.released(worker);
        self.wake_if_freed();
    }

    /// A token's pool that refused a lease has room again: the tasks it kept from the
    /// pollers waiting are there for them as if newly queued.
    fn wake_if_freed(&mut self) {
        if self.holders.take_freed() {
            self.newly_queued = true;
        }
    }

    /// `worker` joins, registered with worker token `token` (None: a lineage of its own), and
    /// may run `capacity` threads.
    pub(super) fn join(&mut self, worker: WorkerId, token: Option<usize>, capacity: usize) {
        self.holders.join(worker, token, capacity);
    }

    /// `worker` may run `capacity` threads from now on: its threads as far as it has earned
    /// them, or 0 once it is gone.
    pub(super) fn set_capacity(&mut self, worker: WorkerId, capacity: usize) {
        self.holders.set_capacity(worker, capacity);
    }

    /// `worker`'s own reports have earned it `earned` leases (beyond its token's pool).
    pub(super) fn set_earned(&mut self, worker: WorkerId, earned: usize) {
        self.holders.set_earned(worker, earned);
        self.wake_if_freed();
    }

    /// What `worker` may take beyond what it holds, its token's pool holding `pool` unearned
    /// leases.
    pub(super) fn token_room(&self, worker: WorkerId, pool: usize) -> TokenRoom {
        self.holders.token_room(worker, pool)
    }

    /// Threads with nothing to do over the connected workers but `worker`.
    pub(super) fn idle_threads_except(&self, worker: WorkerId) -> usize {
        self.holders.idle_except(worker)
    }

    /// Threads with nothing to do over the connected workers.
    pub(super) fn idle_threads(&self) -> usize {
        self.holders.idle()
    }

    /// Every lease, as the hand-backs weigh them.
    pub(super) fn leases(&self) -> impl Iterator<Item = HeldTask> + '_ {
        self.entries.iter().filter_map(|(&task, entry)| {
            let (lease, spec) = (entry.lease.as_ref()?, &entry.spec);
            let in_parts = !spec.iterate && spec.weighted.is_none() && spec.profile_depth > 0;
            Some(HeldTask {
                task,
                worker: lease.worker,
                since: lease.since,
                hands_back: in_parts,
            })
        })
    }

    /// Threads `worker` may run now.
    pub(super) fn threads_of(&self, worker: WorkerId) -> usize {
        self.holders.capacity(worker)
    }

    /// Whether some task may be waiting for a worker (withdrawn tasks may still be counted).
    pub(super) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Whether a task was queued since the last call, and some still waits.
    pub(super) fn take_newly_queued(&mut self) -> bool {
        std::mem::take(&mut self.newly_queued) && self.has_ready()
    }

    /// Renews the leases `worker` holds among `running` until `now + timeout`.
    pub(super) fn renew(
        &mut self,
        worker: WorkerId,
        running: &[TaskId],
        now: Instant,
        timeout: Duration,
    ) {
        for id in running {
            if let Some(lease) = self.entries.get_mut(id).and_then(|t| t.lease.as_mut()) {
                if lease.worker == worker {
                    lease.expires = lease
                        .deadline
                        .map_or(now + timeout, |deadline| deadline.min(now + timeout));
                }
            }
        }
    }

    /// Returns the tasks whose lease expired by `now` to the queue, ahead of their batch's
    /// other tasks and in their original order (they were leased first, so they are the ones an
    /// iteration is waiting for); those out of attempts are left for the caller to fail.
    pub(super) fn expire(&mut self, now: Instant) -> Expired {
        let mut ids: Vec<TaskId> = self
            .entries
            .iter()
            .filter(|(_, t)| t.lease.as_ref().is_some_and(|lease| lease.expires <= now))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let mut expired = Expired::default();
        for id in ids {
            let Some(entry) = self.entries.get_mut(&id) else {
                continue;
            };
            let Some(lease) = entry.lease.take() else {
                continue;
            };
            if lease.deadline.is_some_and(|deadline| deadline <= now) {
                expired.overdue.push(lease.worker);
            } else {
                entry.attempts += 1;
            }
            let (puzzle, place, lane) = (entry.puzzle, entry.place.clone(), entry.lane.clone());
            let exhausted = entry.attempts >= MAX_ATTEMPTS;
            self.released(lease.worker);
            if exhausted {
                expired.exhausted.push((puzzle, id));
            } else {
                self.newly_queued = true;
                self.ready.push(&lane, puzzle.0, place, id);
                expired.requeued += 1;
            }
        }
        expired
    }

    /// Takes out `task` if `worker` holds its lease: a result for a task the worker no longer
    /// holds (expired, cancelled, reassigned) is ignored, since whoever holds it now reports.
    pub(super) fn take_held(&mut self, task: TaskId, worker: WorkerId) -> Option<TaskEntry> {
        let held = self
            .entries
            .get(&task)
            .and_then(|t| t.lease.as_ref())
            .is_some_and(|l| l.worker == worker);
        if held {
            self.released(worker);
            self.entries.remove(&task).map(|entry| *entry)
        } else {
            None
        }
    }

    /// Puts a failed task back in the queue for another attempt.
    pub(super) fn retry(&mut self, entry: TaskEntry) {
        let attempts = entry.attempts + 1;
        self.requeue(entry, attempts);
    }

    /// Puts a task `worker` reported as failed back in the queue, counting an attempt against
    /// it (given back by [`Tasks::forgive_failures`] if the worker turns out to be at fault).
    pub(super) fn retry_failed(&mut self, mut entry: TaskEntry, worker: WorkerId) {
        entry.failed_by.push(worker);
        self.retry(entry);
    }

    /// Gives back the attempts `worker`'s failed reports cost the tasks still queued.
    pub(super) fn forgive_failures(&mut self, worker: WorkerId) {
        for entry in self.entries.values_mut() {
            let before = entry.failed_by.len();
            entry.failed_by.retain(|&by| by != worker);
            let forgiven = (before - entry.failed_by.len()) as u32;
            entry.attempts = entry.attempts.saturating_sub(forgiven);
        }
    }

    /// Puts a task back in the queue without counting an attempt: the report was the worker's
    /// fault, not the task's.
    pub(super) fn retry_as_new(&mut self, entry: TaskEntry) {
        let attempts = entry.attempts;
        self.requeue(entry, attempts);
    }

    fn requeue(&mut self, entry: TaskEntry, attempts: u32) {
        let (id, puzzle, place) = (entry.spec.id, entry.puzzle, entry.place.clone());
        let lane = entry.lane.clone();
        self.entries.insert(
            id,
            Box::new(TaskEntry {
                lease: None,
                attempts,
                queued: Instant::now(),
                ..entry
            }),
        );
        self.newly_queued = true;
        self.ready.push(&lane, puzzle.0, place, id);
    }

    pub(super) fn get(&self, task: TaskId) -> Option<&TaskEntry> {
        self.entries.get(&task).map(|entry| &**entry)
    }

    /// Removes `ids`; returns the leased ones with the worker holding each.
    pub(super) fn withdraw(
        &mut self,
        ids: impl IntoIterator<Item = TaskId>,
    ) -> Vec<(WorkerId, TaskId)> {
        // Withdrawn ids stay in `ready` until popped (and skipped): removing them here would
        // cost a pass over the whole queue for every finished puzzle.
        let leased: Vec<(WorkerId, TaskId)> = ids
            .into_iter()
            .filter_map(|id| {
                let lease = self.entries.remove(&id)?.lease?;
                Some((lease.worker, id))
            })
            .collect();
        for &(worker, _) in &leased {
            self.released(worker);
        }
        leased
    }

    /// (queued, running) tasks.
    pub(super) fn counts(&self) -> (u64, u64) {
        let running = self.entries.values().filter(|t| t.lease.is_some()).count() as u64;
        (self.entries.len() as u64 - running, running)
    }

    /// Leased tasks a worker thread runs now (the other leased ones are prefetched).
    pub(super) fn running(&self) -> u64 {
        self.holders.running() as u64
    }

    /// (queued, leased) tasks of one batch's puzzles.
    pub(super) fn batch_counts(&self, batch: u64) -> (u64, u64) {
        self.entries.values().filter(|t| t.puzzle.0 == batch).fold(
            (0, 0),
            |(queued, running), t| match t.lease {
                Some(_) => (queued, running + 1),
                None => (queued + 1, running),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Priority;
    use tilesolve::Board;

    /// A subtree task (or, with `iterate`, a whole one) of puzzle (1, 0).
    fn spec(id: TaskId, iterate: bool) -> TaskSpec {
        TaskSpec {
            id,
            puzzle: (1, 0),
            board: Board::blank_last(4),
            goal: Board::blank_last(4),
            heuristic: tilesolve::heuristic_choice::HeuristicChoice::Classic(
                tilesolve::heuristic::HeuristicKind::Manhattan,
            ),
            path: Vec::new(),
            bound: 50,
            iterate,
            node_budget: 0,
            profile_depth: 0,
            weighted: None,
            priority: Priority::DEFAULT,
        }
    }

    fn whole_place(wave: u64) -> Place {
        Place {
            turn: 0,
            wave,
            order: Vec::new(),
        }
    }

    /// What a trusted one-thread worker may hold: `most` leases, tasks over `long_above_nodes`
    /// long.
    fn one_thread(most: usize, long_above_nodes: u64) -> Holding {
        Holding {
            lineage: Lineage::Registration(0),
            trusted: true,
            most,
            threads: 1,
            long_above_nodes,
            idle_elsewhere: 0,
            whole_task_budget: u64::MAX,
            short_whole_tasks: 0,
            short_whole_budget: u64::MAX,
            earned: usize::MAX,
            token_room: TokenRoom::UNLIMITED,
        }
    }

    fn leased_ids(
        tasks: &mut Tasks,
        worker: WorkerId,
        holding: Holding,
        now: Instant,
    ) -> Vec<TaskId> {
        let mut ids: Vec<TaskId> = tasks
            .lease(worker, 100, holding, now, Duration::from_secs(60))
            .iter()
            .map(|spec| spec.id)
            .collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn long_tasks_go_only_to_idle_threads_and_other_puzzles_short_ones_are_still_prefetched() {
        let mut tasks = Tasks::default();
        let wave = tasks.next_wave();
        // Tasks 1-4 long (10,000 nodes predicted), 5-10 short (10 nodes), of another puzzle.
        for id in 1..=10 {
            let (puzzle, predicted) = if id <= 4 {
                ((1, 0), 10_000)
            } else {
                ((1, 1), 10)
            };
            tasks.add(
                (puzzle, Lane::default()),
                spec(id, false),
                whole_place(wave),
                predicted,
            );
        }
        let holding = one_thread(100, 1_000);
        let now = Instant::now();
        let (first, second) = (1, 2);
        let taken = leased_ids(&mut tasks, first, holding, now);
        assert_eq!(taken.iter().filter(|&&id| id <= 4).count(), 1, "{taken:?}");
        assert_eq!(
            taken.len(),
            7,
            "one long task and every short one: {taken:?}"
        );
        let taken = leased_ids(&mut tasks, second, holding, now);
        assert_eq!(taken.len(), 1, "{taken:?}");
        assert!(taken[0] <= 4, "the idle worker gets a long task: {taken:?}");
        assert!(
            leased_ids(&mut tasks, first, holding, now).is_empty(),
            "a busy thread prefetches no long task"
        );
        // Once its tasks are done, the first worker takes the next long one.
        for id in 1..=10 {
            tasks.take_held(id, first);
        }
        assert_eq!(leased_ids(&mut tasks, first, holding, now).len(), 1);
    }

    #[test]
    fn a_busy_worker_takes_no_subtree_task_after_its_puzzles_long_one() {
        let mut tasks = Tasks::default();
        let wave = tasks.next_wave();
        // One iteration in search order: 1 short, 2 long, 3-5 short.
        for id in 1..=5 {
            let predicted = if id == 2 { 10_000 } else { 10 };
            let place = Place {
                turn: id,
                wave,
                order: Vec::new(),
            };
            tasks.add(((1, 0), Lane::default()), spec(id, false), place, predicted);
        }
        let holding = one_thread(100, 1_000);
        let now = Instant::now();
        // Its thread takes 1; 2 waits for an idle thread, and 3-5 wait behind it.
        assert_eq!(leased_ids(&mut tasks, 1, holding, now), vec![1]);
        assert!(leased_ids(&mut tasks, 1, holding, now).is_empty());
        // Once 1 is done, its idle thread takes 2, then prefetches the rest.
        tasks.take_held(1, 1);
        assert_eq!(leased_ids(&mut tasks, 1, holding, now), vec![2, 3, 4, 5]);
    }

    #[test]
    fn whole_tasks_are_prefetched_whatever_their_budget() {
        let mut tasks = Tasks::default();
        for id in 1..=5 {
            let wave = tasks.next_wave();
            tasks.add(
                ((1, 0), Lane::default()),
                spec(id, true),
                whole_place(wave),
                20_000_000,
            );
        }
        let holding = one_thread(5, 0);
        assert_eq!(
            leased_ids(&mut tasks, 1, holding, Instant::now()),
            vec![1, 2, 3, 4, 5]
        );
    }
}
