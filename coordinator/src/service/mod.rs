//! The gRPC services and what they share. Generated proto types stop here; the scheduler and
//! the store never see them.
//!
//! - `client_api`: `tilesolve.v1.Tilesolve`, for clients.
//! - `worker_api`: `tilesolve.v1.Workers`, for workers; `worker_session` answers a worker's
//!   polls and heartbeats as messages of one call; `table_transfer` streams table files.
//! - `convert`: messages to and from the scheduler's types, errors to statuses.
//! - `admission`: roles, batch owners and owners' limits checked before a call changes anything.
//! - `store_failure`: a submission waiting on a store that has failed answers, unacknowledged.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tilesolve::pdb::PdbStore;
use tilesolve::time_scale::TimeScale;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::compressed_tables::CompressedTables;
use crate::owners::Caller;
use crate::rpc_metrics::RpcMetrics;
use crate::scheduler::{reads, BatchProgress, Scheduler, SchedulerAccess, SchedulerError, Swept};
use crate::store::{Store, StoreError};
use crate::table_supply::TableSupply;

mod admission;
mod batch_traces;
mod client_api;
mod convert;
mod retry;
mod store_failure;
mod table_transfer;
mod worker_api;
mod worker_session;

use crate::cycle::Coordinator;
use admission::Admission;
pub use admission::{require_role, Refusals};
use batch_traces::BatchTraces;
use store_failure::StoreFailure;

/// How much the client API takes on at once; past these, calls are refused with
/// ResourceExhausted rather than queued without bound.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Submissions being parsed and stored at the same time.
    pub concurrent_submissions: usize,
    /// Open `WatchBatch` streams.
    pub watchers: usize,
    /// Largest request message accepted (a batch is one message); larger ones are refused
    /// with OutOfRange before they are read whole. At most [`tilesolve::proto::MAX_MESSAGE_BYTES`].
    pub max_message_bytes: usize,
    /// Audits the coordinator runs itself at once on its background pool (those no worker of
    /// another lineage can run): a thread each.
    pub audit_threads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            concurrent_submissions: 64,
            watchers: 1024,
            max_message_bytes: tilesolve::proto::MAX_MESSAGE_BYTES,
            audit_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Both services share one scheduler.
#[derive(Clone)]
pub struct Service {
    core: Coordinator,
    /// The coordinator's pattern database files, served to workers and checked at registration.
    pdbs: PdbStore,
    /// Obtains the tables waiting batches need; receives the files workers upload.
    supply: TableSupply,
    heartbeat_interval: Duration,
    /// How long a poll from a worker with every thread idle waits for work (see `worker_api`).
    long_poll: Duration,
    /// For what needs no lock: a batch's lines read, and its items stored.
    store: Store,
    submissions: Arc<Semaphore>,
    watchers: Arc<Semaphore>,
    /// zstd copies of the tables, for workers that fetch them compressed.
    compressed: Arc<CompressedTables>,
    /// The traces traced batches were submitted in, for their tasks.
    traces: BatchTraces,
    /// Owners' submissions checked against their limits one at a time, and refusals counted.
    admission: Admission,
    /// Where batches that name no notify URL send their completion notice (`--notify-url`).
    notify_default: Option<Arc<str>>,
    /// Set once the store has stopped taking writes: a call waiting on a write that may never
    /// end (sled's flush on a full disk) answers then instead of waiting with it.
    store_failure: StoreFailure,
    /// Each gRPC call's time by method (the middleware's), and each message of a worker's
    /// session beside them.
    rpc_metrics: RpcMetrics,
}

/// A permit, or ResourceExhausted naming what is full.
fn permit(semaphore: &Arc<Semaphore>, what: &str) -> Result<OwnedSemaphorePermit, SchedulerError> {
    semaphore.clone().try_acquire_owned().map_err(|_| {
        SchedulerError::ResourceExhausted(format!("too many {what} at once; retry shortly"))
    })
}

/// What a prune removed, and the store's size around it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub batches: u64,
    pub items: u64,
    pub boards: u64,
    pub store_bytes_before: u64,
    pub store_bytes_after: u64,
}

/// What a prune would remove, and the finished batches there are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrunePreview {
    pub batches: u64,
    pub items: u64,
    pub finished_batches: u64,
}

/// The submission time before which batches are older than `older_than`, in ms since 1970.
fn cutoff_unix_ms(older_than: Duration) -> u64 {
    crate::scheduler::now_unix_ms()
        .saturating_sub(u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX))
}

impl Service {
    pub fn new(
        scheduler: Arc<Mutex<Scheduler>>,
        pdbs: PdbStore,
        heartbeat_interval: Duration,
        time_scale: TimeScale,
        limits: Limits,
    ) -> Service {
        let core = Coordinator::new(scheduler, limits.audit_threads);
        let store = core.read(Scheduler::store);
        let supply = TableSupply::new(core.clone(), pdbs.clone());
        Service {
            core,
            store,
            supply,
            compressed: Arc::new(CompressedTables::new(pdbs.dir())),
            pdbs,
            heartbeat_interval,
            long_poll: time_scale.stretch(worker_api::LONG_POLL),
            submissions: Arc::new(Semaphore::new(limits.concurrent_submissions)),
            watchers: Arc::new(Semaphore::new(limits.watchers)),
            traces: BatchTraces::default(),
            admission: Admission::default(),
            notify_default: None,
            store_failure: StoreFailure::default(),
            rpc_metrics: RpcMetrics::default(),
        }
    }

    /// The per-method call times `/metrics` shows, for the middleware that times each call.
    pub fn rpc_metrics(&self) -> RpcMetrics {
        self.rpc_metrics.clone()
    }

    /// Sends a completion notice to `url` for every batch submitted from now on that names
    /// none of its own.
    pub fn with_notify_default(self, url: Option<&str>) -> Service {
        Service {
            notify_default: url.map(Arc::from),
            ..self
        }
    }

    /// Returns expired leases to the queue and forgets silent workers
    /// ([`Scheduler::sweep`]), then runs the audits that handed to the coordinator. Blocking.
    pub fn sweep(&self) -> Result<Swept, SchedulerError> {
        let mut swept = None;
        self.core.cycle(Vec::new(), |scheduler| {
            if swept.is_none() {
                swept = Some(scheduler.sweep()?);
            }
            Ok(())
        })?;
        Ok(swept.unwrap_or_default())
    }

    /// The background loop that obtains pattern tables for waiting batches (the server runs it).
    pub fn table_supply(&self) -> TableSupply {
        self.supply.clone()
    }

    /// Reads the scheduler under its lock ([`Coordinator::read`]).
    pub fn read<R>(&self, read: impl FnOnce(&Scheduler) -> R) -> R {
        self.core.read(read)
    }

    /// Changes the scheduler in one lock cycle ([`Coordinator::cycle`]). Blocking.
    pub fn update<R>(
        &self,
        step: impl FnOnce(&mut Scheduler) -> Result<R, SchedulerError>,
    ) -> Result<R, SchedulerError> {
        self.core.clone().with(step)
    }

    /// Cancels a batch (see [`Scheduler::cancel`]) if `caller` may (its owner, or an admin);
    /// the cycle makes it durable after releasing the lock. Blocking: the flush waits for the
    /// disk.
    pub fn cancel(&self, caller: &Caller, batch: u64) -> Result<BatchProgress, SchedulerError> {
        self.require_owner(caller, batch, "cancel")?;
        self.update(|scheduler| scheduler.cancel(batch))
    }

    /// From now on heartbeats and long polls are answered at once, not held: the coordinator is
    /// stopping, and its stop waits for every call in flight.
    pub fn stop_holding(&self) {
        self.core.stop_holding();
    }

    /// Tells the calls waiting on the store that it has stopped taking writes (the server's
    /// store check found it so): they answer at once, unacknowledged, instead of waiting on a
    /// write that may never end.
    pub fn store_has_failed(&self) {
        self.store_failure.set();
    }

    /// Writes everything the store holds in memory to disk (at shutdown).
    pub fn flush_store(&self) -> Result<(), SchedulerError> {
        self.core.flusher.close()
    }

    /// The store (the dashboard's history lives in it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether the store still takes writes ([`Store::writable`]). Blocking.
    pub fn store_writable(&self) -> Result<(), StoreError> {
        self.store.writable()
    }

    /// Removes the finished batches submitted more than `older_than` ago, with their items
    /// (and, with `solutions`, their answers and the boards on their paths). Blocking: a page
    /// of batches per lock and one batch per lock when removing, so workers' polls go on
    /// between them. Both `prune` and `serve --keep-batches-days` come here.
    pub fn prune_older_than(
        &self,
        older_than: Duration,
        solutions: bool,
    ) -> Result<Pruned, SchedulerError> {
        let cutoff = cutoff_unix_ms(older_than);
        let mut pruned = Pruned {
            store_bytes_before: self.store.size_on_disk(),
            ..Pruned::default()
        };
        let mut after = None;
        loop {
            let (old, last) = reads::finished_before(&self.store, cutoff, after, 1_000)?;
            self.prune_each(&old, solutions, &mut pruned)?;
            match last {
                Some(last) => after = Some(last),
                None => break,
            }
        }
        self.pruned(pruned)
    }

    /// What [`Service::prune_older_than`] (or, with `batches`, [`Service::prune_batches`]) would
    /// remove, removing nothing: a pass over the batch records, without the lock.
    pub fn preview_prune(
        &self,
        older_than: Duration,
        batches: &[u64],
    ) -> Result<PrunePreview, SchedulerError> {
        let cutoff = cutoff_unix_ms(older_than);
        let store = &self.store;
        let mut preview = PrunePreview::default();
        for batch in store.each_batch() {
            let batch = batch?;
            if batch.finished.is_none() {
                continue;
            }
            preview.finished_batches += 1;
            let chosen = match batches.is_empty() {
                true => batch.submitted_unix_ms < cutoff,
                false => batches.contains(&batch.id),
            };
            if chosen {
                preview.batches += 1;
                preview.items += u64::from(batch.items);
            }
        }
        Ok(preview)
    }

    /// Removes the finished ones of `batches`, with their answers if `solutions` is set.
    pub fn prune_batches(
        &self,
        batches: &[u64],
        solutions: bool,
    ) -> Result<Pruned, SchedulerError> {
        let mut pruned = Pruned {
            store_bytes_before: self.store.size_on_disk(),
            ..Pruned::default()
        };
        self.prune_each(batches, solutions, &mut pruned)?;
        self.pruned(pruned)
    }

    fn prune_each(
        &self,
        batches: &[u64],
        solutions: bool,
        pruned: &mut Pruned,
    ) -> Result<(), SchedulerError> {
        for &batch in batches {
            let (items, boards) = self.update(|scheduler| scheduler.prune(batch, solutions))?;
            if items > 0 {
                pruned.batches += 1;
                pruned.items += items as u64;
                pruned.boards += boards as u64;
            }
        }
        Ok(())
    }

    /// Flushes what a prune removed and reports it.
    fn pruned(&self, mut pruned: Pruned) -> Result<Pruned, SchedulerError> {
        // The flush waits for the disk: not under the lock.
        self.core.flusher.flush()?;
        pruned.store_bytes_after = self.store.size_on_disk();
        if pruned.batches > 0 {
            tracing::info!(
                batches = pruned.batches,
                items = pruned.items,
                boards = pruned.boards,
                "batches pruned"
            );
        }
        Ok(pruned)
    }
}
