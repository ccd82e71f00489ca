//! What a quarantine undoes: live puzzles that rest on the worker's reports start again, and
//! every stored item answered on them is queued again (or, in a cancelled batch, failed), its
//! batch open again. Part of the puzzles' lifecycle ([`Puzzles`]), kept apart from its
//! everyday rules.

use super::audits::Audits;
use super::batches;
use super::intake;
use super::lifecycle::Puzzles;
use super::types::{PuzzleId, SchedulerError, WorkerId};
use super::Parts;
use crate::store::{ItemStatus, StoreError, StoredBatch, StoredItem};

/// A batch's items to solve again, with their indices.
pub(super) type Reopened = Vec<(u64, Vec<(u32, StoredItem)>)>;

/// Withdraws the stored answers of every batch that rest on `worker`'s reports (a bounded
/// answer's lower bound rests on its workers as a solution does); returns the items of
/// batches not cancelled, to be solved again.
fn reopen(parts: &mut Parts, worker: WorkerId) -> Result<Reopened, SchedulerError> {
    let mut reopened = Vec::new();
    let store = parts.store.clone();
    for batch in store.each_batch() {
        let batch = batch?;
        let mut items = store.items(batch.id)?;
        let mut changed = Vec::new();
        for (index, item) in items.iter_mut().enumerate() {
            let workers = match &item.status {
                ItemStatus::Solved(solved) => &solved.workers,
                ItemStatus::Bounded(bounded) => &bounded.workers,
                ItemStatus::Queued | ItemStatus::Failed(_) => continue,
            };
            if !workers.contains(&worker) {
                continue;
            }
            item.status = if batch.cancelled {
                ItemStatus::Failed(format!("answer withdrawn: worker {worker} was quarantined"))
            } else {
                ItemStatus::Queued
            };
            store.put_item(batch.id, index as u32, item)?;
            changed.push(index as u32);
        }
        if changed.is_empty() {
            continue;
        }
        // The stored text of the batch's heuristic, read once as the batch opens again.
        let heuristic = intake::stored_heuristic(&batch)?;
        parts
            .batches
            .reopen(batch.id, batches::counts(&items), batch.finished, heuristic);
        if batch.cancelled {
            // Nothing runs again for a cancelled batch: only its figures change.
            parts.batches.close_stored(&store, batch.id)?;
            continue;
        }
        if batch.finished.is_some() {
            store.put_batch(&StoredBatch {
                finished: None,
                ..batch.clone()
            })?;
        }
        let items = changed
            .into_iter()
            .map(|index| (index, items[index as usize].clone()))
            .collect();
        reopened.push((batch.id, items));
    }
    Ok(reopened)
}

impl Puzzles {
    /// Shuts `worker` out for `reason` and undoes what rests on its reports: its tasks go
    /// back to the queue, live puzzles that used its reports start again, and stored answers
    /// and bounds that rest on them are withdrawn, their items solved again
    /// ([`reopen`]).
    pub(super) fn quarantine(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        worker: WorkerId,
        reason: String,
    ) -> Result<(), SchedulerError> {
        tracing::warn!(worker, %reason, "worker quarantined: what rests on its reports is solved again");
        parts.workers.quarantine(worker, reason);
        parts.tasks.release(worker);
        parts.totals.workers_quarantined += 1;
        let (solutions, bounds) = parts.store.withdraw_worker(worker)?;
        let live: Vec<PuzzleId> = self.resting_on(worker);
        for &puzzle in &live {
            self.restart(
                parts,
                audits,
                puzzle,
                &format!("worker {worker} was quarantined"),
            )?;
        }
        let reopened = reopen(parts, worker)?;
        let count: usize = reopened.iter().map(|(_, items)| items.len()).sum();
        for (batch, items) in reopened {
            for (index, item) in items {
                self.start_item(parts, audits, (batch, index), &item)?;
            }
        }
        tracing::warn!(
            worker,
            solutions,
            bounds,
            live = live.len(),
            reopened = count,
            "withdrawn: stored boards, stored bounds, puzzles started again, answered items solved again"
        );
        parts.out.flush_due = true;
        Ok(())
    }

    /// Starts a live puzzle over from its heuristic estimate: the reports its search rested on
    /// cannot all be true.
    pub(super) fn restart(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        puzzle: PuzzleId,
        reason: &str,
    ) -> Result<(), SchedulerError> {
        let Some(p) = self.remove(parts, audits, puzzle) else {
            return Ok(());
        };
        let (batch, index) = puzzle;
        tracing::warn!(batch, puzzle = index + 1, %reason, "puzzle starts again");
        parts.totals.puzzles_restarted += 1;
        parts.store.remove_search_state(&p.goal, &p.board)?;
        let item = parts
            .store
            .item(batch, index)?
            .ok_or_else(|| StoreError::Corrupt {
                tree: "items",
                reason: format!("batch {batch} item {index}: missing"),
            })?;
        self.start_item(parts, audits, puzzle, &item)
    }
}
