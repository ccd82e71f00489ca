//! Search: the bounded depth-first kernel, IDA* on top of it, and A* for comparison.
//!
//! Nothing here knows about threads, tokio or gRPC: callers pass [`Limits`] (a cancel flag, a
//! deadline, a node budget) and the kernel polls them every [`CHECK_INTERVAL`] expansions.

mod astar;
mod ida;
mod profile;
pub mod pruning;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub use astar::{a_star, AStarError};
pub use ida::{
    child_order, ida_star, ida_star_measuring_last, Bounded, IdaOutcome, IdaStop, Kernel, MAX_DEPTH,
};
pub use profile::{profiled_search, PartSize, Profiled, SubtreeRoot};
pub use pruning::{MovePruning, Pruning};

/// Expansions between two polls of the limits: rare enough to cost nothing measurable, frequent
/// enough (well under a millisecond at kernel speed) that a cancel takes effect at once.
pub const CHECK_INTERVAL: u64 = 4096;

/// Why a search stopped without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abort {
    Cancelled,
    TimeLimit,
    NodeLimit,
    /// Asked to hand its unsearched work back (see [`Limits::hand_back`]).
    HandBack,
}

/// When a search must give up. The default has no limits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits<'a> {
    pub cancel: Option<&'a AtomicBool>,
    /// Set when the search is to stop and hand back what it has not searched: only a profiled
    /// subtree search can ([`profiled_search`]); others leave it `None`.
    pub hand_back: Option<&'a AtomicBool>,
    pub deadline: Option<Instant>,
    /// Budget of expanded nodes.
    pub max_nodes: Option<u64>,
    /// With `max_nodes`, IDA* also stops between iterations, before one predicted (by the
    /// growth of the last two) to overrun the budget: the distributed whole-puzzle task, whose
    /// unfinished iteration would be searched again as subtree tasks, so work spent on it
    /// would be lost.
    pub whole_iterations: bool,
}

impl Limits<'_> {
    /// The reason to stop now, if any, after `expanded` expansions.
    pub fn exceeded(&self, expanded: u64) -> Option<Abort> {
        if self.cancel.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
            return Some(Abort::Cancelled);
        }
        if self
            .hand_back
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
        {
            return Some(Abort::HandBack);
        }
        if self.max_nodes.is_some_and(|max| expanded >= max) {
            return Some(Abort::NodeLimit);
        }
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return Some(Abort::TimeLimit);
        }
        None
    }
}

/// Node counts. `expanded` nodes had their children generated; `generated` counts every child
/// produced, except the one that would undo the previous move and those the pruning machine
/// forbids (never produced at all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub expanded: u64,
    pub generated: u64,
}

impl std::ops::AddAssign for Counters {
    fn add_assign(&mut self, other: Counters) {
        self.expanded += other.expanded;
        self.generated += other.generated;
    }
}
