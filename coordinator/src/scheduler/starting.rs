//! Starting a batch's items a window at a time: up to [`backlog::live_cap`] of its puzzles
//! live, the rest held in its [`Backlog`] (stored, not started) and started a part at a time,
//! read back from the store, once fewer than [`backlog::live_low`] are live. Intake, a resumed
//! batch and a batch whose tables arrived all start their items here.
//!
//! A part read back is started whole, even past the cap: the store decodes a part whole, so a
//! page running into the next part, or one stopped short of its end, decoded parts twice (a
//! sixth of an easy batch's coordinator instructions, parsing the boards again included).

use super::audits::Audits;
use super::backlog::{self, Unstarted};
use super::intake::{solver_keys, Intake, QueuedItem};
use super::lifecycle::Puzzles;
use super::types::{PuzzleId, SchedulerError};
use super::{Parts, Scheduler};
use crate::store::{ItemStatus, StoreError, StoredItem, ITEMS_PER_PART};

/// The store's part, as an item index.
const PART: u32 = ITEMS_PER_PART as u32;

impl Scheduler {
    /// Starts the items of `intake` stored since the last call, as far as the batch's window
    /// goes (those whose tables are missing wait for them; the rest join its backlog). Returns
    /// whether every item is in.
    pub fn start_part(&mut self, intake: &mut Intake) -> Result<bool, SchedulerError> {
        let batch = intake.batch();
        let (first, items) = intake.next_part(&mut self.parts.batches);
        let end = first + items.len() as u32;
        let queued = items.iter().filter(|item| item.is_queued()).count();
        // Behind a backlog, a part waits its turn in it.
        if !self.parts.backlog.grow(batch, end, queued) {
            self.start_items(batch, first, &items)?;
        }
        let done = intake.all_started();
        if done && !intake.has_queued() {
            // Every line answered from the store or invalid: done as it is acknowledged.
            self.parts
                .batches
                .close_stored(&self.parts.store, intake.batch())?;
        }
        Ok(done)
    }

    /// Starts `items` (`batch`'s from index `first` on) in order until the batch's window is
    /// full, and holds the rest in its backlog.
    pub(super) fn start_items(
        &mut self,
        batch: u64,
        first: u32,
        items: &[QueuedItem],
    ) -> Result<(), SchedulerError> {
        let cap = backlog::live_cap(self.parts.workers.threads());
        self.start_up_to(batch, first, items, cap)
    }

    /// [`Scheduler::start_items`] until `cap` of the batch's puzzles are live.
    fn start_up_to(
        &mut self,
        batch: u64,
        first: u32,
        items: &[QueuedItem],
        cap: usize,
    ) -> Result<(), SchedulerError> {
        let parts = &mut self.parts;
        let end = first + items.len() as u32;
        let held = parts.backlog.get(batch);
        let stored = held.map_or(end, |held| held.stored.max(end));
        // The backlog's queued items past these (when these are only a part of it).
        let beyond = match held {
            Some(held) if end < held.stored => {
                let from = held.next.clamp(first, end);
                let here = unstarted(
                    &self.puzzles,
                    batch,
                    from,
                    &items[(from - first) as usize..],
                );
                held.queued.saturating_sub(here)
            }
            _ => 0,
        };
        let stopped =
            self.puzzles
                .start_or_wait(parts, &mut self.audits, (batch, first), items, cap)?;
        let next = stopped.unwrap_or(end);
        let left = unstarted(
            &self.puzzles,
            batch,
            next,
            &items[(next - first) as usize..],
        );
        match next < stored {
            true => parts.backlog.hold(
                batch,
                Unstarted {
                    next,
                    stored,
                    queued: left + beyond,
                },
            ),
            false => {
                parts.backlog.remove(batch);
            }
        }
        Ok(())
    }

    /// Starts more of each backlog whose batch has fewer than [`backlog::live_low`] puzzles
    /// live, a part at a time, until its window is full again. A batch waiting for some of its
    /// tables starts the items it has solvers for meanwhile; the rest wait with the others.
    pub(super) fn start_backlog(&mut self) {
        let threads = self.parts.workers.threads();
        let (low, cap) = (backlog::live_low(threads), backlog::live_cap(threads));
        for batch in self.parts.backlog.batches() {
            if self.puzzles.live_in(batch) >= low {
                continue;
            }
            // A backlog the store cannot give back stops there, not every worker's poll.
            if let Err(error) = self.start_more(batch, cap) {
                self.parts.backlog.remove(batch);
                tracing::error!(
                    batch,
                    %error,
                    "items not started yet stay queued until the coordinator starts again"
                );
            }
        }
    }

    /// Starts `batch`'s backlog a part at a time until `cap` of its puzzles are live: each
    /// read runs to the end of the stored part it starts in, and all of it starts.
    fn start_more(&mut self, batch: u64, cap: usize) -> Result<(), SchedulerError> {
        while let Some(held) = self.parts.backlog.get(batch) {
            if self.puzzles.live_in(batch) >= cap {
                break;
            }
            let part_end = (held.next / PART + 1) * PART;
            let count = (part_end.min(held.stored) - held.next) as usize;
            let page = self.parts.store.items_page(batch, held.next, count)?;
            let items = in_order(batch, held.next, page)?;
            let queued = QueuedItem::stored_all(batch, held.next, &items)?;
            self.start_up_to(batch, held.next, &queued, usize::MAX)?;
        }
        Ok(())
    }
}

impl Puzzles {
    /// Starts a batch's queued items whose solvers are ready, in order, until `cap` of the
    /// batch's puzzles are live; the batch waits for the rest of the solvers, and items whose
    /// solver cannot be made fail. `items` are the batch's items from index `first` on, each
    /// with its board and goal (parsed once, by intake or as it was read from the store).
    /// Returns the index of the first item it did not come to (the cap reached), if any.
    pub(super) fn start_or_wait(
        &mut self,
        parts: &mut Parts,
        audits: &mut Audits,
        (batch, first): PuzzleId,
        items: &[QueuedItem],
        cap: usize,
    ) -> Result<Option<u32>, SchedulerError> {
        let heuristic = parts.batches.heuristic(batch).ok_or_else(|| {
            SchedulerError::Internal(format!("batch {batch} started without its heuristic"))
        })?;
        let keys = solver_keys(items, heuristic);
        let sorted = parts.tables.sort(&keys)?;
        let mut waiting = 0;
        let mut stopped = None;
        parts.tasks.reserve(items.len().min(cap));
        for (index, queued) in (first..).zip(items) {
            let puzzle = (batch, index);
            let Some((_, goal)) = queued.boards.filter(|_| queued.is_queued()) else {
                continue;
            };
            if self.contains(puzzle) {
                continue;
            }
            let key = (goal, heuristic);
            if let Some(reason) = sorted.unusable.get(&key) {
                self.finish_failed(parts, audits, puzzle, reason.clone())?;
            } else if sorted.missing.contains(&key) {
                waiting += 1;
            } else if self.live_in(batch) >= cap {
                stopped = Some(index);
                break;
            } else {
                self.start_item(parts, audits, puzzle, queued)?;
            }
        }
        if waiting > 0 {
            parts.tables.wait(batch, sorted.missing, waiting);
        }
        Ok(stopped)
    }

    /// Ends with `status` every queued item of `batch` before index `below` that is not live:
    /// it waits for tables, or it never started.
    pub(super) fn end_unstarted(
        &mut self,
        parts: &mut Parts,
        batch: u64,
        status: ItemStatus,
        below: u32,
    ) -> Result<(), SchedulerError> {
        // One pass over the stored items: each written back from here, not read again.
        for (index, item) in parts.store.items_page(batch, 0, below as usize)? {
            let puzzle = (batch, index);
            if index < below && item.status == ItemStatus::Queued && !self.contains(puzzle) {
                let item = StoredItem {
                    status: status.clone(),
                    ..item
                };
                parts.end_item(puzzle, Some(item), status.clone())?;
            }
        }
        Ok(())
    }
}

/// Queued items of `items` (from index `first` on) not live: they have not started.
fn unstarted(puzzles: &Puzzles, batch: u64, first: u32, items: &[QueuedItem]) -> usize {
    (first..)
        .zip(items)
        .filter(|(index, queued)| queued.is_queued() && !puzzles.contains((batch, *index)))
        .count()
}

/// A page of stored items that must run on from index `first` without a gap (every item of
/// a backlog is stored before it is held there).
fn in_order(
    batch: u64,
    first: u32,
    page: Vec<(u32, StoredItem)>,
) -> Result<Vec<StoredItem>, SchedulerError> {
    if page.is_empty() {
        return Err(missing(batch, first));
    }
    (first..)
        .zip(page)
        .map(|(expected, (index, item))| match index == expected {
            true => Ok(item),
            false => Err(missing(batch, expected)),
        })
        .collect()
}

fn missing(batch: u64, index: u32) -> SchedulerError {
    StoreError::Corrupt {
        tree: "item_parts",
        reason: format!("batch {batch} item {index}: stored, not started, and missing"),
    }
    .into()
}
