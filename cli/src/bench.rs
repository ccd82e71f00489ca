//! `tilesolve bench FILE`: solves a benchmark file (boards with `optimal=` and optionally
//! `korf1985_nodes=` facts) on N threads, one board per thread at a time, and prints per-board
//! lines and a summary with node rates per thread. Speed is measured here, never asserted in tests.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use tilesolve::batch_file::{board_lines, BatchLine};
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::search::{Counters, Pruning};
use tilesolve::{parse_board, Algorithm, HeuristicKind};

use crate::options::{SearchArgs, Solvers};

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    search: SearchArgs,
    /// Worker threads, each solving whole boards.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Only the boards with these ids (`id=` facts), comma-separated.
    #[arg(long, value_delimiter = ',')]
    ids: Vec<String>,
    /// A benchmark file: one board per line, then ` # ` and facts.
    file: PathBuf,
}

/// One board's outcome.
struct Row {
    id: String,
    length: Option<usize>,
    optimal: Option<usize>,
    counters: Counters,
    /// Korf's counting: every generated node plus the root.
    korf_count: u64,
    korf_published: Option<u64>,
    seconds: f64,
    error: Option<String>,
}

impl Row {
    fn length_ok(&self) -> bool {
        self.error.is_none() && (self.optimal.is_none() || self.length == self.optimal)
    }

    fn korf_ok(&self) -> Option<bool> {
        self.korf_published
            .map(|published| published == self.korf_count)
    }

    fn line(&self) -> String {
        let length = self.length.map_or("-".into(), |l| l.to_string());
        let optimal = self.optimal.map_or("?".into(), |o| o.to_string());
        let verdict = if self.length_ok() { "ok" } else { "MISMATCH" };
        let korf = match (self.korf_published, self.korf_ok()) {
            (Some(_), Some(true)) => format!("  korf1985 {} =", self.korf_count),
            (Some(published), _) => format!(
                "  korf1985 {} vs published {published} DIFFERENT",
                self.korf_count
            ),
            _ => String::new(),
        };
        let error = self
            .error
            .as_deref()
            .map_or(String::new(), |e| format!("  error: {e}"));
        format!(
            "id={:<4} length {length:>3} optimal {optimal:>3} {verdict}  expanded {:>13}  generated {:>13}  {:>9.3} s{korf}{error}",
            self.id, self.counters.expanded, self.counters.generated, self.seconds
        )
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<bool> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let lines: Vec<BatchLine<'_>> = board_lines(&text)
        .filter(|line| {
            args.ids.is_empty()
                || line
                    .fact("id")
                    .is_some_and(|id| args.ids.iter().any(|want| want == id))
        })
        .collect();
    let options = args.search.solve_options()?;
    let threads = args.threads.max(1);
    let mut sides: Vec<usize> = lines
        .iter()
        .filter_map(|line| parse_board(line.board).ok().map(|board| board.side()))
        .collect();
    sides.sort_unstable();
    sides.dedup();
    let resolved: Vec<String> = sides
        .iter()
        .map(|&side| {
            let goal = args.search.goal.for_side(side);
            let choice = args
                .search
                .heuristic
                .resolve(&goal, args.search.memory.bytes());
            format!("{side}x{side} {choice}")
        })
        .collect();
    println!(
        "bench {}: {} boards, heuristic {} ({}), algorithm {}, pruning {}, goal {}, {threads} thread(s)",
        args.file.display(),
        lines.len(),
        args.search.heuristic,
        resolved.join(", "),
        args.search.algorithm,
        args.search.pruning.name(),
        args.search.goal
    );
    let korf_comparable = args.search.heuristic
        == HeuristicChoice::Classic(HeuristicKind::Manhattan)
        && args.search.algorithm == Algorithm::Ida
        && args.search.pruning == Pruning::UndoOnly;
    // Load or build every pattern database once, before the threads start, so they share it.
    let mut solvers = Solvers::new(&args.search);
    for line in &lines {
        if let Ok(board) = parse_board(line.board) {
            let _ = solvers.for_board(&board);
        }
    }
    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<(usize, Row)>> = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut solvers = solvers.clone();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(line) = lines.get(index) else { break };
                    let row = bench_one(line, &mut solvers, &options, korf_comparable);
                    println!("{}", row.line());
                    rows.lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((index, row));
                }
            });
        }
    });
    let wall = started.elapsed().as_secs_f64();
    let mut rows = rows
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    rows.sort_by_key(|(index, _)| *index);
    Ok(summarize(
        &rows.into_iter().map(|(_, row)| row).collect::<Vec<_>>(),
        wall,
    ))
}

/// Korf's 1985 counts are for Manhattan IDA*; with anything else they are not comparable.
fn bench_one(
    line: &BatchLine<'_>,
    solvers: &mut Solvers,
    options: &tilesolve::SolveOptions,
    korf_comparable: bool,
) -> Row {
    let mut row = Row {
        id: line.fact("id").unwrap_or("?").to_string(),
        length: None,
        optimal: line.fact("optimal").and_then(|o| o.parse().ok()),
        counters: Counters::default(),
        korf_count: 0,
        korf_published: line
            .fact("korf1985_nodes")
            .and_then(|n| n.parse().ok())
            .filter(|_| korf_comparable),
        seconds: 0.0,
        error: None,
    };
    let result = parse_board(line.board)
        .map_err(|e| format!("line {}: {e}", line.number))
        .and_then(|board| {
            solvers
                .for_board(&board)?
                .solve(&board, options, None)
                .map_err(|e| e.to_string())
        });
    match result {
        Ok(solution) => {
            row.length = Some(solution.len());
            row.counters = solution.counters;
            row.korf_count = solution.counters.generated + 1;
            row.seconds = solution.seconds;
        }
        Err(error) => row.error = Some(error),
    }
    row
}

/// Prints the summary; returns whether every length matched.
fn summarize(rows: &[Row], wall: f64) -> bool {
    let mut total = Counters::default();
    for row in rows {
        total += row.counters;
    }
    let solve_seconds: f64 = rows.iter().map(|r| r.seconds).sum();
    let wrong: Vec<&str> = rows
        .iter()
        .filter(|r| !r.length_ok())
        .map(|r| r.id.as_str())
        .collect();
    let korf_checked = rows.iter().filter(|r| r.korf_ok().is_some()).count();
    let korf_different: Vec<&str> = rows
        .iter()
        .filter(|r| r.korf_ok() == Some(false))
        .map(|r| r.id.as_str())
        .collect();
    let per_thread = |nodes: u64| nodes as f64 / solve_seconds.max(1e-9) / 1e6;
    println!("---");
    println!("boards            {}", rows.len());
    println!(
        "lengths optimal   {} of {}{}",
        rows.len() - wrong.len(),
        rows.len(),
        list(" mismatched: ", &wrong)
    );
    if korf_checked > 0 {
        println!(
            "korf1985 counts   {} of {korf_checked} equal{}",
            korf_checked - korf_different.len(),
            list(" different: ", &korf_different)
        );
    }
    let per_board = |nodes: u64| nodes / rows.len().max(1) as u64;
    println!(
        "expanded          {}  ({:.1} M/s per thread, {} per board)",
        total.expanded,
        per_thread(total.expanded),
        per_board(total.expanded)
    );
    println!(
        "generated         {}  ({:.1} M/s per thread, {} per board)",
        total.generated,
        per_thread(total.generated),
        per_board(total.generated)
    );
    println!("solve seconds     {solve_seconds:.3} (sum over boards)");
    println!("wall seconds      {wall:.3}");
    wrong.is_empty()
}

fn list(prefix: &str, ids: &[&str]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        format!("{prefix}{}", ids.join(","))
    }
}
