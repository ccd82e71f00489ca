//! A worker's side of `Workers/Session`: its polls and heartbeats sent as messages of one
//! bidirectional call, each awaited as a unary call would be, and what the coordinator tells
//! it unasked (tasks to stop or hand back, tables to send), once the session is opened for its
//! registration (protocol version 5).
//!
//! At most one poll and one heartbeat are outstanding at a time (each kind waits its turn), so
//! an answer is matched to its call by its kind alone. A call whose future is dropped while it
//! waits leaves its answer to the next call of its kind: drop the session with it (the worker
//! does, since a session's calls end together). What is told unasked is gathered until taken
//! ([`WorkerSession::told`]), so a worker that takes it late never holds up the answers.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status, Streaming};

use crate::proto::v1 as pb;

type Answers<T> = tokio::sync::Mutex<mpsc::Receiver<T>>;

/// An open session; clones share it. The stream closes when the last clone is dropped.
#[derive(Clone)]
pub struct WorkerSession {
    inner: Arc<Inner>,
}

struct Inner {
    calls: mpsc::Sender<pb::WorkerCall>,
    polls: Answers<pb::PollResponse>,
    heartbeats: Answers<pb::HeartbeatResponse>,
    told: Arc<Told>,
    reader: tokio::task::JoinHandle<()>,
}

/// What the coordinator told unasked and nobody took yet, and why the stream ended.
#[derive(Default)]
struct Told {
    gathered: Mutex<Option<pb::HeartbeatResponse>>,
    /// Why the stream ended, once it has: every call from then on fails with it.
    ended: Mutex<Option<Status>>,
    /// Woken when something is told or the stream ends.
    wake: tokio::sync::Notify,
}

impl Told {
    fn gather(&self, told: pb::HeartbeatResponse) {
        let mut gathered = self.gathered.lock().unwrap_or_else(|p| p.into_inner());
        let all = gathered.get_or_insert_with(Default::default);
        all.cancelled.extend(told.cancelled);
        all.hand_back.extend(told.hand_back);
        all.send_pdbs.extend(told.send_pdbs);
        drop(gathered);
        self.wake.notify_waiters();
    }

    fn end(&self, why: Status) {
        *self.ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
        self.wake.notify_waiters();
    }

    fn ended(&self) -> Option<Status> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl WorkerSession {
    /// Opens a session with `start`, which makes the call (for example
    /// `|calls| client.session(calls)`), for the registration `worker_id` with `worker_secret`:
    /// what it is to be told comes unasked ([`WorkerSession::told`]), and its heartbeats are
    /// to be sent unheld (`hold_ms` 0).
    pub async fn open<F, Fut>(
        start: F,
        worker_id: u64,
        worker_secret: &str,
    ) -> Result<WorkerSession, Status>
    where
        F: FnOnce(ReceiverStream<pb::WorkerCall>) -> Fut,
        Fut: Future<Output = Result<Response<Streaming<pb::WorkerAnswer>>, Status>>,
    {
        // Two calls at most are in flight, a poll and a heartbeat, behind the opening.
        let (calls, outgoing) = mpsc::channel(3);
        let open = pb::SessionOpen {
            worker_id,
            worker_secret: worker_secret.to_string(),
        };
        calls
            .send(pb::WorkerCall {
                call: Some(pb::worker_call::Call::Open(open)),
            })
            .await
            .map_err(|_| Status::internal("the session's opening could not be queued"))?;
        let answers = start(ReceiverStream::new(outgoing)).await?.into_inner();
        let (poll_answers, polls) = mpsc::channel(1);
        let (heartbeat_answers, heartbeats) = mpsc::channel(1);
        let told = Arc::new(Told::default());
        let reader = tokio::spawn(route_answers(
            answers,
            poll_answers,
            heartbeat_answers,
            told.clone(),
        ));
        Ok(WorkerSession {
            inner: Arc::new(Inner {
                calls,
                polls: tokio::sync::Mutex::new(polls),
                heartbeats: tokio::sync::Mutex::new(heartbeats),
                told,
                reader,
            }),
        })
    }

    /// What the coordinator told unasked since the last look, once there is something; fails
    /// once the stream has ended.
    pub async fn told(&self) -> Result<pb::HeartbeatResponse, Status> {
        let told = &self.inner.told;
        loop {
            // Registered before looking, so that what comes after the look wakes the wait.
            let woken = told.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(gathered) = told
                .gathered
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                return Ok(gathered);
            }
            if told.ended().is_some() {
                return Err(self.ended());
            }
            woken.await;
        }
    }

    /// `Workers/Poll`, as a message of the session.
    pub async fn poll(&self, request: pb::PollRequest) -> Result<pb::PollResponse, Status> {
        self.call(pb::worker_call::Call::Poll(request), &self.inner.polls)
            .await
    }

    /// `Workers/Heartbeat`, as a message of the session.
    pub async fn heartbeat(
        &self,
        request: pb::HeartbeatRequest,
    ) -> Result<pb::HeartbeatResponse, Status> {
        self.call(
            pb::worker_call::Call::Heartbeat(request),
            &self.inner.heartbeats,
        )
        .await
    }

    async fn call<T>(
        &self,
        call: pb::worker_call::Call,
        answers: &Answers<T>,
    ) -> Result<T, Status> {
        let mut answers = answers.lock().await;
        let sent = self
            .inner
            .calls
            .send(pb::WorkerCall { call: Some(call) })
            .await;
        match sent {
            Ok(()) => answers.recv().await.ok_or_else(|| self.ended()),
            Err(_) => Err(self.ended()),
        }
    }

    /// Why the session's stream ended.
    fn ended(&self) -> Status {
        self.inner
            .told
            .ended()
            .unwrap_or_else(|| Status::unavailable("the worker session has ended"))
    }
}

/// Hands each answer to the call of its kind, and gathers what is told unasked, until the
/// stream ends, then records why (the waiting calls then fail with it, their answer channels
/// closed).
async fn route_answers(
    mut answers: Streaming<pb::WorkerAnswer>,
    polls: mpsc::Sender<pb::PollResponse>,
    heartbeats: mpsc::Sender<pb::HeartbeatResponse>,
    told: Arc<Told>,
) {
    use pb::worker_answer::Answer;
    let why = loop {
        let routed = match answers.message().await {
            Ok(Some(pb::WorkerAnswer {
                answer: Some(Answer::Poll(answer)),
            })) => polls.send(answer).await.is_ok(),
            Ok(Some(pb::WorkerAnswer {
                answer: Some(Answer::Heartbeat(answer)),
            })) => heartbeats.send(answer).await.is_ok(),
            Ok(Some(pb::WorkerAnswer {
                answer: Some(Answer::Told(answer)),
            })) => {
                told.gather(answer);
                true
            }
            Ok(Some(pb::WorkerAnswer { answer: None })) => {
                break Status::internal("the coordinator sent an empty answer");
            }
            Ok(None) => break Status::unavailable("the coordinator ended the worker session"),
            Err(status) => break status,
        };
        if !routed {
            break Status::cancelled("the worker session was dropped");
        }
    };
    told.end(why);
}
