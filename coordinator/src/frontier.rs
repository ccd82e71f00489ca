//! Splitting one IDA* iteration into subtree tasks (DESIGN.md, "Correctness of the distributed
//! search").
//!
//! From the puzzle's root the tree is expanded breadth-first to a fixed depth. A board reached
//! again at the same or a greater depth is dropped: the earlier copy's subtree has at least as
//! much of the bound left, so it contains everything the later one would find. Nodes with
//! g + h over the bound are pruned (their f feeds the next bound). Every surviving node at the
//! frontier depth becomes a task that searches its subtree under the same bound, so the first
//! solution any task finds is optimal.

use std::collections::HashMap;

use tilesolve::{Board, Direction, Solver};

/// One subtree to search under the iteration's bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtreeTask {
    pub board: Board,
    /// Moves from the puzzle's root to `board`; its length is the node's depth g.
    pub path: Vec<Direction>,
    /// The heuristic's estimate of `board`.
    pub h: u32,
}

impl SubtreeTask {
    pub fn g(&self) -> u32 {
        self.path.len() as u32
    }
}

/// An iteration split into tasks.
#[derive(Clone, Debug, Default)]
pub struct Frontier {
    /// Subtrees to search, by increasing h: in the iteration that holds the solution, the
    /// subtrees that look closest to the goal are searched first.
    pub tasks: Vec<SubtreeTask>,
    /// A goal met above the frontier depth: the shallowest, hence optimal, solution.
    pub solution: Option<Vec<Direction>>,
    /// The smallest f over the bound among pruned nodes (`u32::MAX` if none).
    pub pruned_min_f: u32,
    /// Boards dropped because they were reached before at the same or a smaller depth.
    pub duplicates: u64,
}

/// Splits the iteration with `bound` of the puzzle `root` into subtrees at `depth`.
pub fn split(root: &Board, solver: &Solver, bound: u32, depth: u32) -> Frontier {
    let goal = solver.goal();
    let mut frontier = Frontier {
        pruned_min_f: u32::MAX,
        ..Frontier::default()
    };
    let root_h = solver.estimate(root);
    if root_h > bound {
        frontier.pruned_min_f = root_h;
        return frontier;
    }
    let mut seen: HashMap<Board, u32> = HashMap::from([(*root, 0)]);
    let mut level = vec![SubtreeTask {
        board: *root,
        path: Vec::new(),
        h: root_h,
    }];
    for g in 0..depth {
        if let Some(node) = level.iter().find(|node| node.board == *goal) {
            frontier.solution = Some(node.path.clone());
            return frontier;
        }
        let mut next = Vec::with_capacity(level.len() * 2);
        for node in &level {
            let last = node.path.last().copied();
            for direction in Direction::ALL {
                if last == Some(direction.opposite()) {
                    continue;
                }
                let Some((child, _)) = node.board.apply(direction) else {
                    continue;
                };
                if seen.contains_key(&child) {
                    frontier.duplicates += 1;
                    continue;
                }
                let h = solver.estimate(&child);
                let f = g + 1 + h;
                if f > bound {
                    frontier.pruned_min_f = frontier.pruned_min_f.min(f);
                    continue;
                }
                seen.insert(child, g + 1);
                let mut path = node.path.clone();
                path.push(direction);
                next.push(SubtreeTask {
                    board: child,
                    path,
                    h,
                });
            }
        }
        level = next;
    }
    if let Some(node) = level.iter().find(|node| node.board == *goal) {
        frontier.solution = Some(node.path.clone());
        return frontier;
    }
    level.sort_by_key(|node| node.h);
    frontier.tasks = level;
    frontier
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilesolve::heuristic::{HeuristicKind, TileCost};
    use tilesolve::moves::Neighbors;
    use tilesolve::search::{Bounded, Kernel, Limits};
    use tilesolve::SolveOptions;

    /// IDA* where each iteration is split at `depth` and its subtrees searched one by one, as
    /// workers would; returns the solution length.
    fn distributed_ida(start: &Board, goal: &Board, depth: u32) -> usize {
        let solver = Solver::new(*goal, HeuristicKind::Manhattan);
        let manhattan = TileCost::manhattan(goal);
        let neighbors = Neighbors::new(goal.side());
        let mut bound = solver.estimate(start);
        loop {
            let frontier = split(start, &solver, bound, depth);
            if let Some(solution) = frontier.solution {
                return solution.len();
            }
            let mut next = frontier.pruned_min_f;
            for task in &frontier.tasks {
                let mut kernel = Kernel::new(&manhattan, &neighbors, goal, Limits::default());
                match kernel.search(&task.board, task.g(), task.path.last().copied(), bound) {
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
                    distributed_ida(&board, &goal, depth),
                    optimal,
                    "{board} split at depth {depth}"
                );
            }
        }
    }

    #[test]
    fn duplicates_are_removed_and_tasks_ordered_by_h() {
        let goal = Board::blank_last(4);
        let solver = Solver::new(goal, HeuristicKind::Manhattan);
        let board = tilesolve::parse_board("2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10").unwrap();
        let frontier = split(&board, &solver, 60, 12);
        assert!(frontier.duplicates > 0, "depth 12 revisits boards");
        let mut boards: Vec<_> = frontier.tasks.iter().map(|t| t.board).collect();
        boards.sort_by_key(|b| b.to_string());
        boards.dedup();
        assert_eq!(boards.len(), frontier.tasks.len(), "each board once");
        assert!(frontier.tasks.windows(2).all(|w| w[0].h <= w[1].h));
        assert!(frontier.tasks.iter().all(|t| t.g() == 12));
    }
}
