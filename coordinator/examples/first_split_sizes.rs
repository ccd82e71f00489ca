//! How even a puzzle's first split is, with and without its whole-puzzle task's measured last
//! iteration: for each 15-puzzle of a batch file, the whole task runs to `BUDGET` nodes with
//! its last iterations measured `DEPTH` moves deep, then the iteration it stopped before is
//! split both ways (as `serve` would for a puzzle given `THREADS` threads, at most
//! `TASKS_PER_THREAD` tasks a thread), and every task is searched: the tasks, their nodes
//! against one search of the iteration, and the largest task's share.
//!
//!     cargo run --release -p tilesolve-coordinator --example first_split_sizes -- \
//!         TABLE_DIR FILE BUDGET DEPTH THREADS [TASKS_PER_THREAD]
//!
//! `TABLE_DIR` holds the default 4x4 tables (`tilesolve pdb build 7-8 --data DIR`).

use std::error::Error;

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::{default_memory_budget, PdbStore};
use tilesolve::search::Limits;
use tilesolve::task::{run_task, TaskOutcome, Work};
use tilesolve::{parse_board, Board, Solver};
use tilesolve_coordinator::frontier::{split_iteration, BalanceParams, MAX_SPLIT_DEPTH};
use tilesolve_coordinator::size_history::{PackedPath, SizeHistory};

const USAGE: &str =
    "usage: first_split_sizes TABLE_DIR FILE BUDGET DEPTH THREADS [TASKS_PER_THREAD]";

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tables, file, budget, depth, threads, rest @ ..] = args.as_slice() else {
        return Err(USAGE.into());
    };
    let (budget, depth, threads): (u64, u32, usize) =
        (budget.parse()?, depth.parse()?, threads.parse()?);
    let tasks_per_thread = match rest.first() {
        Some(text) => text.parse()?,
        None => 200,
    };
    let goal = Board::blank_last(4);
    let memory = default_memory_budget();
    let choice = "default".parse::<HeuristicChoice>()?.resolve(&goal, memory);
    let built = choice.build(&goal, memory, &PdbStore::new(tables, 1), &|_| {})?;
    let solver = Solver::with_heuristic(goal, built, choice.to_string());
    // As `serve` splits for `threads` of fifteen connected ones, with its default knobs and no
    // cap from the coordinator's time a task.
    let params = BalanceParams {
        threads,
        connected_threads: 15,
        tasks_per_thread,
        balance: 16,
        min_split_nodes: 30_000,
        min_split_nodes_per_thread: 250,
        max_depth: MAX_SPLIT_DEPTH,
        seconds_per_node: 0.0,
        min_mean_task_seconds: 0.0,
    };
    let text = std::fs::read_to_string(file)?;
    for (index, line) in text.lines().filter(|l| !l.starts_with('#')).enumerate() {
        let board = parse_board(line.split(" # ").next().unwrap_or(line))?;
        let whole = Work {
            board: &board,
            path: &[],
            bound: 0,
            iterate: true,
            node_budget: budget,
            profile_depth: depth,
            weighted: None,
        };
        let whole = run_task(&solver, whole, None);
        let TaskOutcome::BudgetSpent(bound) = whole.outcome else {
            println!("#{}: {:?} within the budget", index + 1, whole.outcome);
            continue;
        };
        let mut measured = SizeHistory::default();
        for part in &whole.parts {
            measured.add(
                PackedPath::new(part.moves.iter().map(|&d| d as u8)),
                part.expanded,
            );
        }
        let (_, one_search) = solver.search_subtree(&board, &[], bound, Limits::default());
        let mut out = format!("#{} bound {bound}, {} parts:", index + 1, whole.parts.len());
        for (name, history) in [("uniform", SizeHistory::default()), ("measured", measured)] {
            let frontier = split_iteration(
                &board,
                &solver,
                bound,
                &history,
                whole.nodes,
                params,
                &|_| true,
            );
            let sizes: Vec<u64> = frontier
                .tasks
                .iter()
                .map(|task| {
                    let searched =
                        solver.search_subtree(&task.board, &task.path, bound, Limits::default());
                    searched.1.expanded
                })
                .collect();
            let total: u64 = sizes.iter().sum();
            let largest = sizes.iter().max().copied().unwrap_or(0);
            out += &format!(
                " {name} {} tasks, {:.3}x the nodes, largest {:.1}%;",
                sizes.len(),
                total as f64 / one_search.expanded.max(1) as f64,
                largest as f64 * 100.0 / total.max(1) as f64
            );
        }
        println!("{out}");
    }
    Ok(())
}
