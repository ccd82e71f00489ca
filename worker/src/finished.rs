//! Finished tasks' results on their way from the search threads to the session, which is woken
//! only when it has something to do: when the first result since its last report arrives (the
//! clock that sends results at most `REPORT_AFTER` late starts), and when a task ends leaving
//! the worker holding few enough tasks to ask for more.
//!
//! A wake-up for every result cost a context switch on each side per task: on 10,000 short
//! tasks (random-walk 15-puzzles, ~40 us each) a worker switched 6,771 times for 5,000 tasks, and
//! the switches were a fifth of its CPU.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use tilesolve::proto::v1 as pb;

#[derive(Default)]
pub(crate) struct Finished {
    waiting: Mutex<Waiting>,
    wake: tokio::sync::Notify,
    /// A task that ends leaving at most this many held wakes the session.
    wake_at_held: AtomicUsize,
}

#[derive(Default)]
struct Waiting {
    results: Vec<pb::TaskResult>,
    /// When the oldest of them finished.
    since: Option<Instant>,
}

impl Finished {
    /// A search thread's result, its task ended leaving `held` tasks held.
    pub(crate) fn put(&self, result: pb::TaskResult, held: usize) {
        let first = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.results.push(result);
            waiting.since.get_or_insert_with(Instant::now);
            waiting.results.len() == 1
        };
        if first || held <= self.wake_at_held.load(Ordering::SeqCst) {
            self.wake.notify_one();
        }
    }

    /// The session is woken when a task ends leaving at most `held` held. Set before the
    /// session looks at what is held, so that no task ending after the look goes unheard.
    pub(crate) fn wake_at_held(&self, held: usize) {
        self.wake_at_held.store(held, Ordering::SeqCst);
    }

    /// When the oldest result not yet taken finished.
    pub(crate) fn since(&self) -> Option<Instant> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).since
    }

    /// Takes every result waiting, appended to `into`.
    pub(crate) fn take_into(&self, into: &mut Vec<pb::TaskResult>) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        into.append(&mut waiting.results);
        waiting.since = None;
    }

    /// Until woken: by a result that needs the session, or a wake-up left by one that came
    /// while it was not waiting.
    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }
}
