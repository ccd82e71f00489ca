//! The distributed commands: `serve`, `worker`, `submit`, `status`, `results`, `query`, and
//! `batch` (a coordinator, local workers and the store in one process, talking real gRPC over
//! loopback: the default way to run the main job on one machine).

use std::path::PathBuf;
use std::time::Duration;

use crate::calls::{backoff, CallError, Client, Coordinator};
use crate::options::{MemoryArgs, PolicyArgs};
use crate::results::{status_json, Format, FormatArgs, ResultsOutput};
use anyhow::{bail, Context};
use backon::BackoffBuilder;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tilesolve::batch_file::{check_text, BatchLine};
use tilesolve::connect::ConnectOptions;
use tilesolve::proto::v1 as pb;
use tilesolve::proto::{MAX_BATCH_LINES, MAX_MESSAGE_BYTES};
use tilesolve_coordinator::scheduler::{
    Scheduler, SchedulerConfig, DEFAULT_AUDIT_FRACTION, MAX_PREFETCH,
};
use tilesolve_coordinator::server::{self, ServeConfig, TlsIdentity, DEFAULT_IDLE_TIMEOUT};
use tilesolve_coordinator::service::Limits;
use tilesolve_coordinator::store::{StoreError, DEFAULT_CACHE_BYTES};
use tilesolve_worker::{Metrics, Readiness, WorkerConfig};
use tokio::net::TcpListener;

pub const DEFAULT_COORDINATOR: &str = "http://127.0.0.1:7411";

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Completes at the first Ctrl-C or SIGTERM (what an orchestrator or systemd sends to stop a
/// process), logging which.
async fn stop_signal() {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot watch for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    let signal = tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupt",
        _ = terminate => "SIGTERM",
    };
    tracing::info!(signal, "stopping");
}

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
    #[arg(long, default_value_t = SchedulerConfig::default().whole_task_budget)]
    split_after: u64,
    #[command(flatten)]
    policy: PolicyArgs,
    #[command(flatten)]
    memory: MemoryArgs,
    /// Unfinished puzzles held at most (about 4 KB of memory each); batches past it are refused
    /// until some finish.
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
    /// Share of a worker's reports re-checked on another worker once its first few passed
    /// (every report of a new worker is checked); a false one quarantines the worker and what
    /// rests on its reports is solved again. Whatever the share, an answer longer than its
    /// estimate is stored only after the claims it rests on were checked. 0 trusts every
    /// worker and checks nothing.
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

fn read_file(path: &PathBuf, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading the {what} {}", path.display()))
}

/// How to reach the coordinator: shared by workers and every client command.
#[derive(Args, Clone)]
pub struct ConnectArgs {
    /// The coordinator's address; `https://` for TLS.
    #[arg(long, env = "TILESOLVE_COORDINATOR", default_value = DEFAULT_COORDINATOR)]
    pub(crate) coordinator: String,
    /// Bearer token the coordinator requires.
    #[arg(long, env = "TILESOLVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// PEM certificate of the authority that signed the coordinator's certificate.
    #[arg(long, env = "TILESOLVE_TLS_CA", value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// Name the coordinator's certificate carries, if not the address's host.
    #[arg(long, env = "TILESOLVE_TLS_DOMAIN")]
    tls_domain: Option<String>,
}

impl ConnectArgs {
    pub(crate) fn options(&self) -> anyhow::Result<ConnectOptions> {
        Ok(ConnectOptions {
            url: self.coordinator.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
            ca_pem: self
                .tls_ca
                .as_ref()
                .map(|path| read_file(path, "CA certificate"))
                .transpose()?,
            tls_domain: self.tls_domain.clone(),
        })
    }
}

pub fn serve(args: ServeArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let listener = TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        eprintln!("tilesolve coordinator on {}", listener.local_addr()?);
        let scheduler = SchedulerConfig {
            lease_timeout: Duration::from_secs_f64(args.lease_timeout.max(0.1)),
            whole_task_budget: args.split_after.max(1),
            table_budget: args.memory.bytes(),
            audit_fraction: args.audit_fraction,
            build_tables: !args.no_table_builds,
            ..args.policy.apply(SchedulerConfig::default())
        };
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
        if !listener.local_addr()?.ip().is_loopback() {
            match (&args.token, &tls) {
                (None, _) => tracing::warn!("serving beyond this host without a token: anyone who can reach the port can submit and run work"),
                (Some(_), None) => tracing::warn!("serving beyond this host with a token but without TLS: the token crosses the network in the clear (serve TLS with --tls-cert and --tls-key)"),
                (Some(_), Some(_)) => {}
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
            tls,
            limits: Limits {
                max_message_bytes: (args.max_message_mib as usize) << 20,
                ..Limits::default()
            },
            idle_timeout: Duration::from_secs_f64(args.idle_timeout.max(1.0)),
            store_cache_bytes: args.store_cache_mib << 20,
            keep_batches: args.keep_batches_days,
        };
        serve_until_stopped(listener, config).await?;
        Ok(true)
    })
}

/// Runs the coordinator until SIGTERM or Ctrl-C. When its store stops taking writes (a full
/// disk: sled fails every write after one failed), serving stops; once the data directory
/// takes writes again, the store is opened again on the same address, and everything
/// acknowledged is there (clients and workers retry meanwhile).
async fn serve_until_stopped(listener: TcpListener, config: ServeConfig) -> anyhow::Result<()> {
    let address = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop_signal().await;
        let _ = stop.send(true);
    });
    let stop_requested = move || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|&stop| stop).await;
        }
    };
    let mut listener = Some(listener);
    // After a failure, sled releases the store's lock only once its last handle is gone.
    let mut reopen_tries = 0;
    loop {
        let listening = match listener.take() {
            Some(listener) => listener,
            None => TcpListener::bind(address)
                .await
                .with_context(|| format!("listening on {address} again"))?,
        };
        let error = match server::run(listening, config.clone(), stop_requested()).await {
            Err(server::ServeError::StoreFailed(error)) => error,
            Err(server::ServeError::Store(StoreError::Open { .. }))
                if (1..60).contains(&reopen_tries) =>
            {
                reopen_tries += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            other => return Ok(other?),
        };
        reopen_tries = 1;
        tracing::error!(%error, data = %config.data.display(), "serving stopped: waiting until the data directory takes writes, then starting again");
        tokio::select! {
            () = stop_requested() => return Ok(()),
            () = until_writable(&config.data) => {}
        }
        tracing::info!("the data directory takes writes again: starting again");
    }
}

/// Resolves once a megabyte can be written to `dir` (and is removed again), looking every 5 s.
async fn until_writable(dir: &std::path::Path) {
    let probe = dir.join(".space-probe");
    loop {
        let written = std::fs::write(&probe, vec![0u8; 1 << 20]);
        let _ = std::fs::remove_file(&probe);
        if written.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

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
}

pub fn worker(args: WorkerArgs) -> anyhow::Result<bool> {
    let mut coordinator = args.connect.options()?;
    if let Some(token) = args.worker_token.filter(|t| !t.is_empty()) {
        coordinator.token = Some(token);
    }
    runtime()?.block_on(async {
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
        };
        tilesolve_worker::run(config, stop_signal()).await?;
        anyhow::Ok(())
    })?;
    Ok(true)
}

/// Options of commands that submit a batch.
#[derive(Args)]
pub struct BatchOptions {
    /// Heuristic, as for `solve` (default: the size's pattern database).
    #[arg(long, default_value = "default")]
    heuristic: String,
    /// Goal: `default`, `korf` or a board.
    #[arg(long, default_value = "default")]
    goal: String,
    #[command(flatten)]
    output: FormatArgs,
    /// A batch file: one board per line.
    file: PathBuf,
}

#[derive(Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Wait for the batch with a progress bar, then print its results.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    batch: BatchOptions,
}

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

#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The status as one JSON object.
    #[arg(long)]
    json: bool,
    batch: u64,
}

#[derive(Args)]
pub struct ResultsArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(flatten)]
    output: FormatArgs,
    batch: u64,
}

#[derive(Args)]
pub struct QueryArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Goal: `default`, `korf` or a board.
    #[arg(long, default_value = "default")]
    goal: String,
    /// The answer (or that there is none) as one JSON object.
    #[arg(long)]
    json: bool,
    board: String,
}

/// The lines of a batch file. A file that is not text (a NUL byte, more than a few invalid
/// UTF-8 sequences, a line over the limit) or past the coordinator's limits is refused here,
/// before anything is sent; a few stray bytes stay on their own lines (as U+FFFD), where the
/// coordinator reports them with their line numbers.
fn read_lines(file: &PathBuf) -> anyhow::Result<Vec<String>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    // Requests also carry the heuristic and goal; leave room for them.
    let limit = MAX_MESSAGE_BYTES - 4096;
    if bytes.len() > limit {
        bail!(
            "{} is {} bytes; a batch may be at most {limit} bytes: split it into several",
            file.display(),
            bytes.len()
        );
    }
    // Binary noise is refused here, naming where, rather than stored as hundreds of invalid
    // lines (and echoed to the terminal).
    check_text(&bytes).with_context(|| format!("{} is refused", file.display()))?;
    let lines: Vec<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect();
    if lines.len() > MAX_BATCH_LINES {
        bail!(
            "{} has {} lines; a batch may hold at most {MAX_BATCH_LINES}: split it into several",
            file.display(),
            lines.len()
        );
    }
    Ok(lines)
}

/// Submits, optionally waits, prints; returns whether every item was solved.
async fn submit_and_report(
    connect: ConnectOptions,
    options: &BatchOptions,
    wait: bool,
) -> anyhow::Result<bool> {
    let lines = read_lines(&options.file)?;
    let submitted = submit_lines(
        &mut Coordinator::new(connect),
        lines,
        &options.heuristic,
        &options.goal,
        options.output.format(),
        wait,
    )
    .await?;
    Ok(submitted.all_solved)
}

/// A batch [`submit_lines`] submitted.
pub(crate) struct Submitted {
    pub batch: u64,
    /// Every item solved (known only when it waited; else: no line was invalid).
    pub all_solved: bool,
    /// Items answered from the store at submission.
    pub from_store: u32,
}

/// Submits `lines` as one batch; with `wait`, watches it and prints its results.
pub(crate) async fn submit_lines(
    coordinator: &mut Coordinator,
    lines: Vec<String>,
    heuristic: &str,
    goal: &str,
    format: Format,
    wait: bool,
) -> anyhow::Result<Submitted> {
    // Only reaching the coordinator is retried: a submission that may have arrived is not
    // sent again (it would be a second batch).
    coordinator.reach().await?;
    let request = pb::SubmitBatchRequest {
        lines: lines.clone(),
        heuristic: heuristic.to_string(),
        goal: goal.to_string(),
    };
    let submitted = coordinator
        .once(|mut client| async move { client.submit_batch(request).await })
        .await?;
    eprintln!(
        "batch {}: {} boards ({} invalid, {} answered from the store)",
        submitted.batch_id, submitted.items, submitted.invalid, submitted.from_store
    );
    let batch = submitted.batch_id;
    if !wait {
        println!("{batch}");
        return Ok(Submitted {
            batch,
            all_solved: submitted.invalid == 0,
            from_store: submitted.from_store,
        });
    }
    wait_until_done(coordinator, batch, &progress_bar()).await?;
    // Page by page, printing as they come, so memory holds one page however large the batch.
    let mut output = ResultsOutput::new(format);
    let mut facts = FactCheck::default();
    let status = read_pages(coordinator, batch, Patience::UntilAnswered, |items| {
        facts.add(&lines, items);
        output.items(items)
    })
    .await?;
    output.finish(status.as_ref())?;
    facts.report();
    Ok(Submitted {
        batch,
        all_solved: output.all_solved,
        from_store: submitted.from_store,
    })
}

/// Watches `batch` until every item has ended, with `bar` showing its progress. The batch is
/// the coordinator's (flushed to its disk before it was acknowledged): if the coordinator goes
/// away, this waits for it to come back rather than give up.
pub(crate) async fn wait_until_done(
    coordinator: &mut Coordinator,
    batch: u64,
    bar: &ProgressBar,
) -> anyhow::Result<()> {
    let mut pauses = backoff(Duration::from_secs(5)).without_max_times().build();
    loop {
        match watch(coordinator, batch, bar).await {
            Ok(()) => break,
            Err(error) if error.is_transient() => {
                bar.set_message(format!(
                    "coordinator at {} unreachable; reconnecting",
                    coordinator.url()
                ));
                tracing::info!(%error, "reconnecting");
                let pause = pauses.next().unwrap_or(Duration::from_secs(5));
                tokio::time::sleep(pause).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// How long reading a batch keeps trying after transport faults.
#[derive(Clone, Copy)]
pub(crate) enum Patience {
    /// A few tries, as any one-shot command.
    OneShot,
    /// Until the coordinator answers: the caller is waiting for a batch it submitted.
    UntilAnswered,
}

/// Reads a batch's result pages, handing each page's items to `each`. A page that fails on a
/// transport fault is asked for again, so nothing is skipped or printed twice. Returns the
/// batch's status from the last page.
pub(crate) async fn read_pages(
    coordinator: &mut Coordinator,
    batch: u64,
    patience: Patience,
    mut each: impl FnMut(&[pb::ItemResult]) -> anyhow::Result<()>,
) -> anyhow::Result<Option<pb::BatchStatus>> {
    let mut token = String::new();
    loop {
        let request = pb::GetBatchRequest {
            batch_id: batch,
            page_size: RESULTS_PAGE,
            page_token: token.clone(),
        };
        let get = |mut client: Client| {
            let request = request.clone();
            async move { client.get_batch(request).await }
        };
        let page = match patience {
            Patience::OneShot => coordinator.call(get).await?,
            Patience::UntilAnswered => coordinator.call_until_answered(get, |_| {}).await?,
        };
        each(&page.items)?;
        if page.next_page_token.is_empty() {
            return Ok(page.status);
        }
        token = page.next_page_token;
    }
}

/// Items a results page asks for (the coordinator's largest page).
const RESULTS_PAGE: u32 = 10_000;

/// Solution lengths checked against the submitted file's `optimal=` facts (as the benchmark
/// sets state them), page by page; the report names any that differ.
#[derive(Default)]
struct FactCheck {
    checked: usize,
    wrong: Vec<String>,
}

impl FactCheck {
    fn add(&mut self, lines: &[String], items: &[pb::ItemResult]) {
        for item in items {
            let Some(pb::item_result::Outcome::Solution(solution)) = &item.outcome else {
                continue;
            };
            let Some(raw) = lines.get((item.line as usize).wrapping_sub(1)) else {
                continue;
            };
            let Some(optimal) =
                BatchLine::read(item.line as usize, raw).and_then(|l| l.fact("optimal"))
            else {
                continue;
            };
            self.checked += 1;
            if optimal.parse::<u32>().ok() != Some(solution.length) {
                self.wrong.push(format!(
                    "line {} ({} moves, file says {optimal})",
                    item.line, solution.length
                ));
            }
        }
    }

    fn report(&self) {
        if self.checked > 0 {
            eprintln!(
                "lengths matching the file's optimal= facts: {} of {}",
                self.checked - self.wrong.len(),
                self.checked
            );
            for mismatch in &self.wrong {
                eprintln!("  MISMATCH {mismatch}");
            }
        }
    }
}

pub(crate) fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} solved  {msg}  [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Shows a batch's progress until it is done, or until the stream breaks.
async fn watch(
    coordinator: &mut Coordinator,
    batch: u64,
    bar: &ProgressBar,
) -> Result<(), CallError> {
    let request = pb::WatchBatchRequest { batch_id: batch };
    let mut stream = coordinator
        .once(|mut client| async move { client.watch_batch(request).await })
        .await?;
    loop {
        let status = match stream.message().await {
            Ok(Some(status)) => status,
            Ok(None) => break,
            Err(status) => return Err(coordinator.failed(status)),
        };
        bar.set_length(u64::from(status.total));
        bar.set_position(u64::from(status.solved + status.failed));
        let bounds: Vec<String> = status.bounds.iter().take(6).map(u32::to_string).collect();
        let preparing = if status.preparing.is_empty() {
            String::new()
        } else {
            format!("  preparing tables: {}", status.preparing)
        };
        bar.set_message(format!(
            "bounds [{}]  {:.1} M nodes/s  {} workers{preparing}",
            bounds.join(" "),
            status.nodes_per_second / 1e6,
            status.workers
        ));
        if status.done {
            return Ok(());
        }
    }
    Err(CallError::Lost("the progress stream ended early".into()))
}

pub fn submit(args: SubmitArgs) -> anyhow::Result<bool> {
    let connect = args.connect.options()?;
    runtime()?.block_on(submit_and_report(connect, &args.batch, args.wait))
}

#[derive(Args)]
pub struct ListArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Print at most this many batches (default: all, read page by page).
    #[arg(long)]
    limit: Option<usize>,
    /// Start after this batch id (a page token, as the last line printed).
    #[arg(long)]
    page: Option<u64>,
    /// Newest first.
    #[arg(long)]
    newest_first: bool,
    /// One JSON object per batch per line.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CancelArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The batch's status after cancelling, as one JSON object.
    #[arg(long)]
    json: bool,
    batch: u64,
}

fn print_status_line(status: &pb::BatchStatus, json: bool) {
    if json {
        println!("{}", status_json(status));
    } else {
        println!(
            "batch {}: {} of {} solved, {} failed, {}",
            status.batch_id,
            status.solved,
            status.total,
            status.failed,
            if status.done { "done" } else { "running" }
        );
    }
}

pub fn list(args: ListArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let mut left = args.limit.unwrap_or(usize::MAX);
        let mut token = args.page.map(|id| id.to_string()).unwrap_or_default();
        // Page by page, printed as they come: memory holds one page however many batches.
        while left > 0 {
            let request = pb::ListBatchesRequest {
                page_size: left.min(1_000) as u32,
                page_token: token,
                newest_first: args.newest_first,
            };
            let page = coordinator
                .call(|mut client| {
                    let request = request.clone();
                    async move { client.list_batches(request).await }
                })
                .await?;
            for status in &page.batches {
                print_status_line(status, args.json);
            }
            left = left.saturating_sub(page.batches.len());
            if page.next_page_token.is_empty() {
                break;
            }
            token = page.next_page_token;
        }
        Ok(true)
    })
}

pub fn cancel(args: CancelArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let request = pb::CancelBatchRequest {
            batch_id: args.batch,
        };
        // Cancelling twice is cancelling once: safe to retry.
        let status = coordinator
            .call(|mut client| async move { client.cancel_batch(request).await })
            .await?;
        if !status.cancelled && !args.json {
            // A finished batch is history: the coordinator left it as it was.
            println!(
                "batch {} had already finished ({} of {} solved, {} failed): nothing changed",
                status.batch_id, status.solved, status.total, status.failed
            );
        } else {
            print_status_line(&status, args.json);
        }
        Ok(true)
    })
}

pub fn status(args: StatusArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        // One item is the smallest page: only the status is wanted.
        let request = pb::GetBatchRequest {
            batch_id: args.batch,
            page_size: 1,
            page_token: String::new(),
        };
        let page = coordinator
            .call(|mut client| {
                let request = request.clone();
                async move { client.get_batch(request).await }
            })
            .await?;
        let Some(status) = page.status else {
            bail!("the coordinator sent no status")
        };
        if args.json {
            println!("{}", status_json(&status));
        } else {
            println!(
                "batch {}: {} of {} solved, {} failed, {}; running bounds {:?}; {} workers",
                status.batch_id,
                status.solved,
                status.total,
                status.failed,
                if status.done { "done" } else { "running" },
                status.bounds,
                status.workers
            );
            if !status.preparing.is_empty() {
                println!("preparing tables: {}", status.preparing);
            }
        }
        Ok(true)
    })
}

pub fn results(args: ResultsArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let mut output = ResultsOutput::new(args.output.format());
        let status = read_pages(&mut coordinator, args.batch, Patience::OneShot, |items| {
            output.items(items)
        })
        .await?;
        output.finish(status.as_ref())?;
        Ok(output.all_solved)
    })
}

pub fn query(args: QueryArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let request = pb::QueryRequest {
            board: args.board.clone(),
            goal: args.goal,
        };
        let response = coordinator
            .call(|mut client| {
                let request = request.clone();
                async move { client.query(request).await }
            })
            .await?;
        match (response.found, response.solution) {
            (true, Some(s)) => {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"board": args.board, "length": s.length, "moves": s.moves, "tiles": s.tiles, "heuristic": s.heuristic})
                    );
                } else {
                    println!("{}  {} moves  {}", args.board, s.length, s.moves);
                }
                Ok(true)
            }
            _ => {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"board": args.board, "error": "not in the store"})
                    );
                } else {
                    eprintln!("{}: not in the store", args.board);
                }
                Ok(false)
            }
        }
    })
}

pub fn batch(args: BatchArgs) -> anyhow::Result<bool> {
    // Build any missing pattern database here first, where the user sees the message and the
    // progress bar, rather than silently inside the embedded coordinator.
    let lines = read_lines(&args.batch.file)?;
    let pdbs = tilesolve::pdb::PdbStore::new(&args.data, default_threads());
    Scheduler::prepare(
        &pdbs,
        &lines,
        &args.batch.heuristic,
        &args.batch.goal,
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
                ..SchedulerConfig::default()
            },
            build_threads: default_threads(),
            // Bound to 127.0.0.1 for this process's own worker only, and gone when it ends.
            token: None,
            worker_tokens: Vec::new(),
            tls: None,
            limits: Limits::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            store_cache_bytes: DEFAULT_CACHE_BYTES,
            keep_batches: None,
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
        };
        let worker = tokio::spawn(tilesolve_worker::run(worker_config, async {
            let _ = worker_stop.await;
        }));
        let outcome = submit_and_report(connect, &args.batch, true).await;
        let _ = stop_worker.send(());
        let _ = worker.await;
        let _ = stop_coordinator.send(());
        coordinator.await??;
        outcome
    })
}
