//! The search threads: each runs one task at a time on the kernel, with the solver for its goal
//! and heuristic (built once per worker) and its cancel flag.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tilesolve::heuristic::Weight;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::moves_to_string;
use tilesolve::pdb::{PdbStore, TablePages};
use tilesolve::proto::v1 as pb;
use tilesolve::task::{run_task_handing_back, WeightedWork, Work};
use tilesolve::{parse_board, Board, Direction, Solver};

use crate::finished::Finished;
use crate::jobs::Jobs;
use crate::tables::{log_table_event, log_table_pages, Fetcher, Tables};
use crate::{Metrics, WorkerConfig};

/// Tasks this worker holds (running, or prefetched and waiting for a thread), with the flags the
/// coordinator sets on them.
pub(crate) type Running = Arc<Mutex<HashMap<u64, Arc<TaskFlags>>>>;

/// What the coordinator asked of a held task: to stop (its puzzle ended), or to hand back what
/// it has not searched (threads elsewhere are idle).
#[derive(Default)]
pub(crate) struct TaskFlags {
    cancel: AtomicBool,
    hand_back: AtomicBool,
}

/// Solvers by goal and heuristic (as the task named it, `default` unresolved), shared by the
/// threads.
pub(crate) type Solvers = Arc<Mutex<HashMap<(Board, HeuristicChoice), Arc<Solver>>>>;

/// Starts `threads` search threads: each takes the next task from `jobs` (highest priority
/// first), runs it with its cancel flag from `running` and puts the result in `results`. They
/// end when `jobs` closes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_threads(
    config: &WorkerConfig,
    threads: usize,
    jobs: Arc<Jobs>,
    results: Arc<Finished>,
    running: &Running,
    solvers: &Solvers,
    pdbs: &PdbStore,
    fetcher: &Fetcher,
) {
    for _ in 0..threads {
        let table_budget = config.table_budget;
        let (jobs, results, running, solvers, pdbs, fetcher, metrics) = (
            jobs.clone(),
            results.clone(),
            running.clone(),
            solvers.clone(),
            pdbs.clone(),
            fetcher.clone(),
            config.metrics.clone(),
        );
        std::thread::spawn(move || loop {
            let Some((task, arrived)) = jobs.take() else {
                return;
            };
            // Every line logged about the task, here and in what it calls (fetching a table,
            // say), carries the ids the coordinator logs it under.
            let span = tracing::info_span!(
                "task",
                batch = task.batch_id,
                puzzle = task.puzzle,
                task = task.task_id
            );
            // A traced batch's task joins the trace it was submitted in.
            tilesolve::trace_context::adopt(&span, &task.traceparent);
            let _in_task = span.enter();
            tracing::debug!(bound = task.bound, iterate = task.iterate, "task started");
            let queued_seconds = arrived.elapsed().as_secs_f64();
            let flags = running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&task.task_id)
                .cloned();
            let result = pb::TaskResult {
                queued_seconds,
                ..execute(
                    &task,
                    &solvers,
                    Tables {
                        pdbs: &pdbs,
                        fetcher: &fetcher,
                        budget: table_budget,
                        metrics: &metrics,
                    },
                    flags.as_deref(),
                )
            };
            let cancelled = flags
                .as_deref()
                .is_some_and(|f| f.cancel.load(Ordering::Relaxed));
            metrics.task_finished(&result, cancelled);
            match &result.outcome {
                // The coordinator withdrew it (its puzzle was solved): routine, not a failure.
                Some(pb::task_result::Outcome::Error(_)) if cancelled => {
                    tracing::debug!("task cancelled")
                }
                Some(pb::task_result::Outcome::Error(reason)) => {
                    tracing::warn!(%reason, "task failed")
                }
                _ => {}
            }
            let held = {
                let mut running = running.lock().unwrap_or_else(|p| p.into_inner());
                running.remove(&task.task_id);
                running.len()
            };
            results.put(result, held);
        });
    }
}

/// The ids of the tasks this worker holds (running or prefetched).
pub(crate) fn held_tasks(running: &Running) -> Vec<u64> {
    running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .copied()
        .collect()
}

pub(crate) fn cancel(running: &Running, ids: &[u64]) {
    let running = running.lock().unwrap_or_else(|p| p.into_inner());
    for id in ids {
        if let Some(flags) = running.get(id) {
            flags.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// What a worker holds: its tasks with their flags, the queue of those no thread has started,
/// and the results on their way to the coordinator.
#[derive(Clone)]
pub(crate) struct Held {
    pub(crate) running: Running,
    /// What the coordinator told this worker of tasks it did not hold yet. What is told
    /// unasked can overtake the poll answer that leased its task: both come on the session's
    /// stream in order, but the answer goes to the polling task and what is told to the
    /// heartbeats' one, which may act first. Lost, a stop left the task to run whole (on
    /// hard80 through fifteen dilated workers, a puzzle's 0.1-0.7 M-node tasks of the bound its
    /// answer had already ended, for up to 0.6 s at the batch's end), and a prefetch asked back
    /// (the newest waiting task is asked first) stayed queued behind a running task while the
    /// thread it was asked back for idled, the coordinator counting it as asked.
    pub(crate) told_before_held: Arc<Mutex<ToldBeforeHeld>>,
    pub(crate) jobs: Arc<Jobs>,
    pub(crate) results: Arc<Finished>,
}

/// Tasks told to stop, and tasks asked back, before this worker held them.
#[derive(Default)]
pub(crate) struct ToldBeforeHeld {
    stop: HashSet<u64>,
    hand_back: HashSet<u64>,
}

impl Held {
    /// Stops the tasks `ids` the coordinator told this worker to stop: a held one at once, one
    /// not held yet as soon as it is ([`Held::hold_leased`]).
    pub(crate) fn stop_told(&self, ids: &[u64]) {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        for id in ids {
            match running.get(id) {
                Some(flags) => flags.cancel.store(true, Ordering::Relaxed),
                None => {
                    let mut early =
                        (self.told_before_held.lock()).unwrap_or_else(|p| p.into_inner());
                    early.stop.insert(*id);
                }
            }
        }
    }

    /// Hands back the tasks `ids` the coordinator asked back unasked ([`Held::hand_back`]); one
    /// not held yet is handed back once its poll answer's tasks are held
    /// ([`Held::answer_held`]).
    pub(crate) fn hand_back_told(&self, ids: &[u64]) {
        let not_held = self.hand_back(ids);
        if !not_held.is_empty() {
            let mut early = (self.told_before_held.lock()).unwrap_or_else(|p| p.into_inner());
            early.hand_back.extend(not_held);
        }
    }

    /// Holds the task `id` a poll answer leased, stopped already if the coordinator said so
    /// before the answer was taken.
    pub(crate) fn hold_leased(&self, id: u64) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let flags = TaskFlags::default();
        let mut early = (self.told_before_held.lock()).unwrap_or_else(|p| p.into_inner());
        if early.stop.remove(&id) {
            early.hand_back.remove(&id);
            flags.cancel.store(true, Ordering::Relaxed);
        }
        running.insert(id, Arc::new(flags));
    }

    /// After a poll answer's tasks are held and queued: hands back those the coordinator
    /// asked back, in the answer (`asked_back`) or before it was taken. What was told before
    /// and is still not held was for a task that had ended (what is told comes after the
    /// answer that leased its task, and a worker has one poll outstanding at a time), and is
    /// forgotten.
    pub(crate) fn answer_held(&self, asked_back: &[u64]) {
        let early = {
            let _running = self.running.lock().unwrap_or_else(|p| p.into_inner());
            let mut early = (self.told_before_held.lock()).unwrap_or_else(|p| p.into_inner());
            early.stop.clear();
            std::mem::take(&mut early.hand_back)
        };
        self.hand_back(asked_back);
        self.hand_back(&early.into_iter().collect::<Vec<_>>());
    }

    /// Hands back the held tasks `ids`: one no thread has started is taken off the queue and
    /// returned at once, unsearched; a running one is asked to hand back what it has not
    /// searched (a task that cannot hand back runs on as it would). Returns the ids this
    /// worker does not hold.
    fn hand_back(&self, ids: &[u64]) -> Vec<u64> {
        let mut not_held = Vec::new();
        for &id in ids {
            if self.jobs.take_back(id) {
                let holding = {
                    let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
                    running.remove(&id);
                    running.len()
                };
                let returned = pb::TaskResult {
                    task_id: id,
                    outcome: Some(pb::task_result::Outcome::Returned(true)),
                    ..pb::TaskResult::default()
                };
                self.results.put(returned, holding);
            } else {
                match self
                    .running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&id)
                {
                    Some(flags) => flags.hand_back.store(true, Ordering::Relaxed),
                    None => not_held.push(id),
                }
            }
        }
        not_held
    }
}

/// A weighted task's search, as the coordinator asked for it.
fn weighted_work(search: &pb::WeightedSearch) -> Result<WeightedWork, String> {
    let weight = match search.weight_percent {
        0 => None,
        percent => Some(
            Weight::new(percent, 100)
                .ok_or_else(|| format!("bad task weight {percent} hundredths"))?,
        ),
    };
    let time_limit = match search.seconds {
        0.0 => None,
        seconds => Some(
            Duration::try_from_secs_f64(seconds)
                .map_err(|_| format!("bad task time limit {seconds} s"))?,
        ),
    };
    Ok(WeightedWork { weight, time_limit })
}

/// Runs one task on the calling thread.
fn execute(
    task: &pb::Task,
    solvers: &Solvers,
    tables: Tables<'_>,
    flags: Option<&TaskFlags>,
) -> pb::TaskResult {
    use pb::task_result::Outcome;
    let fail = |reason: String| pb::TaskResult {
        task_id: task.task_id,
        nodes: 0,
        seconds: 0.0,
        outcome: Some(Outcome::Error(reason)),
        parts: Vec::new(),
        queued_seconds: 0.0,
    };
    let (board, goal) = match (parse_board(&task.board), parse_board(&task.goal)) {
        (Ok(board), Ok(goal)) => (board, goal),
        (Err(e), _) | (_, Err(e)) => return fail(format!("bad task board: {e}")),
    };
    let Some(path) = task
        .path
        .chars()
        .map(|c| Direction::ALL.into_iter().find(|d| d.letter() == c))
        .collect::<Option<Vec<_>>>()
    else {
        return fail(format!("bad task path '{}'", task.path));
    };
    let weighted = match task.weighted.as_ref().map(weighted_work).transpose() {
        Ok(weighted) => weighted,
        Err(reason) => return fail(reason),
    };
    let heuristic: HeuristicChoice = match task.heuristic.parse() {
        Ok(heuristic) => heuristic,
        Err(error) => return fail(format!("{error}")),
    };
    let solver = match solver_for(solvers, tables, &goal, heuristic) {
        Ok(solver) => solver,
        Err(reason) => return fail(reason),
    };
    // Timed from here: a first task's pattern database load is the worker's cost, not the
    // search's (the coordinator records these times for replaying the run).
    let started = Instant::now();
    let run = run_task_handing_back(
        &solver,
        Work {
            board: &board,
            path: &path,
            bound: task.bound,
            iterate: task.iterate,
            node_budget: task.node_budget,
            profile_depth: task.profile_depth,
            weighted,
        },
        flags.map(|f| &f.cancel),
        flags.map(|f| &f.hand_back),
    );
    let seconds = started.elapsed().as_secs_f64();
    tracing::debug!(
        nodes = run.nodes,
        seconds,
        outcome = run.outcome.kind(),
        "task finished"
    );
    let outcome = Outcome::from(run.outcome);
    pb::TaskResult {
        task_id: task.task_id,
        nodes: run.nodes,
        seconds,
        queued_seconds: 0.0,
        outcome: Some(outcome),
        parts: run
            .parts
            .into_iter()
            .map(|part| pb::PartSize {
                moves: moves_to_string(&part.moves),
                nodes: part.expanded,
                micros: part.micros,
            })
            .collect(),
    }
}

/// The solver for a goal and heuristic, built once per worker (pattern databases are loaded or
/// built under the lock, so concurrent threads wait for one build rather than racing).
fn solver_for(
    solvers: &Solvers,
    tables: Tables<'_>,
    goal: &Board,
    heuristic: HeuristicChoice,
) -> Result<Arc<Solver>, String> {
    let mut solvers = solvers.lock().unwrap_or_else(|p| p.into_inner());
    let key = (*goal, heuristic);
    if let Some(solver) = solvers.get(&key) {
        return Ok(solver.clone());
    }
    let choice = heuristic.resolve(goal, tables.budget);
    tables.fetcher.fetch_missing(tables.pdbs, choice, goal);
    let built = choice
        .build(goal, tables.budget, tables.pdbs, &log_table_event)
        .map_err(|e| e.to_string())?;
    let bytes = built.table_bytes();
    let held = tables.metrics.tables_loaded(bytes);
    // Only a load that added tables says anything new of their pages.
    if let Some(pages) = (bytes > 0).then(|| TablePages::now(held)).flatten() {
        tables.metrics.tables_in_huge_pages(pages);
        log_table_pages(pages);
    }
    let solver = Arc::new(Solver::with_heuristic(*goal, built, choice.to_string()));
    solvers.insert(key, solver.clone());
    Ok(solver)
}

/// Loads, on a thread of its own, the solver of the default heuristic for the blank-last goal of
/// every size whose tables are all in the data directory already, so that the first task does
/// not wait while they are mapped and checked (one that comes sooner waits on the solvers' lock
/// for the same load). Fetches and builds nothing.
pub(crate) fn preload_present(
    solvers: Solvers,
    pdbs: PdbStore,
    fetcher: Fetcher,
    budget: u64,
    metrics: Metrics,
) {
    std::thread::spawn(move || {
        for side in 3..=5 {
            let goal = Board::blank_last(side);
            let Some(preset) = HeuristicChoice::Default.resolve(&goal, budget).preset() else {
                continue;
            };
            if !pdbs
                .missing(preset, &goal)
                .is_ok_and(|missing| missing.is_empty())
            {
                continue;
            }
            let tables = Tables {
                pdbs: &pdbs,
                fetcher: &fetcher,
                budget,
                metrics: &metrics,
            };
            match solver_for(&solvers, tables, &goal, HeuristicChoice::Default) {
                Ok(_) => tracing::info!(side, %preset, "pattern tables loaded ahead of tasks"),
                Err(reason) => {
                    tracing::warn!(side, %preset, %reason, "pattern tables not loaded ahead")
                }
            }
        }
    });
}

/// What `default` means on this worker for each board size (blank-last goal), as it tells
/// the coordinator: e.g. "5x5 pdb:6-6-6-6-max".
pub(crate) fn default_heuristics(table_budget: u64) -> Vec<String> {
    (3..=5)
        .map(|side| {
            let goal = Board::blank_last(side);
            let choice = HeuristicChoice::Default.resolve(&goal, table_budget);
            format!("{side}x{side} {choice}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asked back, a task no thread has started leaves the queue and goes back at once as
    /// returned; a running one is only flagged, to stop between its parts.
    #[test]
    fn a_waiting_task_is_returned_at_once_and_a_running_one_flagged() {
        let held = fresh_held();
        for id in [1, 2] {
            let task = pb::Task {
                task_id: id,
                ..pb::Task::default()
            };
            held.jobs.push(task, Instant::now()).unwrap();
            held.running.lock().unwrap().insert(id, Arc::default());
        }
        let (running, _) = held.jobs.take().unwrap();
        assert_eq!(running.task_id, 1);
        held.hand_back_told(&[1, 2, 3]);
        let mut results = Vec::new();
        held.results.take_into(&mut results);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].task_id, 2);
        assert_eq!(
            results[0].outcome,
            Some(pb::task_result::Outcome::Returned(true))
        );
        let running = held.running.lock().unwrap();
        assert!(!running.contains_key(&2));
        assert!(running[&1].hand_back.load(Ordering::Relaxed));
        assert!(!running[&1].cancel.load(Ordering::Relaxed));
        drop(running);
        assert!(!held.jobs.take_back(2), "no longer queued");
    }

    /// A stop told before the poll answer that leased its task was taken stops the task as
    /// it is held; one for a task that had ended is forgotten with the answer.
    #[test]
    fn a_stop_told_before_its_task_is_held_stops_it_when_held() {
        let held = fresh_held();
        held.hold_leased(1);
        held.stop_told(&[1, 2, 3]);
        held.hold_leased(2);
        let stopped = |id| {
            held.running.lock().unwrap()[&id]
                .cancel
                .load(Ordering::Relaxed)
        };
        assert!(stopped(1));
        assert!(stopped(2), "the stop that came first is kept for its task");
        held.answer_held(&[]);
        held.hold_leased(3);
        assert!(
            !stopped(3),
            "a stop is forgotten once its poll answer was taken"
        );
    }

    /// A prefetched task asked back before the poll answer that leased it was taken goes
    /// back, unstarted, once that answer's tasks are queued; a hand-back told of a task that
    /// had ended is forgotten with the answer.
    #[test]
    fn a_task_asked_back_before_it_is_held_goes_back_when_held() {
        let held = fresh_held();
        held.hand_back_told(&[1, 2]);
        for id in [1, 3] {
            held.hold_leased(id);
            let task = pb::Task {
                task_id: id,
                ..pb::Task::default()
            };
            held.jobs.push(task, Instant::now()).unwrap();
        }
        held.answer_held(&[3]);
        let mut results = Vec::new();
        held.results.take_into(&mut results);
        let mut returned: Vec<u64> = results.iter().map(|result| result.task_id).collect();
        returned.sort_unstable();
        assert_eq!(returned, [1, 3], "both asked back, the early one included");
        assert!(results
            .iter()
            .all(|result| result.outcome == Some(pb::task_result::Outcome::Returned(true))));
        assert!(held.running.lock().unwrap().is_empty());
        held.hold_leased(2);
        held.jobs
            .push(
                pb::Task {
                    task_id: 2,
                    ..pb::Task::default()
                },
                Instant::now(),
            )
            .unwrap();
        held.answer_held(&[]);
        held.results.take_into(&mut results);
        assert_eq!(
            results.len(),
            2,
            "asked back before an earlier answer, 2 is kept"
        );
    }

    fn fresh_held() -> Held {
        Held {
            running: Arc::default(),
            told_before_held: Arc::default(),
            jobs: Arc::default(),
            results: Arc::default(),
        }
    }
}
