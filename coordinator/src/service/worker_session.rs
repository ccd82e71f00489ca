//! A worker's session (`Workers/Session`): its polls and heartbeats as messages of one
//! bidirectional call that lasts as long as its registration.
//!
//! A unary call costs the coordinator an HTTP/2 stream opened and closed, headers decoded and
//! encoded, routing, the token check and the metrics middleware, and a reply in several writes;
//! on a many-core host, between calls that come tens of milliseconds apart, all of that runs on
//! cold caches. A message of an open stream is one frame each way.
//!
//! The messages are answered inside the answer stream itself, in the one task that polls it,
//! side by side (a held heartbeat and a long poll wait together, as two unary calls would): no
//! task spawned and no channel crossed for a message, so each wakes no more threads than a
//! unary call does.

use std::pin::Pin;

use futures_util::future::BoxFuture;
use futures_util::stream::{self, FuturesUnordered, Stream, StreamExt};
use tilesolve::proto::v1 as pb;
use tonic::{Status, Streaming};

use crate::cycle::Coordinator;

/// The answers a session streams back: the first error ends it.
pub(crate) type SessionAnswers =
    Pin<Box<dyn Stream<Item = Result<pb::WorkerAnswer, Status>> + Send>>;

/// Calls of one session answered at once: a worker has at most a poll and a heartbeat
/// outstanding; past this, the next message is not read until one is answered.
const MOST_IN_FLIGHT: usize = 4;

/// A message's answer, under way.
pub(crate) type Answering = BoxFuture<'static, Result<pb::WorkerAnswer, Status>>;

/// One session's state between answers.
struct Session<A> {
    /// Starts answering a message.
    answer: A,
    core: Coordinator,
    calls: Streaming<pb::WorkerCall>,
    in_flight: FuturesUnordered<Answering>,
    /// False once the coordinator is stopping: the calls in flight are answered (at once, as
    /// stopping answers every waiting call), and then the stream ends.
    reading: bool,
    /// A call failed: its status was the stream's last item.
    failed: bool,
}

/// The answers to a session's `calls`, each message started by `answer`; the stream ends when
/// the worker ends its side, a call fails (with that call's status), or the coordinator
/// (`core`) stops.
pub(super) fn answers<A>(
    calls: Streaming<pb::WorkerCall>,
    core: Coordinator,
    answer: A,
) -> SessionAnswers
where
    A: Fn(pb::WorkerCall) -> Answering + Send + 'static,
{
    let session = Session {
        answer,
        core,
        calls,
        in_flight: FuturesUnordered::new(),
        reading: true,
        failed: false,
    };
    Box::pin(stream::unfold(session, Session::next_answer))
}

impl<A: Fn(pb::WorkerCall) -> Answering> Session<A> {
    async fn next_answer(mut self) -> Option<(Result<pb::WorkerAnswer, Status>, Self)> {
        if self.failed {
            return None;
        }
        loop {
            let reading = self.reading && self.in_flight.len() < MOST_IN_FLIGHT;
            tokio::select! {
                Some(answer) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    self.failed = answer.is_err();
                    return Some((answer, self));
                }
                next = self.core.unless_stopping(self.calls.message()), if reading => {
                    match next {
                        Some(Ok(Some(call))) => self.in_flight.push((self.answer)(call)),
                        None => self.reading = false,
                        // The worker ended its side or its connection is gone: its calls in
                        // flight are dropped with the stream, as a unary call's handler is with
                        // its connection (a long poll must not lease tasks to a worker that
                        // left).
                        Some(Ok(None)) => return None,
                        // A message that does not decode (malformed, or over the size limit)
                        // ends the stream with the reason, its calls in flight dropped alike.
                        Some(Err(status)) => {
                            self.failed = true;
                            return Some((Err(status), self));
                        }
                    }
                }
                else => return None,
            }
        }
    }
}
