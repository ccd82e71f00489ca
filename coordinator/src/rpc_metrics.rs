//! How long each gRPC call takes, by method and status code, for `/metrics`: seconds from a
//! request's arrival to its response's headers (for a streaming call, to the stream's start),
//! and a count of the calls refused. Measured by an axum middleware on the gRPC routes, so
//! every service (client, worker, health, reflection) is covered without touching their
//! handlers. The code is the `grpc-status` header of a refusal (tonic answers an error with
//! headers only); a call whose headers carry none is counted `Ok`, its status following in
//! the trailers. A worker session's polls and heartbeats are timed each by the session
//! (`Workers/Session/Poll`, `Workers/Session/Heartbeat`).

use std::time::Instant;

use tracing::Instrument;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// The per-method histograms; clones share them.
#[derive(Clone)]
pub struct RpcMetrics {
    seconds: Family<Labels, Histogram, fn() -> Histogram>,
    refused: Family<Labels, Counter>,
}

/// 100 µs to about 26 s, each bucket 4 times the last.
fn buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 4.0, 10))
}

impl Default for RpcMetrics {
    fn default() -> RpcMetrics {
        RpcMetrics {
            seconds: Family::new_with_constructor(buckets),
            refused: Family::default(),
        }
    }
}

impl RpcMetrics {
    /// Adds the histograms to a scrape's registry (as `tilesolve_rpc_seconds`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rpc_seconds",
            "Seconds from a gRPC request to its response headers, by method and status code",
            self.seconds.clone(),
        );
        registry.register(
            "rpc_refused",
            "gRPC calls answered with an error status, by method and code",
            self.refused.clone(),
        );
    }
}

impl RpcMetrics {
    /// Files one answer under `method`: the middleware's for a call, the worker session's for
    /// each of its messages.
    pub fn observe(&self, method: &str, code: tonic::Code, seconds: f64) {
        let labels = vec![
            ("method", method.to_string()),
            ("code", format!("{code:?}")),
        ];
        self.seconds.get_or_create(&labels).observe(seconds);
        if code != tonic::Code::Ok {
            self.refused.get_or_create(&labels).inc();
        }
    }
}

/// The middleware: times the call and files it under its method (the request path, e.g.
/// `/tilesolve.v1.Workers/Poll`; only routed gRPC paths reach it, so the labels are few).
pub async fn record(State(metrics): State<RpcMetrics>, request: Request, next: Next) -> Response {
    let method = request.uri().path().to_string();
    let started = Instant::now();
    // A call that carries a trace context is served in a span of that trace.
    let traced = tilesolve::trace_context::enabled()
        .then(|| request.headers().get(tilesolve::trace_context::TRACEPARENT))
        .flatten()
        .and_then(|value| value.to_str().ok())
        .map(|traceparent| {
            let span = tracing::info_span!("rpc", method = %method);
            tilesolve::trace_context::adopt(&span, traceparent);
            span
        });
    let response = match traced {
        Some(span) => next.run(request).instrument(span).await,
        None => next.run(request).await,
    };
    let code = response
        .headers()
        .get("grpc-status")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<i32>().ok())
        .map_or(tonic::Code::Ok, tonic::Code::from_i32);
    metrics.observe(&method, code, started.elapsed().as_secs_f64());
    response
}
