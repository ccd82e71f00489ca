//! What a quarantine undoes in the store: every stored answer and bound resting on a
//! quarantined worker's reports is withdrawn, and every stored item answered with them is
//! queued again (or, in a cancelled batch, failed), its batch open again. The live puzzles are
//! `lifecycle`'s to restart.
//!
//! Finding them takes a pass over every stored answer and batch (3 s on a store of 315,000
//! batches), so it runs outside the scheduler's lock ([`PendingWithdrawal`], on the background
//! pool), and the lock cycle that takes its result only rewrites the items it found. Meanwhile
//! the store reads no answer resting on the worker ([`Store::withdraw_from_reads`], set in the
//! cycle that quarantined it), and nothing new can rest on it: its calls are refused and the
//! live puzzles that used its reports started again in that same cycle. So the pass sees every
//! item that will ever rest on it.

use super::batches;
use super::intake;
use super::types::{SchedulerError, WorkerId};
use super::Parts;
use crate::store::{ItemStatus, Store, StoreError, StoredBatch, StoredItem};

/// A batch's items to solve again, with their indices.
pub(super) type Reopened = Vec<(u64, Vec<(u32, StoredItem)>)>;

/// The withdrawal of a quarantined worker's answers, to run outside the lock.
pub struct PendingWithdrawal {
    pub(super) worker: WorkerId,
    pub(super) store: Store,
}

/// A [`PendingWithdrawal`] run: what it removed, and the items it found resting on the worker.
pub struct FinishedWithdrawal {
    pub(super) worker: WorkerId,
    pub(super) found: Result<Withdrawn, StoreError>,
}

#[derive(Debug)]
pub(super) struct Withdrawn {
    /// Stored boards removed.
    pub(super) solutions: usize,
    /// Stored lower bounds (search states) removed.
    pub(super) bounds: usize,
    /// Per batch, the indices of its items answered on the worker's reports.
    pub(super) items: Vec<(u64, Vec<u32>)>,
}

impl PendingWithdrawal {
    pub fn run(self) -> FinishedWithdrawal {
        let found = (|| {
            let (solutions, bounds) = self.store.withdraw_worker(self.worker)?;
            let items = items_resting_on(&self.store, self.worker)?;
            Ok(Withdrawn {
                solutions,
                bounds,
                items,
            })
        })();
        FinishedWithdrawal {
            worker: self.worker,
            found,
        }
    }
}

/// The workers an item's answer or bound rests on (none for an item with neither).
fn resting_workers(item: &StoredItem) -> &[u64] {
    match &item.status {
        ItemStatus::Solved(solved) => &solved.workers,
        ItemStatus::Bounded(bounded) => &bounded.workers,
        ItemStatus::Queued | ItemStatus::Failed(_) | ItemStatus::Cancelled => &[],
    }
}

/// Per batch, the indices of the items whose answer or bound rests on `worker`: a pass over
/// the whole store, read only.
fn items_resting_on(store: &Store, worker: WorkerId) -> Result<Vec<(u64, Vec<u32>)>, StoreError> {
    let mut found = Vec::new();
    for batch in store.each_batch() {
        let batch = batch?;
        let indices: Vec<u32> = store
            .items(batch.id)?
            .iter()
            .enumerate()
            .filter(|(_, item)| resting_workers(item).contains(&worker))
            .map(|(index, _)| index as u32)
            .collect();
        if !indices.is_empty() {
            found.push((batch.id, indices));
        }
    }
    Ok(found)
}

/// The quarantine of `worker` for `reason`, under the lock: its calls are refused, its tasks
/// go back to the queue, the store reads nothing resting on it from now on, and no batch ends
/// until the returned withdrawal, run outside the lock, is taken ([`finish`]).
pub(super) fn begin(parts: &mut Parts, worker: WorkerId, reason: String) -> PendingWithdrawal {
    parts.workers.quarantine(worker, reason);
    parts.tasks.release(worker);
    parts.totals.workers_quarantined += 1;
    parts.store.withdraw_from_reads(worker);
    parts.batches.hold_completion();
    PendingWithdrawal {
        worker,
        store: parts.store.clone(),
    }
}

/// Takes a withdrawal run outside the lock: the items it found still resting on the worker
/// are queued again (returned, to be started) or failed, and the batches held from ending
/// meanwhile end, unless an item of theirs opened again.
pub(super) fn finish(
    parts: &mut Parts,
    withdrawal: FinishedWithdrawal,
) -> Result<Reopened, SchedulerError> {
    let worker = withdrawal.worker;
    let found = withdrawal
        .found
        .map_err(SchedulerError::from)
        .and_then(|withdrawn| {
            let counts = (withdrawn.solutions, withdrawn.bounds);
            Ok((reopen(parts, worker, withdrawn.items)?, counts))
        });
    for batch in parts.batches.release_completion() {
        parts.batches.close_stored(&parts.store, batch)?;
    }
    let (reopened, (solutions, bounds)) = found?;
    tracing::warn!(
        worker,
        solutions,
        bounds,
        reopened = reopened.iter().map(|(_, items)| items.len()).sum::<usize>(),
        "withdrawn: stored boards, stored bounds, answered items solved again"
    );
    parts.out.flush_due = true;
    Ok(reopened)
}

/// Withdraws the answers of the items `found` (per batch, by index) that still rest on
/// `worker` (a batch may have been removed, or an item solved again, since they were found);
/// returns the items of batches not cancelled, to be solved again.
fn reopen(
    parts: &mut Parts,
    worker: WorkerId,
    found: Vec<(u64, Vec<u32>)>,
) -> Result<Reopened, SchedulerError> {
    let mut reopened = Vec::new();
    let store = parts.store.clone();
    for (batch, indices) in found {
        let Some(batch) = store.batch(batch)? else {
            continue;
        };
        let mut items = store.items(batch.id)?;
        let mut changed = Vec::new();
        for index in indices {
            let Some(item) = items.get_mut(index as usize) else {
                continue;
            };
            if !resting_workers(item).contains(&worker) {
                continue;
            }
            item.status = if batch.cancelled {
                ItemStatus::Failed(format!("answer withdrawn: worker {worker} was quarantined"))
            } else {
                ItemStatus::Queued
            };
            store.put_item(batch.id, index, item)?;
            changed.push(index);
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
