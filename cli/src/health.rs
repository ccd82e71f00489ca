//! `tilesolve health`: asks a coordinator or a worker's health endpoint (gRPC health) whether a
//! service is serving, for exec probes, systemd and scripts that wait for a deployment.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tilesolve::connect::ConnectOptions;

use crate::calls::CallError;
use crate::output::outln;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

#[derive(Args)]
pub struct HealthArgs {
    /// The address to ask: a coordinator, or a worker's --health-listen.
    #[arg(long, default_value = crate::client::DEFAULT_COORDINATOR)]
    address: String,
    /// The service to ask about: "" (the default) is the process as a whole;
    /// "tilesolve.worker.ready" is a worker registered with its coordinator.
    #[arg(long, default_value = "")]
    service: String,
    /// PEM certificate of the authority that signed the coordinator's certificate.
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<std::path::PathBuf>,
    /// Seconds to wait for an answer.
    #[arg(long, default_value_t = 5.0)]
    timeout: f64,
}

/// Prints the status; exits 0 only when it is SERVING.
pub fn run(args: HealthArgs) -> anyhow::Result<bool> {
    let options = ConnectOptions {
        ca_pem: args
            .tls_ca
            .as_ref()
            .map(|path| std::fs::read(path).with_context(|| format!("reading {}", path.display())))
            .transpose()?,
        ..ConnectOptions::new(args.address.clone())
    };
    let timeout = Duration::from_secs_f64(args.timeout.max(0.1));
    crate::process::runtime()?.block_on(async {
        let ask = async {
            let mut client = HealthClient::new(options.connect().await.map_err(CallError::from)?);
            let answer = client
                .check(HealthCheckRequest {
                    service: args.service.clone(),
                })
                .await
                .map_err(CallError::from)
                .with_context(|| format!("asking {} about {:?}", args.address, args.service))?;
            anyhow::Ok(answer.into_inner().status())
        };
        let status = tokio::time::timeout(timeout, ask).await.map_err(|_| {
            CallError::Lost(format!(
                "{} did not answer within {timeout:?}",
                args.address
            ))
        })??;
        outln!("{}", status.as_str_name())?;
        Ok(status == ServingStatus::Serving)
    })
}
