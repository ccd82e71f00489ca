//! The tilesolve worker: leases subtree tasks from the coordinator and runs the search kernel on
//! its own threads (never tokio's, so heartbeats are never starved), holding each heuristic's
//! tables, pattern databases included, for its whole life.
//!
//! Layout:
//! - [`run`] (here) is the whole worker: start the search threads, then one session after
//!   another until shutdown, and leave.
//! - `session`: one registration's life: connect (with backoff), register, then poll with free
//!   slots and finished results in one call, while heartbeats keep the leases of running tasks
//!   alive and carry cancellations back; leaving hands every held task back.
//! - `threads`: the search threads: a task run on the kernel, solvers built once per goal and
//!   heuristic, cancel flags; `finished` carries their results to the session, waking it only
//!   when it has something to do.
//! - `tables`: pattern tables: fetched from the coordinator (zstd or plain), or built in the
//!   data directory; `upload` sends one the coordinator asks for.
//! - `health`, `metrics`: readiness and Prometheus metrics.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tilesolve::connect::AuthChannel;
use tilesolve::pdb::PdbStore;
use tilesolve::proto::v1 as pb;

mod config;
mod finished;
mod health;
mod jobs;
mod metrics;
mod session;
mod tables;
mod threads;
mod upload;
pub use config::{WorkerConfig, WorkerError};
use finished::Finished;
pub use health::{Readiness, READY};
use jobs::Jobs;
pub use metrics::Metrics;
pub use session::LEAVE_TIMEOUT;
use session::{leave, reconnect_pauses, Session, SessionEnd, MAX_RETRY};
use tables::{log_table_event, Fetcher};
use threads::{default_heuristics, preload_present, start_threads, Held, Running, Solvers};

type WorkersClient = pb::workers_client::WorkersClient<AuthChannel>;

/// Runs a worker until `shutdown` completes. Connection losses are retried with backoff (a
/// worker started before its coordinator waits for it), and a coordinator that no longer knows
/// this worker (it restarted, or its sweep gave the worker up) gets a fresh registration; only
/// a refusal (wrong token, protocol or pattern database mismatch) ends it with an error.
///
/// At `shutdown` the worker leaves: it reports the results it has, hands every task it holds
/// back to the coordinator in the same call (so nothing waits out a lease timeout), and
/// returns within [`LEAVE_TIMEOUT`] however the coordinator answers.
pub async fn run(
    config: WorkerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), WorkerError> {
    let threads = config.threads.max(1);
    tracing::info!(
        threads,
        memory_budget_mib = config.table_budget >> 20,
        default_heuristics = %default_heuristics(config.table_budget).join(", "),
        "worker starting"
    );
    let running: Running = Arc::default();
    // Each task with when it arrived, so its report can say how long it waited for a thread;
    // the threads end when the worker does.
    let jobs = Arc::new(Jobs::default());
    let _close_jobs = CloseOnDrop(jobs.clone());
    let results = Arc::new(Finished::default());
    let held = Held {
        running: running.clone(),
        told_before_held: Arc::default(),
        jobs: jobs.clone(),
        results: results.clone(),
    };
    let solvers: Solvers = Arc::default();
    let pdbs = PdbStore::new(&config.data, threads);
    // Before registering: the checksums stated there are then those of the packed files, which
    // is what an upgraded coordinator holds.
    let repacking = pdbs.clone();
    match tokio::task::spawn_blocking(move || repacking.repack_present(&log_table_event)).await {
        Ok(Ok(0)) => {}
        Ok(Ok(repacked)) => tracing::info!(repacked, "pattern tables packed"),
        Ok(Err(error)) => tracing::warn!(%error, "could not pack a pattern table"),
        Err(error) => tracing::warn!(%error, "packing pattern tables stopped"),
    }
    let fetcher = Fetcher {
        handle: tokio::runtime::Handle::current(),
        coordinator: config.coordinator.clone(),
    };
    preload_present(
        solvers.clone(),
        pdbs.clone(),
        fetcher.clone(),
        config.table_budget,
        config.metrics.clone(),
    );
    start_threads(
        &config,
        threads,
        jobs.clone(),
        results.clone(),
        &running,
        &solvers,
        &pdbs,
        &fetcher,
    );
    tokio::pin!(shutdown);
    let mut pauses = reconnect_pauses();
    // Results taken from the threads but not yet accepted by the coordinator, and the current
    // registration: both outlive a session, so that leaving can report and hand back.
    let mut finished = Vec::new();
    let mut registration = None;
    loop {
        let started = Instant::now();
        let holds_unpacked = 1 + config.prefetch as u32;
        let session = Session {
            config: &config,
            threads,
            holds_unpacked,
            held: &held,
            finished: &mut finished,
            registration: &mut registration,
        };
        let end = tokio::select! {
            _ = &mut shutdown => None,
            end = session.run() => Some(end),
        };
        config.readiness.set(false).await;
        let Some(end) = end else {
            leave(registration, &running, &results, finished).await;
            return Ok(());
        };
        match end {
            SessionEnd::Refused(reason) => return Err(WorkerError::Refused(reason)),
            SessionEnd::Lost(reason) => {
                // A session that worked for a while was not a failed attempt: start over.
                if started.elapsed() > Duration::from_secs(30) {
                    pauses = reconnect_pauses();
                }
                let pause = pauses.next().unwrap_or(MAX_RETRY);
                tracing::warn!(%reason, retry_in = ?pause, "lost the coordinator");
                tokio::select! {
                    _ = &mut shutdown => return Ok(()),
                    _ = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
}

/// Closes the job queue when the worker's run ends, however it ends: its threads stop.
struct CloseOnDrop(Arc<Jobs>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}
