//! A worker's side of `Workers/Session`: its polls and heartbeats sent as messages of one
//! bidirectional call, each awaited as a unary call would be.
//!
//! At most one poll and one heartbeat are outstanding at a time (each kind waits its turn), so
//! an answer is matched to its call by its kind alone. A call whose future is dropped while it
//! waits leaves its answer to the next call of its kind: drop the session with it (the worker
//! does, since a session's calls end together).

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
    /// Why the stream ended, once it has: every call from then on fails with it.
    ended: Arc<Mutex<Option<Status>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl WorkerSession {
    /// Opens a session with `start`, which makes the call (for example
    /// `|calls| client.session(calls)`).
    pub async fn open<F, Fut>(start: F) -> Result<WorkerSession, Status>
    where
        F: FnOnce(ReceiverStream<pb::WorkerCall>) -> Fut,
        Fut: Future<Output = Result<Response<Streaming<pb::WorkerAnswer>>, Status>>,
    {
        // Two calls at most are in flight, a poll and a heartbeat.
        let (calls, outgoing) = mpsc::channel(2);
        let answers = start(ReceiverStream::new(outgoing)).await?.into_inner();
        let (poll_answers, polls) = mpsc::channel(1);
        let (heartbeat_answers, heartbeats) = mpsc::channel(1);
        let ended = Arc::new(Mutex::new(None));
        let reader = tokio::spawn(route_answers(
            answers,
            poll_answers,
            heartbeat_answers,
            ended.clone(),
        ));
        Ok(WorkerSession {
            inner: Arc::new(Inner {
                calls,
                polls: tokio::sync::Mutex::new(polls),
                heartbeats: tokio::sync::Mutex::new(heartbeats),
                ended,
                reader,
            }),
        })
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
            .ended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| Status::unavailable("the worker session has ended"))
    }
}

/// Hands each answer to the call of its kind until the stream ends, then records why (the
/// waiting calls then fail with it, their answer channels closed).
async fn route_answers(
    mut answers: Streaming<pb::WorkerAnswer>,
    polls: mpsc::Sender<pb::PollResponse>,
    heartbeats: mpsc::Sender<pb::HeartbeatResponse>,
    ended: Arc<Mutex<Option<Status>>>,
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
    *ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
}
