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

/// Keeps this process on small pages: the allocator asks for transparent huge pages on its
/// arena, and a coordinator, whose heap is small objects scattered as sled and the scheduler
/// grow it, then had the kernel zero a whole 2 MiB page for each few it touched: a third of a
/// fresh coordinator's CPU on a batch of 10,000 easy boards (BENCHMARKS.md). A client's
/// buffers came and went the same way: `submit --wait` spent 0.34 s of system time zeroing
/// them over that batch. Every command but those that search keeps to small pages (`main`);
/// workers, `solve`, `bench`, `pdb` and the embedded `batch` keep huge pages: their pattern
/// tables, looked up at random, are what they are for.
#[cfg(target_os = "linux")]
pub fn small_pages_only() {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes no memory; a kernel
    // without it returns an error, which leaves the process as it was.
    let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0;
    if refused {
        tracing::debug!("the kernel kept transparent huge pages on");
    }
}

/// Elsewhere pages are left as the system chooses.
#[cfg(not(target_os = "linux"))]
pub fn small_pages_only() {}
