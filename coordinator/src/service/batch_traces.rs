//! The trace each traced batch was submitted in: its tasks carry it to the workers
//! (`Task.traceparent`), so a worker's task spans join the submitter's trace. Only when traces
//! are exported; at most [`KEPT`] batches, the oldest dropped first (their later tasks then go
//! out untraced, which loses spans, never work).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tilesolve::proto::v1 as pb;

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

    /// Gives each of `tasks` its batch's trace, under one hold of the lock (none when no
    /// batch is traced, the usual case).
    pub fn fill(&self, tasks: &mut [pb::Task]) {
        let traces = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if traces.is_empty() {
            return;
        }
        for task in tasks {
            if let Some(traceparent) = traces.get(&task.batch_id) {
                task.traceparent.clone_from(traceparent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_batches_are_forgotten_first() {
        let traces = BatchTraces::default();
        for batch in 0..(KEPT as u64 + 2) {
            traces.insert(batch, format!("trace {batch}"));
        }
        let mut tasks: Vec<pb::Task> = [0, 1, 2, KEPT as u64 + 1]
            .into_iter()
            .map(|batch_id| pb::Task {
                batch_id,
                ..pb::Task::default()
            })
            .collect();
        traces.fill(&mut tasks);
        let filled: Vec<&str> = tasks.iter().map(|t| t.traceparent.as_str()).collect();
        assert_eq!(filled, ["", "", "trace 2", &format!("trace {}", KEPT + 1)]);
    }
}
