//! The coordinator's cost per puzzle on a batch of easy boards, split by phase: the submission
//! (lines read, items stored), the polls (results applied, answers replayed and stored, tasks
//! leased) and the results read back as `submit --wait` reads them. An in-process worker
//! solves every task between polls, outside the timed calls; gRPC is not included.
//!
//!     cargo run --release -p tilesolve-coordinator --example easy_batch_cost -- TABLE_DIR BATCH
//!
//! TABLE_DIR holds the default tables of the batch's boards (as `tilesolve pdb build` makes
//! them); BATCH is a batch file of boards that each solve in one whole-puzzle task.

use std::time::{Duration, Instant};

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::{PdbEvent, PdbStore};
use tilesolve::task::run_task;
use tilesolve::{Board, Solver};
use tilesolve_coordinator::scheduler::{reads, Owned, SchedulerConfig, TaskReport};
use tilesolve_coordinator::store::Store;

/// Slots the in-process worker asks for in each poll, as a packing worker does for short tasks.
const SLOTS: u32 = 64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(tables), Some(batch_file)) = (args.next(), args.next()) else {
        return Err("usage: easy_batch_cost TABLE_DIR BATCH".into());
    };
    let lines: Vec<String> = std::fs::read_to_string(batch_file)?
        .lines()
        .map(str::to_string)
        .collect();
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("store"))?;
    let pdbs = PdbStore::new(tables, 1).without_builds();
    let config = SchedulerConfig::default();
    let budget = config.table_budget;
    let goal = Board::blank_last(4);
    let choice = "default".parse::<HeuristicChoice>()?.resolve(&goal, budget);
    let quiet = |_: PdbEvent<'_>| {};
    let solver = Solver::with_heuristic(
        goal,
        choice.build(&goal, budget, &pdbs, &quiet)?,
        choice.to_string(),
    );
    let mut scheduler = Owned::new(store, pdbs, config)?;
    scheduler.install_solvers(
        vec![(
            (goal, tilesolve::heuristic_choice::HeuristicChoice::Default),
            solver.clone(),
        )],
        None,
    )?;

    let started = Instant::now();
    let batch = scheduler.submit(&lines, "default", "")?.batch;
    scheduler.flusher().flush()?;
    let submitting = started.elapsed();

    let worker = scheduler.register(SLOTS, "easy_batch_cost", None)?;
    let (mut polling, mut puzzles) = (Duration::ZERO, 0u64);
    let mut reports = Vec::new();
    while !scheduler.progress(batch)?.done {
        puzzles += reports.len() as u64;
        let started = Instant::now();
        let (leased, _) = scheduler.poll(worker, SLOTS, std::mem::take(&mut reports))?;
        scheduler.run_deferred()?;
        polling += started.elapsed();
        for task in leased {
            let run = run_task(&solver, task.work(), None);
            reports.push(TaskReport {
                parts: run.parts,
                ..TaskReport::new(task.id, run.outcome, run.nodes)
            });
        }
    }

    let started = Instant::now();
    let items = reads::items(&scheduler.store(), batch)?;
    let reading = started.elapsed();

    let per_puzzle = |time: Duration| time.as_secs_f64() * 1e6 / items.len().max(1) as f64;
    println!(
        "{} items, {puzzles} results: submit {:.1} us, polls {:.1} us, results read {:.1} us per puzzle",
        items.len(),
        per_puzzle(submitting),
        per_puzzle(polling),
        per_puzzle(reading),
    );
    Ok(())
}
