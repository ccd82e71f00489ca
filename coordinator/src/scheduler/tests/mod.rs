//! The scheduler driven directly, with the real kernel standing in for workers: the shared
//! drivers here, the tests by the part of the scheduler they hold to in the files below.
use super::*;
use crate::store::{ItemStatus, StoredItem, StoredSolution};
use std::collections::HashMap;
use std::time::Duration;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::PdbEvent;
use tilesolve::proto::MAX_BATCH_LINES;
use tilesolve::task::run_task;
use tilesolve::time_scale::TimeScale;
use tilesolve::Direction;
use tilesolve::{parse_board, Board};

/// What the tests ask of a scheduler that the service asks elsewhere: the store without the
/// lock ([`reads`]), the parts' state, and the tables' hand-over in one call.
trait Drive {
    fn items(&self, batch: u64) -> Result<Vec<StoredItem>, SchedulerError>;
    fn query(&self, board: &str, goal: &str) -> Result<Option<StoredSolution>, SchedulerError>;
    fn take_deferred(&mut self) -> Vec<Deferred>;
    fn install_solver(&mut self, key: SolverKey, solver: tilesolve::Solver);
    fn set_preparing(&mut self, preparing: HashMap<SolverKey, String>);
    fn start_ready_batches(&mut self) -> Result<Vec<u64>, SchedulerError>;
    fn set_worker_tables(&mut self, worker: WorkerId, tables: &[(String, u64)]);
    fn read(&self, lines: &[String], heuristic: &str) -> ReadBatch;
}

impl Drive for Owned {
    fn items(&self, batch: u64) -> Result<Vec<StoredItem>, SchedulerError> {
        reads::items(&self.store(), batch)
    }

    fn query(&self, board: &str, goal: &str) -> Result<Option<StoredSolution>, SchedulerError> {
        reads::query(&self.store(), board, goal)
    }

    fn take_deferred(&mut self) -> Vec<Deferred> {
        self.take_cycle().deferred
    }

    fn install_solver(&mut self, key: SolverKey, solver: tilesolve::Solver) {
        self.parts.tables.install(key, solver);
    }

    fn set_preparing(&mut self, preparing: HashMap<SolverKey, String>) {
        self.install_solvers(Vec::new(), Some(preparing)).unwrap();
    }

    fn start_ready_batches(&mut self) -> Result<Vec<u64>, SchedulerError> {
        self.install_solvers(Vec::new(), None)
    }

    fn set_worker_tables(&mut self, worker: WorkerId, tables: &[(String, u64)]) {
        let description = WorkerDescription {
            tables: tables.to_vec(),
            ..WorkerDescription::default()
        };
        self.describe_worker(worker, &description).unwrap();
    }

    fn read(&self, lines: &[String], heuristic: &str) -> ReadBatch {
        let heuristic = parse_heuristic(heuristic).unwrap();
        read_batch(&self.store(), lines, heuristic, tilesolve::Goal::BlankLast).unwrap()
    }
}

mod audits;
mod backlog;
mod batches;
mod bounded;
mod hand_backs;
mod lifecycle;
mod tables;
mod workers;

/// A scheduler over a store and pattern databases in `dir` (reopened if already there).
fn scheduler_in(dir: &std::path::Path, config: SchedulerConfig) -> Owned {
    let store = crate::store::reopen(&dir.join("store"));
    Owned::new(store, PdbStore::new(dir.join("pdb"), 1), config).unwrap()
}

/// Drives a scheduler with `threads` simulated worker threads running the real kernel.
fn run_to_completion(scheduler: &mut Owned, batch: u64, threads: u32) {
    let worker = scheduler.register(threads, "test", None).unwrap();
    work_until_done(scheduler, worker, threads, batch, Vec::new());
}

/// Has `worker` run up to `slots` tasks a poll truthfully with the real kernel (linear
/// conflict), reporting `results` first, until `batch` is done.
fn work_until_done(
    scheduler: &mut Owned,
    worker: WorkerId,
    slots: u32,
    batch: u64,
    mut results: Vec<TaskReport>,
) {
    for _ in 0..1_000_000 {
        if scheduler.progress(batch).unwrap().done {
            return;
        }
        let (tasks, _) = scheduler
            .poll(worker, slots, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        results.extend(tasks.iter().map(truthful));
    }
    panic!("batch {batch} did not finish: {:?}", scheduler.totals());
}

fn examples() -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/examples15.txt"
    ))
    .unwrap();
    tilesolve::batch_file::board_lines(&text)
        .take(6)
        .map(|l| {
            (
                l.board.to_string(),
                l.fact("optimal").unwrap().parse().unwrap(),
            )
        })
        .collect()
}

/// `count` distinct 8-puzzles other than the goal, met on a random walk from it (`seed` picks
/// the walk).
fn distinct_eight_puzzles(count: usize, seed: u64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut board = tilesolve::Board::blank_last(3);
    let mut seen = std::collections::HashSet::new();
    let mut state = seed;
    while lines.len() < count {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        if let Some((next, _)) = board.apply(Direction::ALL[(state >> 33) as usize % 4]) {
            board = next;
            if seen.insert(board) && board != tilesolve::Board::blank_last(3) {
                lines.push(board.to_string());
            }
        }
    }
    lines
}

/// Registers a one-thread worker (under worker token `token`) and has it solve a warm-up batch
/// alone until it is past probation (its claims audited by the coordinator): under `sample`,
/// only such a worker audits others.
fn trusted_worker(scheduler: &mut Owned, name: &str, token: Option<usize>) -> WorkerId {
    let worker = scheduler.register(1, name, token).unwrap();
    let warm_up = scheduler
        .submit(&distinct_eight_puzzles(40, 7), "linear-conflict", "")
        .unwrap()
        .batch;
    work_until_done(scheduler, worker, 1, warm_up, Vec::new());
    assert!(
        !scheduler.parts.workers.on_probation(worker),
        "{:?}",
        scheduler.totals()
    );
    worker
}

/// The length of the answer stored for `batch`'s first item, which must be solved.
fn first_answer_length(scheduler: &Owned, batch: u64) -> u32 {
    let items = scheduler.items(batch).unwrap();
    match &items[0].status {
        ItemStatus::Solved(solution) => solution.length,
        other => panic!("{other:?}"),
    }
}

/// The kernel's truthful run of `task`, with linear conflict.
fn run_linear_conflict(task: &TaskSpec) -> tilesolve::task::TaskRun {
    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::LinearConflict);
    run_task(&solver, task.work(), None)
}

/// What an honest worker reports for `task`: the real kernel's run (linear conflict), with
/// the parts it measured. Every simulated worker in these tests reports through it.
fn truthful(task: &TaskSpec) -> TaskReport {
    let run = run_linear_conflict(task);
    TaskReport {
        parts: run.parts,
        ..TaskReport::new(task.id, run.outcome, run.nodes)
    }
}

/// `count` 3x3 boards a few random moves from the goal (deterministic).
fn walked_boards(count: usize) -> Vec<String> {
    let goal = Board::blank_last(3);
    let mut seed = 19u64;
    (0..count)
        .map(|_| {
            let mut board = goal;
            for _ in 0..12 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let direction = Direction::ALL[(seed >> 62) as usize];
                board = board.apply(direction).map_or(board, |(next, _)| next);
            }
            board.to_string()
        })
        .collect()
}

/// Has `honest` run one task a poll truthfully until `batch` is done, with `beside` (another
/// worker's conduct) first in each round and a sweep after it (leases expire; audits nobody
/// took go to the coordinator). Returns whether `beside` ever returned true.
fn work_beside(
    scheduler: &mut Owned,
    honest: WorkerId,
    batch: u64,
    mut beside: impl FnMut(&mut Owned) -> bool,
) -> bool {
    let (mut results, mut said) = (Vec::new(), false);
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            return said;
        }
        said |= beside(scheduler);
        let (tasks, _) = scheduler
            .poll(honest, 1, std::mem::take(&mut results))
            .unwrap();
        results.extend(tasks.iter().map(truthful));
        std::thread::sleep(Duration::from_millis(1));
        scheduler.sweep().unwrap();
        scheduler.run_deferred().unwrap();
    }
    panic!("batch {batch} did not finish");
}
