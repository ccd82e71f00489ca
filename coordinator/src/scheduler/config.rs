//! How the scheduler splits, leases, audits and limits: [`SchedulerConfig`] and its defaults,
//! and every audit setting in one place ([`Verify`], the fraction, probation, where an audit
//! runs and in what chunks).

use std::time::Duration;

use tilesolve::pdb::default_memory_budget;
use tilesolve::time_scale::TimeScale;

/// How far the coordinator checks what workers report (`serve --verify`; the threat model of
/// each is in RELIABILITY.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// Every worker trusted: nothing is audited. For a pool of your own machines that you
    /// trust not to be faulty.
    Off,
    /// Sampled audits: a new worker's cheap claims until it has passed probation, then a share
    /// ([`SchedulerConfig::audit_fraction`]) of its reports. A false claim found quarantines
    /// its worker and withdraws everything that rests on its reports, but an answer may be
    /// read before that. About the sampled share in CPU, on the workers: any registration but
    /// the reporter's may audit (a second process checks a faulty machine's; liars are the
    /// business of `full`), so one worker token does not put the audits on the coordinator.
    #[default]
    Sample,
    /// Today's full guarantee: besides the samples, every claim an answer rests on is audited
    /// on another lineage (or the coordinator) before the answer is stored, and every claim of
    /// a worker on probation, whatever its size. For pools with machines you do not control;
    /// it costs up to a second search of each answer's last iteration.
    Full,
}

impl std::str::FromStr for Verify {
    type Err = String;

    fn from_str(text: &str) -> Result<Verify, String> {
        match text {
            "off" => Ok(Verify::Off),
            "sample" => Ok(Verify::Sample),
            "full" => Ok(Verify::Full),
            other => Err(format!("'{other}' is not off, sample or full")),
        }
    }
}

/// Under [`Verify::Sample`], a worker on probation has its claims audited only when the report
/// that made them expanded at most this many nodes (about a millisecond of a thread): a liar is
/// caught on its first cheap lie, and probation costs a registration at most three such
/// searches, which the coordinator runs within the poll that brought them
/// ([`COORDINATOR_AUDIT_NODES`]) until some worker has passed. At 1 M it drew the whole tasks
/// every worker starts a batch with (cut to the spread budget, 1 M): sixteen 80-move boards on
/// fifteen fresh workers spent 10.8 M nodes on audits, 13% of the 80 M their answers used; at
/// 100,000, with the coordinator running those fifteen workers' probation audits, `sample` cost
/// it about half as much CPU again as `--verify off`.
pub const PROBATION_SAMPLE_NODES: u64 = COORDINATOR_AUDIT_NODES;

/// Under [`Verify::Sample`], the part of a larger report drawn for a worker's probation
/// ([`PROBATION_SAMPLE_NODES`] stands for a whole report) expanded at most this many nodes.
/// Fifteen fresh workers' 45 probation audits, drawn among parts of up to 10,000 nodes, were
/// 175-240 k nodes, about a quarter of what the coordinator spent on hard80 dilated; among parts
/// of up to 2,500, 55-70 k, and every worker still passed within the batch's first seconds.
/// Probation is a first look at a machine; the sampled audits after it keep looking.
pub const PROBATION_PART_NODES: u64 = 2_500;

/// The budget of a whole task cut short for probation: its report, which may overrun the
/// budget by up to the kernel's check interval, stays within [`PROBATION_SAMPLE_NODES`].
pub const PROBATION_WHOLE_BUDGET: u64 = PROBATION_SAMPLE_NODES - tilesolve::search::CHECK_INTERVAL;

/// Under [`Verify::Sample`], the whole tasks a worker on probation takes cut to
/// [`PROBATION_WHOLE_BUDGET`]: one cheap report of its own for each audit it needs to pass, so
/// it passes within milliseconds, and its later whole tasks run at the usual budget. Cutting every
/// whole task it took while on probation split 10 of hard80's 16 puzzles at bound 66-68 on two
/// fresh workers, whose first polls take five each: 809 tasks against 57 without audits, and
/// ten times the polls.
pub const PROBATION_SHORT_WHOLE_TASKS: u32 = PROBATION_AUDITS;

/// Reports with claims a worker on probation makes under [`Verify::Sample`] after which any of
/// them may be drawn for probation, whatever its size: claims kept until a worker passes
/// probation cost audits of the answers resting on them (on hard80, with only reports of at
/// most [`PROBATION_SAMPLE_NODES`] drawn, 713 such audits took the audited nodes from 8% to
/// 35% of the search), and a liar that claims huge searches is never drawn otherwise.
pub const PROBATION_ANY_SIZE_AFTER: u32 = 8;

/// Upheld audits a worker needs before only a fraction of its reports are audited: a worker
/// that lies from the start is caught on its first report another worker can check.
pub const PROBATION_AUDITS: u32 = 3;

/// Audits of answers whose report expanded at most this many nodes run on the coordinator
/// itself, outside its lock, within the worker's poll, with this budget: under a millisecond,
/// about what the task's round trip would cost the coordinator (measured: 40-50 us for an audit
/// of a 40-60-move random walk either way), and they need no second worker. A larger one goes
/// to another worker that may run it (under `full`, of another lineage), or, with none, to the
/// coordinator's background pool.
pub const COORDINATOR_AUDIT_NODES: u64 = 10_000;

/// Budget of one audit the coordinator runs on its background pool: about a second. One that
/// spends it goes on as one audit per child, so an audit of any size ends, and a puzzle that
/// ended meanwhile stops costing its audits within a chunk.
pub const COORDINATOR_CHUNK_NODES: u64 = 20_000_000;

#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Expanded nodes a whole-puzzle task may spend before the puzzle is split.
    pub whole_task_budget: u64,
    /// ... and, at most, a whole-puzzle task leased while fewer than
    /// [`SPREAD_PUZZLES_PER_THREAD`] unfinished puzzles per connected worker thread remain:
    /// its puzzle is split after its first cheap iterations, so that its large ones spread over
    /// every thread rather than run on one while the others idle. (A whole task stops between
    /// iterations, so nothing it searched is lost to the split.)
    pub spread_task_budget: u64,
    /// A lease not renewed for this long returns its task to the queue.
    pub lease_timeout: Duration,
    /// Most subtree tasks per worker thread when splitting an iteration.
    pub tasks_per_thread: usize,
    /// Split an iteration until no task is predicted above its size / (threads x this), the
    /// threads its puzzle's share of them (`frontier::iteration_threads`). Tasks go out in
    /// search order, not largest first, so they must be fine: in the last iteration the others
    /// search ahead while the goal's task runs, and a large task met late holds up the end (16
    /// against 4: the same at 2 simulated workers, 87.6% against 81.7% at 16 and 64.3% against
    /// 56.2% at 64, replaying a recorded 1.2e9-node Korf-24 run).
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
    /// each audit costs about one more task.
    pub audit_fraction: f64,
    /// How far workers' reports are checked (`serve --verify`).
    pub verify: Verify,
    /// Whether the coordinator may build a pattern table that no connected worker can send
    /// it (`serve --no-table-builds` turns it off: a batch needing such a table is refused).
    pub build_tables: bool,
    /// How long a subtree task must have run before it is asked to hand back its unsearched
    /// work while threads idle (see `hand_backs`).
    pub hand_back_after: Duration,
    /// The coordinator's time a task (its lease, report and share of the calls that carry
    /// them): a split makes no more tasks than it serves at
    /// [`crate::frontier::COORDINATOR_LOAD`] while the threads search them.
    pub coordinator_seconds_per_task: f64,
    /// Whether the time a task above is measured on this process's CPU (`own_cost`) and used
    /// where it is longer: set by `serve`, whose process holds no search threads.
    pub measure_own_cost: bool,
    /// How many times slower than the host it stands for this coordinator and its workers run
    /// (see [`SchedulerConfig::stretched`]): the policy times the scheduler keeps as constants
    /// (prefetching, packing, the long poll) are stretched by it where they are compared.
    pub time_scale: TimeScale,
}

/// The default [`SchedulerConfig::max_pending_puzzles`]: two full 100,000-line batches and
/// more. A live puzzle holds about 4 KB of the coordinator's memory (its state and its queued
/// task: 295 MB for 70,147 of them, measured), but a batch keeps only a window of its puzzles
/// live and the rest in the store (`starting`), so this bounds the work queued, not memory.
pub const DEFAULT_MAX_PENDING: usize = 250_000;

/// The default [`SchedulerConfig::audit_fraction`]: about 5% more work; a worker whose reports
/// hide a shorter path one time in ten is caught within about 920 reports with 99% certainty
/// (one that always lies, on probation, at once).
pub const DEFAULT_AUDIT_FRACTION: f64 = 0.05;

/// The default [`SchedulerConfig::hand_back_after`]: a younger task may be about to end, and
/// asking costs its worker the part it is in and the coordinator a dozen tasks.
pub const HAND_BACK_AFTER: Duration = Duration::from_millis(200);

/// The default [`SchedulerConfig::coordinator_seconds_per_task`]: 82-93 us of its CPU a task
/// measured over real gRPC by the coordinator's `swarm` example at 1,024 simulated workers
/// (BENCHMARKS.md); `tilesolve simulate --coordinator-ms` models the same.
pub const COORDINATOR_SECONDS_PER_TASK: f64 = 90e-6;

/// Unfinished puzzles per connected worker thread below which a whole-puzzle task gets
/// [`SchedulerConfig::spread_task_budget`]: with fewer, some threads would idle while others
/// search whole puzzles (sixteen 80-move boards, 3.4-9.0 M nodes each: on fifteen workers the
/// largest, 11% of the work, alone capped the batch at 9x one thread; on eight, two a
/// thread, whole puzzles ran at 4.05x, dilated); with more, whole puzzles keep every thread
/// busy and cost no splits.
pub const SPREAD_PUZZLES_PER_THREAD: usize = 4;

impl SchedulerConfig {
    /// This policy for processes held to 1/`scale` of a core each, emulating a host `scale`
    /// times faster: every policy time stretched alike, the lease timeout (and so the
    /// heartbeats), the hand-back wait and the coordinator's modelled time a task here, the
    /// scheduler's constants where they are compared (`time_scale`).
    pub fn stretched(self, scale: TimeScale) -> SchedulerConfig {
        SchedulerConfig {
            lease_timeout: scale.stretch(self.lease_timeout),
            hand_back_after: scale.stretch(self.hand_back_after),
            coordinator_seconds_per_task: scale.stretch_seconds(self.coordinator_seconds_per_task),
            time_scale: scale,
            ..self
        }
    }

    /// What a whole-puzzle task leased now may spend (on top of its own budget), with
    /// `unfinished` puzzles left for `threads` connected worker threads.
    pub(super) fn whole_task_budget_now(&self, unfinished: usize, threads: usize) -> u64 {
        if unfinished < SPREAD_PUZZLES_PER_THREAD.saturating_mul(threads) {
            self.spread_task_budget.min(self.whole_task_budget)
        } else {
            self.whole_task_budget
        }
    }

    /// How an iteration is split with `connected` worker threads (at least one) and
    /// `unfinished` puzzles (this one among them), of a puzzle searched at `seconds_per_node`
    /// so far (0: not measured).
    /// `coordinator_seconds_per_task` is the coordinator's time a task the split is sized by
    /// (`own_cost`).
    pub(super) fn balance(
        &self,
        connected: usize,
        unfinished: usize,
        seconds_per_node: f64,
        coordinator_seconds_per_task: f64,
    ) -> crate::frontier::BalanceParams {
        let connected = connected.max(1);
        crate::frontier::BalanceParams {
            threads: crate::frontier::iteration_threads(connected, unfinished),
            connected_threads: connected,
            tasks_per_thread: self.tasks_per_thread,
            balance: self.split_balance,
            min_split_nodes: self.min_split_nodes,
            min_split_nodes_per_thread: self.min_split_nodes_per_thread,
            max_depth: u32::MAX,
            seconds_per_node,
            min_mean_task_seconds: crate::frontier::min_mean_task_seconds(
                connected,
                coordinator_seconds_per_task,
            ),
        }
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            whole_task_budget: 20_000_000,
            spread_task_budget: 1_000_000,
            lease_timeout: Duration::from_secs(10),
            tasks_per_thread: 200,
            split_balance: 16,
            min_split_nodes: 30_000,
            min_split_nodes_per_thread: 250,
            subtree_task_budget: 200_000_000,
            max_pending_puzzles: DEFAULT_MAX_PENDING,
            profile_depth: 4,
            table_budget: default_memory_budget(),
            audit_fraction: DEFAULT_AUDIT_FRACTION,
            verify: Verify::default(),
            build_tables: true,
            hand_back_after: HAND_BACK_AFTER,
            coordinator_seconds_per_task: COORDINATOR_SECONDS_PER_TASK,
            measure_own_cost: false,
            time_scale: TimeScale::REAL,
        }
    }
}
