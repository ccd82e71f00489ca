//! Traces over OTLP, end to end: a stand-in OpenTelemetry collector (the OTLP gRPC trace
//! service, on 127.0.0.1) receives the spans of a coordinator, a worker and `submit`, all
//! started with `--otlp-endpoint`, and one batch is one trace: the client's root span, the
//! coordinator's span for the SubmitBatch call under it, and the worker's task spans under that.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{known_boards, run_with_env, wait_until, worker, write_batch, Coordinator};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;

/// A span as the collector received it.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    name: String,
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
}

#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Vec<Received>>>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = self.0.lock().unwrap();
        for resource_spans in request.into_inner().resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                    Value::StringValue(name) => Some(name.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                received.push(Received {
                    service: service.clone(),
                    name: span.name,
                    trace: span.trace_id,
                    id: span.span_id,
                    parent: span.parent_span_id,
                });
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[test]
fn one_batch_is_one_trace_from_submit_through_the_coordinator_to_the_worker() {
    let collector = Collector::default();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let serving = collector.clone();
    runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(serving))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let dir = tempfile::tempdir().unwrap();
    // Spans leave every 100 ms rather than every 5 s.
    let env = [("OTEL_BSP_SCHEDULE_DELAY", "100")];
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--otlp-endpoint", &endpoint],
        &env,
    );
    let url = server.url();
    let _worker = worker(
        &url,
        &dir.path().join("w1"),
        &["--otlp-endpoint", &endpoint],
    );
    let batch = dir.path().join("batch.txt");
    write_batch(&batch, &known_boards(2), false);
    let (ok, _, stderr) = run_with_env(
        &[
            "submit",
            "--coordinator",
            &url,
            "--heuristic",
            "pdb:5-5-5",
            "--wait",
            "--otlp-endpoint",
            &endpoint,
            batch.to_str().unwrap(),
        ],
        &env,
    );
    assert!(ok, "{stderr}");

    // The client's root span went out when `submit` exited; find its trace.
    let spans = || collector.0.lock().unwrap().clone();
    let root = wait_until("the client's span", Duration::from_secs(30), || {
        spans()
            .into_iter()
            .find(|s| s.service == "tilesolve-submit" && s.name == "tilesolve")
    });
    assert!(
        root.parent.is_empty(),
        "the client's span is the root: {root:?}"
    );
    let (call, tasks) = wait_until(
        "the coordinator's and the worker's spans in the trace",
        Duration::from_secs(30),
        || {
            let traced: Vec<Received> = spans()
                .into_iter()
                .filter(|s| s.trace == root.trace)
                .collect();
            let tasks: Vec<Received> = traced
                .iter()
                .filter(|s| s.service == "tilesolve-worker" && s.name == "task")
                .cloned()
                .collect();
            // The coordinator's span for the call that submitted the batch.
            let call = traced.iter().find(|s| {
                s.service == "tilesolve-coordinator"
                    && s.name == "rpc"
                    && s.parent == root.id
                    && tasks.first().is_some_and(|task| task.parent == s.id)
            })?;
            (!tasks.is_empty()).then(|| (call.clone(), tasks))
        },
    );
    // A batch's tasks hang from the call that submitted it.
    for task in &tasks {
        assert_eq!(task.parent, call.id, "{task:?} under {call:?}");
    }
}

#[test]
fn a_collector_address_without_a_scheme_is_refused_before_anything_runs() {
    let (ok, stdout, stderr) = common::run(&[
        "solve",
        "--otlp-endpoint",
        "collector:4317",
        "1,2,3,4,5,6,7,0,8",
    ]);
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(
            "--otlp-endpoint: 'collector:4317' is not a collector's address: give http://HOST:PORT"
        ),
        "{stderr}"
    );
}
