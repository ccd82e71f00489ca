//! How many times slower than the host it stands for a process runs: the emulation of a
//! many-core host on a few cores, where every process is held to 1/K of a core
//! (`scripts/scaling.sh` with `DILATE=K`).
//!
//! Held to 1/K of a core, a process searches K times slower, so every task takes K times as
//! long, but the scheduling policy's times (how long a task may be and still be prefetched,
//! how long a worker waits before it reports or asks again, a long poll, a lease) stay what they
//! are: against the stretched work they shrink K-fold, and the emulation runs a different policy
//! from the host's. A process given the same K stretches those times alike ([`TimeScale::stretch`])
//! and then decides as the host would: its measured rates and durations, and the policy's times
//! it compares them with, are both K times the host's.

use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

/// Largest scale taken: a process at a thousandth of a core is no emulation of anything.
pub const MAX_TIME_SCALE: f64 = 1000.0;

/// The factor every policy time is stretched by: 1 on a real host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeScale(f64);

#[derive(Debug, Error, PartialEq)]
#[error("time scale {0}: give a number from 1 to {MAX_TIME_SCALE} (how many times slower than the host it stands for this process runs)")]
pub struct TimeScaleError(String);

impl TimeScale {
    /// Policy times as they are.
    pub const REAL: TimeScale = TimeScale(1.0);

    /// `factor` times the policy's times: from 1 to [`MAX_TIME_SCALE`].
    pub fn new(factor: f64) -> Result<TimeScale, TimeScaleError> {
        if (1.0..=MAX_TIME_SCALE).contains(&factor) {
            Ok(TimeScale(factor))
        } else {
            Err(TimeScaleError(factor.to_string()))
        }
    }

    pub fn factor(self) -> f64 {
        self.0
    }

    /// A policy duration as this process waits or compares it.
    pub fn stretch(self, policy: Duration) -> Duration {
        policy.mul_f64(self.0)
    }

    /// A policy time in seconds as this process compares it.
    pub fn stretch_seconds(self, policy: f64) -> f64 {
        policy * self.0
    }
}

impl Default for TimeScale {
    fn default() -> TimeScale {
        TimeScale::REAL
    }
}

impl FromStr for TimeScale {
    type Err = TimeScaleError;

    fn from_str(text: &str) -> Result<TimeScale, TimeScaleError> {
        let factor: f64 = text
            .trim()
            .parse()
            .map_err(|_| TimeScaleError(crate::excerpt::excerpt(text)))?;
        TimeScale::new(factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scale_stretches_policy_times_by_its_factor() {
        let scale: TimeScale = "10".parse().unwrap();
        assert_eq!(
            scale.stretch(Duration::from_millis(50)),
            Duration::from_millis(500)
        );
        assert_eq!(scale.stretch_seconds(0.25), 2.5);
        assert_eq!(
            TimeScale::REAL.stretch(Duration::from_secs(1)),
            Duration::from_secs(1)
        );
        assert_eq!(TimeScale::default(), TimeScale::REAL);
    }

    #[test]
    fn a_scale_below_one_above_the_most_or_not_a_number_is_refused_by_name() {
        for text in ["0.5", "0", "-3", "1001", "NaN", "inf", "ten", ""] {
            let error = text.parse::<TimeScale>().unwrap_err();
            assert!(error.to_string().contains("time scale"), "{text}: {error}");
        }
        assert_eq!("1".parse::<TimeScale>(), Ok(TimeScale::REAL));
        assert_eq!(" 2.5 ".parse::<TimeScale>().map(TimeScale::factor), Ok(2.5));
    }
}
