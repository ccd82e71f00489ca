//! What a worker is told at start, and how it ends with an error.

use std::path::PathBuf;

use thiserror::Error;
use tilesolve::connect::ConnectOptions;
use tilesolve::time_scale::TimeScale;

use crate::{Metrics, Readiness};

#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Where the coordinator is, with the token and TLS settings to reach it.
    pub coordinator: ConnectOptions,
    pub threads: usize,
    /// Tasks held per thread beyond the one it runs, so that a thread finishing a task starts
    /// the next at once instead of waiting a round trip for it (0: none).
    pub prefetch: usize,
    /// Where pattern databases are loaded from (and built into, if missing).
    pub data: PathBuf,
    /// Bytes the pattern tables may take: a task asking for `default` gets the strongest
    /// preset of its size that fits.
    pub table_budget: u64,
    /// Where the worker says whether it is registered (a health endpoint, or nowhere).
    pub readiness: Readiness,
    /// What it counts (served by [`Metrics::serve`], or not at all).
    pub metrics: Metrics,
    /// What the dashboard calls it (default: its host and process id).
    pub name: Option<String>,
    /// Its policy times stretched for a process held to a fraction of a core (1 on a real host).
    pub time_scale: TimeScale,
}

#[derive(Debug, Error)]
pub enum WorkerError {
    #[error("coordinator refused this worker: {0}")]
    Refused(String),
}
