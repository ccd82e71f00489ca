//! Task, audit and worker ids (one counter, prefixed with the coordinator's incarnation, so
//! that no id of an earlier run is handed out again), and batch ids.

use super::SchedulerError;
use crate::store::Store;

/// Task, audit and worker ids (one counter, prefixed with the incarnation), and batch ids.
pub(super) struct Ids {
    next: u64,
    /// The largest batch id this process handed out (batches being taken in are not stored
    /// whole yet).
    last_batch: u64,
}

impl Ids {
    pub(super) fn new(incarnation: u64) -> Ids {
        Ids {
            next: incarnation << 40,
            last_batch: 0,
        }
    }

    /// The next task, audit or worker id.
    pub(super) fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// The next batch id: past the store's and past every id this process handed out.
    pub(super) fn next_batch(&mut self, store: &Store) -> Result<u64, SchedulerError> {
        let batch = store.next_batch_id()?.max(self.last_batch + 1);
        self.last_batch = batch;
        Ok(batch)
    }
}
