//! Admissible estimates of the moves left to the goal.
//!
//! Every heuristic here is *consistent* (it changes by at most one per move), which IDA* relies on
//! for the distributed search's "every live subtree reports T + 2" argument, and admissible, which
//! is what makes the first solution IDA* finds optimal. Both are checked exhaustively on 3x3 in
//! the tests.

mod linear_conflict;
mod tile_cost;

use std::fmt;
use std::str::FromStr;

pub use linear_conflict::LinearConflict;
pub use tile_cost::TileCost;

use crate::board::{Board, Position};

/// An admissible, consistent estimate that the kernel can update move by move.
///
/// The kernel keeps one `State` per node on its stack (for most heuristics just the value; for
/// pattern databases the per-pattern terms) so that a move only recomputes what it changed.
pub trait Heuristic: Send + Sync {
    type State: Copy;

    /// The state for a whole board.
    fn init(&self, position: &Position) -> Self::State;

    /// The estimate a state stands for.
    fn value(&self, state: Self::State) -> u32;

    /// The state after `tile` moved from cell `from` to cell `to`. `position` already shows the
    /// move and `state` is the one before it.
    fn after_move(&self, position: &Position, state: Self::State, tile: u8, from: usize, to: usize) -> Self::State;

    /// The estimate for a whole board.
    fn estimate(&self, position: &Position) -> u32 {
        self.value(self.init(position))
    }
}

/// The heuristics a user can choose by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeuristicKind {
    Hamming,
    Manhattan,
    LinearConflict,
}

impl HeuristicKind {
    pub const ALL: [HeuristicKind; 3] = [HeuristicKind::Hamming, HeuristicKind::Manhattan, HeuristicKind::LinearConflict];

    pub fn name(self) -> &'static str {
        match self {
            HeuristicKind::Hamming => "hamming",
            HeuristicKind::Manhattan => "manhattan",
            HeuristicKind::LinearConflict => "linear-conflict",
        }
    }
}

impl fmt::Display for HeuristicKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown heuristic name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown heuristic '{0}' (known: hamming, manhattan, linear-conflict)")]
pub struct UnknownHeuristic(pub String);

impl FromStr for HeuristicKind {
    type Err = UnknownHeuristic;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        HeuristicKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| UnknownHeuristic(name.to_string()))
    }
}

/// A built heuristic of any kind, for code that picks one at run time. The solver matches on it
/// once per search so the kernel itself is compiled per heuristic, with no dynamic dispatch.
#[derive(Clone, Debug)]
pub enum AnyHeuristic {
    TileCost(Box<TileCost>),
    LinearConflict(Box<LinearConflict>),
}

impl AnyHeuristic {
    /// Builds the tables of `kind` for `goal`.
    pub fn build(kind: HeuristicKind, goal: &Board) -> AnyHeuristic {
        match kind {
            HeuristicKind::Hamming => AnyHeuristic::TileCost(Box::new(TileCost::hamming(goal))),
            HeuristicKind::Manhattan => AnyHeuristic::TileCost(Box::new(TileCost::manhattan(goal))),
            HeuristicKind::LinearConflict => AnyHeuristic::LinearConflict(Box::new(LinearConflict::new(goal))),
        }
    }

    pub fn estimate(&self, board: &Board) -> u32 {
        let position = Position::new(board);
        match self {
            AnyHeuristic::TileCost(h) => h.estimate(&position),
            AnyHeuristic::LinearConflict(h) => h.estimate(&position),
        }
    }
}
