//! The worker's probe endpoint: gRPC health on a port of its own, for orchestrators. The
//! overall status (service "") is SERVING while the process runs, so a liveness probe restarts
//! only a worker that stopped answering; [`READY`] is SERVING only while the worker is
//! registered with a coordinator, so a readiness probe (and a rolling update waiting on it)
//! sees a worker that can actually take tasks.

use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

/// The health service name that is SERVING while the worker is registered.
pub const READY: &str = "tilesolve.worker.ready";

/// Where the worker reports whether it is registered: nowhere, or a health endpoint.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Option<HealthReporter>);

impl Readiness {
    /// Serves gRPC health on `listener` for the rest of the process's life (its own task, so a
    /// busy worker still answers probes); the worker starts not ready.
    pub async fn serve(listener: TcpListener) -> Readiness {
        let (reporter, service) = tonic_health::server::health_reporter();
        reporter
            .set_service_status("", ServingStatus::Serving)
            .await;
        reporter
            .set_service_status(READY, ServingStatus::NotServing)
            .await;
        let address = listener.local_addr().ok();
        tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(TcpIncoming::from(listener))
                .await;
            if let Err(error) = served {
                tracing::error!(?address, %error, "worker health endpoint stopped");
            }
        });
        tracing::info!(
            ?address,
            ready_service = READY,
            "worker health endpoint serving"
        );
        Readiness(Some(reporter))
    }

    pub(crate) async fn set(&self, ready: bool) {
        if let Some(reporter) = &self.0 {
            let status = match ready {
                true => ServingStatus::Serving,
                false => ServingStatus::NotServing,
            };
            reporter.set_service_status(READY, status).await;
        }
    }
}
