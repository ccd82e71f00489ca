//! Pattern tables from the scheduler's side: the solvers it has, the batches that wait for
//! tables it has not (stored and acknowledged, but not started), and which workers hold which
//! table files. Nothing here loads, fetches or builds a table: `table_supply` does that outside
//! the lock and hands back solvers with [`Scheduler::install_solver`], so a submission never
//! waits for a table and heartbeats never wait behind a load.

use std::collections::{BTreeSet, HashMap, HashSet};

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::file::PatternSpec;
use tilesolve::pdb::{PdbEvent, PdbStore};
use tilesolve::{parse_board, Board, Solver};

use super::intake::{self, parse_goal};
use super::types::{SchedulerError, WorkerId};
use super::Scheduler;
use crate::store::{ItemStatus, StoredItem};
use tilesolve::proto::MAX_BATCH_LINES;

/// A solver's identity: the goal, and the heuristic as the batch named it (`default` is
/// resolved within the coordinator's table budget).
pub type SolverKey = (Board, HeuristicChoice);

/// A batch on disk whose items need tables the scheduler has not loaded yet.
pub(super) struct WaitingBatch {
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

impl Scheduler {
    /// Builds the pattern databases a batch needs that are missing from `pdbs`, where the
    /// caller shows the progress: the embedded `tilesolve batch` does this before its
    /// coordinator starts. A batch `submit` would refuse builds nothing.
    pub fn prepare(
        pdbs: &PdbStore,
        lines: &[String],
        heuristic: &str,
        goal: &str,
        table_budget: u64,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<(), SchedulerError> {
        // A batch `submit` refuses (too long, bad names) needs nothing built.
        if lines.len() > MAX_BATCH_LINES {
            return Ok(());
        }
        let (Ok(choice), Ok(goal)) = (intake::parse_heuristic(heuristic), parse_goal(goal)) else {
            return Ok(());
        };
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

    /// The heuristic `key` names, `default` resolved within the coordinator's table budget.
    fn resolved(&self, key: &SolverKey) -> Result<HeuristicChoice, SchedulerError> {
        Ok(key.1.resolve(&key.0, self.config.table_budget))
    }

    /// Why no solver can be made for `key`: a named preset for another board size. Its items
    /// fail with this reason; the rest of their batch goes on.
    fn unusable(&self, key: &SolverKey) -> Result<Option<String>, SchedulerError> {
        let choice = self.resolved(key)?;
        Ok(choice
            .preset()
            .and_then(|preset| PdbStore::specs(preset, &key.0).err())
            .map(|error| error.to_string()))
    }

    /// Whether the solver for `key` is ready, making it at once when it needs no table.
    fn solver_ready(&mut self, key: &SolverKey) -> Result<bool, SchedulerError> {
        if self.solvers.contains_key(key) {
            return Ok(true);
        }
        let choice = self.resolved(key)?;
        if choice.preset().is_some() {
            return Ok(false);
        }
        let quiet = |_: PdbEvent<'_>| {};
        let built = choice
            .build(&key.0, self.config.table_budget, &self.pdbs, &quiet)
            .map_err(|e| SchedulerError::Pdb(e.to_string()))?;
        self.solvers.insert(
            *key,
            Solver::with_heuristic(key.0, built, choice.to_string()),
        );
        Ok(true)
    }

    /// Whether every solver `items` need is ready (or cannot be made: those items fail).
    pub(super) fn solvers_ready(
        &mut self,
        items: &[StoredItem],
        heuristic: HeuristicChoice,
    ) -> Result<bool, SchedulerError> {
        for key in Scheduler::keys_of(items, heuristic) {
            if self.unusable(&key)?.is_none() && !self.solver_ready(&key)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The solver keys of a batch's queued items (goals parsed once each).
    fn keys_of(items: &[StoredItem], heuristic: HeuristicChoice) -> HashSet<SolverKey> {
        let goals: BTreeSet<&str> = items
            .iter()
            .filter(|item| item.status == ItemStatus::Queued)
            .filter_map(|item| item.goal.as_deref())
            .collect();
        goals
            .into_iter()
            .filter_map(|goal| parse_board(goal).ok())
            .map(|goal| (goal, heuristic))
            .collect()
    }

    /// The table files `key` needs that are not in the data directory.
    pub fn missing_tables(&self, key: &SolverKey) -> Result<Vec<PatternSpec>, SchedulerError> {
        let choice = self.resolved(key)?;
        let Some(preset) = choice.preset() else {
            return Ok(Vec::new());
        };
        self.pdbs
            .missing(preset, &key.0)
            .map_err(|e| SchedulerError::Pdb(e.to_string()))
    }

    /// Refuses a batch whose tables nobody can supply: missing here, held by no connected
    /// worker, and the coordinator may not build them. Checked before the batch is stored.
    pub(super) fn check_tables_obtainable(
        &mut self,
        items: &[StoredItem],
        heuristic: HeuristicChoice,
    ) -> Result<(), SchedulerError> {
        if self.config.build_tables {
            return Ok(());
        }
        for key in Scheduler::keys_of(items, heuristic) {
            if self.unusable(&key)?.is_some() || self.solver_ready(&key)? {
                continue;
            }
            for spec in self.missing_tables(&key)? {
                let name = spec.file_name();
                if self.workers.holders(&name).is_empty() {
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
        Ok(())
    }

    /// Starts a batch's queued items whose solvers are ready; the batch waits for the rest.
    /// `items` are the batch's items from index `first` on.
    pub(super) fn start_or_wait(
        &mut self,
        batch: u64,
        first: u32,
        items: &[StoredItem],
        heuristic: HeuristicChoice,
    ) -> Result<(), SchedulerError> {
        let (mut missing, mut unusable) = (HashSet::new(), HashMap::new());
        for key in Scheduler::keys_of(items, heuristic) {
            if let Some(reason) = self.unusable(&key)? {
                unusable.insert(key, reason);
            } else if !self.solver_ready(&key)? {
                missing.insert(key);
            }
        }
        let mut waiting = 0;
        for (index, item) in (first..).zip(items) {
            let puzzle = (batch, index);
            if item.status != ItemStatus::Queued || self.puzzles.contains_key(&puzzle) {
                continue;
            }
            let key = item
                .goal
                .as_deref()
                .and_then(|goal| parse_board(goal).ok())
                .map(|goal| (goal, heuristic));
            if let Some(reason) = key.as_ref().and_then(|key| unusable.get(key)) {
                self.finish_failed(puzzle, reason.clone())?;
            } else if key.is_some_and(|key| missing.contains(&key)) {
                waiting += 1;
            } else {
                self.start_item(batch, index, item, heuristic)?;
            }
        }
        if waiting > 0 {
            let batch_waits = self.waiting.entry(batch).or_insert_with(|| WaitingBatch {
                keys: HashSet::new(),
                items: 0,
            });
            batch_waits.keys.extend(missing);
            batch_waits.items += waiting;
        }
        Ok(())
    }

    /// Items stored but waiting for tables (they count against the pending limit).
    pub(super) fn waiting_items(&self) -> usize {
        self.waiting.values().map(|w| w.items).sum()
    }

    /// Whether `batch` waits for tables.
    pub fn is_waiting(&self, batch: u64) -> bool {
        self.waiting.contains_key(&batch)
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

    /// The connected workers holding the table file `name`, with the checksums they stated.
    pub fn table_holders(&self, name: &str) -> Vec<(WorkerId, u64)> {
        self.workers.holders(name)
    }

    /// Records the table files a worker holds, as it said when registering.
    pub fn set_worker_tables(&mut self, worker: WorkerId, tables: &[(String, u64)]) {
        self.workers.set_tables(worker, tables);
    }

    /// Whether this coordinator may build the tables nobody can send it.
    pub fn may_build_tables(&self) -> bool {
        self.config.build_tables
    }

    /// What the supply is doing for each solver it is obtaining, shown with the batches that
    /// wait for it.
    pub fn set_preparing(&mut self, descriptions: HashMap<SolverKey, String>) {
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

    /// A solver the supply loaded (outside the lock).
    /// Whether the solver of `key` is loaded.
    pub fn has_solver(&self, key: &SolverKey) -> bool {
        self.solvers.contains_key(key)
    }

    pub fn install_solver(&mut self, key: SolverKey, solver: Solver) {
        self.solvers.insert(key, solver);
    }

    /// Starts every waiting batch whose solvers are all ready; returns their ids.
    pub fn start_ready_batches(&mut self) -> Result<Vec<u64>, SchedulerError> {
        let ready: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.keys.iter().all(|key| self.solvers.contains_key(key)))
            .map(|(&batch, _)| batch)
            .collect();
        for &batch in &ready {
            self.waiting.remove(&batch);
            let Some(stored) = self.store.batch(batch)? else {
                continue;
            };
            let items = self.store.items(batch)?;
            let heuristic = intake::parse_heuristic(&stored.heuristic)?;
            self.start_or_wait(batch, 0, &items, heuristic)?;
        }
        Ok(ready)
    }

    /// Fails the waiting items of every batch that waits for `key`, with `reason` (its tables
    /// could not be obtained); returns those batches.
    pub fn fail_waiting(
        &mut self,
        key: &SolverKey,
        reason: &str,
    ) -> Result<Vec<u64>, SchedulerError> {
        let batches: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.keys.contains(key))
            .map(|(&batch, _)| batch)
            .collect();
        for &batch in &batches {
            self.fail_waiting_batch(batch, reason)?;
        }
        Ok(batches)
    }

    /// Fails every item of `batch` that waits for tables (a cancel, or tables that cannot be
    /// had).
    pub(super) fn fail_waiting_batch(
        &mut self,
        batch: u64,
        reason: &str,
    ) -> Result<(), SchedulerError> {
        if self.waiting.remove(&batch).is_none() {
            return Ok(());
        }
        let items = self.store.items(batch)?;
        for (index, item) in (0..).zip(items) {
            let puzzle = (batch, index);
            if item.status == ItemStatus::Queued && !self.puzzles.contains_key(&puzzle) {
                self.finish_failed(puzzle, reason.to_string())?;
            }
        }
        Ok(())
    }
}
