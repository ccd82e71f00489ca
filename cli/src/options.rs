//! Search options shared by every subcommand that solves boards, and the solvers they build.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::{default_memory_budget, PdbError, PdbStore};
use tilesolve::search::Pruning;
use tilesolve::time_scale::TimeScale;
use tilesolve::{Algorithm, Board, Goal, Shape, SolveOptions, Solver};

use tilesolve_coordinator::scheduler::SchedulerConfig;

use crate::progress;

/// The scheduling policy's knobs, shared by `serve` (which runs the policy) and `simulate`
/// (which replays a recorded run under it).
#[derive(Args, Clone, Debug)]
pub struct PolicyArgs {
    /// Expanded nodes a subtree task may spend before it comes back split into its children.
    #[arg(long, env = "TILESOLVE_SUBTREE_BUDGET", default_value_t = SchedulerConfig::default().subtree_task_budget)]
    subtree_budget: u64,
    /// Most subtree tasks per connected worker thread when an iteration is split.
    #[arg(long, env = "TILESOLVE_TASKS_PER_THREAD", default_value_t = SchedulerConfig::default().tasks_per_thread)]
    tasks_per_thread: usize,
    /// Split an iteration until no task is predicted above its size / (threads x this), the
    /// threads its puzzle's share of those connected (twice its even share among the
    /// unfinished puzzles, all of them when it is alone).
    #[arg(long, env = "TILESOLVE_SPLIT_BALANCE", default_value_t = SchedulerConfig::default().split_balance)]
    split_balance: usize,
    /// Never split a subtree predicted smaller than this many nodes ...
    #[arg(long, env = "TILESOLVE_MIN_SPLIT_NODES", default_value_t = SchedulerConfig::default().min_split_nodes)]
    min_split_nodes: u64,
    /// ... nor smaller than this many nodes per connected worker thread.
    #[arg(long, env = "TILESOLVE_MIN_SPLIT_NODES_PER_THREAD", default_value_t = SchedulerConfig::default().min_split_nodes_per_thread)]
    min_split_nodes_per_thread: u64,
    /// Workers measure each descendant this many moves below every subtree task, and below
    /// the board in the last iteration a whole-puzzle task finishes (up to 12): the next
    /// iteration's split predicts from these sizes, and the store records them for
    /// `tilesolve simulate` (record deeper to replay with more workers than 256 or so).
    #[arg(long, env = "TILESOLVE_RECORD_DEPTH", default_value_t = SchedulerConfig::default().profile_depth, value_parser = clap::value_parser!(u32).range(0..=12))]
    record_depth: u32,
}

impl PolicyArgs {
    /// `config` with these knobs.
    pub fn apply(&self, config: SchedulerConfig) -> SchedulerConfig {
        SchedulerConfig {
            subtree_task_budget: self.subtree_budget,
            tasks_per_thread: self.tasks_per_thread.max(1),
            split_balance: self.split_balance.max(1),
            min_split_nodes: self.min_split_nodes,
            min_split_nodes_per_thread: self.min_split_nodes_per_thread,
            profile_depth: self.record_depth,
            ..config
        }
    }
}

/// The scheduling policy's times stretched for a process held to a fraction of a core: shared
/// by `serve` and `worker`, which must be given the same.
#[derive(Args, Clone, Copy, Debug)]
pub struct TimeScaleArgs {
    /// For emulating a host K times faster on this one (each process held to 1/K of a core, as
    /// `scripts/scaling.sh` does with DILATE=K): every scheduling time (how long a task may be
    /// and still be prefetched, packing, report and poll waits, leases, hand-backs) is
    /// stretched K times, so the policy decides as it would on that host. Give coordinator and
    /// workers the same K; leave it at 1 on a real host.
    #[arg(
        long = "time-scale",
        env = "TILESOLVE_TIME_SCALE",
        default_value = "1",
        value_name = "K"
    )]
    pub scale: TimeScale,
}

/// Where pattern databases live.
#[derive(Args, Clone, Debug)]
pub struct DataArgs {
    /// Data directory for pattern databases.
    #[arg(
        long = "data",
        env = "TILESOLVE_DATA",
        default_value = "tilesolve-data",
        value_name = "DIR"
    )]
    pub dir: PathBuf,
}

impl DataArgs {
    pub fn store(&self) -> PdbStore {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        PdbStore::new(&self.dir, threads)
    }
}

/// The memory a process may fill with pattern tables (and, in `solve --algorithm astar`, with
/// stored boards): shared by every command that searches.
#[derive(Args, Clone, Copy, Debug)]
pub struct MemoryArgs {
    /// Memory in MiB for pattern databases (`default` takes the strongest that fits) and for
    /// A*'s stored boards [default: half the machine's memory].
    #[arg(
        long = "memory-budget",
        env = "TILESOLVE_MEMORY_BUDGET",
        value_name = "MIB"
    )]
    pub mib: Option<u64>,
}

impl MemoryArgs {
    pub fn bytes(&self) -> u64 {
        self.mib
            .map_or_else(default_memory_budget, |mib| mib.saturating_mul(1 << 20))
    }
}

#[derive(Args, Clone, Debug)]
pub struct SearchArgs {
    // The help names every preset from their registry (`tilesolve::pdb::PRESETS`).
    #[arg(long, default_value = "default", help = HeuristicChoice::help())]
    pub heuristic: HeuristicChoice,
    /// Algorithm: ida (iterative deepening A*) or astar.
    #[arg(long, default_value = "ida")]
    pub algorithm: Algorithm,
    /// Goal: `default` (1,2,...,N-1,0), `korf` (0,1,...,N-1) or a board.
    #[arg(long, default_value = "default")]
    pub goal: Goal,
    /// Give up on a board after this many seconds (per board).
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub time_limit: Option<Duration>,
    /// Give up on a board after this many expanded nodes.
    #[arg(long, value_name = "NODES")]
    pub node_limit: Option<u64>,
    #[command(flatten)]
    pub memory: MemoryArgs,
    /// Move sequences IDA* skips: `duplicates` (every path the board size's pruning machine
    /// knows a shorter or earlier equivalent of, and a large subtree's children searched lowest
    /// estimate first) or `undo` (only the move undoing the last one, children in move order,
    /// as in Korf's 1985 counts).
    #[arg(long, default_value = "duplicates")]
    pub pruning: Pruning,
    #[command(flatten)]
    pub data: DataArgs,
    /// Rows x columns of every board, e.g. 3x4 (2 <= each, at most 32 cells); a line's
    /// ` # size=RxC` fact says it for that line. Without either, a board is the square of its
    /// count of values (9, 16 or 25), or the rows it is written in (`{{1,2,3},{4,5,0}}`).
    #[arg(long, value_name = "RxC")]
    pub size: Option<Shape>,
}

impl SearchArgs {
    pub fn solve_options(&self) -> anyhow::Result<SolveOptions> {
        Ok(SolveOptions {
            algorithm: self.algorithm,
            time_limit: self.time_limit,
            node_limit: self.node_limit,
            memory_budget: usize::try_from(self.memory.bytes()).unwrap_or(usize::MAX),
        })
    }
}

#[derive(Clone)]
/// One solver per board size, built on first use (a custom goal fixes the size). Pattern
/// databases are loaded, or built with a progress bar, the first time a size needs them.
pub struct Solvers {
    goal: Goal,
    heuristic: HeuristicChoice,
    table_budget: u64,
    pruning: Pruning,
    store: PdbStore,
    by_shape: HashMap<Shape, Result<Solver, String>>,
}

impl Solvers {
    pub fn new(args: &SearchArgs) -> Solvers {
        Solvers {
            goal: args.goal,
            pruning: args.pruning,
            heuristic: args.heuristic,
            table_budget: args.memory.bytes(),
            store: args.data.store(),
            by_shape: HashMap::new(),
        }
    }

    /// The solver for `board`, or why there is none: the board cannot reach the goal (checked
    /// first, so an unsolvable board never waits for a pattern database build), a pattern
    /// database for another size, or a data directory that cannot be written.
    pub fn for_board(&mut self, board: &Board) -> Result<&Solver, String> {
        let shape = board.shape();
        let (goal, store) = (self.goal.for_shape(shape), &self.store);
        let table_budget = self.table_budget;
        let heuristic = self.heuristic.resolve(&goal, table_budget);
        let pruning = self.pruning;
        board.check_solvable(&goal).map_err(|e| e.to_string())?;
        self.by_shape
            .entry(shape)
            .or_insert_with(|| {
                let built: Result<_, PdbError> =
                    heuristic.build(&goal, table_budget, store, &progress::pdb_events);
                built
                    .map(|h| {
                        Solver::with_heuristic(goal, h, heuristic.to_string()).with_pruning(pruning)
                    })
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Bytes of pattern tables the solvers made so far read.
    pub fn table_bytes(&self) -> u64 {
        self.by_shape
            .values()
            .filter_map(|solver| solver.as_ref().ok())
            .map(Solver::table_bytes)
            .sum()
    }
}

/// `--time-limit`'s seconds: a positive number that a `Duration` holds (`inf`, `nan`, 0 and
/// 1e30 are refused with the command line's exit status, not met later).
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let refused = || format!("must be a positive number of seconds, not '{text}'");
    let seconds: f64 = text.trim().parse().map_err(|_| refused())?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(refused());
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| refused())
}

/// `--suboptimal`'s weight, to a hundredth.
pub fn parse_weight(text: &str) -> Result<tilesolve::heuristic::Weight, String> {
    let refused = || format!("--suboptimal must be a number between 1 and 10, not '{text}'");
    let weight: f64 = text.parse().map_err(|_| refused())?;
    if !(1.0..=10.0).contains(&weight) {
        return Err(refused());
    }
    tilesolve::heuristic::Weight::new((weight * 100.0).round() as u32, 100).ok_or_else(refused)
}
