//! `/metrics`: the scheduler's counters and levels, the store's size and disk, per-method gRPC
//! latency, the build, and the process's own `process_*`, in the OpenMetrics text format.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use super::owners::OwnerStanding;
use super::{WebError, WebState};
use crate::scheduler::SchedulerTotals;

/// Prometheus text format, built from one consistent snapshot per scrape.
pub(super) async fn metrics(State(state): State<WebState>) -> Result<Response, WebError> {
    let totals = state.service.read(|scheduler| scheduler.totals());
    let store = state.service.store();
    let (store_bytes, disk_space) = (store.size_on_disk(), store.disk_space());
    let mut registry = Registry::with_prefix("tilesolve");
    register_counters(&mut registry, &totals);
    register_idle(&mut registry, &totals);
    register_gauges(&mut registry, &totals, store_bytes, disk_space);
    state.rpc_metrics.register(&mut registry);
    register_owners(
        &mut registry,
        super::owners::usage(&state.service, state.check.owners()),
    );
    register_notices(&mut registry, &state);
    let build_info = Family::<Vec<(&str, &str)>, Gauge>::default();
    build_info
        .get_or_create(&vec![("version", env!("CARGO_PKG_VERSION"))])
        .set(1);
    registry.register("build_info", "The tilesolve version running", build_info);
    let text = exposition(&registry)
        .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response())
}

/// The scheduler's counters, each a total since the coordinator started.
fn register_counters(registry: &mut Registry, totals: &SchedulerTotals) {
    let counters = [
        (
            "nodes_searched",
            "Expanded nodes of the task reports applied to their puzzles (audits and withdrawn tasks apart)",
            totals.nodes,
        ),
        (
            "nodes_audited",
            "Expanded nodes of audits run by workers (each checks another worker's report)",
            totals.audit_nodes,
        ),
        (
            "nodes_audited_by_coordinator",
            "Expanded nodes of audits the coordinator ran itself (probation's cheap ones, and those no worker could run): its own CPU",
            totals.coordinator_audit_nodes,
        ),
        (
            "nodes_withdrawn",
            "Expanded nodes of tasks reported after they were withdrawn (their puzzle ended first): spent for nothing",
            totals.withdrawn_nodes,
        ),
        (
            "tasks_done",
            "Tasks whose results were applied",
            totals.tasks_done,
        ),
        (
            "puzzles_solved",
            "Puzzles solved optimally",
            totals.puzzles_solved,
        ),
        (
            "puzzles_failed",
            "Puzzles that failed (not those cancelled)",
            totals.puzzles_failed,
        ),
        (
            "puzzles_cancelled",
            "Puzzles whose batch was cancelled before they ended: not failures",
            totals.puzzles_cancelled,
        ),
        (
            "puzzles_bounded",
            "Puzzles answered with a path not proven optimal: a time or node limit stopped their optimal search",
            totals.puzzles_bounded,
        ),
        (
            "audits_upheld",
            "Audits that found no path shorter than the audited report claimed",
            totals.audits_upheld,
        ),
        (
            "audits_disproved",
            "Audits that found a shorter path than a report claimed (its worker is quarantined)",
            totals.audits_disproved,
        ),
        (
            "audits_skipped",
            "Audits not run or inconclusive (no other worker, budget spent)",
            totals.audits_skipped,
        ),
        (
            "answer_audits",
            "Audits of the claims an answer rested on, queued before it was stored",
            totals.answer_audits,
        ),
        (
            "workers_quarantined",
            "Workers shut out for a false or impossible report",
            totals.workers_quarantined,
        ),
        (
            "puzzles_restarted",
            "Puzzles searched again because a report they rested on was false",
            totals.puzzles_restarted,
        ),
        (
            "tasks_returned",
            "Tasks asked back for idle threads before their worker started them, queued again",
            totals.tasks_returned,
        ),
        (
            "tasks_handed_back",
            "Running subtree tasks asked back for idle threads: they handed back what they had not searched",
            totals.tasks_handed_back,
        ),
    ];
    for (name, help, value) in counters {
        let metric: Counter = Counter::default();
        metric.inc_by(value);
        registry.register(name, help, metric);
    }
}

/// The connected threads' idle time, a total since the coordinator started.
fn register_idle(registry: &mut Registry, totals: &SchedulerTotals) {
    let idle: Counter<f64, AtomicU64> = Counter::default();
    idle.inc_by(totals.idle_thread_seconds);
    registry.register(
        "idle_thread_seconds",
        "Seconds the connected workers' threads held no task, summed over threads (the idle share of a stretch: its increase over threads x seconds)",
        idle,
    );
}

/// The scheduler's and the store's levels at this scrape.
fn register_gauges(
    registry: &mut Registry,
    totals: &SchedulerTotals,
    store_bytes: u64,
    disk_space: Option<(u64, u64)>,
) {
    let gauges = [
        (
            "nodes_per_second",
            "Expanded nodes per second, all workers",
            totals.nodes_per_second,
        ),
        (
            "work_left_thread_seconds",
            "The open batches' work left in thread-seconds at the workers' pace now (the middle of each batch's ETA range; a whole task's budget a puzzle where it has none): what to scale workers by",
            totals.work_left_thread_seconds,
        ),
        (
            "coordinator_seconds_per_task",
            "The coordinator's measured CPU seconds a task it served (0 until measured; serve only): splits make tasks long enough to keep it within 1% of the search",
            totals.coordinator_seconds_per_task,
        ),
        (
            "tasks_queued",
            "Tasks waiting for a worker",
            totals.tasks_queued as f64,
        ),
        (
            "tasks_running",
            "Tasks a worker thread is running: each worker's leases up to its threads",
            totals.tasks_running as f64,
        ),
        (
            "tasks_prefetched",
            "Tasks leased to a worker beyond its threads, waiting in its own queue",
            totals.tasks_prefetched as f64,
        ),
        (
            "puzzles_pending",
            "Puzzles not finished",
            totals.puzzles_pending as f64,
        ),
        (
            "puzzles_live",
            "Puzzles started and not finished (the rest of the pending ones wait in the store)",
            totals.puzzles_live as f64,
        ),
        (
            "workers_connected",
            "Workers heard from within the lease timeout",
            totals.workers as f64,
        ),
        (
            "worker_threads",
            "Search threads of the connected workers",
            totals.worker_threads as f64,
        ),
        (
            "store_bytes",
            "Bytes the sled store takes on disk",
            store_bytes as f64,
        ),
    ];
    let disk_gauges = disk_space.map(|(free, total)| {
        [
            (
                "store_disk_free_bytes",
                "Bytes the coordinator may still write on the store's file system",
                free as f64,
            ),
            (
                "store_disk_size_bytes",
                "Size in bytes of the store's file system",
                total as f64,
            ),
        ]
    });
    for (name, help, value) in gauges.into_iter().chain(disk_gauges.into_iter().flatten()) {
        let metric: Gauge<f64, std::sync::atomic::AtomicU64> = Gauge::default();
        metric.set(value);
        registry.register(name, help, metric);
    }
}

/// Each owner's usage, limits and refusals, labelled by owner (and limit): none without an
/// owners file.
fn register_owners(registry: &mut Registry, standings: Vec<OwnerStanding>) {
    if standings.is_empty() {
        return;
    }
    type Labels = Vec<(&'static str, String)>;
    let gauge = || Family::<Labels, Gauge>::default();
    let (running, pending, nodes, limits) = (gauge(), gauge(), gauge(), gauge());
    let refusals = Family::<Labels, Counter>::default();
    for owner in standings {
        let name = || vec![("owner", owner.name.to_string())];
        let clamp = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        running
            .get_or_create(&name())
            .set(clamp(owner.usage.running_batches));
        pending
            .get_or_create(&name())
            .set(clamp(owner.usage.pending_boards));
        nodes
            .get_or_create(&name())
            .set(clamp(owner.usage.nodes_today));
        let named_limits = [
            ("max_running_batches", owner.limits.running_batches),
            ("max_pending_boards", owner.limits.pending_boards),
            ("max_nodes_per_day", owner.limits.nodes_per_day),
        ];
        for (limit, value) in named_limits {
            let labels = vec![("owner", owner.name.to_string()), ("limit", limit.into())];
            if let Some(value) = value {
                limits.get_or_create(&labels).set(clamp(value));
            }
            let refused = owner.refusals.get(limit).copied().unwrap_or(0);
            refusals.get_or_create(&labels).inc_by(refused);
        }
    }
    registry.register(
        "owner_running_batches",
        "An owner's batches queued or running",
        running,
    );
    registry.register(
        "owner_pending_boards",
        "An owner's boards not ended, in its batches queued or running",
        pending,
    );
    registry.register(
        "owner_nodes_today",
        "Nodes searched for an owner's batches since midnight UTC",
        nodes,
    );
    registry.register(
        "owner_limit",
        "An owner's limit, as the owners file sets it (absent: none)",
        limits,
    );
    registry.register(
        "owner_refusals",
        "Submissions an owner's limit refused since the coordinator started",
        refusals,
    );
}

/// Completion notices: delivered, failed attempts and dropped since the start, and waiting.
fn register_notices(registry: &mut Registry, state: &WebState) {
    use std::sync::atomic::Ordering::Relaxed;
    let counts = &state.notice_counts;
    let counters = [
        (
            "notices_delivered",
            "Completion notices a receiver took (2xx)",
            counts.delivered.load(Relaxed),
        ),
        (
            "notices_failed_attempts",
            "Attempts to deliver a completion notice that failed (to be tried again)",
            counts.failed_attempts.load(Relaxed),
        ),
        (
            "notices_dropped",
            "Completion notices given up after every attempt failed",
            counts.dropped.load(Relaxed),
        ),
    ];
    for (name, help, value) in counters {
        let metric: Counter = Counter::default();
        metric.inc_by(value);
        registry.register(name, help, metric);
    }
    let pending = state
        .service
        .store()
        .pending_notices()
        .map_or(0, |n| n.len());
    let metric: Gauge = Gauge::default();
    metric.set(i64::try_from(pending).unwrap_or(i64::MAX));
    registry.register(
        "notices_pending",
        "Completion notices waiting to be delivered",
        metric,
    );
}

/// A scrape's text: the registry, then the process's own `process_*` metrics.
fn exposition(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    encode_registry(&mut text, registry)?;
    text.push_str(&tilesolve::process_stats::ProcessStats::openmetrics_now());
    encode_eof(&mut text)?;
    Ok(text)
}

/// The content type of `/metrics`.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
