//! How long a quarantine holds the scheduler on a large store: fills a store with many finished
//! one-board batches (default 300,000), then has a lone worker answer a 31-move 8-puzzle in 33
//! moves. Its probation audit, run on the coordinator, disproves the claim and quarantines it.
//! Prints the time of each step the scheduler's lock covers (the poll, each deferred result
//! taken) apart from the deferred work run outside it (the audit, the withdrawal's pass over
//! the store): a poll or health check waits at most for the longest step under the lock.
//!
//!     cargo run --release -p tilesolve-coordinator --example quarantine_pause -- [BATCHES]

use std::time::{Duration, Instant};

use tilesolve::pdb::PdbStore;
use tilesolve::task::run_task;
use tilesolve::{parse_board, Board, HeuristicKind, Solver};
use tilesolve_coordinator::scheduler::{
    Deferred, Owned, SchedulerConfig, TaskOutcome, TaskReport, TaskSpec,
};
use tilesolve_coordinator::store::Store;

type Error = Box<dyn std::error::Error>;

/// What one honest run of `task` reports (Manhattan distance).
fn truthful(solver: &Solver, task: &TaskSpec) -> TaskReport {
    let run = run_task(solver, task.work(), None);
    TaskReport::new(task.id, run.outcome, run.nodes)
}

/// Distinct 8-puzzles met on a random walk from the goal.
fn walked(count: usize) -> Vec<String> {
    let mut boards = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let (mut board, mut state) = (Board::blank_last(3), 7u64);
    while boards.len() < count {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let direction = tilesolve::Direction::ALL[(state >> 33) as usize % 4];
        if let Some((next, _)) = board.apply(direction) {
            board = next;
            if board != Board::blank_last(3) && seen.insert(board) {
                boards.push(board.to_string());
            }
        }
    }
    boards
}

/// Runs what the lock cycles left until nothing is, timing each step under the lock apart
/// from the work outside it; returns (longest step under the lock, work outside it in all).
fn drain(scheduler: &mut Owned) -> Result<(Duration, Duration), Error> {
    let (mut longest, mut outside) = (Duration::ZERO, Duration::ZERO);
    loop {
        let after = scheduler.take_cycle();
        scheduler.flusher().write(after.records)?;
        if after.flush_due {
            scheduler.flusher().flush()?;
        }
        if after.deferred.is_empty() {
            return Ok((longest, outside));
        }
        for work in after.deferred {
            let withdrawal = matches!(work, Deferred::Withdrawal(_));
            let started = Instant::now();
            let done = Deferred::run(work);
            outside += started.elapsed();
            if withdrawal {
                println!(
                    "withdrawal's pass over the store, outside the lock: {:.3} s",
                    started.elapsed().as_secs_f64()
                );
            }
            let started = Instant::now();
            scheduler.finish_deferred(done)?;
            longest = longest.max(started.elapsed());
        }
    }
}

fn main() -> Result<(), Error> {
    let batches: usize = std::env::args()
        .nth(1)
        .map(|text| text.parse())
        .transpose()?
        .unwrap_or(300_000);
    let dir = tempfile::tempdir()?;
    let store = Store::open(&dir.path().join("store"))?;
    let mut scheduler = Owned::new(
        store,
        PdbStore::new(dir.path().join("pdb"), 1),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            ..SchedulerConfig::default()
        },
    )?;
    let solver = Solver::new(Board::blank_last(3), HeuristicKind::Manhattan);

    // Answers for the batches to come, from an honest worker.
    let boards = walked(2_000);
    let first = scheduler.submit(&boards, "manhattan", "")?.batch;
    let honest = scheduler.register(1, "honest", None)?;
    let mut reports = Vec::new();
    while !scheduler.progress(first)?.done {
        let (tasks, _) = scheduler.poll(honest, 64, std::mem::take(&mut reports))?;
        scheduler.run_deferred()?;
        reports.extend(tasks.iter().map(|task| truthful(&solver, task)));
    }
    scheduler.leave(honest)?;
    scheduler.run_deferred()?;

    let started = Instant::now();
    for n in 0..batches {
        scheduler.submit(&[boards[n % boards.len()].clone()], "manhattan", "")?;
        if n % 10_000 == 0 {
            scheduler.run_deferred()?;
        }
    }
    scheduler.run_deferred()?;
    println!(
        "{batches} one-board batches stored in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let board = "8,6,7,2,5,4,3,0,1";
    let lied_on = scheduler
        .submit(&[board.to_string()], "manhattan", "")?
        .batch;
    let liar = scheduler.register(1, "liar", None)?;
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new())?;
    let lies: Vec<TaskReport> = tasks
        .iter()
        .map(|task| {
            let longer = solver
                .path_two_moves_longer(&parse_board(board)?, None)
                .ok_or("no longer path")?;
            Ok(TaskReport::new(task.id, TaskOutcome::Found(longer), 1_000))
        })
        .collect::<Result<_, Error>>()?;
    let started = Instant::now();
    scheduler.poll(liar, 0, lies)?;
    let poll = started.elapsed();
    let (longest, outside) = drain(&mut scheduler)?;
    let totals = scheduler.totals();
    println!(
        "quarantines {}, audits disproved {}; under the lock: the poll {:.3} ms, the longest \
         deferred result taken {:.3} ms; outside it {:.3} s",
        totals.workers_quarantined,
        totals.audits_disproved,
        poll.as_secs_f64() * 1e3,
        longest.as_secs_f64() * 1e3,
        outside.as_secs_f64()
    );
    println!(
        "the lied-on batch {lied_on} done: {}",
        scheduler.progress(lied_on)?.done
    );
    Ok(())
}
