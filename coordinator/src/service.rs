//! The gRPC services: conversions between `tilesolve.v1` messages and the scheduler's types.
//! Generated proto types stop here; the scheduler and the store never see them.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tilesolve::moves::{moves_from_string, moves_to_string};
use tilesolve::pdb::PdbStore;
use tilesolve::proto::v1 as pb;
use tilesolve::proto::PROTOCOL_VERSION;
use tilesolve::search::PartSize;
use tilesolve::Direction;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::compressed_tables::CompressedTables;
use crate::scheduler::{
    BatchProgress, Deferred, DeferredDone, Flusher, Scheduler, SchedulerError, Submitted, Swept,
    TaskOutcome, TaskReport, TaskSpec,
};
use crate::store::{ItemStatus, Store, StoreError, StoredBatch, StoredItem, StoredSolution};
use crate::table_supply::TableSupply;

/// The scheduler's lock. A poisoned lock is taken anyway: refusing every later call would stop
/// the coordinator, while the scheduler's state stays consistent between its method calls.
fn locked(scheduler: &Mutex<Scheduler>) -> MutexGuard<'_, Scheduler> {
    scheduler
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The one conversion from scheduler errors to gRPC statuses.
impl From<SchedulerError> for Status {
    fn from(error: SchedulerError) -> Status {
        match error {
            SchedulerError::InvalidArgument(_) => Status::invalid_argument(error.to_string()),
            SchedulerError::UnknownBatch(_) | SchedulerError::UnknownWorker(_) => {
                Status::not_found(error.to_string())
            }
            SchedulerError::ResourceExhausted(_) => Status::resource_exhausted(error.to_string()),
            SchedulerError::PermissionDenied(_) => Status::permission_denied(error.to_string()),
            SchedulerError::FailedPrecondition(_) => Status::failed_precondition(error.to_string()),
            SchedulerError::Store(ref store) if Store::is_disk_full(store) => {
                Status::resource_exhausted(format!(
                    "the coordinator's disk is full ({error}): it stops serving and starts again \
                     once its data directory takes writes; retry then"
                ))
            }
            SchedulerError::Store(_) | SchedulerError::Pdb(_) | SchedulerError::Internal(_) => {
                Status::internal(error.to_string())
            }
        }
    }
}

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
    scheduler: Arc<Mutex<Scheduler>>,
    /// The coordinator's pattern database files, served to workers and checked at registration.
    pdbs: PdbStore,
    /// Obtains the tables waiting batches need; receives the files workers upload.
    supply: TableSupply,
    heartbeat_interval: Duration,
    flusher: Flusher,
    /// For what needs no lock: a batch's lines read, and its items stored.
    store: Store,
    submissions: Arc<Semaphore>,
    watchers: Arc<Semaphore>,
    /// Woken when tasks are queued, for polls waiting for work.
    tasks_queued: Arc<Notify>,
    /// Woken when a poll has ended a batch (and flushed its answers), for watchers: a client
    /// waiting for a batch hears of its end at once, not at the next look.
    batch_ended: Arc<Notify>,
    /// zstd copies of the tables, for workers that fetch them compressed.
    compressed: Arc<CompressedTables>,
    /// Threads free for the coordinator's own long audits ([`Service::audit_in_background`]).
    audit_threads: Arc<Semaphore>,
}

/// Longest a poll from an idle worker waits for work (well under the lease timeout and any
/// client deadline; a worker that gets nothing asks again).
const LONG_POLL: Duration = Duration::from_secs(1);
/// Items in a `GetBatch` page when the client asks for no size, and the most in one page: a
/// 5x5 solution is about 1 KB in a message, so 10,000 stay well inside the 16 MiB limit.
const DEFAULT_PAGE_SIZE: u32 = 1_000;
const MAX_PAGE_SIZE: u32 = 10_000;

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

impl Service {
    pub fn new(
        scheduler: Arc<Mutex<Scheduler>>,
        pdbs: PdbStore,
        heartbeat_interval: Duration,
        limits: Limits,
    ) -> Service {
        let (flusher, store) = {
            let scheduler = scheduler
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            (scheduler.flusher(), scheduler.store_reader())
        };
        let tasks_queued = Arc::new(Notify::new());
        let supply = TableSupply::new(
            scheduler.clone(),
            pdbs.clone(),
            flusher.clone(),
            tasks_queued.clone(),
        );
        Service {
            flusher,
            store,
            supply,
            scheduler,
            compressed: Arc::new(CompressedTables::new(pdbs.dir())),
            pdbs,
            heartbeat_interval,
            submissions: Arc::new(Semaphore::new(limits.concurrent_submissions)),
            watchers: Arc::new(Semaphore::new(limits.watchers)),
            tasks_queued,
            batch_ended: Arc::default(),
            audit_threads: Arc::new(Semaphore::new(limits.audit_threads.max(1))),
        }
    }

    /// Returns expired leases to the queue and forgets silent workers
    /// ([`Scheduler::sweep`]), then runs the audits that handed to the coordinator. Blocking.
    pub fn sweep(&self) -> Result<Swept, SchedulerError> {
        let swept = self.lock().sweep()?;
        self.drain_deferred(Vec::new());
        Ok(swept)
    }

    /// Runs the coordinator's long audits (those [`Deferred::is_long`] says may take seconds)
    /// on the blocking pool, at most [`Limits::audit_threads`] at once, so no worker's poll
    /// waits for one; each hands its result back and runs what that leaves.
    fn audit_in_background(&self, audits: Vec<Deferred>) {
        if audits.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Outside a runtime (never in the server): run them here.
            let done = audits.into_iter().map(Deferred::run).collect();
            return self.drain_deferred(done);
        };
        for audit in audits {
            let (service, threads) = (self.clone(), self.audit_threads.clone());
            runtime.spawn(async move {
                let Ok(_thread) = threads.acquire_owned().await else {
                    return;
                };
                let ran = tokio::task::spawn_blocking(move || {
                    let done = audit.run();
                    service.drain_deferred(vec![done]);
                })
                .await;
                if let Err(error) = ran {
                    tracing::error!(%error, "a coordinator audit stopped");
                }
            });
        }
    }

    /// Hands `done` back to the scheduler and runs the deferred work that leaves, until none
    /// is left (long audits go to the background pool); writes task records, flushes a
    /// finished batch and wakes who waits for it or for tasks. Blocking.
    fn drain_deferred(&self, mut done: Vec<DeferredDone>) {
        loop {
            let mut scheduler = self.lock();
            for work in done.drain(..) {
                if let Err(error) = scheduler.finish_deferred(work) {
                    tracing::error!(%error, "deferred work");
                }
            }
            let deferred = scheduler.take_deferred();
            let flush_due = scheduler.take_flush_due();
            let records = scheduler.take_records();
            let ready = scheduler.has_ready_tasks();
            drop(scheduler);
            if let Err(error) = self.flusher.write(records) {
                tracing::error!(%error, "task records");
            }
            if flush_due {
                match self.flusher.flush() {
                    Ok(()) => self.batch_ended.notify_waiters(),
                    Err(error) => tracing::error!(%error, "flushing the store"),
                }
            }
            if ready {
                self.tasks_queued.notify_waiters();
            }
            let (long, short): (Vec<Deferred>, Vec<Deferred>) =
                deferred.into_iter().partition(Deferred::is_long);
            self.audit_in_background(long);
            if short.is_empty() {
                return;
            }
            done = short.into_iter().map(Deferred::run).collect();
        }
    }

    /// The background loop that obtains pattern tables for waiting batches (the server runs it).
    pub fn table_supply(&self) -> TableSupply {
        self.supply.clone()
    }

    /// Accepts a batch for either API: parsing and store writes off the async threads, and a
    /// flush before the batch is acknowledged (from then on it survives a crash). Lines are read
    /// and items stored outside the scheduler's lock; items start a part at a time
    /// ([`Scheduler::start_part`]), so workers solve the first while the rest are stored.
    /// Pattern tables the batch needs and the coordinator has not loaded are obtained
    /// afterwards, in the background (`table_supply`): the batch's items wait for them, the
    /// reply does not.
    pub async fn accept_batch(
        &self,
        lines: Vec<String>,
        heuristic: String,
        goal: String,
    ) -> Result<Submitted, SchedulerError> {
        let _permit = permit(&self.submissions, "submissions")?;
        let scheduler = self.scheduler.clone();
        let (store, flusher) = (self.store.clone(), self.flusher.clone());
        let queued = self.tasks_queued.clone();
        let (submitted, waits) = tokio::task::spawn_blocking(move || {
            let read = Scheduler::read_batch(&store, &lines, &heuristic, &goal)?;
            let mut intake = locked(&scheduler).open_batch(read)?;
            let taken_in = (|| {
                while intake.store_part(&store)? {
                    locked(&scheduler).start_part(&mut intake)?;
                    queued.notify_waiters();
                }
                Ok::<_, SchedulerError>(())
            })();
            if let Err(error) = taken_in {
                locked(&scheduler).abandon(&intake);
                return Err(error);
            }
            let waits = locked(&scheduler).is_waiting(intake.batch());
            flusher.flush()?;
            Ok::<_, SchedulerError>((intake.submitted(), waits))
        })
        .await
        .map_err(|e| SchedulerError::Internal(e.to_string()))??;
        if waits {
            self.supply.wake();
        }
        tracing::info!(
            batch = submitted.batch,
            items = submitted.items,
            invalid = submitted.invalid,
            from_store = submitted.from_store,
            waits_for_tables = waits,
            "batch accepted"
        );
        Ok(submitted)
    }

    /// Writes an uploaded table beside its final name, checks it (the size its spec implies, its
    /// own checksum, the checksum the worker stated when registering) and only then renames it
    /// into place: nothing unchecked is ever under a table's name. Returns the bytes received.
    async fn receive_pdb(
        &self,
        first: pb::PdbUpload,
        stream: &mut tonic::Streaming<pb::PdbUpload>,
        spec: &tilesolve::pdb::file::PatternSpec,
        stated_checksum: u64,
    ) -> Result<u64, String> {
        use tokio::io::AsyncWriteExt;
        // A byte or half a byte per entry: which is the worker's table's to say (its header is
        // checked against its size before the rename).
        let expected_size = [false, true]
            .map(|packed| tilesolve::pdb::file::HEADER_LEN as u64 + spec.entry_bytes(packed))
            .into_iter()
            .find(|&size| size == first.total_size)
            .unwrap_or(tilesolve::pdb::file::HEADER_LEN as u64 + spec.entries());
        let (worker, name) = (first.worker_id, first.file_name.clone());
        let path = self.pdbs.dir().join(&name);
        let partial = tilesolve::pdb::file::partial_path(&path, "receiving");
        tokio::fs::create_dir_all(self.pdbs.dir())
            .await
            .map_err(|e| e.to_string())?;
        let mut file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| e.to_string())?;
        let mut written = 0u64;
        let mut next = Some(first);
        let received = async {
            while let Some(chunk) = next.take() {
                if chunk.total_size != expected_size {
                    return Err(format!(
                        "{} bytes announced, but the table is {expected_size}",
                        chunk.total_size
                    ));
                }
                if chunk.offset != written || written + chunk.data.len() as u64 > expected_size {
                    return Err(format!(
                        "{} bytes at offset {} after {written} bytes",
                        chunk.data.len(),
                        chunk.offset
                    ));
                }
                file.write_all(&chunk.data)
                    .await
                    .map_err(|e| e.to_string())?;
                written += chunk.data.len() as u64;
                self.supply.received(worker, &name, written, expected_size);
                next = stream.message().await.map_err(|s| s.message().to_string())?;
            }
            if written != expected_size {
                return Err(format!("received {written} of {expected_size} bytes"));
            }
            file.sync_all().await.map_err(|e| e.to_string())?;
            tilesolve::pdb::file::drop_cached_pages(&file);
            let (check_path, spec) = (partial.clone(), spec.clone());
            let table = tokio::task::spawn_blocking(move || {
                tilesolve::pdb::file::load(&check_path, &spec, true)
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
            if table.checksum != stated_checksum {
                return Err(format!(
                    "checksum {:016x}, but the worker stated {stated_checksum:016x} when registering",
                    table.checksum
                ));
            }
            drop(table);
            tokio::fs::rename(&partial, &path)
                .await
                .map_err(|e| e.to_string())?;
            Ok(written)
        }
        .await;
        if received.is_err() {
            let _ = tokio::fs::remove_file(&partial).await;
        }
        received
    }

    /// The scheduler, for the web dashboard's read-only views.
    /// A page of a batch's items, read without the scheduler's lock.
    pub fn items_page(
        &self,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<(StoredBatch, Vec<(u32, StoredItem)>), SchedulerError> {
        Scheduler::items_page(&self.store, batch, start, limit)
    }

    pub fn lock(&self) -> MutexGuard<'_, Scheduler> {
        locked(&self.scheduler)
    }

    /// Cancels a batch (see [`Scheduler::cancel`]) and makes it durable after releasing the
    /// lock. Blocking: the flush waits for the disk.
    pub fn cancel(&self, batch: u64) -> Result<BatchProgress, SchedulerError> {
        let progress = self.lock().cancel(batch)?;
        self.flusher.flush()?;
        Ok(progress)
    }

    /// Writes everything the store holds in memory to disk (at shutdown).
    pub fn flush_store(&self) -> Result<(), SchedulerError> {
        self.flusher.flush()
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
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let cutoff =
            now_ms.saturating_sub(u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX));
        let mut pruned = Pruned {
            store_bytes_before: self.lock().store_bytes(),
            ..Pruned::default()
        };
        let mut after = None;
        loop {
            let (old, last) = self.lock().finished_before(cutoff, after, 1_000)?;
            self.prune_each(&old, solutions, &mut pruned)?;
            match last {
                Some(last) => after = Some(last),
                None => break,
            }
        }
        self.pruned(pruned)
    }

    /// Removes the finished ones of `batches`, with their answers if `solutions` is set.
    pub fn prune_batches(
        &self,
        batches: &[u64],
        solutions: bool,
    ) -> Result<Pruned, SchedulerError> {
        let mut pruned = Pruned {
            store_bytes_before: self.lock().store_bytes(),
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
            let (items, boards) = self.lock().prune(batch, solutions)?;
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
        self.flusher.flush()?;
        pruned.store_bytes_after = self.lock().store_bytes();
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

fn status_message(progress: BatchProgress) -> pb::BatchStatus {
    pb::BatchStatus {
        batch_id: progress.batch,
        total: progress.total,
        solved: progress.solved,
        failed: progress.failed,
        done: progress.done,
        bounds: progress.bounds,
        nodes: progress.nodes,
        nodes_per_second: progress.nodes_per_second,
        workers: progress.workers,
        preparing: progress.preparing.unwrap_or_default(),
        cancelled: progress.cancelled,
    }
}

fn solution_message(stored: StoredSolution) -> pb::SolutionRecord {
    pb::SolutionRecord {
        length: stored.length,
        moves: stored.moves,
        tiles: stored.tiles.into_iter().map(u32::from).collect(),
        nodes: stored.nodes,
        seconds: stored.seconds,
        heuristic: stored.heuristic,
    }
}

fn parse_moves(text: &str) -> Result<Vec<Direction>, Status> {
    moves_from_string(text).ok_or_else(|| {
        Status::invalid_argument(format!("moves '{text}' must be letters U, D, L, R"))
    })
}

fn task_message(spec: TaskSpec) -> pb::Task {
    pb::Task {
        task_id: spec.id,
        board: spec.board.to_string(),
        goal: spec.goal.to_string(),
        heuristic: spec.heuristic,
        path: moves_to_string(&spec.path),
        bound: spec.bound,
        iterate: spec.iterate,
        node_budget: spec.node_budget,
        profile_depth: spec.profile_depth,
        batch_id: spec.puzzle.0,
        puzzle: spec.puzzle.1 + 1,
    }
}

fn report_of(result: pb::TaskResult) -> Result<TaskReport, Status> {
    use pb::task_result::Outcome;
    let outcome = match result.outcome {
        Some(Outcome::Found(moves)) => TaskOutcome::Found(parse_moves(&moves)?),
        Some(Outcome::NextBound(bound)) => TaskOutcome::Exceeded(bound),
        Some(Outcome::BudgetSpentAt(bound)) => TaskOutcome::BudgetSpent(bound),
        Some(Outcome::Error(reason)) => TaskOutcome::Failed(reason),
        Some(Outcome::Split(split)) => TaskOutcome::Split {
            children: parse_moves(&split.moves)?,
            pruned_min_f: split.pruned_min_f,
        },
        None => {
            return Err(Status::invalid_argument(format!(
                "task {} result has no outcome",
                result.task_id
            )))
        }
    };
    let parts = result
        .parts
        .into_iter()
        .map(|part| {
            Ok(PartSize {
                moves: parse_moves(&part.moves)?,
                expanded: part.nodes,
                micros: part.micros,
            })
        })
        .collect::<Result<Vec<_>, Status>>()?;
    let seconds = |value: f64| {
        if value.is_finite() {
            value.max(0.0)
        } else {
            0.0
        }
    };
    Ok(TaskReport {
        task: result.task_id,
        outcome,
        nodes: result.nodes,
        seconds: seconds(result.seconds),
        queued_seconds: seconds(result.queued_seconds),
        parts,
    })
}

type StatusStream = Pin<Box<dyn Stream<Item = Result<pb::BatchStatus, Status>> + Send>>;
/// Batches in a ListBatches answer unless asked otherwise, and at most.
const DEFAULT_BATCHES_PAGE: usize = 1_000;
const MAX_BATCHES_PAGE: usize = 10_000;

type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::PdbChunk, Status>> + Send>>;
type ExportStream = Pin<Box<dyn Stream<Item = Result<pb::ExportedSolution, Status>> + Send>>;

/// Size of the pieces a pattern database file is streamed in.
const CHUNK_BYTES: usize = 1 << 20;

/// Streams `file` (`total_size` bytes; a compressed copy when `zstd`) in [`CHUNK_BYTES`] pieces.
fn stream_file(file: tokio::fs::File, total_size: u64, zstd: bool) -> ChunkStream {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut file = file;
        let mut offset = 0u64;
        loop {
            let mut data = vec![0u8; CHUNK_BYTES];
            let read = match file.read(&mut data).await {
                Ok(0) => return,
                Ok(read) => read,
                Err(e) => {
                    let _ = sender.send(Err(Status::internal(e.to_string()))).await;
                    return;
                }
            };
            data.truncate(read);
            // Never past the size the stream announced (a file swapped in meanwhile).
            if offset + read as u64 > total_size {
                let _ = sender
                    .send(Err(Status::aborted("the file changed while it was sent")))
                    .await;
                return;
            }
            let chunk = pb::PdbChunk {
                offset,
                data,
                total_size,
                zstd,
            };
            if sender.send(Ok(chunk)).await.is_err() {
                return;
            }
            offset += read as u64;
        }
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(receiver))
}

#[tonic::async_trait]
impl pb::tilesolve_server::Tilesolve for Service {
    async fn submit_batch(
        &self,
        request: Request<pb::SubmitBatchRequest>,
    ) -> Result<Response<pb::SubmitBatchResponse>, Status> {
        let request = request.into_inner();
        let submitted = self
            .accept_batch(request.lines, request.heuristic, request.goal)
            .await?;
        Ok(Response::new(pb::SubmitBatchResponse {
            batch_id: submitted.batch,
            items: submitted.items,
            invalid: submitted.invalid,
            from_store: submitted.from_store,
        }))
    }

    type WatchBatchStream = StatusStream;

    async fn prune_batches(
        &self,
        request: Request<pb::PruneBatchesRequest>,
    ) -> Result<Response<pb::PruneBatchesResponse>, Status> {
        let request = request.into_inner();
        let older_than = Duration::from_secs(request.older_than_seconds);
        let service = self.clone();
        let pruned = tokio::task::spawn_blocking(move || {
            if request.batch_ids.is_empty() {
                service.prune_older_than(older_than, request.solutions)
            } else {
                service.prune_batches(&request.batch_ids, request.solutions)
            }
        })
        .await
        .map_err(|e| Status::internal(format!("prune: {e}")))??;
        Ok(Response::new(pb::PruneBatchesResponse {
            batches: pruned.batches,
            items: pruned.items,
            boards: pruned.boards,
            store_bytes_before: pruned.store_bytes_before,
            store_bytes_after: pruned.store_bytes_after,
        }))
    }

    type ExportSolutionsStream = ExportStream;

    async fn export_solutions(
        &self,
        _request: Request<pb::ExportSolutionsRequest>,
    ) -> Result<Response<ExportStream>, Status> {
        let store = self.store.clone();
        let (sender, receiver) = tokio::sync::mpsc::channel(256);
        // A pass over the whole store: on a blocking thread, and without the scheduler's lock.
        tokio::task::spawn_blocking(move || {
            for entry in store.searched_solutions() {
                let message = entry
                    .map(|(goal, board, solution)| pb::ExportedSolution {
                        board: board.to_string(),
                        goal: goal.to_string(),
                        moves: solution.moves,
                        length: solution.length,
                        heuristic: solution.heuristic,
                    })
                    .map_err(|error| Status::from(SchedulerError::from(error)));
                let failed = message.is_err();
                if sender.blocking_send(message).is_err() || failed {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(receiver),
        )))
    }

    async fn watch_batch(
        &self,
        request: Request<pb::WatchBatchRequest>,
    ) -> Result<Response<StatusStream>, Status> {
        let batch = request.into_inner().batch_id;
        let watching = permit(&self.watchers, "watched batches")?;
        let first = self.lock().progress(batch)?;
        let service = self.clone();
        let (sender, receiver) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let _watching = watching;
            let mut progress = Ok(first);
            loop {
                let done = progress.as_ref().map_or(true, |p| p.done);
                let message = progress.map(status_message).map_err(Status::from);
                if sender.send(message).await.is_err() || done {
                    return;
                }
                // A poll that ends a batch from here on wakes this at once; other ends (a
                // cancel, a sweep, an end just before this line) are seen at the next look.
                let ended = service.batch_ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                    () = ended => {}
                }
                progress = service.lock().progress(batch);
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(receiver),
        )))
    }

    async fn get_batch(
        &self,
        request: Request<pb::GetBatchRequest>,
    ) -> Result<Response<pb::BatchResults>, Status> {
        let request = request.into_inner();
        let batch = request.batch_id;
        let start = match request.page_token.as_str() {
            "" => 0,
            token => token.parse::<u32>().map_err(|_| {
                Status::invalid_argument(format!(
                    "page_token: '{token}' is not a token this coordinator gave out"
                ))
            })?,
        };
        let page_size = match request.page_size {
            0 => DEFAULT_PAGE_SIZE,
            size => size.min(MAX_PAGE_SIZE),
        } as usize;
        let status = status_message(self.lock().progress(batch)?);
        // One item more than the page tells whether another page follows.
        let (stored, mut page) = self.items_page(batch, start, page_size + 1)?;
        let next_page_token = if page.len() > page_size {
            page.truncate(page_size);
            page.last()
                .map_or(String::new(), |(index, _)| (index + 1).to_string())
        } else {
            String::new()
        };
        let items = page
            .into_iter()
            .map(|(index, item)| pb::ItemResult {
                index,
                line: item.line.unwrap_or(0),
                text: item.text,
                board: item.board.unwrap_or_default(),
                goal: item.goal.unwrap_or_default(),
                outcome: match item.status {
                    ItemStatus::Queued => None,
                    ItemStatus::Solved(stored) => {
                        Some(pb::item_result::Outcome::Solution(solution_message(stored)))
                    }
                    ItemStatus::Failed(reason) => Some(pb::item_result::Outcome::Error(reason)),
                },
            })
            .collect();
        Ok(Response::new(pb::BatchResults {
            status: Some(status),
            items,
            next_page_token,
            info: Some(pb::BatchInfo {
                heuristic: stored.heuristic,
                goal: stored.goal.unwrap_or_default(),
                submitted_unix_ms: stored.submitted_unix_ms,
                cancelled: stored.cancelled,
            }),
        }))
    }

    async fn query(
        &self,
        request: Request<pb::QueryRequest>,
    ) -> Result<Response<pb::QueryResponse>, Status> {
        let request = request.into_inner();
        let found = self.lock().query(&request.board, &request.goal)?;
        Ok(Response::new(pb::QueryResponse {
            found: found.is_some(),
            solution: found.map(solution_message),
        }))
    }

    async fn list_batches(
        &self,
        request: Request<pb::ListBatchesRequest>,
    ) -> Result<Response<pb::ListBatchesResponse>, Status> {
        let request = request.into_inner();
        let after = match request.page_token.as_str() {
            "" => None,
            token => Some(token.parse::<u64>().map_err(|_| {
                Status::invalid_argument(format!(
                    "page_token '{token:.40}' is not one a ListBatches answer gave"
                ))
            })?),
        };
        let size = match request.page_size {
            0 => DEFAULT_BATCHES_PAGE,
            size => (size as usize).min(MAX_BATCHES_PAGE),
        };
        let page = self.lock().list(after, size, request.newest_first)?;
        let next_page_token = match page.last() {
            Some(last) if page.len() == size => last.batch.to_string(),
            _ => String::new(),
        };
        let batches = page.into_iter().map(status_message).collect();
        Ok(Response::new(pb::ListBatchesResponse {
            batches,
            next_page_token,
        }))
    }

    async fn cancel_batch(
        &self,
        request: Request<pb::CancelBatchRequest>,
    ) -> Result<Response<pb::BatchStatus>, Status> {
        let batch = request.into_inner().batch_id;
        let service = self.clone();
        let progress = tokio::task::spawn_blocking(move || service.cancel(batch))
            .await
            .map_err(|e| Status::internal(format!("cancel: {e}")))??;
        if progress.cancelled {
            tracing::info!(batch, "batch cancelled");
        } else {
            tracing::info!(batch, "cancel of a finished batch: nothing changed");
        }
        Ok(Response::new(status_message(progress)))
    }
}

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
        if request.protocol_version != PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "worker protocol version {} is not this coordinator's {PROTOCOL_VERSION}",
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
        let (worker_id, worker_secret) = {
            let mut scheduler = self.lock();
            let worker_id = scheduler.register_with_token(request.threads, &request.host, token)?;
            scheduler.set_default_heuristics(worker_id, &request.default_heuristics);
            scheduler.set_worker_name(worker_id, &request.name);
            let tables: Vec<(String, u64)> = request
                .pdbs
                .iter()
                .map(|file| (file.name.clone(), file.checksum))
                .collect();
            scheduler.set_worker_tables(worker_id, &tables);
            (worker_id, scheduler.worker_secret(worker_id)?)
        };
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
        let request = request.into_inner();
        self.lock()
            .check_worker(request.worker_id, &request.worker_secret)?;
        let results = request
            .results
            .into_iter()
            .map(report_of)
            .collect::<Result<Vec<_>, _>>()?;
        let results_count = results.len();
        let scheduler_handle = self.scheduler.clone();
        let (flusher, batch_ended) = (self.flusher.clone(), self.batch_ended.clone());
        let service = self.clone();
        // Finishing an iteration splits the next one: CPU work, kept off the async threads and
        // done outside the scheduler's lock, so other workers' polls go on meanwhile.
        let (worker, leaving) = (request.worker_id, request.leaving);
        // A leaving worker takes nothing more and never waits for work.
        let (free_slots, idle) = match leaving {
            true => (0, false),
            false => (request.free_slots, request.idle),
        };
        // Registered before looking for tasks, so tasks queued from then on wake this call.
        let queued = self.tasks_queued.clone();
        let woken = self.tasks_queued.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let (mut tasks, mut cancelled, wait) = tokio::task::spawn_blocking(move || {
            let mut scheduler = locked(&scheduler_handle);
            let (mut tasks, cancelled) = scheduler.poll(worker, free_slots, results)?;
            let (mut flush_due, mut split) = (false, false);
            // Taken splits must be finished even if a store write fails on the way, or their
            // puzzles would wait for them forever: the first error is returned at the end.
            let mut failed = None;
            loop {
                let (long, deferred): (Vec<Deferred>, Vec<Deferred>) = scheduler
                    .take_deferred()
                    .into_iter()
                    .partition(Deferred::is_long);
                // The worker whose result ended an iteration gets the new one's first tasks.
                if split && deferred.is_empty() && tasks.len() < free_slots as usize {
                    let wanted = free_slots - tasks.len() as u32;
                    match scheduler.poll(worker, wanted, Vec::new()) {
                        Ok((more, _)) => tasks.extend(more),
                        Err(error) => failed = failed.or(Some(error)),
                    }
                }
                flush_due |= scheduler.take_flush_due();
                let records = scheduler.take_records();
                let wait = tasks.is_empty() && idle;
                let ready = scheduler.has_ready_tasks();
                drop(scheduler);
                service.audit_in_background(long);
                if let Err(error) = flusher.write(records) {
                    failed = failed.or(Some(error));
                }
                if deferred.is_empty() {
                    if ready {
                        queued.notify_waiters();
                    }
                    if flush_due {
                        flusher.flush()?;
                        batch_ended.notify_waiters();
                    }
                    return match failed {
                        Some(error) => Err(error),
                        None => Ok((tasks, cancelled, wait)),
                    };
                }
                let finished: Vec<_> = deferred.into_iter().map(Deferred::run).collect();
                scheduler = locked(&scheduler_handle);
                for done in finished {
                    if let Err(error) = scheduler.finish_deferred(done) {
                        failed = failed.or(Some(error));
                    }
                }
                split = true;
            }
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))??;
        if leaving {
            let returned = self.lock().leave(worker)?;
            // Audits only it could have run now fall to the coordinator.
            let service = self.clone();
            tokio::task::spawn_blocking(move || service.drain_deferred(Vec::new()));
            if returned > 0 {
                self.tasks_queued.notify_waiters();
            }
            tracing::info!(
                worker,
                tasks_returned = returned,
                results = results_count,
                "worker left: its tasks are back in the queue"
            );
            return Ok(Response::new(pb::PollResponse::default()));
        }
        // Long poll: a worker with every thread idle waits here (briefly) for the next tasks
        // rather than asking again on its own schedule, so an iteration's tasks reach idle
        // workers as soon as its split is done.
        if wait && tokio::time::timeout(LONG_POLL, woken).await.is_ok() {
            let (more, more_cancelled) = self.lock().poll(worker, free_slots, Vec::new())?;
            tasks = more;
            cancelled.extend(more_cancelled);
        }
        Ok(Response::new(pb::PollResponse {
            tasks: tasks.into_iter().map(task_message).collect(),
            cancelled,
            send_pdbs: self.supply.requests_for(worker),
        }))
    }

    type FetchPdbStream = ChunkStream;

    async fn fetch_pdb(
        &self,
        request: Request<pb::FetchPdbRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let request = request.into_inner();
        let name = request.file_name;
        if !tilesolve::pdb::file::is_file_name(&name) {
            return Err(Status::invalid_argument(format!(
                "'{name}' is not a pattern database file name"
            )));
        }
        let path = self.pdbs.dir().join(&name);
        // Only a regular file (not a link, a FIFO or a device: those could serve any file of the
        // host, stream without end or block) whose header is a pattern database's.
        let not_served = |reason: String| Status::not_found(format!("{name}: {reason}"));
        let metadata = tokio::fs::symlink_metadata(&path)
            .await
            .map_err(|e| not_served(e.to_string()))?;
        if !metadata.is_file() {
            return Err(not_served("not a regular file".into()));
        }
        let header_path = path.clone();
        let header =
            tokio::task::spawn_blocking(move || tilesolve::pdb::file::inspect(&header_path, false))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| not_served(format!("not a pattern database table ({e})")))?;
        let compressed = match request.accept_zstd {
            true => match self.compressed.copy_of(&path, &name, header.checksum).await {
                Ok(copy) => Some(copy),
                Err(error) => {
                    tracing::warn!(file = %name, %error, "no compressed copy: sending the table as it is");
                    None
                }
            },
            false => None,
        };
        let zstd = compressed.is_some();
        let sent = compressed.unwrap_or(path);
        let file = tokio::fs::File::open(&sent)
            .await
            .map_err(|e| not_served(e.to_string()))?;
        let total_size = file
            .metadata()
            .await
            .map_err(|e| not_served(e.to_string()))?
            .len();
        Ok(Response::new(stream_file(file, total_size, zstd)))
    }

    async fn upload_pdb(
        &self,
        request: Request<tonic::Streaming<pb::PdbUpload>>,
    ) -> Result<Response<pb::UploadPdbResponse>, Status> {
        let mut stream = request.into_inner();
        let first = stream
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("an upload needs at least one message"))?;
        self.lock()
            .check_worker(first.worker_id, &first.worker_secret)?;
        let (worker, name) = (first.worker_id, first.file_name.clone());
        let Some((spec, checksum)) = self.supply.start_upload(worker, &name) else {
            return Err(Status::failed_precondition(format!(
                "{name}: this coordinator did not ask worker {worker} for it, or it is already \
                 being sent"
            )));
        };
        let outcome = self.receive_pdb(first, &mut stream, &spec, checksum).await;
        let reply = outcome
            .as_ref()
            .map(|_| ())
            .map_err(|reason| Status::invalid_argument(format!("{name}: {reason}")));
        self.supply.fetched(worker, &name, outcome);
        reply.map(|()| Response::new(pb::UploadPdbResponse {}))
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, Status> {
        let request = request.into_inner();
        let cancelled = {
            let mut scheduler = self.lock();
            scheduler.check_worker(request.worker_id, &request.worker_secret)?;
            scheduler.heartbeat(request.worker_id, &request.running)?
        };
        Ok(Response::new(pb::HeartbeatResponse {
            cancelled,
            send_pdbs: self.supply.requests_for(request.worker_id),
        }))
    }
}
