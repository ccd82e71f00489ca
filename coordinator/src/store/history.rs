//! The `history` tree: the coordinator's work over time, one sample every few seconds, kept for
//! [`HISTORY_KEPT`], so the dashboard's charts survive reloads and restarts.

use serde::{Deserialize, Serialize};

use super::format::{decode, encode};
use super::{Store, StoreError};

/// How long samples are kept: a week of charts, and a day beyond it.
pub const HISTORY_KEPT: std::time::Duration = std::time::Duration::from_secs(8 * 24 * 3600);

/// One sample. The totals count from the store's first sample on (each start of the
/// coordinator carries on from the last sample it finds), so they rise across restarts; the
/// levels are the scheduler's at that moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistorySample {
    pub unix_ms: u64,
    pub puzzles_solved: u64,
    pub puzzles_failed: u64,
    /// Counted since coordinators kept it (absent from older samples: 0).
    #[serde(default)]
    pub puzzles_cancelled: u64,
    pub nodes: u64,
    pub tasks_queued: u64,
    pub tasks_running: u64,
    pub puzzles_pending: u64,
    pub workers: u64,
    pub worker_threads: u64,
}

fn history_key(unix_ms: u64) -> [u8; 9] {
    let mut key = [super::format::KEY_VERSION; 9];
    key[1..].copy_from_slice(&unix_ms.to_be_bytes());
    key
}

impl Store {
    /// Adds a sample, and drops those older than [`HISTORY_KEPT`] before it.
    pub fn put_history(&self, sample: &HistorySample) -> Result<(), StoreError> {
        self.history
            .insert(history_key(sample.unix_ms), encode(sample))?;
        let cutoff = sample
            .unix_ms
            .saturating_sub(HISTORY_KEPT.as_millis() as u64);
        for key in self.history.range(..history_key(cutoff)).keys() {
            self.history.remove(key?)?;
        }
        Ok(())
    }

    /// Samples taken at or after `from_unix_ms`, oldest first.
    pub fn history_since(&self, from_unix_ms: u64) -> Result<Vec<HistorySample>, StoreError> {
        self.history
            .range(history_key(from_unix_ms)..)
            .values()
            .map(|bytes| decode("history", &bytes?))
            .collect()
    }

    /// The newest sample, if any.
    pub fn last_history(&self) -> Result<Option<HistorySample>, StoreError> {
        self.history
            .last()?
            .map(|(_, bytes)| decode("history", &bytes))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_back_in_order_from_a_time_and_old_ones_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.last_history().unwrap(), None);
        let day = 24 * 3600 * 1000;
        let sample = |unix_ms, puzzles_solved| HistorySample {
            unix_ms,
            puzzles_solved,
            ..HistorySample::default()
        };
        for (at, solved) in [(day, 1), (10 * day, 2), (10 * day + 15_000, 5)] {
            store.put_history(&sample(at, solved)).unwrap();
        }
        // The sample of day 1 is more than eight days older than the last: gone.
        assert_eq!(
            store.history_since(0).unwrap(),
            vec![sample(10 * day, 2), sample(10 * day + 15_000, 5)]
        );
        assert_eq!(
            store.history_since(10 * day + 1).unwrap(),
            vec![sample(10 * day + 15_000, 5)]
        );
        assert_eq!(
            store.last_history().unwrap(),
            Some(sample(10 * day + 15_000, 5))
        );
    }
}
