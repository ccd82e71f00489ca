//! The coordinator's serialized cost per task: time spent inside `Scheduler::poll` (results
//! applied, the next iteration split, task records made, leases handed out) while an
//! in-process worker with 64 slots solves three of Korf's 15-puzzles split from the start. gRPC
//! is not included: its decoding runs on tokio's threads in parallel, while the scheduler runs
//! behind one lock. `tilesolve simulate --coordinator-ms` takes this figure.
//!
//!     cargo run --release -p tilesolve-coordinator --example poll_cost

use std::time::{Duration, Instant};

use tilesolve::pdb::PdbStore;
use tilesolve::task::run_task;
use tilesolve::{Board, HeuristicKind, Solver};
use tilesolve_coordinator::scheduler::{Owned, SchedulerConfig, TaskReport};
use tilesolve_coordinator::store::Store;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("store"))?;
    let config = SchedulerConfig {
        whole_task_budget: 1,
        min_split_nodes: 1_000,
        ..SchedulerConfig::default()
    };
    let mut scheduler = Owned::new(store, PdbStore::new(dir.path().join("pdb"), 1), config)?;
    let boards: Vec<String> = include_str!("../../tests/data/korf100-blank-last.txt")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .take(3)
        .filter_map(|line| line.split(" # ").next().map(str::to_string))
        .collect();
    let batch = scheduler.submit(&boards, "linear-conflict", "")?.batch;
    let slots = 64;
    let worker = scheduler.register(slots, "poll_cost", None)?;
    let solver = Solver::new(Board::blank_last(4), HeuristicKind::LinearConflict);
    let (mut in_poll, mut tasks) = (Duration::ZERO, 0u64);
    let mut reports = Vec::new();
    while !scheduler.progress(batch)?.done {
        tasks += reports.len() as u64;
        let started = Instant::now();
        let (leased, _) = scheduler.poll(worker, slots, std::mem::take(&mut reports))?;
        in_poll += started.elapsed();
        // Split and written after the lock is released, as the service does: not the
        // serialized cost.
        scheduler.run_deferred()?;
        for task in leased {
            let run = run_task(&solver, task.work(), None);
            reports.push(TaskReport {
                parts: run.parts,
                ..TaskReport::new(task.id, run.outcome, run.nodes)
            });
        }
    }
    println!(
        "{tasks} tasks, {:.1} us of scheduler time per task",
        in_poll.as_secs_f64() * 1e6 / tasks.max(1) as f64
    );
    Ok(())
}
