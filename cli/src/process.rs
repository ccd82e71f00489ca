//! What every long-running command shares: the async runtime, the stop signal and the default
//! thread count.

/// Every core, when a command is not told how many threads to use.
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Completes at the first Ctrl-C or SIGTERM (what an orchestrator or systemd sends to stop a
/// process), logging which.
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot watch for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    let signal = tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupt",
        _ = terminate => "SIGTERM",
    };
    tracing::info!(signal, "stopping");
}
