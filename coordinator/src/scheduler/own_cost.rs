//! The coordinator's own CPU a task, measured where it serves workers in processes of their
//! own (`serve`): what a split sizes its tasks by, so that serving them stays within
//! [`crate::frontier::COORDINATOR_SHARE`] of the search on this host, at this load.
//!
//! The configured time a task ([`SchedulerConfig::coordinator_seconds_per_task`], 90 us) is
//! what a task costs when a thousand workers' calls arrive together. Fifteen workers' calls
//! each wake the coordinator on their own: on hard80 a task cost it 250-350 us of CPU (the
//! call's h2 and socket work, the wake-ups, audits, the store), and at tasks sized for 90 us
//! its share was 1.8-2.3% of the search. The process's CPU (`getrusage`) is read every
//! [`SAMPLE_TASKS`] reports; the estimate moves a third of the way to each window's mean,
//! and a window longer than a lease timeout (an idle coordinator heartbeating) is dropped.
//! In the embedded `batch` the process holds the search threads too, so nothing is measured
//! there and the configured time stands.

use std::time::Instant;

use super::config::SchedulerConfig;

/// Reports in one measured window: at a quarter of a millisecond a task, about 8 ms of the
/// coordinator's CPU, well above `getrusage`'s resolution.
pub const SAMPLE_TASKS: u64 = 32;

/// Reports in the first window: few, so that it ends before a batch's first splits, which
/// hold most of its tasks (on hard80 every puzzle's bound-78 iteration, split 0.3-0.8 s into
/// the run at a tenth of a core, after about 20 reports, held 641 of its 600-700 tasks).
pub const FIRST_SAMPLE_TASKS: u64 = 8;

/// The measured time a task counts for at most this many times the configured one (36 ms of
/// a thread a task, on average, at 90 us): CPU the coordinator spends on other things (a
/// batch's submission, a table it builds, clients' reads) is not the tasks' to carry in full,
/// and much longer tasks leave threads idle at iterations' ends.
pub const MAX_OWN_COST_FACTOR: f64 = 4.0;

/// The measured CPU a task, and the window being measured (nothing unless
/// [`SchedulerConfig::measure_own_cost`]).
#[derive(Debug, Default)]
pub(super) struct OwnCost {
    /// Where the current window started: the process's CPU seconds, and when.
    window_start: Option<(f64, Instant)>,
    /// Reports applied in the current window.
    tasks: u64,
    /// The measured seconds of CPU a task (unstretched), once a window has ended.
    estimate: Option<f64>,
}

impl OwnCost {
    /// Counts `count` reports applied; ends the window once it holds [`SAMPLE_TASKS`]
    /// ([`FIRST_SAMPLE_TASKS`] for the first).
    pub(super) fn reported(&mut self, count: usize, config: &SchedulerConfig) {
        if !config.measure_own_cost || count == 0 {
            return;
        }
        let Some((cpu_before, started)) = self.window_start else {
            self.window_start = process_cpu_seconds().map(|cpu| (cpu, Instant::now()));
            self.tasks = count as u64;
            return;
        };
        self.tasks = self.tasks.saturating_add(count as u64);
        let window = match self.estimate {
            Some(_) => SAMPLE_TASKS,
            None => FIRST_SAMPLE_TASKS,
        };
        if self.tasks < window {
            return;
        }
        let Some(cpu) = process_cpu_seconds() else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(started) <= config.lease_timeout {
            let sample = (cpu - cpu_before).max(0.0) / self.tasks as f64;
            let estimate = match self.estimate {
                Some(estimate) => estimate + (sample - estimate) / 3.0,
                None => sample,
            };
            tracing::debug!(
                tasks = self.tasks,
                sample,
                estimate,
                "the coordinator's CPU a task measured"
            );
            self.estimate = Some(estimate);
        }
        self.window_start = Some((cpu, now));
        self.tasks = 0;
    }

    /// The measured CPU a task, unstretched (`None`: not measured, or no window ended yet).
    pub(super) fn measured(&self) -> Option<f64> {
        self.estimate
    }

    /// The coordinator's time a task that a split is sized by: the measured one stretched by
    /// the time scale, between the configured time and [`MAX_OWN_COST_FACTOR`] times it.
    pub(super) fn seconds_per_task(&self, config: &SchedulerConfig) -> f64 {
        let configured = config.coordinator_seconds_per_task;
        match self.estimate {
            Some(estimate) => config
                .time_scale
                .stretch_seconds(estimate)
                .clamp(configured, configured * MAX_OWN_COST_FACTOR),
            None => configured,
        }
    }
}

/// This process's CPU seconds, user and system, to the microsecond (`process_stats` reads
/// `/proc/self/stat`, in 10 ms ticks: a window's whole CPU at 250 us a task).
#[cfg(unix)]
fn process_cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a whole `rusage` into the pointer it is given and reads nothing.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: it returned 0, so the struct is written.
    let usage = unsafe { usage.assume_init() };
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(not(unix))]
fn process_cpu_seconds() -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measuring() -> SchedulerConfig {
        SchedulerConfig {
            measure_own_cost: true,
            ..SchedulerConfig::default()
        }
    }

    #[test]
    fn nothing_is_measured_unless_asked() {
        let config = SchedulerConfig::default();
        let mut cost = OwnCost::default();
        for _ in 0..10 {
            cost.reported(SAMPLE_TASKS as usize, &config);
        }
        assert_eq!(cost.measured(), None);
        assert_eq!(
            cost.seconds_per_task(&config),
            config.coordinator_seconds_per_task
        );
    }

    #[test]
    fn a_window_of_reports_measures_the_cpu_spent_between_them() {
        let config = measuring();
        let mut cost = OwnCost::default();
        cost.reported(1, &config);
        assert_eq!(cost.measured(), None, "the first report opens the window");
        cost.reported(FIRST_SAMPLE_TASKS as usize - 2, &config);
        assert_eq!(cost.measured(), None, "one short of a window");
        // Spin until the process's CPU has surely moved past getrusage's resolution.
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::black_box(spin.elapsed());
        }
        cost.reported(1, &config);
        let measured = cost.measured().expect("a window ended");
        assert!(measured > 0.0, "{measured}");
    }

    #[test]
    fn the_time_a_split_uses_stays_between_the_configured_one_and_its_cap() {
        let config = measuring();
        let configured = config.coordinator_seconds_per_task;
        let used = |estimate: f64| {
            OwnCost {
                estimate: Some(estimate),
                ..OwnCost::default()
            }
            .seconds_per_task(&config)
        };
        assert_eq!(used(configured / 10.0), configured);
        assert!((used(configured * 2.0) - configured * 2.0).abs() < 1e-12);
        assert!((used(1.0) - configured * MAX_OWN_COST_FACTOR).abs() < 1e-12);
    }
}
