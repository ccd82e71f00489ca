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

/// A runtime on the calling thread alone, for a worker: its async side (polls, heartbeats,
/// uploads, metrics) is light beside its search threads, and on a multi-threaded runtime every
/// poll hopped between threads (the session, the connection's task, the I/O driver): a worker
/// on 10,000 easy boards switched about 985 times for 5,000 tasks, and 468 on this one, and
/// two such workers beside a coordinator on 2 cores took 499-542 ms of CPU against 506-585 ms
/// (history.md, fifty-seventh session). File reads and repacking go to the blocking pool
/// either way.
pub(crate) fn one_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
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

/// Keeps this process's heap on small pages, and its pattern tables on huge ones where the
/// kernel allows both. A coordinator's heap is small objects scattered as sled and the
/// scheduler grow it: on 2 MiB pages the kernel zeroed a whole page for each few bytes it
/// touched, a third of a fresh coordinator's CPU on a batch of 10,000 easy boards
/// (BENCHMARKS.md); a client's buffers came and went the same way (`submit --wait` spent
/// 0.34 s of system time zeroing them). But the coordinator also looks its tables up (every
/// puzzle's first bound), at random, and on small pages each lookup missed the TLB as well:
/// the estimate was 7.6% of its time on that batch. mimalloc is built without its own
/// huge-page advice (`no_thp`), so only mappings advised here (the tables) ask for 2 MiB pages;
/// what remains is a system whose setting is `always`, which gives them to the heap unasked:
/// - Linux 6.18 on: THP off for this process except where advised (the tables);
/// - before, on such a system: THP off for the whole process, the tables included;
/// - before, on a system set to `madvise` or `never`: nothing to do.
///
/// Every command but those that search calls it (`main`); workers, `solve`, `bench`, `pdb`
/// and the embedded `batch` leave the system's setting as it is.
#[cfg(target_os = "linux")]
pub fn small_pages_only() {
    // PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18); not yet in the libc crate.
    const EXCEPT_ADVISED: libc::c_ulong = 1 << 1;
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes no memory; a kernel
    // without the flag returns an error, which leaves the process as it was.
    let except_advised =
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, EXCEPT_ADVISED, 0, 0) } == 0;
    if except_advised || !system_gives_huge_pages_unasked() {
        return;
    }
    // SAFETY: as above.
    let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0;
    if refused {
        tracing::debug!("the kernel kept transparent huge pages on");
    }
}

/// Whether the system's transparent huge page setting is `always` (an unreadable setting
/// counts as such: the heap is kept small then, as before the tables' exception).
#[cfg(target_os = "linux")]
fn system_gives_huge_pages_unasked() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map_or(true, |setting| setting.contains("[always]"))
}

/// Elsewhere pages are left as the system chooses.
#[cfg(not(target_os = "linux"))]
pub fn small_pages_only() {}
