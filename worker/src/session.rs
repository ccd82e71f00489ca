//! One registration's life: connect, register, open the session's one call, then poll with
//! free slots and finished results in one message while heartbeats (messages of the same call)
//! keep the held tasks' leases alive; and leaving, which hands every held task back.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use tilesolve::connect::AuthChannel;
use tilesolve::proto::v1 as pb;
use tilesolve::proto::PROTOCOL_VERSION;
use tilesolve::task::TaskTimes;
use tilesolve::worker_session::WorkerSession;

use crate::finished::Finished;
use crate::tables::held_pdbs;
use crate::threads::{cancel, default_heuristics, held_tasks, Held, Running};
use crate::upload::Uploader;
use crate::{WorkerConfig, WorkersClient};

pub(crate) enum SessionEnd {
    Refused(String),
    Lost(String),
}

/// How long a finished short task's result may wait to travel with others (see
/// [`TaskTimes`]).
const REPORT_AFTER: Duration = Duration::from_millis(10);

/// How soon a worker with some threads idle asks again after a poll that brought too little
/// (one with every thread idle is held by the coordinator until tasks are queued instead).
const IDLE_THREADS_ASK_AGAIN: Duration = Duration::from_millis(50);

/// The longest pause before trying a lost coordinator again.
pub(crate) const MAX_RETRY: Duration = Duration::from_secs(5);

/// Pauses between tries to reach a lost coordinator: from 100 ms doubling to [`MAX_RETRY`], each
/// plus up to as much again at random, so a hundred workers that lost a restarting coordinator
/// do not all knock at the same instant.
pub(crate) fn reconnect_pauses() -> impl Iterator<Item = Duration> {
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
pub(crate) struct Registration {
    client: WorkersClient,
    worker_id: u64,
    worker_secret: String,
}

/// Stops every task this worker holds and tells the coordinator it is leaving, with the
/// results it has: the coordinator puts the rest back in the queue at once.
pub(crate) async fn leave(
    registration: Option<Registration>,
    running: &Running,
    results: &Finished,
    mut finished: Vec<pb::TaskResult>,
) {
    // Results are taken before the searches are stopped: a search stopped now reports a
    // failure, which must not reach the coordinator as the task's fault.
    results.take_into(&mut finished);
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

/// How a failed call ends the session: for good when the coordinator refused this worker.
fn ended(status: tonic::Status) -> SessionEnd {
    let what = format!("{:?}: {}", status.code(), status.message());
    if is_refusal(&status) {
        SessionEnd::Refused(what)
    } else {
        SessionEnd::Lost(what)
    }
}

/// A session's heartbeat task, stopped when the session ends however it ends: a session
/// dropped at shutdown, as the worker leaves, must not leave a heartbeat beating for a
/// registration that is gone (held at the coordinator, it kept the embedded `batch` waiting).
struct Beating(tokio::task::JoinHandle<SessionEnd>);

impl Drop for Beating {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One registration's life: register, then poll until the connection fails or the coordinator
/// no longer knows this worker.
pub(crate) struct Session<'a> {
    pub(crate) config: &'a WorkerConfig,
    pub(crate) threads: usize,
    /// Tasks held per thread (running and prefetched) while tasks are not short enough to pack
    /// ([`TaskTimes`]).
    pub(crate) holds_unpacked: u32,
    /// Its tasks, their queue and their results.
    pub(crate) held: &'a Held,
    pub(crate) finished: &'a mut Vec<pb::TaskResult>,
    pub(crate) registration: &'a mut Option<Registration>,
}

impl Session<'_> {
    pub(crate) async fn run(mut self) -> SessionEnd {
        *self.registration = None;
        match self.registered().await {
            Ok(never) => match never {},
            Err(end) => end,
        }
    }

    /// Registers, then polls until the connection fails or the coordinator no longer knows
    /// this worker; heartbeats run beside the polls and may end the session too.
    async fn registered(&mut self) -> Result<Infallible, SessionEnd> {
        // Tasks still running belong to an earlier registration whose leases are gone: stop them.
        cancel(&self.held.running, &held_tasks(&self.held.running));
        let (channel, registered) = self.register().await?;
        let (worker_id, worker_secret) = (registered.worker_id, registered.worker_secret);
        tracing::info!(
            worker = worker_id,
            threads = self.threads,
            "registered with coordinator"
        );
        *self.registration = Some(Registration {
            client: WorkersClient::new(channel.clone()),
            worker_id,
            worker_secret: worker_secret.clone(),
        });
        let mut client = WorkersClient::new(channel.clone());
        let calls = WorkerSession::open(|calls| client.session(calls), worker_id, &worker_secret)
            .await
            .map_err(ended)?;
        self.config.readiness.set(true).await;
        let uploader = Uploader::new(
            WorkersClient::new(channel),
            worker_id,
            worker_secret.clone(),
            self.config.data.clone(),
        );
        let mut heartbeat = Beating(tokio::spawn(heartbeats(
            calls.clone(),
            worker_id,
            worker_secret.clone(),
            Duration::from_millis(u64::from(registered.heartbeat_interval_ms.max(100))),
            self.held.clone(),
            uploader.clone(),
        )));
        // While every thread is busy only heartbeats talk to the coordinator, so they too may
        // end the session.
        tokio::select! {
            outcome = self.poll(worker_id, &worker_secret, &calls, uploader) => outcome,
            ended = &mut heartbeat.0 => match ended {
                Ok(end) => Err(end),
                Err(panic) => Err(SessionEnd::Lost(format!("heartbeat task: {panic}"))),
            },
        }
    }

    /// Connects and registers: the channel, and the coordinator's answer.
    async fn register(&self) -> Result<(AuthChannel, pb::RegisterResponse), SessionEnd> {
        let config = self.config;
        let channel = match config.coordinator.connect().await {
            Ok(channel) => channel,
            Err(error @ tilesolve::connect::ConnectError::Unreachable { .. }) => {
                return Err(SessionEnd::Lost(error.to_string()))
            }
            Err(error) => return Err(SessionEnd::Refused(error.to_string())),
        };
        let host = std::env::var("HOSTNAME")
            .or_else(|_| {
                std::fs::read_to_string("/etc/hostname").map(|name| name.trim().to_string())
            })
            .unwrap_or_default();
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| format!("{host} (pid {})", std::process::id()));
        let registered = WorkersClient::new(channel.clone())
            .register(pb::RegisterRequest {
                threads: self.threads as u32,
                protocol_version: PROTOCOL_VERSION,
                host,
                pdbs: held_pdbs(&config.data),
                default_heuristics: default_heuristics(config.table_budget),
                name,
            })
            .await;
        match registered {
            Ok(registered) => Ok((channel, registered.into_inner())),
            // http:// to a coordinator that speaks TLS: no retry can help.
            Err(status) => Err(match config.coordinator.scheme_mismatch(&status).await {
                Some(mismatch) => SessionEnd::Refused(mismatch.to_string()),
                None => ended(status),
            }),
        }
    }

    /// How long the finished results may still wait for others (None: there are none): while
    /// short tasks are packed and some are held, until the oldest has waited `REPORT_AFTER`
    /// (stretched by the time scale); otherwise not at all.
    fn report_in(&self, packing: bool, held: usize) -> Option<Duration> {
        self.held.results.since().map(|since| {
            if packing && held > 0 {
                let after = self.config.time_scale.stretch(REPORT_AFTER);
                after.saturating_sub(since.elapsed())
            } else {
                Duration::ZERO
            }
        })
    }

    /// Polls for tasks with the results finished since the last poll, hands the tasks to the
    /// threads, and waits while every thread is busy, until a call fails.
    async fn poll(
        &mut self,
        worker_id: u64,
        worker_secret: &str,
        calls: &WorkerSession,
        uploader: Uploader,
    ) -> Result<Infallible, SessionEnd> {
        let mut task_times = TaskTimes::default();
        loop {
            let per_thread =
                task_times.tasks_per_thread(self.holds_unpacked, self.config.time_scale);
            let holds = self.threads * per_thread as usize;
            // Short tasks are packed: the worker asks again once half its tasks are done, and
            // sends results at most REPORT_AFTER late, so that a poll carries many each way.
            let packing = per_thread > self.holds_unpacked;
            let ask_at_held = if packing {
                holds / 2
            } else {
                holds.saturating_sub(1)
            };
            self.held.results.wake_at_held(ask_at_held);
            let held = self
                .held
                .running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len();
            let ask = held <= ask_at_held;
            let report_in = self.report_in(packing, held);
            if !ask && report_in.is_none_or(|wait| !wait.is_zero()) {
                // Every thread is busy and the waiting tasks are enough: wait for a task to end
                // that calls for asking, or for the results to be due (heartbeats keep the
                // leases).
                match report_in {
                    Some(wait) => {
                        let _ = tokio::time::timeout(wait, self.held.results.woken()).await;
                    }
                    None => self.held.results.woken().await,
                }
                continue;
            }
            let taken = self.finished.len();
            self.held.results.take_into(self.finished);
            let new = &self.finished[taken..];
            task_times.add(new.len() as u64, new.iter().map(|r| r.seconds).sum());
            let free = if ask {
                holds.saturating_sub(held) as u32
            } else {
                0
            };
            let response = calls
                .poll(pb::PollRequest {
                    worker_id,
                    worker_secret: worker_secret.to_string(),
                    free_slots: free,
                    // Results sent with this call are applied before it waits.
                    idle: held == 0,
                    results: std::mem::take(self.finished),
                    leaving: false,
                })
                .await
                .map_err(ended)?;
            self.held.stop_told(&response.cancelled);
            uploader.send(response.send_pdbs);
            // Fewer tasks than asked for: the coordinator keeps what is queued for idle threads
            // elsewhere, or has nothing.
            let refused = response.tasks.len() < free as usize;
            let holding = held + response.tasks.len();
            for task in response.tasks {
                self.held.hold_leased(task.task_id);
                if self.held.jobs.push(task, Instant::now()).is_err() {
                    return Err(SessionEnd::Refused("worker threads have stopped".into()));
                }
            }
            // After the new tasks are held: one of them may be asked back already.
            self.held.answer_held(&response.hand_back);
            if refused && holding >= self.threads {
                // A prefetch refused, every thread busy: asking again before a task ends only
                // costs both sides a call. Fifteen workers asking every 50 ms made 2.8 polls a
                // task on the Korf-24 five, and cost the coordinator 86 CPU-s (3.6% of the
                // workers') on the fifteen easiest Korf-24 boards; waiting, 1.07 and 16 s.
                self.held.results.woken().await;
            } else if refused && holding > 0 {
                // Some threads idle: ask again soon, or when a task ends.
                let again = self.config.time_scale.stretch(IDLE_THREADS_ASK_AGAIN);
                let _ = tokio::time::timeout(again, self.held.results.woken()).await;
            }
            // A worker with nothing at all asks again at once: the coordinator holds that call
            // until tasks are queued (its long poll), so the next wave reaches it without delay.
        }
    }
}

/// Renews the leases of held tasks every `every` until the session's stream ends (the
/// coordinator no longer knows this worker, refused it, stopped or cannot be reached: a
/// session's call that fails ends its stream, so no later beat could pass), and acts at once on
/// what the coordinator tells unasked: tasks to stop or hand back, tables to send.
async fn heartbeats(
    calls: WorkerSession,
    worker_id: u64,
    worker_secret: String,
    every: Duration,
    held: Held,
    uploader: Uploader,
) -> SessionEnd {
    let act = |told: pb::HeartbeatResponse| {
        held.stop_told(&told.cancelled);
        held.hand_back_told(&told.hand_back);
        uploader.send(told.send_pdbs);
    };
    // The registration counts as the first beat.
    let mut next_beat = tokio::time::Instant::now() + every;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_beat) => {
                next_beat += every;
                let beat = calls
                    .heartbeat(pb::HeartbeatRequest {
                        worker_id,
                        worker_secret: worker_secret.clone(),
                        running: held_tasks(&held.running),
                        // Not held: what there is to tell comes unasked.
                        hold_ms: 0,
                    })
                    .await;
                match beat {
                    Ok(told) => act(told),
                    Err(status) => return ended(status),
                }
            }
            told = calls.told() => match told {
                Ok(told) => act(told),
                Err(status) => return ended(status),
            },
        }
    }
}
