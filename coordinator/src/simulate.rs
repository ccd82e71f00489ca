//! Replaying a recorded run with any number of virtual workers (`tilesolve simulate`).
//!
//! The store keeps every task of a split puzzle with its size and time, and, when the
//! coordinator ran with `--record-depth k`, the size and time of each descendant k moves below
//! the task. Those measured pieces ("units") tile each iteration's search tree. For P virtual
//! one-thread workers the simulator applies the scheduler's own policy
//! ([`frontier::split_for`], [`frontier::order_by_previous`], the subtree budget, iteration
//! boundaries, the first solution cancelling the rest): it splits each iteration for P workers,
//! gives each task the units below it, and runs the tasks on P threads in a discrete-event
//! simulation with the scheduler's ready queue ([`crate::queue`]). Splitting an iteration costs the
//! time it takes here, on the coordinator, between iterations.
//!
//! What is modelled and what is not:
//! - A task costs its units' measured search time plus `overhead_seconds` (a poll's round trip:
//!   a thread asks for its next task only after reporting the last).
//! - The coordinator serves one call at a time: each task occupies it for
//!   `coordinator_seconds_per_task`, and each split for as long as the split takes here; leases
//!   wait for it.
//! - Interior nodes above the units (about one per unit) are counted only where a task contains
//!   them whole; they are well under 1% of the nodes.
//! - The last iteration was cut short by the solution: tasks cancelled then were never measured.
//!   Their size is predicted from their subtrees' sizes one iteration earlier times the
//!   iteration's growth over the tasks that did finish (the same prediction the scheduler's
//!   largest-first order relies on), and the share of predicted work is reported.
//! - A finer split than the recording cannot be simulated: the split depth stops at the
//!   shallowest unit, and the report says when that limited the number of tasks.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::Instant;

use thiserror::Error;
use tilesolve::heuristic::HeuristicChoice;
use tilesolve::moves::moves_to_string;
use tilesolve::pdb::{default_memory_budget, PdbStore};
use tilesolve::task::{run_task, TaskOutcome, Work};
use tilesolve::{parse_board, Board, Direction, Solver};

use crate::frontier::{split_iteration, BalanceParams, SizeHistory};
use crate::queue::ReadyQueue;
use crate::scheduler::subtree_budget;
use crate::store::{ItemStatus, RecordedOutcome, Store, StoreError, TaskRecord};

#[derive(Debug, Error)]
pub enum SimulateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no batch {0} in the store")]
    UnknownBatch(u64),
    #[error("batch {0} has no solved puzzle to replay")]
    NothingToReplay(u64),
    #[error("batch {batch} item {index}: {reason}")]
    Unreadable {
        batch: u64,
        index: u32,
        reason: String,
    },
    #[error("pattern database: {0}")]
    Pdb(String),
}

/// The policy's knobs, as `serve` takes them.
#[derive(Clone, Debug)]
pub struct SimulationPolicy {
    pub tasks_per_thread: usize,
    pub split_balance: usize,
    pub min_split_nodes: u64,
    pub min_split_nodes_per_thread: u64,
    /// Depth below a task at which it reports its parts' sizes (the next split's predictions).
    pub profile_depth: u32,
    pub subtree_task_budget: u64,
    /// Seconds a thread spends per task outside the search.
    pub overhead_seconds: f64,
    /// Seconds the coordinator is busy per task (one call at a time: its capacity).
    pub coordinator_seconds_per_task: f64,
    /// Search the last iteration to its end instead of stopping at the solution: the figure
    /// for load balance alone, free of how early a parallel search happens to meet the goal.
    pub exhaustive: bool,
    /// Tasks a worker holds beyond the one it runs (`tilesolve worker --prefetch`): leased
    /// while it searches, so its next task needs no round trip.
    pub prefetch: usize,
}

/// A measured (or predicted) piece of one iteration: the subtree below `path`.
#[derive(Clone, Debug)]
struct Unit {
    /// Moves from the puzzle's root (direction indices, so paths sort in search order).
    path: Vec<u8>,
    nodes: u64,
    seconds: f64,
    /// The search met the solution in this unit (the last one of the run).
    found: bool,
    predicted: bool,
    /// Nodes above the measured descendants of a task, not a subtree of their own.
    interior: bool,
}

struct Iteration {
    bound: u32,
    /// Sorted by path.
    units: Vec<Unit>,
}

/// One solved puzzle of a recorded batch, ready to replay.
pub struct RecordedPuzzle {
    pub index: u32,
    pub board: Board,
    pub goal: Board,
    heuristic: String,
    pub length: u32,
    /// The whole-puzzle task before the search was split (or the whole search, when it never
    /// was), on one thread.
    pub prelude_seconds: f64,
    pub prelude_nodes: u64,
    iterations: Vec<Iteration>,
    /// Nodes and seconds of the split iterations as measured, and as predicted.
    pub measured_nodes: u64,
    pub predicted_nodes: u64,
    /// Bounds of the split iterations.
    pub bounds: Vec<u32>,
    /// Median of (lease to report) minus (search time) over the recorded subtree tasks.
    pub median_overhead_seconds: Option<f64>,
}

/// One split iteration of a recorded puzzle, summed up.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationSummary {
    pub bound: u32,
    pub units: usize,
    pub nodes: u64,
    pub seconds: f64,
    pub largest_unit_seconds: f64,
}

/// One simulated run.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulationResult {
    pub workers: usize,
    pub makespan_seconds: f64,
    pub tasks: u64,
    /// Seconds the threads spent searching (overhead excluded).
    pub busy_seconds: f64,
    /// Of `busy_seconds`, the part whose size was predicted rather than measured.
    pub predicted_seconds: f64,
    /// Seconds the coordinator spent splitting iterations.
    pub split_seconds: f64,
    /// Some iteration wanted more tasks than the recording's granularity allowed.
    pub granularity_limited: bool,
    /// When each puzzle finished, in the order given.
    pub puzzle_seconds: Vec<f64>,
}

fn path_indices(letters: &str) -> Option<Vec<u8>> {
    letters
        .chars()
        .map(|c| {
            Direction::ALL
                .iter()
                .position(|d| d.letter() == c)
                .map(|i| i as u8)
        })
        .collect()
}

/// Loads the recorded tasks of every solved puzzle of `batch`.
pub fn load_run(store: &Store, batch: u64) -> Result<Vec<RecordedPuzzle>, SimulateError> {
    let stored = store
        .batch(batch)?
        .ok_or(SimulateError::UnknownBatch(batch))?;
    let mut puzzles = Vec::new();
    for (index, item) in store.items(batch)?.into_iter().enumerate() {
        let index = index as u32;
        let ItemStatus::Solved(solution) = &item.status else {
            continue;
        };
        let unreadable = |reason: String| SimulateError::Unreadable {
            batch,
            index,
            reason,
        };
        let (Some(board), Some(goal)) = (&item.board, &item.goal) else {
            continue;
        };
        let board = parse_board(board).map_err(|e| unreadable(e.to_string()))?;
        let goal = parse_board(goal).map_err(|e| unreadable(e.to_string()))?;
        let records: Vec<TaskRecord> = store
            .task_records(&goal, &board)?
            .into_iter()
            .filter(|r| r.batch == batch && r.index == index)
            .collect();
        let moves = path_indices(&solution.moves)
            .ok_or_else(|| unreadable(format!("stored moves '{}'", solution.moves)))?;
        let mut puzzle = RecordedPuzzle::from_records(index, board, goal, &records, &moves)
            .map_err(unreadable)?;
        puzzle.heuristic = stored.heuristic.clone();
        puzzle.length = solution.length;
        if records.is_empty() {
            // Solved by its whole-puzzle task: one task, as long as the puzzle took.
            puzzle.prelude_seconds = solution.seconds;
            puzzle.prelude_nodes = solution.nodes;
        }
        puzzles.push(puzzle);
    }
    if puzzles.is_empty() {
        return Err(SimulateError::NothingToReplay(batch));
    }
    Ok(puzzles)
}

impl RecordedPuzzle {
    fn empty(index: u32, board: Board, goal: Board) -> RecordedPuzzle {
        RecordedPuzzle {
            index,
            board,
            goal,
            heuristic: String::new(),
            length: 0,
            prelude_seconds: 0.0,
            prelude_nodes: 0,
            iterations: Vec::new(),
            measured_nodes: 0,
            predicted_nodes: 0,
            bounds: Vec::new(),
            median_overhead_seconds: None,
        }
    }

    fn from_records(
        index: u32,
        board: Board,
        goal: Board,
        records: &[TaskRecord],
        solution: &[u8],
    ) -> Result<RecordedPuzzle, String> {
        let mut puzzle = RecordedPuzzle::empty(index, board, goal);
        // Per bound, the last record of each path (a restarted coordinator runs some again).
        let mut by_bound: BTreeMap<u32, BTreeMap<Vec<u8>, &TaskRecord>> = BTreeMap::new();
        let mut overheads = Vec::new();
        for record in records {
            if record.iterate {
                puzzle.prelude_seconds += record.seconds;
                puzzle.prelude_nodes += record.nodes;
                continue;
            }
            let path = path_indices(&record.path)
                .ok_or_else(|| format!("recorded path '{}' is not moves", record.path))?;
            if !matches!(record.outcome, RecordedOutcome::Cancelled) && !record.measured_after {
                overheads.push((record.round_trip_seconds - record.seconds).max(0.0));
            }
            by_bound
                .entry(record.bound)
                .or_default()
                .insert(path, record);
        }
        overheads.sort_by(f64::total_cmp);
        puzzle.median_overhead_seconds = overheads.get(overheads.len() / 2).copied();
        let mut previous: Option<Iteration> = None;
        for (bound, records) in by_bound {
            let iteration = Iteration::from_records(bound, &records, previous.as_ref(), solution)?;
            for unit in &iteration.units {
                if unit.predicted {
                    puzzle.predicted_nodes += unit.nodes;
                } else {
                    puzzle.measured_nodes += unit.nodes;
                }
            }
            puzzle.bounds.push(bound);
            if let Some(done) = previous.replace(iteration) {
                puzzle.iterations.push(done);
            }
        }
        puzzle.iterations.extend(previous);
        Ok(puzzle)
    }

    /// Seconds of search the whole run holds, every iteration to its end: what one thread
    /// would spend with no overhead at all.
    pub fn search_seconds(&self) -> f64 {
        self.prelude_seconds
            + self
                .iterations
                .iter()
                .flat_map(|iteration| &iteration.units)
                .map(|unit| unit.seconds)
                .sum::<f64>()
    }

    /// Each split iteration's measured pieces, summed up.
    pub fn iteration_summaries(&self) -> Vec<IterationSummary> {
        self.iterations
            .iter()
            .map(|iteration| IterationSummary {
                bound: iteration.bound,
                units: iteration.units.len(),
                nodes: iteration.units.iter().map(|u| u.nodes).sum(),
                seconds: iteration.units.iter().map(|u| u.seconds).sum(),
                largest_unit_seconds: iteration
                    .units
                    .iter()
                    .map(|u| u.seconds)
                    .fold(0.0, f64::max),
            })
            .collect()
    }

    /// The solver the scheduler used (its split needs the same heuristic).
    fn solver(&self, pdbs: &PdbStore) -> Result<Solver, SimulateError> {
        let name = if self.heuristic.is_empty() {
            "default"
        } else {
            &self.heuristic
        };
        let choice: HeuristicChoice = name
            .parse()
            .map_err(|e| SimulateError::Pdb(format!("{e}")))?;
        let budget = default_memory_budget();
        let built = choice
            .build(&self.goal, budget, pdbs, &|_| {})
            .map_err(|e| SimulateError::Pdb(e.to_string()))?;
        let name = choice.resolve(&self.goal, budget).to_string();
        Ok(Solver::with_heuristic(self.goal, built, name))
    }
}

impl Iteration {
    fn from_records(
        bound: u32,
        records: &BTreeMap<Vec<u8>, &TaskRecord>,
        previous: Option<&Iteration>,
        solution: &[u8],
    ) -> Result<Iteration, String> {
        let mut units = Vec::new();
        let mut cancelled = Vec::new();
        let mut finished = Vec::new();
        // In a profiled iteration, a task with no parts had nothing that deep: all of it is
        // interior nodes, no finer than its own path.
        let profiled = records.values().any(|r| !r.parts.is_empty());
        for (path, record) in records {
            let found = matches!(record.outcome, RecordedOutcome::Found(_));
            match record.outcome {
                RecordedOutcome::Cancelled => {
                    cancelled.push(path.clone());
                    continue;
                }
                // Its subtree was searched again as its children, which are recorded.
                RecordedOutcome::Split | RecordedOutcome::BudgetSpent(_) => continue,
                RecordedOutcome::Exceeded(_) => finished.push((path.clone(), record.nodes)),
                RecordedOutcome::Found(_) => {}
            }
            // The unit that met the goal is keyed by the whole solution, which it leads to: so
            // it sorts where the search met it and lies below any frontier a replay splits at.
            let found_path = || {
                if record.measured_after {
                    // Another optimal solution, met after the run: its part is as deep as known.
                    let mut full = path.clone();
                    if let Some((moves, _, _)) = record.parts.last() {
                        full.extend(path_indices(moves).unwrap_or_default());
                    }
                    full
                } else {
                    solution.to_vec()
                }
            };
            if record.parts.is_empty() {
                units.push(Unit {
                    path: if found { found_path() } else { path.clone() },
                    nodes: record.nodes,
                    seconds: record.seconds,
                    found,
                    predicted: false,
                    interior: profiled && !found,
                });
                continue;
            }
            let (mut part_nodes, mut part_seconds) = (0, 0.0);
            for (moves, nodes, micros) in &record.parts {
                let mut full = path.clone();
                full.extend(
                    path_indices(moves)
                        .ok_or_else(|| format!("recorded part '{moves}' is not moves"))?,
                );
                part_nodes += nodes;
                part_seconds += *micros as f64 / 1e6;
                units.push(Unit {
                    path: full,
                    nodes: *nodes,
                    seconds: *micros as f64 / 1e6,
                    found: false,
                    predicted: false,
                    interior: false,
                });
            }
            if found {
                if let Some(last) = units.last_mut() {
                    last.found = true;
                    last.path = found_path();
                }
            }
            units.push(Unit {
                path: path.clone(),
                nodes: record.nodes.saturating_sub(part_nodes),
                seconds: (record.seconds - part_seconds).max(0.0),
                found: false,
                predicted: false,
                interior: true,
            });
        }
        if !cancelled.is_empty() {
            units.extend(predict(&cancelled, &finished, previous, &units));
        }
        units.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Iteration { bound, units })
    }
}

/// Measures, once, the tasks of `batch` that a solution cancelled before they ran, so that a
/// replay predicts nothing: each is searched here as a worker would have (with the parts its
/// iteration recorded), on `threads` threads, and stored in place of its cancelled record.
/// Returns how many were measured.
pub fn measure_cancelled(
    store: &Store,
    batch: u64,
    pdbs: &PdbStore,
    threads: usize,
) -> Result<usize, SimulateError> {
    let stored = store
        .batch(batch)?
        .ok_or(SimulateError::UnknownBatch(batch))?;
    let mut measured = 0;
    for (index, item) in store.items(batch)?.into_iter().enumerate() {
        let index = index as u32;
        let (ItemStatus::Solved(_), Some(board), Some(goal)) =
            (&item.status, &item.board, &item.goal)
        else {
            continue;
        };
        let unreadable = |reason: String| SimulateError::Unreadable {
            batch,
            index,
            reason,
        };
        let board = parse_board(board).map_err(|e| unreadable(e.to_string()))?;
        let goal = parse_board(goal).map_err(|e| unreadable(e.to_string()))?;
        let records = store.task_records_with_ids(&goal, &board)?;
        let mut depth_of_bound: HashMap<u32, u32> = HashMap::new();
        for (_, record) in &records {
            if let Some((moves, _, _)) = record.parts.first() {
                depth_of_bound.insert(record.bound, moves.chars().count() as u32);
            }
        }
        let todo: Vec<(u64, TaskRecord, Vec<Direction>)> = records
            .into_iter()
            .filter(|(_, r)| r.batch == batch && r.index == index)
            .filter(|(_, r)| matches!(r.outcome, RecordedOutcome::Cancelled))
            .map(|(id, r)| {
                let path = path_indices(&r.path)
                    .ok_or_else(|| unreadable(format!("recorded path '{}'", r.path)))?
                    .into_iter()
                    .map(Direction::from_index)
                    .collect();
                Ok((id, r, path))
            })
            .collect::<Result<_, SimulateError>>()?;
        if todo.is_empty() {
            continue;
        }
        let puzzle = RecordedPuzzle {
            heuristic: stored.heuristic.clone(),
            ..RecordedPuzzle::empty(index, board, goal)
        };
        let solver = puzzle.solver(pdbs)?;
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((id, record, path)) = todo.get(i) else {
                        break;
                    };
                    let task_board = path
                        .iter()
                        .try_fold(board, |b, &d| b.apply(d).map(|(next, _)| next));
                    let Some(task_board) = task_board else {
                        continue;
                    };
                    let started = Instant::now();
                    let run = run_task(
                        &solver,
                        Work {
                            board: &task_board,
                            path,
                            bound: record.bound,
                            iterate: false,
                            node_budget: 0,
                            profile_depth: depth_of_bound.get(&record.bound).copied().unwrap_or(0),
                        },
                        None,
                    );
                    let seconds = started.elapsed().as_secs_f64();
                    let outcome = match run.outcome {
                        TaskOutcome::Found(suffix) => {
                            RecordedOutcome::Found((path.len() + suffix.len()) as u32)
                        }
                        TaskOutcome::Exceeded(next) => RecordedOutcome::Exceeded(next),
                        _ => continue,
                    };
                    let measured = TaskRecord {
                        outcome,
                        nodes: run.nodes,
                        seconds,
                        round_trip_seconds: seconds,
                        parts: run
                            .parts
                            .iter()
                            .map(|p| (moves_to_string(&p.moves), p.expanded, p.micros))
                            .collect(),
                        measured_after: true,
                        ..record.clone()
                    };
                    results
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((*id, measured));
                });
            }
        });
        for (id, record) in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
            store.put_task_record(&goal, &board, id, &record)?;
            measured += 1;
        }
    }
    store.flush()?;
    Ok(measured)
}

/// Whether `path` lies inside a measured unit (a unit's path is a prefix of it, or it). Units
/// tile the tree, so such a unit is the last one sorting at or before `path` (interior units
/// aside, which sort just before their task's parts).
fn inside_unit(units: &[Unit], path: &[u8]) -> bool {
    let end = units.partition_point(|u| u.path.as_slice() <= path);
    units[..end]
        .iter()
        .rev()
        .find(|u| !u.interior)
        .is_some_and(|u| path.starts_with(&u.path))
}

/// Units of the previous iteration below `prefix` (units sorted by path).
fn below<'u>(units: &'u [Unit], prefix: &[u8]) -> &'u [Unit] {
    let start = units.partition_point(|u| u.path.as_slice() < prefix);
    let end = start + units[start..].partition_point(|u| u.path.starts_with(prefix));
    &units[start..end]
}

/// Predicted units for the tasks of the last iteration that were cancelled unmeasured: their
/// subtrees' units one iteration earlier, scaled by the growth the finished tasks showed.
fn predict(
    cancelled: &[Vec<u8>],
    finished: &[(Vec<u8>, u64)],
    previous: Option<&Iteration>,
    measured: &[Unit],
) -> Vec<Unit> {
    let mean = || {
        let (nodes, seconds) = measured
            .iter()
            .filter(|u| !u.interior)
            .fold((0u64, 0.0), |(n, s), u| (n + u.nodes, s + u.seconds));
        let count = measured.iter().filter(|u| !u.interior).count().max(1);
        (nodes / count as u64, seconds / count as f64)
    };
    let Some(previous) = previous else {
        let (nodes, seconds) = mean();
        return cancelled
            .iter()
            .map(|path| Unit {
                path: path.clone(),
                nodes,
                seconds,
                found: false,
                predicted: true,
                interior: false,
            })
            .collect();
    };
    let (now, before) = finished
        .iter()
        .fold((0u64, 0u64), |(now, before), (path, nodes)| {
            let earlier: u64 = below(&previous.units, path).iter().map(|u| u.nodes).sum();
            if earlier == 0 {
                (now, before)
            } else {
                (now + nodes, before + earlier)
            }
        });
    let growth = if before > 0 {
        now as f64 / before as f64
    } else {
        1.0
    };
    cancelled
        .iter()
        .flat_map(|path| below(&previous.units, path))
        .map(|unit| Unit {
            path: unit.path.clone(),
            nodes: (unit.nodes as f64 * growth) as u64,
            seconds: unit.seconds * growth,
            found: false,
            predicted: true,
            interior: unit.interior,
        })
        .collect()
}

/// One task of the simulation.
struct SimTask {
    puzzle: usize,
    /// Index into the puzzle's iterations, or `None` for the whole-puzzle task.
    iteration: Option<usize>,
    board: Board,
    path: Vec<u8>,
    /// Range of the iteration's units below `path`.
    units: std::ops::Range<usize>,
    nodes: u64,
    seconds: f64,
    predicted_seconds: f64,
    found: bool,
    /// Its wave and the nodes the policy predicted (its place in the queue).
    wave: u64,
    predicted: u64,
}

#[derive(Clone, Copy, PartialEq)]
struct Event {
    at: f64,
    slot: usize,
    /// Which start of a task on the slot this event ends (a cancelled task's event is stale).
    start: u64,
}

impl Eq for Event {}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        self.at
            .total_cmp(&other.at)
            .then(self.slot.cmp(&other.slot))
            .then(self.start.cmp(&other.start))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The simulated workers' threads: what each runs and holds, and when running tasks end.
struct Threads {
    /// Per thread: its task, when its search started, and which start it was.
    running: Vec<Option<(SimTask, f64, u64)>>,
    /// Per thread: tasks prefetched for it, with when each reaches the worker.
    held: Vec<VecDeque<(SimTask, f64)>>,
    events: BinaryHeap<Reverse<Event>>,
    starts: u64,
}

impl Threads {
    fn new(count: usize) -> Threads {
        Threads {
            running: (0..count).map(|_| None).collect(),
            held: (0..count).map(|_| VecDeque::new()).collect(),
            events: BinaryHeap::new(),
            starts: 0,
        }
    }

    /// A thread that wants a task: an idle one (`true`: it runs the task), else one with room
    /// to prefetch (`false`).
    fn wanting(&self, prefetch: usize) -> Option<(usize, bool)> {
        if let Some(slot) = self.running.iter().position(Option::is_none) {
            return Some((slot, true));
        }
        self.held
            .iter()
            .position(|held| held.len() < prefetch)
            .map(|slot| (slot, false))
    }

    fn start(&mut self, slot: usize, task: SimTask, started: f64, seconds: f64) {
        self.starts += 1;
        self.running[slot] = Some((task, started, self.starts));
        self.events.push(Reverse(Event {
            at: started + seconds,
            slot,
            start: self.starts,
        }));
    }

    /// When the next running task ends. Events of cancelled tasks are stale (the thread may
    /// run another by now) and are dropped here.
    fn next_end(&mut self) -> Option<f64> {
        while let Some(Reverse(event)) = self.events.peek() {
            let current =
                matches!(&self.running[event.slot], Some((_, _, start)) if *start == event.start);
            if current {
                return Some(event.at);
            }
            self.events.pop();
        }
        None
    }

    /// The next task to end: its thread, the task, when it started and when it ended.
    fn next_finished(&mut self) -> Option<(usize, SimTask, f64, f64)> {
        self.next_end()?;
        let Reverse(event) = self.events.pop()?;
        let (task, started, _) = self.running[event.slot].take()?;
        Some((event.slot, task, started, event.at))
    }

    /// Stops the thread's task if it is `puzzle`'s; returns when it had started.
    fn cancel(&mut self, slot: usize, puzzle: usize) -> Option<f64> {
        self.running[slot]
            .take_if(|(task, _, _)| task.puzzle == puzzle)
            .map(|(_, started, _)| started)
    }
}

struct PuzzleState {
    solver: Solver,
    /// The iteration in progress (`None`: the whole-puzzle task).
    iteration: Option<usize>,
    outstanding: usize,
    done: bool,
    /// Sizes measured in the iteration in progress, as the tasks' reports would give them.
    history: SizeHistory,
    /// Nodes searched so far.
    nodes: u64,
}

/// Replays `puzzles` (submitted together, as one batch) with `workers` one-thread workers.
pub fn simulate(
    puzzles: &[RecordedPuzzle],
    pdbs: &PdbStore,
    policy: &SimulationPolicy,
    workers: usize,
) -> Result<SimulationResult, SimulateError> {
    let workers = workers.max(1);
    let mut sim = Simulation {
        puzzles,
        policy,
        workers,
        states: Vec::new(),
        queue: ReadyQueue::default(),
        waves: 0,
        coordinator_free: 0.0,
        splits_done: Vec::new(),
        result: SimulationResult {
            workers,
            makespan_seconds: 0.0,
            tasks: 0,
            busy_seconds: 0.0,
            predicted_seconds: 0.0,
            split_seconds: 0.0,
            granularity_limited: false,
            puzzle_seconds: vec![0.0; puzzles.len()],
        },
    };
    for (index, puzzle) in puzzles.iter().enumerate() {
        sim.states.push(PuzzleState {
            solver: puzzle.solver(pdbs)?,
            iteration: None,
            outstanding: 1,
            done: false,
            history: SizeHistory::default(),
            nodes: 0,
        });
        sim.waves += 1;
        sim.queue.push(
            0,
            sim.waves,
            puzzle.prelude_nodes,
            SimTask {
                puzzle: index,
                iteration: None,
                board: puzzle.board,
                path: Vec::new(),
                units: 0..0,
                nodes: puzzle.prelude_nodes,
                seconds: puzzle.prelude_seconds,
                predicted_seconds: 0.0,
                found: puzzle.iterations.is_empty(),
                wave: 0,
                predicted: puzzle.prelude_nodes,
            },
        );
    }
    sim.run();
    Ok(sim.result)
}

struct Simulation<'a> {
    puzzles: &'a [RecordedPuzzle],
    policy: &'a SimulationPolicy,
    workers: usize,
    states: Vec<PuzzleState>,
    queue: ReadyQueue<SimTask>,
    waves: u64,
    /// When the coordinator is next free to serve a call.
    coordinator_free: f64,
    /// Splits under way outside the coordinator's lock: when each is done, and its tasks.
    splits_done: Vec<(f64, Vec<(u64, SimTask)>)>,
    result: SimulationResult,
}

impl Simulation<'_> {
    fn run(&mut self) {
        let mut now = 0.0f64;
        let mut threads = Threads::new(self.workers);
        loop {
            let next_split = self.queue_split_tasks(now);
            // Idle threads first, then threads with room to prefetch.
            while let Some((slot, runs_now)) = threads.wanting(self.policy.prefetch) {
                let Some(task) = self.queue.pop() else {
                    break;
                };
                if self.states[task.puzzle].done {
                    continue;
                }
                // The coordinator serves one call at a time: a lease waits for it.
                let leased = now.max(self.coordinator_free);
                self.coordinator_free = leased + self.policy.coordinator_seconds_per_task;
                let arrives = leased + self.policy.overhead_seconds;
                self.result.tasks += 1;
                if runs_now {
                    let seconds = self.search_seconds(&task);
                    threads.start(slot, task, arrives, seconds);
                } else {
                    threads.held[slot].push_back((task, arrives));
                }
            }
            let next_task = threads.next_end();
            if let Some(at) = next_split.filter(|&at| next_task.is_none_or(|task| at <= task)) {
                now = at;
                continue;
            }
            let Some((slot, task, started, at)) = threads.next_finished() else {
                break;
            };
            now = at;
            self.start_held(&mut threads, slot, now);
            self.result.makespan_seconds = now;
            let searched = (now - started).max(0.0);
            self.result.busy_seconds += searched;
            if task.seconds > 0.0 {
                self.result.predicted_seconds +=
                    task.predicted_seconds * (searched / task.seconds).min(1.0);
            }
            let puzzle = task.puzzle;
            if self.states[puzzle].done {
                continue;
            }
            if self.over_budget(&task) {
                if let Some(children) = self.children(&task) {
                    self.states[puzzle].outstanding += children.len();
                    let predicted = task.predicted / children.len().max(1) as u64;
                    for mut child in children {
                        child.predicted = predicted;
                        child.wave = task.wave;
                        self.queue.push(0, task.wave, predicted, child);
                    }
                    self.finish_task(puzzle, now);
                    continue;
                }
            }
            if task.found && !self.policy.exhaustive {
                self.states[puzzle].done = true;
                self.result.puzzle_seconds[puzzle] = now;
                // Cancel the puzzle's tasks: running ones free their threads at once, and
                // prefetched ones are dropped.
                for slot in 0..self.workers {
                    threads.held[slot].retain(|(t, _)| t.puzzle != puzzle);
                    if let Some(started) = threads.cancel(slot, puzzle) {
                        self.result.busy_seconds += (now - started).max(0.0);
                        self.start_held(&mut threads, slot, now);
                    }
                }
                continue;
            }
            self.report_sizes(&task);
            self.finish_task(puzzle, now);
        }
    }

    /// A thread is free at `now`: it starts the first task it prefetched (once that arrives).
    fn start_held(&self, threads: &mut Threads, slot: usize, now: f64) {
        while let Some((task, arrives)) = threads.held[slot].pop_front() {
            if self.states[task.puzzle].done {
                continue;
            }
            let seconds = self.search_seconds(&task);
            threads.start(slot, task, now.max(arrives), seconds);
            return;
        }
    }

    /// Seconds a task searches: all of it, or its budget's share when it is over budget.
    fn search_seconds(&self, task: &SimTask) -> f64 {
        if self.over_budget(task) && task.nodes > 0 {
            let share = self.budget(task) as f64 / task.nodes as f64;
            return task.seconds * share;
        }
        task.seconds
    }

    /// The task's node budget, as the scheduler sets it.
    fn budget(&self, task: &SimTask) -> u64 {
        subtree_budget(self.policy.subtree_task_budget, task.predicted)
    }

    fn over_budget(&self, task: &SimTask) -> bool {
        let budget = self.budget(task);
        task.iteration.is_some() && budget > 0 && task.nodes > budget && !self.is_unit(task)
    }

    /// A task that is one unit cannot be split further in a replay.
    fn is_unit(&self, task: &SimTask) -> bool {
        task.units.len() <= 1
    }

    /// One of a puzzle's tasks is done; after its iteration's last, the next is split (the
    /// puzzle is done when there is none, or when the split itself meets the goal).
    fn finish_task(&mut self, puzzle: usize, now: f64) {
        let state = &mut self.states[puzzle];
        state.outstanding = state.outstanding.saturating_sub(1);
        if state.outstanding > 0 {
            return;
        }
        let puzzles = self.puzzles;
        let mut next = state.iteration.map_or(0, |i| i + 1);
        // Splits run one after another beside the coordinator's calls (outside its lock).
        let mut at = now;
        while let Some(iteration) = puzzles[puzzle].iterations.get(next) {
            let (tasks, seconds) = self.split(puzzle, next, iteration);
            at += seconds;
            let Some(tasks) = tasks else {
                break;
            };
            let state = &mut self.states[puzzle];
            state.iteration = Some(next);
            if !tasks.is_empty() {
                state.outstanding = tasks.len();
                self.waves += 1;
                let wave = self.waves;
                let tasks = tasks
                    .into_iter()
                    .map(|(predicted, task)| (predicted, SimTask { wave, ..task }))
                    .collect();
                self.splits_done.push((at, tasks));
                return;
            }
            next += 1;
        }
        self.states[puzzle].done = true;
        self.result.puzzle_seconds[puzzle] = at;
    }

    /// Queues the tasks of the splits done by `now`; returns when the next one will be.
    fn queue_split_tasks(&mut self, now: f64) -> Option<f64> {
        let (done, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut self.splits_done)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.splits_done = pending;
        for (_, tasks) in done {
            for (predicted, task) in tasks {
                self.queue.push(0, task.wave, predicted, task);
            }
        }
        self.splits_done
            .iter()
            .map(|(at, _)| *at)
            .min_by(f64::total_cmp)
    }

    /// The tasks of an iteration, as the policy splits it for this many workers (`None` when
    /// the split meets the goal), and the seconds the split took.
    fn split(
        &mut self,
        puzzle: usize,
        index: usize,
        iteration: &Iteration,
    ) -> (Option<Vec<(u64, SimTask)>>, f64) {
        let deepest = iteration
            .units
            .iter()
            .filter(|u| !u.interior)
            .map(|u| u.path.len() as u32)
            .min()
            .unwrap_or(0);
        let params = BalanceParams {
            threads: self.workers,
            tasks_per_thread: self.policy.tasks_per_thread,
            balance: self.policy.split_balance,
            min_split_nodes: self.policy.min_split_nodes,
            min_split_nodes_per_thread: self.policy.min_split_nodes_per_thread,
            max_depth: deepest,
        };
        // A subtree can be split only if it lies above the units it holds, not inside one.
        let splittable = |path: &[Direction]| {
            let path: Vec<u8> = path.iter().map(|&d| d as u8).collect();
            !inside_unit(&iteration.units, &path)
        };
        let started = Instant::now();
        let state = &mut self.states[puzzle];
        let root = self.puzzles[puzzle].board;
        let history = std::mem::take(&mut state.history);
        let frontier = split_iteration(
            &root,
            &state.solver,
            iteration.bound,
            &history,
            state.nodes,
            params,
            &splittable,
        );
        let seconds = started.elapsed().as_secs_f64();
        self.result.split_seconds += seconds;
        if frontier.solution.is_some() {
            return (None, seconds);
        }
        self.result.granularity_limited |= frontier.depth_limited;
        let tasks = Some(
            frontier
                .tasks
                .into_iter()
                .map(|subtree| {
                    let path = subtree.path.iter().map(|&d| d as u8).collect();
                    let task = self.task_below(puzzle, index, subtree.board, path);
                    (
                        subtree.predicted,
                        SimTask {
                            predicted: subtree.predicted,
                            ..task
                        },
                    )
                })
                .collect(),
        );
        (tasks, seconds)
    }

    /// What a finished task's report adds to its puzzle's history: its units, no finer than
    /// the parts a worker reports.
    fn report_sizes(&mut self, task: &SimTask) {
        let state = &mut self.states[task.puzzle];
        state.nodes += task.nodes;
        let Some(iteration) = task.iteration else {
            return;
        };
        let depth = task.path.len() + self.policy.profile_depth as usize;
        for unit in &self.puzzles[task.puzzle].iterations[iteration].units[task.units.clone()] {
            let cut = unit.path.len().min(depth);
            state.history.add(unit.path[..cut].to_vec(), unit.nodes);
        }
    }

    /// The task for the subtree below `path` in an iteration, with its units.
    fn task_below(&self, puzzle: usize, iteration: usize, board: Board, path: Vec<u8>) -> SimTask {
        let units = &self.puzzles[puzzle].iterations[iteration].units;
        let start = units.partition_point(|u| u.path < path);
        let end = start + units[start..].partition_point(|u| u.path.starts_with(&path));
        let mut task = SimTask {
            puzzle,
            iteration: Some(iteration),
            board,
            path,
            units: start..end,
            nodes: 0,
            seconds: 0.0,
            predicted_seconds: 0.0,
            found: false,
            wave: 0,
            predicted: 0,
        };
        // Units are in search order; a task that meets the solution stops there.
        for unit in &units[start..end] {
            task.nodes += unit.nodes;
            task.seconds += unit.seconds;
            if unit.predicted {
                task.predicted_seconds += unit.seconds;
            }
            if unit.found {
                task.found = true;
                if !self.policy.exhaustive {
                    break;
                }
            }
        }
        task
    }

    /// An over-budget task's children within the bound, as the scheduler queues them; `None`
    /// when the recording is not fine enough to tell them apart.
    fn children(&self, task: &SimTask) -> Option<Vec<SimTask>> {
        let iteration = task.iteration?;
        let units = &self.puzzles[task.puzzle].iterations[iteration].units[task.units.clone()];
        if !units
            .iter()
            .any(|u| u.path.len() > task.path.len() && !u.interior)
        {
            return None;
        }
        let mut seen = HashSet::new();
        let mut children = Vec::new();
        for unit in units.iter().filter(|u| u.path.len() > task.path.len()) {
            let step = unit.path[task.path.len()];
            if !seen.insert(step) {
                continue;
            }
            let (board, _) = task.board.apply(Direction::from_index(step))?;
            let mut path = task.path.clone();
            path.push(step);
            children.push(self.task_below(task.puzzle, iteration, board, path));
        }
        Some(children)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{Scheduler, SchedulerConfig, TaskReport};

    fn unit(path: &[u8], nodes: u64) -> Unit {
        Unit {
            path: path.to_vec(),
            nodes,
            seconds: nodes as f64 * 1e-6,
            found: false,
            predicted: false,
            interior: false,
        }
    }

    #[test]
    fn cancelled_tasks_are_predicted_from_the_iteration_before_times_its_growth() {
        let previous = Iteration {
            bound: 50,
            units: vec![unit(&[0, 1], 10), unit(&[0, 2], 30), unit(&[1, 0], 20)],
        };
        // Task [1] finished with 40 nodes (twice its 20 before); [0] was cancelled.
        let predicted = predict(&[vec![0]], &[(vec![1], 40)], Some(&previous), &[]);
        let sizes: Vec<(Vec<u8>, u64, bool)> = predicted
            .iter()
            .map(|u| (u.path.clone(), u.nodes, u.predicted))
            .collect();
        assert_eq!(sizes, vec![(vec![0, 1], 20, true), (vec![0, 2], 60, true)]);
    }

    /// A split run recorded by the real scheduler (driven in process, the kernel measuring
    /// parts) replays: every task is accounted for, more workers are not slower, and a worker
    /// is never busier than the time it had.
    #[test]
    fn a_recorded_run_replays_with_more_workers() {
        let data = tempfile::tempdir().unwrap();
        let store = crate::store::reopen(&data.path().join("store"));
        let pdbs = PdbStore::new(data.path().join("pdb"), 1);
        let config = SchedulerConfig {
            whole_task_budget: 1,
            tasks_per_thread: 4,
            profile_depth: 4,
            ..SchedulerConfig::default()
        };
        let mut scheduler = Scheduler::new(
            store.clone(),
            PdbStore::new(data.path().join("pdb"), 1),
            config,
        )
        .unwrap();
        // Korf's #12 (45 moves, blank-last goal): a few hundred thousand nodes with linear conflict.
        let board = "1,3,5,6,0,13,14,9,11,4,8,12,10,7,15,2";
        let submitted = scheduler
            .submit(&[board.to_string()], "linear-conflict", "")
            .unwrap();
        let worker = scheduler.register(2, "test").unwrap();
        let solver = Solver::new(
            Board::blank_last(4),
            tilesolve::HeuristicKind::LinearConflict,
        );
        let mut reports = Vec::new();
        while !scheduler.progress(submitted.batch).unwrap().done {
            let (tasks, _) = scheduler
                .poll(worker, 2, std::mem::take(&mut reports))
                .unwrap();
            // As the service does, once the lock is released.
            scheduler.split_pending().unwrap();
            scheduler.flusher().write(scheduler.take_records()).unwrap();
            for task in tasks {
                let run = run_task(&solver, task.work(), None);
                reports.push(TaskReport {
                    seconds: 1e-3,
                    parts: run.parts,
                    ..TaskReport::new(task.id, run.outcome, run.nodes)
                });
            }
        }
        let goal = Board::blank_last(4);
        let records = store
            .task_records(&goal, &parse_board(board).unwrap())
            .unwrap();
        assert!(records.iter().any(|r| !r.iterate && !r.parts.is_empty()));
        assert!(records
            .iter()
            .flat_map(|r| &r.parts)
            .all(|(moves, _, _)| moves.len() == 4));
        let puzzles = load_run(&store, submitted.batch).unwrap();
        assert_eq!(puzzles.len(), 1);
        assert_eq!(puzzles[0].length, 45);
        assert!(puzzles[0].measured_nodes > 0);
        let policy = SimulationPolicy {
            tasks_per_thread: 4,
            split_balance: 8,
            min_split_nodes: 1_000,
            min_split_nodes_per_thread: 0,
            profile_depth: 2,
            subtree_task_budget: 0,
            overhead_seconds: 1e-4,
            coordinator_seconds_per_task: 1e-5,
            exhaustive: false,
            prefetch: 1,
        };
        let one = simulate(&puzzles, &pdbs, &policy, 1).unwrap();
        let four = simulate(&puzzles, &pdbs, &policy, 4).unwrap();
        assert!(one.tasks > 1 && four.tasks >= one.tasks);
        assert!(four.makespan_seconds <= one.makespan_seconds);
        for result in [&one, &four] {
            let capacity = result.workers as f64 * result.makespan_seconds;
            assert!(result.busy_seconds <= capacity + 1e-9, "{result:?}");
            assert!(result.predicted_seconds <= result.busy_seconds);
        }
    }
}
