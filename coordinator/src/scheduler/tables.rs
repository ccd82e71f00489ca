//! Pattern tables from the scheduler's side: the solvers it has, the batches that wait for
//! tables it has not (stored and acknowledged, but not started), and what the supply is doing
//! for them. Nothing here fetches or builds a preset's table: `table_supply` does that outside
//! the lock and hands back solvers ([`Scheduler::install_solvers`](super::Scheduler::install_solvers)),
//! so a submission never waits for a table and heartbeats never wait behind a load. A leaf: it
//! calls no other part (the worker registry is only read, to see who holds a file).

use std::collections::{BTreeMap, HashMap, HashSet};

use rustc_hash::FxHashMap;

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::file::PatternSpec;
use tilesolve::pdb::{PdbEvent, PdbStore};
use tilesolve::{Goal, Solver};

use super::intake;
use super::types::{SchedulerError, SolverKey};
use super::workers::Workers;
use tilesolve::proto::MAX_BATCH_LINES;

/// A batch on disk whose items need tables the scheduler has not loaded yet.
struct WaitingBatch {
    /// The solvers it waits for.
    keys: HashSet<SolverKey>,
    /// Its items not started, for the capacity limit.
    items: usize,
}

/// What a waiting batch needs, for the supply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableNeed {
    pub batch: u64,
    pub keys: Vec<SolverKey>,
}

/// The solvers a batch's items need, sorted: those that cannot be made (with why: their
/// items fail) and those missing (their items wait). The rest are ready.
#[derive(Default)]
pub(super) struct Sorted {
    pub(super) unusable: HashMap<SolverKey, String>,
    pub(super) missing: HashSet<SolverKey>,
}

/// The solvers and the batches waiting for tables.
pub struct Tables {
    pdbs: PdbStore,
    /// Bytes the coordinator's tables may take (see [`super::SchedulerConfig::table_budget`]).
    budget: u64,
    /// Whether the coordinator may build the tables nobody can send it.
    may_build: bool,
    solvers: FxHashMap<SolverKey, Solver>,
    /// Batches stored and acknowledged whose tables are still being obtained.
    waiting: BTreeMap<u64, WaitingBatch>,
    /// What the table supply is doing for each solver waiting batches need.
    preparing: HashMap<SolverKey, String>,
}

impl Tables {
    pub(super) fn new(pdbs: PdbStore, budget: u64, may_build: bool) -> Tables {
        Tables {
            pdbs,
            budget,
            may_build,
            solvers: FxHashMap::default(),
            waiting: BTreeMap::new(),
            preparing: HashMap::new(),
        }
    }

    /// Builds the pattern databases a batch needs that are missing from `pdbs`, where the
    /// caller shows the progress: the embedded `tilesolve batch` does this before its
    /// coordinator starts. A batch `submit` would refuse builds nothing.
    pub fn prepare(
        pdbs: &PdbStore,
        lines: &[String],
        choice: HeuristicChoice,
        goal: Goal,
        table_budget: u64,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<(), SchedulerError> {
        // A batch `submit` refuses (too long) needs nothing built.
        if lines.len() > MAX_BATCH_LINES {
            return Ok(());
        }
        for shape in intake::shapes(lines, goal) {
            let goal = goal.for_shape(shape);
            let resolved = choice.resolve(&goal, table_budget);
            // A preset for another size fails those items at submission, naming why.
            if resolved.preset().is_some_and(|preset| !preset.fits(shape)) {
                continue;
            }
            resolved
                .build(&goal, table_budget, pdbs, events)
                .map_err(|e| SchedulerError::Pdb(e.to_string()))?;
        }
        Ok(())
    }

    /// Bytes this coordinator's pattern tables may take.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Whether this coordinator may build the tables nobody can send it.
    pub fn may_build(&self) -> bool {
        self.may_build
    }

    /// The heuristic `key` names, `default` resolved within the coordinator's table budget.
    fn resolved(&self, key: &SolverKey) -> HeuristicChoice {
        key.1.resolve(&key.0, self.budget)
    }

    /// Why no solver can be made for `key`: a named preset for another board size. Its items
    /// fail with this reason; the rest of their batch goes on.
    fn unusable(&self, key: &SolverKey) -> Option<String> {
        self.resolved(key)
            .preset()
            .and_then(|preset| PdbStore::specs(preset, &key.0).err())
            .map(|error| error.to_string())
    }

    /// Whether the solver for `key` is ready, making it at once when it needs no table.
    fn solver_ready(&mut self, key: &SolverKey) -> Result<bool, SchedulerError> {
        if self.solvers.contains_key(key) {
            return Ok(true);
        }
        let choice = self.resolved(key);
        if choice.preset().is_some() {
            return Ok(false);
        }
        let quiet = |_: PdbEvent<'_>| {};
        let built = choice
            .build(&key.0, self.budget, &self.pdbs, &quiet)
            .map_err(|e| SchedulerError::Pdb(e.to_string()))?;
        self.solvers.insert(
            *key,
            Solver::with_heuristic(key.0, built, choice.to_string()),
        );
        Ok(true)
    }

    /// Sorts `keys` into those that cannot be made and those missing.
    pub(super) fn sort(&mut self, keys: &HashSet<SolverKey>) -> Result<Sorted, SchedulerError> {
        let mut sorted = Sorted::default();
        for key in keys {
            if let Some(reason) = self.unusable(key) {
                sorted.unusable.insert(*key, reason);
            } else if !self.solver_ready(key)? {
                sorted.missing.insert(*key);
            }
        }
        Ok(sorted)
    }

    /// The table files `key` needs that are not in the data directory.
    pub fn missing_tables(&self, key: &SolverKey) -> Result<Vec<PatternSpec>, SchedulerError> {
        let Some(preset) = self.resolved(key).preset() else {
            return Ok(Vec::new());
        };
        self.pdbs
            .missing(preset, &key.0)
            .map_err(|e| SchedulerError::Pdb(e.to_string()))
    }

    /// Refuses a batch whose tables nobody can supply: missing here, held by no connected
    /// worker, and the coordinator may not build them. Checked before the batch is stored.
    /// Returns whether every solver of `keys` is ready (or cannot be made: those items fail).
    pub(super) fn check_obtainable(
        &mut self,
        keys: &HashSet<SolverKey>,
        workers: &Workers,
    ) -> Result<bool, SchedulerError> {
        let missing = self.sort(keys)?.missing;
        if self.may_build {
            return Ok(missing.is_empty());
        }
        let ready = missing.is_empty();
        for key in missing {
            for spec in self.missing_tables(&key)? {
                let name = spec.file_name();
                if workers.holders(&name).is_empty() {
                    return Err(SchedulerError::FailedPrecondition(format!(
                        "the batch needs the pattern database {name} ({} for {} boards), which \
                         this coordinator does not have, no connected worker holds, and this \
                         coordinator may not build (serve --no-table-builds): start a worker \
                         whose data directory holds it, or copy it into {}",
                        key.1,
                        key.0.shape(),
                        self.pdbs.dir().display()
                    )));
                }
            }
        }
        Ok(ready)
    }

    /// `items` more of `batch`'s items wait for the solvers `missing`.
    pub(super) fn wait(&mut self, batch: u64, missing: HashSet<SolverKey>, items: usize) {
        let waits = self.waiting.entry(batch).or_insert_with(|| WaitingBatch {
            keys: HashSet::new(),
            items: 0,
        });
        waits.keys.extend(missing);
        waits.items += items;
    }

    /// Items stored but waiting for tables (they count against the pending limit).
    pub(super) fn waiting_items(&self) -> usize {
        self.waiting.values().map(|w| w.items).sum()
    }

    /// Whether `batch` waits for tables.
    pub fn is_waiting(&self, batch: u64) -> bool {
        self.waiting.contains_key(&batch)
    }

    /// `batch` waits no more (started, cancelled or failed); whether it waited.
    pub(super) fn stop_waiting(&mut self, batch: u64) -> bool {
        self.waiting.remove(&batch).is_some()
    }

    /// The batches waiting for tables, and the solvers each waits for.
    pub fn table_needs(&self) -> Vec<TableNeed> {
        self.waiting
            .iter()
            .map(|(&batch, waiting)| TableNeed {
                batch,
                keys: waiting
                    .keys
                    .iter()
                    .filter(|key| !self.solvers.contains_key(*key))
                    .cloned()
                    .collect(),
            })
            .collect()
    }

    /// What the supply is doing for each solver it is obtaining, shown with the batches that
    /// wait for it.
    pub(super) fn set_preparing(&mut self, descriptions: HashMap<SolverKey, String>) {
        self.preparing = descriptions;
    }

    /// What `batch` waits for, if it waits.
    pub(super) fn preparing(&self, batch: u64) -> Option<String> {
        let waiting = self.waiting.get(&batch)?;
        let mut texts: Vec<&str> = waiting
            .keys
            .iter()
            .filter_map(|key| self.preparing.get(key).map(String::as_str))
            .collect();
        texts.sort_unstable();
        texts.dedup();
        Some(if texts.is_empty() {
            "preparing pattern tables".to_string()
        } else {
            texts.join("; ")
        })
    }

    /// Whether the solver of `key` is loaded.
    pub fn has_solver(&self, key: &SolverKey) -> bool {
        self.solvers.contains_key(key)
    }

    /// A solver the supply loaded.
    pub(super) fn install(&mut self, key: SolverKey, solver: Solver) {
        self.solvers.insert(key, solver);
    }

    /// The solver for `key`: ready for every started puzzle.
    pub(super) fn solver(&self, key: &SolverKey) -> Result<&Solver, SchedulerError> {
        self.solvers.get(key).ok_or_else(|| {
            SchedulerError::Internal(format!(
                "no solver loaded for {} on {} boards",
                key.1,
                key.0.shape()
            ))
        })
    }

    /// Takes out every waiting batch whose solvers are all ready, to be started.
    pub(super) fn take_ready(&mut self) -> Vec<u64> {
        let ready: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.keys.iter().all(|key| self.solvers.contains_key(key)))
            .map(|(&batch, _)| batch)
            .collect();
        for batch in &ready {
            self.waiting.remove(batch);
        }
        ready
    }

    /// The batches that wait for `key`.
    pub(super) fn waiting_on(&self, key: &SolverKey) -> Vec<u64> {
        self.waiting
            .iter()
            .filter(|(_, w)| w.keys.contains(key))
            .map(|(&batch, _)| batch)
            .collect()
    }
}
