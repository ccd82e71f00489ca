//! The coordinator handle: the scheduler behind its lock, and what every lock cycle ends with
//! (deferred work run outside the lock, task records written, a finished batch flushed, waiters
//! woken). Every call that changes the scheduler's state and may leave work goes through
//! [`Coordinator::cycle`], so none of them forgets a step.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Notify, Semaphore};

use crate::scheduler::{Deferred, DeferredDone, Flusher, Scheduler, SchedulerError};

/// The scheduler's lock. A poisoned lock is taken anyway: refusing every later call would stop
/// the coordinator, while the scheduler's state stays consistent between its method calls.
fn locked(scheduler: &Mutex<Scheduler>) -> MutexGuard<'_, Scheduler> {
    scheduler
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The scheduler and the signals around it, shared by both services, the web API and the
/// background audits.
#[derive(Clone)]
pub(crate) struct Coordinator {
    pub(super) scheduler: Arc<Mutex<Scheduler>>,
    pub(super) flusher: Flusher,
    /// Woken when tasks are queued, for polls waiting for work.
    pub(super) tasks_queued: Arc<Notify>,
    /// Woken when a batch has ended (and its answers are flushed), for watchers: a client
    /// waiting for a batch hears of its end at once, not at the next look.
    pub(super) batch_ended: Arc<Notify>,
    /// Threads free for the coordinator's own long audits ([`Coordinator::cycle`]).
    pub(super) audit_threads: Arc<Semaphore>,
}

impl Coordinator {
    pub(super) fn new(scheduler: Arc<Mutex<Scheduler>>, audit_threads: usize) -> Coordinator {
        let flusher = locked(&scheduler).flusher();
        Coordinator {
            scheduler,
            flusher,
            tasks_queued: Arc::default(),
            batch_ended: Arc::default(),
            audit_threads: Arc::new(Semaphore::new(audit_threads.max(1))),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Scheduler> {
        locked(&self.scheduler)
    }

    /// One lock cycle, repeated until no deferred work is left: under the lock, hands `done`
    /// back to the scheduler, then calls `step` (first with nothing handed back, then after
    /// each round of deferred work: a poll takes the tasks a split made); after the lock,
    /// sends long audits to the background pool, runs the short deferred work (a split, an
    /// audit under a millisecond), writes task records, flushes a finished batch and wakes who
    /// waits for it or for tasks. Work taken out is always finished, even after an error: the
    /// first error is returned at the end. Blocking.
    pub fn cycle(
        &self,
        mut done: Vec<DeferredDone>,
        mut step: impl FnMut(&mut Scheduler) -> Result<(), SchedulerError>,
    ) -> Result<(), SchedulerError> {
        let mut failed = None;
        loop {
            let mut scheduler = self.lock();
            for work in done.drain(..) {
                if let Err(error) = scheduler.finish_deferred(work) {
                    failed = failed.or(Some(error));
                }
            }
            if let Err(error) = step(&mut scheduler) {
                failed = failed.or(Some(error));
            }
            let (long, short): (Vec<Deferred>, Vec<Deferred>) = scheduler
                .take_deferred()
                .into_iter()
                .partition(Deferred::is_long);
            let flush_due = scheduler.take_flush_due();
            let records = scheduler.take_records();
            let ready = scheduler.has_ready_tasks();
            drop(scheduler);
            self.audit_in_background(long);
            if let Err(error) = self.flusher.write(records) {
                failed = failed.or(Some(error));
            }
            if flush_due {
                match self.flusher.flush() {
                    Ok(()) => self.batch_ended.notify_waiters(),
                    Err(error) => failed = failed.or(Some(error)),
                }
            }
            if ready {
                self.tasks_queued.notify_waiters();
            }
            if short.is_empty() {
                return failed.map_or(Ok(()), Err);
            }
            done = short.into_iter().map(Deferred::run).collect();
        }
    }

    /// [`Coordinator::cycle`] with nothing to do under the lock but hand `done` back; errors
    /// are logged (nobody waits for them). Blocking.
    pub fn drain(&self, done: Vec<DeferredDone>) {
        if let Err(error) = self.cycle(done, |_| Ok(())) {
            tracing::error!(%error, "deferred work");
        }
    }

    /// Runs the coordinator's long audits (those [`Deferred::is_long`] says may take seconds)
    /// on the blocking pool, at most `audit_threads` at once, so no worker's poll waits for
    /// one; each hands its result back and runs what that leaves.
    fn audit_in_background(&self, audits: Vec<Deferred>) {
        if audits.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Outside a runtime (never in the server): run them here.
            let done = audits.into_iter().map(Deferred::run).collect();
            return self.drain(done);
        };
        for audit in audits {
            let (core, threads) = (self.clone(), self.audit_threads.clone());
            runtime.spawn(async move {
                let Ok(_thread) = threads.acquire_owned().await else {
                    return;
                };
                let ran = tokio::task::spawn_blocking(move || core.drain(vec![audit.run()])).await;
                if let Err(error) = ran {
                    tracing::error!(%error, "a coordinator audit stopped");
                }
            });
        }
    }
}
