//! The tilesolve worker: leases subtree tasks from the coordinator and runs the search kernel on
//! its own threads (never tokio's, so heartbeats are never starved), holding each heuristic's
//! tables, pattern databases included, for its whole life.
//!
//! Layout: [`run`] is the whole worker: connect (with backoff), register, then poll with free
//! slots and finished results in one call, while a heartbeat keeps the leases of running tasks
//! alive and carries cancellations back. Pattern databases come from the worker's own data
//! directory (built there if missing).

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use thiserror::Error;
use tilesolve::connect::{AuthChannel, ConnectOptions};
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::moves_to_string;
use tilesolve::pdb::{PdbEvent, PdbStore};
use tilesolve::proto::v1 as pb;
use tilesolve::proto::PROTOCOL_VERSION;
use tilesolve::task::{run_task, TaskOutcome, TaskTimes, Work};
use tilesolve::{parse_board, Board, Direction, Solver};

mod health;
mod metrics;
mod upload;
pub use health::{Readiness, READY};
pub use metrics::Metrics;
use upload::Uploader;

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
}

#[derive(Debug, Error)]
pub enum WorkerError {
    #[error("coordinator refused this worker: {0}")]
    Refused(String),
}

/// Tasks this worker holds (running, or prefetched and waiting for a thread), with their cancel
/// flags.
type Running = Arc<Mutex<HashMap<u64, Arc<AtomicBool>>>>;

/// Solvers by (goal, heuristic name), shared by the threads.
type Solvers = Arc<Mutex<HashMap<(Board, String), Arc<Solver>>>>;

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
    // Each task with when it arrived, so its report can say how long it waited for a thread.
    let (job_sender, job_receiver) = mpsc::channel::<(pb::Task, Instant)>();
    let (result_sender, mut results) = tokio::sync::mpsc::unbounded_channel::<pb::TaskResult>();
    let job_receiver = Arc::new(Mutex::new(job_receiver));
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
    for _ in 0..threads {
        let table_budget = config.table_budget;
        let (jobs, sender, running, solvers, pdbs, fetcher, metrics) = (
            job_receiver.clone(),
            result_sender.clone(),
            running.clone(),
            solvers.clone(),
            pdbs.clone(),
            fetcher.clone(),
            config.metrics.clone(),
        );
        std::thread::spawn(move || loop {
            let (task, arrived) = match jobs.lock().unwrap_or_else(|p| p.into_inner()).recv() {
                Ok(job) => job,
                Err(_) => return,
            };
            // Every line logged about the task, here and in what it calls (fetching a table,
            // say), carries the ids the coordinator logs it under.
            let span = tracing::info_span!(
                "task",
                batch = task.batch_id,
                puzzle = task.puzzle,
                task = task.task_id
            );
            let _in_task = span.enter();
            tracing::debug!(bound = task.bound, iterate = task.iterate, "task started");
            let queued_seconds = arrived.elapsed().as_secs_f64();
            let cancel = running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&task.task_id)
                .cloned();
            let result = pb::TaskResult {
                queued_seconds,
                ..execute(
                    &task,
                    &solvers,
                    Tables {
                        pdbs: &pdbs,
                        fetcher: &fetcher,
                        budget: table_budget,
                        metrics: &metrics,
                    },
                    cancel.as_deref(),
                )
            };
            metrics.task_finished(&result);
            if let Some(pb::task_result::Outcome::Error(reason)) = &result.outcome {
                tracing::warn!(%reason, "task failed");
            }
            running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&task.task_id);
            if sender.send(result).is_err() {
                return;
            }
        });
    }
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
            running: &running,
            jobs: &job_sender,
            results: &mut results,
            finished: &mut finished,
            registration: &mut registration,
        };
        let end = tokio::select! {
            _ = &mut shutdown => None,
            end = session.run() => Some(end),
        };
        config.readiness.set(false).await;
        let Some(end) = end else {
            leave(registration, &running, &mut results, finished).await;
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

enum SessionEnd {
    Refused(String),
    Lost(String),
}

/// How long a finished short task's result may wait to travel with others (see
/// [`TaskTimes`]).
const REPORT_AFTER: Duration = Duration::from_millis(10);

/// The longest pause before trying a lost coordinator again.
const MAX_RETRY: Duration = Duration::from_secs(5);

/// Pauses between tries to reach a lost coordinator: from 100 ms doubling to [`MAX_RETRY`], each
/// plus up to as much again at random, so a hundred workers that lost a restarting coordinator
/// do not all knock at the same instant.
fn reconnect_pauses() -> impl Iterator<Item = Duration> {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(MAX_RETRY)
        .with_jitter()
        .without_max_times()
        .build()
}

/// Longest a stopping worker waits for the coordinator to take back its tasks.
pub const LEAVE_TIMEOUT: Duration = Duration::from_secs(5);

/// A registration with the coordinator: what a later call (leaving, too) names itself by.
struct Registration {
    client: WorkersClient,
    worker_id: u64,
    worker_secret: String,
}

/// Stops every task this worker holds and tells the coordinator it is leaving, with the
/// results it has: the coordinator puts the rest back in the queue at once.
async fn leave(
    registration: Option<Registration>,
    running: &Running,
    results: &mut tokio::sync::mpsc::UnboundedReceiver<pb::TaskResult>,
    mut finished: Vec<pb::TaskResult>,
) {
    // Results are taken before the searches are stopped: a search stopped now reports a
    // failure, which must not reach the coordinator as the task's fault.
    while let Ok(result) = results.try_recv() {
        finished.push(result);
    }
    let held = held_tasks(running);
    cancel(running, &held);
    let Some(mut registration) = registration else {
        tracing::info!("worker stopping (not registered: nothing to hand back)");
        return;
    };
    let reported = finished.len();
    let call = registration.client.poll(pb::PollRequest {
        worker_id: registration.worker_id,
        worker_secret: registration.worker_secret,
        free_slots: 0,
        idle: false,
        results: finished,
        leaving: true,
    });
    match tokio::time::timeout(LEAVE_TIMEOUT, call).await {
        Ok(Ok(_)) => tracing::info!(
            worker = registration.worker_id,
            handed_back = held.len(),
            reported,
            "worker left the coordinator"
        ),
        Ok(Err(status)) => tracing::warn!(
            worker = registration.worker_id,
            error = %status.message(),
            "could not leave the coordinator: its tasks return when their leases expire"
        ),
        Err(_) => tracing::warn!(
            worker = registration.worker_id,
            timeout = ?LEAVE_TIMEOUT,
            "the coordinator did not answer the leave: its tasks return when their leases expire"
        ),
    }
}

/// Whether the coordinator turned this worker away for good (retrying cannot help).
fn is_refusal(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::FailedPrecondition
            | tonic::Code::InvalidArgument
            | tonic::Code::Unauthenticated
            | tonic::Code::PermissionDenied
    )
}

/// One registration's life: register, then poll until the connection fails or the coordinator
/// no longer knows this worker.
struct Session<'a> {
    config: &'a WorkerConfig,
    threads: usize,
    /// Tasks held per thread (running and prefetched) while tasks are not short enough to pack
    /// ([`TaskTimes`]).
    holds_unpacked: u32,
    running: &'a Running,
    jobs: &'a mpsc::Sender<(pb::Task, Instant)>,
    results: &'a mut tokio::sync::mpsc::UnboundedReceiver<pb::TaskResult>,
    finished: &'a mut Vec<pb::TaskResult>,
    registration: &'a mut Option<Registration>,
}

impl Session<'_> {
    async fn run(self) -> SessionEnd {
        *self.registration = None;
        match registered_session(self).await {
            Ok(never) => match never {},
            Err(end) => end,
        }
    }
}

async fn registered_session(session: Session<'_>) -> Result<std::convert::Infallible, SessionEnd> {
    let Session {
        config,
        threads,
        holds_unpacked,
        running,
        jobs,
        results,
        finished,
        registration,
    } = session;
    let lost = |e: &dyn std::fmt::Display| SessionEnd::Lost(e.to_string());
    let ended = |status: tonic::Status| {
        if is_refusal(&status) {
            SessionEnd::Refused(format!("{:?}: {}", status.code(), status.message()))
        } else {
            SessionEnd::Lost(format!("{:?}: {}", status.code(), status.message()))
        }
    };
    // Tasks still running belong to an earlier registration whose leases are gone: stop them.
    cancel(running, &held_tasks(running));
    let channel = match config.coordinator.connect().await {
        Ok(channel) => channel,
        Err(error @ tilesolve::connect::ConnectError::Unreachable { .. }) => {
            return Err(lost(&error))
        }
        Err(error) => return Err(SessionEnd::Refused(error.to_string())),
    };
    let mut client = WorkersClient::new(channel.clone());
    let host = std::env::var("HOSTNAME")
        .or_else(|_| std::fs::read_to_string("/etc/hostname").map(|name| name.trim().to_string()))
        .unwrap_or_default();
    let name = config
        .name
        .clone()
        .unwrap_or_else(|| format!("{host} (pid {})", std::process::id()));
    let registered = client
        .register(pb::RegisterRequest {
            threads: threads as u32,
            protocol_version: PROTOCOL_VERSION,
            host,
            pdbs: held_pdbs(&config.data),
            default_heuristics: default_heuristics(config.table_budget),
            name,
        })
        .await
        .map_err(ended)?
        .into_inner();
    let (worker_id, worker_secret) = (registered.worker_id, registered.worker_secret);
    tracing::info!(worker = worker_id, threads, "registered with coordinator");
    *registration = Some(Registration {
        client: client.clone(),
        worker_id,
        worker_secret: worker_secret.clone(),
    });
    config.readiness.set(true).await;
    let uploader = Uploader::new(
        WorkersClient::new(channel.clone()),
        worker_id,
        worker_secret.clone(),
        config.data.clone(),
    );
    let mut heartbeat = tokio::spawn(heartbeats(
        WorkersClient::new(channel),
        worker_id,
        worker_secret.clone(),
        Duration::from_millis(u64::from(registered.heartbeat_interval_ms.max(100))),
        running.clone(),
        uploader.clone(),
    ));
    let polling = async {
        let mut task_times = TaskTimes::default();
        // When the oldest result not yet sent finished.
        let mut unreported_since = None;
        loop {
            let (mut count, mut seconds) = (0, 0.0);
            while let Ok(result) = results.try_recv() {
                count += 1;
                seconds += result.seconds;
                finished.push(result);
            }
            task_times.add(count, seconds);
            if finished.is_empty() {
                unreported_since = None;
            } else {
                unreported_since.get_or_insert_with(Instant::now);
            }
            let per_thread = task_times.tasks_per_thread(holds_unpacked);
            let holds = threads * per_thread as usize;
            let held = running.lock().unwrap_or_else(|p| p.into_inner()).len();
            // Short tasks are packed: the worker asks again once half its tasks are done, and
            // sends results at most REPORT_AFTER late, so that a poll carries many each way.
            let packing = per_thread > holds_unpacked;
            let ask = if packing {
                held <= holds / 2
            } else {
                held < holds
            };
            let report_in = unreported_since.map(|since: Instant| {
                if packing && held > 0 {
                    REPORT_AFTER.saturating_sub(since.elapsed())
                } else {
                    Duration::ZERO
                }
            });
            if !ask && report_in.is_none_or(|wait| !wait.is_zero()) {
                // Every thread is busy and the waiting tasks are enough: wait for one to finish,
                // or for the results to be due (heartbeats keep the leases).
                let next = match report_in {
                    Some(wait) => tokio::time::timeout(wait, results.recv())
                        .await
                        .ok()
                        .flatten(),
                    None => results.recv().await,
                };
                if let Some(result) = next {
                    task_times.add(1, result.seconds);
                    finished.push(result);
                }
                continue;
            }
            let free = if ask {
                holds.saturating_sub(held) as u32
            } else {
                0
            };
            unreported_since = None;
            let response = client
                .poll(pb::PollRequest {
                    worker_id,
                    worker_secret: worker_secret.clone(),
                    free_slots: free,
                    // Results sent with this call are applied before it waits.
                    idle: held == 0,
                    results: std::mem::take(finished),
                    leaving: false,
                })
                .await
                .map_err(ended)?
                .into_inner();
            cancel(running, &response.cancelled);
            uploader.send(response.send_pdbs);
            let idle = response.tasks.is_empty();
            for task in response.tasks {
                running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(task.task_id, Arc::new(AtomicBool::new(false)));
                if jobs.send((task, Instant::now())).is_err() {
                    return Err(SessionEnd::Refused("worker threads have stopped".into()));
                }
            }
            if idle {
                // Nothing to do: wait for a result or a little while before asking again.
                if let Ok(Some(result)) =
                    tokio::time::timeout(Duration::from_millis(50), results.recv()).await
                {
                    finished.push(result);
                }
            }
        }
    };
    // While every thread is busy only heartbeats talk to the coordinator, so they too may end
    // the session.
    let outcome = tokio::select! {
        outcome = polling => outcome,
        ended = &mut heartbeat => match ended {
            Ok(end) => Err(end),
            Err(panic) => Err(SessionEnd::Lost(format!("heartbeat task: {panic}"))),
        },
    };
    heartbeat.abort();
    outcome
}

/// Renews the leases of running tasks until the coordinator says it does not know this worker
/// (transient errors are left to the poll loop and the next beat).
async fn heartbeats(
    mut client: WorkersClient,
    worker_id: u64,
    worker_secret: String,
    every: Duration,
    running: Running,
    uploader: Uploader,
) -> SessionEnd {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let ids = held_tasks(&running);
        match client
            .heartbeat(pb::HeartbeatRequest {
                worker_id,
                worker_secret: worker_secret.clone(),
                running: ids,
            })
            .await
        {
            Ok(response) => {
                let response = response.into_inner();
                cancel(&running, &response.cancelled);
                uploader.send(response.send_pdbs);
            }
            Err(status) if status.code() == tonic::Code::NotFound => {
                return SessionEnd::Lost(status.message().to_string())
            }
            Err(status) if is_refusal(&status) => {
                return SessionEnd::Refused(status.message().to_string())
            }
            Err(_) => {}
        }
    }
}

/// The ids of the tasks this worker holds (running or prefetched).
fn held_tasks(running: &Running) -> Vec<u64> {
    running
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .copied()
        .collect()
}

fn cancel(running: &Running, ids: &[u64]) {
    let running = running.lock().unwrap_or_else(|p| p.into_inner());
    for id in ids {
        if let Some(flag) = running.get(id) {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs one task on the calling thread.
fn execute(
    task: &pb::Task,
    solvers: &Solvers,
    tables: Tables<'_>,
    cancel: Option<&AtomicBool>,
) -> pb::TaskResult {
    use pb::task_result::Outcome;
    let fail = |reason: String| pb::TaskResult {
        task_id: task.task_id,
        nodes: 0,
        seconds: 0.0,
        outcome: Some(Outcome::Error(reason)),
        parts: Vec::new(),
        queued_seconds: 0.0,
    };
    let (board, goal) = match (parse_board(&task.board), parse_board(&task.goal)) {
        (Ok(board), Ok(goal)) => (board, goal),
        (Err(e), _) | (_, Err(e)) => return fail(format!("bad task board: {e}")),
    };
    let Some(path) = task
        .path
        .chars()
        .map(|c| Direction::ALL.into_iter().find(|d| d.letter() == c))
        .collect::<Option<Vec<_>>>()
    else {
        return fail(format!("bad task path '{}'", task.path));
    };
    let solver = match solver_for(solvers, tables, &goal, &task.heuristic) {
        Ok(solver) => solver,
        Err(reason) => return fail(reason),
    };
    // Timed from here: a first task's pattern database load is the worker's cost, not the
    // search's (the coordinator records these times for replaying the run).
    let started = Instant::now();
    let run = run_task(
        &solver,
        Work {
            board: &board,
            path: &path,
            bound: task.bound,
            iterate: task.iterate,
            node_budget: task.node_budget,
            profile_depth: task.profile_depth,
        },
        cancel,
    );
    let seconds = started.elapsed().as_secs_f64();
    tracing::debug!(
        nodes = run.nodes,
        seconds,
        outcome = run.outcome.kind(),
        "task finished"
    );
    let outcome = match run.outcome {
        TaskOutcome::Found(moves) => Outcome::Found(moves_to_string(&moves)),
        TaskOutcome::Exceeded(bound) => Outcome::NextBound(bound),
        TaskOutcome::BudgetSpent(bound) => Outcome::BudgetSpentAt(bound),
        TaskOutcome::Split {
            children,
            pruned_min_f,
        } => Outcome::Split(pb::SplitChildren {
            moves: moves_to_string(&children),
            pruned_min_f,
        }),
        TaskOutcome::Failed(reason) => Outcome::Error(reason),
    };
    pb::TaskResult {
        task_id: task.task_id,
        nodes: run.nodes,
        seconds,
        queued_seconds: 0.0,
        outcome: Some(outcome),
        parts: run
            .parts
            .into_iter()
            .map(|part| pb::PartSize {
                moves: moves_to_string(&part.moves),
                nodes: part.expanded,
                micros: part.micros,
            })
            .collect(),
    }
}

/// The solver for a goal and heuristic, built once per worker (pattern databases are loaded or
/// built under the lock, so concurrent threads wait for one build rather than racing).
fn solver_for(
    solvers: &Solvers,
    tables: Tables<'_>,
    goal: &Board,
    heuristic: &str,
) -> Result<Arc<Solver>, String> {
    let mut solvers = solvers.lock().unwrap_or_else(|p| p.into_inner());
    let key = (*goal, heuristic.to_string());
    if let Some(solver) = solvers.get(&key) {
        return Ok(solver.clone());
    }
    let requested: HeuristicChoice = heuristic.parse().map_err(|e| format!("{e}"))?;
    let choice = requested.resolve(goal, tables.budget);
    tables.fetcher.fetch_missing(tables.pdbs, choice, goal);
    let built = choice
        .build(goal, tables.budget, tables.pdbs, &log_table_event)
        .map_err(|e| e.to_string())?;
    tables.metrics.tables_loaded(built.table_bytes());
    let solver = Arc::new(Solver::with_heuristic(*goal, built, choice.to_string()));
    solvers.insert(key, solver.clone());
    Ok(solver)
}

/// Log lines for what the pattern database store did that took time.
fn log_table_event(event: PdbEvent<'_>) {
    match event {
        PdbEvent::Built { path, seconds } => {
            tracing::info!(file = %path.display(), seconds, "built pattern table")
        }
        PdbEvent::Packing { path, entries } => {
            tracing::info!(file = %path.display(), entries, "packing a pattern table an earlier version built (once)")
        }
        PdbEvent::Packed { path, seconds } => {
            tracing::info!(file = %path.display(), seconds, "packed a pattern table to half a byte an entry")
        }
        _ => {}
    }
}

/// Loads, on a thread of its own, the solver of the default heuristic for the blank-last goal of
/// every size whose tables are all in the data directory already, so that the first task does
/// not wait while they are mapped and checked (one that comes sooner waits on the solvers' lock
/// for the same load). Fetches and builds nothing.
fn preload_present(
    solvers: Solvers,
    pdbs: PdbStore,
    fetcher: Fetcher,
    budget: u64,
    metrics: Metrics,
) {
    std::thread::spawn(move || {
        let default = HeuristicChoice::Default.to_string();
        for side in 3..=5 {
            let goal = Board::blank_last(side);
            let Some(preset) = HeuristicChoice::Default.resolve(&goal, budget).preset() else {
                continue;
            };
            if !pdbs
                .missing(preset, &goal)
                .is_ok_and(|missing| missing.is_empty())
            {
                continue;
            }
            let tables = Tables {
                pdbs: &pdbs,
                fetcher: &fetcher,
                budget,
                metrics: &metrics,
            };
            match solver_for(&solvers, tables, &goal, &default) {
                Ok(_) => tracing::info!(side, %preset, "pattern tables loaded ahead of tasks"),
                Err(reason) => {
                    tracing::warn!(side, %preset, %reason, "pattern tables not loaded ahead")
                }
            }
        }
    });
}

/// What `default` means on this worker for each board size (blank-last goal), as it tells
/// the coordinator: e.g. "5x5 pdb:6-6-6-6-max".
fn default_heuristics(table_budget: u64) -> Vec<String> {
    (3..=5)
        .map(|side| {
            let goal = Board::blank_last(side);
            let choice = HeuristicChoice::Default.resolve(&goal, table_budget);
            format!("{side}x{side} {choice}")
        })
        .collect()
}

/// Where a worker thread gets pattern tables: its data directory, the coordinator's copies,
/// and the budget that decides what `default` means.
#[derive(Clone, Copy)]
struct Tables<'a> {
    pdbs: &'a PdbStore,
    fetcher: &'a Fetcher,
    budget: u64,
    metrics: &'a Metrics,
}

/// Brings pattern database files this worker lacks from the coordinator, which has them (it
/// loads them to split iterations). A fetched file is used only if its checksum verifies when it
/// is loaded; otherwise, or if fetching fails, the worker builds the table itself.
#[derive(Clone)]
struct Fetcher {
    handle: tokio::runtime::Handle,
    coordinator: ConnectOptions,
}

impl Fetcher {
    /// Called on a worker thread (never inside the async runtime), so it may block on it.
    fn fetch_missing(&self, pdbs: &PdbStore, choice: HeuristicChoice, goal: &Board) {
        let Some(preset) = choice.preset() else {
            return;
        };
        let Ok(specs) = PdbStore::specs(preset, goal) else {
            return;
        };
        for spec in specs {
            let path = pdbs.path_of(&spec);
            if path.exists() {
                continue;
            }
            match self
                .handle
                .block_on(fetch(&self.coordinator, &spec.file_name(), &path))
            {
                Ok(fetched) => {
                    tracing::info!(
                        file = %path.display(),
                        bytes = fetched.bytes,
                        transferred = fetched.transferred,
                        compressed = fetched.compressed,
                        "pattern database fetched from the coordinator"
                    )
                }
                Err(reason) => {
                    tracing::warn!(file = %path.display(), %reason, "could not fetch the pattern database; building it here")
                }
            }
        }
    }
}

/// A table fetched: its size, and the bytes that crossed the network for it.
struct Fetched {
    bytes: u64,
    transferred: u64,
    compressed: bool,
}

/// Streams `name` from the coordinator into `path`, compressed if the coordinator can (through
/// a temporary file renamed at the end, so a broken transfer never leaves a half file under
/// the real name; the table's checksum is verified when it is loaded).
async fn fetch(
    coordinator: &ConnectOptions,
    name: &str,
    path: &std::path::Path,
) -> Result<Fetched, String> {
    let mut client = WorkersClient::new(coordinator.connect().await.map_err(|e| e.to_string())?);
    let mut stream = client
        .fetch_pdb(pb::FetchPdbRequest {
            file_name: name.to_string(),
            accept_zstd: true,
        })
        .await
        .map_err(|s| s.message().to_string())?
        .into_inner();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let partial = tilesolve::pdb::file::partial_path(path, "fetching");
    let received = receive(&mut stream, &partial).await;
    let moved = received.and_then(|fetched| {
        std::fs::rename(&partial, path).map_err(|e| e.to_string())?;
        Ok(fetched)
    });
    if moved.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    moved
}

/// Writes a fetched file's chunks to `partial` (decompressing a zstd stream on the way);
/// returns what was fetched once the file is whole and on disk.
async fn receive(
    stream: &mut tonic::Streaming<pb::PdbChunk>,
    partial: &std::path::Path,
) -> Result<Fetched, String> {
    use std::io::Write;
    let file = std::fs::File::create(partial).map_err(|e| e.to_string())?;
    let mut out = TableWriter::Plain(file);
    let (mut received, mut total, mut compressed) = (0u64, 0u64, None);
    while let Some(chunk) = stream
        .message()
        .await
        .map_err(|s| s.message().to_string())?
    {
        if chunk.offset != received {
            return Err(format!(
                "chunk at offset {} after {received} bytes",
                chunk.offset
            ));
        }
        match compressed {
            None => {
                compressed = Some(chunk.zstd);
                if chunk.zstd {
                    out = out.decompressing().map_err(|e| e.to_string())?;
                }
            }
            Some(zstd) if zstd != chunk.zstd => {
                return Err("the stream changed its compression midway".into())
            }
            Some(_) => {}
        }
        out.write_all(&chunk.data).map_err(|e| e.to_string())?;
        received += chunk.data.len() as u64;
        total = chunk.total_size;
    }
    if received != total {
        return Err(format!("received {received} of {total} bytes"));
    }
    let file = out.finish().map_err(|e| e.to_string())?;
    file.sync_all().map_err(|e| e.to_string())?;
    tilesolve::pdb::file::drop_cached_pages(&file);
    Ok(Fetched {
        bytes: file.metadata().map_err(|e| e.to_string())?.len(),
        transferred: received,
        compressed: compressed.unwrap_or(false),
    })
}

/// Where a fetched table's bytes go: straight to the file, or through a zstd decoder.
enum TableWriter {
    Plain(std::fs::File),
    Zstd(zstd::stream::write::Decoder<'static, std::fs::File>),
}

impl TableWriter {
    fn decompressing(self) -> std::io::Result<TableWriter> {
        match self {
            TableWriter::Plain(file) => {
                Ok(TableWriter::Zstd(zstd::stream::write::Decoder::new(file)?))
            }
            zstd => Ok(zstd),
        }
    }

    /// The file, with everything written to it.
    fn finish(self) -> std::io::Result<std::fs::File> {
        use std::io::Write;
        match self {
            TableWriter::Plain(file) => Ok(file),
            TableWriter::Zstd(mut decoder) => {
                decoder.flush()?;
                Ok(decoder.into_inner())
            }
        }
    }
}

impl std::io::Write for TableWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        match self {
            TableWriter::Plain(file) => file.write(data),
            TableWriter::Zstd(decoder) => decoder.write(data),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            TableWriter::Plain(file) => file.flush(),
            TableWriter::Zstd(decoder) => decoder.flush(),
        }
    }
}

/// The pattern database files in `dir` with the checksums their headers state.
fn held_pdbs(dir: &std::path::Path) -> Vec<pb::PdbFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|x| x == "pdb"))
        .filter_map(|path| {
            let header = tilesolve::pdb::file::inspect(&path, false).ok()?;
            let name = path.file_name()?.to_str()?.to_string();
            Some(pb::PdbFile {
                name,
                checksum: header.checksum,
            })
        })
        .collect()
}
