//! Obtains the pattern tables that waiting batches need, in the background, so a submission is
//! acknowledged as soon as it is on disk. A missing table file comes first from a connected
//! worker that stated it holds it (asked in its next Poll or Heartbeat response, sent with
//! UploadPdb, checked against the checksum the worker stated and the file's own checksum before
//! it is used); else it is built here, if `serve` allows it; else its batches wait for such a
//! worker (a new batch nobody can supply is refused at submission, see `scheduler::tables`).
//! Files on disk are loaded on the blocking pool, never under the scheduler's lock; the
//! resulting solvers are installed and the batches that waited for them start.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cycle::Coordinator;
use crate::scheduler::SchedulerAccess;
use std::time::{Duration, Instant};

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::file::PatternSpec;
use tilesolve::pdb::{PdbError, PdbEvent, PdbStore};
use tilesolve::{Board, Solver};

use crate::scheduler::{SchedulerError, SolverKey, WorkerId};

/// A fetch that moves no byte for this long (the worker never started it, or stalled) is given
/// up, and the file is sought elsewhere.
const FETCH_STALL: Duration = Duration::from_secs(30);
/// How often the supply looks again without being woken (new workers, stalled fetches).
const STEP: Duration = Duration::from_millis(500);

/// A file asked of a worker.
struct Fetch {
    worker: WorkerId,
    /// What the worker stated when registering: the file it sends must match.
    checksum: u64,
    spec: PatternSpec,
    /// Whether a Poll or Heartbeat response has carried the request.
    told: bool,
    /// An upload of it is under way: a second one at once is refused (both would write the
    /// same partial file).
    receiving: bool,
    last_progress: Instant,
    received: u64,
    total: u64,
}

/// What the blocking pool is doing for a solver.
enum Work {
    Loading,
    Building { done: f64 },
}

#[derive(Default)]
struct SupplyState {
    fetches: HashMap<String, Fetch>,
    /// Workers a file's fetch failed from: not asked for it again.
    failed_sources: HashMap<String, HashSet<WorkerId>>,
    working: HashMap<SolverKey, Work>,
    /// Damaged files set aside per solver: obtained again (fetched or built) up to
    /// [`MAX_SET_ASIDE`] times before its batches' items fail.
    set_aside: HashMap<SolverKey, u32>,
}

/// Times a solver's damaged table files are set aside and obtained again before giving up (a
/// disk that damages every copy).
const MAX_SET_ASIDE: u32 = 3;

/// Why a solver could not be made.
enum Unmade {
    /// A table file was damaged and has been set aside: obtain it again.
    SetAside(String),
    Failed(String),
}

/// Shared by the service (uploads, requests carried in responses) and the background loop.
#[derive(Clone)]
pub struct TableSupply {
    /// The scheduler, through its lock cycle.
    core: Coordinator,
    pdbs: PdbStore,
    table_budget: u64,
    state: Arc<Mutex<SupplyState>>,
    /// Wakes the loop: a batch waits, a fetch ended.
    wake: Arc<tokio::sync::Notify>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the supply shows of a fetch in progress.
fn fetching(name: &str, fetch: &Fetch) -> String {
    if fetch.total == 0 {
        return format!("fetching {name} from worker {}", fetch.worker);
    }
    format!(
        "fetching {name} from worker {}: {} of {} MB",
        fetch.worker,
        megabytes(fetch.received),
        megabytes(fetch.total)
    )
}

fn megabytes(bytes: u64) -> String {
    format!("{:.0}", bytes as f64 / 1e6)
}

impl TableSupply {
    pub(crate) fn new(core: Coordinator, pdbs: PdbStore) -> TableSupply {
        let table_budget = core.read(|scheduler| scheduler.tables().budget());
        TableSupply {
            core,
            pdbs,
            table_budget,
            state: Arc::new(Mutex::new(SupplyState::default())),
            wake: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Loads, in the background, the solver of the default heuristic for the blank-last goal of
    /// every size whose tables are all in the data directory already, so that the first batch
    /// needing them starts at once instead of waiting while they are mapped and checked.
    /// Fetches and builds nothing: tables that are not here are still only obtained for a batch.
    pub fn preload_present(&self) {
        for side in 3..=5 {
            let key: SolverKey = (Board::blank_last(side), HeuristicChoice::Default);
            let present = self.core.read(|scheduler| {
                let tables = scheduler.tables();
                !tables.has_solver(&key)
                    && tables
                        .missing_tables(&key)
                        .is_ok_and(|missing| missing.is_empty())
            });
            if present && !locked(&self.state).working.contains_key(&key) {
                locked(&self.state).working.insert(key, Work::Loading);
                self.spawn_work(key, false);
            }
        }
    }

    /// Looks at the waiting batches now rather than at the next step.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Runs until aborted: one step per wake-up or [`STEP`].
    pub async fn run(self) {
        loop {
            if let Err(error) = self.step() {
                tracing::error!(%error, "pattern table supply");
            }
            let _ = tokio::time::timeout(STEP, self.wake.notified()).await;
        }
    }

    /// The solvers waiting batches need, each with the tables it lacks and which workers hold
    /// each; and whether this coordinator may build tables.
    #[allow(clippy::type_complexity)]
    fn wanted(
        &self,
    ) -> Result<
        (
            Vec<(SolverKey, Vec<PatternSpec>, Vec<Vec<(WorkerId, u64)>>)>,
            bool,
        ),
        SchedulerError,
    > {
        self.core.read(|scheduler| {
            let tables = scheduler.tables();
            let mut keys: Vec<SolverKey> = Vec::new();
            for need in tables.table_needs() {
                for key in need.keys {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
            }
            let mut wanted = Vec::new();
            for key in keys {
                let missing = tables.missing_tables(&key)?;
                let holders: Vec<Vec<(WorkerId, u64)>> = missing
                    .iter()
                    .map(|spec| scheduler.table_holders(&spec.file_name()))
                    .collect();
                wanted.push((key, missing, holders));
            }
            Ok((wanted, tables.may_build()))
        })
    }

    /// One look at every waiting batch's solvers: start what can start, fetch, build or load.
    fn step(&self) -> Result<(), SchedulerError> {
        let (keys, may_build) = self.wanted()?;
        let mut descriptions = HashMap::new();
        let mut state = locked(&self.state);
        let now = Instant::now();
        forget_stalled(&mut state, now);
        let mut asked = false;
        for (key, missing, holders) in keys {
            if let Some(work) = state.working.get(&key) {
                let text = match work {
                    Work::Loading => "loading pattern tables".to_string(),
                    Work::Building { done } => {
                        format!("building pattern tables: {:.0}%", done * 100.0)
                    }
                };
                descriptions.insert(key, text);
                continue;
            }
            if missing.is_empty() {
                state.working.insert(key, Work::Loading);
                descriptions.insert(key, "loading pattern tables".into());
                self.spawn_work(key, false);
                continue;
            }
            let mut texts = Vec::new();
            let mut unobtainable = None;
            for (spec, holders) in missing.into_iter().zip(holders) {
                let name = spec.file_name();
                if let Some(fetch) = state.fetches.get(&name) {
                    texts.push(fetching(&name, fetch));
                    continue;
                }
                let failed = state.failed_sources.get(&name);
                let sources: Vec<(WorkerId, u64)> = holders
                    .into_iter()
                    .filter(|(worker, _)| !failed.is_some_and(|f| f.contains(worker)))
                    .collect();
                // Workers that disagree about a file's contents: trust none of them with it.
                let agreed = sources.windows(2).all(|pair| pair[0].1 == pair[1].1);
                match sources.first() {
                    Some(&(worker, checksum)) if agreed => {
                        tracing::info!(file = %name, worker, "asking a worker for a pattern table");
                        texts.push(format!("fetching {name} from worker {worker}"));
                        state.fetches.insert(
                            name,
                            Fetch {
                                worker,
                                checksum,
                                spec,
                                told: false,
                                receiving: false,
                                last_progress: now,
                                received: 0,
                                total: 0,
                            },
                        );
                        asked = true;
                    }
                    _ => unobtainable = Some(name),
                }
            }
            match unobtainable {
                Some(_) if may_build => {
                    state.working.insert(key, Work::Building { done: 0.0 });
                    descriptions.insert(key, "building pattern tables: 0%".into());
                    self.spawn_work(key, true);
                }
                Some(name) => {
                    texts.push(format!(
                        "waiting for a worker that holds {name} (this coordinator may not build tables)"
                    ));
                    descriptions.insert(key, texts.join("; "));
                }
                None => {
                    descriptions.insert(key, texts.join("; "));
                }
            }
        }
        drop(state);
        if let Err(error) = self
            .core
            .clone()
            .with(|scheduler| scheduler.install_solvers(Vec::new(), Some(descriptions)))
        {
            tracing::error!(%error, "showing what the table supply does");
        }
        if asked {
            // Idle workers sit in a long poll: end it so they hear the request.
            self.core.tasks_queued.notify_waiters();
        }
        Ok(())
    }

    /// Loads (or, with `build`, builds what is missing and loads) the tables of `key` on the
    /// blocking pool, then installs its solver and starts the batches that waited for it.
    fn spawn_work(&self, key: SolverKey, build: bool) {
        let supply = self.clone();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let outcome = supply.make_solver(&key, build);
            let seconds = started.elapsed().as_secs_f64();
            locked(&supply.state).working.remove(&key);
            let (goal, heuristic) = (&key.0, &key.1);
            match outcome {
                Ok(solver) => {
                    tracing::info!(%heuristic, shape = %goal.shape(), seconds, built = build, "pattern tables ready");
                    supply.install(key, solver);
                }
                Err(Unmade::SetAside(reason)) => {
                    let times = {
                        let mut state = locked(&supply.state);
                        let times = state.set_aside.entry(key).or_default();
                        *times += 1;
                        *times
                    };
                    if times > MAX_SET_ASIDE {
                        tracing::error!(%heuristic, shape = %goal.shape(), %reason, times, "pattern tables damaged again and again");
                        supply.give_up(&key, &reason);
                    } else {
                        // The next step finds the file missing: fetched from a worker or built.
                        tracing::warn!(%heuristic, shape = %goal.shape(), %reason, "a damaged pattern table was set aside; obtaining it again");
                    }
                }
                Err(Unmade::Failed(reason)) => {
                    tracing::error!(%heuristic, shape = %goal.shape(), %reason, "pattern tables could not be had");
                    supply.give_up(&key, &reason);
                }
            }
            supply.wake();
        });
    }

    fn make_solver(&self, key: &SolverKey, build: bool) -> Result<Solver, Unmade> {
        let choice = key.1.resolve(&key.0, self.table_budget);
        let pdbs = if build {
            self.pdbs.clone()
        } else {
            self.pdbs.without_builds()
        };
        let progress = |event: PdbEvent<'_>| match event {
            PdbEvent::Progress(progress) if progress.placements > 0 => {
                if let Some(Work::Building { done }) = locked(&self.state).working.get_mut(key) {
                    *done = progress.reached as f64 / progress.placements as f64;
                }
            }
            PdbEvent::Building {
                path,
                estimated_seconds,
                ..
            } => {
                tracing::info!(file = %path.display(), estimated_seconds, "building a pattern table no worker could send")
            }
            PdbEvent::Built { path, seconds } => {
                tracing::info!(file = %path.display(), seconds, "built pattern table")
            }
            PdbEvent::Refused { error } => {
                tracing::warn!(%error, "refused a pattern table file")
            }
            PdbEvent::Packed { path, seconds } => {
                tracing::info!(file = %path.display(), seconds, "packed a pattern table to half a byte an entry")
            }
            PdbEvent::Loaded { .. } | PdbEvent::Progress(_) | PdbEvent::Packing { .. } => {}
        };
        let heuristic = choice
            .build(&key.0, self.table_budget, &pdbs, &progress)
            .map_err(|error| match &error {
                // A file that fails its checksum or says it is another table: moved aside (kept
                // for a look), so the table is fetched from a worker or built again.
                PdbError::Corrupt { path, .. } | PdbError::Mismatch { path, .. } => {
                    let mut aside = path.clone().into_os_string();
                    aside.push(".damaged");
                    match std::fs::rename(path, &aside) {
                        Ok(()) => Unmade::SetAside(format!(
                            "{error} (moved to {})",
                            std::path::Path::new(&aside).display()
                        )),
                        Err(rename) => {
                            Unmade::Failed(format!("{error}; setting it aside: {rename}"))
                        }
                    }
                }
                _ => Unmade::Failed(error.to_string()),
            })?;
        Ok(Solver::with_heuristic(key.0, heuristic, choice.to_string()))
    }

    fn install(&self, key: SolverKey, solver: Solver) {
        let started = self
            .core
            .clone()
            .with(|scheduler| scheduler.install_solvers(vec![(key, solver)], None));
        match started {
            Ok(batches) if !batches.is_empty() => {
                tracing::info!(?batches, "batches waiting for pattern tables started");
            }
            Ok(_) => {}
            Err(error) => tracing::error!(%error, "starting batches that waited for tables"),
        }
    }

    /// Fails the items that waited for `key`: its tables could not be had.
    fn give_up(&self, key: &SolverKey, reason: &str) {
        let reason = format!("its pattern tables could not be obtained: {reason}");
        // The cycle flushes what failed before it returns.
        let failed = self
            .core
            .clone()
            .with(|scheduler| scheduler.fail_waiting(key, &reason));
        if let Err(error) = failed {
            tracing::error!(%error, "failing items whose tables could not be had");
        }
    }

    /// Whether `worker` is asked to send a file it has not been told of yet.
    pub fn has_requests_for(&self, worker: WorkerId) -> bool {
        locked(&self.state)
            .fetches
            .values()
            .any(|fetch| fetch.worker == worker && !fetch.told)
    }

    /// The files `worker` is asked to send and has not been told of yet.
    pub fn requests_for(&self, worker: WorkerId) -> Vec<String> {
        let mut state = locked(&self.state);
        let now = Instant::now();
        state
            .fetches
            .iter_mut()
            .filter(|(_, fetch)| fetch.worker == worker && !fetch.told)
            .map(|(name, fetch)| {
                fetch.told = true;
                fetch.last_progress = now;
                name.clone()
            })
            .collect()
    }

    /// Starts receiving `name` from `worker`: what the file must be (its spec and the checksum
    /// the worker stated). None: nobody asked that worker for that file, or it is already
    /// sending it.
    pub fn start_upload(&self, worker: WorkerId, name: &str) -> Option<(PatternSpec, u64)> {
        let mut state = locked(&self.state);
        let fetch = state
            .fetches
            .get_mut(name)
            .filter(|fetch| fetch.worker == worker && !fetch.receiving)?;
        fetch.receiving = true;
        Some((fetch.spec.clone(), fetch.checksum))
    }

    /// Bytes of `name` received so far from `worker`.
    pub fn received(&self, worker: WorkerId, name: &str, received: u64, total: u64) {
        if let Some(fetch) = locked(&self.state)
            .fetches
            .get_mut(name)
            .filter(|fetch| fetch.worker == worker)
        {
            fetch.received = received;
            fetch.total = total;
            fetch.last_progress = Instant::now();
        }
    }

    /// An upload ended: the file is in place (Ok), or it failed and is sought elsewhere.
    pub fn fetched(&self, worker: WorkerId, name: &str, outcome: Result<u64, String>) {
        let mut state = locked(&self.state);
        if state
            .fetches
            .get(name)
            .is_some_and(|fetch| fetch.worker == worker)
        {
            state.fetches.remove(name);
        }
        match outcome {
            Ok(bytes) => {
                tracing::info!(file = %name, worker, bytes, "pattern table received from a worker")
            }
            Err(reason) => {
                tracing::warn!(file = %name, worker, %reason, "pattern table upload refused");
                state
                    .failed_sources
                    .entry(name.to_string())
                    .or_default()
                    .insert(worker);
            }
        }
        drop(state);
        self.wake();
    }
}

/// Gives up fetches that made no progress for [`FETCH_STALL`]: their worker is not asked for
/// that table again.
fn forget_stalled(state: &mut SupplyState, now: Instant) {
    let stalled: Vec<String> = state
        .fetches
        .iter()
        .filter(|(_, fetch)| now.duration_since(fetch.last_progress) > FETCH_STALL)
        .map(|(name, _)| name.clone())
        .collect();
    for name in stalled {
        if let Some(fetch) = state.fetches.remove(&name) {
            tracing::warn!(file = %name, worker = fetch.worker, "pattern table fetch stalled; looking elsewhere");
            state
                .failed_sources
                .entry(name)
                .or_default()
                .insert(fetch.worker);
        }
    }
}
