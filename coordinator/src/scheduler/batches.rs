//! Per-batch figures this process keeps so progress is cheap to ask: how many items, solved and
//! failed, the nodes spent, and since when. The items themselves live in the store.

use std::collections::HashMap;
use std::time::Instant;

use crate::store::{BatchFigures, ItemStatus, StoredItem};

/// A batch's progress.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchProgress {
    pub batch: u64,
    pub total: u32,
    pub solved: u32,
    pub failed: u32,
    pub done: bool,
    pub bounds: Vec<u32>,
    pub nodes: u64,
    pub nodes_per_second: f64,
    pub workers: u32,
    /// Since the batch was submitted to (or resumed by) this process.
    pub seconds: f64,
    /// What its waiting items wait for (pattern tables being obtained), if any wait.
    pub preparing: Option<String>,
    /// It was cancelled before it finished (known for finished batches, and in what
    /// [`super::Scheduler::cancel`] returns).
    pub cancelled: bool,
    /// As submitted: when (ms since 1970), with which heuristic and towards which goal
    /// (empty for batches stored before the goal was kept).
    pub submitted_unix_ms: u64,
    pub heuristic: String,
    pub goal: String,
}

impl BatchProgress {
    /// `running`, `done`, `cancelled`, or `failed` (done with every item failed).
    pub fn state(&self) -> &'static str {
        match (self.cancelled, self.done) {
            (true, _) => "cancelled",
            (false, false) => "running",
            (false, true) if self.total > 0 && self.failed == self.total => "failed",
            (false, true) => "done",
        }
    }

    /// Seconds to go, only when enough similar puzzles have finished to extrapolate from (5 of
    /// a batch of 10 or more); a single hard puzzle gets none, because no honest one exists.
    pub fn eta_seconds(&self) -> Option<f64> {
        let finished = self.solved + self.failed;
        (!self.done && finished >= 5 && self.total >= 10 && self.seconds > 0.0)
            .then(|| self.seconds / f64::from(finished) * f64::from(self.total - finished))
    }
}

/// (total, solved, failed) of a batch's items.
pub(super) fn counts(items: &[StoredItem]) -> (u32, u32, u32) {
    let solved = items
        .iter()
        .filter(|i| matches!(i.status, ItemStatus::Solved(_)))
        .count() as u32;
    let failed = items
        .iter()
        .filter(|i| matches!(i.status, ItemStatus::Failed(_)))
        .count() as u32;
    (items.len() as u32, solved, failed)
}

#[derive(Default)]
pub(super) struct Batches {
    started: HashMap<u64, Instant>,
    /// Seconds a batch took, once it is done (so its figures stop drifting).
    seconds: HashMap<u64, f64>,
    /// (total, solved, failed) of batches this process has seen.
    counts: HashMap<u64, (u32, u32, u32)>,
    nodes: HashMap<u64, u64>,
}

impl Batches {
    /// A batch submitted to, or resumed by, this process, with its items' counts.
    pub(super) fn open(&mut self, batch: u64, counts: (u32, u32, u32)) {
        self.started.insert(batch, Instant::now());
        self.counts.insert(batch, counts);
        self.nodes.insert(batch, 0);
    }

    /// A finished batch some of whose answers were withdrawn: open again with its new counts,
    /// its nodes counted on from `figures`.
    pub(super) fn reopen(
        &mut self,
        batch: u64,
        counts: (u32, u32, u32),
        figures: Option<BatchFigures>,
    ) {
        self.counts.insert(batch, counts);
        self.seconds.remove(&batch);
        self.started.entry(batch).or_insert_with(Instant::now);
        let before = figures.map_or(0, |f| f.nodes);
        self.nodes.entry(batch).or_insert(before);
    }

    /// Forgets a finished batch; returns its figures for the store.
    pub(super) fn close(&mut self, batch: u64) -> Option<BatchFigures> {
        let (_, solved, failed) = self.counts.remove(&batch)?;
        let started = self.started.remove(&batch);
        let seconds = self
            .seconds
            .remove(&batch)
            .or_else(|| started.map(|s| s.elapsed().as_secs_f64()))
            .unwrap_or(0.0);
        Some(BatchFigures {
            solved,
            failed,
            nodes: self.nodes.remove(&batch).unwrap_or(0),
            seconds,
        })
    }

    pub(super) fn add_nodes(&mut self, batch: u64, nodes: u64) {
        // Only open batches count (a closed batch's figures are in the store).
        if let Some(total) = self.nodes.get_mut(&batch) {
            *total = total.saturating_add(nodes);
        }
    }

    /// Counts an item of `batch` that ended with `status`; returns whether the batch is done.
    pub(super) fn item_finished(&mut self, batch: u64, status: &ItemStatus) -> bool {
        let Some((total, solved, failed)) = self.counts.get_mut(&batch) else {
            return false;
        };
        match status {
            ItemStatus::Solved(_) => *solved += 1,
            ItemStatus::Failed(_) => *failed += 1,
            ItemStatus::Queued => {}
        }
        let done = *solved + *failed == *total;
        if done {
            if let Some(started) = self.started.get(&batch) {
                self.seconds.insert(batch, started.elapsed().as_secs_f64());
            }
        }
        done
    }

    /// The counts of `batch` if this process has them.
    pub(super) fn counts(&self, batch: u64) -> Option<(u32, u32, u32)> {
        self.counts.get(&batch).copied()
    }

    /// A finished batch's progress, from its stored figures.
    pub(super) fn finished(batch: u64, total: u32, figures: &BatchFigures) -> BatchProgress {
        BatchProgress {
            batch,
            total,
            solved: figures.solved,
            failed: figures.failed,
            done: true,
            bounds: Vec::new(),
            nodes: figures.nodes,
            nodes_per_second: if figures.seconds > 0.0 {
                figures.nodes as f64 / figures.seconds
            } else {
                0.0
            },
            workers: 0,
            seconds: figures.seconds,
            preparing: None,
            cancelled: false,
            submitted_unix_ms: 0,
            heuristic: String::new(),
            goal: String::new(),
        }
    }

    /// `batch`'s progress from its counts, the bounds its unfinished puzzles are searching and
    /// the workers connected.
    pub(super) fn progress(
        &self,
        batch: u64,
        (total, solved, failed): (u32, u32, u32),
        bounds: Vec<u32>,
        workers: u32,
    ) -> BatchProgress {
        let nodes = self.nodes.get(&batch).copied().unwrap_or(0);
        let seconds = match self.seconds.get(&batch) {
            Some(&seconds) => seconds,
            None => self
                .started
                .get(&batch)
                .map_or(0.0, |s| s.elapsed().as_secs_f64()),
        };
        BatchProgress {
            batch,
            total,
            solved,
            failed,
            done: solved + failed == total,
            bounds,
            nodes,
            nodes_per_second: if seconds > 0.0 {
                nodes as f64 / seconds
            } else {
                0.0
            },
            workers,
            seconds,
            preparing: None,
            cancelled: false,
            submitted_unix_ms: 0,
            heuristic: String::new(),
            goal: String::new(),
        }
    }
}
