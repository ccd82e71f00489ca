//! The store's failure, told to the calls waiting on it.
//!
//! After a failed write sled can wait for ever in a flush (RELIABILITY.md, a full disk), and a
//! call waiting on that flush would wait with it. The server's store check finds the store
//! failed within its stall limit and says so here; a call waiting on the store answers then,
//! unacknowledged, instead.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::scheduler::SchedulerError;

/// What a submission hears when the store failed while its batch was being made durable.
const NOT_ACKNOWLEDGED: &str = "the coordinator's disk is full (its store stopped taking \
    writes while this batch was being stored): the batch is not acknowledged. The coordinator \
    stops serving and starts again once its data directory takes writes; submit again then";

/// Whether the store has failed, shared by the service's clones.
#[derive(Clone)]
pub struct StoreFailure(Arc<watch::Sender<bool>>);

impl Default for StoreFailure {
    fn default() -> Self {
        StoreFailure(Arc::new(watch::Sender::new(false)))
    }
}

impl StoreFailure {
    /// The store stopped taking writes: every wait in [`StoreFailure::unless_failed`] ends.
    pub fn set(&self) {
        self.0.send_replace(true);
    }

    /// What `stored` (work on the blocking pool that ends with a write made durable) returns,
    /// or, if the store fails first, a ResourceExhausted saying it was not acknowledged. Work
    /// that ended first wins: what it made durable is acknowledged.
    pub async fn unless_failed<T>(
        &self,
        stored: JoinHandle<Result<T, SchedulerError>>,
    ) -> Result<T, SchedulerError> {
        let mut failed = self.0.subscribe();
        tokio::select! {
            biased;
            joined = stored => joined.map_err(|e| SchedulerError::Internal(e.to_string()))?,
            // The sender lives as long as `self`, so this ends only with the failure.
            _ = failed.wait_for(|failed| *failed) => {
                tracing::warn!("a submission was still being stored when the store failed: not acknowledged");
                Err(SchedulerError::ResourceExhausted(NOT_ACKNOWLEDGED.into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flush that never returns (sled's, after a full disk) leaves its call answered, not
    /// waiting, once the store is found failed.
    #[tokio::test]
    async fn a_store_write_that_never_ends_is_answered_once_the_store_fails() {
        let failure = StoreFailure::default();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let stuck = tokio::task::spawn_blocking(move || {
            // Blocks until the test ends (a recv on a channel whose sender is then dropped).
            let _ = held.recv();
            Ok(())
        });
        let waiting = tokio::spawn({
            let failure = failure.clone();
            async move { failure.unless_failed(stuck).await }
        });
        failure.set();
        let answer = waiting.await.unwrap();
        assert!(
            matches!(&answer, Err(SchedulerError::ResourceExhausted(said)) if said.contains("not acknowledged")),
            "{answer:?}"
        );
        drop(release);
    }

    /// A write that ended before the failure keeps its answer: it was made durable.
    #[tokio::test]
    async fn a_store_write_that_ended_first_is_acknowledged() {
        let failure = StoreFailure::default();
        let stored = tokio::task::spawn_blocking(|| Ok(7));
        while !stored.is_finished() {
            tokio::task::yield_now().await;
        }
        failure.set();
        assert_eq!(failure.unless_failed(stored).await.unwrap(), 7);
    }
}
