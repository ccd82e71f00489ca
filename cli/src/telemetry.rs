//! Traces over OTLP, off unless an endpoint is given (`--otlp-endpoint`, or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT`): the process's spans (a client command's, the coordinator's
//! for each call that carries a trace context, the worker's for each task) go to an
//! OpenTelemetry collector over gRPC, and the W3C trace context travels with every call
//! ([`tilesolve::trace_context`]), so one batch is one trace from `submit` through the
//! coordinator to every worker that ran its tasks.
//!
//! The batch exporter sends from a thread of its own; its gRPC channel lives on a small tokio
//! runtime of its own too, so the command's runtime (or its absence) does not matter and a
//! search never waits for the collector. [`Telemetry`]'s drop flushes what is left.

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tilesolve::trace_context::{TraceHooks, TRACEPARENT};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The exporter while the process runs; dropping it flushes and stops it.
pub struct Telemetry {
    provider: SdkTracerProvider,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("warning: sending the last traces: {error}");
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Starts exporting to `endpoint` as `service` (unless `OTEL_SERVICE_NAME` names it), and
/// returns the layer that feeds it tilesolve's spans at info level and above.
pub fn start<S>(
    endpoint: &str,
    service: &str,
) -> anyhow::Result<(Telemetry, impl Layer<S> + Send + Sync)>
where
    S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    if !["http://", "https://"]
        .iter()
        .any(|scheme| endpoint.len() > scheme.len() && endpoint.starts_with(scheme))
    {
        anyhow::bail!(
            "'{endpoint}' is not a collector's address: give http://HOST:PORT, or https://HOST:PORT \
             for TLS (OTLP over gRPC listens on 4317, e.g. http://127.0.0.1:4317)"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("otlp-export")
        .enable_all()
        .build()?;
    let exporter = {
        let _in_runtime = runtime.enter();
        SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()?
    };
    let name = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| service.to_string());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(name).build())
        .build();
    let tracer = provider.tracer("tilesolve");
    tilesolve::trace_context::install(TraceHooks {
        current: current_traceparent,
        adopt: adopt_parent,
    });
    let ours = [
        "tilesolve",
        "tilesolve_cli",
        "tilesolve_coordinator",
        "tilesolve_worker",
    ]
    .into_iter()
    .fold(Targets::new(), |targets, target| {
        targets.with_target(target, tracing::Level::INFO)
    });
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(ours);
    Ok((
        Telemetry {
            provider,
            runtime: Some(runtime),
        },
        layer,
    ))
}

struct Carrier(HashMap<String, String>);

impl Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), value);
    }
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

fn current_traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = Carrier(HashMap::new());
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.0.remove(TRACEPARENT)
}

fn adopt_parent(span: &tracing::Span, traceparent: &str) {
    let carrier = Carrier(HashMap::from([(
        TRACEPARENT.to_string(),
        traceparent.to_string(),
    )]));
    let parent = TraceContextPropagator::new().extract(&carrier);
    if parent.span().span_context().is_valid() {
        // Refused only for a span that has already started children: then it stays a root.
        let _ = span.set_parent(parent);
    }
}

/// Logs to standard error (`RUST_LOG` filters them; by default warnings, and info for the
/// servers), as `human` lines or `json` objects; and, with an endpoint, traces over OTLP.
pub fn install_subscriber(
    log_format: &str,
    server: bool,
    otlp_endpoint: Option<&str>,
    service: &str,
) -> anyhow::Result<Option<Telemetry>> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(if server { "info" } else { "warn" })
    });
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = if log_format == "json" {
        logs.json().with_filter(filter).boxed()
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter)
            .boxed()
    };
    let registry = tracing_subscriber::registry().with(logs);
    match otlp_endpoint.filter(|endpoint| !endpoint.is_empty()) {
        Some(endpoint) => {
            let (telemetry, traces) = start(endpoint, service)?;
            registry.with(traces).init();
            Ok(Some(telemetry))
        }
        None => {
            registry.init();
            Ok(None)
        }
    }
}
