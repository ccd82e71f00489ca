//! A subtree search that also measures its parts: the same search as one [`Kernel::search`]
//! call, run as one kernel search per descendant at a fixed depth below the subtree's root, so
//! each descendant's size and time are known.
//!
//! The coordinator records these sizes so a run can be replayed with more (virtual) workers than
//! it had: a finer split of the same iteration is a union of these descendants. Searching the
//! descendants one by one visits exactly the nodes the single search would, in the same order
//! (the interior is walked here in the kernel's order), so the outcome and the node count
//! are the same; the cost is one kernel restart per descendant.
//!
//! The descendants are also where a search can stop and hand its unsearched work back
//! ([`super::Limits::hand_back`]): the one being searched when asked is given up and handed back
//! whole, and so is every descendant and interior subtree after it, each by its path; what was
//! searched before stays searched ([`Profiled::handed_back`]).

use std::time::Instant;

use super::pruning::DEAD;
use super::{Abort, Bounded, Counters, Kernel};
use crate::board::Board;
use crate::direction::Direction;
use crate::heuristic::Heuristic;

/// One measured descendant of a subtree task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartSize {
    /// Moves from the task's board to this descendant.
    pub moves: Vec<Direction>,
    /// Nodes its search expanded.
    pub expanded: u64,
    /// Wall time of its search, in microseconds.
    pub micros: u64,
}

/// What a profiled search found, with its counters and measured parts (in search order; after a
/// goal or an abort, the parts not reached are absent).
pub struct Profiled {
    /// With work handed back, what the rest found: no goal, and the least f over the bound
    /// there (`u32::MAX`: none).
    pub outcome: Bounded,
    pub counters: Counters,
    pub parts: Vec<PartSize>,
    /// Asked to hand back: the moves from the subtree's root to each subtree it did not search
    /// (each within the bound, none below another, in search order). Empty otherwise.
    pub handed_back: Vec<Vec<Direction>>,
}

/// The root of a subtree search: a board reached at cost `g` by the move `last`, with the
/// pruning machine in state `machine`.
#[derive(Clone, Copy, Debug)]
pub struct SubtreeRoot<'a> {
    pub board: &'a Board,
    pub g: u32,
    pub last: Option<Direction>,
    pub machine: u32,
}

/// Searches the subtree below `root` under `bound`, as [`Kernel::search`] would, measuring each
/// descendant `depth` moves below it. `estimate` is the kernel's heuristic on a whole board
/// (used for the few interior nodes).
pub fn profiled_search<H: Heuristic>(
    kernel: &mut Kernel<'_, H>,
    estimate: &dyn Fn(&Board) -> u32,
    goal: &Board,
    root: SubtreeRoot<'_>,
    bound: u32,
    depth: u32,
) -> Profiled {
    let SubtreeRoot {
        board,
        g,
        last,
        machine,
    } = root;
    let mut walk = Walk {
        kernel,
        estimate,
        goal,
        bound,
        depth,
        interior: Counters::default(),
        next_bound: u32::MAX,
        moves: Vec::with_capacity(depth as usize),
        parts: Vec::new(),
        handed_back: Vec::new(),
    };
    let before = walk.kernel.counters();
    let h = estimate(board);
    let outcome = if g + h > bound {
        Bounded::Exceeded { next_bound: g + h }
    } else {
        match walk.visit(board, g, h, last, machine) {
            Some(stop) => stop,
            None => Bounded::Exceeded {
                next_bound: walk.next_bound,
            },
        }
    };
    let after = walk.kernel.counters();
    let mut counters = walk.interior;
    counters.expanded += after.expanded - before.expanded;
    counters.generated += after.generated - before.generated;
    Profiled {
        outcome,
        counters,
        parts: walk.parts,
        handed_back: walk.handed_back,
    }
}

struct Walk<'k, 'a, H: Heuristic> {
    kernel: &'k mut Kernel<'a, H>,
    estimate: &'k dyn Fn(&Board) -> u32,
    goal: &'k Board,
    bound: u32,
    depth: u32,
    /// Nodes expanded and generated above the measured descendants.
    interior: Counters,
    next_bound: u32,
    moves: Vec<Direction>,
    parts: Vec<PartSize>,
    /// Once non-empty, the walk is handing back: every node it visits is handed back unsearched.
    handed_back: Vec<Vec<Direction>>,
}

impl<H: Heuristic> Walk<'_, '_, H> {
    /// Visits a node within the bound; `Some` ends the search (a goal, with the moves from the
    /// task's board, or an abort).
    fn visit(
        &mut self,
        board: &Board,
        g: u32,
        h: u32,
        last: Option<Direction>,
        machine: u32,
    ) -> Option<Bounded> {
        if !self.handed_back.is_empty() {
            self.handed_back.push(self.moves.clone());
            return None;
        }
        if self.moves.len() as u32 == self.depth {
            return self.measure(board, g, last, machine);
        }
        if board == self.goal {
            return Some(Bounded::Found(self.moves.clone()));
        }
        self.interior.expanded += 1;
        let mut kept = Vec::with_capacity(3);
        for direction in Direction::ALL {
            if last == Some(direction.opposite()) {
                continue;
            }
            let Some((child, _)) = board.apply(direction) else {
                continue;
            };
            let child_machine = self.kernel.pruning().next(machine, direction as usize);
            if child_machine == DEAD {
                continue;
            }
            self.interior.generated += 1;
            let child_h = (self.estimate)(&child);
            let f = g + 1 + child_h;
            if f > self.bound {
                self.next_bound = self.next_bound.min(f);
                continue;
            }
            kept.push((direction, child, child_h, child_machine));
        }
        // In the kernel's order: see `Kernel::best_first`.
        if self.kernel.best_first(self.bound, g, h) {
            kept.sort_by_key(|&(_, _, child_h, _)| child_h);
        }
        for (direction, child, child_h, child_machine) in kept {
            self.moves.push(direction);
            let stop = self.visit(&child, g + 1, child_h, Some(direction), child_machine);
            self.moves.pop();
            if stop.is_some() {
                return stop;
            }
        }
        None
    }

    fn measure(
        &mut self,
        board: &Board,
        g: u32,
        last: Option<Direction>,
        machine: u32,
    ) -> Option<Bounded> {
        if self.kernel.hand_back_asked() {
            self.handed_back.push(self.moves.clone());
            return None;
        }
        let started = Instant::now();
        let before = self.kernel.counters().expanded;
        let outcome = self.kernel.search_from(board, g, last, machine, self.bound);
        if outcome == Bounded::Aborted(Abort::HandBack) {
            // Given up part way: handed back whole, its nodes spent for nothing.
            self.handed_back.push(self.moves.clone());
            return None;
        }
        self.parts.push(PartSize {
            moves: self.moves.clone(),
            expanded: self.kernel.counters().expanded - before,
            micros: started.elapsed().as_micros() as u64,
        });
        match outcome {
            Bounded::Exceeded { next_bound } => {
                self.next_bound = self.next_bound.min(next_bound);
                None
            }
            Bounded::Found(suffix) => {
                let mut moves = self.moves.clone();
                moves.extend(suffix);
                Some(Bounded::Found(moves))
            }
            Bounded::Aborted(abort) => Some(Bounded::Aborted(abort)),
        }
    }
}
