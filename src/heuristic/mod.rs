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

use crate::board::{Board, PaddedTiles};

/// An admissible, consistent estimate that the kernel can update move by move.
pub trait Heuristic: Send + Sync {
    /// The estimate for a whole board.
    fn estimate(&self, tiles: &PaddedTiles) -> u32;

    /// The estimate after `tile` moved from cell `from` to cell `to`. `tiles` already shows the
    /// move and `h` is the estimate before it.
    fn after_move(&self, tiles: &PaddedTiles, h: u32, tile: u8, from: usize, to: usize) -> u32;
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
        let tiles = board.padded();
        match self {
            AnyHeuristic::TileCost(h) => h.estimate(&tiles),
            AnyHeuristic::LinearConflict(h) => h.estimate(&tiles),
        }
    }
}
