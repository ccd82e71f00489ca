//! Per-batch figures this process keeps so progress is cheap to ask: how many items, solved and
//! failed, the nodes spent, and since when, the heuristic each open batch named (parsed once,
//! as it opens), and the items of batches being taken in. The items themselves live in the
//! store. A leaf: it calls no other part (it writes a closed batch's figures to the store).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::time::Instant;

use tilesolve::heuristic_choice::HeuristicChoice;

use super::eta::{EtaRange, FinishedCosts};
use super::rate::WindowRate;
use super::types::SchedulerError;
use crate::owners::OwnerName;
use crate::queue::Lane;
use crate::store::{
    BatchFigures, ItemLimits, ItemStatus, OwnerNodes, PendingNotice, Priority, Store, StoredBatch,
    StoredItem,
};

/// A batch's progress.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchProgress {
    pub batch: u64,
    pub total: u32,
    pub solved: u32,
    /// Items that failed (cancelled ones are not among them).
    pub failed: u32,
    /// Items that ended with a bounded answer (a path not proven optimal).
    pub bounded: u32,
    /// Items cancelled before they ended (with their batch): not failures.
    pub items_cancelled: u32,
    pub done: bool,
    pub bounds: Vec<u32>,
    pub nodes: u64,
    /// Expanded nodes per second: over the last [`super::RATE_WINDOW`] while it runs (the
    /// header's and each worker's definition); over its whole run once it ended.
    pub nodes_per_second: f64,
    /// Time left, as a range from its search ([`super::eta`]); None once ended or while no
    /// honest range exists.
    pub eta: Option<EtaRange>,
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
    pub priority: Priority,
    /// The batch whose failed or cancelled items it submitted again.
    pub retry_of: Option<u64>,
    /// Whose it is (None: the operator's).
    pub owner: Option<OwnerName>,
}

/// What one owner has open, and has spent today: what its limits are held to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerUsage {
    /// Batches not ended (queued or running).
    pub running_batches: u64,
    /// Their items not ended.
    pub pending_boards: u64,
    /// Nodes searched for the owner's batches since midnight UTC.
    pub nodes_today: u64,
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
}

/// How many of a batch's items there are, and how many ended each way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ItemCounts {
    pub(super) total: u32,
    pub(super) solved: u32,
    pub(super) failed: u32,
    pub(super) bounded: u32,
    pub(super) cancelled: u32,
}

impl ItemCounts {
    /// Counts an item that ended with `status`.
    fn add(&mut self, status: &ItemStatus) {
        match status {
            ItemStatus::Solved(_) => self.solved += 1,
            ItemStatus::Failed(_) => self.failed += 1,
            ItemStatus::Bounded(_) => self.bounded += 1,
            ItemStatus::Cancelled => self.cancelled += 1,
            ItemStatus::Queued => {}
        }
    }

    /// Items that ended, whichever way.
    pub(super) fn ended(&self) -> u32 {
        self.solved + self.failed + self.bounded + self.cancelled
    }

    /// Every item ended.
    pub(super) fn done(&self) -> bool {
        self.ended() == self.total
    }
}

/// The counts of a batch's items.
pub(super) fn counts(items: &[StoredItem]) -> ItemCounts {
    let mut counts = ItemCounts {
        total: items.len() as u32,
        ..ItemCounts::default()
    };
    for item in items {
        counts.add(&item.status);
    }
    counts
}

#[derive(Default)]
pub(super) struct Batches {
    started: FxHashMap<u64, Instant>,
    /// Seconds a batch took, once it is done (so its figures stop drifting).
    seconds: FxHashMap<u64, f64>,
    /// The item counts of batches this process has seen.
    counts: FxHashMap<u64, ItemCounts>,
    nodes: FxHashMap<u64, u64>,
    /// Each open batch's nodes/s.
    rates: FxHashMap<u64, WindowRate>,
    /// What each open batch's finished puzzles cost (the ETA's prior for the rest).
    finished_costs: FxHashMap<u64, FinishedCosts>,
    /// The limits of open batches that set any.
    limits: FxHashMap<u64, ItemLimits>,
    /// The priorities of open batches other than the default.
    priorities: FxHashMap<u64, Priority>,
    /// The heuristic each open batch named.
    heuristics: FxHashMap<u64, HeuristicChoice>,
    /// The owners of open batches that have one.
    owners: FxHashMap<u64, OwnerName>,
    /// The nodes each owner's batches searched today.
    owner_nodes: OwnerNodes,
    /// Queued items of batches being taken in, not started yet (they count against the
    /// pending limit).
    intake_pending: usize,
    /// Quarantines whose withdrawal is still looking for the items that rest on the worker:
    /// until it is done, no batch ends (one of its solved items may be about to open again).
    completion_held: usize,
    /// Batches whose every item ended while completion was held: they end when it is not.
    completing: std::collections::BTreeSet<u64>,
}

impl Batches {
    /// A batch submitted to, or resumed by, this process, with its items' counts.
    pub(super) fn open(&mut self, batch: u64, counts: ItemCounts, heuristic: HeuristicChoice) {
        self.heuristics.insert(batch, heuristic);
        let now = Instant::now();
        self.started.insert(batch, now);
        self.counts.insert(batch, counts);
        self.nodes.insert(batch, 0);
        self.rates.insert(batch, WindowRate::new(now));
    }

    /// A finished batch some of whose answers were withdrawn: open again with its new counts,
    /// its nodes counted on from `figures`.
    pub(super) fn reopen(
        &mut self,
        batch: u64,
        counts: ItemCounts,
        figures: Option<BatchFigures>,
        heuristic: HeuristicChoice,
    ) {
        self.heuristics.insert(batch, heuristic);
        self.counts.insert(batch, counts);
        self.seconds.remove(&batch);
        self.started.entry(batch).or_insert_with(Instant::now);
        let before = figures.map_or(0, |f| f.nodes);
        let nodes = *self.nodes.entry(batch).or_insert(before);
        (self.rates.entry(batch))
            .or_insert_with(|| WindowRate::counting_from(Instant::now(), nodes));
    }

    /// Sets what each item of an open batch may spend.
    pub(super) fn set_limits(&mut self, batch: u64, limits: ItemLimits) {
        if !limits.is_none() {
            self.limits.insert(batch, limits);
        }
    }

    /// Sets an open batch's priority.
    pub(super) fn set_priority(&mut self, batch: u64, priority: Priority) {
        if !priority.is_default() {
            self.priorities.insert(batch, priority);
        }
    }

    /// Sets an open batch's owner.
    pub(super) fn set_owner(&mut self, batch: u64, owner: Option<OwnerName>) {
        if let Some(owner) = owner {
            self.owners.insert(batch, owner);
        }
    }

    /// What each owner with an open batch, or nodes searched today, has and spent.
    pub(super) fn owner_usage(&self) -> BTreeMap<OwnerName, OwnerUsage> {
        let mut usage = BTreeMap::<OwnerName, OwnerUsage>::new();
        for (batch, owner) in &self.owners {
            let Some(counts) = self.counts.get(batch) else {
                continue;
            };
            let open = usage.entry(owner.clone()).or_default();
            open.running_batches += 1;
            open.pending_boards += u64::from(counts.total - counts.ended());
        }
        let today = OwnerNodes::today();
        for owner in self.owner_nodes.nodes.keys() {
            let nodes = self.owner_nodes.on(owner, today);
            if nodes > 0 {
                usage.entry(owner.clone()).or_default().nodes_today = nodes;
            }
        }
        usage
    }

    /// The nodes each owner's batches searched today, as last counted (to be kept).
    pub(super) fn owner_nodes(&self) -> &OwnerNodes {
        &self.owner_nodes
    }

    /// Counts on from the owners' nodes a store kept.
    pub(super) fn restore_owner_nodes(&mut self, nodes: OwnerNodes) {
        self.owner_nodes = nodes;
    }

    /// `batch`'s priority (the default for a batch that named none, or one not open).
    pub(super) fn priority(&self, batch: u64) -> Priority {
        self.priorities.get(&batch).copied().unwrap_or_default()
    }

    /// The queue lane of `batch`'s tasks: its priority, then its owner.
    pub(super) fn lane(&self, batch: u64) -> Lane {
        Lane {
            priority: self.priority(batch),
            owner: self.owners.get(&batch).cloned(),
        }
    }

    /// What each item of `batch` may spend (none for a batch without limits).
    pub(super) fn limits(&self, batch: u64) -> ItemLimits {
        self.limits.get(&batch).copied().unwrap_or_default()
    }

    /// Forgets a finished batch; returns its figures for the store.
    pub(super) fn close(&mut self, batch: u64) -> Option<BatchFigures> {
        self.limits.remove(&batch);
        self.priorities.remove(&batch);
        self.heuristics.remove(&batch);
        self.owners.remove(&batch);
        let ItemCounts {
            solved,
            failed,
            cancelled,
            ..
        } = self.counts.remove(&batch)?;
        self.rates.remove(&batch);
        self.finished_costs.remove(&batch);
        let started = self.started.remove(&batch);
        let seconds = self
            .seconds
            .remove(&batch)
            .or_else(|| started.map(|s| s.elapsed().as_secs_f64()))
            .unwrap_or(0.0);
        Some(BatchFigures {
            solved,
            failed,
            cancelled,
            nodes: self.nodes.remove(&batch).unwrap_or(0),
            seconds,
        })
    }

    /// Closes a finished batch and moves its figures from memory into its stored record: a
    /// coordinator that runs for months keeps nothing per finished batch.
    pub(super) fn close_stored(&mut self, store: &Store, batch: u64) -> Result<(), SchedulerError> {
        let Some(figures) = self.close(batch) else {
            return Ok(());
        };
        tracing::info!(
            batch,
            solved = figures.solved,
            failed = figures.failed,
            nodes = figures.nodes,
            seconds = figures.seconds,
            "batch finished"
        );
        if let Some(stored) = store.batch(batch)? {
            // The notice is kept with the record it tells of: a restart delivers it.
            if let Some(url) = &stored.notify {
                let now = OwnerNodes::now_unix_ms();
                store.put_notice(&PendingNotice {
                    batch,
                    url: url.clone(),
                    ended_unix_ms: now,
                    attempts: 0,
                    next_unix_ms: now,
                })?;
            }
            store.finish_batch(&StoredBatch {
                finished: Some(figures),
                ..stored
            })?;
        }
        Ok(())
    }

    /// The heuristic an open batch named.
    pub(super) fn heuristic(&self, batch: u64) -> Option<HeuristicChoice> {
        self.heuristics.get(&batch).copied()
    }

    /// `queued` more items of batches being taken in wait to start.
    pub(super) fn intake_opened(&mut self, queued: usize) {
        self.intake_pending += queued;
    }

    /// `started` items of batches being taken in started (or were dropped).
    pub(super) fn intake_done(&mut self, started: usize) {
        self.intake_pending -= started;
    }

    /// Queued items of batches being taken in, not started yet.
    pub(super) fn intake_pending(&self) -> usize {
        self.intake_pending
    }

    pub(super) fn add_nodes(&mut self, batch: u64, nodes: u64) {
        // Only open batches count (a closed batch's figures are in the store).
        if let Some(total) = self.nodes.get_mut(&batch) {
            *total = total.saturating_add(nodes);
            if let Some(rate) = self.rates.get_mut(&batch) {
                rate.record(Instant::now(), *total);
            }
        }
        if let Some(owner) = self.owners.get(&batch) {
            self.owner_nodes.add(owner, nodes, OwnerNodes::today());
        }
    }

    /// Counts an item of `batch` that ended with `status`; returns whether the batch is done.
    pub(super) fn item_finished(&mut self, batch: u64, status: &ItemStatus) -> bool {
        let Some(counts) = self.counts.get_mut(&batch) else {
            return false;
        };
        counts.add(status);
        if let ItemStatus::Solved(solution) = status {
            if solution.nodes > 0 {
                self.finished_costs
                    .entry(batch)
                    .or_default()
                    .add(solution.nodes);
            }
        }
        let done = counts.done();
        if done {
            if let Some(started) = self.started.get(&batch) {
                self.seconds.insert(batch, started.elapsed().as_secs_f64());
            }
            if self.completion_held > 0 {
                self.completing.insert(batch);
                return false;
            }
        }
        done
    }

    /// A quarantine's withdrawal starts: no batch ends until it is done
    /// ([`Batches::release_completion`]). Without this, a batch whose last items ended while
    /// the withdrawal was still looking ended, and then opened again once it found its other
    /// items resting on the worker: `submit --wait` printed them pending.
    pub(super) fn hold_completion(&mut self) {
        self.completion_held += 1;
    }

    /// A quarantine's withdrawal is done; returns the batches that may now end (every item
    /// ended and no other withdrawal running).
    pub(super) fn release_completion(&mut self) -> Vec<u64> {
        self.completion_held = self.completion_held.saturating_sub(1);
        if self.completion_held > 0 {
            return Vec::new();
        }
        let completing = std::mem::take(&mut self.completing);
        completing
            .into_iter()
            .filter(|batch| self.counts.get(batch).is_some_and(ItemCounts::done))
            .collect()
    }

    /// The open batches not done, with their counts and nodes/s now.
    pub(super) fn running(&self) -> impl Iterator<Item = (u64, ItemCounts, f64)> + '_ {
        let now = Instant::now();
        self.counts
            .iter()
            .filter(|(_, counts)| !counts.done())
            .map(move |(&batch, &counts)| {
                let nodes = self.nodes.get(&batch).copied().unwrap_or(0);
                let rate = self
                    .rates
                    .get(&batch)
                    .map_or(0.0, |r| r.per_second(now, nodes));
                (batch, counts, rate)
            })
    }

    /// What `batch`'s finished puzzles cost.
    pub(super) fn finished_costs(&self, batch: u64) -> FinishedCosts {
        self.finished_costs.get(&batch).copied().unwrap_or_default()
    }

    /// The counts of `batch` if this process has them.
    pub(super) fn counts(&self, batch: u64) -> Option<ItemCounts> {
        self.counts.get(&batch).copied()
    }

    /// A finished batch's progress, from its stored figures.
    pub(super) fn finished(batch: u64, total: u32, figures: &BatchFigures) -> BatchProgress {
        BatchProgress {
            batch,
            total,
            solved: figures.solved,
            failed: figures.failed,
            // What ended neither solved, failed nor cancelled ended bounded (the figures were
            // stored before bounded answers were counted, and hold no count of their own).
            bounded: total.saturating_sub(figures.solved + figures.failed + figures.cancelled),
            items_cancelled: figures.cancelled,
            done: true,
            bounds: Vec::new(),
            nodes: figures.nodes,
            nodes_per_second: if figures.seconds > 0.0 {
                figures.nodes as f64 / figures.seconds
            } else {
                0.0
            },
            eta: None,
            workers: 0,
            seconds: figures.seconds,
            preparing: None,
            cancelled: false,
            submitted_unix_ms: 0,
            heuristic: String::new(),
            goal: String::new(),
            priority: Priority::DEFAULT,
            retry_of: None,
            owner: None,
        }
    }

    /// `batch`'s progress from its counts, the bounds its unfinished puzzles are searching and
    /// the workers connected.
    pub(super) fn progress(
        &self,
        batch: u64,
        counts: ItemCounts,
        bounds: Vec<u32>,
        workers: u32,
    ) -> BatchProgress {
        let nodes = self.nodes.get(&batch).copied().unwrap_or(0);
        let ended = self.seconds.get(&batch).copied();
        let seconds = ended.unwrap_or_else(|| {
            self.started
                .get(&batch)
                .map_or(0.0, |s| s.elapsed().as_secs_f64())
        });
        let nodes_per_second = match (ended, self.rates.get(&batch)) {
            (None, Some(rate)) => rate.per_second(Instant::now(), nodes),
            _ if seconds > 0.0 => nodes as f64 / seconds,
            _ => 0.0,
        };
        BatchProgress {
            batch,
            total: counts.total,
            solved: counts.solved,
            failed: counts.failed,
            bounded: counts.bounded,
            items_cancelled: counts.cancelled,
            done: counts.done() && !self.completing.contains(&batch),
            bounds,
            nodes,
            nodes_per_second,
            eta: None,
            workers,
            seconds,
            preparing: None,
            cancelled: false,
            submitted_unix_ms: 0,
            heuristic: String::new(),
            goal: String::new(),
            priority: Priority::DEFAULT,
            retry_of: None,
            owner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While a quarantine's withdrawal looks for the items resting on the worker, a batch whose
    /// last item ends does not end: it ends once the withdrawal is done, unless an item of it
    /// opened again.
    #[test]
    fn no_batch_ends_while_a_withdrawal_is_looking() {
        let mut batches = Batches::default();
        let heuristic = HeuristicChoice::Classic(tilesolve::heuristic::HeuristicKind::Manhattan);
        for batch in [1, 2] {
            let counts = ItemCounts {
                total: 1,
                ..ItemCounts::default()
            };
            batches.open(batch, counts, heuristic);
        }
        let failed = ItemStatus::Failed("no".into());
        batches.hold_completion();
        batches.hold_completion();
        assert!(!batches.item_finished(1, &failed));
        assert!(!batches.item_finished(2, &failed));
        let progress = batches.progress(1, batches.counts(1).unwrap(), Vec::new(), 0);
        assert!(!progress.done);
        // Batch 2's item opened again (it rested on the worker).
        batches.reopen(
            2,
            ItemCounts {
                total: 1,
                ..ItemCounts::default()
            },
            None,
            heuristic,
        );
        assert_eq!(batches.release_completion(), Vec::<u64>::new());
        assert_eq!(batches.release_completion(), vec![1]);
    }
}
