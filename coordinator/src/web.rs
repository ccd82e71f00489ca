//! The web side of the coordinator, on the gRPC port (plain HTTP/1.1 requests are routed here,
//! gRPC's HTTP/2 requests to the services): the dashboard page and its JSON API (the page asks
//! for the overview once a second), and `/metrics` in Prometheus text format.
//!
//! The page is three embedded files (no build step); it reads the same scheduler the gRPC
//! services use, and submits puzzles through the same path (`Service::accept_batch`). With a
//! token configured every route needs it: as `Authorization: Bearer`, or as `?token=` where a
//! browser cannot set headers (a download link).

use axum::extract::{Extension, Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

mod lists;
mod metrics;
mod owners;
mod puzzle_view;

pub use lists::Charts;
use puzzle_view::PuzzleViewBatches;

use std::sync::Arc;

use crate::auth::TokenCheck;
use crate::notices::NoticeCounts;
use crate::owners::{Caller, Role};
use crate::request_origin;
use crate::rpc_metrics::RpcMetrics;

use crate::scheduler::reads::ItemState;
use crate::scheduler::{
    line_errors, parse_goal, parse_heuristic, reads, BatchProgress, BatchTerms, SchedulerError,
    WorkerView, RATE_WINDOW,
};
use crate::service::Service;
use crate::store::{ItemLimits, ItemStatus, Priority, StoredItem};
use tilesolve::proto::MAX_BATCH_LINES;

const INDEX_HTML: &str = include_str!("../web/index.html");
const APP_JS: &str = include_str!("../web/app.js");
const CHARTS_JS: &str = include_str!("../web/charts.js");
const STYLE_CSS: &str = include_str!("../web/style.css");

#[derive(Clone)]
struct WebState {
    service: Service,
    /// The client API's check: the same tokens and owners open the dashboard.
    check: TokenCheck,
    rpc_metrics: RpcMetrics,
    notice_counts: Arc<NoticeCounts>,
    charts: Charts,
    puzzle_view: PuzzleViewBatches,
}

/// The dashboard's routes, to be merged with the gRPC services' router.
pub fn router(
    service: Service,
    check: TokenCheck,
    rpc_metrics: RpcMetrics,
    notice_counts: Arc<NoticeCounts>,
    charts: Charts,
) -> Router {
    let state = WebState {
        service,
        check,
        notice_counts,
        rpc_metrics,
        charts,
        puzzle_view: PuzzleViewBatches::default(),
    };
    Router::new()
        .route(
            "/",
            get(|| async { page(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { page(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/charts.js",
            get(|| async { page(CHARTS_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { page(STYLE_CSS, "text/css; charset=utf-8") }),
        )
        .route("/api/overview", get(overview))
        .route("/api/history", get(lists::history))
        .route("/api/batch-list", get(lists::batch_list))
        .route("/api/solve", post(solve))
        .route("/api/check", post(check_lines))
        .route("/api/batches", post(submit_batch))
        .route("/api/batches/{id}", get(batch))
        .route("/api/batches/{id}/cancel", post(cancel_batch))
        .route("/api/batches/{id}/retry", post(retry_batch))
        .route("/api/batches/{id}/download", get(download))
        .route("/api/solution", get(solution))
        .route("/metrics", get(metrics::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token))
        .with_state(state)
}

fn page(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// An error as the page reads it: `{"error": "..."}` with a status that says what kind.
struct WebError(StatusCode, String);

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

/// A path nothing serves: gRPC's Unimplemented for a gRPC call (what a gRPC client expects),
/// 404 for anything else (a browser, a probe, a typo).
pub async fn unknown_path(request: Request) -> Response {
    let grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"));
    if grpc {
        // grpc-message is percent-encoded: the path goes in only when it needs no encoding.
        let path = request.uri().path();
        let message = if path.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'%') {
            format!("no such method: {path}")
        } else {
            "no such method".to_string()
        };
        let mut response = (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/grpc"),
                (header::HeaderName::from_static("grpc-status"), "12"),
            ],
        )
            .into_response();
        if let Ok(value) = header::HeaderValue::from_str(&message) {
            response
                .headers_mut()
                .insert(header::HeaderName::from_static("grpc-message"), value);
        }
        return response;
    }
    (StatusCode::NOT_FOUND, "no such page\n").into_response()
}

/// The one conversion from scheduler errors to HTTP statuses.
impl From<SchedulerError> for WebError {
    fn from(error: SchedulerError) -> WebError {
        let status = match error {
            SchedulerError::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            SchedulerError::UnknownBatch(_) | SchedulerError::UnknownWorker(_) => {
                StatusCode::NOT_FOUND
            }
            SchedulerError::ResourceExhausted(_) => StatusCode::TOO_MANY_REQUESTS,
            SchedulerError::PermissionDenied(_) => StatusCode::FORBIDDEN,
            SchedulerError::FailedPrecondition(_) => StatusCode::CONFLICT,
            SchedulerError::Store(_) | SchedulerError::Pdb(_) | SchedulerError::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        WebError(status, error.to_string())
    }
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

async fn require_token(
    State(state): State<WebState>,
    Query(query): Query<TokenQuery>,
    headers: HeaderMap,
    mut request: Request,
    next: Next,
) -> Response {
    // A cross-site form cannot send JSON without a preflight this server never approves.
    if let Some(reason) = request_origin::write_refusal(request.method(), &headers) {
        tracing::warn!(path = %request.uri().path(), "refused a web write that is not JSON");
        return WebError(StatusCode::UNSUPPORTED_MEDIA_TYPE, reason).into_response();
    }
    if state.check.is_open() {
        // No token: a name other than localhost is DNS rebinding, not this machine. `/metrics`
        // is left to scrapers that name the host (it holds no batch or answer).
        let scraped = request.uri().path() == "/metrics";
        if let Some(reason) =
            request_origin::host_refusal(request.uri(), &headers).filter(|_| !scraped)
        {
            tracing::warn!(path = %request.uri().path(), "refused a web request for a foreign host");
            return WebError(StatusCode::FORBIDDEN, reason).into_response();
        }
        request.extensions_mut().insert(Caller::OPERATOR);
        return next.run(request).await;
    }
    let mut metadata = tonic::metadata::MetadataMap::from_headers(headers);
    if let Some(given) = query.token.and_then(|t| format!("Bearer {t}").parse().ok()) {
        metadata.insert(tilesolve::connect::AUTHORIZATION, given);
    }
    // The page itself is public (it only asks for the token); its data is not.
    let public = matches!(
        request.uri().path(),
        "/" | "/app.js" | "/charts.js" | "/style.css"
    );
    if public {
        return next.run(request).await;
    }
    match state.check.caller(&metadata) {
        Ok((caller, _)) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => {
            tracing::warn!(path = %request.uri().path(), reason = refusal.reason(), "refused a web request without a token it knows");
            WebError(
                StatusCode::UNAUTHORIZED,
                "this coordinator needs its token (or an owner's)".into(),
            )
            .into_response()
        }
    }
}

#[derive(Serialize)]
struct BatchJson {
    batch: u64,
    /// running, done, cancelled or failed (done with every item failed).
    state: &'static str,
    submitted_unix_ms: u64,
    heuristic: String,
    goal: String,
    /// 1 (lowest) to 5 (highest).
    priority: u8,
    total: u32,
    solved: u32,
    failed: u32,
    /// Items answered with a path not proven optimal (a limit stopped their search).
    bounded: u32,
    /// Items cancelled before they ended: not failures.
    items_cancelled: u32,
    /// The batch whose failed or cancelled items it submitted again.
    retry_of: Option<u64>,
    /// Whose it is (None: the operator's).
    owner: Option<String>,
    done: bool,
    bounds: Vec<u32>,
    nodes: u64,
    nodes_per_second: f64,
    seconds: f64,
    /// Seconds to go as a range from the search (see `scheduler::eta`), when one exists.
    eta_low_seconds: Option<f64>,
    eta_high_seconds: Option<f64>,
    /// What the batch's waiting items wait for (pattern tables being obtained), if any.
    preparing: Option<String>,
}

impl From<BatchProgress> for BatchJson {
    fn from(p: BatchProgress) -> BatchJson {
        let eta = p.eta;
        BatchJson {
            batch: p.batch,
            state: p.state(),
            submitted_unix_ms: p.submitted_unix_ms,
            heuristic: p.heuristic,
            goal: p.goal,
            priority: p.priority.get(),
            total: p.total,
            solved: p.solved,
            failed: p.failed,
            bounded: p.bounded,
            items_cancelled: p.items_cancelled,
            retry_of: p.retry_of,
            owner: p.owner.map(String::from),
            done: p.done,
            bounds: p.bounds,
            nodes: p.nodes,
            nodes_per_second: p.nodes_per_second,
            seconds: p.seconds,
            eta_low_seconds: eta.map(|e| e.low.as_secs_f64()),
            eta_high_seconds: eta.map(|e| e.high.as_secs_f64()),
            preparing: p.preparing,
        }
    }
}

#[derive(Serialize)]
struct WorkerJson {
    id: u64,
    name: String,
    host: String,
    threads: u32,
    default_heuristics: Vec<String>,
    nodes_per_second: f64,
    tasks_done: u64,
    seconds_since_seen: f64,
    /// Tasks it holds now (running or prefetched).
    tasks_held: usize,
    tables: Vec<String>,
    /// Why it is gone ("left", "lost: ...", "quarantined"), for a worker no longer connected.
    gone: Option<String>,
    gone_seconds: Option<f64>,
}

impl WorkerJson {
    fn of(w: WorkerView) -> WorkerJson {
        let (gone, gone_seconds) = w
            .gone
            .map_or((None, None), |(why, ago)| (Some(why), Some(ago)));
        WorkerJson {
            id: w.id,
            name: w.name,
            host: w.host,
            threads: w.threads,
            default_heuristics: w.default_heuristics,
            nodes_per_second: w.nodes_per_second,
            tasks_done: w.tasks_done,
            seconds_since_seen: w.seconds_since_seen,
            tasks_held: w.tasks_held,
            tables: w.tables,
            gone,
            gone_seconds,
        }
    }
}

#[derive(Serialize)]
struct OverviewJson {
    /// Since the store's history began (carried across restarts), not this process's counts.
    puzzles_solved_all_time: u64,
    puzzles_failed_all_time: u64,
    puzzles_cancelled_all_time: u64,
    /// The window of `nodes_per_second` (and each worker's).
    rate_window_seconds: u64,
    puzzles_solved: u64,
    puzzles_pending: u64,
    tasks_queued: u64,
    tasks_running: u64,
    /// Leased beyond the workers' threads: waiting in a worker's own queue.
    tasks_prefetched: u64,
    nodes: u64,
    nodes_per_second: f64,
    workers: Vec<WorkerJson>,
    /// Who is looking, and the owners' usage (only an admin sees every owner's).
    you: owners::CallerJson,
    owners: Vec<owners::OwnerJson>,
}

fn overview_of(
    service: &Service,
    charts: &Charts,
    check: &TokenCheck,
    caller: &Caller,
) -> Result<OverviewJson, WebError> {
    let (totals, workers, gone) = service.read(|scheduler| {
        (
            scheduler.totals(),
            scheduler.workers(),
            scheduler.gone_workers(),
        )
    });
    let all_time = charts.history.sample(&totals, 0);
    Ok(OverviewJson {
        puzzles_solved_all_time: all_time.puzzles_solved,
        puzzles_failed_all_time: all_time.puzzles_failed,
        puzzles_cancelled_all_time: all_time.puzzles_cancelled,
        rate_window_seconds: RATE_WINDOW.as_secs(),
        puzzles_solved: totals.puzzles_solved,
        puzzles_pending: totals.puzzles_pending,
        tasks_queued: totals.tasks_queued,
        tasks_running: totals.tasks_running,
        tasks_prefetched: totals.tasks_prefetched,
        nodes: totals.nodes,
        nodes_per_second: totals.nodes_per_second,
        workers: workers
            .into_iter()
            .chain(gone)
            .map(WorkerJson::of)
            .collect(),
        you: owners::CallerJson::of(caller),
        owners: owners::usage(service, check.owners())
            .into_iter()
            .filter(|owner| caller.role() == Role::Admin || Some(&owner.name) == caller.name())
            .map(owners::OwnerJson::from)
            .collect(),
    })
}

async fn overview(
    State(state): State<WebState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<OverviewJson>, WebError> {
    Ok(Json(overview_of(
        &state.service,
        &state.charts,
        &state.check,
        &caller,
    )?))
}

#[derive(Deserialize)]
struct SolveRequest {
    board: String,
    #[serde(default)]
    heuristic: String,
    #[serde(default)]
    goal: String,
}

async fn solve(
    State(state): State<WebState>,
    Extension(caller): Extension<Caller>,
    Json(request): Json<SolveRequest>,
) -> Result<Json<serde_json::Value>, WebError> {
    let submitted = state
        .service
        .accept_batch(
            &caller,
            vec![request.board],
            parse_heuristic(&request.heuristic)?,
            parse_goal(&request.goal)?,
            BatchTerms::default(),
        )
        .await?;
    state
        .puzzle_view
        .started(state.service.clone(), submitted.batch);
    Ok(Json(serde_json::json!({
        "batch": submitted.batch,
        "invalid": submitted.invalid,
        "from_store": submitted.from_store,
    })))
}

#[derive(Serialize)]
struct ItemJson {
    line: Option<u32>,
    text: String,
    board: Option<String>,
    goal: Option<String>,
    length: Option<u32>,
    moves: Option<String>,
    nodes: Option<u64>,
    seconds: Option<f64>,
    heuristic: Option<String>,
    error: Option<String>,
    /// `queued`, `solved`, `failed`, or `bounded` (a path not proven optimal).
    status: &'static str,
    /// A bounded answer's proven lower bound: no solution is shorter.
    lower_bound: Option<u32>,
}

fn item_json(item: StoredItem) -> ItemJson {
    let mut json = ItemJson {
        line: item.line,
        text: item.text,
        board: item.board,
        goal: item.goal,
        length: None,
        moves: None,
        nodes: None,
        seconds: None,
        heuristic: None,
        error: None,
        status: "queued",
        lower_bound: None,
    };
    match item.status {
        ItemStatus::Bounded(b) => {
            json.status = "bounded";
            json.length = Some(b.length);
            json.moves = Some(b.moves);
            json.nodes = Some(b.nodes);
            json.seconds = Some(b.seconds);
            json.heuristic = Some(b.heuristic);
            json.lower_bound = Some(b.lower_bound);
        }
        ItemStatus::Solved(s) => {
            json.status = "solved";
            json.length = Some(s.length);
            json.moves = Some(s.moves);
            json.nodes = Some(s.nodes);
            json.seconds = Some(s.seconds);
            json.heuristic = Some(s.heuristic);
        }
        ItemStatus::Failed(reason) => {
            json.status = "failed";
            json.error = Some(reason);
        }
        ItemStatus::Cancelled => json.status = "cancelled",
        ItemStatus::Queued => {}
    }
    json
}

/// A page of a batch's items: `?offset=N&limit=M` (at most 1,000, the default).
#[derive(Deserialize)]
struct PageQuery {
    #[serde(default)]
    offset: u32,
    limit: Option<usize>,
    /// Only items in this state (`queued`, `solved`, `bounded`, `failed`, `cancelled`): a page
    /// then holds those of the `limit` items it looked through.
    state: Option<String>,
}

const WEB_PAGE: usize = 1_000;

async fn batch(
    State(state): State<WebState>,
    Path(id): Path<u64>,
    Query(page): Query<PageQuery>,
) -> Result<Json<serde_json::Value>, WebError> {
    let (progress, (tasks_queued, tasks_running)) = state
        .service
        .read(|scheduler| (scheduler.progress(id), scheduler.batch_tasks(id)));
    let status = BatchJson::from(progress?);
    let wanted = match page.state.as_deref() {
        None | Some("") => None,
        Some(name) => Some(ItemState::parse("state", name)?),
    };
    let limit = page.limit.unwrap_or(WEB_PAGE).min(WEB_PAGE);
    let (_, mut items) = state.service.items_page(id, page.offset, limit + 1)?;
    let next_offset = (items.len() > limit).then(|| {
        items.truncate(limit);
        items.last().map_or(0, |(index, _)| index + 1)
    });
    if let Some(wanted) = wanted {
        items.retain(|(_, item)| ItemState::of(&item.status) == wanted);
    }
    let items: Vec<ItemJson> = items.into_iter().map(|(_, item)| item_json(item)).collect();
    Ok(Json(serde_json::json!({
        "status": status,
        "tasks_queued": tasks_queued,
        "tasks_running": tasks_running,
        "items": items,
        "next_offset": next_offset,
    })))
}

/// A batch as the page sends it: its lines (a pasted text or a dropped file, split), heuristic
/// and goal names as the command line takes them.
#[derive(Deserialize)]
struct BatchRequest {
    lines: Vec<String>,
    #[serde(default)]
    heuristic: String,
    #[serde(default)]
    goal: String,
    /// Limits on each board, as `SubmitBatchRequest` takes them (0: none).
    #[serde(default)]
    time_limit_seconds: f64,
    #[serde(default)]
    node_limit: u64,
    #[serde(default)]
    suboptimal_percent: u32,
    /// 1 to 5, higher first (0: the default, 3).
    #[serde(default)]
    priority: u32,
    /// Where to POST a completion notice (empty: the coordinator's default, if any).
    #[serde(default)]
    notify_url: String,
}

/// The lines intake would refuse, with why, before anything is submitted.
async fn check_lines(
    Json(request): Json<BatchRequest>,
) -> Result<Json<serde_json::Value>, WebError> {
    if request.lines.len() > MAX_BATCH_LINES {
        return Err(WebError(
            StatusCode::BAD_REQUEST,
            format!(
                "{} lines; a batch holds at most {MAX_BATCH_LINES}",
                request.lines.len()
            ),
        ));
    }
    let errors: Vec<serde_json::Value> = line_errors(&request.lines, parse_goal(&request.goal)?)
        .into_iter()
        .map(|(line, error)| serde_json::json!({ "line": line, "error": error }))
        .collect();
    Ok(Json(serde_json::json!({ "errors": errors })))
}

async fn submit_batch(
    State(state): State<WebState>,
    Extension(caller): Extension<Caller>,
    Json(request): Json<BatchRequest>,
) -> Result<Json<serde_json::Value>, WebError> {
    let limits = ItemLimits::from_request(
        request.time_limit_seconds,
        request.node_limit,
        request.suboptimal_percent,
    )
    .map_err(|reason| WebError(StatusCode::BAD_REQUEST, reason))?;
    let priority = Priority::from_request(request.priority)
        .map_err(|reason| WebError(StatusCode::BAD_REQUEST, reason))?;
    let terms = BatchTerms {
        limits,
        priority,
        notify: Some(request.notify_url.trim().to_string()).filter(|url| !url.is_empty()),
        ..BatchTerms::default()
    };
    let submitted = state
        .service
        .accept_batch(
            &caller,
            request.lines,
            parse_heuristic(&request.heuristic)?,
            parse_goal(&request.goal)?,
            terms,
        )
        .await?;
    Ok(Json(serde_json::json!({
        "batch": submitted.batch,
        "invalid": submitted.invalid,
        "from_store": submitted.from_store,
    })))
}

async fn cancel_batch(
    State(state): State<WebState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<u64>,
) -> Result<Json<BatchJson>, WebError> {
    let service = state.service.clone();
    let progress = tokio::task::spawn_blocking(move || service.cancel(&caller, id))
        .await
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, format!("cancel: {e}")))??;
    tracing::info!(batch = id, "batch cancelled from the dashboard");
    Ok(Json(BatchJson::from(progress)))
}

/// Which items of a batch to submit again: failed, cancelled, or (neither) both.
#[derive(Deserialize)]
struct RetryRequest {
    #[serde(default)]
    failed: bool,
    #[serde(default)]
    cancelled: bool,
}

async fn retry_batch(
    State(state): State<WebState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<u64>,
    Json(request): Json<RetryRequest>,
) -> Result<Json<serde_json::Value>, WebError> {
    let states = ItemState::retried(request.failed, request.cancelled);
    let submitted = state.service.retry_batch(&caller, id, states, None).await?;
    tracing::info!(
        batch = submitted.batch,
        retry_of = id,
        "batch retried from the dashboard"
    );
    Ok(Json(serde_json::json!({
        "batch": submitted.batch,
        "items": submitted.items,
    })))
}

#[derive(Deserialize)]
struct DownloadQuery {
    format: String,
}

/// Every item of a batch as a file: `?format=csv` (a header, a row per item, quoted by the
/// `csv` crate) or `?format=jsonl` (a JSON object per line), read a page at a time.
async fn download(
    State(state): State<WebState>,
    Path(id): Path<u64>,
    Query(query): Query<DownloadQuery>,
) -> Result<Response, WebError> {
    let csv = match query.format.as_str() {
        "csv" => true,
        "jsonl" => false,
        other => {
            return Err(WebError(
                StatusCode::BAD_REQUEST,
                format!("format '{other}': csv or jsonl"),
            ))
        }
    };
    let internal = |e: String| WebError(StatusCode::INTERNAL_SERVER_ERROR, e);
    let mut body = Vec::new();
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut offset = 0;
    loop {
        let (_, items) = state.service.items_page(id, offset, WEB_PAGE)?;
        let Some((last, _)) = items.last() else {
            break;
        };
        offset = last + 1;
        for (_, item) in items {
            let json = item_json(item);
            if csv {
                writer
                    .serialize(&json)
                    .map_err(|e| internal(e.to_string()))?;
            } else {
                serde_json::to_writer(&mut body, &json).map_err(|e| internal(e.to_string()))?;
                body.push(b'\n');
            }
        }
    }
    let (content_type, extension) = if csv {
        body = writer.into_inner().map_err(|e| internal(e.to_string()))?;
        ("text/csv; charset=utf-8", "csv")
    } else {
        ("application/jsonl; charset=utf-8", "jsonl")
    };
    let disposition = format!("attachment; filename=\"batch-{id}.{extension}\"");
    Ok((
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response())
}

#[derive(Deserialize)]
struct SolutionQuery {
    board: String,
    #[serde(default)]
    goal: String,
}

/// A stored solution: what a shared link (`/#board=...`) shows.
async fn solution(
    State(state): State<WebState>,
    Query(query): Query<SolutionQuery>,
) -> Result<Json<serde_json::Value>, WebError> {
    let found = reads::query(state.service.store(), &query.board, &query.goal)?;
    let stored = found.ok_or_else(|| {
        WebError(
            StatusCode::NOT_FOUND,
            format!("{} has not been solved here yet", query.board),
        )
    })?;
    Ok(Json(serde_json::json!({
        "board": query.board,
        "length": stored.length,
        "moves": stored.moves,
        "nodes": stored.nodes,
        "seconds": stored.seconds,
        "heuristic": stored.heuristic,
    })))
}
