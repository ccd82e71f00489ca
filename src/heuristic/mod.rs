//! Admissible estimates of the moves left to the goal.
//!
//! Every heuristic here is admissible, which is what makes the first solution IDA* finds optimal.
//! Hamming, Manhattan and linear conflict are also *consistent* (they change by at most one per
//! move); the additive pattern databases (the `pdb` module) are not. Both properties are checked
//! exhaustively on 3x3 in the tests.

mod linear_conflict;
mod tile_cost;
mod weighted;

use std::fmt;
use std::str::FromStr;

pub use linear_conflict::LinearConflict;
pub use tile_cost::TileCost;
pub use weighted::{Weight, Weighted};

use crate::board::Position;

/// An admissible estimate that the kernel can update move by move.
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
    fn after_move(
        &self,
        position: &Position,
        state: Self::State,
        tile: u8,
        from: usize,
        to: usize,
    ) -> Self::State;

    /// What [`Heuristic::prefetch_child`] worked out for a child and hands on to its
    /// [`Heuristic::after_move_within`], so that a read is located once (`()` when nothing is).
    type Probe: Copy + Default;

    /// Whether [`Heuristic::prefetch_child`] does anything (the kernel skips the calls if not).
    const PREFETCHES: bool = false;

    /// Asks for the memory the child's first check in [`Heuristic::after_move_within`] will read,
    /// without waiting for it, so that the reads of a node's children overlap, and returns where
    /// that read is. `position` and `state` are the parent's; the child is `tile` slid from cell
    /// `from` onto the blank's cell `to`.
    #[inline(always)]
    fn prefetch_child(
        &self,
        _position: &Position,
        _state: Self::State,
        _tile: u8,
        _from: usize,
        _to: usize,
    ) -> Self::Probe {
        Self::Probe::default()
    }

    /// [`Heuristic::after_move`] for a search that keeps the child only when its estimate is at
    /// most `limit`: the child's state and estimate when it is, else a lower bound over `limit`
    /// on the estimate. A heuristic that is a maximum of several terms may stop at the first
    /// term over the limit, so the bound can fall short of the estimate itself. `probe` is what
    /// [`Heuristic::prefetch_child`] returned for this child (the default when it was not called).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn after_move_within(
        &self,
        position: &Position,
        state: Self::State,
        tile: u8,
        from: usize,
        to: usize,
        limit: u32,
        _probe: Self::Probe,
    ) -> Result<(Self::State, u32), u32> {
        let child = self.after_move(position, state, tile, from, to);
        let h = self.value(child);
        if h <= limit {
            Ok((child, h))
        } else {
            Err(h)
        }
    }

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
    pub const ALL: [HeuristicKind; 3] = [
        HeuristicKind::Hamming,
        HeuristicKind::Manhattan,
        HeuristicKind::LinearConflict,
    ];

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
