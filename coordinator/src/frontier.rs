//! Splitting one IDA* iteration into subtree tasks (DESIGN.md, "Correctness of the distributed
//! search").
//!
//! From the puzzle's root the tree is expanded breadth-first to a fixed depth, in search order,
//! following only the paths one thread's search would (its move-sequence pruning). A board
//! reached again at the same or a greater depth is dropped: the earlier copy's subtree has at
//! least as much of the bound left, so it contains everything the later one would find (and
//! why the pruning stays sound with it is in `tilesolve::search::pruning`). Nodes with
//! g + h over the bound are pruned (their f feeds the next bound). Every surviving node at the
//! frontier depth becomes a task that searches its subtree under the same bound, so the first
//! solution any task finds is optimal.

use std::collections::{BinaryHeap, HashMap, HashSet};

use tilesolve::search::child_order;
use tilesolve::task::followed_children;
use tilesolve::{Board, Direction, Solver};

use crate::size_history::{PackedPath, SizeHistory};

/// One subtree to search under the iteration's bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtreeTask {
    pub board: Board,
    /// Moves from the puzzle's root to `board`; its length is the node's depth g.
    pub path: Vec<Direction>,
    /// The heuristic's estimate of `board`.
    pub h: u32,
    /// Nodes its search is predicted to expand (0: no prediction).
    pub predicted: u64,
    /// Where one thread's search meets it: per move from the root, the child's place among its
    /// siblings (`tilesolve::search::child_order`). Tasks sorted by it, as bytes, are in search
    /// order, and a subtree's children extend its own.
    pub order: Vec<u8>,
}

impl SubtreeTask {
    pub fn g(&self) -> u32 {
        self.path.len() as u32
    }

    /// Its child `board` (estimate `h`) reached by `direction`, in an iteration under `bound`.
    fn child(
        &self,
        solver: &Solver,
        bound: u32,
        direction: Direction,
        board: Board,
        h: u32,
    ) -> SubtreeTask {
        let mut path = self.path.clone();
        path.push(direction);
        let parent = (bound, self.g(), self.h);
        SubtreeTask {
            board,
            path,
            h,
            predicted: 0,
            order: child_order(solver.pruning(), &self.order, parent, h, direction),
        }
    }
}

/// An iteration split into tasks.
#[derive(Clone, Debug, Default)]
pub struct Frontier {
    /// Subtrees to search, in the order in-process IDA* meets them (by
    /// [`SubtreeTask::order`]): in the iteration that holds the solution, the work before it is
    /// met is then what one thread does (see [`crate::queue`]).
    pub tasks: Vec<SubtreeTask>,
    /// A goal met above the frontier depth: the shallowest, hence optimal, solution.
    pub solution: Option<Vec<Direction>>,
    /// The smallest f over the bound among pruned nodes (`u32::MAX` if none).
    pub pruned_min_f: u32,
    /// Boards dropped because they were reached before at the same or a smaller depth.
    pub duplicates: u64,
    /// The split wanted to go deeper than its `max_depth`.
    pub depth_limited: bool,
    /// Boards the split estimated, over every depth it tried: what its time grows with (a
    /// replay charges a split by it, so that two replays of one recording agree).
    pub estimates: u64,
}

/// Splits the iteration with `bound` of the puzzle `root` into subtrees at `depth`.
pub fn split(root: &Board, solver: &Solver, bound: u32, depth: u32) -> Frontier {
    let goal = solver.goal();
    let mut frontier = Frontier {
        pruned_min_f: u32::MAX,
        ..Frontier::default()
    };
    let root_h = solver.estimate(root);
    frontier.estimates = 1;
    if root_h > bound {
        frontier.pruned_min_f = root_h;
        return frontier;
    }
    let mut seen: HashMap<Board, u32> = HashMap::from([(*root, 0)]);
    let mut level = vec![SubtreeTask {
        board: *root,
        path: Vec::new(),
        h: root_h,
        predicted: 0,
        order: Vec::new(),
    }];
    for g in 0..depth {
        if let Some(node) = level.iter().find(|node| node.board == *goal) {
            frontier.solution = Some(node.path.clone());
            return frontier;
        }
        let mut next = Vec::with_capacity(level.len() * 2);
        for node in &level {
            for (direction, child) in followed_children(solver.pruning(), &node.board, &node.path) {
                if seen.contains_key(&child) {
                    frontier.duplicates += 1;
                    continue;
                }
                let h = solver.estimate(&child);
                frontier.estimates += 1;
                let f = g + 1 + h;
                if f > bound {
                    frontier.pruned_min_f = frontier.pruned_min_f.min(f);
                    continue;
                }
                seen.insert(child, g + 1);
                next.push(node.child(solver, bound, direction, child, h));
            }
        }
        level = next;
    }
    if let Some(node) = level.iter().find(|node| node.board == *goal) {
        frontier.solution = Some(node.path.clone());
        return frontier;
    }
    // Built level by level in move order, so that of two paths to a board the one kept is the
    // least in move order (what keeps the pruning sound: see `tilesolve::search::pruning`);
    // queued in the order one thread's search meets them.
    level.sort_by(|a, b| a.order.cmp(&b.order));
    frontier.tasks = level;
    frontier
}

/// The scheduling policy's split of an iteration: the shallowest even depth (at most
/// `max_depth`) whose frontier has at least `target` tasks, or the solution if the split meets
/// it. Shared by the scheduler and the simulator, so a simulated run splits as a real one does.
pub fn split_for(
    root: &Board,
    solver: &Solver,
    bound: u32,
    target: usize,
    max_depth: u32,
) -> Frontier {
    let mut frontier = split(root, solver, bound, 0);
    for depth in (2..=bound.min(max_depth)).step_by(2) {
        let estimates = frontier.estimates;
        frontier = split(root, solver, bound, depth);
        frontier.estimates += estimates;
        if frontier.solution.is_some() || frontier.tasks.len() >= target {
            break;
        }
    }
    frontier
}

/// Deepest frontier an iteration is split at.
pub const MAX_SPLIT_DEPTH: u32 = 24;

/// How much larger than everything before it the first split iteration is assumed to be (an
/// iteration of the 15- and 24-puzzle costs 5-10 times the one before it).
const FIRST_SPLIT_GROWTH: u64 = 4;

/// The scheduling policy's split of an iteration, shared by the scheduler and the simulator.
/// With the previous iteration measured, [`split_balanced`]. Without (the first split
/// iteration), a uniform frontier in search order, with as many tasks as the work done so far
/// (`nodes_so_far`, a lower bound on this iteration) fills at the smallest split each, up to
/// `balance` per thread it is for (and the cap of [`split_balanced`]).
pub fn split_iteration(
    root: &Board,
    solver: &Solver,
    bound: u32,
    history: &SizeHistory,
    nodes_so_far: u64,
    params: BalanceParams,
    splittable: Splittable<'_>,
) -> Frontier {
    if !history.is_empty() {
        return split_balanced(
            root,
            solver,
            bound,
            history,
            nodes_so_far,
            params,
            splittable,
        );
    }
    let estimate = nodes_so_far.saturating_mul(FIRST_SPLIT_GROWTH);
    let wanted = usize::try_from(estimate / smallest_split(params)).unwrap_or(usize::MAX);
    // No more than the balance asks of the threads it is for: a puzzle that shares the threads
    // with others needs no finer pieces than its share of them takes.
    let balanced = params.threads.max(1).saturating_mul(params.balance.max(1));
    let target = wanted.clamp(1, params.most_tasks(estimate as f64).min(balanced));
    let deepest = MAX_SPLIT_DEPTH.min(params.max_depth);
    let mut frontier = split_for(root, solver, bound, target, deepest);
    let depth = frontier.tasks.first().map_or(0, |t| t.g());
    frontier.depth_limited = frontier.tasks.len() < target && depth + 2 > deepest && depth < bound;
    frontier
}

/// The share of its time the coordinator may spend serving split puzzles' tasks: all of it.
/// Replayed at 128 to 1,024 workers, a cap at half its time left more threads idle than the
/// calls it kept from queueing cost (at worst 13% slower than no cap; at its full time, 7%),
/// for the same mean gain (docs/benchmarks/history.md, forty-eighth session).
pub const COORDINATOR_LOAD: f64 = 1.0;

/// The most the coordinator may cost, as a share of the threads' search: a task must search
/// for at least its coordinator time over this, whatever the number of threads. Sixteen
/// 80-move boards on fifteen workers were split into 1,712 tasks of 40,000 nodes on average
/// (about 4 ms of a thread), and the coordinator spent 2-5% of the search serving them.
pub const COORDINATOR_SHARE: f64 = 0.01;

/// The shortest mean task that keeps a coordinator taking `coordinator_seconds_per_task` a
/// task within [`COORDINATOR_LOAD`] while `threads` threads search, and its time within
/// [`COORDINATOR_SHARE`] of theirs.
pub fn min_mean_task_seconds(threads: usize, coordinator_seconds_per_task: f64) -> f64 {
    (threads as f64 * coordinator_seconds_per_task / COORDINATOR_LOAD)
        .max(coordinator_seconds_per_task / COORDINATOR_SHARE)
}

/// A puzzle's measured search time per expanded node (0: nothing measured yet).
pub fn seconds_per_node(nodes: u64, seconds: f64) -> f64 {
    if nodes == 0 || !seconds.is_finite() || seconds <= 0.0 {
        0.0
    } else {
        seconds / nodes as f64
    }
}

/// How many times its even share of the connected threads a puzzle's split iteration is made
/// for (never more than all of them): room for the threads that other puzzles free as they
/// end, before its next iteration is split for more.
pub const SHARE_OF_THREADS: usize = 2;

/// The threads an iteration is split for, with `unfinished` puzzles (this one among them) on
/// `connected` threads: [`SHARE_OF_THREADS`] times its share of them. Puzzles that outnumber
/// the threads keep them busy between them, so a split into pieces for every thread only
/// multiplies tasks (sixteen 80-move boards on fifteen workers: 107 tasks each for their
/// first split iteration, 2,500 in all, a coordinator call each); a puzzle alone gets every
/// thread. Threads that idle once the others end take what running tasks hand back
/// (`scheduler/hand_backs.rs`) until its next iteration is split for more of them.
pub fn iteration_threads(connected: usize, unfinished: usize) -> usize {
    let connected = connected.max(1);
    connected
        .saturating_mul(SHARE_OF_THREADS)
        .div_ceil(unfinished.max(1))
        .min(connected)
}

/// The smallest subtree (nodes) the policy splits: `min_split_nodes`, or more with many
/// connected threads.
fn smallest_split(params: BalanceParams) -> u64 {
    params
        .min_split_nodes
        .max(
            params
                .min_split_nodes_per_thread
                .saturating_mul(params.connected_threads as u64),
        )
        .max(1)
}

/// The knobs of [`split_balanced`].
#[derive(Clone, Copy, Debug)]
pub struct BalanceParams {
    /// Search threads the iteration is for: its share of those connected
    /// ([`iteration_threads`]) ...
    pub threads: usize,
    /// ... and every thread connected (the coordinator serves them all).
    pub connected_threads: usize,
    /// At most this many tasks per thread.
    pub tasks_per_thread: usize,
    /// Split until no task is predicted to exceed the iteration's size / (`threads` x balance).
    pub balance: usize,
    /// ... but never split a subtree predicted smaller than this (nodes): smaller tasks cost
    /// more in round trips than they gain in balance.
    pub min_split_nodes: u64,
    /// ... nor smaller than this many nodes per connected thread: with many workers, tasks must
    /// be long enough that the coordinator (one lease at a time) keeps up with them.
    pub min_split_nodes_per_thread: u64,
    /// Never split a uniform frontier below this depth (the simulator's limit: its recording
    /// is no finer).
    pub max_depth: u32,
    /// Seconds a thread takes per expanded node on this puzzle, as measured (0: not known) ...
    pub seconds_per_node: f64,
    /// ... and the shortest mean task the coordinator keeps up with for the connected threads
    /// (0: no limit): no more tasks than the iteration's predicted thread-seconds fill at it.
    pub min_mean_task_seconds: f64,
}

impl BalanceParams {
    /// Most tasks for an iteration predicted at `nodes`: `tasks_per_thread` a thread, and no
    /// more than the coordinator serves in the time the threads take to search them.
    fn most_tasks(&self, nodes: f64) -> usize {
        let per_thread = self.threads.max(1) * self.tasks_per_thread.max(1);
        if self.seconds_per_node <= 0.0 || self.min_mean_task_seconds <= 0.0 {
            return per_thread;
        }
        let served = nodes * self.seconds_per_node / self.min_mean_task_seconds;
        per_thread.min(served.max(1.0) as usize)
    }
}

/// Whether the subtree at a path may be split into its children (the simulator cannot split
/// finer than it measured; the scheduler always can).
pub type Splittable<'a> = &'a dyn Fn(&[Direction]) -> bool;

/// The policy's split of an iteration when the previous one was measured: start from a uniform
/// frontier of at most a task per thread (fewer for an iteration predicted small), then split
/// the subtree predicted largest into its children, again and again, until none is predicted
/// above the iteration's size / (threads x `balance`), none left to split is above the smallest
/// split, or the task cap is reached (`tasks_per_thread` a thread, and no more than the
/// coordinator serves while the threads search them: [`min_mean_task_seconds`]). A subtree's
/// prediction is its measured size one iteration earlier (its parts', when finer than it; an
/// equal share of its parent's when not measured at all); `nodes_so_far` (every node the
/// puzzle took before this iteration) gives the growth from one iteration to the next. Tasks
/// come out in search order.
pub fn split_balanced(
    root: &Board,
    solver: &Solver,
    bound: u32,
    history: &SizeHistory,
    nodes_so_far: u64,
    params: BalanceParams,
    splittable: Splittable<'_>,
) -> Frontier {
    let threads = params.threads.max(1);
    // Predictions are last iteration's sizes; this one is larger by the growth from the
    // iterations before (with a constant growth b, everything before the last iteration adds up
    // to about last / (b - 1)).
    let earlier = nodes_so_far.saturating_sub(history.total()).max(1);
    let growth = 1.0 + history.total() as f64 / earlier as f64;
    let smallest = smallest_split(params);
    // No more tasks to start from than the iteration fills at the smallest split: a small
    // iteration is a few tasks, not one per thread.
    let predicted_total = history.total() as f64 * growth;
    let most_tasks = params.most_tasks(predicted_total);
    let base = ((predicted_total / smallest as f64) as usize).clamp(1, threads.min(most_tasks));
    let mut frontier = split_for(
        root,
        solver,
        bound,
        base,
        MAX_SPLIT_DEPTH.min(params.max_depth),
    );
    if frontier.solution.is_some() || frontier.tasks.is_empty() {
        return frontier;
    }
    let path_of = |task: &SubtreeTask| packed(&task.path);
    let known = earlier_sizes(history, &frontier.tasks);
    let measured: u64 = known.iter().flatten().sum();
    let measured_count = known.iter().flatten().count().max(1) as u64;
    let mut heap: BinaryHeap<(u64, usize)> = BinaryHeap::new();
    let mut tasks: Vec<SubtreeTask> = Vec::with_capacity(frontier.tasks.len());
    // Subtrees over the size limit that are already at the deepest allowed split.
    let mut too_deep: Vec<(u64, usize)> = Vec::new();
    for (task, size) in std::mem::take(&mut frontier.tasks).into_iter().zip(known) {
        // A subtree not measured before (it was over the last bound) gets the mean.
        heap.push((size.unwrap_or(measured / measured_count), tasks.len()));
        tasks.push(task);
    }
    let total = heap
        .iter()
        .fold(0u64, |sum, (size, _)| sum.saturating_add(*size));
    let share = total / (threads * params.balance.max(1)) as u64;
    let largest_allowed = share.max((smallest as f64 / growth) as u64);
    while let Some(&(size, index)) = heap.peek() {
        if size <= largest_allowed || heap.len() + too_deep.len() >= most_tasks {
            break;
        }
        heap.pop();
        let parent = tasks[index].clone();
        if !splittable(&parent.path) {
            frontier.depth_limited = true;
            too_deep.push((size, index));
            continue;
        }
        let children = match children_within(solver, &parent, bound, &mut frontier) {
            Ok(children) => children,
            Err(solution) => {
                frontier.solution = Some(solution);
                return frontier;
            }
        };
        // With no child within the bound, the subtree is one node: it needs no task at all.
        let sizes: Vec<Option<u64>> = children.iter().map(|c| history.below(path_of(c))).collect();
        let unmeasured = sizes.iter().filter(|s| s.is_none()).count() as u64;
        let measured_children: u64 = sizes.iter().flatten().sum();
        let rest = size.saturating_sub(measured_children) / unmeasured.max(1);
        for (child, size) in children.into_iter().zip(sizes) {
            heap.push((size.unwrap_or(rest), tasks.len()));
            tasks.push(child);
        }
    }
    let mut ordered: Vec<(u64, usize)> = heap.into_vec();
    ordered.extend(too_deep);
    ordered.sort_by(|&(_, a), &(_, b)| tasks[a].order.cmp(&tasks[b].order));
    frontier.tasks = ordered
        .into_iter()
        .map(|(size, index)| SubtreeTask {
            // Measured one iteration earlier; this one is larger by the growth.
            predicted: (size as f64 * growth) as u64,
            ..tasks[index].clone()
        })
        .collect();
    frontier
}

fn packed(moves: &[Direction]) -> PackedPath {
    PackedPath::new(moves.iter().map(|&d| d as u8))
}

/// Each task's size one iteration earlier: as measured at its path; or, where the history is
/// coarser than the frontier (a whole-puzzle task's parts, a few moves deep), an equal share of
/// its deepest measured ancestor among the tasks below that ancestor, none of them measured;
/// otherwise `None` (a subtree over the last bound, which no one searched).
fn earlier_sizes(history: &SizeHistory, tasks: &[SubtreeTask]) -> Vec<Option<u64>> {
    let mut sizes: Vec<Option<u64>> = tasks
        .iter()
        .map(|task| history.below(packed(&task.path)))
        .collect();
    // An ancestor with a measured task below it has nothing to share out: what its measured
    // tasks do not hold was over the last bound.
    let mut above_measured: HashSet<PackedPath> = HashSet::new();
    for (task, size) in tasks.iter().zip(&sizes) {
        if size.is_some() {
            above_measured.extend((0..=task.path.len()).map(|len| packed(&task.path[..len])));
        }
    }
    let mut shares: HashMap<PackedPath, (u64, u64)> = HashMap::new();
    let mut ancestors: Vec<Option<PackedPath>> = vec![None; tasks.len()];
    for ((task, size), ancestor) in tasks.iter().zip(&sizes).zip(&mut ancestors) {
        if size.is_some() {
            continue;
        }
        let measured = (0..task.path.len()).rev().find_map(|len| {
            let path = packed(&task.path[..len]);
            history.below(path).map(|nodes| (path, nodes))
        });
        if let Some((path, nodes)) = measured.filter(|(path, _)| !above_measured.contains(path)) {
            shares.entry(path).or_insert((nodes, 0)).1 += 1;
            *ancestor = Some(path);
        }
    }
    for (size, ancestor) in sizes.iter_mut().zip(ancestors) {
        if let Some(&(nodes, count)) = ancestor.and_then(|path| shares.get(&path)) {
            *size = Some(nodes / count.max(1));
        }
    }
    sizes
}

/// The children of `parent` that one thread's search follows within `bound`, in search order;
/// the least f of those over it lowers the frontier's `pruned_min_f`, and each counts in its
/// `estimates`. `Err` is a path to the goal.
fn children_within(
    solver: &Solver,
    parent: &SubtreeTask,
    bound: u32,
    frontier: &mut Frontier,
) -> Result<Vec<SubtreeTask>, Vec<Direction>> {
    let mut children = Vec::with_capacity(3);
    for (direction, child) in followed_children(solver.pruning(), &parent.board, &parent.path) {
        let h = solver.estimate(&child);
        frontier.estimates += 1;
        let f = parent.g() + 1 + h;
        if f > bound {
            frontier.pruned_min_f = frontier.pruned_min_f.min(f);
            continue;
        }
        let child = parent.child(solver, bound, direction, child, h);
        if child.board == *solver.goal() {
            return Err(child.path);
        }
        children.push(child);
    }
    children.sort_by(|a, b| a.order.cmp(&b.order));
    Ok(children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilesolve::heuristic::{HeuristicKind, TileCost};
    use tilesolve::moves::Neighbors;
    use tilesolve::search::{Bounded, Kernel, Limits};
    use tilesolve::SolveOptions;

    /// IDA* where each iteration is split by `split_next(solver, bound, sizes of the previous
    /// iteration's tasks, nodes so far)` and its subtrees searched one by one, as workers would;
    /// returns the solution length.
    fn distributed_ida(
        start: &Board,
        goal: &Board,
        mut split_next: impl FnMut(&Solver, u32, &SizeHistory, u64) -> Frontier,
    ) -> usize {
        let solver = Solver::new(*goal, HeuristicKind::Manhattan);
        let manhattan = TileCost::manhattan(goal);
        let neighbors = Neighbors::new(goal.shape());
        let mut bound = solver.estimate(start);
        let (mut history, mut nodes_so_far) = (SizeHistory::default(), 0u64);
        loop {
            let frontier = split_next(&solver, bound, &history, nodes_so_far);
            if let Some(solution) = frontier.solution {
                return solution.len();
            }
            let mut next = frontier.pruned_min_f;
            history = SizeHistory::default();
            for task in &frontier.tasks {
                let mut kernel = Kernel::new(&manhattan, &neighbors, goal, Limits::default());
                let found = kernel.search(&task.board, task.g(), task.path.last().copied(), bound);
                let nodes = kernel.counters().expanded;
                nodes_so_far += nodes;
                history.add(PackedPath::new(task.path.iter().map(|&d| d as u8)), nodes);
                match found {
                    Bounded::Found(suffix) => {
                        let mut moves = task.path.clone();
                        moves.extend(suffix);
                        tilesolve::moves::replay(start, goal, &moves).expect("a real solution");
                        return moves.len();
                    }
                    Bounded::Exceeded { next_bound } => next = next.min(next_bound),
                    Bounded::Aborted(abort) => panic!("no limits were set: {abort:?}"),
                }
            }
            bound = next;
        }
    }

    #[test]
    fn split_iterations_find_the_optimal_length() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for walk in [8usize, 20, 30, 40] {
            let mut board = goal;
            for _ in 0..walk {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if let Some((next, _)) = board.apply(Direction::ALL[(rng % 4) as usize]) {
                    board = next;
                }
            }
            let optimal = solver
                .solve(&board, &SolveOptions::default(), None)
                .unwrap()
                .len();
            for depth in [0, 1, 4, 10] {
                assert_eq!(
                    distributed_ida(&board, &goal, |solver, bound, _, _| split(
                        &board, solver, bound, depth
                    )),
                    optimal,
                    "{board} split at depth {depth}"
                );
            }
        }
    }

    /// [`distributed_ida`] with every iteration split by `split_balanced` from the sizes the
    /// previous iteration's tasks measured, as the scheduler does.
    fn balanced_ida(start: &Board, goal: &Board) -> usize {
        let params = BalanceParams {
            threads: 4,
            connected_threads: 4,
            tasks_per_thread: 50,
            balance: 8,
            min_split_nodes: 1,
            min_split_nodes_per_thread: 0,
            max_depth: MAX_SPLIT_DEPTH,
            seconds_per_node: 0.0,
            min_mean_task_seconds: 0.0,
        };
        distributed_ida(start, goal, |solver, bound, history, nodes_so_far| {
            split_balanced(start, solver, bound, history, nodes_so_far, params, &|_| {
                true
            })
        })
    }

    /// The first three of Korf's 100 15-puzzles, each with its optimal length (solved here with
    /// `solver`).
    fn three_korf_boards(solver: &Solver) -> Vec<(Board, usize)> {
        let text = include_str!("../../tests/data/korf100-blank-last.txt");
        let boards = text.lines().filter(|l| !l.starts_with('#')).take(3);
        boards
            .map(|line| {
                let board = tilesolve::parse_board(line.split(" # ").next().unwrap()).unwrap();
                let optimal = solver
                    .solve(&board, &SolveOptions::default(), None)
                    .unwrap();
                (board, optimal.len())
            })
            .collect()
    }

    #[test]
    fn balanced_splits_find_the_optimal_length() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        for (board, optimal) in three_korf_boards(&solver) {
            assert_eq!(balanced_ida(&board, &goal), optimal, "{board}");
        }
    }

    /// A task searches on average at least the coordinator's time for it over
    /// [`COORDINATOR_SHARE`], however few the threads; with many threads the coordinator's
    /// load is the tighter limit.
    #[test]
    fn tasks_are_long_enough_to_keep_the_coordinator_within_its_share() {
        let per_task = 90e-6;
        for threads in [1, 15, 100] {
            let shortest = min_mean_task_seconds(threads, per_task);
            assert!((shortest - 9e-3).abs() < 1e-12, "{threads}: {shortest}");
        }
        let shortest = min_mean_task_seconds(1_024, per_task);
        assert!((shortest - 1_024.0 * per_task).abs() < 1e-12, "{shortest}");
        // An iteration predicted at a second of a thread's search (ten million nodes at 0.1 us)
        // gets at most a task per 9 ms of it, whatever the balance asks for fifteen threads.
        let params = BalanceParams {
            threads: 15,
            connected_threads: 15,
            tasks_per_thread: 200,
            balance: 16,
            min_split_nodes: 1,
            min_split_nodes_per_thread: 0,
            max_depth: MAX_SPLIT_DEPTH,
            seconds_per_node: 1e-7,
            min_mean_task_seconds: min_mean_task_seconds(15, per_task),
        };
        assert_eq!(params.most_tasks(1e7), 111);
    }

    #[test]
    fn an_iteration_is_split_for_twice_its_share_of_the_threads() {
        assert_eq!(iteration_threads(15, 1), 15, "alone: every thread");
        assert_eq!(iteration_threads(15, 5), 6);
        assert_eq!(iteration_threads(15, 16), 2);
        assert_eq!(iteration_threads(15, 1_000), 1, "never none");
        assert_eq!(iteration_threads(0, 0), 1);
    }

    /// A split for `threads` of sixteen connected, balanced four tasks a thread, and not held
    /// back by a smallest split or the coordinator's time a task.
    fn uncapped(threads: usize) -> BalanceParams {
        BalanceParams {
            threads,
            connected_threads: 16,
            tasks_per_thread: 200,
            balance: 4,
            min_split_nodes: 1,
            min_split_nodes_per_thread: 0,
            max_depth: MAX_SPLIT_DEPTH,
            seconds_per_node: 0.0,
            min_mean_task_seconds: 0.0,
        }
    }

    /// The first split of a puzzle whose whole-puzzle task measured its last iteration (one
    /// short of the goal's, searched whole): every task gets its measured size or a share of its
    /// measured ancestor's (the frontier goes deeper than the parts in places), and the largest
    /// subtrees are split finer than a uniform frontier leaves them, so the longest task is far
    /// shorter.
    #[test]
    fn a_first_split_is_balanced_by_the_whole_tasks_measured_iteration() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let (board, _) = three_korf_boards(&solver)[0];
        let whole = tilesolve::task::run_task(
            &solver,
            tilesolve::task::Work {
                board: &board,
                path: &[],
                bound: 0,
                iterate: true,
                node_budget: 300_000,
                // The default record depth (`SchedulerConfig::profile_depth`).
                profile_depth: 4,
                weighted: None,
            },
            None,
        );
        let tilesolve::task::TaskOutcome::BudgetSpent(bound) = whole.outcome else {
            panic!("{:?}", whole.outcome);
        };
        let mut measured = SizeHistory::default();
        for part in &whole.parts {
            measured.add(packed(&part.moves), part.expanded);
        }
        let params = uncapped(16);
        let longest = |history: &SizeHistory| {
            let frontier = split_iteration(
                &board,
                &solver,
                bound,
                history,
                whole.nodes,
                params,
                &|_| true,
            );
            assert!(frontier.solution.is_none());
            let sizes: Vec<u64> = frontier
                .tasks
                .iter()
                .map(|task| {
                    let (_, counters) =
                        solver.search_subtree(&task.board, &task.path, bound, Limits::default());
                    counters.expanded
                })
                .collect();
            (frontier, sizes.into_iter().max().unwrap_or(0))
        };
        let (balanced, longest_balanced) = longest(&measured);
        let predicted: u64 = balanced.tasks.iter().map(|task| task.predicted).sum();
        let grown = whole.parts.iter().map(|part| part.expanded).sum::<u64>() * 2;
        assert!(predicted > grown, "every task has its share: {predicted}");
        assert!(
            balanced.tasks.iter().any(|task| task.g() > 4),
            "in places finer than the parts"
        );
        let (_, longest_uniform) = longest(&SizeHistory::default());
        assert!(
            longest_balanced * 2 < longest_uniform,
            "{longest_balanced} against {longest_uniform}"
        );
    }

    /// With nothing measured, the first split makes no more tasks than the balance asks of the
    /// threads it is for (the frontier holds whole depths, so up to a depth's more), however
    /// much work came before it.
    #[test]
    fn a_first_split_is_sized_for_its_threads() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let (board, _) = three_korf_boards(&solver)[0];
        let tasks = |threads: usize| {
            let params = uncapped(threads);
            let history = SizeHistory::default();
            split_iteration(&board, &solver, 50, &history, 1 << 30, params, &|_| true)
                .tasks
                .len()
        };
        let (one, sixteen) = (tasks(1), tasks(16));
        assert!((4..12).contains(&one), "{one}");
        assert!((64..192).contains(&sixteen), "{sixteen}");
    }

    #[test]
    fn duplicates_are_removed_and_tasks_come_in_search_order() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::Manhattan);
        let board = tilesolve::parse_board("2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10").unwrap();
        let frontier = split(&board, &solver, 60, 12);
        let mut boards: Vec<_> = frontier.tasks.iter().map(|t| t.board).collect();
        boards.sort_by_key(|b| b.to_string());
        boards.dedup();
        assert_eq!(boards.len(), frontier.tasks.len(), "each board once");
        assert!(
            frontier.tasks.windows(2).all(|w| w[0].order < w[1].order),
            "search order"
        );
        assert!(frontier.tasks.iter().all(|t| t.g() == 12));
        assert!(
            frontier
                .tasks
                .iter()
                .all(|t| solver.pruning().state_after(&t.path) != tilesolve::search::pruning::DEAD),
            "no path one thread's search never follows"
        );
    }

    /// The iteration that holds the goal, split and searched task by task in the order they
    /// are queued, meets the goal having expanded about what one thread's search of the same
    /// iteration does: the same subtrees in the same order with the same pruning, less the
    /// boards the split found twice, plus the rare subtree the pruning closes, searched again
    /// afresh for its next bound (`Solver::search_subtree`): at most 1% in all.
    #[test]
    fn a_split_last_iteration_costs_no_more_than_one_thread() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        for (board, optimal) in three_korf_boards(&solver) {
            let optimal = optimal as u32;
            let (whole, counters) = solver.search_subtree(&board, &[], optimal, Limits::default());
            assert!(matches!(whole, Bounded::Found(_)));
            for depth in [4, 8, 12] {
                let frontier = split(&board, &solver, optimal, depth);
                let mut expanded = 0;
                let found = frontier.tasks.iter().find_map(|task| {
                    let (outcome, spent) =
                        solver.search_subtree(&task.board, &task.path, optimal, Limits::default());
                    expanded += spent.expanded;
                    match outcome {
                        Bounded::Found(suffix) => Some(task.path.len() + suffix.len()),
                        _ => None,
                    }
                });
                assert_eq!(found, Some(optimal as usize), "{board} at depth {depth}");
                assert!(
                    expanded <= counters.expanded + counters.expanded / 100,
                    "{board} at depth {depth}: {expanded} nodes split, {} in one search",
                    counters.expanded
                );
            }
        }
    }
}
