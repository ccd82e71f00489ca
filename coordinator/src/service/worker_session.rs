//! A worker's session (`Workers/Session`): its polls and heartbeats as messages of one
//! bidirectional call that lasts as long as its registration, and, once the session is opened
//! for a registration (`WorkerCall.open`), what the worker is to be told, sent unasked.
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
//!
//! A task to stop reached a busy version 4 worker as the answer to its held heartbeat, and the
//! worker sent the next heartbeat at once to be held again: on hard80 through fifteen workers,
//! one message in seven was such a heartbeat. An opened session is woken by the same signal a
//! held heartbeat waits on ([`Coordinator::told_signal`]) and sends what there is to tell as a
//! message of its own, so its heartbeats only renew leases.

use std::pin::Pin;

use futures_util::future::BoxFuture;
use futures_util::stream::{self, FuturesUnordered, Stream, StreamExt};
use tilesolve::proto::v1 as pb;
use tonic::{Status, Streaming};

use crate::cycle::Coordinator;
use crate::scheduler::WorkerId;

/// The answers a session streams back: the first error ends it.
pub(crate) type SessionAnswers =
    Pin<Box<dyn Stream<Item = Result<pb::WorkerAnswer, Status>> + Send>>;

/// Calls of one session answered at once: a worker has at most a poll and a heartbeat
/// outstanding; past this, the next message is not read until one is answered.
const MOST_IN_FLIGHT: usize = 4;

/// What answering a message, or looking for what to tell, comes to.
pub(crate) enum Reply {
    /// A message to send.
    Send(pb::WorkerAnswer),
    /// The session now serves this registration: what it is to be told is sent unasked.
    Opened(WorkerId),
    /// Nothing to send (woken, but told nothing new).
    Nothing,
}

/// A message's answer, under way.
pub(crate) type Answering = BoxFuture<'static, Result<Reply, Status>>;

/// The signal an opened session waits on for what its worker is to be told; dropped with the
/// session, so a signal is kept only while someone waits on it.
struct Subscription {
    core: Coordinator,
    worker: WorkerId,
    signal: std::sync::Arc<tokio::sync::Notify>,
}

impl Subscription {
    fn new(core: &Coordinator, worker: WorkerId) -> Subscription {
        Subscription {
            core: core.clone(),
            worker,
            signal: core.told_signal(worker),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.core.forget_told_signal(self.worker, &self.signal);
    }
}

/// One session's state between answers.
struct Session<A, T> {
    /// Starts answering a message.
    answer: A,
    /// Starts looking for what a worker is to be told.
    tell: T,
    core: Coordinator,
    calls: Streaming<pb::WorkerCall>,
    in_flight: FuturesUnordered<Answering>,
    /// Set once the session is opened for a registration.
    subscription: Option<Subscription>,
    /// False once the coordinator is stopping: the calls in flight are answered (at once, as
    /// stopping answers every waiting call), and then the stream ends.
    reading: bool,
    /// A call failed: its status was the stream's last item.
    failed: bool,
}

/// The answers to a session's `calls`, each message started by `answer`, and, once a message
/// opened the session for a worker, what `tell` finds it is to be told whenever its signal
/// wakes; the stream ends when the worker ends its side, a call fails (with that call's
/// status), or the coordinator (`core`) stops.
pub(super) fn answers<A, T>(
    calls: Streaming<pb::WorkerCall>,
    core: Coordinator,
    answer: A,
    tell: T,
) -> SessionAnswers
where
    A: Fn(pb::WorkerCall) -> Answering + Send + 'static,
    T: Fn(WorkerId) -> Answering + Send + 'static,
{
    let session = Session {
        answer,
        tell,
        core,
        calls,
        in_flight: FuturesUnordered::new(),
        subscription: None,
        reading: true,
        failed: false,
    };
    Box::pin(stream::unfold(session, Session::next_answer))
}

impl<A: Fn(pb::WorkerCall) -> Answering, T: Fn(WorkerId) -> Answering> Session<A, T> {
    async fn next_answer(mut self) -> Option<(Result<pb::WorkerAnswer, Status>, Self)> {
        if self.failed {
            return None;
        }
        loop {
            let reading = self.reading && self.in_flight.len() < MOST_IN_FLIGHT;
            let signal = self.subscription.as_ref().map(|s| s.signal.clone());
            let told = async {
                match &signal {
                    Some(signal) => signal.notified().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                Some(reply) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                    match reply {
                        Ok(Reply::Send(answer)) => return Some((Ok(answer), self)),
                        Ok(Reply::Opened(worker)) => {
                            self.subscription = Some(Subscription::new(&self.core, worker));
                            // Told before the session was opened: sent now.
                            self.in_flight.push((self.tell)(worker));
                        }
                        Ok(Reply::Nothing) => {}
                        Err(status) => {
                            self.failed = true;
                            return Some((Err(status), self));
                        }
                    }
                }
                // Only while reading: a stopping coordinator ends the stream once its calls in
                // flight are answered.
                () = told, if self.reading => {
                    if let Some(subscription) = &self.subscription {
                        self.in_flight.push((self.tell)(subscription.worker));
                    }
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
