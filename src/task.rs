//! The unit of distributed work, shared by the coordinator (which creates and judges tasks) and
//! the worker (which runs them): search one subtree under one bound, or, for a whole puzzle,
//! iterate from a proven bound within a node budget.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::board::Board;
use crate::direction::Direction;
use crate::heuristic::Weight;
use crate::search::pruning::DEAD;
use crate::search::MovePruning;
use crate::search::{Abort, Bounded, IdaStop, Limits, PartSize};
use crate::solver::Solver;
use crate::time_scale::TimeScale;

/// What running a task found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskOutcome {
    /// Moves from the task's board to the goal.
    Found(Vec<Direction>),
    /// No goal within the bound; the smallest f over it.
    Exceeded(u32),
    /// A whole-puzzle task spent its budget during the iteration at this bound (so no solution
    /// shorter than it exists).
    BudgetSpent(u32),
    /// A subtree task spent its budget: search these children of its board instead (moves from
    /// the board, each within the bound); `pruned_min_f` is the least f of the children over it.
    Split {
        children: Vec<Direction>,
        pruned_min_f: u32,
    },
    /// A subtree task asked to hand its work back: search these descendants instead (moves from
    /// the board, each within the bound, none below another). Below its board it searched the
    /// rest, where the least f over the bound is `searched_min_f` (`u32::MAX`: none).
    HandedBack {
        paths: Vec<Vec<Direction>>,
        searched_min_f: u32,
    },
    /// A task asked back before any thread started it: to be queued again as it was.
    Returned,
    /// A weighted task: the shortest path its searches found (none within its limits), with
    /// the weight that found it.
    Weighted(Option<(Vec<Direction>, Weight)>),
    Failed(String),
}

impl TaskOutcome {
    /// The outcome's name, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            TaskOutcome::Found(_) => "found",
            TaskOutcome::Exceeded(_) => "exceeded",
            TaskOutcome::BudgetSpent(_) => "budget_spent",
            TaskOutcome::Split { .. } => "split",
            TaskOutcome::HandedBack { .. } => "handed_back",
            TaskOutcome::Returned => "returned",
            TaskOutcome::Weighted(_) => "weighted",
            TaskOutcome::Failed(_) => "failed",
        }
    }
}

/// Most tasks a worker holds per search thread when its tasks are short (see [`TaskTimes`]).
pub const MAX_PACKED: u32 = 256;
/// About how much work, in seconds of one thread, the tasks a worker holds per thread add up to
/// when they are short: enough that a poll carries many puzzles, little enough that a batch's
/// last tasks are not stuck behind one worker's queue while another is idle.
pub const PACKED_WORK_SECONDS: f64 = 0.05;

/// Tasks a worker must have finished before their times say anything about packing. Few: until
/// then every poll carries one or two puzzles each way (at 256, two thirds of the polls of
/// 10,000 easy boards did), and the coordinator's leases still grow only with the tasks a
/// worker reported (`LEASES_EARNED_PER_TASK`), so packing ramps up over a few polls anyway.
pub const PACK_AFTER_TASKS: u64 = 16;

/// The recent times of a worker's tasks, as both sides keep them to decide how many it holds
/// per search thread: `floor` (one running, the rest waiting) for tasks of ordinary length;
/// once [`PACK_AFTER_TASKS`] have finished and their exponential average is short, as many as
/// make about [`PACKED_WORK_SECONDS`] of work, up to [`MAX_PACKED`]. An easy board is solved in
/// a tenth of a millisecond, far less than a poll costs both sides, so that a poll then
/// carries many puzzles each way.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskTimes {
    average: Option<f64>,
    finished: u64,
}

impl TaskTimes {
    /// Adds `count` finished tasks that took `seconds` in all: their mean moves the average a
    /// third of the way. Times that are not a number of seconds are left out.
    pub fn add(&mut self, count: u64, seconds: f64) {
        if count == 0 || !seconds.is_finite() || seconds < 0.0 {
            return;
        }
        let mean = seconds / count as f64;
        self.average = Some(self.average.map_or(mean, |old| old + (mean - old) / 3.0));
        self.finished = self.finished.saturating_add(count);
    }

    /// How many tasks to hold per search thread, with the policy's times under `scale`.
    pub fn tasks_per_thread(&self, floor: u32, scale: TimeScale) -> u32 {
        match self.average {
            Some(mean) if self.finished >= PACK_AFTER_TASKS => {
                let work = scale.stretch_seconds(PACKED_WORK_SECONDS);
                let packed = (work / mean.max(1e-6)).min(f64::from(MAX_PACKED));
                (packed as u32).max(floor)
            }
            _ => floor,
        }
    }
}

/// Deepest descendants a task measures: 2.4^12 ~ 36,000 parts already fill a large report.
pub const MAX_PROFILE_DEPTH: u32 = 12;

/// One task as the worker runs it: the subtree below `board`, reached from the puzzle's root by
/// `path`, under `bound`; with `iterate`, IDA* from `bound` until solved or `node_budget`
/// expanded nodes are spent.
#[derive(Clone, Copy, Debug)]
pub struct Work<'a> {
    pub board: &'a Board,
    pub path: &'a [Direction],
    pub bound: u32,
    pub iterate: bool,
    pub node_budget: u64,
    /// With a subtree task, measure each descendant this many moves below `board` (0: none).
    pub profile_depth: u32,
    /// Not the optimal search: weighted IDA* on the whole puzzle for a path that may be longer,
    /// stopping at one as long as `bound` (a proven lower bound), at `node_budget` (0: none)
    /// or after its seconds.
    pub weighted: Option<WeightedWork>,
}

/// What a weighted task searches with: one weight, or (`None`) the solver's ladder of weights
/// (see [`Solver::shortest_weighted_path`]); and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightedWork {
    pub weight: Option<Weight>,
    pub time_limit: Option<Duration>,
}

/// What running a task found and what it cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRun {
    pub outcome: TaskOutcome,
    /// Expanded nodes.
    pub nodes: u64,
    /// The measured descendants, with `profile_depth` (see [`crate::search::profiled_search`]).
    pub parts: Vec<PartSize>,
}

/// Runs a task.
pub fn run_task(solver: &Solver, work: Work<'_>, cancel: Option<&AtomicBool>) -> TaskRun {
    run_task_handing_back(solver, work, cancel, None)
}

/// Runs a task that stops when `cancel` is set, and, a subtree task that measures its parts,
/// hands back what it has not searched when `hand_back` is set
/// ([`TaskOutcome::HandedBack`]).
pub fn run_task_handing_back(
    solver: &Solver,
    work: Work<'_>,
    cancel: Option<&AtomicBool>,
    hand_back: Option<&AtomicBool>,
) -> TaskRun {
    if let Some(weighted) = work.weighted {
        let deadline = weighted.time_limit.map(|limit| Instant::now() + limit);
        let (found, counters) =
            solver.shortest_weighted_path(work.board, work.bound, weighted.weight, |spent| {
                Limits {
                    cancel,
                    hand_back: None,
                    deadline,
                    max_nodes: (work.node_budget > 0)
                        .then(|| work.node_budget.saturating_sub(spent).max(1)),
                    whole_iterations: false,
                }
            });
        let outcome = match cancel.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
            true => TaskOutcome::Failed("stopped: Cancelled".into()),
            false => TaskOutcome::Weighted(found),
        };
        return TaskRun {
            outcome,
            nodes: counters.expanded,
            parts: Vec::new(),
        };
    }
    if work.iterate {
        let limits = Limits {
            cancel,
            hand_back: None,
            deadline: None,
            max_nodes: Some(work.node_budget.max(1)),
            whole_iterations: true,
        };
        let depth = work.profile_depth.min(MAX_PROFILE_DEPTH);
        let outcome = solver.iterate(work.board, work.bound, limits, depth);
        let result = match outcome.result {
            Ok(moves) => TaskOutcome::Found(moves),
            Err(IdaStop::Aborted(Abort::NodeLimit)) => TaskOutcome::BudgetSpent(outcome.bound),
            Err(IdaStop::Aborted(abort)) => TaskOutcome::Failed(format!("stopped: {abort:?}")),
            Err(IdaStop::NoSolution) => TaskOutcome::Failed("no solution exists".into()),
        };
        return TaskRun {
            outcome: result,
            nodes: outcome.counters.expanded,
            // With the budget spent: the last iteration searched, measured when it could be.
            parts: outcome.parts,
        };
    }
    let limits = Limits {
        cancel,
        hand_back: None,
        deadline: None,
        max_nodes: (work.node_budget > 0).then_some(work.node_budget),
        whole_iterations: false,
    };
    run_subtree(solver, work, limits, hand_back)
}

/// A subtree task's search under `limits`, which a search in measured parts (`profile_depth`)
/// stops to hand back what it has not searched when `hand_back` is set.
fn run_subtree(
    solver: &Solver,
    work: Work<'_>,
    limits: Limits<'_>,
    hand_back: Option<&AtomicBool>,
) -> TaskRun {
    let (outcome, counters, parts) = if work.profile_depth > 0 {
        let limits = Limits {
            hand_back,
            ..limits
        };
        let profiled = solver.search_subtree_profiled(
            work.board,
            work.path,
            work.bound,
            limits,
            work.profile_depth.min(MAX_PROFILE_DEPTH),
        );
        if !profiled.handed_back.is_empty() {
            let searched_min_f = match profiled.outcome {
                Bounded::Exceeded { next_bound } => next_bound,
                _ => u32::MAX,
            };
            return TaskRun {
                outcome: TaskOutcome::HandedBack {
                    paths: profiled.handed_back,
                    searched_min_f,
                },
                nodes: profiled.counters.expanded,
                parts: profiled.parts,
            };
        }
        (profiled.outcome, profiled.counters, profiled.parts)
    } else {
        let (outcome, counters) = solver.search_subtree(work.board, work.path, work.bound, limits);
        (outcome, counters, Vec::new())
    };
    let result = match outcome {
        Bounded::Found(moves) => TaskOutcome::Found(moves),
        Bounded::Exceeded { next_bound } => TaskOutcome::Exceeded(next_bound),
        Bounded::Aborted(Abort::NodeLimit) => {
            split_children(solver, work.board, work.path, work.bound)
        }
        Bounded::Aborted(abort) => TaskOutcome::Failed(format!("stopped: {abort:?}")),
    };
    TaskRun {
        outcome: result,
        nodes: counters.expanded,
        parts,
    }
}

/// The children of a task's board that its search follows, in search order: on the board, not
/// undoing the last move of `path`, and not completing a word `pruning` forbids after `path`
/// (see [`Solver::machine_after`]). A split report hands back some of them; of the others it
/// claims no path within the bound (the coordinator audits exactly these, with the pruning
/// of the board size that workers run).
pub fn followed_children(
    pruning: &MovePruning,
    board: &Board,
    path: &[Direction],
) -> Vec<(Direction, Board)> {
    let machine = pruning.resumed_after(path);
    Direction::ALL
        .into_iter()
        .filter(|d| path.last() != Some(&d.opposite()))
        .filter(|&d| pruning.next(machine, d as usize) != DEAD)
        .filter_map(|d| board.apply(d).map(|(child, _)| (d, child)))
        .collect()
}

/// The children of a subtree's root that are worth searching under `bound`, for handing an
/// over-budget subtree back as smaller tasks (the partial search is given up: at most one
/// budget's worth of work, for no single subtree holding up its iteration).
fn split_children(solver: &Solver, board: &Board, path: &[Direction], bound: u32) -> TaskOutcome {
    let g = path.len() as u32;
    let mut children = Vec::new();
    let mut pruned_min_f = u32::MAX;
    for (direction, child) in followed_children(solver.pruning(), board, path) {
        let f = g + 1 + solver.estimate(&child);
        if f <= bound {
            children.push(direction);
        } else {
            pruned_min_f = pruned_min_f.min(f);
        }
    }
    TaskOutcome::Split {
        children,
        pruned_min_f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristic::HeuristicKind;
    use crate::parse_board;

    /// A path one thread's search follows, from `board`, after which the pruning forbids every
    /// move on (found breadth-first).
    fn path_with_no_way_on(solver: &Solver, board: &Board) -> Option<(Board, Vec<Direction>)> {
        let mut level = vec![(*board, Vec::new())];
        for _ in 0..12 {
            let mut next = Vec::new();
            for (node, path) in level {
                let children = followed_children(solver.pruning(), &node, &path);
                if children.is_empty() {
                    return Some((node, path));
                }
                for (direction, child) in children {
                    let mut longer = path.clone();
                    longer.push(direction);
                    next.push((child, longer));
                }
            }
            level = next;
        }
        None
    }

    /// Where the pruning leaves a subtree task no way on, the task still reports a next bound
    /// (from the search started afresh), never "nothing past the bound", which the coordinator
    /// must take for a claim that the puzzle has no solution.
    #[test]
    fn a_subtree_the_pruning_closes_still_reports_a_next_bound() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::Manhattan);
        let board = parse_board("14,13,15,7,11,12,9,5,6,0,2,1,4,8,10,3").unwrap();
        let (node, path) = path_with_no_way_on(&solver, &board).expect("such a path exists");
        let bound = path.len() as u32 + solver.estimate(&node);
        let work = Work {
            board: &node,
            path: &path,
            bound,
            iterate: false,
            node_budget: 0,
            profile_depth: 0,
            weighted: None,
        };
        for profile_depth in [0, 2] {
            let run = run_task(
                &solver,
                Work {
                    profile_depth,
                    ..work
                },
                None,
            );
            match run.outcome {
                TaskOutcome::Exceeded(next) => assert!(next > bound && next < 100, "{next}"),
                other => panic!("{other:?}"),
            }
        }
    }

    /// A whole-puzzle task its budget stops reports the last iteration it finished, measured in
    /// parts, which the coordinator splits the next one by; measuring changes neither the
    /// outcome nor the nodes.
    #[test]
    fn a_whole_task_stopped_by_its_budget_reports_its_last_iteration_in_parts() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::Manhattan);
        // Korf's first: far more than the budget under Manhattan distance.
        let board = parse_board("14,13,15,7,11,12,9,5,6,0,2,1,4,8,10,3").unwrap();
        let work = Work {
            board: &board,
            path: &[],
            bound: 0,
            iterate: true,
            node_budget: 300_000,
            profile_depth: 4,
            weighted: None,
        };
        let measured = run_task(&solver, work, None);
        let plain = run_task(
            &solver,
            Work {
                profile_depth: 0,
                ..work
            },
            None,
        );
        let TaskOutcome::BudgetSpent(bound) = measured.outcome else {
            panic!("{:?}", measured.outcome);
        };
        assert_eq!(plain.outcome, measured.outcome);
        assert_eq!(plain.nodes, measured.nodes);
        assert!(plain.parts.is_empty());
        // Manhattan distance keeps the parity: the iteration before is two moves shorter.
        let (_, last) = solver.search_subtree(&board, &[], bound - 2, Limits::default());
        let in_parts: u64 = measured.parts.iter().map(|part| part.expanded).sum();
        assert!(measured.parts.iter().all(|part| part.moves.len() == 4));
        assert!(
            in_parts <= last.expanded && in_parts * 100 >= last.expanded * 99,
            "{in_parts} of {}",
            last.expanded
        );
    }

    #[test]
    fn short_tasks_are_packed_once_enough_have_finished_and_long_ones_never() {
        let real = TimeScale::REAL;
        let mut times = TaskTimes::default();
        assert_eq!(times.tasks_per_thread(2, real), 2, "nothing known yet");
        times.add(PACK_AFTER_TASKS - 1, 0.001 * (PACK_AFTER_TASKS - 1) as f64);
        assert_eq!(times.tasks_per_thread(2, real), 2, "too few to go on");
        times.add(1, 0.001);
        assert_eq!(times.tasks_per_thread(2, real), 50);
        assert_eq!(times.tasks_per_thread(64, real), 64);
        times.add(1, f64::NAN);
        assert_eq!(
            times.tasks_per_thread(2, real),
            50,
            "a nonsense time changes nothing"
        );
        times.add(1, 0.004);
        assert_eq!(
            times.tasks_per_thread(2, real),
            25,
            "a third of the way to 4 ms: 2 ms"
        );
        times.add(100, 100.0);
        assert_eq!(
            times.tasks_per_thread(2, real),
            2,
            "long tasks are not packed"
        );
        let mut instant = TaskTimes::default();
        instant.add(PACK_AFTER_TASKS, 0.0);
        assert_eq!(instant.tasks_per_thread(2, real), MAX_PACKED);
    }

    /// A process held to a tenth of a core takes ten times as long over each task: at ten times
    /// the policy's packing time it holds what the host's would.
    #[test]
    fn under_a_time_scale_tasks_ten_times_as_long_are_packed_as_the_host_packs() {
        let mut host = TaskTimes::default();
        host.add(PACK_AFTER_TASKS, 0.001 * PACK_AFTER_TASKS as f64);
        let mut emulated = TaskTimes::default();
        emulated.add(PACK_AFTER_TASKS, 0.01 * PACK_AFTER_TASKS as f64);
        let ten = TimeScale::new(10.0).unwrap();
        assert_eq!(host.tasks_per_thread(2, TimeScale::REAL), 50);
        assert_eq!(emulated.tasks_per_thread(2, ten), 50);
        assert_eq!(emulated.tasks_per_thread(2, TimeScale::REAL), 5);
    }

    /// A whole task stops between iterations rather than in one it would not finish: it spends
    /// less than its budget, and the bound it reports is one no solution is shorter than.
    #[test]
    fn a_whole_task_stops_before_an_iteration_it_could_not_finish() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        // Korf's instance 1 (57 moves), blank last.
        let root = parse_board("13,6,8,12,15,14,0,10,11,7,4,5,9,1,3,2").unwrap();
        let optimal = solver
            .solve(&root, &crate::SolveOptions::default(), None)
            .unwrap()
            .len() as u32;
        let task = |node_budget| Work {
            board: &root,
            path: &[],
            bound: 0,
            iterate: true,
            node_budget,
            profile_depth: 0,
            weighted: None,
        };
        let whole = run_task(&solver, task(u64::MAX), None);
        assert!(matches!(whole.outcome, TaskOutcome::Found(ref m) if m.len() as u32 == optimal));
        let budget = whole.nodes / 3;
        let stopped = run_task(&solver, task(budget), None);
        let TaskOutcome::BudgetSpent(at) = stopped.outcome else {
            panic!("{:?}", stopped.outcome);
        };
        assert!(stopped.nodes < budget, "{} of {budget}", stopped.nodes);
        assert!(at <= optimal, "{at} > {optimal}");
        // Resumed at that bound, the search finds the same length.
        let resumed = run_task(
            &solver,
            Work {
                bound: at,
                ..task(u64::MAX)
            },
            None,
        );
        assert!(matches!(resumed.outcome, TaskOutcome::Found(ref m) if m.len() as u32 == optimal));
    }

    /// A subtree task handed back at any moment (before it starts, or part way through) has
    /// searched part of its subtree and hands back the rest: the handed-back descendants,
    /// searched as tasks of their own, with what it searched, find what one search finds.
    #[test]
    fn a_handed_back_task_and_its_descendants_find_what_one_search_does() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let root = parse_board("2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10").unwrap();
        let optimal = solver
            .solve(&root, &crate::SolveOptions::default(), None)
            .unwrap()
            .len() as u32;
        let h = solver.estimate(&root);
        for bound in [h + 2, optimal] {
            let whole = Work {
                board: &root,
                path: &[],
                bound,
                iterate: false,
                node_budget: 0,
                profile_depth: 4,
                weighted: None,
            };
            let expected = run_task(&solver, whole, None);
            for delay_micros in [0, 200, 2_000] {
                let flag = AtomicBool::new(delay_micros == 0);
                let run = std::thread::scope(|scope| {
                    scope.spawn(|| {
                        std::thread::sleep(Duration::from_micros(delay_micros));
                        flag.store(true, Ordering::Relaxed);
                    });
                    run_task_handing_back(&solver, whole, None, Some(&flag))
                });
                let TaskOutcome::HandedBack {
                    paths,
                    searched_min_f,
                } = run.outcome
                else {
                    // It ended before it was asked.
                    assert_eq!(run.outcome, expected.outcome, "bound {bound}");
                    continue;
                };
                // The rest of each level on the way down, and the part it was in.
                assert!(
                    !paths.is_empty() && paths.len() <= 3 * 4 + 1,
                    "{}",
                    paths.len()
                );
                assert!(paths.iter().all(|p| p.len() <= 4));
                let mut next = searched_min_f;
                let mut found = None;
                for path in &paths {
                    assert!(!paths.iter().any(|q| q != path && path.starts_with(q)));
                    let board = path.iter().fold(root, |b, &d| b.apply(d).unwrap().0);
                    let part = Work {
                        board: &board,
                        path,
                        ..whole
                    };
                    match run_task(&solver, part, None).outcome {
                        TaskOutcome::Exceeded(bound) => next = next.min(bound),
                        TaskOutcome::Found(suffix) => {
                            found.get_or_insert(path.len() + suffix.len());
                        }
                        other => panic!("{other:?}"),
                    }
                }
                match expected.outcome {
                    TaskOutcome::Found(ref moves) => assert_eq!(found, Some(moves.len())),
                    TaskOutcome::Exceeded(expected) => {
                        assert_eq!((found, next), (None, expected), "bound {bound}")
                    }
                    ref other => panic!("{other:?}"),
                }
            }
        }
    }

    /// Profiling must not change what a subtree search finds or what it counts.
    #[test]
    fn profiled_tasks_find_and_count_what_plain_tasks_do() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let root = parse_board("2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10").unwrap();
        let optimal = solver
            .solve(&root, &crate::SolveOptions::default(), None)
            .unwrap();
        let h = solver.estimate(&root);
        for bound in [h, h + 2, optimal.len() as u32] {
            for path in [
                &optimal.moves[..0],
                &optimal.moves[..3],
                &optimal.moves[..7],
            ] {
                let board = path.iter().fold(root, |b, &d| b.apply(d).unwrap().0);
                let plain = Work {
                    board: &board,
                    path,
                    bound,
                    iterate: false,
                    node_budget: 0,
                    profile_depth: 0,
                    weighted: None,
                };
                let expected = run_task(&solver, plain, None);
                for depth in [1, 3, 6] {
                    let profiled = run_task(
                        &solver,
                        Work {
                            profile_depth: depth,
                            ..plain
                        },
                        None,
                    );
                    assert_eq!(
                        profiled.outcome, expected.outcome,
                        "bound {bound} depth {depth}"
                    );
                    assert_eq!(
                        profiled.nodes, expected.nodes,
                        "bound {bound} depth {depth}"
                    );
                    let part_nodes: u64 = profiled.parts.iter().map(|p| p.expanded).sum();
                    assert!(part_nodes <= profiled.nodes);
                    assert!(profiled
                        .parts
                        .iter()
                        .all(|p| p.moves.len() == depth as usize));
                }
            }
        }
    }
}
