//! Task records (each finished subtree task's size and time, kept so `tilesolve simulate` can
//! replay a run) and the flusher that writes them, and makes answers durable, outside the
//! scheduler's lock.

use tilesolve::moves::moves_to_string;
use tilesolve::Board;

use super::tasks::TaskEntry;
use super::types::{PuzzleId, SchedulerError, TaskId, TaskOutcome, TaskReport};
use crate::store::{RecordedOutcome, Store, TaskRecord};

/// Makes the store's writes durable and writes task records; held outside the scheduler's lock,
/// because a flush waits for the disk and everyone else would wait for the flush, and records
/// (encoded and written per task) cost as much as the rest of a poll.
#[derive(Clone)]
pub struct Flusher(Store);

impl Flusher {
    pub fn new(store: Store) -> Flusher {
        Flusher(store)
    }

    pub fn flush(&self) -> Result<(), SchedulerError> {
        Ok(self.0.flush()?)
    }

    /// Makes the batch records durable, and nothing else ([`Store::sync_batch_records`]).
    pub fn sync_batch_records(&self) -> Result<(), SchedulerError> {
        Ok(self.0.sync_batch_records()?)
    }

    /// The last flush of a run ([`Store::close`]).
    pub fn close(&self) -> Result<(), SchedulerError> {
        Ok(self.0.close()?)
    }

    /// Writes the records taken with [`super::AfterCycle`].
    pub fn write(&self, records: TaskRecords) -> Result<(), SchedulerError> {
        for (goal, board, task, record) in records.0 {
            self.0.put_task_record(&goal, &board, task, record)?;
        }
        Ok(())
    }
}

/// Task records made under the scheduler's lock, to be written after it is released.
#[derive(Debug, Default)]
pub struct TaskRecords(Vec<(Board, Board, TaskId, TaskRecord)>);

impl TaskRecords {
    /// Adds the record of task `id` of the puzzle (`goal`, `board`).
    pub(super) fn push(&mut self, goal: Board, board: Board, id: TaskId, record: TaskRecord) {
        self.0.push((goal, board, id, record));
    }
}

/// The record of a finished task, if it is kept: failures are not part of the search, and a
/// puzzle solved by its whole-puzzle task has nothing to replay (its stored solution already
/// says what it cost).
pub(super) fn finished(
    entry: &TaskEntry,
    report: &TaskReport,
    outcome: &TaskOutcome,
) -> Option<TaskRecord> {
    let recorded = match outcome {
        TaskOutcome::Found(suffix) => {
            RecordedOutcome::Found((entry.spec.path.len() + suffix.len()) as u32)
        }
        TaskOutcome::Exceeded(next) => RecordedOutcome::Exceeded(*next),
        TaskOutcome::BudgetSpent(at) => RecordedOutcome::BudgetSpent(*at),
        // Searched again as its descendants, which are recorded.
        TaskOutcome::Split { .. } => RecordedOutcome::Split,
        // What it searched, in its parts; the rest, as the descendants it handed back.
        TaskOutcome::HandedBack { .. } => RecordedOutcome::HandedBack,
        TaskOutcome::Failed(_) | TaskOutcome::Weighted(_) | TaskOutcome::Returned => return None,
    };
    if matches!(recorded, RecordedOutcome::Found(_)) && entry.spec.iterate {
        return None;
    }
    Some(TaskRecord {
        batch: entry.puzzle.0,
        index: entry.puzzle.1,
        bound: entry.spec.bound,
        path: moves_to_string(&entry.spec.path),
        iterate: entry.spec.iterate,
        outcome: recorded,
        nodes: report.nodes,
        seconds: report.seconds,
        // Lease to report, less the time it waited on the worker behind another task.
        round_trip_seconds: entry.lease.as_ref().map_or(0.0, |lease| {
            (lease.since.elapsed().as_secs_f64() - report.queued_seconds).max(0.0)
        }),
        parts: report
            .parts
            .iter()
            .map(|part| (moves_to_string(&part.moves), part.expanded, part.micros))
            .collect(),
        measured_after: false,
    })
}

/// The record of a subtree task a solution made unnecessary, so a replay knows which parts of
/// the last iteration were never measured; none for a whole-puzzle task.
pub(super) fn cancelled(puzzle: PuzzleId, entry: &TaskEntry) -> Option<TaskRecord> {
    (!entry.spec.iterate).then(|| TaskRecord {
        batch: puzzle.0,
        index: puzzle.1,
        bound: entry.spec.bound,
        path: moves_to_string(&entry.spec.path),
        iterate: false,
        outcome: RecordedOutcome::Cancelled,
        nodes: 0,
        seconds: 0.0,
        round_trip_seconds: 0.0,
        parts: Vec::new(),
        measured_after: false,
    })
}
