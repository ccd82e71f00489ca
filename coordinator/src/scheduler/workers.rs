//! The worker registry: who is connected, with how many threads, what they last reported, and
//! the cancellations not yet told to them. Leases live with the tasks (`tasks`); this module
//! only knows workers.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

use tilesolve::task::TaskTimes;
use tilesolve::time_scale::TimeScale;

use super::config::{PROBATION_ANY_SIZE_AFTER, PROBATION_AUDITS, PROBATION_SHORT_WHOLE_TASKS};
use super::holders::TokenRoom;
use super::rate::WindowRate;
use super::tasks::{Audit, Holding};
use super::types::{
    Lineage, SchedulerError, TaskId, TaskSpec, WorkerId, MAX_PACKED_HELD, MAX_PREFETCH,
    MAX_WORKER_THREADS, PREFETCH_MOST_SECONDS,
};

/// Impossible reports (moves off the board, bounds that cannot be) after which a worker is
/// quarantined as faulty.
pub const MAX_STRIKES: u32 = 3;
/// Failed reports in a row after which a worker is shut out, while another worker's reports
/// do not fail: the fault is the worker's (a broken host, a missing table), not its tasks', whose
/// attempts it cost are given back.
pub const MAX_FAILURES_IN_A_ROW: u32 = 3;
/// Leases a worker may hold before it has reported anything, whatever threads it declares;
/// each task it reports earns it [`LEASES_EARNED_PER_TASK`] more, up to what its threads allow.
/// A registration that declares 1,024 threads and never runs a task holds this many, not 5,120
/// (it held 591 of 600 tasks while an honest worker idled), and an honest worker of many
/// threads reaches its share within a few rounds of tasks.
pub const FIRST_LEASES: usize = 2 * (1 + MAX_PREFETCH as usize);
pub const LEASES_EARNED_PER_TASK: usize = 2;
/// Quarantined workers remembered (their calls are refused with the reason); the oldest are
/// forgotten past this, which only means a call gets UnknownWorker instead.
const MAX_QUARANTINED: usize = 10_000;

/// Longest host name kept, and how many default-heuristic names of what length: a hostile
/// registration cannot grow the table.
const MAX_HOST: usize = 100;
const MAX_DEFAULT_HEURISTICS: usize = 8;
const MAX_HEURISTIC_NAME: usize = 60;
/// Pattern database files remembered per worker, and the longest name kept.
const MAX_TABLES: usize = 64;
const MAX_TABLE_NAME: usize = 200;

/// What a worker says of itself when it registers.
#[derive(Clone, Debug, Default)]
pub struct WorkerDescription {
    pub name: String,
    /// What `default` resolves to on it, per board size.
    pub default_heuristics: Vec<String>,
    /// The pattern database files it holds, with their checksums.
    pub tables: Vec<(String, u64)>,
}

struct WorkerInfo {
    /// What the dashboard calls it: `worker --name`, or host and process id.
    name: String,
    lineage: Lineage,
    threads: u32,
    /// Proves a call comes from the process that registered (128 random bits, hex).
    secret: String,
    host: String,
    /// What `default` means on the worker, e.g. "5x5 pdb:6-6-6-6-max".
    default_heuristics: Vec<String>,
    /// The pattern database files it holds (name, checksum), as it said when registering:
    /// where the coordinator asks first for a table it lacks.
    tables: Vec<(String, u64)>,
    last_seen: Instant,
    nodes: u64,
    tasks_done: u64,
    /// Audits of its reports that upheld them: until [`PROBATION_AUDITS`], every report is
    /// audited (under `sample`, only the first few: [`Workers::take_probation_draw`]).
    audits_passed: u32,
    /// Probation audits drawn of its reports under `sample` that upheld them or have not
    /// ended (one that ends without a verdict gives its draw back).
    probation_draws: u32,
    /// Reports with claims it made on probation, drawn or not.
    probation_reports: u32,
    /// Whole tasks it took on probation cut short (see [`PROBATION_SHORT_WHOLE_TASKS`]).
    probation_short_tasks: u32,
    /// Reports that could not be right for their task (see [`MAX_STRIKES`]).
    strikes: u32,
    /// Its reports that were failures since its last one that was not (see
    /// [`MAX_FAILURES_IN_A_ROW`]).
    failures_in_a_row: u32,
    /// It has reported something other than a failure.
    succeeded_once: bool,
    /// Its nodes/s (over [`super::RATE_WINDOW`]).
    rate: WindowRate,
    /// Its recent tasks' times: how many tasks it may hold (see [`Workers::reported`]).
    task_times: TaskTimes,
}

impl WorkerInfo {
    /// Leases it may hold: earned by tasks reported, not by threads declared.
    fn earned(&self) -> usize {
        usize::try_from(self.tasks_done)
            .unwrap_or(usize::MAX)
            .saturating_mul(LEASES_EARNED_PER_TASK)
            .saturating_add(FIRST_LEASES)
    }

    fn record(&mut self, now: Instant) {
        self.rate.record(now, self.nodes);
    }

    fn nodes_per_second(&self, now: Instant) -> f64 {
        self.rate.per_second(now, self.nodes)
    }
}

/// A connected worker, as the dashboard shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerView {
    pub id: WorkerId,
    pub name: String,
    pub host: String,
    pub threads: u32,
    /// What `default` means on the worker, e.g. "5x5 pdb:6-6-6-6-max".
    pub default_heuristics: Vec<String>,
    /// Expanded nodes reported per second over the last 30 seconds.
    pub nodes_per_second: f64,
    pub tasks_done: u64,
    pub seconds_since_seen: f64,
    /// Tasks it holds now (running or prefetched); 0 for a worker gone.
    pub tasks_held: usize,
    /// The pattern table files it holds.
    pub tables: Vec<String>,
    /// Why it is gone and how long ago, for a worker that left or was lost (shown for
    /// [`GONE_SHOWN`]); None while connected.
    pub gone: Option<(String, f64)>,
}

/// How long a worker that left, was lost or was quarantined still shows (as gone), and how many
/// such are kept.
pub const GONE_SHOWN: Duration = Duration::from_secs(600);
const MAX_GONE: usize = 64;

#[derive(Default)]
pub(super) struct Workers {
    workers: FxHashMap<WorkerId, WorkerInfo>,
    /// Search threads over `workers`, kept as they come and go: every poll asks for it.
    threads: usize,
    /// What the workers holding tasks have not yet been told of them.
    told: FxHashMap<WorkerId, Told>,
    /// Workers given something to tell since [`Workers::take_newly_told`]: a held heartbeat of
    /// theirs is answered at once.
    newly_told: Vec<WorkerId>,
    /// Workers caught lying or faulty, with why: every call of theirs is refused.
    quarantined: FxHashMap<WorkerId, String>,
    /// Workers gone lately, as they last were, with why and when (newest last).
    gone: VecDeque<(WorkerView, String, Instant)>,
    /// Thread-seconds the connected workers' threads held no task.
    idle: IdleClock,
}

/// What a worker is told of the tasks it holds, with its next poll or heartbeat.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Told {
    /// Tasks to stop: their puzzle ended or their batch was cancelled.
    pub cancelled: Vec<TaskId>,
    /// Running subtree tasks to hand back what they have not searched.
    pub hand_back: Vec<TaskId>,
}

impl Told {
    pub fn is_empty(&self) -> bool {
        self.cancelled.is_empty() && self.hand_back.is_empty()
    }

    /// Adds `more` to what is told.
    pub fn extend(&mut self, more: Told) {
        self.cancelled.extend(more.cancelled);
        self.hand_back.extend(more.hand_back);
    }
}

/// Idle worker threads integrated over time: the count noted at each poll holds until the
/// next (every lease and report comes with a poll, so it is exact but for leases that expire
/// and workers that leave or register between polls).
#[derive(Default)]
struct IdleClock {
    /// The count noted last, and when.
    last: Option<(Instant, usize)>,
    /// Thread-seconds up to `last`.
    seconds: f64,
}

impl IdleClock {
    fn seconds_at(&self, now: Instant) -> f64 {
        self.last.map_or(0.0, |(since, threads)| {
            self.seconds + threads as f64 * now.saturating_duration_since(since).as_secs_f64()
        })
    }
}

impl Workers {
    /// Adds worker `id` of `lineage` with `threads` search threads (1 to
    /// [`MAX_WORKER_THREADS`]).
    pub(super) fn register(
        &mut self,
        id: WorkerId,
        lineage: Lineage,
        threads: u32,
        host: &str,
    ) -> Result<(), SchedulerError> {
        if !(1..=MAX_WORKER_THREADS).contains(&threads) {
            return Err(SchedulerError::InvalidArgument(format!(
                "threads must be 1 to {MAX_WORKER_THREADS}, not {threads}"
            )));
        }
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes).map_err(|e| {
            SchedulerError::Internal(format!("no randomness for a worker secret: {e}"))
        })?;
        let secret = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        self.threads += threads as usize;
        let replaced = self.workers.insert(
            id,
            WorkerInfo {
                name: host.chars().take(MAX_HOST).collect(),
                lineage,
                threads,
                secret,
                host: host.chars().take(MAX_HOST).collect(),
                default_heuristics: Vec::new(),
                tables: Vec::new(),
                last_seen: now,
                nodes: 0,
                tasks_done: 0,
                audits_passed: 0,
                probation_draws: 0,
                probation_reports: 0,
                probation_short_tasks: 0,
                strikes: 0,
                failures_in_a_row: 0,
                succeeded_once: false,
                rate: WindowRate::new(now),
                task_times: TaskTimes::default(),
            },
        );
        if let Some(replaced) = replaced {
            self.threads -= replaced.threads as usize;
        }
        Ok(())
    }

    /// Records what a worker said of itself when registering: its name (`worker --name`, or
    /// its host and process id), what `default` means on it and the table files it holds, each
    /// cut short (a few short names, a few dozen files).
    pub(super) fn describe(&mut self, worker: WorkerId, description: &WorkerDescription) {
        let Some(info) = self.workers.get_mut(&worker) else {
            return;
        };
        if !description.name.is_empty() {
            info.name = description.name.chars().take(MAX_HOST).collect();
        }
        info.default_heuristics = description
            .default_heuristics
            .iter()
            .take(MAX_DEFAULT_HEURISTICS)
            .map(|name| name.chars().take(MAX_HEURISTIC_NAME).collect())
            .collect();
        info.tables = description
            .tables
            .iter()
            .filter(|(name, _)| name.len() <= MAX_TABLE_NAME)
            .take(MAX_TABLES)
            .cloned()
            .collect();
    }

    /// The connected workers (not quarantined) that hold the file `name`, with the checksum
    /// each stated, in id order.
    pub(super) fn holders(&self, name: &str) -> Vec<(WorkerId, u64)> {
        let mut holders: Vec<(WorkerId, u64)> = self
            .workers
            .iter()
            .filter(|(id, _)| !self.quarantined.contains_key(id))
            .filter_map(|(id, info)| {
                let (_, checksum) = info.tables.iter().find(|(held, _)| held == name)?;
                Some((*id, *checksum))
            })
            .collect();
        holders.sort_unstable();
        holders
    }

    pub(super) fn secret(&self, worker: WorkerId) -> Result<String, SchedulerError> {
        Ok(self.info(worker)?.secret.clone())
    }

    /// A connected worker; a quarantined one is refused with the reason, an unknown one must
    /// register again.
    fn info(&self, worker: WorkerId) -> Result<&WorkerInfo, SchedulerError> {
        self.refuse_quarantined(worker)?;
        self.workers
            .get(&worker)
            .ok_or(SchedulerError::UnknownWorker(worker))
    }

    fn info_mut(&mut self, worker: WorkerId) -> Result<&mut WorkerInfo, SchedulerError> {
        self.refuse_quarantined(worker)?;
        self.workers
            .get_mut(&worker)
            .ok_or(SchedulerError::UnknownWorker(worker))
    }

    pub(super) fn is_quarantined(&self, worker: WorkerId) -> bool {
        self.quarantined.contains_key(&worker)
    }

    fn refuse_quarantined(&self, worker: WorkerId) -> Result<(), SchedulerError> {
        match self.quarantined.get(&worker) {
            Some(reason) => Err(SchedulerError::PermissionDenied(format!(
                "worker {worker} is quarantined: {reason}"
            ))),
            None => Ok(()),
        }
    }

    /// Whether `worker`'s next report must be audited whatever the draw: it has not yet had
    /// [`PROBATION_AUDITS`] reports upheld.
    pub(super) fn on_probation(&self, worker: WorkerId) -> bool {
        self.workers
            .get(&worker)
            .is_some_and(|info| info.audits_passed < PROBATION_AUDITS)
    }

    /// How many of the whole tasks `worker` takes now are cut short: those of its
    /// [`PROBATION_SHORT_WHOLE_TASKS`] it has not taken yet while it is on probation, none after.
    pub(super) fn probation_short_left(&self, worker: WorkerId) -> usize {
        self.workers
            .get(&worker)
            .filter(|info| info.audits_passed < PROBATION_AUDITS)
            .map_or(0, |info| {
                PROBATION_SHORT_WHOLE_TASKS.saturating_sub(info.probation_short_tasks) as usize
            })
    }

    /// `worker` took `leased` under `holding`: counts the whole tasks cut short among them.
    pub(super) fn took_short_whole(
        &mut self,
        worker: WorkerId,
        leased: &[TaskSpec],
        holding: &Holding,
    ) {
        let short = leased
            .iter()
            .filter(|task| task.iterate && task.weighted.is_none())
            .filter(|task| task.node_budget <= holding.short_whole_budget)
            .count()
            .min(holding.short_whole_tasks);
        if let Some(info) = self.workers.get_mut(&worker).filter(|_| short > 0) {
            let short = u32::try_from(short).unwrap_or(u32::MAX);
            info.probation_short_tasks = info.probation_short_tasks.saturating_add(short);
        }
    }

    /// Whether a report of `worker` is audited for probation under `sample`: its first
    /// [`PROBATION_AUDITS`] `cheap` ones, while not yet upheld, or any once it has made
    /// [`PROBATION_ANY_SIZE_AFTER`] reports on probation. A fault shows in them; auditing every
    /// report sent while they run put dozens of audits on each new worker of a batch split
    /// into small tasks (55 audits for 123 tasks of sixteen 80-move boards on four workers).
    /// And a worker whose reports all claim large searches still passes probation, or is
    /// caught: until then every claim it makes is audited before an answer rests on it.
    pub(super) fn take_probation_draw(&mut self, worker: WorkerId, cheap: bool) -> bool {
        let Some(info) = self.workers.get_mut(&worker) else {
            return false;
        };
        info.probation_reports = info.probation_reports.saturating_add(1);
        let drawn = info.audits_passed < PROBATION_AUDITS
            && info.probation_draws < PROBATION_AUDITS
            && (cheap || info.probation_reports > PROBATION_ANY_SIZE_AFTER);
        if drawn {
            info.probation_draws += 1;
        }
        drawn
    }

    /// An audit drawn for `worker`'s probation ended without a verdict: the draw is its again.
    pub(super) fn give_back_probation_draw(&mut self, worker: WorkerId) {
        if let Some(info) = self.workers.get_mut(&worker) {
            info.probation_draws = info.probation_draws.saturating_sub(1);
        }
    }

    /// An audit upheld a report of `worker`.
    pub(super) fn audit_passed(&mut self, worker: WorkerId) {
        if let Some(info) = self.workers.get_mut(&worker) {
            info.audits_passed = info.audits_passed.saturating_add(1);
            if info.audits_passed == PROBATION_AUDITS {
                let reports = info.probation_reports;
                tracing::info!(worker, reports, "worker passed its probation");
            }
        }
    }

    /// Whether `worker` is connected and past its probation. A worker that left is not: what
    /// it claimed while on probation is audited before an answer rests on it.
    pub(super) fn past_probation(&self, worker: WorkerId) -> bool {
        self.workers
            .get(&worker)
            .is_some_and(|info| info.audits_passed >= PROBATION_AUDITS)
    }

    /// Counts an impossible report against `worker`; returns whether it has now had
    /// [`MAX_STRIKES`].
    pub(super) fn strike(&mut self, worker: WorkerId) -> bool {
        self.workers.get_mut(&worker).is_some_and(|info| {
            info.strikes += 1;
            info.strikes >= MAX_STRIKES
        })
    }

    /// Counts a failed report of `worker`; returns whether it has now failed
    /// [`MAX_FAILURES_IN_A_ROW`] times in a row while another connected worker's last report
    /// (if any) was not a failure: then the fault is its own. The last worker standing is never
    /// shut out for failures (its tasks' attempts bound them).
    pub(super) fn failed(&mut self, worker: WorkerId) -> bool {
        let Some(info) = self.workers.get_mut(&worker) else {
            return false;
        };
        info.failures_in_a_row += 1;
        info.failures_in_a_row >= MAX_FAILURES_IN_A_ROW && self.another_not_failing(worker)
    }

    /// Whether a worker other than `worker` is connected whose last report (if any) was not a
    /// failure: then `worker`'s failures are its own fault.
    fn another_not_failing(&self, worker: WorkerId) -> bool {
        self.workers
            .iter()
            .any(|(&id, other)| id != worker && other.failures_in_a_row == 0)
    }

    /// `worker` reported something other than a failure.
    pub(super) fn succeeded(&mut self, worker: WorkerId) {
        if let Some(info) = self.workers.get_mut(&worker) {
            info.failures_in_a_row = 0;
            info.succeeded_once = true;
        }
    }

    /// Whether `worker`'s failures may not fail a task for good: it has reported nothing but
    /// failures, while another worker's reports do not fail. Until it is shut out (which gives
    /// back what its failures cost), they say more of it than of its tasks: a fresh registration
    /// of a broken host failed a task whose leases had lapsed on a hog, "failed 3 times" for
    /// the workers' faults.
    pub(super) fn unproven(&self, worker: WorkerId) -> bool {
        self.workers
            .get(&worker)
            .is_some_and(|info| !info.succeeded_once && info.failures_in_a_row > 0)
            && self.another_not_failing(worker)
    }

    /// Refuses every further call of `worker`, with `reason`.
    pub(super) fn quarantine(&mut self, worker: WorkerId, reason: String) {
        self.drop_worker(worker, "quarantined");
        if self.quarantined.len() >= MAX_QUARANTINED {
            if let Some(&oldest) = self.quarantined.keys().min() {
                self.quarantined.remove(&oldest);
            }
        }
        self.quarantined.insert(worker, reason);
    }

    /// The lineage of a connected worker.
    pub(super) fn lineage(&self, worker: WorkerId) -> Option<Lineage> {
        self.workers.get(&worker).map(|info| info.lineage)
    }

    /// Whether a connected worker may run `audit` ([`Audit::may_run_on`]; quarantined
    /// workers are not connected).
    pub(super) fn can_audit(&self, audit: &Audit) -> bool {
        self.workers.iter().any(|(&id, info)| {
            audit.may_run_on(id, info.lineage, info.audits_passed >= PROBATION_AUDITS)
        })
    }

    pub(super) fn check_secret(
        &self,
        worker: WorkerId,
        secret: &str,
    ) -> Result<(), SchedulerError> {
        let info = self.info(worker)?;
        if !tilesolve::connect::same_secret(secret, &info.secret) {
            return Err(SchedulerError::PermissionDenied(format!(
                "worker {worker}: wrong or missing worker secret"
            )));
        }
        Ok(())
    }

    /// A worker was heard from. A worker this process does not know (forgotten by the sweep, or
    /// registered with a coordinator that has since restarted) must register again.
    pub(super) fn seen(&mut self, worker: WorkerId, now: Instant) -> Result<(), SchedulerError> {
        self.info_mut(worker)?.last_seen = now;
        Ok(())
    }

    /// A worker polled with finished tasks, (how many, expanded nodes in all), of which (how
    /// many, seconds in all) had believable times; returns how many tasks it may hold: per
    /// thread one running and [`MAX_PREFETCH`] waiting, or more when its tasks are short
    /// ([`TaskTimes`]), but then never more than [`MAX_PACKED_HELD`].
    pub(super) fn reported(
        &mut self,
        worker: WorkerId,
        now: Instant,
        (tasks, nodes): (u64, u64),
        (timed, seconds): (u64, f64),
        scale: TimeScale,
    ) -> Result<Holding, SchedulerError> {
        let info = self.info_mut(worker)?;
        info.last_seen = now;
        info.tasks_done = info.tasks_done.saturating_add(tasks);
        info.nodes = info.nodes.saturating_add(nodes);
        info.task_times.add(timed, seconds);
        info.record(now);
        let unpacked = info.threads as usize * (1 + MAX_PREFETCH) as usize;
        let per_thread = info.task_times.tasks_per_thread(1 + MAX_PREFETCH, scale);
        let packed = (info.threads as usize * per_thread as usize).min(MAX_PACKED_HELD);
        let earned = info.earned();
        Ok(Holding {
            lineage: info.lineage,
            trusted: info.audits_passed >= PROBATION_AUDITS,
            most: packed.max(unpacked).min(earned),
            threads: (info.threads as usize).min(earned),
            // Unmeasured (0): every task with a predicted size counts as long.
            long_above_nodes: (info.nodes_per_second(now)
                * scale.stretch_seconds(PREFETCH_MOST_SECONDS))
                as u64,
            // Known only with the tasks' leases and the puzzles: the scheduler fills them in.
            idle_elsewhere: 0,
            whole_task_budget: u64::MAX,
            short_whole_tasks: 0,
            short_whole_budget: u64::MAX,
            earned: usize::try_from(info.tasks_done)
                .unwrap_or(usize::MAX)
                .saturating_mul(LEASES_EARNED_PER_TASK),
            // Known only with every registration's leases: the scheduler fills it in.
            token_room: TokenRoom::UNLIMITED,
        })
    }

    /// From `now` on, `threads` of the connected workers' threads hold no task.
    pub(super) fn note_idle(&mut self, now: Instant, threads: usize) {
        self.idle.seconds = self.idle.seconds_at(now);
        self.idle.last = Some((now, threads));
    }

    /// Thread-seconds the connected workers' threads held no task, since the first poll.
    pub(super) fn idle_seconds(&self, now: Instant) -> f64 {
        self.idle.seconds_at(now)
    }

    /// Forgets the workers silent for `timeout` or longer; returns them.
    pub(super) fn forget_silent(&mut self, now: Instant, timeout: Duration) -> Vec<WorkerId> {
        let lost: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, info)| now.duration_since(info.last_seen) >= timeout)
            .map(|(&id, _)| id)
            .collect();
        for &id in &lost {
            self.drop_worker(id, "lost: silent past the lease timeout");
        }
        lost
    }

    /// Forgets `worker`, which said it is stopping.
    pub(super) fn forget(&mut self, worker: WorkerId) {
        self.drop_worker(worker, "left");
    }

    /// Removes `worker` (shown as gone, with `why`) and what is kept for it.
    fn drop_worker(&mut self, worker: WorkerId, why: &str) {
        self.remember_gone(worker, why);
        if let Some(info) = self.workers.remove(&worker) {
            self.threads -= info.threads as usize;
        }
        self.told.remove(&worker);
    }

    /// Tells `worker`, at its next poll or heartbeat, that `task` was withdrawn.
    pub(super) fn tell_cancelled(&mut self, worker: WorkerId, task: TaskId) {
        self.told.entry(worker).or_default().cancelled.push(task);
        self.newly_told.push(worker);
    }

    /// Asks `worker`, at its next poll or heartbeat, to hand back what `task` has not searched.
    pub(super) fn tell_hand_back(&mut self, worker: WorkerId, task: TaskId) {
        self.told.entry(worker).or_default().hand_back.push(task);
        self.newly_told.push(worker);
    }

    /// What `worker` has not been told yet.
    pub(super) fn take_told(&mut self, worker: WorkerId) -> Told {
        self.told.remove(&worker).unwrap_or_default()
    }

    /// The workers given something to tell since the last call.
    pub(super) fn take_newly_told(&mut self) -> Vec<WorkerId> {
        std::mem::take(&mut self.newly_told)
    }

    pub(super) fn len(&self) -> usize {
        self.workers.len()
    }

    /// Threads `worker` may run now: its threads, as far as it has earned them (0 for a worker
    /// not connected).
    pub(super) fn capacity(&self, worker: WorkerId) -> usize {
        self.workers
            .get(&worker)
            .map_or(0, |info| (info.threads as usize).min(info.earned()))
    }

    /// Search threads over every connected worker.
    pub(super) fn threads(&self) -> usize {
        self.threads
    }

    /// The connected workers, by id.
    pub(super) fn views(&self) -> Vec<WorkerView> {
        let now = Instant::now();
        let mut views: Vec<WorkerView> = self
            .workers
            .iter()
            .map(|(&id, info)| view(id, info, now))
            .collect();
        views.sort_by_key(|w| w.id);
        views
    }

    /// The workers gone within [`GONE_SHOWN`], newest first.
    pub(super) fn gone_views(&self) -> Vec<WorkerView> {
        let now = Instant::now();
        self.gone
            .iter()
            .rev()
            .filter(|(_, _, when)| now.duration_since(*when) < GONE_SHOWN)
            .map(|(view, why, when)| WorkerView {
                gone: Some((why.clone(), now.duration_since(*when).as_secs_f64())),
                nodes_per_second: 0.0,
                ..view.clone()
            })
            .collect()
    }

    fn remember_gone(&mut self, worker: WorkerId, why: &str) {
        let now = Instant::now();
        if let Some(info) = self.workers.get(&worker) {
            if self.gone.len() >= MAX_GONE {
                self.gone.pop_front();
            }
            self.gone
                .push_back((view(worker, info, now), why.to_string(), now));
        }
    }
}

fn view(id: WorkerId, info: &WorkerInfo, now: Instant) -> WorkerView {
    WorkerView {
        id,
        name: info.name.clone(),
        host: info.host.clone(),
        threads: info.threads,
        default_heuristics: info.default_heuristics.clone(),
        nodes_per_second: info.nodes_per_second(now),
        tasks_done: info.tasks_done,
        seconds_since_seen: now.duration_since(info.last_seen).as_secs_f64(),
        tasks_held: 0,
        tables: info.tables.iter().map(|(name, _)| name.clone()).collect(),
        gone: None,
    }
}
