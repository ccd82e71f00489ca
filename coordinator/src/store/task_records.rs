//! The `tasks` tree: every task a puzzle's search ran ([`TaskRecord`], what `tilesolve
//! simulate` replays), held in memory as tasks end and written a puzzle's group at a time.
//!
//! A sled insert per record was a seventh of a coordinator's CPU on hard80 through fifteen
//! workers (a subtree task's record holds its measured descendants; sled copies and splits the
//! leaf it inserts into), more than the scheduler's own work for the task. Held records are
//! written by the first record put a second after the oldest, at a thousand, or with the
//! store's flush (a batch's end, a stop), each puzzle's as one value:
//! a group, keyed by the puzzle and its first task id, compact. Values written one record at a
//! time by earlier versions (JSON, keyed by the record's own id) are read beside groups.
//!
//! Invariants:
//! - A task id has one record: the scheduler records a task once, as it leaves its table, and
//!   [`Store::replace_task_records`] (a replay's measurements of cancelled tasks) rewrites a
//!   record in the value that holds it. A group is never written over another: one whose key
//!   is taken is merged into it (over one that cannot be read, it is written, with a warning).
//! - Reads see held records over written ones; held records leave only as they are written,
//!   under the same lock.
//! - A crash loses at most the held records (under a thousand; with no task ending since, they
//!   may be older than a second): records only make a replay of the run more complete, and
//!   nothing is acknowledged on them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tilesolve::Board;

use super::format::{board_key, decode};
use super::search::TaskRecord;
use super::{Store, StoreError};

/// Held records that start a write of them all.
const WRITE_AT: usize = 1_000;
/// The longest a record is held before a write of them all.
const WRITE_AFTER: Duration = Duration::from_secs(1);
/// The first byte of a value holding a group of records (postcard after it); a record written
/// alone is JSON, which never starts with it.
const GROUP: u8 = 1;

/// A written value: its key and the records it holds.
type Written = (sled::IVec, Vec<(u64, TaskRecord)>);
/// A puzzle's held records, by reference: its key and (task id, record) pairs.
type Group<'a> = (&'a [u8], Vec<(u64, &'a TaskRecord)>);

/// Records not yet written, by (puzzle key, task id).
#[derive(Default)]
pub(super) struct HeldRecords {
    records: BTreeMap<(Vec<u8>, u64), TaskRecord>,
    /// When the oldest of them was held.
    since: Option<Instant>,
}

impl Store {
    /// Records a finished task of the puzzle `board` (held, then written with others: see the
    /// module).
    pub fn put_task_record(
        &self,
        goal: &Board,
        board: &Board,
        task: u64,
        record: TaskRecord,
    ) -> Result<(), StoreError> {
        let mut held = self.lock_task_records();
        held.records.insert((board_key(goal, board), task), record);
        let since = *held.since.get_or_insert_with(Instant::now);
        if held.records.len() >= WRITE_AT || since.elapsed() >= WRITE_AFTER {
            self.write_records(&mut held)?;
        }
        Ok(())
    }

    /// Writes every held record.
    pub(super) fn write_task_records(&self) -> Result<(), StoreError> {
        self.write_records(&mut self.lock_task_records())
    }

    /// Every recorded task of the puzzle `board`, in the order they were created.
    pub fn task_records(&self, goal: &Board, board: &Board) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(self
            .task_records_with_ids(goal, board)?
            .into_iter()
            .map(|(_, record)| record)
            .collect())
    }

    /// [`Store::task_records`] with each record's task id.
    pub fn task_records_with_ids(
        &self,
        goal: &Board,
        board: &Board,
    ) -> Result<Vec<(u64, TaskRecord)>, StoreError> {
        let prefix = board_key(goal, board);
        let held = self.lock_task_records();
        let mut records = BTreeMap::new();
        for (_, value) in self.written_values(&prefix)? {
            records.extend(value);
        }
        let range = (prefix.clone(), 0)..=(prefix, u64::MAX);
        for ((_, task), record) in held.records.range(range) {
            records.insert(*task, record.clone());
        }
        Ok(records.into_iter().collect())
    }

    /// Puts `records` of the puzzle `board` in place of those with their task ids, in the
    /// values that hold them (a task id without a record is recorded as new).
    pub fn replace_task_records(
        &self,
        goal: &Board,
        board: &Board,
        records: Vec<(u64, TaskRecord)>,
    ) -> Result<(), StoreError> {
        let mut held = self.lock_task_records();
        self.write_records(&mut held)?;
        let prefix = board_key(goal, board);
        let mut replacing: BTreeMap<u64, TaskRecord> = records.into_iter().collect();
        for (key, mut value) in self.written_values(&prefix)? {
            let mut replaced = false;
            for (task, record) in value.iter_mut() {
                if let Some(new) = replacing.remove(task) {
                    *record = new;
                    replaced = true;
                }
            }
            if replaced {
                self.tasks
                    .insert(key, encode_group(value.iter().map(|(task, r)| (task, r))))?;
            }
        }
        for (task, record) in replacing {
            held.records.insert((prefix.clone(), task), record);
        }
        self.write_records(&mut held)
    }

    /// The held records, under their lock. A poisoned lock is taken anyway: records leave the
    /// map only after their write, so what it holds is still to be written.
    fn lock_task_records(&self) -> std::sync::MutexGuard<'_, HeldRecords> {
        self.held_records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes `held` into the tree, a puzzle's records as one group, then lets them go.
    fn write_records(&self, held: &mut HeldRecords) -> Result<(), StoreError> {
        let mut groups: Vec<Group> = Vec::new();
        for ((puzzle, task), record) in &held.records {
            match groups.last_mut() {
                Some((last, group)) if *last == puzzle.as_slice() => group.push((*task, record)),
                _ => groups.push((puzzle, vec![(*task, record)])),
            }
        }
        let mut batch = sled::Batch::default();
        for (puzzle, group) in groups {
            let Some(&(first, _)) = group.first() else {
                continue;
            };
            let key = task_key(puzzle, first);
            // Never over another value: merged into it (see the module's invariants), unless
            // it cannot be read, when what it held is lost already and a write must not fail
            // on it (a store's flush writes these).
            let taken = match self.tasks.get(&key)? {
                Some(taken) => records_of(&key, puzzle.len(), &taken).unwrap_or_else(|error| {
                    tracing::warn!(%error, "an unreadable value of task records is written over");
                    Vec::new()
                }),
                None => Vec::new(),
            };
            let value = match taken.is_empty() {
                true => encode_group(group.iter().map(|(task, record)| (task, *record))),
                false => {
                    let mut merged: BTreeMap<u64, TaskRecord> = taken.into_iter().collect();
                    merged.extend(group.into_iter().map(|(task, r)| (task, r.clone())));
                    encode_group(merged.iter())
                }
            };
            batch.insert(key, value);
        }
        self.tasks.apply_batch(batch)?;
        held.records.clear();
        held.since = None;
        Ok(())
    }

    /// The written values of the puzzle `prefix` names.
    fn written_values(&self, prefix: &[u8]) -> Result<Vec<Written>, StoreError> {
        let mut values = Vec::new();
        for entry in self.tasks.scan_prefix(prefix) {
            let (key, value) = entry?;
            // A longer puzzle key that starts like this one (another shape's) is not its.
            if key.len() != prefix.len() + 8 {
                continue;
            }
            let records = records_of(&key, prefix.len(), &value)?;
            values.push((key, records));
        }
        Ok(values)
    }
}

/// A `tasks` key: the puzzle's key, then a task id.
fn task_key(puzzle: &[u8], task: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(puzzle.len() + 8);
    key.extend_from_slice(puzzle);
    key.extend_from_slice(&task.to_be_bytes());
    key
}

/// A group's value: [`GROUP`], then the (task id, record) pairs.
fn encode_group<'a>(records: impl Iterator<Item = (&'a u64, &'a TaskRecord)>) -> Vec<u8> {
    let records: Vec<(&u64, &TaskRecord)> = records.collect();
    let bytes = vec![GROUP];
    postcard::to_extend(&records, bytes).unwrap_or_default()
}

/// The records a value holds: a group's, or the one a value written alone holds under the id
/// ending its key (past `puzzle` bytes).
fn records_of(
    key: &[u8],
    puzzle: usize,
    value: &[u8],
) -> Result<Vec<(u64, TaskRecord)>, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        tree: "tasks",
        reason,
    };
    match value.split_first() {
        Some((&GROUP, group)) => postcard::from_bytes(group).map_err(|e| corrupt(e.to_string())),
        _ => {
            let task = key
                .get(puzzle..)
                .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
                .map(u64::from_be_bytes)
                .ok_or_else(|| corrupt("a key without a task id".into()))?;
            Ok(vec![(task, decode("tasks", value)?)])
        }
    }
}
