//! The hot kernel: a bounded depth-first search that makes and unmakes moves in place on one
//! padded [`Position`], updates the heuristic incrementally, never generates the child that undoes
//! the previous move, and allocates nothing per node.
//!
//! [`Kernel::search`] explores one subtree under one bound: that is both an IDA* iteration (root
//! at g = 0) and a distributed subtree task (a frontier node at depth g). [`ida_star`] is the
//! iteration loop around it.

use crate::board::{Board, PaddedTiles, Position};
use crate::direction::Direction;
use crate::heuristic::Heuristic;
use crate::moves::{Neighbors, NO_CELL};
use crate::search::pruning::{MovePruning, DEAD, START};
use crate::search::{
    profiled_search, Abort, Counters, Limits, PartSize, SubtreeRoot, CHECK_INTERVAL,
};

/// Longest path the kernel records. Optimal solutions are far shorter (80 moves at most on 4x4,
/// about 210 on 5x5); a bound beyond this is refused by [`Kernel::search`].
pub const MAX_DEPTH: usize = 256;

/// A node whose f is at least this far under the bound evaluates all its children before it
/// searches any, and searches them lowest estimate first. In the iteration that holds the goal
/// that meets it sooner (with the default heuristics, one thread: Korf-24 #40, 38, 25, 44, 28
/// 24% fewer expanded, hard80 10%, Korf-100 3%); in the others it changes only the order. Nearer
/// the bound, where most nodes are, the subtrees are too small to pay for the extra pass over the
/// children (ordering every node cost hard80 15% of its node rate), so children go in move
/// order. Slacks of 2, 4 and 6 expanded the same within 0.01% (docs/benchmarks/history.md).
const ORDER_SLACK: u32 = 4;

/// How far under the bound a node must be to take its children best first, under `pruning`:
/// [`ORDER_SLACK`], or never (`u32::MAX`) where the machine keeps Korf's move order.
fn order_slack(pruning: &MovePruning) -> u32 {
    if pruning.orders_children() {
        ORDER_SLACK
    } else {
        u32::MAX
    }
}

/// Where one thread's search under `pruning` meets the child reached by `direction`, whose
/// estimate is `child_h`, of a parent met at `parent_order` (at cost `g`, estimate `h`, under
/// `bound`): the parent's place, then the child's among its siblings, which is its estimate
/// (when the parent takes its children best first) and then its direction. Places compared as
/// bytes are in search order, so the coordinator queues subtrees by them.
pub fn child_order(
    pruning: &MovePruning,
    parent_order: &[u8],
    (bound, g, h): (u32, u32, u32),
    child_h: u32,
    direction: Direction,
) -> Vec<u8> {
    let best_first = bound.saturating_sub(g + h) >= order_slack(pruning);
    let estimate = if best_first {
        child_h.min(255) as u8
    } else {
        0
    };
    let mut order = Vec::with_capacity(parent_order.len() + 2);
    order.extend_from_slice(parent_order);
    order.extend([estimate, direction as u8]);
    order
}

/// "No previous move": no direction `d` satisfies `d + NO_MOVE == 3`.
const NO_MOVE: usize = 4;

/// How one bounded search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bounded {
    /// A goal within the bound: the moves from the subtree's root to it.
    Found(Vec<Direction>),
    /// No goal within the bound; the smallest f over it (`u32::MAX` when nothing exceeded it,
    /// i.e. the subtree is finite and goal-free, which cannot happen on a solvable board).
    Exceeded {
        next_bound: u32,
    },
    Aborted(Abort),
}

/// A reusable searcher for one heuristic, goal and set of limits.
pub struct Kernel<'a, H: Heuristic> {
    heuristic: &'a H,
    neighbors: &'a Neighbors,
    pruning: &'a MovePruning,
    goal: PaddedTiles,
    limits: Limits<'a>,
    position: Position,
    path: [u8; MAX_DEPTH],
    bound: u32,
    /// Depth of the goal once one is found.
    solution_depth: u32,
    next_bound: u32,
    counters: Counters,
    next_check: u64,
    abort: Option<Abort>,
    /// Nodes at least this far under the bound search their children lowest estimate first
    /// (`u32::MAX`: never, the move order of Korf's 1985 counts).
    order_slack: u32,
}

impl<'a, H: Heuristic> Kernel<'a, H> {
    pub fn new(
        heuristic: &'a H,
        neighbors: &'a Neighbors,
        goal: &Board,
        limits: Limits<'a>,
    ) -> Self {
        Kernel {
            heuristic,
            neighbors,
            pruning: MovePruning::none(),
            goal: goal.padded(),
            limits,
            position: Position::new(goal),
            path: [0; MAX_DEPTH],
            bound: 0,
            solution_depth: 0,
            next_bound: u32::MAX,
            counters: Counters::default(),
            next_check: CHECK_INTERVAL,
            abort: None,
            order_slack: u32::MAX,
        }
    }

    /// Skips the move sequences `pruning` forbids (by default only the undo of the last move).
    pub fn with_pruning(mut self, pruning: &'a MovePruning) -> Self {
        self.pruning = pruning;
        self.order_slack = order_slack(pruning);
        self
    }

    /// The pruning machine this kernel follows.
    pub fn pruning(&self) -> &'a MovePruning {
        self.pruning
    }

    /// Whether its limits ask it to hand its unsearched work back.
    pub fn hand_back_asked(&self) -> bool {
        self.limits
            .hand_back
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Nodes counted over every search this kernel has run.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Searches the subtree below `board`, reached at cost `g` by the move `last` (`None` at the
    /// puzzle's root), for a goal with f = g + moves <= `bound`.
    pub fn search(
        &mut self,
        board: &Board,
        g: u32,
        last: Option<Direction>,
        bound: u32,
    ) -> Bounded {
        self.search_from(board, g, last, START, bound)
    }

    /// [`Kernel::search`] with the pruning machine in `state` at `board` (the state its path
    /// from the subtree's root led to, when this search is part of a larger one).
    pub fn search_from(
        &mut self,
        board: &Board,
        g: u32,
        last: Option<Direction>,
        state: u32,
        bound: u32,
    ) -> Bounded {
        if bound as usize >= MAX_DEPTH {
            return Bounded::Exceeded { next_bound: bound };
        }
        if let Some(abort) = self
            .abort
            .or_else(|| self.limits.exceeded(self.counters.expanded))
        {
            self.abort = Some(abort);
            return Bounded::Aborted(abort);
        }
        self.position = Position::new(board);
        let machine = state;
        let state = self.heuristic.init(&self.position);
        let h = self.heuristic.value(state);
        if g + h > bound {
            return Bounded::Exceeded { next_bound: g + h };
        }
        self.bound = bound;
        self.next_bound = u32::MAX;
        let last = last.map_or(NO_MOVE, |d| d as usize);
        if self.dfs(board.blank(), g, state, h, last, machine) {
            if let Some(abort) = self.abort {
                return Bounded::Aborted(abort);
            }
            let moves = &self.path[g as usize..self.solution_depth as usize];
            return Bounded::Found(moves.iter().map(|&d| Direction::from_index(d)).collect());
        }
        Bounded::Exceeded {
            next_bound: self.next_bound,
        }
    }

    /// Returns true when the search must stop: a goal was found (the path holds it) or a limit
    /// was hit (`self.abort` says which).
    fn dfs(
        &mut self,
        blank: usize,
        g: u32,
        state: H::State,
        h: u32,
        last: usize,
        machine: u32,
    ) -> bool {
        if h == 0 && self.position.tiles == self.goal {
            self.solution_depth = g;
            return true;
        }
        self.counters.expanded += 1;
        if self.counters.expanded >= self.next_check && self.poll_limits() {
            return true;
        }
        // Children are kept when h <= limit. A node at the bound itself (only a heuristic that is
        // zero off the goal lets one in) has no child within it.
        let Some(limit) = self.bound.checked_sub(g + 1) else {
            self.next_bound = self.next_bound.min(g + 1);
            return false;
        };
        let neighbors = *self.neighbors.of(blank);
        // The children's pruning states, each looked up once (the machine is larger than L1).
        let mut machines = [DEAD; 4];
        for (direction, &next) in neighbors.iter().enumerate() {
            if next != NO_CELL && direction + last != 3 {
                machines[direction] = self.pruning.next(machine, direction);
            }
        }
        let mut probes = [H::Probe::default(); 4];
        if H::PREFETCHES {
            for (direction, &next) in neighbors.iter().enumerate() {
                if machines[direction] == DEAD {
                    continue;
                }
                let next = usize::from(next);
                let tile = self.position.tiles[next & 31];
                probes[direction] =
                    self.heuristic
                        .prefetch_child(&self.position, state, tile, next, blank);
            }
        }
        if self.best_first(self.bound, g, h) {
            return self
                .children_best_first(blank, g, state, limit, &neighbors, &machines, &probes);
        }
        for (direction, &next) in neighbors.iter().enumerate() {
            let child_machine = machines[direction];
            if child_machine == DEAD {
                continue;
            }
            let next = usize::from(next);
            match self.slide_within(next, blank, state, limit, probes[direction]) {
                Ok((child, h)) => {
                    self.path[g as usize & (MAX_DEPTH - 1)] = direction as u8;
                    if self.dfs(next, g + 1, child, h, direction, child_machine) {
                        return true;
                    }
                }
                Err(h) => self.next_bound = self.next_bound.min(g + 1 + h),
            }
            self.position.slide(blank, next);
        }
        false
    }

    /// Generates the child whose blank is on `next` (the position is left on it) and asks the
    /// heuristic whether it is within `limit`: its state and estimate, or the estimate over it.
    #[inline(always)]
    fn slide_within(
        &mut self,
        next: usize,
        blank: usize,
        state: H::State,
        limit: u32,
        probe: H::Probe,
    ) -> Result<(H::State, u32), u32> {
        self.counters.generated += 1;
        let tile = self.position.slide(next, blank);
        self.heuristic
            .after_move_within(&self.position, state, tile, next, blank, limit, probe)
    }

    /// Whether a node at cost `g` with estimate `h` under `bound` searches its children lowest
    /// estimate first (see [`ORDER_SLACK`]) rather than in move order.
    #[inline(always)]
    pub(crate) fn best_first(&self, bound: u32, g: u32, h: u32) -> bool {
        bound.saturating_sub(g + h) >= self.order_slack
    }

    /// The children of a node far enough under the bound: every one evaluated first, then
    /// searched lowest estimate first (ties in move order). Returns as [`Self::dfs`] does.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn children_best_first(
        &mut self,
        blank: usize,
        g: u32,
        state: H::State,
        limit: u32,
        neighbors: &[u8; 4],
        machines: &[u32; 4],
        probes: &[H::Probe; 4],
    ) -> bool {
        let mut kept: [Option<(H::State, u32)>; 4] = [None; 4];
        for (direction, &next) in neighbors.iter().enumerate() {
            if machines[direction] == DEAD {
                continue;
            }
            let next = usize::from(next);
            match self.slide_within(next, blank, state, limit, probes[direction]) {
                Ok(child) => kept[direction] = Some(child),
                Err(h) => self.next_bound = self.next_bound.min(g + 1 + h),
            }
            self.position.slide(blank, next);
        }
        let mut order = [0usize, 1, 2, 3];
        order.sort_by_key(|&direction| kept[direction].map_or(u32::MAX, |(_, h)| h));
        for direction in order {
            let Some((child, h)) = kept[direction] else {
                break;
            };
            let next = usize::from(neighbors[direction]);
            self.position.slide(next, blank);
            self.path[g as usize & (MAX_DEPTH - 1)] = direction as u8;
            if self.dfs(next, g + 1, child, h, direction, machines[direction]) {
                return true;
            }
            self.position.slide(blank, next);
        }
        false
    }

    #[cold]
    fn poll_limits(&mut self) -> bool {
        self.next_check = self.counters.expanded + CHECK_INTERVAL;
        self.abort = self.limits.exceeded(self.counters.expanded);
        self.abort.is_some()
    }
}

/// How an IDA* run ended, with the work it took.
#[derive(Clone, Debug)]
pub struct IdaOutcome {
    pub result: Result<Vec<Direction>, IdaStop>,
    pub counters: Counters,
    /// Iterations started (the last one may have been cut short).
    pub iterations: u32,
    /// The bound of the last iteration started: when it ends unsolved or aborted, no solution
    /// shorter than this exists.
    pub bound: u32,
    /// Stopped by the budget ([`ida_star_measuring_last`]): the last iteration searched to its
    /// end, measured in parts, if it was measured; empty otherwise.
    pub parts: Vec<PartSize>,
}

/// Why IDA* ended without a solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdaStop {
    Aborted(Abort),
    /// The bounded searches ran out of nodes to exceed: the goal is unreachable.
    NoSolution,
}

/// Whether the next iteration, predicted to grow over `this_iteration` as it grew over
/// `last_iteration`, would take the search past `budget` (nothing is predicted from a first
/// iteration).
fn next_would_overrun(
    expanded: u64,
    this_iteration: u64,
    last_iteration: u64,
    budget: u64,
) -> bool {
    if last_iteration == 0 {
        return false;
    }
    let growth = (this_iteration as f64 / last_iteration as f64).max(1.0);
    expanded as f64 + this_iteration as f64 * growth > budget as f64
}

/// Iterative deepening A*: bounded searches from the root with the bound raised each time to the
/// smallest f that exceeded it. With an admissible heuristic the first solution is optimal.
/// `start_bound` resumes at a bound already proven (no solution is shorter); 0 starts at h.
/// With [`Limits::whole_iterations`], a budget ends the search between iterations when it can.
pub fn ida_star<H: Heuristic>(
    heuristic: &H,
    neighbors: &Neighbors,
    pruning: &MovePruning,
    start: &Board,
    goal: &Board,
    start_bound: u32,
    limits: Limits<'_>,
) -> IdaOutcome {
    let search = (heuristic, neighbors, pruning);
    ida_star_measuring_last(search, (start, goal), start_bound, limits, 0)
}

/// The budget is taken to be this many times smaller when [`ida_star_measuring_last`] decides
/// whether the iteration about to start may be the last one it finishes: growth from one
/// iteration to the next wanders (hard80: 3-9 times), and a last iteration left unmeasured
/// leaves the split that follows it nothing to balance by, where measuring one more costs little.
const LAST_ITERATION_MARGIN: u64 = 2;

/// [`ida_star`], which with [`Limits::whole_iterations`] and a budget also measures, `depth`
/// moves below the root ([`profiled_search`]), each iteration that may be the last the budget
/// lets it finish, and returns the last one's parts when the budget stops it
/// ([`IdaOutcome::parts`]): the distributed whole-puzzle task, whose next iteration is split
/// into subtree tasks sized by them. A measured iteration expands the same nodes in the same
/// order; it costs a kernel restart per part.
pub fn ida_star_measuring_last<H: Heuristic>(
    (heuristic, neighbors, pruning): (&H, &Neighbors, &MovePruning),
    (start, goal): (&Board, &Board),
    start_bound: u32,
    limits: Limits<'_>,
    depth: u32,
) -> IdaOutcome {
    let iteration_budget = limits.max_nodes.filter(|_| limits.whole_iterations);
    let mut kernel = Kernel::new(heuristic, neighbors, goal, limits).with_pruning(pruning);
    let estimate = |board: &Board| heuristic.estimate(&Position::new(board));
    let mut bound = estimate(start).max(start_bound);
    let mut iterations = 0;
    // Nodes expanded above the measured parts (the kernel counts the rest).
    let mut interior = Counters::default();
    let expanded = |kernel: &Kernel<'_, H>, interior: &Counters| {
        kernel.counters().expanded + interior.expanded
    };
    // Expanded nodes before the iteration in progress, and in the two before it.
    let (mut before, mut last_iteration, mut earlier_iteration) = (0u64, 0u64, 0u64);
    // The parts of the last iteration searched to its end, when it was measured.
    let mut last_parts = Vec::new();
    loop {
        iterations += 1;
        let measure = depth > 0
            && iteration_budget.is_some_and(|budget| {
                may_be_last(before, (earlier_iteration, last_iteration), budget)
            });
        let searched = match measure {
            false => (kernel.search(start, 0, None, bound), Vec::new()),
            true => {
                let root = SubtreeRoot {
                    board: start,
                    g: 0,
                    last: None,
                    machine: START,
                };
                let counted = kernel.counters();
                let profiled = profiled_search(&mut kernel, &estimate, goal, root, bound, depth);
                let mut above = profiled.counters;
                above.expanded -= kernel.counters().expanded - counted.expanded;
                above.generated -= kernel.counters().generated - counted.generated;
                interior += above;
                (profiled.outcome, profiled.parts)
            }
        };
        let result = match searched.0 {
            Bounded::Found(moves) => Ok(moves),
            Bounded::Aborted(abort) => Err(IdaStop::Aborted(abort)),
            Bounded::Exceeded { next_bound }
                if next_bound == u32::MAX || next_bound as usize >= MAX_DEPTH =>
            {
                Err(IdaStop::NoSolution)
            }
            Bounded::Exceeded { next_bound } => {
                bound = next_bound;
                last_parts = searched.1;
                let expanded = expanded(&kernel, &interior);
                let this_iteration = expanded - before;
                if let Some(budget) = iteration_budget {
                    if next_would_overrun(expanded, this_iteration, last_iteration, budget) {
                        Err(IdaStop::Aborted(Abort::NodeLimit))
                    } else {
                        (before, earlier_iteration, last_iteration) =
                            (expanded, last_iteration, this_iteration);
                        continue;
                    }
                } else {
                    continue;
                }
            }
        };
        let mut counters = kernel.counters();
        counters += interior;
        let stopped_by_budget = matches!(result, Err(IdaStop::Aborted(Abort::NodeLimit)));
        return IdaOutcome {
            result,
            counters,
            iterations,
            bound,
            parts: if stopped_by_budget {
                last_parts
            } else {
                Vec::new()
            },
        };
    }
}

/// Whether the iteration about to start, after `before` expanded nodes and iterations of
/// `earlier` and then `last` nodes, may be the last a `budget` lets IDA* finish: whether, grown
/// as the last one grew, the one after it would overrun [`LAST_ITERATION_MARGIN`] times less
/// budget. Nothing is predicted before two iterations are measured.
fn may_be_last(before: u64, (earlier, last): (u64, u64), budget: u64) -> bool {
    if earlier == 0 {
        return false;
    }
    let growth = (last as f64 / earlier as f64).max(1.0);
    let this_iteration = last as f64 * growth;
    before as f64 + this_iteration * (1.0 + growth) > (budget / LAST_ITERATION_MARGIN) as f64
}
