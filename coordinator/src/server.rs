//! Running the coordinator: `run(listener, config, shutdown)`, so tests and the embedded `batch`
//! bind 127.0.0.1:0 and `serve` binds what the user asked for.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use thiserror::Error;
use tilesolve::pdb::{PdbEvent, PdbStore};
use tilesolve::proto::v1 as pb;
use tilesolve::proto::FILE_DESCRIPTOR_SET;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;

use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, ServerTlsConfig};

use crate::auth::TokenCheck;
use crate::connections::{keepalive_interval, IdleTimeout, OpenSockets};
use crate::history::{self, History};
use crate::notices::{self, NoticeCounts, NoticeSettings};
use crate::owners::Owners;
use crate::rpc_metrics;
use crate::scheduler::{Scheduler, SchedulerConfig, SchedulerError};
use crate::service::{Limits, Service};
use crate::store::{Store, StoreError};
use crate::web;
use tonic_health::pb::health_server::{Health, HealthServer};

use tilesolve::proto::MAX_MESSAGE_BYTES;

/// Concurrent calls one connection may have open; more wait for a slot.
const MAX_STREAMS_PER_CONNECTION: u32 = 256;

/// How long calls in flight at shutdown may go on (a batch's last report, an export or a
/// table transfer streaming) before the coordinator stops anyway. Calls held for want of news
/// (heartbeats, long polls, watch streams) are answered as the stop begins
/// ([`Service::stop_holding`]). Well inside an orchestrator's usual 30 s grace before SIGKILL.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The coordinator's certificate chain and private key, PEM.
#[derive(Clone, Debug)]
pub struct TlsIdentity {
    pub cert_pem: Vec<u8>,
    pub key_pem: Vec<u8>,
}

#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Data directory: the sled store in `store/`, pattern databases beside it.
    pub data: PathBuf,
    pub scheduler: SchedulerConfig,
    /// Threads for pattern database builds.
    pub build_threads: usize,
    /// Every call but health checks must carry this bearer token (workers too, unless
    /// `worker_tokens` are set).
    pub token: Option<String>,
    /// The worker API's own tokens: then workers cannot use the client API, nor clients the
    /// worker API. Workers registered under one token are one lineage: none audits another.
    pub worker_tokens: Vec<String>,
    /// Where batches that name no notify URL send their completion notice, and the key that
    /// signs the operator's notices.
    pub notify_url: Option<String>,
    pub notices: NoticeSettings,
    /// The owners file's owners, whose tokens also open the client API (with their roles and
    /// limits); reloaded on SIGHUP.
    pub owners: Owners,
    /// Serve TLS instead of plain HTTP/2.
    pub tls: Option<TlsIdentity>,
    pub limits: Limits,
    /// A connection that moves no byte either way for this long is closed.
    pub idle_timeout: Duration,
    /// The store's page cache.
    pub store_cache_bytes: u64,
    /// Finished batches submitted longer ago than this are removed with their items (their
    /// answers stay): what keeps a long-running coordinator's store, and sled's memory for it,
    /// from growing with every batch ever submitted. None keeps every batch.
    pub keep_batches: Option<Duration>,
    /// How often the dashboard's history is sampled into the store (None: never, for a
    /// coordinator no one watches, such as `tilesolve batch`'s own).
    pub history_interval: Option<Duration>,
}

/// The default [`ServeConfig::idle_timeout`]: long past any pause of a live client (pinged
/// every 10 s), short enough that silent sockets do not pile up.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Error)]
pub enum ServeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The store stopped taking writes while serving (a full disk): serving stopped; opening
    /// the store again once the disk takes writes recovers everything acknowledged.
    #[error("the store stopped taking writes: {0}")]
    StoreFailed(StoreError),
}

/// How often a serving coordinator checks that its store still takes writes.
const STORE_CHECK: Duration = Duration::from_secs(2);

/// A store check, or the last flush, that has not finished after this long counts as a failed
/// store: after some I/O errors (its files removed, a failing disk) sled waits for ever for
/// its log to become durable, and a coordinator waiting with it would report SERVING and never
/// stop. (A healthy flush takes milliseconds; the thread left waiting cannot be stopped.)
pub const STORE_STALL: Duration = Duration::from_secs(20);

/// The error for a store call that outlived `stall`.
fn stalled(stall: Duration) -> StoreError {
    StoreError::Unresponsive {
        seconds: stall.as_secs(),
    }
}

/// Resolves once the store stops taking writes (`check`, every [`STORE_CHECK`], fails or runs
/// past `stall`), having turned health to NOT_SERVING: sled fails every write after one failed,
/// so the coordinator can only stop and open it again.
async fn store_failure(
    check: impl Fn() -> Result<(), StoreError> + Clone + Send + 'static,
    stall: Duration,
    health: tonic_health::server::HealthReporter,
) -> StoreError {
    let mut tick = tokio::time::interval(STORE_CHECK);
    loop {
        tick.tick().await;
        let error =
            match tokio::time::timeout(stall, tokio::task::spawn_blocking(check.clone())).await {
                Ok(Ok(Ok(()))) => continue,
                Ok(Ok(Err(error))) => error,
                Ok(Err(_)) => continue,
                Err(_) => stalled(stall),
            };
        health
            .set_not_serving::<pb::tilesolve_server::TilesolveServer<Service>>()
            .await;
        health
            .set_not_serving::<pb::workers_server::WorkersServer<Service>>()
            .await;
        tracing::error!(%error, "the store stopped taking writes (is the disk full?): the coordinator stops serving");
        return error;
    }
}

/// Serves the client and worker APIs (plus gRPC health and reflection) on `listener` until
/// `shutdown` completes. Unfinished batches in the store are resumed first. At shutdown no new
/// connection is accepted, calls in flight get [`SHUTDOWN_GRACE`] to finish, and the store is
/// flushed before this returns.
pub async fn run(
    listener: TcpListener,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let lease_timeout = config.scheduler.lease_timeout;
    let time_scale = config.scheduler.time_scale;
    let (scheduler, pdbs) = open_scheduler(&config).await?;

    let service = Service::new(
        scheduler,
        pdbs,
        lease_timeout / 4,
        time_scale,
        config.limits,
    )
    .with_notify_default(config.notify_url.as_deref());
    let sweeper = spawn_sweeper(service.clone(), lease_timeout);
    let history = History::open(service.store().clone())?;
    let notice_counts = Arc::new(NoticeCounts::default());
    let background = spawn_background(&service, &config, &history, &notice_counts);
    let (health, health_service) = serving_health().await;
    let router = routes(&service, &config, health_service, history, notice_counts)?;
    tracing::info!(
        address = ?listener.local_addr().ok(),
        data = %config.data.display(),
        tls = config.tls.is_some(),
        token = config.token.is_some(),
        worker_tokens = config.worker_tokens.len(),
        owners = config.owners.book().owners().len(),
        "coordinator serving"
    );
    let idle_timeout = config.idle_timeout;
    let open_sockets = OpenSockets::default();
    let listed = open_sockets.clone();
    let incoming = TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(Duration::from_secs(30)))
        .map(move |accepted| {
            accepted.map(|socket| IdleTimeout::new(socket, idle_timeout, &listed))
        });
    let builder = transport(&config)?;
    let (stopping, stop_requested) = tokio::sync::oneshot::channel::<()>();
    let mut store_failed = None;
    let checked = service.clone();
    let failure = store_failure(
        move || checked.store_writable(),
        STORE_STALL,
        health.clone(),
    );
    let holding = service.clone();
    let serving = builder
        .accept_http1(true)
        .add_routes(tonic::service::Routes::from(router))
        .serve_with_incoming_shutdown(incoming, async {
            tokio::select! {
                () = shutdown => {}
                error = failure => {
                    holding.store_has_failed();
                    store_failed = Some(error);
                }
            }
            tracing::info!(grace = ?SHUTDOWN_GRACE, "coordinator stopping: no new connections, calls in flight may finish");
            holding.stop_holding();
            let _ = stopping.send(());
        });
    let result = served(serving, stop_requested, &open_sockets).await;
    if store_failed.is_some() {
        // Before any handle is dropped: the tasks aborted below and `service` hold some.
        service.store().never_close();
    }
    sweeper.abort();
    for task in background {
        task.abort();
    }
    if let Some(error) = store_failed {
        result?;
        return Err(ServeError::StoreFailed(error));
    }
    let Some(flushed) = flush_at_stop(&service).await else {
        service.store().never_close();
        result?;
        return Err(ServeError::StoreFailed(stalled(STORE_STALL)));
    };
    if flushed.is_ok() {
        tracing::info!("coordinator stopped: store flushed");
    }
    result?;
    Ok(flushed?)
}

/// Waits until `serving` ends, or [`SHUTDOWN_GRACE`] after `stop_requested`; then shuts down
/// every connection still open. Dropping the server leaves its connections' tasks running: one
/// whose call never ends would stay open, pinged alive, for as long as the process lives.
async fn served(
    serving: impl Future<Output = Result<(), tonic::transport::Error>>,
    stop_requested: tokio::sync::oneshot::Receiver<()>,
    open_sockets: &OpenSockets,
) -> Result<(), tonic::transport::Error> {
    let grace_over = async {
        if stop_requested.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let result = tokio::select! {
        result = serving => result,
        _ = grace_over => {
            tracing::warn!("calls still open after the grace period (exports, table transfers): closing them");
            Ok(())
        }
    };
    let closed = open_sockets.close_all();
    if closed > 0 {
        tracing::info!(
            connections = closed,
            "connections still open after serving: shut down"
        );
    }
    result
}

/// The tasks that run beside serving: the table supply (batches resumed from the store, or
/// submitted from now on, may wait for pattern tables), retention, the history sampler, the
/// owners file's reloads and the notices' delivery.
fn spawn_background(
    service: &Service,
    config: &ServeConfig,
    history: &History,
    notice_counts: &Arc<NoticeCounts>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let table_supply = service.table_supply();
    table_supply.preload_present();
    let mut tasks = vec![
        tokio::spawn(table_supply.run()),
        tokio::spawn(notices::deliver(
            service.clone(),
            config.owners.clone(),
            config.notices.clone(),
            notice_counts.clone(),
        )),
    ];
    if let Some(keep) = config.keep_batches {
        tasks.push(tokio::spawn(prune_old_batches(service.clone(), keep)));
    }
    if let Some(every) = config.history_interval {
        let recording = history::record_every(history.clone(), service.clone(), every);
        tasks.push(tokio::spawn(recording));
    }
    if config.owners.configured() {
        tasks.push(tokio::spawn(reload_owners(config.owners.clone())));
    }
    tasks
}

/// The gRPC health service, both APIs reported serving.
async fn serving_health() -> (
    tonic_health::server::HealthReporter,
    tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>,
) {
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<pb::tilesolve_server::TilesolveServer<Service>>()
        .await;
    health
        .set_serving::<pb::workers_server::WorkersServer<Service>>()
        .await;
    (health, health_service)
}

/// Flushes the store once serving has stopped; None if it stalls past [`STORE_STALL`].
async fn flush_at_stop(service: &Service) -> Option<Result<(), SchedulerError>> {
    let flushing = service.clone();
    let flush = tokio::task::spawn_blocking(move || flushing.flush_store());
    match tokio::time::timeout(STORE_STALL, flush).await {
        Ok(Ok(flushed)) => Some(flushed),
        Ok(Err(failed)) => std::panic::resume_unwind(failed.into_panic()),
        Err(_) => None,
    }
}

/// The HTTP/2 server's settings, with TLS when configured. (Accepted sockets get TCP_NODELAY:
/// replies span several writes, and without it Nagle's algorithm holds the last one for the
/// peer's delayed ACK, ~40 ms a call.)
fn transport(config: &ServeConfig) -> Result<tonic::transport::Server, ServeError> {
    let builder = tonic::transport::Server::builder()
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .http2_keepalive_interval(Some(keepalive_interval(config.idle_timeout)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)));
    Ok(match &config.tls {
        Some(tls) => builder.tls_config(
            ServerTlsConfig::new().identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem)),
        )?,
        None => builder,
    })
}

/// The store opened, tables packed by an earlier version packed once, and the scheduler on
/// them (unfinished batches resumed).
async fn open_scheduler(
    config: &ServeConfig,
) -> Result<(Arc<Mutex<Scheduler>>, PdbStore), ServeError> {
    let store = Store::open_with_cache(&config.data.join("store"), config.store_cache_bytes)?;
    let pdbs = PdbStore::new(&config.data, config.build_threads);
    // Before any worker registers: the checksums it is compared with are then those of the
    // packed files, which is what upgraded workers hold.
    let repacking = pdbs.clone();
    let log = |event: PdbEvent<'_>| match event {
        PdbEvent::Packing { path, entries } => {
            tracing::info!(file = %path.display(), entries, "packing a pattern table an earlier version built (once; the coordinator answers when it is done)")
        }
        PdbEvent::Packed { path, seconds } => {
            tracing::info!(file = %path.display(), seconds, "packed a pattern table to half a byte an entry")
        }
        _ => {}
    };
    match tokio::task::spawn_blocking(move || repacking.repack_present(&log)).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "could not pack a pattern table"),
        Err(error) => tracing::warn!(%error, "packing pattern tables stopped"),
    }
    let scheduler = Arc::new(Mutex::new(Scheduler::new(
        store,
        pdbs.clone(),
        config.scheduler.clone(),
    )?));
    Ok((scheduler, pdbs))
}

/// Sweeps several times per lease timeout, so a dead worker's tasks return promptly.
fn spawn_sweeper(service: Service, lease_timeout: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(lease_timeout / 4);
        loop {
            tick.tick().await;
            let sweeping = service.clone();
            let swept = match tokio::task::spawn_blocking(move || sweeping.sweep()).await {
                Ok(swept) => swept,
                Err(error) => Err(SchedulerError::Internal(error.to_string())),
            };
            match swept {
                Ok(swept) => {
                    for worker in &swept.workers_lost {
                        tracing::warn!(
                            worker,
                            "worker lost: no heartbeat within the lease timeout"
                        );
                    }
                    if swept.tasks_requeued > 0 || swept.puzzles_failed > 0 {
                        tracing::warn!(
                            requeued = swept.tasks_requeued,
                            puzzles_failed = swept.puzzles_failed,
                            "expired leases returned to the queue"
                        );
                    }
                }
                Err(error) => tracing::error!(%error, "lease sweep"),
            }
        }
    })
}

/// Every route the listener serves: the gRPC services behind their token checks, health and
/// reflection, and the web side (dashboard, `/metrics`) for every other path.
fn routes(
    service: &Service,
    config: &ServeConfig,
    health_service: HealthServer<impl Health>,
    history: History,
    notice_counts: Arc<NoticeCounts>,
) -> Result<axum::Router, ServeError> {
    let client_check = TokenCheck::client(
        config.token.as_deref(),
        &config.worker_tokens,
        config.owners.clone(),
    );
    let worker_check = TokenCheck::worker(&config.worker_tokens, config.token.as_deref());
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()?;
    // grpcurl 1.8 and Python's grpc_reflection speak only the older v1alpha.
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let max_message_bytes = config.limits.max_message_bytes.min(MAX_MESSAGE_BYTES);
    let mut routes = tonic::service::Routes::builder();
    routes
        .add_service(InterceptedService::new(
            pb::tilesolve_server::TilesolveServer::new(service.clone())
                .max_decoding_message_size(max_message_bytes),
            client_check.clone(),
        ))
        .add_service(InterceptedService::new(
            pb::workers_server::WorkersServer::new(service.clone())
                .max_decoding_message_size(max_message_bytes),
            worker_check,
        ))
        .add_service(health_service)
        .add_service(InterceptedService::new(reflection, client_check.clone()))
        .add_service(InterceptedService::new(
            reflection_v1alpha,
            client_check.clone(),
        ));
    // gRPC paths go to the services; everything else (the dashboard, /metrics) to the web side.
    let rpc_metrics = service.rpc_metrics();
    let router = routes
        .routes()
        .into_axum_router()
        .layer(axum::middleware::from_fn_with_state(
            rpc_metrics.clone(),
            rpc_metrics::record,
        ))
        .merge(web::router(
            service.clone(),
            client_check,
            rpc_metrics,
            notice_counts,
            web::Charts {
                history,
                interval: config
                    .history_interval
                    .unwrap_or(history::DEFAULT_HISTORY_INTERVAL),
            },
        ))
        .fallback(web::unknown_path);
    Ok(router)
}

/// Reads the owners file again at every SIGHUP, and when it changes (its time or size, looked
/// at every [`OWNERS_CHECK`]: a Kubernetes Secret mounted as a file changes without a signal,
/// and the image has no shell to send one). A file that fails to read keeps the owners in
/// force (and the error is logged), so a typo cannot lock everyone out.
async fn reload_owners(owners: Owners) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangups = signal(SignalKind::hangup())
        .inspect_err(|error| tracing::error!(%error, "cannot listen for SIGHUP"))
        .ok();
    let mut tick = tokio::time::interval(OWNERS_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = owners.file_stamp();
    loop {
        let why = tokio::select! {
            Some(()) = async { hangups.as_mut()?.recv().await } => "SIGHUP",
            _ = tick.tick() => {
                let stamp = owners.file_stamp();
                if stamp == seen {
                    continue;
                }
                "the file changed"
            }
        };
        seen = owners.file_stamp();
        match owners.reload() {
            Ok(count) => tracing::info!(owners = count, why, "owners file read again"),
            Err(error) => {
                tracing::error!(%error, why, "owners file not read again: the owners in force stay")
            }
        }
    }
}

/// How often the owners file is looked at for a change.
const OWNERS_CHECK: Duration = Duration::from_secs(10);

/// Removes finished batches older than `keep`, again and again: every tenth of `keep`, but at
/// least every hour and at most every 10 seconds, so the store holds about `keep` of batches
/// plus a tenth.
async fn prune_old_batches(service: Service, keep: Duration) {
    let every = (keep / 10).clamp(Duration::from_secs(10), Duration::from_secs(3600));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let service = service.clone();
        match tokio::task::spawn_blocking(move || service.prune_older_than(keep, false)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::error!(%error, "pruning old batches"),
            Err(error) => tracing::error!(%error, "pruning old batches"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DEFAULT_CACHE_BYTES;

    fn config(data: &std::path::Path) -> ServeConfig {
        ServeConfig {
            data: data.to_path_buf(),
            scheduler: SchedulerConfig::default(),
            build_threads: 1,
            token: None,
            worker_tokens: Vec::new(),
            notify_url: None,
            notices: Default::default(),
            owners: Owners::none(),
            tls: None,
            limits: Limits::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            store_cache_bytes: DEFAULT_CACHE_BYTES,
            keep_batches: None,
            history_interval: None,
        }
    }

    /// A call that never ends (here an upload whose first message never comes; in life a
    /// handler waiting on a flush that a full disk holds) does not keep its connection once
    /// serving has ended and the grace is over: its client hears the connection end, where it
    /// waited for as long as the process lived before (the server's pings kept the connection
    /// from idling out).
    #[tokio::test]
    async fn a_call_still_open_after_the_grace_loses_its_connection() {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stop_requested) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(run(listener, config(dir.path()), async {
            let _ = stop_requested.await;
        }));
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        // Serving: the connection is up, and the upload below goes out on it.
        health
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await
            .unwrap();
        let mut workers = pb::workers_client::WorkersClient::new(channel);
        let (opened, upload_opened) = tokio::sync::oneshot::channel::<()>();
        let messages = stream_of_nothing(opened);
        let upload = tokio::spawn(async move { workers.upload_pdb(messages).await });
        // The request stream is polled once its headers are on their way.
        upload_opened.await.unwrap();
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(60), upload)
            .await
            .expect("the upload still waits a minute after serving ended");
        assert!(answer.unwrap().is_err(), "an upload of nothing was taken");
    }

    /// A request stream that says when it is first asked for a message, and never gives one.
    fn stream_of_nothing(
        opened: tokio::sync::oneshot::Sender<()>,
    ) -> impl tokio_stream::Stream<Item = pb::PdbUpload> {
        let mut opened = Some(opened);
        tokio_stream::iter(std::iter::from_fn(move || {
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            None
        }))
        .chain(tokio_stream::pending())
    }

    /// A store check that never returns (sled waiting for a log it failed to write) is a failed
    /// store, and serving stops, rather than waiting with it.
    #[tokio::test]
    async fn a_store_check_that_never_returns_is_a_failed_store() {
        let (health, _) = tonic_health::server::health_reporter();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        let check = move || {
            // Blocks until the test ends (a recv on a channel whose sender is then dropped).
            let _ = held.lock().map(|held| held.recv());
            Ok(())
        };
        let error = store_failure(check, Duration::from_millis(200), health).await;
        assert!(matches!(error, StoreError::Unresponsive { .. }), "{error}");
        drop(release);
    }
}
