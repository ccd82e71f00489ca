//! `tilesolve batch`: a coordinator, local workers and the store in one process, talking real
//! gRPC over loopback: the default way to run the main job on one machine.

use crate::client::{submit_and_report, BatchOptions};
use crate::process::{default_threads, runtime};
use std::path::PathBuf;

use crate::options::MemoryArgs;
use clap::Args;
use tilesolve::connect::ConnectOptions;
use tilesolve::time_scale::TimeScale;
use tilesolve_coordinator::owners::Owners;
use tilesolve_coordinator::scheduler::{SchedulerConfig, Tables, Verify};
use tilesolve_coordinator::server::{self, ServeConfig, DEFAULT_IDLE_TIMEOUT};
use tilesolve_coordinator::service::Limits;
use tilesolve_coordinator::store::DEFAULT_CACHE_BYTES;
use tilesolve_worker::{Metrics, Readiness, WorkerConfig};
use tokio::net::TcpListener;

#[derive(Args)]
pub struct BatchArgs {
    /// Search threads (default: every core).
    #[arg(long, env = "TILESOLVE_THREADS", alias = "workers")]
    threads: Option<usize>,
    /// Data directory: the sled store and pattern databases.
    #[arg(long, env = "TILESOLVE_DATA", default_value = "tilesolve-data")]
    data: PathBuf,
    #[command(flatten)]
    memory: MemoryArgs,
    #[command(flatten)]
    batch: BatchOptions,
}

pub fn batch(args: BatchArgs) -> anyhow::Result<bool> {
    // Build any missing pattern database here first, where the user sees the message and the
    // progress bar, rather than silently inside the embedded coordinator.
    let lines = args.batch.lines()?;
    let pdbs = tilesolve::pdb::PdbStore::new(&args.data, default_threads());
    Tables::prepare(
        &pdbs,
        &lines,
        args.batch.heuristic,
        args.batch.goal,
        args.memory.bytes(),
        &crate::progress::pdb_events,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    runtime()?.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        // The worker stops (and leaves) first, then the coordinator.
        let (stop_worker, worker_stop) = tokio::sync::oneshot::channel::<()>();
        let (stop_coordinator, coordinator_stop) = tokio::sync::oneshot::channel::<()>();
        let config = ServeConfig {
            data: args.data.clone(),
            scheduler: SchedulerConfig {
                table_budget: args.memory.bytes(),
                // Its one worker is this process: checking it against itself proves nothing.
                verify: Verify::Off,
                ..SchedulerConfig::default()
            },
            build_threads: default_threads(),
            // Bound to 127.0.0.1 for this process's own worker only, and gone when it ends.
            token: None,
            worker_tokens: Vec::new(),
            owners: Owners::none(),
            notify_url: None,
            notices: Default::default(),
            tls: None,
            limits: Limits::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            store_cache_bytes: DEFAULT_CACHE_BYTES,
            keep_batches: None,
            history_interval: None,
        };
        let coordinator = tokio::spawn(server::run(listener, config, async {
            let _ = coordinator_stop.await;
        }));
        let connect = ConnectOptions::new(url);
        let worker_config = WorkerConfig {
            coordinator: connect.clone(),
            threads: args.threads.unwrap_or_else(default_threads),
            prefetch: 1,
            data: args.data,
            table_budget: args.memory.bytes(),
            readiness: Readiness::default(),
            metrics: Metrics::default(),
            name: Some("embedded".into()),
            time_scale: TimeScale::REAL,
        };
        let worker = tokio::spawn(tilesolve_worker::run(worker_config, async {
            let _ = worker_stop.await;
        }));
        let outcome = submit_and_report(connect, &args.batch, Default::default(), true).await;
        let _ = stop_worker.send(());
        let _ = worker.await;
        let _ = stop_coordinator.send(());
        coordinator.await??;
        outcome
    })
}
