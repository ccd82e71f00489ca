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
use tilesolve::pdb::TablePages;
use tilesolve::search::{Counters, Pruning};
use tilesolve::{Algorithm, HeuristicKind, Shape};

use crate::options::{SearchArgs, Solvers};
use crate::output::outln;

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
    /// One JSON object per board per line, then one for the summary (`"summary": true`).
    #[arg(long)]
    json: bool,
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

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "length": self.length,
            "optimal": self.optimal,
            "ok": self.length_ok(),
            "expanded": self.counters.expanded,
            "generated": self.counters.generated,
            "seconds": self.seconds,
            "korf1985_nodes": self.korf_published.map(|_| self.korf_count),
            "korf1985_published": self.korf_published,
            "error": self.error,
        })
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
    let size = args.search.size;
    let mut shapes: Vec<Shape> = lines
        .iter()
        .filter_map(|line| line.read_board(size).ok().map(|board| board.shape()))
        .collect();
    shapes.sort_unstable();
    shapes.dedup();
    let resolved: Vec<String> = shapes
        .iter()
        .map(|&shape| {
            let goal = args.search.goal.for_shape(shape);
            let choice = args
                .search
                .heuristic
                .resolve(&goal, args.search.memory.bytes());
            format!("{shape} {choice}")
        })
        .collect();
    let header = format!(
        "bench {}: {} boards, heuristic {} ({}), algorithm {}, pruning {}, goal {}, {threads} thread(s)",
        args.file.display(),
        lines.len(),
        args.search.heuristic,
        resolved.join(", "),
        args.search.algorithm,
        args.search.pruning.name(),
        args.search.goal
    );
    // With --json, standard output holds JSON lines only.
    if args.json {
        eprintln!("{header}");
    } else {
        outln!("{header}")?;
    }
    let korf_comparable = args.search.heuristic
        == HeuristicChoice::Classic(HeuristicKind::Manhattan)
        && args.search.algorithm == Algorithm::Ida
        && args.search.pruning == Pruning::UndoOnly;
    // Load or build every pattern database once, before the threads start, so they share it.
    let mut solvers = Solvers::new(&args.search);
    for line in &lines {
        if let Ok(board) = line.read_board(size) {
            let _ = solvers.for_board(&board);
        }
    }
    // Whether the tables are in 2 MiB pages: a run on small pages is slower, and says why.
    let pages = TablePages::now(solvers.table_bytes());
    let started = Instant::now();
    let rows = bench_all(
        &lines,
        threads,
        &solvers,
        size,
        &options,
        korf_comparable,
        args.json,
    )?;
    let wall = started.elapsed().as_secs_f64();
    let summary = Summary::of(&rows, wall, pages);
    if args.json {
        outln!("{}", summary.json())?;
    } else {
        summary.print()?;
    }
    Ok(summary.wrong.is_empty())
}

/// Benches `lines` on `threads` threads, each printing a board's row as it ends: the rows in
/// the file's order, or the error of a row that could not be printed (the reader went away),
/// which stops every thread.
fn bench_all(
    lines: &[BatchLine<'_>],
    threads: usize,
    solvers: &Solvers,
    size: Option<Shape>,
    options: &tilesolve::SolveOptions,
    korf_comparable: bool,
    json: bool,
) -> std::io::Result<Vec<Row>> {
    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<(usize, Row)>> = Mutex::new(Vec::new());
    let unprinted: Mutex<Option<std::io::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut solvers = solvers.clone();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(line) = lines.get(index) else { break };
                    let row = bench_one(line, size, &mut solvers, options, korf_comparable);
                    let printed = match json {
                        true => outln!("{}", row.json()),
                        false => outln!("{}", row.line()),
                    };
                    if let Err(error) = printed {
                        next.store(lines.len(), Ordering::Relaxed);
                        *unprinted.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
                        break;
                    }
                    rows.lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((index, row));
                }
            });
        }
    });
    if let Some(error) = unprinted.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(error);
    }
    let mut rows = rows
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    rows.sort_by_key(|(index, _)| *index);
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// Korf's 1985 counts are for Manhattan IDA*; with anything else they are not comparable.
fn bench_one(
    line: &BatchLine<'_>,
    size: Option<Shape>,
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
    let result = line
        .read_board(size)
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

/// The figures of a whole run.
struct Summary<'a> {
    boards: usize,
    total: Counters,
    solve_seconds: f64,
    wall: f64,
    wrong: Vec<&'a str>,
    korf_checked: usize,
    korf_different: Vec<&'a str>,
    /// The tables' pages, where known.
    pages: Option<TablePages>,
}

impl<'a> Summary<'a> {
    fn of(rows: &'a [Row], wall: f64, pages: Option<TablePages>) -> Summary<'a> {
        let mut total = Counters::default();
        for row in rows {
            total += row.counters;
        }
        Summary {
            boards: rows.len(),
            total,
            solve_seconds: rows.iter().map(|r| r.seconds).sum(),
            wall,
            wrong: rows
                .iter()
                .filter(|r| !r.length_ok())
                .map(|r| r.id.as_str())
                .collect(),
            korf_checked: rows.iter().filter(|r| r.korf_ok().is_some()).count(),
            korf_different: rows
                .iter()
                .filter(|r| r.korf_ok() == Some(false))
                .map(|r| r.id.as_str())
                .collect(),
            pages,
        }
    }

    /// Nodes per second per thread, in millions.
    fn rate(&self, nodes: u64) -> f64 {
        nodes as f64 / self.solve_seconds.max(1e-9) / 1e6
    }

    fn per_board(&self, nodes: u64) -> u64 {
        nodes / self.boards.max(1) as u64
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "summary": true,
            "boards": self.boards,
            "optimal": self.boards - self.wrong.len(),
            "mismatched": self.wrong,
            "korf1985_checked": self.korf_checked,
            "korf1985_different": self.korf_different,
            "expanded": self.total.expanded,
            "generated": self.total.generated,
            "expanded_per_second_per_thread": self.rate(self.total.expanded) * 1e6,
            "generated_per_second_per_thread": self.rate(self.total.generated) * 1e6,
            "solve_seconds": self.solve_seconds,
            "wall_seconds": self.wall,
            "table_bytes": self.pages.map(|p| p.table_bytes),
            "table_bytes_in_huge_pages": self.pages.map(|p| p.huge_bytes),
        })
    }

    fn print(&self) -> std::io::Result<()> {
        let (rows, wrong, total) = (self.boards, &self.wrong, self.total);
        outln!("---")?;
        outln!("boards            {rows}")?;
        outln!(
            "lengths optimal   {} of {rows}{}",
            rows - wrong.len(),
            list(" mismatched: ", wrong)
        )?;
        if self.korf_checked > 0 {
            outln!(
                "korf1985 counts   {} of {} equal{}",
                self.korf_checked - self.korf_different.len(),
                self.korf_checked,
                list(" different: ", &self.korf_different)
            )?;
        }
        outln!(
            "expanded          {}  ({:.1} M/s per thread, {} per board)",
            total.expanded,
            self.rate(total.expanded),
            self.per_board(total.expanded)
        )?;
        outln!(
            "generated         {}  ({:.1} M/s per thread, {} per board)",
            total.generated,
            self.rate(total.generated),
            self.per_board(total.generated)
        )?;
        outln!(
            "solve seconds     {:.3} (sum over boards)",
            self.solve_seconds
        )?;
        outln!("wall seconds      {:.3}", self.wall)?;
        match self.pages {
            Some(pages) => outln!("tables            {pages}"),
            None => Ok(()),
        }
    }
}

fn list(prefix: &str, ids: &[&str]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        format!("{prefix}{}", ids.join(","))
    }
}
