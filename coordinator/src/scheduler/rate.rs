//! The one definition of nodes/s the coordinator shows (a worker's, a batch's, the header's,
//! the ETA's): expanded nodes reported over the last [`RATE_WINDOW`], divided by the time from
//! the oldest report within it (or from the start, when it is younger) to now. A leaf.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The span nodes/s is measured over: long enough to smooth out tasks finishing in bursts,
/// short enough to show a worker that has gone idle.
pub const RATE_WINDOW: Duration = Duration::from_secs(30);

/// Reports closer together than this are one sample: a batch taking thousands of reports a
/// second keeps a few dozen samples, not thousands.
const SAMPLE_SPACING: Duration = Duration::from_millis(500);

/// Nodes reported over the last [`RATE_WINDOW`].
#[derive(Clone, Debug)]
pub struct WindowRate {
    started: Instant,
    /// Nodes already counted at the start (a batch reopened after some of its answers were
    /// withdrawn counts on from its earlier nodes).
    base: u64,
    /// (when, nodes reported so far) within the window, at least [`SAMPLE_SPACING`] apart.
    samples: VecDeque<(Instant, u64)>,
}

impl WindowRate {
    pub fn new(started: Instant) -> WindowRate {
        WindowRate::counting_from(started, 0)
    }

    /// A count that stands at `base` nodes at `started`.
    pub fn counting_from(started: Instant, base: u64) -> WindowRate {
        WindowRate {
            started,
            base,
            samples: VecDeque::new(),
        }
    }

    /// `total` nodes have been reported so far, as of `now`.
    pub fn record(&mut self, now: Instant, total: u64) {
        match self.samples.back_mut() {
            Some(last) if now.duration_since(last.0) < SAMPLE_SPACING => last.1 = total,
            _ => self.samples.push_back((now, total)),
        }
        // Keep one sample at or before the window's start: the count the window starts from.
        while self
            .samples
            .get(1)
            .is_some_and(|&(when, _)| now.duration_since(when) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// Nodes per second at `now`, `total` reported so far: from the sample the window starts
    /// at (from the start and its base when there is none that old).
    pub fn per_second(&self, now: Instant, total: u64) -> f64 {
        let (since, before) = self
            .samples
            .iter()
            .rev()
            .find(|&&(when, _)| now.duration_since(when) >= RATE_WINDOW)
            .or_else(|| self.samples.front().filter(|_| self.started_long_ago(now)))
            .copied()
            .unwrap_or((self.started, self.base));
        let seconds = now.duration_since(since).as_secs_f64();
        if seconds < 1e-3 {
            return 0.0;
        }
        total.saturating_sub(before) as f64 / seconds
    }

    /// The start is older than the window: the oldest sample kept is where it begins.
    fn started_long_ago(&self, now: Instant) -> bool {
        now.duration_since(self.started) >= RATE_WINDOW
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A young count is measured from its start; an old one over the last 30 s only, so a
    /// batch that slowed down shows its speed now, not its average.
    #[test]
    fn the_rate_is_over_the_last_thirty_seconds_or_since_the_start() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut rate = WindowRate::new(start);
        rate.record(at(10), 1_000);
        assert_eq!(rate.per_second(at(10), 1_000), 100.0);
        // 1,000 nodes a second for the first 40 s, then 100 a second.
        for s in 11..=40 {
            rate.record(at(s), s * 100);
        }
        let mut total = 4_000;
        for s in 41..=100 {
            total += 100;
            rate.record(at(s), total);
        }
        assert!((rate.per_second(at(100), total) - 100.0).abs() < 1e-9);
        // Nothing reported for 20 s: the window still starts 30 s back.
        let idle = rate.per_second(at(120), total);
        assert!((idle - 1_000.0 / 30.0).abs() < 1e-9, "{idle}");
        // A count reopened at 5,000 nodes counts only what came after.
        let mut reopened = WindowRate::counting_from(start, 5_000);
        reopened.record(at(10), 6_000);
        assert_eq!(reopened.per_second(at(10), 6_000), 100.0);
    }
}
