//! Batch records (in `batch_log`) and the `item_parts` and `items` trees: batches as
//! submitted and their items as they ended.

use serde::{Deserialize, Serialize};

use super::answers::StoredSolution;
use super::format::{
    batch_entries, batch_key, board_key, decode, encode, encode_compact, item_key, COMPACT,
};
use super::Priority;
use super::{Store, StoreError};
use crate::owners::OwnerName;

/// Items of a batch kept in one `item_parts` value: what a results page decodes at most beyond
/// its own items, and the intake's part ([`crate::scheduler`] takes batches in a thousand
/// lines at a time).
pub const ITEMS_PER_PART: usize = 1_000;
/// Most items a page read reserves room for at once.
const PAGE_RESERVE_MAX: usize = 16_384;

/// Batches of at most this many items keep their items in their own record, and have no part
/// in sled: sled keeps state in memory for every page it has written (a fragment list, some
/// 40 bytes a fragment), paged out or not, and a leaf page holds at most 16 keys, so a part
/// per small batch cost a coordinator that keeps its batches memory for each one it ever
/// finished (BENCHMARKS.md, the bars' soak). Large batches keep their parts: a thousand items
/// share one.
pub const EMBEDDED_ITEMS_MAX: u32 = 100;

/// Items as taken in, from the index of the first.
type Part = (u32, Vec<StoredItem>);

/// A batch as submitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredBatch {
    pub id: u64,
    pub items: u32,
    pub submitted_unix_ms: u64,
    pub heuristic: String,
    /// The goal it asked for (`blank-last`, `korf` or a board); None in batches stored before
    /// it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    pub cancelled: bool,
    /// Set when every item has ended: the batch's figures then come from here and the
    /// coordinator keeps nothing of it in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<BatchFigures>,
    /// What each of its items may spend before it comes back bounded, when the batch set
    /// limits (absent from records written before they were kept).
    #[serde(default, skip_serializing_if = "ItemLimits::is_none")]
    pub limits: ItemLimits,
    /// Its place among batches: higher first (absent from records written before it was kept,
    /// and for the default).
    #[serde(default, skip_serializing_if = "Priority::is_default")]
    pub priority: Priority,
    /// The batch whose failed or cancelled items it submitted again, if it is a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<u64>,
    /// Whose it is (the owner whose token submitted it); None for the operator's, and for
    /// batches stored before owners were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerName>,
    /// Where to POST a notice when it ends (`submit --notify`, or the coordinator's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
}

/// What each item of a batch may spend on its optimal search, summed over the threads that
/// search it; and whether the batch asked only for a bounded answer. Past a limit, an item
/// comes back bounded: the shortest path weighted searches find, with the proven lower bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemLimits {
    pub seconds: Option<f64>,
    pub nodes: Option<u64>,
    /// A bounded answer only: weighted IDA* with this weight, in hundredths.
    pub suboptimal_percent: Option<u32>,
}

impl ItemLimits {
    pub fn is_none(&self) -> bool {
        *self == ItemLimits::default()
    }

    /// The limits as a request gives them (0 for none), checked: the reason names the field.
    pub fn from_request(
        time_limit_seconds: f64,
        node_limit: u64,
        suboptimal_percent: u32,
    ) -> Result<ItemLimits, String> {
        let seconds = match time_limit_seconds {
            0.0 => None,
            seconds if seconds.is_finite() && seconds > 0.0 => Some(seconds),
            seconds => {
                return Err(format!(
                    "time_limit_seconds must be a positive number of seconds (or 0 for none), not {seconds}"
                ))
            }
        };
        let suboptimal_percent = match suboptimal_percent {
            0 => None,
            percent @ 101..=1000 => Some(percent),
            percent => {
                return Err(format!(
                    "suboptimal_percent must be between 101 and 1000 (a weight of 1.01 to 10), or 0 for an optimal search, not {percent}"
                ))
            }
        };
        Ok(ItemLimits {
            seconds,
            nodes: (node_limit > 0).then_some(node_limit),
            suboptimal_percent,
        })
    }
}

impl StoredBatch {
    /// A batch as submitted, not cancelled and not finished.
    pub fn new(
        id: u64,
        items: usize,
        heuristic: &str,
        goal: &str,
        submitted_unix_ms: u64,
    ) -> StoredBatch {
        StoredBatch {
            id,
            items: items as u32,
            submitted_unix_ms,
            heuristic: heuristic.into(),
            goal: Some(goal.into()),
            cancelled: false,
            finished: None,
            limits: ItemLimits::default(),
            priority: Priority::DEFAULT,
            retry_of: None,
            owner: None,
            notify: None,
        }
    }
}

/// A batch record as written compact, followed by its items (a small batch that ended): the
/// fields of [`StoredBatch`], every one written (postcard has no optional fields).
#[derive(Serialize, Deserialize)]
struct CompactRecord {
    id: u64,
    items: u32,
    submitted_unix_ms: u64,
    heuristic: String,
    goal: Option<String>,
    cancelled: bool,
    finished: Option<CompactFigures>,
}

/// [`BatchFigures`] as a compact record holds them (its cancelled items follow in the record's
/// [`RecordTail`]).
#[derive(Serialize, Deserialize)]
struct CompactFigures {
    solved: u32,
    failed: u32,
    nodes: u64,
    seconds: f64,
}

impl From<&BatchFigures> for CompactFigures {
    fn from(figures: &BatchFigures) -> CompactFigures {
        CompactFigures {
            solved: figures.solved,
            failed: figures.failed,
            nodes: figures.nodes,
            seconds: figures.seconds,
        }
    }
}

impl From<CompactFigures> for BatchFigures {
    fn from(figures: CompactFigures) -> BatchFigures {
        BatchFigures {
            solved: figures.solved,
            failed: figures.failed,
            cancelled: 0,
            nodes: figures.nodes,
            seconds: figures.seconds,
        }
    }
}

impl From<&StoredBatch> for CompactRecord {
    fn from(batch: &StoredBatch) -> CompactRecord {
        CompactRecord {
            id: batch.id,
            items: batch.items,
            submitted_unix_ms: batch.submitted_unix_ms,
            heuristic: batch.heuristic.clone(),
            goal: batch.goal.clone(),
            cancelled: batch.cancelled,
            finished: batch.finished.as_ref().map(CompactFigures::from),
        }
    }
}

impl From<CompactRecord> for StoredBatch {
    fn from(record: CompactRecord) -> StoredBatch {
        StoredBatch {
            id: record.id,
            items: record.items,
            submitted_unix_ms: record.submitted_unix_ms,
            heuristic: record.heuristic,
            goal: record.goal,
            cancelled: record.cancelled,
            finished: record.finished.map(BatchFigures::from),
            limits: ItemLimits::default(),
            priority: Priority::DEFAULT,
            retry_of: None,
            owner: None,
            notify: None,
        }
    }
}

/// The first byte of a compact batch record whose limits follow the record (written by
/// coordinators before [`COMPACT_WITH_TAIL`]; still read).
const COMPACT_WITH_LIMITS: u8 = 1;

/// The first byte of a compact batch record whose tail ([`RecordTail`], as JSON, so that a
/// later field needs no new form) follows the record. A batch whose tail would be empty is
/// written as before, so older coordinators' records read the same.
const COMPACT_WITH_TAIL: u8 = 2;

/// The fields of a batch record added since the compact form was fixed: what the batch asked
/// for beyond its boards, and its cancelled items. Every field defaults.
#[derive(Default, PartialEq, Serialize, Deserialize)]
struct RecordTail {
    #[serde(default, skip_serializing_if = "ItemLimits::is_none")]
    limits: ItemLimits,
    #[serde(default, skip_serializing_if = "Priority::is_default")]
    priority: Priority,
    #[serde(default, skip_serializing_if = "is_zero")]
    cancelled: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_of: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<OwnerName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    notify: Option<String>,
}

/// A batch record's value: the record, JSON, or compact with the items it holds after it (and
/// its tail between the two, unless it is empty).
fn encode_record(batch: &StoredBatch, items: Option<&[StoredItem]>) -> Vec<u8> {
    let Some(items) = items else {
        return encode(batch);
    };
    let mut bytes = encode_compact(&CompactRecord::from(batch));
    let tail = RecordTail {
        limits: batch.limits,
        priority: batch.priority,
        cancelled: batch.finished.map_or(0, |figures| figures.cancelled),
        retry_of: batch.retry_of,
        owner: batch.owner.clone(),
        notify: batch.notify.clone(),
    };
    if tail != RecordTail::default() {
        bytes[0] = COMPACT_WITH_TAIL;
        bytes = postcard::to_extend(&encode(&tail), bytes).unwrap_or_default();
    }
    postcard::to_extend(&items, bytes).unwrap_or_default()
}

/// The record a batch record's value holds, and the items held after it (compact values
/// only).
fn decode_record(
    bytes: &[u8],
    with_items: bool,
) -> Result<(StoredBatch, Option<Vec<StoredItem>>), StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        tree: "batches",
        reason,
    };
    let (form, compact) = match bytes.split_first() {
        Some((&form @ (COMPACT | COMPACT_WITH_LIMITS | COMPACT_WITH_TAIL), compact)) => {
            (form, compact)
        }
        _ => return Ok((decode("batches", bytes)?, None)),
    };
    let (record, rest) =
        postcard::take_from_bytes::<CompactRecord>(compact).map_err(|e| corrupt(e.to_string()))?;
    let mut batch = StoredBatch::from(record);
    let rest = match form {
        COMPACT_WITH_LIMITS => {
            let (limits, rest) =
                postcard::take_from_bytes(rest).map_err(|e| corrupt(e.to_string()))?;
            batch.limits = limits;
            rest
        }
        COMPACT_WITH_TAIL => {
            let (tail, rest) =
                postcard::take_from_bytes::<Vec<u8>>(rest).map_err(|e| corrupt(e.to_string()))?;
            let tail: RecordTail =
                serde_json::from_slice(&tail).map_err(|e| corrupt(e.to_string()))?;
            batch.limits = tail.limits;
            batch.priority = tail.priority;
            batch.retry_of = tail.retry_of;
            batch.owner = tail.owner;
            batch.notify = tail.notify;
            if let Some(figures) = &mut batch.finished {
                figures.cancelled = tail.cancelled;
            }
            rest
        }
        _ => rest,
    };
    let items = match with_items {
        true => Some(postcard::from_bytes(rest).map_err(|e| corrupt(e.to_string()))?),
        false => None,
    };
    Ok((batch, items))
}

/// A finished batch's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchFigures {
    pub solved: u32,
    /// Items that failed; cancelled ones are counted apart (absent from records written
    /// before they were: those counted them here).
    pub failed: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u32,
    /// Expanded nodes its tasks reported, and the seconds from submission (or the last
    /// resumption) to its end, in the process that finished it.
    pub nodes: u64,
    pub seconds: f64,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// Where an item stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ItemStatus {
    Queued,
    Solved(StoredSolution),
    Failed(String),
    /// A path not proven optimal: a limit stopped the optimal search (written after the
    /// others, so that values written before it read the same).
    Bounded(StoredBounded),
    /// Its batch was cancelled before it ended: not a failure (written last, as `Bounded`).
    Cancelled,
}

/// A replayed path not proven optimal, with what is proven about the optimal length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredBounded {
    pub length: u32,
    /// The blank's moves, one letter each.
    pub moves: String,
    #[serde(with = "super::format::byte_run")]
    pub tiles: Vec<u8>,
    /// No solution is shorter.
    pub lower_bound: u32,
    /// The weight of the search that found the path, in hundredths.
    pub weight_percent: u32,
    pub nodes: u64,
    pub seconds: f64,
    pub heuristic: String,
    /// Why it is not proven optimal, e.g. "time limit 3 s".
    pub reason: String,
    /// The workers whose reports the lower bound rests on.
    pub workers: Vec<u64>,
}

/// One line of a batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredItem {
    /// The board text as submitted.
    pub text: String,
    /// 1-based line in the submitted file, when it came from one.
    pub line: Option<u32>,
    /// The parsed board and its goal, when the text was valid.
    pub board: Option<String>,
    pub goal: Option<String>,
    pub status: ItemStatus,
    /// Moves the line claimed reach the goal (a `moves=` fact, as `tilesolve import` writes):
    /// replayed at intake, and stored only once no shorter path exists (see `lifecycle`).
    /// (Absent from JSON values written before it was kept.)
    #[serde(default)]
    pub claimed: Option<String>,
}

impl Store {
    /// One more than the largest batch id ever stored. A batch's items are written before
    /// its record, so a crash between the two leaves items whose id must not be reused (the
    /// scheduler also keeps ids it handed out and has not stored). Ids stay small and
    /// sequential across restarts, which sled's own id generator, reserving ranges, does not.
    pub fn next_batch_id(&self) -> Result<u64, StoreError> {
        let last = |tree: &sled::Tree| -> Result<u64, StoreError> {
            Ok(tree
                .last()?
                .and_then(|(key, _)| key.get(1..9).and_then(|id| id.try_into().ok()))
                .map_or(0, u64::from_be_bytes))
        };
        Ok(self
            .batch_log
            .last_id()
            .max(last(&self.items)?)
            .max(last(&self.item_parts)?)
            + 1)
    }

    /// Moves the batch records of a store from before format 5 out of sled's `batches` and
    /// `finished` trees into the batch log (a finished record over its intake's), once.
    pub(super) fn move_batches_out_of_sled(&self) -> Result<(), StoreError> {
        if self.batches.is_empty() && self.finished.is_empty() {
            return Ok(());
        }
        let mut moved = 0u64;
        for tree in [&self.batches, &self.finished] {
            for entry in tree.iter() {
                let (key, value) = entry?;
                let id = key
                    .get(1..9)
                    .and_then(|id| <[u8; 8]>::try_from(id).ok())
                    .map(u64::from_be_bytes)
                    .ok_or_else(|| StoreError::Corrupt {
                        tree: "batches",
                        reason: "a key without a batch id".into(),
                    })?;
                self.batch_log.put(id, &value)?;
                moved += 1;
            }
        }
        self.batch_log.close()?;
        self.batches.clear()?;
        self.finished.clear()?;
        self.db.flush()?;
        tracing::info!(
            records = moved,
            "batch records moved out of sled into the batch log"
        );
        Ok(())
    }

    /// Writes items `first..` of `batch` as taken in, [`ITEMS_PER_PART`] to a value (a crash
    /// between parts leaves items of a batch without a record, which nothing reads).
    pub fn put_items(
        &self,
        batch: u64,
        first: u32,
        items: &[StoredItem],
    ) -> Result<(), StoreError> {
        for (start, part) in (first..)
            .step_by(ITEMS_PER_PART)
            .zip(items.chunks(ITEMS_PER_PART))
        {
            self.item_parts
                .insert(item_key(batch, start), encode_compact(&part))?;
        }
        Ok(())
    }

    pub fn batch(&self, id: u64) -> Result<Option<StoredBatch>, StoreError> {
        self.record(id)?
            .map(|bytes| Ok(decode_record(&bytes, false)?.0))
            .transpose()
    }

    /// The items a finished small batch's record holds (None for a record without them).
    fn embedded_items(&self, id: u64) -> Result<Option<Vec<StoredItem>>, StoreError> {
        match self.record(id)? {
            Some(bytes) => Ok(decode_record(&bytes, true)?.1),
            None => Ok(None),
        }
    }

    /// Every batch, oldest first.
    pub fn batches(&self) -> Result<Vec<StoredBatch>, StoreError> {
        self.each_batch().collect()
    }

    /// Every stored batch, each read on its own: one unreadable record is an error in its
    /// place, not the end (for `tilesolve salvage`).
    pub fn each_batch(&self) -> impl Iterator<Item = Result<StoredBatch, StoreError>> + '_ {
        self.records(None, false)
            .map(|bytes| Ok(decode_record(&bytes?, false)?.0))
    }

    /// Up to `count` batches after the batch `after` (exclusive) in id order, or before it
    /// when `newest_first`: one page, read as a range of keys, however many batches there are.
    pub fn batches_page(
        &self,
        after: Option<u64>,
        count: usize,
        newest_first: bool,
    ) -> Result<Vec<StoredBatch>, StoreError> {
        self.records(after, newest_first)
            .take(count)
            .map(|bytes| Ok(decode_record(&bytes?, false)?.0))
            .collect()
    }

    /// Writes a batch's record (keeping the items it holds, if it holds them).
    pub fn put_batch(&self, batch: &StoredBatch) -> Result<(), StoreError> {
        let items = match self.record(batch.id)? {
            Some(bytes) => decode_record(&bytes, true)?.1,
            None => None,
        };
        self.batch_log
            .put(batch.id, &encode_record(batch, items.as_deref()))?;
        Ok(())
    }

    /// Records a batch as it ended: its held items are written first (a batch recorded
    /// finished is read from the store alone, after a crash too), then its finished record,
    /// over its intake's, a small batch's with its items ([`EMBEDDED_ITEMS_MAX`]; its parts,
    /// if it had any, are then removed).
    pub fn finish_batch(&self, batch: &StoredBatch) -> Result<(), StoreError> {
        let mut ended = self.lock_ended();
        self.write_held(&mut ended)?;
        // A small batch taken in with its items in its record has no part, and its ended
        // items are kept for this record (see `ended`).
        let had_parts = !ended.small.remove(&batch.id);
        let mut kept = ended.take_kept(batch.id);
        let items = match batch.items <= EMBEDDED_ITEMS_MAX {
            true => self
                .taken_in_items(batch.id)?
                .filter(|items| items.len() == batch.items as usize)
                .map(|mut items| {
                    for (index, item) in std::mem::take(&mut kept) {
                        match items.get_mut(index as usize) {
                            Some(slot) => *slot = item,
                            None => {
                                kept.insert(index, item);
                            }
                        }
                    }
                    items
                }),
            false => None,
        };
        if !kept.is_empty() {
            // Not taken into the record: written as any others.
            ended.hold(batch.id, kept);
            self.write_held(&mut ended)?;
        }
        self.batch_log
            .put(batch.id, &encode_record(batch, items.as_deref()))?;
        let key = batch_key(batch.id);
        if items.is_some() && had_parts {
            for part in self.item_parts.scan_prefix(&key).keys() {
                self.item_parts.remove(part?)?;
            }
        }
        // Readers that read the parts (or the kept items) before they went read again.
        ended.written += 1;
        Ok(())
    }

    /// Writes a batch of at most [`EMBEDDED_ITEMS_MAX`] items as taken in: its record with
    /// its items in it, one value instead of a part and a record; its ended items then wait in
    /// memory for its finished record (see `ended`).
    pub fn put_small_batch(
        &self,
        batch: &StoredBatch,
        items: &[StoredItem],
    ) -> Result<(), StoreError> {
        let mut ended = self.lock_ended();
        self.batch_log
            .put(batch.id, &encode_record(batch, Some(items)))?;
        ended.small.insert(batch.id);
        Ok(())
    }

    /// Every item of `batch` as taken in (its record's items, else its parts), when they run
    /// from index 0 without a gap.
    fn taken_in_items(&self, batch: u64) -> Result<Option<Vec<StoredItem>>, StoreError> {
        let mut items = Vec::new();
        for part in self.taken_in_from(batch, 0) {
            let (first, part) = part?;
            if first as usize != items.len() {
                return Ok(None);
            }
            items.extend(part);
        }
        Ok(Some(items))
    }

    /// The items of `batch` as taken in, from the part holding index `start` on: the items its
    /// record holds (one part from 0), else its parts.
    fn taken_in_from(
        &self,
        batch: u64,
        start: u32,
    ) -> Box<dyn Iterator<Item = Result<Part, StoreError>> + '_> {
        match self.embedded_items(batch) {
            Ok(Some(items)) => Box::new(std::iter::once(Ok((0, items)))),
            Ok(None) => Box::new(self.parts_from(batch, start)),
            Err(error) => Box::new(std::iter::once(Err(error))),
        }
    }

    /// Removes a batch and its items; with `solutions`, also the stored answers of its solved
    /// items and every board on their paths. Returns (items, boards) removed.
    pub fn remove_batch(&self, batch: u64, solutions: bool) -> Result<(usize, usize), StoreError> {
        let count = self.batch(batch)?.map_or(0, |stored| stored.items as usize);
        // Items are read only for their answers: a retention pass decodes nothing.
        let stored = match solutions {
            true => self.items(batch)?,
            false => Vec::new(),
        };
        let mut boards = Vec::new();
        let mut board_count = 0;
        for item in &stored {
            let (ItemStatus::Solved(solved), Some(board), Some(goal)) =
                (&item.status, &item.board, &item.goal)
            else {
                continue;
            };
            let (Ok(mut board), Ok(goal), Some(moves)) = (
                tilesolve::parse_board(board),
                tilesolve::parse_board(goal),
                tilesolve::moves::moves_from_string(&solved.moves),
            ) else {
                continue;
            };
            boards.push(board_key(&goal, &board));
            board_count += 1;
            for direction in moves {
                let Some((next, _)) = board.apply(direction) else {
                    break;
                };
                board = next;
                if board != goal {
                    boards.push(board_key(&goal, &board));
                    board_count += 1;
                }
            }
        }
        // A goal's own entry goes when a batch whose board was the goal does.
        self.forget_goals_stored();
        self.forget_ended(batch);
        for key in boards {
            self.answers.remove(&key)?;
        }
        for tree in [&self.items, &self.item_parts] {
            let mut removed = sled::Batch::default();
            for key in tree.scan_prefix(batch_key(batch)).keys() {
                removed.remove(key?);
            }
            tree.apply_batch(removed)?;
        }
        self.batch_log.remove(batch)?;
        Ok((count, board_count))
    }

    /// A batch's items in order.
    pub fn items(&self, batch: u64) -> Result<Vec<StoredItem>, StoreError> {
        Ok(self
            .items_page(batch, 0, usize::MAX)?
            .into_iter()
            .map(|(_, item)| item)
            .collect())
    }

    /// Up to `limit` of a batch's items from index `start` on, with their indices: each as it
    /// ended (held in memory, else `items`), else as it was taken in (`item_parts`).
    pub fn items_page(
        &self,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<Vec<(u32, StoredItem)>, StoreError> {
        loop {
            let (written, held) = self.held_from(batch, start);
            let mut page = self.stored_items_page(batch, start, limit)?;
            if self.overlay_held(written, held, &mut page) {
                return Ok(page);
            }
        }
    }

    /// [`Store::items_page`] as the trees hold it.
    fn stored_items_page(
        &self,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<Vec<(u32, StoredItem)>, StoreError> {
        let mut ended =
            batch_entries::<StoredItem>(&self.items, "items", batch, item_key(batch, start))
                .peekable();
        let mut taken_in = self
            .taken_in_from(batch, start)
            .flat_map(|part| match part {
                Ok((first, items)) => (first..).zip(items).map(Ok).collect(),
                Err(error) => vec![Err(error)],
            })
            .filter(|entry| entry.as_ref().map_or(true, |(index, _)| *index >= start))
            .peekable();
        // Grown once, not by doubling: items are a few hundred bytes each to move.
        let mut page = Vec::with_capacity(limit.min(PAGE_RESERVE_MAX));
        while page.len() < limit {
            // An unreadable entry ends the page with its error.
            if matches!(ended.peek(), Some(Err(_))) {
                ended.next().transpose()?;
            }
            if matches!(taken_in.peek(), Some(Err(_))) {
                taken_in.next().transpose()?;
            }
            let index_of = |entry: Option<&Result<(u32, StoredItem), StoreError>>| {
                entry
                    .and_then(|entry| entry.as_ref().ok())
                    .map(|(index, _)| *index)
            };
            let next = match (index_of(ended.peek()), index_of(taken_in.peek())) {
                (None, None) => break,
                // An item as it ended stands over its part's copy.
                (Some(ended_index), Some(taken_index)) if ended_index == taken_index => {
                    taken_in.next();
                    ended.next()
                }
                (Some(ended_index), Some(taken_index)) if taken_index < ended_index => {
                    taken_in.next()
                }
                (Some(_), _) => ended.next(),
                (None, Some(_)) => taken_in.next(),
            };
            if let Some(entry) = next {
                page.push(entry?);
            }
        }
        Ok(page)
    }

    /// The parts of `batch` that hold index `start` or later ones, in order.
    pub(super) fn parts_from(
        &self,
        batch: u64,
        start: u32,
    ) -> impl Iterator<Item = Result<(u32, Vec<StoredItem>), StoreError>> + '_ {
        // The part holding `start` begins at or before it.
        let from = self
            .item_parts
            .range(item_key(batch, 0)..=item_key(batch, start))
            .next_back()
            .and_then(Result::ok)
            .map_or_else(|| item_key(batch, start), |(key, _)| key.to_vec());
        batch_entries(&self.item_parts, "item_parts", batch, from)
    }

    pub fn item(&self, batch: u64, index: u32) -> Result<Option<StoredItem>, StoreError> {
        if let Some(item) = self.held_item(batch, index) {
            return Ok(Some(item));
        }
        if let Some(bytes) = self.items.get(item_key(batch, index))? {
            return decode("items", &bytes).map(Some);
        }
        Ok(self
            .items_page(batch, index, 1)?
            .into_iter()
            .find(|(found, _)| *found == index)
            .map(|(_, item)| item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record with limits as coordinators wrote it before batches had terms still reads.
    #[test]
    fn a_compact_record_with_limits_alone_reads_as_before() {
        let batch = StoredBatch {
            limits: ItemLimits {
                seconds: Some(3.0),
                nodes: None,
                suboptimal_percent: Some(120),
            },
            ..StoredBatch::new(7, 0, "default", "blank-last", 1)
        };
        let mut bytes = encode_compact(&CompactRecord::from(&batch));
        bytes[0] = COMPACT_WITH_LIMITS;
        bytes = postcard::to_extend(&batch.limits, bytes).unwrap();
        bytes = postcard::to_extend(&Vec::<StoredItem>::new(), bytes).unwrap();
        let (read, items) = decode_record(&bytes, true).unwrap();
        assert_eq!(read, batch);
        assert_eq!(items, Some(Vec::new()));
    }
}
