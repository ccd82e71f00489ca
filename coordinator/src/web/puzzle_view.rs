//! The puzzle view's one-board batches: hidden from the batch list while they run, and removed
//! a minute after they end (the answer stays in the store, so the view's links and lookups
//! still find it), so trying boards one after another does not fill the list. Batches this
//! process started: after a restart, one still running shows as an ordinary batch.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::service::Service;

/// How often a puzzle-view batch is looked at until it ends.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// How long an ended puzzle-view batch stays: the page following it reads its answer first.
const KEPT_AFTER_IT_ENDS: Duration = Duration::from_secs(60);

#[derive(Clone, Default)]
pub(super) struct PuzzleViewBatches(Arc<Mutex<HashSet<u64>>>);

impl PuzzleViewBatches {
    pub(super) fn contains(&self, batch: u64) -> bool {
        self.0.lock().is_ok_and(|set| set.contains(&batch))
    }

    /// `batch` was submitted from the puzzle view: hidden from now on, pruned once it ended.
    pub(super) fn started(&self, service: Service, batch: u64) {
        if let Ok(mut set) = self.0.lock() {
            set.insert(batch);
        }
        let batches = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                // A batch that cannot be read (pruned meanwhile) is over too.
                if service.read(|s| s.progress(batch)).map_or(true, |p| p.done) {
                    break;
                }
            }
            tokio::time::sleep(KEPT_AFTER_IT_ENDS).await;
            let pruning = service.clone();
            let pruned =
                tokio::task::spawn_blocking(move || pruning.prune_batches(&[batch], false)).await;
            if let Ok(Err(error)) = pruned {
                tracing::warn!(batch, %error, "a puzzle view's batch was not removed");
            }
            if let Ok(mut set) = batches.0.lock() {
                set.remove(&batch);
            }
        });
    }
}
