//! The coordinator's work over time, for the dashboard's charts: every few seconds a sample of
//! the scheduler's totals and levels goes into the store's `history` tree, and
//! [`History::view`] turns a time range of them into chart points (rates between consecutive
//! points, thinned to at most [`MAX_POINTS`]).
//!
//! The totals in a sample count from the store's first sample: each start of the coordinator
//! carries on from the last sample it finds ([`History::open`]), so the charts and the
//! dashboard's totals survive restarts. What happened between the last sample and a crash is
//! not counted (at most one interval's work).

use std::time::Duration;

use serde::Serialize;

use crate::scheduler::{now_unix_ms, SchedulerTotals};
use crate::service::Service;
use crate::store::{HistorySample, Store, StoreError};

/// How often a sample is taken by default (`serve --history-seconds`).
pub const DEFAULT_HISTORY_INTERVAL: Duration = Duration::from_secs(15);

/// The most points a view holds: about one per two pixels of a chart.
pub const MAX_POINTS: usize = 360;

/// The store's history and the totals this process started from.
#[derive(Clone)]
pub struct History {
    store: Store,
    base: HistorySample,
}

/// One point of a chart: rates over the `window_seconds` before it, levels at it.
#[derive(Debug, Serialize, PartialEq)]
pub struct HistoryPoint {
    pub unix_ms: u64,
    pub window_seconds: f64,
    pub solved_per_minute: f64,
    pub failed_per_minute: f64,
    pub nodes_per_second: f64,
    pub tasks_queued: u64,
    pub tasks_running: u64,
    pub puzzles_pending: u64,
    pub workers: u64,
}

/// What the dashboard charts: the points of a time range, the gaps in it (the coordinator was
/// not running), and the totals now.
#[derive(Debug, Serialize)]
pub struct HistoryView {
    pub from_unix_ms: u64,
    pub to_unix_ms: u64,
    pub interval_seconds: f64,
    /// Each point's rates are over this many seconds (the spacing of the thinned points).
    pub window_seconds: f64,
    /// A point after a gap longer than three spacings starts a new line.
    pub points: Vec<Option<HistoryPoint>>,
    pub puzzles_solved: u64,
    pub puzzles_failed: u64,
    pub nodes: u64,
}

impl History {
    /// The history in `store`, carrying on from its last sample.
    pub fn open(store: Store) -> Result<History, StoreError> {
        let base = store.last_history()?.unwrap_or_default();
        Ok(History { store, base })
    }

    /// The sample for `unix_ms`: the totals carried over plus this process's counters.
    pub fn sample(&self, totals: &SchedulerTotals, unix_ms: u64) -> HistorySample {
        HistorySample {
            unix_ms,
            puzzles_solved: self.base.puzzles_solved + totals.puzzles_solved,
            puzzles_failed: self.base.puzzles_failed + totals.puzzles_failed,
            puzzles_cancelled: self.base.puzzles_cancelled + totals.puzzles_cancelled,
            nodes: self.base.nodes + totals.nodes,
            tasks_queued: totals.tasks_queued,
            tasks_running: totals.tasks_running,
            puzzles_pending: totals.puzzles_pending,
            workers: totals.workers,
            worker_threads: totals.worker_threads,
        }
    }

    /// Stores the sample for now. Blocking (a sled write).
    pub fn record(&self, totals: &SchedulerTotals) -> Result<(), StoreError> {
        self.store.put_history(&self.sample(totals, now_unix_ms()))
    }

    /// The last `seconds` as chart points, ending with the sample for now.
    pub fn view(
        &self,
        totals: &SchedulerTotals,
        seconds: u64,
        interval: Duration,
    ) -> Result<HistoryView, StoreError> {
        let now = self.sample(totals, now_unix_ms());
        let from = now.unix_ms.saturating_sub(seconds * 1000);
        let mut samples = self.store.history_since(from)?;
        samples.push(now);
        let spacing_ms = (seconds * 1000 / MAX_POINTS as u64).max(interval.as_millis() as u64);
        let kept = thin(&samples, spacing_ms);
        let mut points = Vec::with_capacity(kept.len());
        for pair in kept.windows(2) {
            let (before, at) = (pair[0], pair[1]);
            let elapsed_ms = at.unix_ms.saturating_sub(before.unix_ms);
            if elapsed_ms > 3 * spacing_ms {
                points.push(None);
            }
            points.push(Some(point(before, at)));
        }
        Ok(HistoryView {
            from_unix_ms: from,
            to_unix_ms: now.unix_ms,
            interval_seconds: interval.as_secs_f64(),
            window_seconds: spacing_ms as f64 / 1000.0,
            points,
            puzzles_solved: now.puzzles_solved,
            puzzles_failed: now.puzzles_failed,
            nodes: now.nodes,
        })
    }
}

/// The samples at least `spacing_ms` apart (the first and the last always kept).
/// The last (now) replaces a kept sample closer than the spacing before it: a rate over the
/// fraction of a second since the last stored sample read 0 whenever no task had just reported,
/// and every chart ended in a false drop.
fn thin(samples: &[HistorySample], spacing_ms: u64) -> Vec<HistorySample> {
    let mut kept: Vec<HistorySample> = Vec::new();
    for (index, sample) in samples.iter().enumerate() {
        let last = index + 1 == samples.len();
        let close = kept
            .last()
            .is_some_and(|previous| sample.unix_ms < previous.unix_ms + spacing_ms);
        match (close, last) {
            (true, false) => {}
            (true, true) if kept.len() > 1 => {
                kept.pop();
                kept.push(*sample);
            }
            _ => kept.push(*sample),
        }
    }
    kept
}

fn point(before: HistorySample, at: HistorySample) -> HistoryPoint {
    let seconds = (at.unix_ms.saturating_sub(before.unix_ms) as f64 / 1000.0).max(0.001);
    let per_second = |now: u64, then: u64| now.saturating_sub(then) as f64 / seconds;
    HistoryPoint {
        unix_ms: at.unix_ms,
        window_seconds: seconds,
        solved_per_minute: per_second(at.puzzles_solved, before.puzzles_solved) * 60.0,
        failed_per_minute: per_second(at.puzzles_failed, before.puzzles_failed) * 60.0,
        nodes_per_second: per_second(at.nodes, before.nodes),
        tasks_queued: at.tasks_queued,
        tasks_running: at.tasks_running,
        puzzles_pending: at.puzzles_pending,
        workers: at.workers,
    }
}

/// Takes a sample every `interval` for the rest of the process's life (the first at once).
pub async fn record_every(history: History, service: Service, interval: Duration) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (totals, owner_nodes) = service.read(|s| (s.totals(), s.owner_nodes()));
        let recording = history.clone();
        let store = service.store().clone();
        // The owners' nodes today go with each sample, so a restart keeps their day's count.
        let record = move || {
            recording.record(&totals)?;
            match owner_nodes.nodes.is_empty() {
                true => Ok(()),
                false => store.put_owner_nodes(&owner_nodes),
            }
        };
        match tokio::task::spawn_blocking(record).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "could not store a history sample"),
            Err(error) => tracing::warn!(%error, "storing a history sample stopped"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seconds: u64, solved: u64, nodes: u64) -> HistorySample {
        HistorySample {
            unix_ms: seconds * 1000,
            puzzles_solved: solved,
            nodes,
            ..HistorySample::default()
        }
    }

    #[test]
    fn thinning_keeps_points_a_spacing_apart_and_the_last_a_spacing_from_the_one_before() {
        let samples: Vec<_> = (0..10).map(|s| sample(s * 15, s, 0)).collect();
        let kept: Vec<u64> = thin(&samples, 60_000)
            .iter()
            .map(|s| s.unix_ms / 1000)
            .collect();
        assert_eq!(kept, vec![0, 60, 135]);
        // Now, a moment after the last stored sample: the last point spans a whole spacing.
        let mut samples: Vec<_> = (0..4).map(|s| sample(s * 15, s, 0)).collect();
        samples.push(sample(45, 3, 0));
        samples.last_mut().unwrap().unix_ms += 200;
        let kept: Vec<u64> = thin(&samples, 15_000).iter().map(|s| s.unix_ms).collect();
        assert_eq!(kept, vec![0, 15_000, 30_000, 45_200]);
    }

    #[test]
    fn rates_are_over_the_time_between_points() {
        let at = point(sample(0, 10, 1_000), sample(30, 25, 61_000));
        assert_eq!(at.window_seconds, 30.0);
        assert_eq!(at.solved_per_minute, 30.0);
        assert_eq!(at.nodes_per_second, 2_000.0);
    }

    #[test]
    fn a_restarted_coordinator_carries_the_totals_on_and_its_downtime_is_a_gap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let now = now_unix_ms();
        let earlier = HistorySample {
            unix_ms: now - 600_000,
            puzzles_solved: 40,
            nodes: 5_000,
            ..HistorySample::default()
        };
        store.put_history(&earlier).unwrap();
        let history = History::open(store).unwrap();
        let totals = SchedulerTotals {
            puzzles_solved: 2,
            nodes: 100,
            ..SchedulerTotals::default()
        };
        let view = history
            .view(&totals, 3600, Duration::from_secs(15))
            .unwrap();
        assert_eq!((view.puzzles_solved, view.nodes), (42, 5_100));
        // Ten minutes without a sample (the spacing of an hour's view is 15 s): a gap, then
        // a point whose rate spreads what was counted over the whole gap.
        assert_eq!(view.points.len(), 2);
        assert!(view.points[0].is_none());
        let last = view.points[1].as_ref().unwrap();
        assert!((last.window_seconds - 600.0).abs() < 5.0, "{last:?}");
    }
}
