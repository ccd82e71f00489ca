//! The worker API (`tilesolve.v1.Workers`): registration, the poll that carries results in and
//! tasks out, heartbeats (each as a call of its own, or as messages of a worker's session, in
//! `worker_session`), and table transfer (in `table_transfer`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tilesolve::proto::v1 as pb;
use tilesolve::proto::{OLDEST_PROTOCOL_VERSION, PROTOCOL_VERSION};
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use super::convert::{report_of, task_messages};
use super::table_transfer::ChunkStream;
use super::worker_session::{self, Answering, Reply, SessionAnswers};
use super::Service;
use crate::scheduler::{Told, WorkerDescription, WorkerId};

/// Longest a poll from an idle worker waits for work (well under the lease timeout and any
/// client deadline; a worker that gets nothing asks again).
pub(super) const LONG_POLL: Duration = Duration::from_secs(1);

#[tonic::async_trait]
impl pb::workers_server::Workers for Service {
    async fn register(
        &self,
        request: Request<pb::RegisterRequest>,
    ) -> Result<Response<pb::RegisterResponse>, Status> {
        let peer = request
            .remote_addr()
            .map_or_else(|| "unknown".to_string(), |addr| addr.to_string());
        // Which worker token it presented (auth's check put it there): one lineage a token.
        let token = request
            .extensions()
            .get::<crate::auth::TokenIndex>()
            .map_or(0, |index| index.0);
        let request = request.into_inner();
        if request.protocol_version == 0 {
            return Err(Status::invalid_argument(format!(
                "protocol_version is required (this coordinator speaks version {PROTOCOL_VERSION})"
            )));
        }
        if !(OLDEST_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&request.protocol_version) {
            return Err(Status::failed_precondition(format!(
                "worker protocol version {} is not one this coordinator speaks \
                 ({OLDEST_PROTOCOL_VERSION} to {PROTOCOL_VERSION})",
                request.protocol_version
            )));
        }
        for file in &request.pdbs {
            if !tilesolve::pdb::file::is_file_name(&file.name) {
                return Err(Status::invalid_argument(format!(
                    "pdbs: '{}' is not a pattern database file name",
                    file.name
                )));
            }
            let ours = self.pdbs.dir().join(&file.name);
            if !ours.exists() {
                continue;
            }
            if let Ok(header) = tilesolve::pdb::file::inspect(&ours, false) {
                if header.checksum != file.checksum {
                    tracing::warn!(file = %file.name, host = %request.host, "worker refused: pattern database differs");
                    return Err(Status::failed_precondition(format!(
                        "the worker's pattern database {} has checksum {:016x} but the coordinator's has {:016x}; \
                         delete the worker's copy and it will be fetched again",
                        file.name, file.checksum, header.checksum
                    )));
                }
            }
        }
        let description = WorkerDescription {
            name: request.name.clone(),
            default_heuristics: request.default_heuristics.clone(),
            tables: request
                .pdbs
                .iter()
                .map(|file| (file.name.clone(), file.checksum))
                .collect(),
        };
        let (worker_id, worker_secret) = self.update(|scheduler| {
            let worker_id = scheduler.register(request.threads, &request.host, Some(token))?;
            Ok((
                worker_id,
                scheduler.describe_worker(worker_id, &description)?,
            ))
        })?;
        tracing::info!(worker = worker_id, threads = request.threads, host = %request.host, %peer,
            default_heuristics = %request.default_heuristics.join(", "), "worker registered");
        Ok(Response::new(pb::RegisterResponse {
            worker_id,
            worker_secret,
            heartbeat_interval_ms: self.heartbeat_interval.as_millis() as u32,
        }))
    }

    async fn poll(
        &self,
        request: Request<pb::PollRequest>,
    ) -> Result<Response<pb::PollResponse>, Status> {
        self.answer_poll(request.into_inner())
            .await
            .map(Response::new)
    }

    type FetchPdbStream = ChunkStream;

    async fn fetch_pdb(
        &self,
        request: Request<pb::FetchPdbRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        self.send_table(request.into_inner()).await
    }

    async fn upload_pdb(
        &self,
        request: Request<tonic::Streaming<pb::PdbUpload>>,
    ) -> Result<Response<pb::UploadPdbResponse>, Status> {
        self.take_upload(request.into_inner()).await
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        self.answer_heartbeat(request.into_inner())
            .await
            .map(Response::new)
    }

    type SessionStream = SessionAnswers;

    async fn session(
        &self,
        request: Request<tonic::Streaming<pb::WorkerCall>>,
    ) -> Result<Response<SessionAnswers>, Status> {
        let service = Arc::new(self.clone());
        let answering = service.clone();
        let answer = move |call| -> Answering {
            let service = answering.clone();
            Box::pin(async move { service.answer(call).await })
        };
        let tell = move |worker| -> Answering {
            let service = service.clone();
            Box::pin(async move { service.tell(worker) })
        };
        Ok(Response::new(worker_session::answers(
            request.into_inner(),
            self.core.clone(),
            answer,
            tell,
        )))
    }
}

impl Service {
    /// A poll, unary or a session's message: applies its results, then leases tasks, waiting
    /// for them (briefly) when the worker is idle.
    pub(super) async fn answer_poll(
        &self,
        request: pb::PollRequest,
    ) -> Result<pb::PollResponse, Status> {
        self.read(|s| s.check_worker(request.worker_id, &request.worker_secret))?;
        let results = request
            .results
            .into_iter()
            .map(report_of)
            .collect::<Result<Vec<_>, _>>()?;
        let results_count = results.len();
        let worker = request.worker_id;
        if request.leaving {
            // A leaving worker takes nothing more, never waits for work, and is answered as
            // soon as its tasks are back in the queue.
            let core = self.core.clone();
            let returned = tokio::task::spawn_blocking(move || core.leave(worker, results))
                .await
                .map_err(|e| Status::internal(e.to_string()))??;
            tracing::info!(
                worker,
                tasks_returned = returned,
                results = results_count,
                "worker left: its tasks are back in the queue"
            );
            return Ok(pb::PollResponse::default());
        }
        let (free_slots, idle) = (request.free_slots, request.idle);
        // Registered before looking for tasks, so tasks queued from then on wake this call.
        let woken = self.core.tasks_queued.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        // Finishing an iteration splits the next one: CPU work, done outside the scheduler's
        // lock and off the async threads (`Coordinator::cycle_from_async`), so other workers'
        // polls go on meanwhile.
        let (_, mut tasks, mut told) = self
            .core
            .cycle_from_async(
                (Some(results), Vec::new(), Told::default()),
                move |(results, tasks, told), scheduler| {
                    if let Some(results) = results.take() {
                        (*tasks, *told) = scheduler.poll(worker, free_slots, results)?;
                    } else if tasks.len() < free_slots as usize {
                        // The worker whose result ended an iteration gets the new one's first
                        // tasks.
                        let wanted = free_slots - tasks.len() as u32;
                        tasks.extend(scheduler.poll(worker, wanted, Vec::new())?.0);
                    }
                    Ok(())
                },
            )
            .await?;
        // Long poll: a worker with every thread idle waits here (briefly) for the next tasks
        // rather than asking again on its own schedule, so an iteration's tasks reach idle
        // workers as soon as its split is done; a table the coordinator asks it for wakes it
        // too. Queued tasks wake every waiting poll, and those that find them taken wait on:
        // answered empty, each would come straight back as a call of its own (twenty a run on
        // hard80 through fifteen workers; with a thousand idle workers, up to a thousand for every
        // task queued).
        let asked_for_tables = || self.supply.has_requests_for(worker);
        if tasks.is_empty() && told.is_empty() && !asked_for_tables() && idle {
            let deadline = tokio::time::Instant::now() + self.long_poll;
            loop {
                let waited = tokio::time::timeout_at(deadline, woken.as_mut());
                if !matches!(self.core.unless_stopping(waited).await, Some(Ok(()))) {
                    break;
                }
                // Registered before looking, so tasks queued from then on wake the next wait.
                let next = self.core.tasks_queued.notified();
                let (more, more_told) =
                    self.update(|scheduler| scheduler.poll(worker, free_slots, Vec::new()))?;
                tasks = more;
                told.extend(more_told);
                if !tasks.is_empty() || !told.is_empty() || asked_for_tables() {
                    break;
                }
                woken.set(next);
                woken.as_mut().enable();
            }
        }
        let mut tasks = task_messages(tasks);
        self.traces.fill(&mut tasks);
        Ok(pb::PollResponse {
            tasks,
            cancelled: told.cancelled,
            send_pdbs: self.supply.requests_for(worker),
            hand_back: told.hand_back,
        })
    }

    /// A heartbeat, unary or a session's message: renews the leases of the tasks it names and
    /// is held until there is something to tell the worker (see `held_until_told`).
    pub(super) async fn answer_heartbeat(
        &self,
        request: pb::HeartbeatRequest,
    ) -> Result<pb::HeartbeatResponse, Status> {
        let worker = request.worker_id;
        let beat = |scheduler: &mut crate::scheduler::Scheduler| {
            scheduler.check_worker(worker, &request.worker_secret)?;
            scheduler.heartbeat(worker, &request.running)
        };
        let told = if request.hold_ms == 0 {
            // Not held (an opened session's worker is told unasked): answered at once, and the
            // signal its session waits on is left alone.
            self.update(beat)?
        } else {
            // Taken before the first look, so that what is told after it wakes the wait below.
            let signal = self.core.told_signal(worker);
            let told = match self.update(beat) {
                Ok(told) => {
                    self.held_until_told(worker, told, request.hold_ms, &signal)
                        .await
                }
                Err(error) => Err(Status::from(error)),
            };
            self.core.forget_told_signal(worker, &signal);
            told?
        };
        Ok(pb::HeartbeatResponse {
            cancelled: told.cancelled,
            send_pdbs: self.supply.requests_for(worker),
            hand_back: told.hand_back,
        })
    }

    /// A heartbeat with nothing to tell (`told`) waits up to `hold_ms` (at most the heartbeat
    /// interval) for something: a task to stop or to hand back reaches a busy worker at once,
    /// not at its next beat. It is answered at once when the coordinator stops.
    async fn held_until_told(
        &self,
        worker: WorkerId,
        mut told: Told,
        hold_ms: u32,
        signal: &Notify,
    ) -> Result<Told, Status> {
        let hold = Duration::from_millis(u64::from(hold_ms)).min(self.heartbeat_interval);
        let until = tokio::time::Instant::now() + hold;
        while told.is_empty() {
            let wait = tokio::time::timeout_at(until, signal.notified());
            if !matches!(self.core.unless_stopping(wait).await, Some(Ok(()))) {
                break;
            }
            told = self.update(|scheduler| Ok(scheduler.take_told(worker)))?;
        }
        Ok(told)
    }

    /// One message's answer, as the unary call of its kind would give it; a session's opening
    /// is checked, and answered by nothing.
    async fn answer(&self, call: pb::WorkerCall) -> Result<Reply, Status> {
        use pb::worker_answer::Answer;
        use pb::worker_call::Call;
        let started = Instant::now();
        let send = |answer| {
            Reply::Send(pb::WorkerAnswer {
                answer: Some(answer),
            })
        };
        let (method, reply) = match call.call {
            Some(Call::Poll(poll)) => (
                SESSION_POLL,
                self.answer_poll(poll).await.map(Answer::Poll).map(send),
            ),
            Some(Call::Heartbeat(heartbeat)) => (
                SESSION_HEARTBEAT,
                self.answer_heartbeat(heartbeat)
                    .await
                    .map(Answer::Heartbeat)
                    .map(send),
            ),
            Some(Call::Open(open)) => (
                SESSION_OPEN,
                self.read(|s| s.check_worker(open.worker_id, &open.worker_secret))
                    .map(|()| Reply::Opened(open.worker_id))
                    .map_err(Status::from),
            ),
            None => (
                SESSION_EMPTY,
                Err(Status::invalid_argument(
                    "a WorkerCall must hold a poll, a heartbeat or an opening",
                )),
            ),
        };
        let code = reply
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.rpc_metrics
            .observe(method, code, started.elapsed().as_secs_f64());
        reply
    }

    /// What `worker`, whose session is open, is to be told now, if anything: sent unasked.
    fn tell(&self, worker: WorkerId) -> Result<Reply, Status> {
        let started = Instant::now();
        let told = self.update(|scheduler| Ok(scheduler.take_told(worker)))?;
        let send_pdbs = self.supply.requests_for(worker);
        if told.is_empty() && send_pdbs.is_empty() {
            return Ok(Reply::Nothing);
        }
        self.rpc_metrics.observe(
            SESSION_TOLD,
            tonic::Code::Ok,
            started.elapsed().as_secs_f64(),
        );
        Ok(Reply::Send(pb::WorkerAnswer {
            answer: Some(pb::worker_answer::Answer::Told(pb::HeartbeatResponse {
                cancelled: told.cancelled,
                send_pdbs,
                hand_back: told.hand_back,
            })),
        }))
    }
}

/// The method labels a session's messages are timed under in `/metrics`
/// (`tilesolve_rpc_seconds`), beside the unary calls they stand for.
const SESSION_POLL: &str = "/tilesolve.v1.Workers/Session/Poll";
const SESSION_HEARTBEAT: &str = "/tilesolve.v1.Workers/Session/Heartbeat";
const SESSION_OPEN: &str = "/tilesolve.v1.Workers/Session/Open";
/// What an opened session was sent unasked.
const SESSION_TOLD: &str = "/tilesolve.v1.Workers/Session/Told";
const SESSION_EMPTY: &str = "/tilesolve.v1.Workers/Session/Empty";
