//! `tilesolve worker`: a worker process that takes tasks from a coordinator until a stop signal.

use crate::client::ConnectArgs;
use crate::process::{default_threads, one_thread_runtime, stop_signal};
use std::path::PathBuf;

use crate::options::{MemoryArgs, TimeScaleArgs};
use anyhow::Context;
use clap::Args;
use tilesolve_coordinator::scheduler::MAX_PREFETCH;
use tilesolve_worker::{Metrics, Readiness, WorkerConfig};
use tokio::net::TcpListener;

#[derive(Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The coordinator's worker token, when it has one (else workers send --token).
    #[arg(long, env = "TILESOLVE_WORKER_TOKEN", hide_env_values = true)]
    worker_token: Option<String>,
    /// Search threads (default: every core).
    #[arg(long, env = "TILESOLVE_THREADS", alias = "workers")]
    threads: Option<usize>,
    /// Tasks to hold per thread beyond the one it runs, so a finished thread starts its next
    /// task without waiting a round trip (0: ask only when a thread is free). Once 256 tasks
    /// have finished, short ones are held many at a time: about 50 ms of them a thread, up to
    /// 256.
    #[arg(long, env = "TILESOLVE_PREFETCH", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=MAX_PREFETCH as i64))]
    prefetch: u32,
    /// Data directory for pattern databases.
    #[arg(long, env = "TILESOLVE_DATA", default_value = "tilesolve-data")]
    data: PathBuf,
    #[command(flatten)]
    memory: MemoryArgs,
    /// Serve gRPC health on this address for an orchestrator's probes: service "" while the
    /// process runs (liveness), "tilesolve.worker.ready" while registered (readiness).
    #[arg(long, env = "TILESOLVE_HEALTH_LISTEN", value_name = "ADDRESS")]
    health_listen: Option<String>,
    /// Serve Prometheus metrics at http://ADDRESS/metrics: nodes searched and per second,
    /// tasks done and failed, task seconds (a histogram), pattern table bytes held.
    #[arg(long, env = "TILESOLVE_METRICS_LISTEN", value_name = "ADDRESS")]
    metrics_listen: Option<String>,
    /// What the dashboard calls this worker (default: its host and process id).
    #[arg(long, env = "TILESOLVE_WORKER_NAME")]
    name: Option<String>,
    #[command(flatten)]
    time_scale: TimeScaleArgs,
}

pub fn worker(args: WorkerArgs) -> anyhow::Result<bool> {
    let mut coordinator = args.connect.options()?;
    if let Some(token) = args.worker_token.filter(|t| !t.is_empty()) {
        coordinator.token = Some(token);
    }
    one_thread_runtime()?.block_on(async {
        let readiness = match &args.health_listen {
            Some(address) => {
                Readiness::serve(
                    TcpListener::bind(address)
                        .await
                        .with_context(|| format!("serving health on {address}"))?,
                )
                .await
            }
            None => Readiness::default(),
        };
        let metrics = Metrics::default();
        if let Some(address) = &args.metrics_listen {
            let listener = TcpListener::bind(address)
                .await
                .with_context(|| format!("serving metrics on {address}"))?;
            metrics.serve(listener).await;
        }
        let config = WorkerConfig {
            coordinator,
            threads: args.threads.unwrap_or_else(default_threads),
            prefetch: args.prefetch as usize,
            data: args.data,
            table_budget: args.memory.bytes(),
            readiness,
            metrics,
            name: args.name,
            time_scale: args.time_scale.scale,
        };
        tilesolve_worker::run(config, stop_signal()).await?;
        anyhow::Ok(())
    })?;
    Ok(true)
}
