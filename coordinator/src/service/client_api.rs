//! The client API (`tilesolve.v1.Tilesolve`): submit, watch, read, query, list, cancel, prune
//! and export, on the scheduler and the store.

use std::pin::Pin;
use std::time::Duration;

use tilesolve::proto::v1 as pb;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::admission::require_role;
use super::convert::{
    bounded_message, first_submitted, item_limits, item_message, priority, solution_message,
    status_message, Tiles,
};
use super::{permit, Service};
use crate::owners::{Caller, OwnerLimits, OwnerName, Role};
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::Goal;

use crate::scheduler::reads::ItemState;
use crate::scheduler::{
    parse_goal, parse_heuristic, read_batch, reads, take_in, BatchProgress, BatchTerms,
    SchedulerError, Submitted,
};
use crate::store::{PendingNotice, StoredBatch, StoredItem};

/// Items in a `GetBatch` page when the client asks for no size, and the most in one page: a
/// 5x5 solution is about 1 KB in a message, so 10,000 stay well inside the 16 MiB limit.
const DEFAULT_PAGE_SIZE: u32 = 1_000;
const MAX_PAGE_SIZE: u32 = 10_000;
/// How often a watched batch's progress is sent while it runs (its end is sent at once). Each
/// look walks the batch's live puzzles under the lock: at 50 ms, watching a batch of 40,000
/// easy boards took 4% of the coordinator's time.
const WATCH_INTERVAL: Duration = Duration::from_millis(200);
type StatusStream = Pin<Box<dyn Stream<Item = Result<pb::BatchStatus, Status>> + Send>>;
/// Batches in a ListBatches answer unless asked otherwise, and at most.
const DEFAULT_BATCHES_PAGE: usize = 1_000;
const MAX_BATCHES_PAGE: usize = 10_000;
type ExportStream = Pin<Box<dyn Stream<Item = Result<pb::ExportedSolution, Status>> + Send>>;

/// Who made `request`: the token check put it there (the operator where none ran, in tests).
fn caller<T>(request: &Request<T>) -> Caller {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .unwrap_or(Caller::OPERATOR)
}

/// The owner a submission names for its batch (a restore's), which only an admin may name.
fn recorded_owner(caller: &Caller, named: &str) -> Result<Option<OwnerName>, SchedulerError> {
    if named.is_empty() {
        return Ok(None);
    }
    require_role(caller, Role::Admin, "record a batch under another owner")?;
    OwnerName::try_from(named.to_string())
        .map(Some)
        .map_err(|reason| SchedulerError::InvalidArgument(format!("owner: {reason}")))
}

impl Service {
    /// A prune (or its preview) of what `request` names: a pass over the store, on a blocking
    /// thread.
    async fn prune_pass<T: Send + 'static>(
        &self,
        request: Request<pb::PruneBatchesRequest>,
        pass: impl FnOnce(&Service, Duration, &pb::PruneBatchesRequest) -> Result<T, SchedulerError>
            + Send
            + 'static,
    ) -> Result<T, Status> {
        let request = request.into_inner();
        let older_than = Duration::from_secs(request.older_than_seconds);
        let service = self.clone();
        Ok(
            tokio::task::spawn_blocking(move || pass(&service, older_than, &request))
                .await
                .map_err(|e| Status::internal(format!("prune: {e}")))??,
        )
    }

    /// Accepts a batch for either API: parsing and store writes off the async threads, and a
    /// flush before the batch is acknowledged (from then on it survives a crash). Lines are read
    /// and items stored outside the scheduler's lock; items start a part at a time
    /// ([`crate::scheduler::take_in`]), so workers solve the first while the rest are stored.
    /// Pattern tables the batch needs and the coordinator has not loaded are obtained
    /// afterwards, in the background (`table_supply`): the batch's items wait for them, the
    /// reply does not.
    ///
    /// The batch is `caller`'s: it must hold role submit, and its owner's limits are checked
    /// against what it has open with this batch's boards added, while no other limited
    /// submission is taken in.
    pub async fn accept_batch(
        &self,
        caller: &Caller,
        lines: Vec<String>,
        heuristic: HeuristicChoice,
        goal: Goal,
        terms: BatchTerms,
    ) -> Result<Submitted, SchedulerError> {
        require_role(caller, Role::Submit, "submit a batch")?;
        let notify = terms
            .notify
            .or_else(|| self.notify_default.as_deref().map(String::from));
        if let Some(url) = &notify {
            PendingNotice::check_url(url).map_err(SchedulerError::InvalidArgument)?;
        }
        let terms = BatchTerms {
            owner: terms.owner.or_else(|| caller.name().cloned()),
            notify,
            ..terms
        };
        let limited = (caller.owner.as_ref())
            .filter(|owner| owner.limits != OwnerLimits::default())
            .cloned();
        let admission = self.admission.clone();
        let _permit = permit(&self.submissions, "submissions")?;
        let mut core = self.core.clone();
        let (store, flusher) = (self.store.clone(), self.core.flusher.clone());
        // The submitting call's trace, taken before its first task can be leased.
        let trace = tilesolve::trace_context::current().map(|t| (self.traces.clone(), t));
        let intake = tokio::task::spawn_blocking(move || {
            let read = read_batch(&store, &lines, heuristic, goal)?.with_terms(terms);
            let _held = limited.as_ref().map(|_| admission.hold());
            if let Some(owner) = &limited {
                let usage = core.read(|s| s.owner_usage().remove(&owner.name));
                admission.check_limits(owner, usage.unwrap_or_default(), read.queued() as u64)?;
            }
            let intake = take_in(&mut core, &store, read, |batch| {
                if let Some((traces, traceparent)) = trace {
                    traces.insert(batch, traceparent);
                }
            })?;
            let waits = core.read(|scheduler| scheduler.tables().is_waiting(intake.batch()));
            // Acknowledged only once it is durable.
            match intake.is_one_record() {
                true => flusher.sync_batch_records()?,
                false => flusher.flush()?,
            }
            Ok::<_, SchedulerError>((intake.submitted(), waits))
        });
        // A flush that meets a full disk can wait for ever (sled); the store check finds the
        // store failed meanwhile, and the client hears that its batch was not acknowledged
        // rather than nothing.
        let (submitted, waits) = self.store_failure.unless_failed(intake).await?;
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

    /// A page of a batch's items, read without the scheduler's lock.
    pub fn items_page(
        &self,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<(StoredBatch, Vec<(u32, StoredItem)>), SchedulerError> {
        reads::items_page(&self.store, batch, start, limit)
    }
}

#[tonic::async_trait]
impl pb::tilesolve_server::Tilesolve for Service {
    async fn submit_batch(
        &self,
        request: Request<pb::SubmitBatchRequest>,
    ) -> Result<Response<pb::SubmitBatchResponse>, Status> {
        let caller = caller(&request);
        let request = request.into_inner();
        let terms = BatchTerms {
            limits: item_limits(&request)?,
            priority: priority(request.priority)?,
            submitted_unix_ms: first_submitted(request.submitted_unix_ms)?,
            owner: recorded_owner(&caller, &request.owner)?,
            notify: (!request.notify_url.is_empty()).then(|| request.notify_url.clone()),
            ..BatchTerms::default()
        };
        let submitted = self
            .accept_batch(
                &caller,
                request.lines,
                parse_heuristic(&request.heuristic)?,
                parse_goal(&request.goal)?,
                terms,
            )
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
        require_role(&caller(&request), Role::Admin, "prune batches")?;
        let pruned = self
            .prune_pass(request, |service, older_than, request| {
                if request.batch_ids.is_empty() {
                    service.prune_older_than(older_than, request.solutions)
                } else {
                    service.prune_batches(&request.batch_ids, request.solutions)
                }
            })
            .await?;
        Ok(Response::new(pb::PruneBatchesResponse {
            batches: pruned.batches,
            items: pruned.items,
            boards: pruned.boards,
            store_bytes_before: pruned.store_bytes_before,
            store_bytes_after: pruned.store_bytes_after,
            finished_batches: 0,
        }))
    }

    async fn preview_prune(
        &self,
        request: Request<pb::PruneBatchesRequest>,
    ) -> Result<Response<pb::PruneBatchesResponse>, Status> {
        let preview = self
            .prune_pass(request, |service, older_than, request| {
                service.preview_prune(older_than, &request.batch_ids)
            })
            .await?;
        Ok(Response::new(pb::PruneBatchesResponse {
            batches: preview.batches,
            items: preview.items,
            finished_batches: preview.finished_batches,
            ..pb::PruneBatchesResponse::default()
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
        let first = self.read(|s| s.progress(batch))?;
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
                let ended = service.core.batch_ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                let next_look = async {
                    tokio::select! {
                        () = tokio::time::sleep(WATCH_INTERVAL) => {}
                        () = ended => {}
                    }
                };
                // A stop waits for every call in flight: the stream ends now, with a code a
                // client takes as "try again", rather than being cut at the grace period's end.
                if service.core.unless_stopping(next_look).await.is_none() {
                    let stopping = Status::unavailable(
                        "the coordinator is stopping: watch the batch again once it is back",
                    );
                    let _ = sender.send(Err(stopping)).await;
                    return;
                }
                progress = service.read(|s| s.progress(batch));
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
        let state = match request.item_state.as_str() {
            "" => None,
            name => Some(ItemState::parse("item_state", name)?),
        };
        let status = status_message(self.read(|s| s.progress(batch))?);
        // Whether another page follows, from the batch's count: reading one item more would
        // decode the part after this page's for it (every part twice, paging through a batch).
        let (stored, mut page) = self.items_page(batch, start, page_size)?;
        let next_page_token = match page.last() {
            Some((index, _)) if page.len() == page_size && index + 1 < stored.items => {
                (index + 1).to_string()
            }
            _ => String::new(),
        };
        if let Some(state) = state {
            page.retain(|(_, item)| ItemState::of(&item.status) == state);
        }
        let tiles = match request.without_tiles {
            true => Tiles::Left,
            false => Tiles::Sent,
        };
        let items = page
            .into_iter()
            .map(|(index, item)| item_message(index, item, tiles))
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
                time_limit_seconds: stored.limits.seconds.unwrap_or(0.0),
                node_limit: stored.limits.nodes.unwrap_or(0),
                suboptimal_percent: stored.limits.suboptimal_percent.unwrap_or(0),
                priority: stored.priority.get().into(),
                owner: stored.owner.map(String::from).unwrap_or_default(),
            }),
        }))
    }

    async fn query(
        &self,
        request: Request<pb::QueryRequest>,
    ) -> Result<Response<pb::QueryResponse>, Status> {
        let request = request.into_inner();
        let (found, bounded) = {
            match reads::query(&self.store, &request.board, &request.goal)? {
                Some(found) => (Some(found), None),
                None => (
                    None,
                    reads::query_bounded(&self.store, &request.board, &request.goal)?,
                ),
            }
        };
        Ok(Response::new(pb::QueryResponse {
            found: found.is_some(),
            solution: found.map(solution_message),
            bounded: bounded.map(bounded_message),
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
        if !matches!(
            request.state.as_str(),
            "" | "running" | "done" | "cancelled" | "failed"
        ) {
            return Err(Status::invalid_argument(format!(
                "state '{:.40}' is none of running, done, cancelled, failed",
                request.state
            )));
        }
        let page = self.read(|s| s.list(after, size, request.newest_first))?;
        let next_page_token = match page.last() {
            Some(last) if page.len() == size => last.batch.to_string(),
            _ => String::new(),
        };
        let owned = |progress: &BatchProgress| match request.owner.as_str() {
            "" => true,
            "-" => progress.owner.is_none(),
            name => progress.owner.as_ref().is_some_and(|o| o.as_str() == name),
        };
        let batches = page
            .into_iter()
            .filter(|progress| request.state.is_empty() || progress.state() == request.state)
            .filter(owned)
            .map(status_message)
            .collect();
        Ok(Response::new(pb::ListBatchesResponse {
            batches,
            next_page_token,
        }))
    }

    async fn cancel_batch(
        &self,
        request: Request<pb::CancelBatchRequest>,
    ) -> Result<Response<pb::BatchStatus>, Status> {
        let caller = caller(&request);
        let batch = request.into_inner().batch_id;
        let service = self.clone();
        let progress = tokio::task::spawn_blocking(move || service.cancel(&caller, batch))
            .await
            .map_err(|e| Status::internal(format!("cancel: {e}")))??;
        if progress.cancelled {
            tracing::info!(batch, "batch cancelled");
        } else {
            tracing::info!(batch, "cancel of a finished batch: nothing changed");
        }
        Ok(Response::new(status_message(progress)))
    }

    async fn retry_batch(
        &self,
        request: Request<pb::RetryBatchRequest>,
    ) -> Result<Response<pb::SubmitBatchResponse>, Status> {
        let caller = caller(&request);
        let request = request.into_inner();
        let priority = match request.priority {
            0 => None,
            given => Some(priority(given)?),
        };
        let states = ItemState::retried(request.failed, request.cancelled);
        let submitted =
            Service::retry_batch(self, &caller, request.batch_id, states, priority).await?;
        Ok(Response::new(pb::SubmitBatchResponse {
            batch_id: submitted.batch,
            items: submitted.items,
            invalid: submitted.invalid,
            from_store: submitted.from_store,
        }))
    }
}
