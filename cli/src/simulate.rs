//! `tilesolve simulate`: replay a recorded batch with 1 to 1,024 virtual workers under the
//! scheduler's policy and print makespan and efficiency (see `tilesolve_coordinator::simulate`).

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use tilesolve::pdb::PdbStore;
use tilesolve_coordinator::scheduler::{SchedulerConfig, DEFAULT_AUDIT_FRACTION, MAX_PREFETCH};
use tilesolve_coordinator::simulate::{
    load_run, measure_cancelled, simulate, RecordedPuzzle, SimulationPolicy,
    SPLIT_SECONDS_PER_ESTIMATE_LARGE, SPLIT_SECONDS_PER_ESTIMATE_SMALL,
};
use tilesolve_coordinator::store::Store;

use crate::options::PolicyArgs;
use crate::output::outln;

#[derive(Args)]
pub struct SimulateArgs {
    /// The coordinator's data directory (its store and pattern databases). The coordinator must
    /// be stopped: the store is opened directly.
    #[arg(long, env = "TILESOLVE_DATA", default_value = "tilesolve-data")]
    data: PathBuf,
    /// The recorded batch to replay.
    #[arg(long)]
    batch: u64,
    /// Replay only these items (1-based positions in the batch, comma-separated).
    #[arg(long, value_delimiter = ',')]
    items: Vec<u32>,
    /// Virtual worker counts (one search thread each).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64,128,256,512,1024"
    )]
    workers: Vec<usize>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Milliseconds of the coordinator's time per task: it serves one call at a time (0.082-0.093
    /// ms of its CPU a task measured over real gRPC by the coordinator's `swarm` example at
    /// 1,024 workers, BENCHMARKS.md; splits run outside it).
    #[arg(long, default_value_t = 0.09)]
    coordinator_ms: f64,
    /// Microseconds a split of an iteration takes per board it estimates; by default 0.6 on
    /// boards of up to 16 cells and 2.5 on larger ones, as measured on the development machine
    /// with the default tables (a model rather than a timing, so that two replays agree).
    #[arg(long, value_name = "MICROSECONDS")]
    split_us_per_estimate: Option<f64>,
    /// Milliseconds a worker thread spends per task outside the search (its poll's round
    /// trip); by default the mean measured in the recorded run.
    #[arg(long)]
    overhead_ms: Option<f64>,
    /// Tasks each worker prefetches beyond the one it runs, as `tilesolve worker --prefetch`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=MAX_PREFETCH as i64))]
    prefetch: u32,
    /// The share of task reports audited again on another worker (`serve --verify sample`'s;
    /// 0 for `--verify off`).
    #[arg(long, default_value_t = DEFAULT_AUDIT_FRACTION)]
    audit_fraction: f64,
    /// Milliseconds between a busy worker's calls that can tell it of a solved puzzle's
    /// cancelled tasks: 0, as `serve` holds each worker's heartbeat and answers it as soon as
    /// it has something to tell; 2,500 (a quarter of `serve --lease-timeout`) for a coordinator
    /// that answered heartbeats at once, so that a worker heard only at its next beat.
    #[arg(long, default_value_t = 0.0)]
    heartbeat_ms: f64,
    /// Leave tasks prefetched onto a busy worker where they are while threads idle, as a
    /// coordinator before e85b59b did (it asks for them back since).
    #[arg(long)]
    no_returns: bool,
    /// Leave running subtree tasks alone while threads idle, as a coordinator before e85b59b
    /// did (it asks the longest running to hand back what they have not searched since).
    #[arg(long)]
    no_hand_backs: bool,
    /// Nodes a puzzle's whole-puzzle task searches before it is split, whatever the idle
    /// threads, as the scheduler before issue 64's changes did (c2d80a6: 20,000,000); by
    /// default the whole tasks as recorded. With `--prefetch-before-idle --prefetch 1
    /// --heartbeat-ms 2500 --no-returns --no-hand-backs` a replay models that scheduler.
    #[arg(long, value_name = "NODES")]
    whole_budget: Option<u64>,
    /// Each worker takes all it may hold (its running task and `--prefetch` more) in turn,
    /// while threads idle elsewhere, as before 719555e (c2d80a6's worker, prefetching one,
    /// took two whole puzzles); by default idle threads are served first, as `serve` leases.
    #[arg(long)]
    prefetch_before_idle: bool,
    /// First measure, here and once, the tasks the solution cancelled (stored for later
    /// replays), so nothing is predicted.
    #[arg(long)]
    complete: bool,
    /// Search every iteration to its end, the last one too: load balance without the luck of
    /// meeting the goal early.
    #[arg(long)]
    exhaustive: bool,
    /// Also print each split iteration's measured pieces.
    #[arg(long)]
    iterations: bool,
    /// Seconds the best sequential search takes on the same boards (`tilesolve bench
    /// --threads 1`'s solve seconds): speedup and efficiency are then also given against it.
    /// The recording's own work holds what the split repeated or wasted, so speedup against
    /// it flatters the cluster.
    #[arg(long, value_name = "SECONDS")]
    sequential_seconds: Option<f64>,
}

pub fn run(args: SimulateArgs) -> anyhow::Result<bool> {
    let (store, pdbs) = open_recording(&args)?;
    let mut puzzles = load_run(&store, args.batch)?;
    if !args.items.is_empty() {
        puzzles.retain(|p| args.items.contains(&(p.index + 1)));
        if puzzles.is_empty() {
            bail!(
                "batch {} has no solved item among {:?}",
                args.batch,
                args.items
            );
        }
    }
    let measured = measured_overhead(&puzzles);
    let overhead_seconds = match args.overhead_ms {
        Some(ms) if ms.is_finite() && ms >= 0.0 => ms / 1e3,
        Some(ms) => bail!("--overhead-ms must be a non-negative number, not {ms}"),
        None => measured.map_or(0.0, |(mean, _)| mean),
    };
    print_recording(args.batch, &puzzles, args.iterations)?;
    let policy = policy(&args, measured, overhead_seconds)?;
    let sequential = match args.sequential_seconds {
        Some(seconds) if seconds.is_finite() && seconds > 0.0 => Some(seconds),
        Some(seconds) => bail!("--sequential-seconds must be a positive number, not {seconds}"),
        None => None,
    };
    print_header(sequential.is_some())?;
    // Exhaustive runs do the same search at every size: measured against that work itself
    // (no policy's one-worker run, whose overheads and budget splits would flatter the rest).
    let mut single = args
        .exhaustive
        .then(|| puzzles.iter().map(|p| p.search_seconds()).sum::<f64>());
    if let Some(work) = single {
        outln!("speedup and efficiency against the recorded search work: {work:.3} s on one thread, no overhead")?;
    }
    let mut limited = false;
    for &workers in &args.workers {
        let result = simulate(&puzzles, &pdbs, &policy, workers)?;
        let t1 = *single.get_or_insert(if workers == 1 {
            result.makespan_seconds
        } else {
            simulate(&puzzles, &pdbs, &policy, 1)?.makespan_seconds
        });
        let speedup = t1 / result.makespan_seconds.max(1e-12);
        limited |= result.granularity_limited;
        outln!(
            "{:>7} {:>12.3} {:>9.1} {:>9.1}% {:>9} {:>10.0} {:>7.1}% {:>9.1}% {:>6.1}% {:>9.1}% {:>9.3}{}{}",
            workers,
            result.makespan_seconds,
            speedup,
            100.0 * speedup / workers as f64,
            result.tasks,
            result.tasks as f64 / result.makespan_seconds.max(1e-12),
            100.0 * result.busy_seconds / (workers as f64 * result.makespan_seconds).max(1e-12),
            100.0 * result.predicted_seconds / result.busy_seconds.max(1e-12),
            100.0 * result.audit_seconds / result.busy_seconds.max(1e-12),
            100.0 * result.withdrawn_seconds / result.busy_seconds.max(1e-12),
            result.split_seconds,
            match sequential {
                Some(seconds) => {
                    let against = seconds / result.makespan_seconds.max(1e-12);
                    format!("  {against:.2}x, {:.1}%", 100.0 * against / workers as f64)
                }
                None => String::new(),
            },
            if result.granularity_limited {
                "  *"
            } else {
                ""
            }
        )?;
        if args.iterations {
            let finished: Vec<String> = puzzles
                .iter()
                .zip(&result.puzzle_seconds)
                .map(|(p, s)| format!("item {} at {s:.3} s", p.index + 1))
                .collect();
            outln!("        finished: {}", finished.join(", "))?;
        }
    }
    if limited {
        outln!("* the recording was too coarse for the policy's split at this size (record with a larger serve --record-depth, and a smaller --split-after and --spread-after where a puzzle it solved whole ended last)")?;
    }
    Ok(true)
}

/// The recording's store and tables, its cancelled tasks measured first with `--complete`.
fn open_recording(args: &SimulateArgs) -> anyhow::Result<(Store, PdbStore)> {
    let store_dir = args.data.join("store");
    if !store_dir.exists() {
        bail!("no store at {}", store_dir.display());
    }
    let store = Store::open(&store_dir).with_context(|| {
        format!(
            "opening {} (is a coordinator still running on it?)",
            store_dir.display()
        )
    })?;
    let pdbs = PdbStore::new(&args.data, 1);
    if args.complete {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let started = std::time::Instant::now();
        let measured = measure_cancelled(&store, args.batch, &pdbs, threads)?;
        outln!(
            "measured {measured} cancelled tasks in {:.1} s on {threads} threads",
            started.elapsed().as_secs_f64()
        )?;
    }
    Ok((store, pdbs))
}

/// What the recording holds: each puzzle's nodes and split iterations (and, with
/// `iterations`, each iteration's measured pieces).
fn print_recording(
    batch: u64,
    puzzles: &[RecordedPuzzle],
    iterations: bool,
) -> std::io::Result<()> {
    outln!("batch {}: {} puzzles", batch, puzzles.len())?;
    for puzzle in puzzles {
        let total = puzzle.prelude_nodes + puzzle.measured_nodes + puzzle.predicted_nodes;
        outln!(
            "  item {:>3}: {} moves, {} nodes ({} whole-puzzle, {:.1}% predicted), split iterations at {}",
            puzzle.index + 1,
            puzzle.length,
            total,
            puzzle.prelude_nodes,
            100.0 * puzzle.predicted_nodes as f64 / total.max(1) as f64,
            if puzzle.bounds.is_empty() {
                "none".to_string()
            } else {
                puzzle
                    .bounds
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        )?;
    }
    if iterations {
        for puzzle in puzzles {
            for it in puzzle.iteration_summaries() {
                outln!(
                    "  item {:>3} bound {:>3}: {:>7} pieces, {:>12} nodes, {:>8.3} s, largest piece {:.4} s",
                    puzzle.index + 1,
                    it.bound,
                    it.units,
                    it.nodes,
                    it.seconds,
                    it.largest_unit_seconds
                )?;
            }
        }
    }
    Ok(())
}

/// The scheduling policy to simulate, from the command line, printed.
/// `measured`: the recording's mean and median overhead a task, printed when it is used.
fn policy(
    args: &SimulateArgs,
    measured: Option<(f64, f64)>,
    overhead_seconds: f64,
) -> anyhow::Result<SimulationPolicy> {
    if !(0.0..=1.0).contains(&args.audit_fraction) {
        bail!(
            "--audit-fraction must be between 0 and 1, not {}",
            args.audit_fraction
        );
    }
    if let Some(us) = args.split_us_per_estimate {
        if !(us.is_finite() && us >= 0.0) {
            bail!("--split-us-per-estimate must be a non-negative number, not {us}");
        }
    }
    if !(args.heartbeat_ms.is_finite() && args.heartbeat_ms >= 0.0) {
        bail!(
            "--heartbeat-ms must be a non-negative number, not {}",
            args.heartbeat_ms
        );
    }
    let config = args.policy.apply(SchedulerConfig::default());
    outln!(
        "policy: balance {}, splits above {} nodes and {} per thread, at most {} tasks per thread, parts {} deep, subtree budget {};\n  {:.3} ms of the coordinator per task, {} a board a split estimates, {:.3} ms per task outside the search{}, {} prefetched per worker ({}), {}, {:.0}% of reports audited, {}{}",
        config.split_balance,
        config.min_split_nodes,
        config.min_split_nodes_per_thread,
        config.tasks_per_thread,
        config.profile_depth,
        config.subtree_task_budget,
        args.coordinator_ms,
        match args.split_us_per_estimate {
            Some(us) => format!("{us} us"),
            None => format!(
                "{} us (up to 16 cells) or {} us",
                SPLIT_SECONDS_PER_ESTIMATE_SMALL * 1e6,
                SPLIT_SECONDS_PER_ESTIMATE_LARGE * 1e6
            ),
        },
        overhead_seconds * 1e3,
        match measured {
            Some((_, median)) if args.overhead_ms.is_none() =>
                format!(" (the mean measured in the run; median {:.3} ms)", median * 1e3),
            _ => String::new(),
        },
        args.prefetch,
        if args.no_returns {
            "kept while threads idle"
        } else {
            "returned to idle threads"
        },
        if args.no_hand_backs {
            "running tasks left alone".to_string()
        } else {
            format!(
                "running tasks asked to hand back after {} ms",
                config.hand_back_after.as_millis()
            )
        },
        100.0 * args.audit_fraction,
        if args.heartbeat_ms > 0.0 {
            format!("cancellations heard at heartbeats every {:.0} ms", args.heartbeat_ms)
        } else {
            "cancellations heard at once (held heartbeats)".to_string()
        },
        if args.exhaustive {
            ", every iteration searched to its end"
        } else {
            ""
        }
    )?;
    Ok(SimulationPolicy {
        tasks_per_thread: config.tasks_per_thread,
        split_balance: config.split_balance,
        min_split_nodes: config.min_split_nodes,
        min_split_nodes_per_thread: config.min_split_nodes_per_thread,
        profile_depth: config.profile_depth,
        subtree_task_budget: config.subtree_task_budget,
        overhead_seconds,
        coordinator_seconds_per_task: args.coordinator_ms.max(0.0) / 1e3,
        split_seconds_per_estimate: args.split_us_per_estimate.map(|us| us / 1e6),
        exhaustive: args.exhaustive,
        prefetch: args.prefetch as usize,
        audit_fraction: args.audit_fraction,
        returns: !args.no_returns,
        hand_backs: !args.no_hand_backs,
        hand_back_after_seconds: config.hand_back_after.as_secs_f64(),
        heartbeat_seconds: args.heartbeat_ms / 1e3,
        whole_task_budget: args.whole_budget,
        prefetch_before_idle: args.prefetch_before_idle,
    })
}

/// The recorded tasks' mean overhead (over all of them) and the median of the puzzles' medians.
fn measured_overhead(puzzles: &[RecordedPuzzle]) -> Option<(f64, f64)> {
    let tasks: usize = puzzles.iter().map(|p| p.overhead_tasks).sum();
    let total: f64 = puzzles
        .iter()
        .filter_map(|p| Some(p.mean_overhead_seconds? * p.overhead_tasks as f64))
        .sum();
    let mut medians: Vec<f64> = puzzles
        .iter()
        .filter_map(|p| p.median_overhead_seconds)
        .collect();
    medians.sort_by(f64::total_cmp);
    let median = medians.get(medians.len() / 2).copied()?;
    Some((total / tasks.max(1) as f64, median))
}

/// The table's header; `sequential` adds the column against one thread.
fn print_header(sequential: bool) -> std::io::Result<()> {
    outln!(
        "{:>7} {:>12} {:>9} {:>10} {:>9} {:>10} {:>8} {:>10} {:>7} {:>10} {:>9}{}",
        "workers",
        "makespan s",
        "speedup",
        "efficiency",
        "tasks",
        "tasks/s",
        "busy",
        "predicted",
        "audits",
        "withdrawn",
        "split s",
        if sequential {
            "  against one thread"
        } else {
            ""
        }
    )
}
