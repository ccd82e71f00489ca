//! The coordinator handle: the scheduler behind its lock, and what every lock cycle ends with
//! (deferred work run outside the lock, task records written, a finished batch flushed, waiters
//! woken). The lock is taken here and nowhere else: every call that changes the scheduler's
//! state goes through [`Coordinator::cycle`] (or, for a leaving worker, [`Coordinator::leave`],
//! which hands its short deferred work to the blocking pool instead of running it), so none of
//! them forgets a step; reads go through [`Coordinator::read`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{watch, Notify, Semaphore};

use crate::scheduler::{
    AfterCycle, Deferred, DeferredDone, Flusher, Scheduler, SchedulerAccess, SchedulerError,
    TaskReport, WorkerId,
};

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
    scheduler: Arc<Mutex<Scheduler>>,
    pub(crate) flusher: Flusher,
    /// Woken when tasks are queued, for polls waiting for work.
    pub(crate) tasks_queued: Arc<Notify>,
    /// Woken when a batch has ended (and its answers are flushed), for watchers: a client
    /// waiting for a batch hears of its end at once, not at the next look.
    pub(crate) batch_ended: Arc<Notify>,
    /// Threads free for the coordinator's own long audits ([`Coordinator::cycle`]).
    pub(crate) audit_threads: Arc<Semaphore>,
    /// For each worker whose heartbeat is held or whose session is open: woken when it has
    /// something to be told.
    told: Arc<Mutex<HashMap<WorkerId, Arc<Notify>>>>,
    /// True once the coordinator is stopping: a held heartbeat or long poll then answers at
    /// once, since the stop waits for every call in flight (the embedded `batch` ended a
    /// heartbeat interval late, held by its own worker's heartbeat).
    stopping: Arc<watch::Sender<bool>>,
}

impl Coordinator {
    pub(crate) fn new(scheduler: Arc<Mutex<Scheduler>>, audit_threads: usize) -> Coordinator {
        let flusher = Flusher::new(locked(&scheduler).store());
        Coordinator {
            scheduler,
            flusher,
            tasks_queued: Arc::default(),
            batch_ended: Arc::default(),
            audit_threads: Arc::new(Semaphore::new(audit_threads.max(1))),
            told: Arc::default(),
            stopping: Arc::new(watch::Sender::new(false)),
        }
    }

    /// From now on no call is held waiting for something to say: the coordinator is stopping.
    pub(crate) fn stop_holding(&self) {
        self.stopping.send_replace(true);
    }

    /// `wait`'s output, or `None` once the coordinator is stopping (at once if it already is).
    pub(crate) async fn unless_stopping<F: Future>(&self, wait: F) -> Option<F::Output> {
        let mut stopping = self.stopping.subscribe();
        tokio::select! {
            output = wait => Some(output),
            // The sender lives as long as `self`; an error cannot come while it does.
            _ = stopping.wait_for(|stopping| *stopping) => None,
        }
    }

    /// What wakes `worker`'s held heartbeat or open session when it has something to be told:
    /// a permit is kept if it is not waiting yet, so nothing told after its last look is missed.
    pub(crate) fn told_signal(&self, worker: WorkerId) -> Arc<Notify> {
        let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
        told.entry(worker).or_default().clone()
    }

    /// `signal`, `worker`'s, is no longer waited on by its caller: forgotten unless someone
    /// else still waits on it (a held heartbeat beside an opened session).
    pub(crate) fn forget_told_signal(&self, worker: WorkerId, signal: &Arc<Notify>) {
        let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
        let only_ours = told
            .get(&worker)
            .is_some_and(|kept| Arc::ptr_eq(kept, signal) && Arc::strong_count(kept) <= 2);
        if only_ours {
            told.remove(&worker);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Scheduler> {
        locked(&self.scheduler)
    }

    /// Reads the scheduler under its lock; nothing it does can leave work.
    pub fn read<R>(&self, read: impl FnOnce(&Scheduler) -> R) -> R {
        read(&self.lock())
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
            let short = self.cycle_once(done, &mut step, &mut failed);
            if short.is_empty() {
                return failed.map_or(Ok(()), Err);
            }
            done = short.into_iter().map(Deferred::run).collect();
        }
    }

    /// A leaving worker's last call: its results taken and its tasks put back in the queue in
    /// one step, answered without waiting for the short deferred work that leaves (a split, a
    /// short audit, another call's too), which runs on the blocking pool. A stopping worker
    /// waits only so long for this answer before its tasks are left to their leases' expiry.
    /// Returns how many tasks went back. Blocking.
    pub fn leave(
        &self,
        worker: WorkerId,
        results: Vec<TaskReport>,
    ) -> Result<usize, SchedulerError> {
        let (mut results, mut returned, mut failed) = (Some(results), 0, None);
        let short = self.cycle_once(
            Vec::new(),
            &mut |scheduler: &mut Scheduler| {
                let reported = match results.take() {
                    Some(results) => scheduler.poll(worker, 0, results).map(drop),
                    None => Ok(()),
                };
                // Its tasks go back even when a result was refused.
                returned = scheduler.leave(worker)?;
                reported
            },
            &mut failed,
        );
        self.in_background(short);
        failed.map_or(Ok(returned), Err)
    }

    /// Under the lock, hands `done` back and calls `step`; after it, everything
    /// [`Coordinator::cycle`] does but run the short deferred work, which is returned. The first
    /// error is kept in `failed`.
    fn cycle_once(
        &self,
        done: Vec<DeferredDone>,
        step: &mut impl FnMut(&mut Scheduler) -> Result<(), SchedulerError>,
        failed: &mut Option<SchedulerError>,
    ) -> Vec<Deferred> {
        let after = self.under_lock(done, step, failed);
        self.after_lock(after, failed)
    }

    /// The part of a cycle under the lock: hands `done` back, calls `step`, and takes what the
    /// cycle leaves. The first error is kept in `failed`.
    fn under_lock(
        &self,
        done: Vec<DeferredDone>,
        step: &mut impl FnMut(&mut Scheduler) -> Result<(), SchedulerError>,
        failed: &mut Option<SchedulerError>,
    ) -> AfterCycle {
        let mut scheduler = self.lock();
        for work in done {
            if let Err(error) = scheduler.finish_deferred(work) {
                failed.get_or_insert(error);
            }
        }
        if let Err(error) = step(&mut scheduler) {
            failed.get_or_insert(error);
        }
        scheduler.take_cycle()
    }

    /// The part of a cycle after the lock: sends long audits to the background pool, writes
    /// task records, flushes a finished batch and wakes who waits for it or for tasks. Returns
    /// the short deferred work, for the caller to run.
    fn after_lock(&self, after: AfterCycle, failed: &mut Option<SchedulerError>) -> Vec<Deferred> {
        let mut fail = |error| {
            failed.get_or_insert(error);
        };
        let (long, short): (Vec<Deferred>, Vec<Deferred>) =
            after.deferred.into_iter().partition(Deferred::is_long);
        let (records, flush_due, ready) = (after.records, after.flush_due, after.tasks_ready);
        self.audit_in_background(long);
        if let Err(error) = self.flusher.write(records) {
            fail(error);
        }
        if flush_due {
            match self.flusher.flush() {
                Ok(()) => self.batch_ended.notify_waiters(),
                Err(error) => fail(error),
            }
        }
        if ready {
            self.tasks_queued.notify_waiters();
        }
        if !after.workers_told.is_empty() {
            let told = self.told.lock().unwrap_or_else(|p| p.into_inner());
            for worker in &after.workers_told {
                if let Some(signal) = told.get(worker) {
                    signal.notify_one();
                }
            }
        }
        short
    }

    /// [`Coordinator::cycle`] for async callers, with `state` that `step` fills and that is
    /// returned. The first lock cycle runs on the calling thread: a poll's takes microseconds,
    /// and handing every poll to the blocking pool and back (two thread wake-ups) cost a
    /// quarter of the coordinator's CPU a task (106-131 against 156-176 us, `swarm` at 256 and
    /// 1,024 workers). What may take milliseconds, a split or a short audit the cycle left, or
    /// the flush of a finished batch, goes to the blocking pool with the cycles after it.
    pub async fn cycle_from_async<S: Send + 'static>(
        &self,
        mut state: S,
        mut step: impl FnMut(&mut S, &mut Scheduler) -> Result<(), SchedulerError> + Send + 'static,
    ) -> Result<S, SchedulerError> {
        let mut failed = None;
        let after = self.under_lock(
            Vec::new(),
            &mut |scheduler: &mut Scheduler| step(&mut state, scheduler),
            &mut failed,
        );
        let blocks = after.flush_due || after.deferred.iter().any(|work| !work.is_long());
        if !blocks {
            let short = self.after_lock(after, &mut failed);
            debug_assert!(short.is_empty());
            return failed.map_or(Ok(state), Err);
        }
        let core = self.clone();
        tokio::task::spawn_blocking(move || {
            let short = core.after_lock(after, &mut failed);
            let done = short.into_iter().map(Deferred::run).collect();
            let rest = core.cycle(done, |scheduler| step(&mut state, scheduler));
            match failed {
                Some(error) => Err(error),
                None => rest.map(|()| state),
            }
        })
        .await
        .map_err(|e| SchedulerError::Internal(format!("a lock cycle stopped: {e}")))?
    }

    /// [`Coordinator::cycle`] with nothing to do under the lock but hand `done` back; errors
    /// are logged (nobody waits for them). Blocking.
    pub fn drain(&self, done: Vec<DeferredDone>) {
        if let Err(error) = self.cycle(done, |_| Ok(())) {
            tracing::error!(%error, "deferred work");
        }
    }

    /// Runs short deferred work nobody waits for on the blocking pool (here, outside a runtime).
    fn in_background(&self, work: Vec<Deferred>) {
        if work.is_empty() {
            return;
        }
        let core = self.clone();
        let run = move || core.drain(work.into_iter().map(Deferred::run).collect());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(run)),
            Err(_) => run(),
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

impl SchedulerAccess for Coordinator {
    /// Runs `step` in one lock cycle (with what that cycle does after the lock).
    fn with<R>(
        &mut self,
        step: impl FnOnce(&mut Scheduler) -> Result<R, SchedulerError>,
    ) -> Result<R, SchedulerError> {
        let (mut step, mut result) = (Some(step), None);
        self.cycle(Vec::new(), |scheduler| {
            if let Some(step) = step.take() {
                result = Some(step(scheduler)?);
            }
            Ok(())
        })?;
        result.ok_or_else(|| SchedulerError::Internal("a lock cycle ran no step".into()))
    }
}
