//! The `search` and `tasks` trees: a puzzle's proven bound while it is solved, and the tasks
//! its search ran (what `tilesolve simulate` replays).

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use tilesolve::Board;

use super::format::{board_key, decode, encode};
use super::{Store, StoreError};

/// A puzzle's search progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchState {
    /// No solution shorter than this exists (an iteration at this bound has not finished).
    pub lower_bound: u32,
    /// The workers whose reports the bound rests on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<u64>,
    /// The shortest path a limited search found (not proven optimal): a later search of the
    /// board ends with it once it has ruled out everything shorter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best: Option<BestPath>,
}

/// A replayed path not proven optimal, and the weight of the search that found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BestPath {
    /// The blank's moves, one letter each.
    pub moves: String,
    pub weight_percent: u32,
}

/// One finished task of a puzzle's search, as recorded for replaying the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub batch: u64,
    pub index: u32,
    pub bound: u32,
    /// Moves from the puzzle's root to the task's board.
    pub path: String,
    /// A whole-puzzle task (IDA* from `bound` within a node budget).
    pub iterate: bool,
    pub outcome: RecordedOutcome,
    pub nodes: u64,
    /// The search's wall time on the worker.
    pub seconds: f64,
    /// From the lease to the report, at the coordinator.
    pub round_trip_seconds: f64,
    /// The measured descendants: (moves from the task's board, expanded nodes, microseconds).
    pub parts: Vec<(String, u64, u64)>,
    /// Measured after the run by `tilesolve simulate --complete` (a task the solution had
    /// cancelled), not by a worker.
    #[serde(default)]
    pub measured_after: bool,
}

/// How a recorded task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordedOutcome {
    /// Found a goal; the solution's length.
    Found(u32),
    /// No goal within the bound; the least f over it.
    Exceeded(u32),
    /// A whole-puzzle task spent its budget in the iteration at this bound.
    BudgetSpent(u32),
    /// A subtree task spent its budget and came back as its children.
    Split,
    /// Still queued or running when another task found the solution: its size is unknown.
    Cancelled,
    /// Stopped between its parts for idle threads: its parts are what it searched, and the
    /// descendants it handed back are recorded as tasks of their own.
    HandedBack,
}

impl Store {
    pub fn search_state(
        &self,
        goal: &Board,
        board: &Board,
    ) -> Result<Option<SearchState>, StoreError> {
        if !self.search_kept.load(Ordering::Acquire) {
            return Ok(None);
        }
        let state: Option<SearchState> = self
            .search
            .get(board_key(goal, board))?
            .map(|bytes| decode("search", &bytes))
            .transpose()?;
        Ok(state.filter(|state| !self.rests_on_withdrawn(&state.workers)))
    }

    pub fn remove_search_state(&self, goal: &Board, board: &Board) -> Result<(), StoreError> {
        self.search.remove(board_key(goal, board))?;
        Ok(())
    }

    pub fn put_search_state(
        &self,
        goal: &Board,
        board: &Board,
        state: SearchState,
    ) -> Result<(), StoreError> {
        self.search_kept.store(true, Ordering::Release);
        self.search.insert(board_key(goal, board), encode(&state))?;
        Ok(())
    }
}
