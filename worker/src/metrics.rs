//! The worker's Prometheus metrics, served at `/metrics` on an address of its own
//! (`worker --metrics-listen`): nodes searched and their rate, tasks done and failed, task
//! seconds as a histogram, the pattern table bytes held (and in 2 MiB pages), the build, and the process's own
//! `process_*`. The search threads only add to atomics; a scrape encodes them.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use tilesolve::pdb::TablePages;
use tilesolve::proto::v1 as pb;
use tokio::net::TcpListener;

/// The worker's metrics; clones share them. Counted whether or not they are served.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

struct Inner {
    registry: Registry,
    nodes: Counter,
    nodes_per_second: Gauge<f64, AtomicU64>,
    tasks_done: Counter,
    tasks_failed: Counter,
    tasks_cancelled: Counter,
    task_seconds: Histogram,
    table_bytes: Gauge,
    table_bytes_in_huge_pages: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// How often the nodes-per-second gauge is worked out (from tasks finished in the interval).
const RATE_INTERVAL: Duration = Duration::from_secs(5);

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("tilesolve");
        let build_info = Family::<Vec<(String, String)>, Gauge>::default();
        build_info
            .get_or_create(&vec![(
                "version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            )])
            .set(1);
        registry.register("build_info", "The tilesolve version running", build_info);
        let inner = Inner {
            registry: Registry::default(),
            nodes: Counter::default(),
            nodes_per_second: Gauge::default(),
            tasks_done: Counter::default(),
            tasks_failed: Counter::default(),
            tasks_cancelled: Counter::default(),
            // 1 ms to about 4.7 hours, each bucket 4 times the last.
            task_seconds: Histogram::new(exponential_buckets(0.001, 4.0, 12)),
            table_bytes: Gauge::default(),
            table_bytes_in_huge_pages: Gauge::default(),
        };
        let worker = registry.sub_registry_with_prefix("worker");
        worker.register(
            "nodes_searched",
            "Expanded nodes of the tasks this worker finished",
            inner.nodes.clone(),
        );
        worker.register(
            "nodes_per_second",
            "Expanded nodes per second over the last few seconds (counted as tasks finish)",
            inner.nodes_per_second.clone(),
        );
        worker.register(
            "tasks_done",
            "Tasks finished with a result",
            inner.tasks_done.clone(),
        );
        worker.register(
            "tasks_failed",
            "Tasks that ended in an error (a bad task, a table that could not be had)",
            inner.tasks_failed.clone(),
        );
        worker.register(
            "tasks_cancelled",
            "Tasks the coordinator withdrew while they ran (their puzzle was solved): routine",
            inner.tasks_cancelled.clone(),
        );
        worker.register(
            "task_seconds",
            "Search seconds of each finished task",
            inner.task_seconds.clone(),
        );
        worker.register(
            "table_bytes",
            "Bytes of pattern tables held in memory",
            inner.table_bytes.clone(),
        );
        worker.register(
            "table_bytes_in_huge_pages",
            "Bytes of those tables mapped in 2 MiB pages (less than half: searches run slower than they could)",
            inner.table_bytes_in_huge_pages.clone(),
        );
        Metrics(Arc::new(Inner { registry, ..inner }))
    }
}

impl Metrics {
    /// Counts a finished task's result; an error of a task the coordinator `cancelled` is
    /// counted as cancelled, not failed.
    pub(crate) fn task_finished(&self, result: &pb::TaskResult, cancelled: bool) {
        let inner = &self.0;
        inner.nodes.inc_by(result.nodes);
        inner.task_seconds.observe(result.seconds);
        match result.outcome {
            Some(pb::task_result::Outcome::Error(_)) if cancelled => inner.tasks_cancelled.inc(),
            Some(pb::task_result::Outcome::Error(_)) => inner.tasks_failed.inc(),
            _ => inner.tasks_done.inc(),
        };
    }

    /// Counts pattern tables loaded for a new heuristic; returns the bytes the worker holds.
    pub(crate) fn tables_loaded(&self, bytes: u64) -> u64 {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        let held = self.0.table_bytes.inc_by(bytes).saturating_add(bytes);
        u64::try_from(held).unwrap_or(0)
    }

    /// How much of those tables is in 2 MiB pages.
    pub(crate) fn tables_in_huge_pages(&self, pages: TablePages) {
        self.0
            .table_bytes_in_huge_pages
            .set(i64::try_from(pages.huge_bytes).unwrap_or(i64::MAX));
    }

    /// The metrics in the OpenMetrics text format, the process's own `process_*` among them.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode_registry(&mut text, &self.0.registry);
        text.push_str(&tilesolve::process_stats::ProcessStats::openmetrics_now());
        let _ = encode_eof(&mut text);
        text
    }

    /// Serves `/metrics` on `listener` for the rest of the process's life, and keeps the
    /// nodes-per-second gauge up to date.
    pub async fn serve(&self, listener: TcpListener) {
        let address = listener
            .local_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        let metrics = self.clone();
        let app = Router::new().route(
            "/metrics",
            get(move || {
                let text = metrics.encode();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                        .into_response()
                }
            }),
        );
        let serving = address.clone();
        tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(address = %serving, %error, "worker metrics endpoint stopped");
            }
        });
        let inner = self.0.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RATE_INTERVAL);
            let (mut last_nodes, mut last_time) = (inner.nodes.get(), Instant::now());
            loop {
                tick.tick().await;
                let (nodes, now) = (inner.nodes.get(), Instant::now());
                let seconds = now.duration_since(last_time).as_secs_f64().max(1e-3);
                inner
                    .nodes_per_second
                    .set(nodes.saturating_sub(last_nodes) as f64 / seconds);
                (last_nodes, last_time) = (nodes, now);
            }
        });
        tracing::info!(%address, "worker metrics serving at /metrics");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(text: &str, name: &str) -> u64 {
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{name} ")))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    }

    #[test]
    fn a_withdrawn_task_counts_as_cancelled_not_failed() {
        let metrics = Metrics::default();
        let error = pb::TaskResult {
            outcome: Some(pb::task_result::Outcome::Error("stopped".into())),
            ..pb::TaskResult::default()
        };
        metrics.task_finished(&error, true);
        metrics.task_finished(&pb::TaskResult::default(), false);
        let text = metrics.encode();
        assert_eq!(counted(&text, "tilesolve_worker_tasks_cancelled_total"), 1);
        assert_eq!(counted(&text, "tilesolve_worker_tasks_failed_total"), 0);
        metrics.task_finished(&error, false);
        assert_eq!(
            counted(&metrics.encode(), "tilesolve_worker_tasks_failed_total"),
            1
        );
    }
}
