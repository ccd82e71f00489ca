//! What a quarantine undoes in the store: every stored item answered on the reports of a
//! quarantined worker is queued again (or, in a cancelled batch, failed), and its batch is open
//! again. The live puzzles are `lifecycle`'s to restart; this module only reads and writes the
//! store and the batches' counts, and returns the items to solve again.

use super::batches;
use super::intake;
use super::types::{SchedulerError, WorkerId};
use super::Parts;
use crate::store::{ItemStatus, StoredBatch, StoredItem};

/// A batch's items to solve again, with their indices.
pub(super) type Reopened = Vec<(u64, Vec<(u32, StoredItem)>)>;

/// Withdraws the stored answers of every batch that rest on `worker`'s reports (a bounded
/// answer's lower bound rests on its workers as a solution does); returns the items of
/// batches not cancelled, to be solved again.
pub(super) fn reopen(parts: &mut Parts, worker: WorkerId) -> Result<Reopened, SchedulerError> {
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
