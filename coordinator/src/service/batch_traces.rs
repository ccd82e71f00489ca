//! The trace each traced batch was submitted in: its tasks carry it to the workers
//! (`Task.traceparent`), so a worker's task spans join the submitter's trace. Only when traces
//! are exported; at most [`KEPT`] batches, the oldest dropped first (their later tasks then go
//! out untraced, which loses spans, never work).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Traced batches remembered at once.
const KEPT: usize = 1_024;

#[derive(Clone, Default)]
pub struct BatchTraces(Arc<Mutex<BTreeMap<u64, String>>>);

impl BatchTraces {
    /// Remembers `batch`'s trace.
    pub fn insert(&self, batch: u64, traceparent: String) {
        let mut traces = self.0.lock().unwrap_or_else(|p| p.into_inner());
        traces.insert(batch, traceparent);
        while traces.len() > KEPT {
            traces.pop_first();
        }
    }

    /// `batch`'s trace, or an empty string.
    pub fn of(&self, batch: u64) -> String {
        let traces = self.0.lock().unwrap_or_else(|p| p.into_inner());
        traces.get(&batch).cloned().unwrap_or_default()
    }

    /// Whether any batch is traced (when none is, tasks skip the lookup).
    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_batches_are_forgotten_first() {
        let traces = BatchTraces::default();
        assert!(traces.is_empty());
        for batch in 0..(KEPT as u64 + 2) {
            traces.insert(batch, format!("trace {batch}"));
        }
        assert_eq!(traces.of(0), "");
        assert_eq!(traces.of(1), "");
        assert_eq!(traces.of(2), "trace 2");
        assert_eq!(traces.of(KEPT as u64 + 1), format!("trace {}", KEPT + 1));
    }
}
