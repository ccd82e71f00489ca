//! A worker's session (`Workers/Session`): its polls and heartbeats as messages of one
//! bidirectional call that lasts as long as its registration.
//!
//! A unary call costs the coordinator an HTTP/2 stream opened and closed, headers decoded and
//! encoded, routing, the token check and the metrics middleware, and a reply in several writes;
//! on a many-core host, between calls that come tens of milliseconds apart, all of that runs on
//! cold caches. A message of an open stream is one frame each way.
//!
//! Each message is answered in a task of its own, so that a held heartbeat and a long poll wait
//! side by side, as two unary calls would.

use std::sync::Arc;
use std::time::Instant;

use tilesolve::proto::v1 as pb;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use super::Service;

/// The answers a session streams back: the first error ends it.
pub(crate) type SessionAnswers = ReceiverStream<Result<pb::WorkerAnswer, Status>>;

/// Calls of one session answered at once: a worker has at most a poll and a heartbeat
/// outstanding; past this, the next message is not read until one is answered.
const MOST_IN_FLIGHT: usize = 4;

impl Service {
    /// Starts answering a session's calls; the stream ends when the worker ends its side, a
    /// call fails (with that call's status), or the coordinator stops.
    pub(super) fn serve_session(&self, calls: Streaming<pb::WorkerCall>) -> SessionAnswers {
        let (answers, stream) = mpsc::channel(MOST_IN_FLIGHT);
        tokio::spawn(Arc::new(self.clone()).answer_calls(calls, answers));
        ReceiverStream::new(stream)
    }

    async fn answer_calls(
        self: Arc<Self>,
        mut calls: Streaming<pb::WorkerCall>,
        answers: mpsc::Sender<Result<pb::WorkerAnswer, Status>>,
    ) {
        let mut in_flight = JoinSet::new();
        loop {
            if in_flight.len() >= MOST_IN_FLIGHT {
                match in_flight.join_next().await {
                    Some(Ok(true)) | None => continue,
                    // A call failed (its status ends the stream) or panicked.
                    Some(_) => return,
                }
            }
            let next = tokio::select! {
                next = self.core.unless_stopping(calls.message()) => next,
                Some(answered) = in_flight.join_next(), if !in_flight.is_empty() => {
                    if matches!(answered, Ok(true)) {
                        continue;
                    }
                    return;
                }
            };
            let call = match next {
                Some(Ok(Some(call))) => call,
                // The coordinator is stopping: the calls in flight answer at once, and then
                // the stream ends.
                None => break,
                // The worker ended its side or its connection is gone: its calls in flight are
                // dropped with the stream, as a unary call's handler is with its connection (a
                // long poll must not lease tasks to a worker that left).
                Some(Ok(None)) | Some(Err(_)) => return,
            };
            let service = self.clone();
            let answers = answers.clone();
            in_flight.spawn(async move {
                let answer = service.answer(call).await;
                let answered = answer.is_ok();
                answers.send(answer).await.is_ok() && answered
            });
        }
        while in_flight.join_next().await.is_some() {}
    }

    /// One message's answer, as the unary call of its kind would give it.
    async fn answer(&self, call: pb::WorkerCall) -> Result<pb::WorkerAnswer, Status> {
        use pb::worker_answer::Answer;
        use pb::worker_call::Call;
        let started = Instant::now();
        let (method, answer) = match call.call {
            Some(Call::Poll(poll)) => {
                (SESSION_POLL, self.answer_poll(poll).await.map(Answer::Poll))
            }
            Some(Call::Heartbeat(heartbeat)) => (
                SESSION_HEARTBEAT,
                self.answer_heartbeat(heartbeat)
                    .await
                    .map(Answer::Heartbeat),
            ),
            None => (
                SESSION_EMPTY,
                Err(Status::invalid_argument(
                    "a WorkerCall must hold a poll or a heartbeat",
                )),
            ),
        };
        let code = answer
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.rpc_metrics
            .observe(method, code, started.elapsed().as_secs_f64());
        answer.map(|answer| pb::WorkerAnswer {
            answer: Some(answer),
        })
    }
}

/// The method labels a session's messages are timed under in `/metrics`
/// (`tilesolve_rpc_seconds`), beside the unary calls they stand for.
const SESSION_POLL: &str = "/tilesolve.v1.Workers/Session/Poll";
const SESSION_HEARTBEAT: &str = "/tilesolve.v1.Workers/Session/Heartbeat";
const SESSION_EMPTY: &str = "/tilesolve.v1.Workers/Session/Empty";
