//! `tilesolve serve`: the coordinator, with its store, its tables and its web dashboard, until
//! a stop signal; started again in place, on the same socket, once a full disk has room again.

use crate::client::read_file;
use crate::process::{default_threads, runtime, stop_signal};
use crate::restart;
use std::path::PathBuf;
use std::time::Duration;

use crate::options::{MemoryArgs, PolicyArgs, TimeScaleArgs};
use anyhow::{bail, Context};
use clap::Args;
use tilesolve::proto::MAX_MESSAGE_BYTES;
use tilesolve_coordinator::history::DEFAULT_HISTORY_INTERVAL;
use tilesolve_coordinator::notices::NoticeSettings;
use tilesolve_coordinator::owners::Owners;
use tilesolve_coordinator::scheduler::{SchedulerConfig, DEFAULT_AUDIT_FRACTION};
use tilesolve_coordinator::server::{self, ServeConfig, TlsIdentity, DEFAULT_IDLE_TIMEOUT};
use tilesolve_coordinator::service::Limits;
use tilesolve_coordinator::store::{PendingNotice, DEFAULT_CACHE_BYTES};
use tokio::net::TcpListener;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on. 127.0.0.1 unless told otherwise.
    #[arg(long, env = "TILESOLVE_LISTEN", default_value = "127.0.0.1:7411")]
    listen: String,
    /// Data directory: the sled store and pattern databases.
    #[arg(long, env = "TILESOLVE_DATA", default_value = "tilesolve-data")]
    data: PathBuf,
    /// Seconds without a heartbeat after which a worker's tasks return to the queue.
    #[arg(long, env = "TILESOLVE_LEASE_TIMEOUT", default_value_t = 10.0)]
    lease_timeout: f64,
    /// Expanded nodes a puzzle may take as one task before its iterations are split into
    /// subtree tasks.
    #[arg(long, env = "TILESOLVE_SPLIT_AFTER", default_value_t = SchedulerConfig::default().whole_task_budget)]
    split_after: u64,
    /// ... and, while fewer than four unfinished puzzles per connected worker thread remain,
    /// this many (at most `--split-after`): few hard puzzles are split early, so that every
    /// thread has a part of them.
    #[arg(long, env = "TILESOLVE_SPREAD_AFTER", default_value_t = SchedulerConfig::default().spread_task_budget)]
    spread_after: u64,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    time_scale: TimeScaleArgs,
    #[command(flatten)]
    memory: MemoryArgs,
    /// Unfinished puzzles held at most (live or waiting in the store to start); batches past it
    /// are refused until some finish.
    #[arg(long, env = "TILESOLVE_MAX_PENDING", default_value_t = SchedulerConfig::default().max_pending_puzzles)]
    max_pending: usize,
    /// Refuse every call (but health checks) without this bearer token. Prefer the
    /// environment variable: a command line is visible to every user of the host.
    #[arg(long, env = "TILESOLVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The worker API's own token: workers then need it and cannot use the client API, and
    /// the client token cannot register, poll or fetch tables. Without it, workers use --token.
    /// Give it more than once (or comma-separated) to give hosts or owners tokens of their
    /// own: workers under one token never audit each other's reports (a token holder may
    /// register any number of workers), so with a single token the coordinator runs every
    /// audit itself.
    #[arg(
        long,
        env = "TILESOLVE_WORKER_TOKEN",
        hide_env_values = true,
        value_delimiter = ','
    )]
    worker_token: Vec<String>,
    /// The owners file (TOML): each client token's owner, role (admin, submit, read) and
    /// limits, tokens written as their SHA-256 (`tilesolve hash-token`). Read again on SIGHUP.
    /// Owner tokens open the client API and the dashboard; --token stays the operator's.
    #[arg(long, env = "TILESOLVE_OWNERS", value_name = "FILE")]
    owners: Option<PathBuf>,
    /// POST a completion notice (JSON) here when a batch that names no URL of its own
    /// (`submit --notify`) ends; retried until the receiver answers 2xx.
    #[arg(long, env = "TILESOLVE_NOTIFY_URL", value_name = "URL")]
    notify_url: Option<String>,
    /// Sign completion notices of the operator's batches (and of owners without a
    /// `notify_secret`) with HMAC-SHA256 under this key, in `X-Tilesolve-Signature`.
    #[arg(long, env = "TILESOLVE_NOTIFY_SECRET", hide_env_values = true)]
    notify_secret: Option<String>,
    /// Serve TLS with this PEM certificate chain (needs --tls-key).
    #[arg(
        long,
        env = "TILESOLVE_TLS_CERT",
        requires = "tls_key",
        value_name = "PEM"
    )]
    tls_cert: Option<PathBuf>,
    /// The certificate's PEM private key.
    #[arg(
        long,
        env = "TILESOLVE_TLS_KEY",
        requires = "tls_cert",
        value_name = "PEM"
    )]
    tls_key: Option<PathBuf>,
    /// How far workers' reports are checked: `sample` re-checks a new worker's cheap reports
    /// and then a share of all (--audit-fraction); a false one quarantines the worker and what
    /// rests on its reports is solved again. `full` also checks, before an answer is stored,
    /// every claim it rests on (for workers on machines you do not control; up to a second
    /// search of each answer's last iteration). `off` trusts every worker (RELIABILITY.md).
    #[arg(long, env = "TILESOLVE_VERIFY", default_value = "sample", value_parser = ["off", "sample", "full"])]
    verify: String,
    /// Share of a worker's reports re-checked on another worker (or the coordinator) once it
    /// passed probation, under `--verify sample` or `full`.
    #[arg(long, env = "TILESOLVE_AUDIT_FRACTION", default_value_t = DEFAULT_AUDIT_FRACTION, value_parser = audit_fraction)]
    audit_fraction: f64,
    /// MiB of store pages kept in memory (sled's cache): the coordinator's memory is this plus
    /// its unfinished work.
    #[arg(long, env = "TILESOLVE_STORE_CACHE_MIB", default_value_t = DEFAULT_CACHE_BYTES >> 20)]
    store_cache_mib: u64,
    /// Seconds a connection may move no byte either way before it is closed (live clients
    /// are pinged more often than this, so only silent sockets are dropped).
    #[arg(long, env = "TILESOLVE_IDLE_TIMEOUT", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
    /// Never build a pattern table here: take it from a connected worker that holds it, and
    /// refuse a batch needing a table that no connected worker holds.
    #[arg(long, env = "TILESOLVE_NO_TABLE_BUILDS")]
    no_table_builds: bool,
    /// Remove finished batches (and their items; answers stay, so queries still find them)
    /// once they were submitted this many days ago (fractions allowed), checking every tenth
    /// of that. Without it every batch is kept; `tilesolve prune` removes them by hand.
    #[arg(long, env = "TILESOLVE_KEEP_BATCHES_DAYS", value_name = "DAYS", value_parser = days)]
    keep_batches_days: Option<Duration>,
    /// Largest request in MiB (a submitted batch is one request): larger ones are refused
    /// (OutOfRange) before they take that memory. At most the default.
    #[arg(long, env = "TILESOLVE_MAX_MESSAGE_MIB", default_value_t = (MAX_MESSAGE_BYTES >> 20) as u32,
          value_parser = clap::value_parser!(u32).range(1..=(MAX_MESSAGE_BYTES >> 20) as i64))]
    max_message_mib: u32,
    /// Seconds between samples of the dashboard's history (solved, nodes, queue, workers),
    /// kept in the store for 8 days so its charts survive reloads and restarts.
    #[arg(long, env = "TILESOLVE_HISTORY_SECONDS", default_value_t = DEFAULT_HISTORY_INTERVAL.as_secs_f64(),
          value_parser = history_seconds)]
    history_seconds: f64,
}

fn history_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if (0.1..=3600.0).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "'{text}' is not a number of seconds from 0.1 to 3600"
        )),
    }
}

fn days(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(days) if days > 0.0 && days <= 36_500.0 => Ok(Duration::from_secs_f64(days * 86_400.0)),
        _ => Err(format!(
            "'{text}' is not a number of days above 0 (at most 36500)"
        )),
    }
}

fn audit_fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        _ => Err(format!("'{text}' is not a share from 0 to 1")),
    }
}

pub fn serve(args: ServeArgs) -> anyhow::Result<bool> {
    let inherited = restart::inherited_listener()?;
    let runtime = runtime()?;
    let served = runtime.block_on(async {
        let listener = match inherited {
            Some(listener) => TcpListener::from_std(listener)?,
            None => TcpListener::bind(&args.listen)
                .await
                .with_context(|| format!("listening on {}", args.listen))?,
        };
        eprintln!("tilesolve coordinator on {}", listener.local_addr()?);
        let scheduler = SchedulerConfig {
            lease_timeout: Duration::from_secs_f64(args.lease_timeout.max(0.1)),
            whole_task_budget: args.split_after.max(1),
            spread_task_budget: args.spread_after.max(1),
            table_budget: args.memory.bytes(),
            audit_fraction: args.audit_fraction,
            verify: args.verify.parse().map_err(anyhow::Error::msg)?,
            build_tables: !args.no_table_builds,
            // This process holds no search threads: its CPU is the coordinator's.
            measure_own_cost: true,
            ..args.policy.apply(SchedulerConfig::default())
        }
        .stretched(args.time_scale.scale);
        let tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsIdentity {
                cert_pem: read_file(cert, "TLS certificate")?,
                key_pem: read_file(key, "TLS key")?,
            }),
            _ => None,
        };
        if args.token.as_deref() == Some("") {
            bail!("--token (or TILESOLVE_TOKEN) is set but empty");
        }
        if args.worker_token.iter().any(String::is_empty) {
            bail!("--worker-token (or TILESOLVE_WORKER_TOKEN) is set but empty");
        }
        if args.token.as_ref().is_some_and(|token| args.worker_token.contains(token)) {
            bail!("--worker-token is the same as --token: give workers their own token, or leave --worker-token out");
        }
        if let Some(url) = &args.notify_url {
            PendingNotice::check_url(url).map_err(|e| anyhow::anyhow!("--notify-url: {e}"))?;
        }
        let owners = match &args.owners {
            Some(path) => Owners::load(path)?,
            None => Owners::none(),
        };
        if owners.configured() && args.token.is_none() && args.worker_token.is_empty() {
            bail!("--owners needs --worker-token (or --token) for the workers: owners' tokens open the client API only");
        }
        if !listener.local_addr()?.ip().is_loopback() {
            let tokens = args.token.is_some() || owners.configured();
            match (tokens, &tls) {
                (false, _) => tracing::warn!("serving beyond this host without a token: anyone who can reach the port can submit and run work"),
                (true, None) => tracing::warn!("serving beyond this host with a token but without TLS: the token crosses the network in the clear (serve TLS with --tls-cert and --tls-key)"),
                (true, Some(_)) => {}
            }
            if args.token.is_some() && args.worker_token.is_empty() {
                tracing::info!("workers share the client token: with --worker-token they get their own, which cannot submit or read batches");
            }
        }
        let config = ServeConfig {
            data: args.data,
            scheduler: SchedulerConfig {
                max_pending_puzzles: args.max_pending,
                ..scheduler
            },
            build_threads: default_threads(),
            token: args.token,
            worker_tokens: args.worker_token,
            owners,
            notify_url: args.notify_url,
            notices: NoticeSettings {
                secret: args.notify_secret,
            },
            tls,
            limits: Limits {
                max_message_bytes: (args.max_message_mib as usize) << 20,
                ..Limits::default()
            },
            idle_timeout: Duration::from_secs_f64(args.idle_timeout.max(1.0)),
            store_cache_bytes: args.store_cache_mib << 20,
            keep_batches: args.keep_batches_days,
            history_interval: Some(Duration::from_secs_f64(args.history_seconds)),
        };
        serve_until_stopped(listener, config).await?;
        Ok(true)
    });
    // A store call stuck inside sled (`server::STORE_STALL`) must not keep the process from
    // ending: its thread is left behind rather than waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// Runs the coordinator until SIGTERM or Ctrl-C. When its store stops taking writes (a full
/// disk: sled fails every write after one failed), serving stops; once the data directory
/// has room again, the program starts again in place on the same socket (`restart`), and
/// everything acknowledged is there (clients and workers retry meanwhile).
async fn serve_until_stopped(listener: TcpListener, config: ServeConfig) -> anyhow::Result<()> {
    let address = listener.local_addr()?;
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop_signal().await;
        let _ = stop.send(true);
    });
    let stop_requested = {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|&stop| stop).await;
        }
    };
    let error = match server::run(listener, config.clone(), stop_requested).await {
        Err(server::ServeError::StoreFailed(error)) => error,
        other => return Ok(other?),
    };
    if *stopped.borrow() {
        // Stopping, and the last flush failed: what it held may not be durable.
        return Err(error.into());
    }
    tracing::error!(%error, data = %config.data.display(), "serving stopped: waiting until the data directory has room, then starting again");
    tokio::select! {
        _ = stopped.wait_for(|&stop| stop) => return Ok(()),
        () = until_room(&config.data) => {}
    }
    let listener = std::net::TcpListener::bind(address)
        .with_context(|| format!("listening on {address} again"))?;
    tracing::info!("the data directory has room again: starting again");
    Err(restart::restart_in_place(listener))
}

/// Free bytes the data directory needs before a coordinator stopped by a full disk starts
/// again: a megabyte would let it start only to stop at its next index growth or table.
const RESTART_ROOM: u64 = 16 << 20;

/// Resolves once the data directory's filesystem has [`RESTART_ROOM`] free and a megabyte can
/// be written to it (and is removed again), looking every 5 s.
async fn until_room(dir: &std::path::Path) {
    let probe = dir.join(".space-probe");
    loop {
        if free_bytes(dir).is_some_and(|free| free >= RESTART_ROOM) {
            let written = std::fs::write(&probe, vec![0u8; 1 << 20]);
            let _ = std::fs::remove_file(&probe);
            if written.is_ok() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Bytes an unprivileged writer may still use on `dir`'s filesystem.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs reads a NUL-terminated path and writes only the struct it is given.
    let mut status: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(path.as_ptr(), &mut status) } == 0)
        .then(|| status.f_bavail as u64 * status.f_frsize as u64)
}
