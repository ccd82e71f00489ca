//! The recorded run: each solved puzzle's iterations as measured units (and units predicted
//! for tasks a solution cancelled), loaded from the store.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::moves_to_string;
use tilesolve::pdb::{default_memory_budget, PdbStore};
use tilesolve::search::child_order;
use tilesolve::task::{run_task, TaskOutcome, Work};
use tilesolve::{parse_board, Board, Direction, Solver};

use crate::store::{ItemStatus, RecordedOutcome, Store, TaskRecord};

use super::{
    IterationSummary, SimulateError, SimulationPolicy, SPLIT_SECONDS_PER_ESTIMATE_LARGE,
    SPLIT_SECONDS_PER_ESTIMATE_SMALL,
};
use crate::size_history::{PackedPath, SizeHistory};

/// A measured (or predicted) piece of one iteration: the subtree below `path`.
#[derive(Clone, Debug)]
pub(super) struct Unit {
    /// Moves from the puzzle's root (direction indices: a subtree's units lie together when
    /// sorted; one thread's order is [`search_order`]).
    pub(super) path: Vec<u8>,
    pub(super) nodes: u64,
    pub(super) seconds: f64,
    /// The search met the solution in this unit (the last one of the run).
    pub(super) found: bool,
    pub(super) predicted: bool,
    /// Nodes above the measured descendants of a task, not a subtree of their own.
    pub(super) interior: bool,
}

pub(super) struct Iteration {
    pub(super) bound: u32,
    /// Sorted by path.
    pub(super) units: Vec<Unit>,
}

/// A replay's whole-puzzle task: its nodes and seconds, whether it meets the goal, and the
/// first iteration split after it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct WholeTask {
    pub(super) nodes: u64,
    pub(super) seconds: f64,
    pub(super) found: bool,
    pub(super) first_split: usize,
}

/// One solved puzzle of a recorded batch, ready to replay.
pub struct RecordedPuzzle {
    pub index: u32,
    pub board: Board,
    pub goal: Board,
    pub(super) heuristic: String,
    pub length: u32,
    /// The whole-puzzle task before the search was split (or the whole search, when it never
    /// was), on one thread.
    pub prelude_seconds: f64,
    pub prelude_nodes: u64,
    /// The whole-puzzle task's last finished iteration, as it measured it (paths from the root,
    /// and nodes): what the first split was balanced by. Empty when not measured (recorded
    /// before whole tasks measured it, or never split).
    pub(super) prelude_parts: Vec<(Vec<u8>, u64)>,
    pub(super) iterations: Vec<Iteration>,
    /// Nodes and seconds of the split iterations as measured, and as predicted.
    pub measured_nodes: u64,
    pub predicted_nodes: u64,
    /// Bounds of the split iterations.
    pub bounds: Vec<u32>,
    /// (Lease to report) minus (search time) over the recorded subtree tasks: their count,
    /// mean and median. The mean is what the tasks cost in all; the median reads low where a
    /// few calls wait long (a dilated run's quota periods: 14 ms median, 47 ms mean).
    pub overhead_tasks: usize,
    pub mean_overhead_seconds: Option<f64>,
    pub median_overhead_seconds: Option<f64>,
}

/// A whole-puzzle task's recorded parts, as paths and nodes.
fn prelude_parts(record: &TaskRecord) -> Result<Vec<(Vec<u8>, u64)>, String> {
    record
        .parts
        .iter()
        .map(|(moves, expanded, _)| Ok((part_path(moves)?, *expanded)))
        .collect()
}

/// A recorded part's moves from its task's board, as direction indices.
fn part_path(moves: &str) -> Result<Vec<u8>, String> {
    path_indices(moves).ok_or_else(|| format!("recorded part '{moves}' is not moves"))
}

pub(super) fn path_indices(letters: &str) -> Option<Vec<u8>> {
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

/// Where one thread's search under `bound` meets the subtree below `path` (moves from
/// `root`): the place [`child_order`] gives, compared as bytes. (Paths sort in search order only
/// where no parent takes its children best first.)
pub(super) fn search_order(solver: &Solver, root: &Board, bound: u32, path: &[u8]) -> Vec<u8> {
    let mut order = Vec::with_capacity(2 * path.len());
    let mut board = *root;
    for (g, &step) in (0u32..).zip(path) {
        let direction = Direction::from_index(step);
        let Some((child, _)) = board.apply(direction) else {
            break;
        };
        let parent = (bound, g, solver.estimate(&board));
        order = child_order(
            solver.pruning(),
            &order,
            parent,
            solver.estimate(&child),
            direction,
        );
        board = child;
    }
    order
}

/// The units of one subtree (in path order) that one thread searches under `bound`, by their
/// positions in `units`: all of them, or, when the goal is among them, those it meets before
/// the goal, and the goal's.
pub(super) fn searched_to_goal(
    units: &[Unit],
    solver: &Solver,
    root: &Board,
    bound: u32,
) -> Vec<usize> {
    let Some(goal) = units
        .iter()
        .find(|unit| unit.found)
        .map(|unit| search_order(solver, root, bound, &unit.path))
    else {
        return (0..units.len()).collect();
    };
    (0..units.len())
        .filter(|&at| {
            let unit = &units[at];
            unit.found || search_order(solver, root, bound, &unit.path) < goal
        })
        .collect()
}

/// The count, mean and median of the overheads a task measured.
pub(super) fn overhead_figures(mut overheads: Vec<f64>) -> (usize, Option<f64>, Option<f64>) {
    overheads.sort_by(f64::total_cmp);
    let count = overheads.len();
    let mean = (count > 0).then(|| overheads.iter().sum::<f64>() / count as f64);
    (count, mean, overheads.get(count / 2).copied())
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
        // The heuristic the coordinator solved with (the batch may only say `default`).
        puzzle.heuristic = if solution.heuristic.is_empty() {
            stored.heuristic.clone()
        } else {
            solution.heuristic.clone()
        };
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
    pub(super) fn empty(index: u32, board: Board, goal: Board) -> RecordedPuzzle {
        RecordedPuzzle {
            index,
            board,
            goal,
            heuristic: String::new(),
            length: 0,
            prelude_seconds: 0.0,
            prelude_nodes: 0,
            prelude_parts: Vec::new(),
            iterations: Vec::new(),
            measured_nodes: 0,
            predicted_nodes: 0,
            bounds: Vec::new(),
            overhead_tasks: 0,
            mean_overhead_seconds: None,
            median_overhead_seconds: None,
        }
    }

    pub(super) fn from_records(
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
                if matches!(record.outcome, RecordedOutcome::BudgetSpent(_)) {
                    puzzle.prelude_parts = prelude_parts(record)?;
                }
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
        (
            puzzle.overhead_tasks,
            puzzle.mean_overhead_seconds,
            puzzle.median_overhead_seconds,
        ) = overhead_figures(overheads);
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

    /// The whole-puzzle task: as recorded, or, under a fixed `budget` of nodes, run on through
    /// the recorded iterations until the budget is spent; in the goal's iteration one thread
    /// searches the units it meets before the goal ([`searched_to_goal`]) and the goal's. An
    /// iteration the budget ran out in is split from its start: what the task had searched of
    /// it is lost.
    pub(super) fn whole_task(&self, budget: Option<u64>, solver: &Solver) -> WholeTask {
        let mut whole = WholeTask {
            nodes: self.prelude_nodes,
            seconds: self.prelude_seconds,
            found: self.iterations.is_empty(),
            first_split: 0,
        };
        let Some(budget) = budget else {
            return whole;
        };
        for (index, iteration) in self.iterations.iter().enumerate() {
            let searched: Vec<&Unit> =
                searched_to_goal(&iteration.units, solver, &self.board, iteration.bound)
                    .into_iter()
                    .map(|at| &iteration.units[at])
                    .collect();
            let found = searched.iter().any(|unit| unit.found);
            let nodes: u64 = searched.iter().map(|unit| unit.nodes).sum();
            let seconds: f64 = searched.iter().map(|unit| unit.seconds).sum();
            if whole.nodes + nodes > budget {
                let spent = budget.saturating_sub(whole.nodes);
                if nodes > 0 {
                    whole.seconds += seconds * spent as f64 / nodes as f64;
                }
                whole.nodes += spent;
                whole.first_split = index;
                return whole;
            }
            whole.nodes += nodes;
            whole.seconds += seconds;
            if found {
                whole.found = true;
                break;
            }
        }
        whole.first_split = self.iterations.len();
        whole
    }

    /// What the whole task's report gives the first split: its last finished iteration, as it
    /// measured it; nothing under a budget other than the recording's, which replaces the
    /// task.
    pub(super) fn prelude_history(&self, policy: &SimulationPolicy) -> SizeHistory {
        let mut history = SizeHistory::default();
        if policy.whole_task_budget.is_none() {
            for (path, nodes) in &self.prelude_parts {
                history.add(PackedPath::new(path.iter().copied()), *nodes);
            }
        }
        history
    }

    /// What a split of its iterations costs the coordinator a board it estimates: the
    /// policy's, or the default for its board's size.
    pub(super) fn split_seconds_per_estimate(&self, policy: &SimulationPolicy) -> f64 {
        policy.split_seconds_per_estimate.unwrap_or_else(|| {
            if self.board.shape().cells() <= 16 {
                SPLIT_SECONDS_PER_ESTIMATE_SMALL
            } else {
                SPLIT_SECONDS_PER_ESTIMATE_LARGE
            }
        })
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
    pub(super) fn solver(&self, pdbs: &PdbStore) -> Result<Solver, SimulateError> {
        let name = if self.heuristic.is_empty() {
            "default"
        } else {
            &self.heuristic
        };
        let budget = default_memory_budget();
        let choice = name
            .parse::<HeuristicChoice>()
            .map_err(|e| SimulateError::Pdb(format!("{e}")))?
            .resolve(&self.goal, budget);
        let built = choice
            .build(&self.goal, budget, pdbs, &|_| {})
            .map_err(|e| SimulateError::Pdb(e.to_string()))?;
        let name = choice.to_string();
        Ok(Solver::with_heuristic(self.goal, built, name))
    }
}

impl Iteration {
    pub(super) fn from_records(
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
                // Its parts are units; its size is not its subtree's, so it predicts nothing.
                RecordedOutcome::Found(_) | RecordedOutcome::HandedBack => {}
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
                full.extend(part_path(moves)?);
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
                    let depth = depth_of_bound.get(&record.bound).copied().unwrap_or(0);
                    let Some(measured) = measure(&solver, &board, path, record, depth) else {
                        continue;
                    };
                    results
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push((*id, measured));
                });
            }
        });
        let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
        measured += results.len();
        store.replace_task_records(&goal, &board, results)?;
    }
    store.flush()?;
    Ok(measured)
}

/// Searches the cancelled task of `record` (at `path` below `board`) as a worker would have,
/// profiling its parts at `depth`; its record as measured, or None where the path leaves the
/// board or the search ended otherwise than found or exceeded.
fn measure(
    solver: &Solver,
    board: &Board,
    path: &[Direction],
    record: &TaskRecord,
    depth: u32,
) -> Option<TaskRecord> {
    let task_board = path
        .iter()
        .try_fold(*board, |b, &d| b.apply(d).map(|(next, _)| next))?;
    let started = Instant::now();
    let run = run_task(
        solver,
        Work {
            board: &task_board,
            path,
            bound: record.bound,
            iterate: false,
            node_budget: 0,
            profile_depth: depth,
            weighted: None,
        },
        None,
    );
    let seconds = started.elapsed().as_secs_f64();
    let outcome = match run.outcome {
        TaskOutcome::Found(suffix) => RecordedOutcome::Found((path.len() + suffix.len()) as u32),
        TaskOutcome::Exceeded(next) => RecordedOutcome::Exceeded(next),
        _ => return None,
    };
    Some(TaskRecord {
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
    })
}

/// Whether `path` lies inside a measured unit (a unit's path is a prefix of it, or it). Units
/// tile the tree, so such a unit is the last one sorting at or before `path` (interior units
/// aside, which sort just before their task's parts).
pub(super) fn inside_unit(units: &[Unit], path: &[u8]) -> bool {
    let end = units.partition_point(|u| u.path.as_slice() <= path);
    units[..end]
        .iter()
        .rev()
        .find(|u| !u.interior)
        .is_some_and(|u| path.starts_with(&u.path))
}

/// Units of the previous iteration below `prefix` (units sorted by path).
pub(super) fn below<'u>(units: &'u [Unit], prefix: &[u8]) -> &'u [Unit] {
    let start = units.partition_point(|u| u.path.as_slice() < prefix);
    let end = start + units[start..].partition_point(|u| u.path.starts_with(prefix));
    &units[start..end]
}

/// Predicted units for the tasks of the last iteration that were cancelled unmeasured: their
/// subtrees' units one iteration earlier, scaled by the growth the finished tasks showed.
pub(super) fn predict(
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
