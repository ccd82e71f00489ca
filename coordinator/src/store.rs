//! The coordinator's store: the only module that touches sled.
//!
//! Trees and keys (every key starts with a format version byte; integers are big-endian so keys
//! sort numerically):
//! - `solutions`: version, side, goal tiles, board tiles -> [`StoredSolution`] (compact). Every
//!   solved board, and every board on the optimal path of an answer that took a real search
//!   (see [`PathBoards`]), is stored with its exact distance.
//! - `batches`: version, batch id (u64) -> [`StoredBatch`] (JSON).
//! - `item_parts`: version, batch id (u64), first item index (u32) -> up to [`ITEMS_PER_PART`]
//!   [`StoredItem`]s (compact), as the batch was taken in: one write for a thousand lines (an
//!   entry each took ten times the CPU of a board's whole answer on a batch of easy boards).
//! - `items`: version, batch id (u64), item index (u32) -> [`StoredItem`] (compact): an item as
//!   it ended, over its part's copy. Batches stored before parts have every item here and no
//!   part; reads merge the two trees, so both read alike.
//! - `search`: version, side, goal tiles, board tiles -> [`SearchState`] (JSON): the proven lower
//!   bound of a puzzle still being solved, so a restart resumes at the right bound.
//! - `tasks`: version, side, goal tiles, board tiles, task id (u64) -> [`TaskRecord`] (JSON):
//!   every task a puzzle's search ran, with its size and time (and its measured parts when the
//!   coordinator asked for them), beside the puzzle's search state; what `tilesolve simulate`
//!   replays.
//! - `meta`: version, name -> value; `incarnation` (u64) counts the coordinator's starts;
//!   `format` (u64) is the newest [`STORE_FORMAT`] that wrote the store (absent: format 1);
//!   `flushed` (u64) counts the flushes that made writes durable.
//!
//! Beside the store directory, `<dir>.flushed` holds the count of the last flush that finished
//! (written after it, by rename): a store whose own count is lower lost writes it had made
//! durable (a damaged or cut-short file, from which sled's recovery silently keeps only what
//! came before the damage), and is refused by name rather than served half empty.
//! [`Store::open_damaged`] opens it anyway, for `tilesolve salvage`.
//!
//! Values are JSON, but for the two trees written for every puzzle: "compact" is a zero byte
//! then postcard, which took a third of the instructions JSON did for an item (encoding it, and
//! reading it back for results). A zero byte never starts JSON, so values either wrote are
//! read: stores from before compact values need no conversion. Postcard does not name fields,
//! so a compact type's fields are never skipped when empty, and a field added to one needs a
//! new leading byte.
//!
//! Writes that acknowledge something to a client (a new batch) are flushed before returning.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use tilesolve::moves::{moves_to_string, replay};
use tilesolve::{Board, Direction, Solution};

const KEY_VERSION: u8 = 1;

/// The store's layout, recorded in `meta` at every open: 1 was every item in `items` (stores
/// from before the format was recorded), 2 adds `item_parts`. A store recorded with a newer
/// format than this is refused by name: this version would miss what it cannot read (the
/// queued items of a batch in parts, for one) instead of failing on it.
pub const STORE_FORMAT: u64 = 2;

/// Items of a batch kept in one `item_parts` value: what a results page decodes at most beyond
/// its own items, and the intake's part ([`crate::scheduler`] takes batches in a thousand
/// lines at a time).
pub const ITEMS_PER_PART: usize = 1_000;

/// Whether [`Store::put_solution`] stores the boards on a solution's path besides its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathBoards {
    Stored,
    /// Only the solved board (and the goal): for answers found so cheaply that searching a
    /// path board again costs less than writing 40 to 80 entries for every answer.
    Skipped,
}

/// The store's page cache unless told otherwise: lookups of recent answers and batches hit it;
/// everything else is a read from the page cache of the kernel.
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Sled(#[from] sled::Error),
    #[error("store: unreadable record under {tree}: {reason}")]
    Corrupt { tree: &'static str, reason: String },
    /// The store could not be opened: named by its path, since an operator has to go and look.
    #[error(
        "store {}: {reason} (is another coordinator using it? if it is damaged: `tilesolve \
         salvage --data {} -o rescue.jsonl` rescues what it still holds, then move it aside, \
         restart and `tilesolve import rescue.jsonl`)",
        path.display(),
        path.parent().unwrap_or(path).display()
    )]
    Open { path: PathBuf, reason: String },
    #[error(
        "store {}: written by a newer tilesolve (store format {format}; this version reads formats \
         up to {STORE_FORMAT}): run that version on it, or import an export of it into a new store",
        path.display()
    )]
    Newer { path: PathBuf, format: u64 },
    #[error(
        "store {}: damaged: it holds writes up to flush {found}, and flush {expected} had finished ({reason}); nothing was changed. To rescue what it still holds: `tilesolve salvage --data {} -o rescue.jsonl`, then move {} aside, start the coordinator and `tilesolve import rescue.jsonl`",
        path.display(),
        path.parent().unwrap_or(path).display(),
        path.display()
    )]
    Damaged {
        path: PathBuf,
        found: u64,
        expected: u64,
        reason: &'static str,
    },
}

/// A solved board: the optimal moves from it to its goal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredSolution {
    pub length: u32,
    /// The blank's moves, one letter each.
    pub moves: String,
    pub tiles: Vec<u8>,
    /// Nodes the search took: at least 1 for a board that was searched or proven on its own,
    /// 0 for boards stored as part of another board's path.
    pub nodes: u64,
    pub seconds: f64,
    pub heuristic: String,
    /// The workers whose reports the answer rests on: if one of them is caught lying, the
    /// answer is withdrawn and solved again ([`Store::withdraw_worker`]). (Absent from JSON
    /// values written before it was kept.)
    #[serde(default)]
    pub workers: Vec<u64>,
}

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
        }
    }
}

/// A finished batch's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchFigures {
    pub solved: u32,
    pub failed: u32,
    /// Expanded nodes its tasks reported, and the seconds from submission (or the last
    /// resumption) to its end, in the process that finished it.
    pub nodes: u64,
    pub seconds: f64,
}

/// Where an item stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ItemStatus {
    Queued,
    Solved(StoredSolution),
    Failed(String),
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

/// A puzzle's search progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchState {
    /// No solution shorter than this exists (an iteration at this bound has not finished).
    pub lower_bound: u32,
    /// The workers whose reports the bound rests on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<u64>,
}

/// One finished task of a puzzle's search, as recorded for replaying the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub batch: u64,
    pub index: u32,
    pub bound: u32,
    /// Moves from the puzzle's root to the task's board.
    pub path: String,
    /// A whole-puzzle task (IDA* from `bound` within a node budget).
    pub iterate: bool,
    pub outcome: RecordedOutcome,
    pub nodes: u64,
    /// The search's wall time on the worker.
    pub seconds: f64,
    /// From the lease to the report, at the coordinator.
    pub round_trip_seconds: f64,
    /// The measured descendants: (moves from the task's board, expanded nodes, microseconds).
    pub parts: Vec<(String, u64, u64)>,
    /// Measured after the run by `tilesolve simulate --complete` (a task the solution had
    /// cancelled), not by a worker.
    #[serde(default)]
    pub measured_after: bool,
}

/// How a recorded task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordedOutcome {
    /// Found a goal; the solution's length.
    Found(u32),
    /// No goal within the bound; the least f over it.
    Exceeded(u32),
    /// A whole-puzzle task spent its budget in the iteration at this bound.
    BudgetSpent(u32),
    /// A subtree task spent its budget and came back as its children.
    Split,
    /// Still queued or running when another task found the solution: its size is unknown.
    Cancelled,
}

/// The coordinator's sled database.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    solutions: sled::Tree,
    batches: sled::Tree,
    items: sled::Tree,
    item_parts: sled::Tree,
    search: sled::Tree,
    tasks: sled::Tree,
    meta: sled::Tree,
    /// Keys of goals whose own entry (length 0) is known to be stored: every answer would
    /// otherwise look it up again.
    goals_stored: Arc<Mutex<HashSet<Vec<u8>>>>,
    /// The flush count (`meta` `flushed`) and the guard file beside the store.
    flushes: Arc<FlushGuard>,
}

/// What a store's flushes made durable, counted in `meta` and in a file beside it.
struct FlushGuard {
    path: PathBuf,
    next: AtomicU64,
    /// The highest count written to the file (files are written in increasing order).
    written: Mutex<u64>,
}

impl FlushGuard {
    fn path_for(dir: &Path) -> PathBuf {
        let mut name = dir.file_name().unwrap_or_default().to_os_string();
        name.push(".flushed");
        dir.with_file_name(name)
    }

    /// The count the file holds (0 without a file: a new store, or one from before it).
    fn read(path: &Path) -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Records that flush `count` finished. Not synced: after a power cut the file may say
    /// less than the store holds, never more.
    fn record(&self, count: u64) -> std::io::Result<()> {
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if count <= *written {
            return Ok(());
        }
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".new");
        std::fs::write(&temporary, count.to_string())?;
        std::fs::rename(&temporary, &self.path)?;
        *written = count;
        Ok(())
    }
}

fn board_key(goal: &Board, board: &Board) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + 2 * goal.cells());
    key.push(KEY_VERSION);
    key.push(goal.side() as u8);
    key.extend_from_slice(goal.tiles());
    key.extend_from_slice(board.tiles());
    key
}

fn meta_key(name: &str) -> Vec<u8> {
    let mut key = vec![KEY_VERSION];
    key.extend_from_slice(name.as_bytes());
    key
}

fn batch_key(id: u64) -> Vec<u8> {
    let mut key = vec![KEY_VERSION];
    key.extend_from_slice(&id.to_be_bytes());
    key
}

fn item_key(batch: u64, index: u32) -> Vec<u8> {
    let mut key = batch_key(batch);
    key.extend_from_slice(&index.to_be_bytes());
    key
}

/// `tree`'s values of `batch` from key `from` on, each with the item index ending its key.
fn batch_entries<'a, T: for<'de> Deserialize<'de>>(
    tree: &'a sled::Tree,
    name: &'static str,
    batch: u64,
    from: Vec<u8>,
) -> impl Iterator<Item = Result<(u32, T), StoreError>> + 'a {
    let prefix = batch_key(batch);
    tree.range(from..)
        .take_while(move |entry| {
            entry
                .as_ref()
                .map_or(true, |(key, _)| key.starts_with(&prefix))
        })
        .map(move |entry| {
            let (key, bytes) = entry?;
            Ok((item_index(&key), decode(name, &bytes)?))
        })
}

/// The item index that ends an `items` or `item_parts` key.
fn item_index(key: &[u8]) -> u32 {
    key.get(key.len().saturating_sub(4)..)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// The first byte of a compact value.
const COMPACT: u8 = 0;

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A value of the `solutions` or `items` tree (see the module's notes).
fn encode_compact<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_extend(value, vec![COMPACT]).unwrap_or_default()
}

/// Reads a value in either form.
fn decode<T: for<'de> Deserialize<'de>>(tree: &'static str, bytes: &[u8]) -> Result<T, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { tree, reason };
    match bytes.split_first() {
        Some((&COMPACT, compact)) => {
            postcard::from_bytes(compact).map_err(|e| corrupt(e.to_string()))
        }
        _ => serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string())),
    }
}

impl Store {
    /// Opens (or creates) the store in `dir`, with the default page cache.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with_cache(dir, DEFAULT_CACHE_BYTES)
    }

    /// Opens (or creates) the store in `dir`; sled keeps at most about `cache_bytes` of pages
    /// in memory (its own default, 1 GiB, was most of a busy coordinator's memory).
    pub fn open_with_cache(dir: &Path, cache_bytes: u64) -> Result<Store, StoreError> {
        let store = Store::open_unchecked(dir, cache_bytes)?;
        let found = store.meta_u64("flushed")?.unwrap_or(0);
        let expected = FlushGuard::read(&store.flushes.path);
        if found < expected {
            return Err(StoreError::Damaged {
                path: dir.to_path_buf(),
                found,
                expected,
                reason: "a disk fault or a file cut short",
            });
        }
        let format = store.meta_u64("format")?.unwrap_or(1);
        if format > STORE_FORMAT {
            return Err(StoreError::Newer {
                path: dir.to_path_buf(),
                format,
            });
        }
        if format < STORE_FORMAT {
            store
                .meta
                .insert(meta_key("format"), &STORE_FORMAT.to_be_bytes())?;
        }
        Ok(store)
    }

    /// Opens a store [`Store::open`] refused as damaged, to read what it still holds (for
    /// `tilesolve salvage`; give it a copy: sled's recovery may rewrite the files).
    pub fn open_damaged(dir: &Path) -> Result<Store, StoreError> {
        Store::open_unchecked(dir, DEFAULT_CACHE_BYTES)
    }

    /// Opens the sled database without checking its flush count or format. A panic inside
    /// sled (it has them on some damaged files) is an error naming the store.
    fn open_unchecked(dir: &Path, cache_bytes: u64) -> Result<Store, StoreError> {
        if !dir.join("db").exists() {
            // A new store (the damaged one moved aside): an old guard says nothing of it.
            let _ = std::fs::remove_file(FlushGuard::path_for(dir));
        }
        let opened = || -> Result<Store, sled::Error> {
            let db = sled::Config::new()
                .path(dir)
                .cache_capacity(cache_bytes)
                .open()?;
            let guard = FlushGuard::path_for(dir);
            Ok(Store {
                solutions: db.open_tree("solutions")?,
                batches: db.open_tree("batches")?,
                items: db.open_tree("items")?,
                item_parts: db.open_tree("item_parts")?,
                search: db.open_tree("search")?,
                tasks: db.open_tree("tasks")?,
                meta: db.open_tree("meta")?,
                goals_stored: Arc::default(),
                flushes: Arc::new(FlushGuard {
                    written: Mutex::new(FlushGuard::read(&guard)),
                    path: guard,
                    next: AtomicU64::new(0),
                }),
                db,
            })
        };
        let open_error = |reason: String| StoreError::Open {
            path: dir.to_path_buf(),
            reason,
        };
        let store = std::panic::catch_unwind(opened)
            .map_err(|panic| {
                open_error(format!("sled stopped reading it: {}", panic_text(&panic)))
            })?
            .map_err(|error| open_error(error.to_string()))?;
        let counted = store.meta_u64("flushed")?.unwrap_or(0);
        let written = *store
            .flushes
            .written
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        store
            .flushes
            .next
            .store(counted.max(written) + 1, Ordering::SeqCst);
        Ok(store)
    }

    /// A number kept in `meta` under `name`.
    fn meta_u64(&self, name: &str) -> Result<Option<u64>, StoreError> {
        self.meta
            .get(meta_key(name))?
            .map(|bytes| {
                <[u8; 8]>::try_from(bytes.as_ref())
                    .map(u64::from_be_bytes)
                    .map_err(|_| StoreError::Corrupt {
                        tree: "meta",
                        reason: format!("{name} is not 8 bytes"),
                    })
            })
            .transpose()
    }

    /// The stored solution of `board` towards `goal`, if it was ever solved or lay on a solved
    /// optimal path.
    pub fn solution(
        &self,
        goal: &Board,
        board: &Board,
    ) -> Result<Option<StoredSolution>, StoreError> {
        self.solutions
            .get(board_key(goal, board))?
            .map(|bytes| decode("solutions", &bytes))
            .transpose()
    }

    /// Every stored solution that was searched for or proven on its own (`nodes > 0`; the
    /// boards on its path follow from it), with its goal and board, in key order.
    pub fn searched_solutions(
        &self,
    ) -> impl Iterator<Item = Result<(Board, Board, StoredSolution), StoreError>> + '_ {
        self.solutions.iter().filter_map(|entry| {
            let read = || -> Result<Option<(Board, Board, StoredSolution)>, StoreError> {
                let (key, value) = entry?;
                let solution: StoredSolution = decode("solutions", &value)?;
                if solution.nodes == 0 {
                    return Ok(None);
                }
                let corrupt = || StoreError::Corrupt {
                    tree: "solutions",
                    reason: "a key that is not a goal and a board".into(),
                };
                let cells = (*key.get(1).ok_or_else(corrupt)? as usize).pow(2);
                let tiles = |range: std::ops::Range<usize>| -> Result<Board, StoreError> {
                    let values: Vec<u64> = key
                        .get(range)
                        .ok_or_else(corrupt)?
                        .iter()
                        .map(|&t| u64::from(t))
                        .collect();
                    Board::from_tiles(&values).map_err(|_| corrupt())
                };
                let goal = tiles(2..2 + cells)?;
                let board = tiles(2 + cells..2 + 2 * cells)?;
                Ok(Some((goal, board, solution)))
            };
            read().transpose()
        })
    }

    /// Stores a replayed optimal solution, marked with the `workers` whose reports it rests on;
    /// with [`PathBoards::Stored`] also every board on its path with its exact distance (each
    /// suffix of an optimal path is optimal).
    pub fn put_solution(
        &self,
        solution: &Solution,
        heuristic: &str,
        workers: &[u64],
        path_boards: PathBoards,
    ) -> Result<(), StoreError> {
        // Plain inserts, not a sled batch: every entry is a whole answer on its own, so a crash
        // between them loses nothing that matters, and sled writes its log out twice for every
        // batch (that was most of the coordinator's time on a batch of easy boards).
        let mut board = solution.board;
        let stored_steps = match path_boards {
            PathBoards::Stored => solution.moves.len(),
            PathBoards::Skipped => 1,
        };
        for (step, &direction) in solution.moves.iter().enumerate().take(stored_steps) {
            let stored = StoredSolution {
                length: (solution.moves.len() - step) as u32,
                moves: moves_to_string(&solution.moves[step..]),
                tiles: solution.tiles[step..].to_vec(),
                // At least 1 for the board searched (its root was looked at, even when an
                // exact table or a claim proven at its bound took no expansion): 0 marks the
                // boards stored only as part of its path, which an export leaves out.
                nodes: if step == 0 {
                    solution.counters.expanded.max(1)
                } else {
                    0
                },
                seconds: if step == 0 { solution.seconds } else { 0.0 },
                heuristic: heuristic.to_string(),
                workers: workers.to_vec(),
            };
            self.solutions
                .insert(board_key(&solution.goal, &board), encode_compact(&stored))?;
            board = board.apply(direction).map_or(board, |(next, _)| next);
        }
        let goal_key = board_key(&solution.goal, &solution.goal);
        let mut goals_stored = self.goals_stored.lock().unwrap_or_else(|p| p.into_inner());
        if goals_stored.contains(&goal_key) {
            return Ok(());
        }
        if !self.solutions.contains_key(&goal_key)? {
            self.solutions.insert(
                goal_key.clone(),
                encode_compact(&StoredSolution {
                    length: 0,
                    moves: String::new(),
                    tiles: Vec::new(),
                    nodes: 0,
                    seconds: 0.0,
                    heuristic: heuristic.into(),
                    workers: Vec::new(),
                }),
            )?;
        }
        goals_stored.insert(goal_key);
        Ok(())
    }

    fn forget_goals_stored(&self) {
        self.goals_stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Checks a stored solution by replaying it; `None` if it does not replay (never trusted).
    pub fn verified(
        goal: &Board,
        board: &Board,
        stored: &StoredSolution,
    ) -> Option<Vec<Direction>> {
        let moves: Option<Vec<Direction>> = stored
            .moves
            .chars()
            .map(|c| Direction::ALL.into_iter().find(|d| d.letter() == c))
            .collect();
        let moves = moves?;
        replay(board, goal, &moves).ok().map(|_| moves)
    }

    /// One more than the largest batch id in either tree. A batch's items are written before
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
        Ok(last(&self.batches)?
            .max(last(&self.items)?)
            .max(last(&self.item_parts)?)
            + 1)
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
        self.batches
            .get(batch_key(id))?
            .map(|bytes| decode("batches", &bytes))
            .transpose()
    }

    /// Every batch, oldest first.
    pub fn batches(&self) -> Result<Vec<StoredBatch>, StoreError> {
        self.batches
            .iter()
            .values()
            .map(|bytes| decode("batches", &bytes?))
            .collect()
    }

    /// Every stored batch, each read on its own: one unreadable record is an error in its
    /// place, not the end (for `tilesolve salvage`).
    pub fn each_batch(&self) -> impl Iterator<Item = Result<StoredBatch, StoreError>> + '_ {
        self.batches
            .iter()
            .values()
            .map(|bytes| decode("batches", &bytes?))
    }

    /// The `count` most recent batches, newest first.
    pub fn recent_batches(&self, count: usize) -> Result<Vec<StoredBatch>, StoreError> {
        self.batches_page(None, count, true)
    }

    /// Up to `count` batches after the batch `after` (exclusive) in id order, or before it
    /// when `newest_first`: one page, read as a range of keys, however many batches there are.
    pub fn batches_page(
        &self,
        after: Option<u64>,
        count: usize,
        newest_first: bool,
    ) -> Result<Vec<StoredBatch>, StoreError> {
        let range = match (after, newest_first) {
            (None, _) => self.batches.range::<Vec<u8>, _>(..),
            (Some(id), false) => self.batches.range(batch_key(id.saturating_add(1))..),
            (Some(id), true) => self.batches.range(..batch_key(id)),
        };
        let values = range.values();
        let page: Box<dyn Iterator<Item = sled::Result<sled::IVec>>> = if newest_first {
            Box::new(values.rev())
        } else {
            Box::new(values)
        };
        page.take(count)
            .map(|bytes| decode("batches", &bytes?))
            .collect()
    }

    /// Bytes the database takes on disk (0 if sled cannot tell).
    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }

    pub fn put_batch(&self, batch: &StoredBatch) -> Result<(), StoreError> {
        self.batches.insert(batch_key(batch.id), encode(batch))?;
        Ok(())
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
        let mut boards = sled::Batch::default();
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
            boards.remove(board_key(&goal, &board));
            board_count += 1;
            for direction in moves {
                let Some((next, _)) = board.apply(direction) else {
                    break;
                };
                board = next;
                if board != goal {
                    boards.remove(board_key(&goal, &board));
                    board_count += 1;
                }
            }
        }
        // A goal's own entry goes when a batch whose board was the goal does.
        self.forget_goals_stored();
        self.solutions.apply_batch(boards)?;
        for tree in [&self.items, &self.item_parts] {
            let mut removed = sled::Batch::default();
            for key in tree.scan_prefix(batch_key(batch)).keys() {
                removed.remove(key?);
            }
            tree.apply_batch(removed)?;
        }
        self.batches.remove(batch_key(batch))?;
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
    /// ended (`items`), else as it was taken in (`item_parts`).
    pub fn items_page(
        &self,
        batch: u64,
        start: u32,
        limit: usize,
    ) -> Result<Vec<(u32, StoredItem)>, StoreError> {
        let mut ended =
            batch_entries::<StoredItem>(&self.items, "items", batch, item_key(batch, start))
                .peekable();
        let mut taken_in = self
            .parts_from(batch, start)
            .flat_map(|part| match part {
                Ok((first, items)) => (first..).zip(items).map(Ok).collect(),
                Err(error) => vec![Err(error)],
            })
            .filter(|entry| entry.as_ref().map_or(true, |(index, _)| *index >= start))
            .peekable();
        let mut page = Vec::new();
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
    fn parts_from(
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
        if let Some(bytes) = self.items.get(item_key(batch, index))? {
            return decode("items", &bytes).map(Some);
        }
        Ok(self
            .items_page(batch, index, 1)?
            .into_iter()
            .find(|(found, _)| *found == index)
            .map(|(_, item)| item))
    }

    pub fn put_item(&self, batch: u64, index: u32, item: &StoredItem) -> Result<(), StoreError> {
        self.items
            .insert(item_key(batch, index), encode_compact(item))?;
        Ok(())
    }

    /// Removes every stored solution and search state that rests on `worker`'s reports (it was
    /// caught lying); returns how many of each. A pass over both trees: quarantines are rare.
    pub fn withdraw_worker(&self, worker: u64) -> Result<(usize, usize), StoreError> {
        self.forget_goals_stored();
        let solutions = remove_where(&self.solutions, "solutions", |s: StoredSolution| {
            s.workers.contains(&worker)
        })?;
        let states = remove_where(&self.search, "search", |s: SearchState| {
            s.workers.contains(&worker)
        })?;
        Ok((solutions, states))
    }

    pub fn search_state(
        &self,
        goal: &Board,
        board: &Board,
    ) -> Result<Option<SearchState>, StoreError> {
        self.search
            .get(board_key(goal, board))?
            .map(|bytes| decode("search", &bytes))
            .transpose()
    }

    pub fn remove_search_state(&self, goal: &Board, board: &Board) -> Result<(), StoreError> {
        self.search.remove(board_key(goal, board))?;
        Ok(())
    }

    pub fn put_search_state(
        &self,
        goal: &Board,
        board: &Board,
        state: SearchState,
    ) -> Result<(), StoreError> {
        self.search.insert(board_key(goal, board), encode(&state))?;
        Ok(())
    }

    /// Records a finished task of the puzzle `board` (written by sled within half a second; a
    /// record lost in a crash only makes a replay of that run less complete).
    pub fn put_task_record(
        &self,
        goal: &Board,
        board: &Board,
        task: u64,
        record: &TaskRecord,
    ) -> Result<(), StoreError> {
        let mut key = board_key(goal, board);
        key.extend_from_slice(&task.to_be_bytes());
        self.tasks.insert(key, encode(record))?;
        Ok(())
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
        self.tasks
            .scan_prefix(&prefix)
            .map(|entry| {
                let (key, value) = entry?;
                let id = key
                    .get(prefix.len()..)
                    .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
                    .map(u64::from_be_bytes)
                    .ok_or(StoreError::Corrupt {
                        tree: "tasks",
                        reason: "a key without a task id".into(),
                    })?;
                Ok((id, decode("tasks", &value)?))
            })
            .collect()
    }

    /// Counts one more start of the coordinator on these files and returns the new count, flushed
    /// before it is returned so that no two starts ever see the same number.
    pub fn next_incarnation(&self) -> Result<u64, StoreError> {
        let next = self.meta_u64("incarnation")?.unwrap_or(0) + 1;
        self.meta
            .insert(meta_key("incarnation"), &next.to_be_bytes())?;
        self.db.flush()?;
        Ok(next)
    }

    /// Whether the store still takes writes: once one write failed (a full disk), sled fails
    /// every later one, even after space returns, until the store is opened again. It writes
    /// (a key overwritten each time) and flushes: a flush with nothing to write says nothing.
    pub fn writable(&self) -> Result<(), StoreError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        self.meta.insert(meta_key("probe"), &now.to_be_bytes())?;
        self.db.flush()?;
        Ok(())
    }

    /// Whether `error` is the disk being full.
    pub fn is_disk_full(error: &StoreError) -> bool {
        matches!(error, StoreError::Sled(sled::Error::Io(io)) if io.kind() == std::io::ErrorKind::StorageFull)
    }

    /// Makes every write so far durable, and records that it did beside the store.
    pub fn flush(&self) -> Result<(), StoreError> {
        let count = self.flushes.next.fetch_add(1, Ordering::SeqCst);
        self.meta
            .insert(meta_key("flushed"), &count.to_be_bytes())?;
        self.db.flush()?;
        self.flushes
            .record(count)
            .map_err(|error| StoreError::Sled(sled::Error::Io(error)))?;
        Ok(())
    }
}

/// What a caught panic said.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Removes the records of `tree` for which `condition` holds; returns how many.
fn remove_where<T: serde::de::DeserializeOwned>(
    tree: &sled::Tree,
    name: &'static str,
    condition: impl Fn(T) -> bool,
) -> Result<usize, StoreError> {
    let mut batch = sled::Batch::default();
    let mut removed = 0;
    for entry in tree.iter() {
        let (key, value) = entry?;
        if condition(decode(name, &value)?) {
            batch.remove(key);
            removed += 1;
        }
    }
    tree.apply_batch(batch)?;
    Ok(removed)
}

/// Opens a store that this process has just closed: sled releases its file lock from a
/// background thread shortly after the last handle is dropped, so the first attempts may find
/// it still held.
#[cfg(test)]
pub(crate) fn reopen(dir: &Path) -> Store {
    for _ in 0..100 {
        if let Ok(store) = Store::open(dir) {
            return store;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Store::open(dir).expect("the store reopens")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilesolve::heuristic::HeuristicKind;
    use tilesolve::{SolveOptions, Solver};

    /// A batch stored as the scheduler's intake stores one: items, then its record.
    fn create_batch(store: &Store, goal: &str, items: &[StoredItem], now_unix_ms: u64) -> u64 {
        let id = store.next_batch_id().unwrap();
        store.put_items(id, 0, items).unwrap();
        store
            .put_batch(&StoredBatch::new(
                id,
                items.len(),
                "default",
                goal,
                now_unix_ms,
            ))
            .unwrap();
        id
    }

    fn item(text: &str) -> StoredItem {
        StoredItem {
            claimed: None,
            text: text.into(),
            line: Some(1),
            board: Some(text.into()),
            goal: None,
            status: ItemStatus::Queued,
        }
    }

    #[test]
    fn a_store_that_cannot_be_opened_is_named_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        std::fs::write(&path, b"not a directory").unwrap();
        let message = Store::open(&path).err().expect("refused").to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
    }

    #[test]
    fn a_store_that_lost_flushed_writes_is_refused_by_name_and_opens_for_salvage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        {
            let store = Store::open(&path).unwrap();
            store.flush().unwrap();
            store.flush().unwrap();
        }
        let guard = dir.path().join("store.flushed");
        assert_eq!(std::fs::read_to_string(&guard).unwrap(), "2");
        drop(reopen(&path));
        // As if the store's last flushes were lost after they finished.
        std::fs::write(&guard, "7").unwrap();
        let mut refused = Store::open(&path);
        for _ in 0..100 {
            if !matches!(refused, Err(StoreError::Open { .. })) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            refused = Store::open(&path);
        }
        let message = refused.err().expect("refused").to_string();
        assert!(
            message.contains(&format!("store {}: damaged", path.display()))
                && message.contains("tilesolve salvage --data"),
            "{message}"
        );
        assert!(Store::open_damaged(&path).is_ok());
    }

    #[test]
    fn a_store_of_a_newer_format_is_refused_by_name_and_an_older_one_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            assert_eq!(store.meta_u64("format").unwrap(), Some(STORE_FORMAT));
            // As a store from before the format was recorded.
            store.meta.remove(meta_key("format")).unwrap();
            store.flush().unwrap();
        }
        {
            let store = reopen(dir.path());
            assert_eq!(store.meta_u64("format").unwrap(), Some(STORE_FORMAT));
            store
                .meta
                .insert(meta_key("format"), &(STORE_FORMAT + 1).to_be_bytes())
                .unwrap();
            store.flush().unwrap();
        }
        let refused = (0..100)
            .find_map(|_| match Store::open(dir.path()) {
                Err(error @ StoreError::Newer { .. }) => Some(error),
                _ => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    None
                }
            })
            .expect("refused as newer");
        let message = refused.to_string();
        assert!(
            message.contains(&dir.path().display().to_string())
                && message.contains(&format!("store format {}", STORE_FORMAT + 1)),
            "{message}"
        );
    }

    #[test]
    fn batch_ids_stay_small_and_sequential_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut ids = Vec::new();
        for _ in 0..3 {
            let store = reopen(dir.path());
            ids.push(create_batch(&store, "blank-last", &[item("1,2,3")], 0));
            ids.push(create_batch(&store, "blank-last", &[item("1,2,3")], 0));
            store.flush().unwrap();
        }
        assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn batches_survive_reopening_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let id = {
            let store = Store::open(dir.path()).unwrap();
            let id = create_batch(
                &store,
                "blank-last",
                &[item("1,2,3,4,5,6,7,0,8"), item("bad")],
                42,
            );
            store.flush().unwrap();
            let mut second = item("bad");
            second.status = ItemStatus::Failed("unexpected 'b' at column 1".into());
            store.put_item(id, 1, &second).unwrap();
            store.flush().unwrap();
            id
        };
        let store = reopen(dir.path());
        let batch = store.batch(id).unwrap().unwrap();
        assert_eq!((batch.items, batch.submitted_unix_ms), (2, 42));
        let items = store.items(id).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].status, ItemStatus::Queued);
        assert!(
            matches!(&items[1].status, ItemStatus::Failed(reason) if reason.contains("column 1"))
        );
        assert_eq!(store.batches().unwrap().len(), 1);
        assert!(store.batch(id + 1).unwrap().is_none());
    }

    #[test]
    fn items_read_as_they_ended_over_their_parts_across_part_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let total = 2 * ITEMS_PER_PART + 5;
        let items: Vec<StoredItem> = (0..total).map(|i| item(&format!("line {i}"))).collect();
        let id = create_batch(&store, "blank-last", &items, 1);
        assert_eq!(store.item_parts.len(), 3);
        let failed = |i: usize| StoredItem {
            status: ItemStatus::Failed(format!("reason {i}")),
            ..items[i].clone()
        };
        let ended = [0, ITEMS_PER_PART - 1, ITEMS_PER_PART, total - 1];
        for &i in &ended {
            store.put_item(id, i as u32, &failed(i)).unwrap();
        }
        let expected: Vec<StoredItem> = (0..total)
            .map(|i| match ended.contains(&i) {
                true => failed(i),
                false => items[i].clone(),
            })
            .collect();
        assert_eq!(store.items(id).unwrap(), expected);
        // Pages starting inside a part and crossing into the next.
        for (start, limit) in [(0, 3), (ITEMS_PER_PART - 2, 4), (total - 2, 10), (total, 5)] {
            let page = store.items_page(id, start as u32, limit).unwrap();
            let want: Vec<(u32, StoredItem)> = (start..total.min(start + limit))
                .map(|i| (i as u32, expected[i].clone()))
                .collect();
            assert_eq!(page, want, "page from {start}");
        }
        assert_eq!(
            store.item(id, ITEMS_PER_PART as u32).unwrap(),
            Some(failed(ITEMS_PER_PART))
        );
        assert_eq!(store.item(id, 7).unwrap(), Some(items[7].clone()));
        assert_eq!(store.item(id, total as u32).unwrap(), None);
        // A batch stored before parts: every item in `items`.
        for i in 0..3u32 {
            store.put_item(id + 1, i, &items[i as usize]).unwrap();
        }
        assert_eq!(store.items(id + 1).unwrap(), items[..3].to_vec());
        assert_eq!(store.next_batch_id().unwrap(), id + 2);
        assert_eq!(store.remove_batch(id, false).unwrap(), (total, 0));
        assert!(store.items(id).unwrap().is_empty());
        assert_eq!(
            (store.item_parts.len(), store.items(id + 1).unwrap().len()),
            (0, 3)
        );
    }

    /// A 31-move 8-puzzle, its goal and its solution.
    fn solved_eight_puzzle() -> (Board, Board, Solution) {
        let goal = Board::blank_last(3);
        let board = tilesolve::parse_board("8,6,7,2,5,4,3,0,1").unwrap();
        let solution = Solver::new(goal, HeuristicKind::Manhattan)
            .solve(&board, &SolveOptions::default(), None)
            .unwrap();
        (goal, board, solution)
    }

    #[test]
    fn json_values_of_earlier_versions_are_read_beside_compact_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (goal, board, solution) = solved_eight_puzzle();
        // As an earlier version wrote them: JSON, empty fields left out.
        let old_solution = r#"{"length":2,"moves":"DR","tiles":[6,8],"nodes":3,"seconds":0.5,"heuristic":"manhattan"}"#;
        let old_item = format!(
            r#"{{"text":"{board}","line":4,"board":"{board}","goal":"{goal}","status":{{"Solved":{old_solution}}}}}"#
        );
        store
            .solutions
            .insert(board_key(&goal, &board), old_solution.as_bytes())
            .unwrap();
        store
            .items
            .insert(item_key(9, 0), old_item.as_bytes())
            .unwrap();
        let expected = StoredSolution {
            length: 2,
            moves: "DR".into(),
            tiles: vec![6, 8],
            nodes: 3,
            seconds: 0.5,
            heuristic: "manhattan".into(),
            workers: Vec::new(),
        };
        assert_eq!(
            store.solution(&goal, &board).unwrap(),
            Some(expected.clone())
        );
        let read = store.item(9, 0).unwrap().expect("stored");
        assert_eq!((read.line, read.claimed.as_deref()), (Some(4), None));
        assert_eq!(read.status, ItemStatus::Solved(expected));
        // Written again, compact, and read back the same.
        store.put_item(9, 1, &read).unwrap();
        assert_eq!(
            store.items.get(item_key(9, 1)).unwrap().unwrap()[0],
            COMPACT
        );
        assert_eq!(store.item(9, 1).unwrap(), Some(read));
        store
            .put_solution(&solution, "manhattan", &[7], PathBoards::Skipped)
            .unwrap();
        let stored = store.solution(&goal, &board).unwrap().expect("stored");
        assert_eq!((stored.length, stored.workers), (31, vec![7]));
    }

    #[test]
    fn a_cheap_answer_stores_its_board_and_not_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (goal, board, solution) = solved_eight_puzzle();
        store
            .put_solution(&solution, "manhattan", &[], PathBoards::Skipped)
            .unwrap();
        let stored = store.solution(&goal, &board).unwrap().expect("stored");
        assert_eq!(stored.length, 31);
        assert!(Store::verified(&goal, &board, &stored).is_some());
        let next = board.apply(solution.moves[0]).unwrap().0;
        assert!(store.solution(&goal, &next).unwrap().is_none());
    }

    #[test]
    fn every_board_on_a_solution_path_is_stored_with_its_distance() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (goal, board, solution) = solved_eight_puzzle();
        store
            .put_solution(&solution, "manhattan", &[], PathBoards::Stored)
            .unwrap();
        let mut current = board;
        for (step, &direction) in solution.moves.iter().enumerate() {
            let stored = store.solution(&goal, &current).unwrap().expect("stored");
            assert_eq!(stored.length as usize, 31 - step);
            assert!(Store::verified(&goal, &current, &stored).is_some());
            current = current.apply(direction).unwrap().0;
        }
        assert_eq!(store.solution(&goal, &goal).unwrap().unwrap().length, 0);
        let other_goal = Board::blank_first(3);
        assert!(
            store.solution(&other_goal, &board).unwrap().is_none(),
            "solutions are per goal"
        );
        let mut forged = store.solution(&goal, &board).unwrap().unwrap();
        forged.moves = "UUUU".into();
        assert!(
            Store::verified(&goal, &board, &forged).is_none(),
            "a stored answer is replayed, not trusted"
        );
    }

    #[test]
    fn incarnations_grow_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let first = Store::open(dir.path()).unwrap().next_incarnation().unwrap();
        let second = reopen(dir.path()).next_incarnation().unwrap();
        assert_eq!((first, second), (1, 2));
    }

    #[test]
    fn task_records_are_kept_per_puzzle_in_creation_order() {
        let dir = tempfile::tempdir().unwrap();
        let goal = Board::blank_last(3);
        let board = tilesolve::parse_board("8,6,7,2,5,4,3,0,1").unwrap();
        let other = tilesolve::parse_board("1,2,3,4,5,6,7,0,8").unwrap();
        let record = |bound: u32, path: &str| TaskRecord {
            batch: 1,
            index: 0,
            bound,
            path: path.into(),
            iterate: false,
            outcome: RecordedOutcome::Exceeded(bound + 2),
            nodes: 10,
            seconds: 0.5,
            round_trip_seconds: 0.6,
            parts: vec![("UL".into(), 4, 7)],
            measured_after: false,
        };
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .put_task_record(&goal, &board, 300, &record(29, "R"))
                .unwrap();
            store
                .put_task_record(&goal, &board, 7, &record(27, "L"))
                .unwrap();
            store
                .put_task_record(&goal, &other, 8, &record(1, ""))
                .unwrap();
            store.flush().unwrap();
        }
        let store = reopen(dir.path());
        assert_eq!(
            store.task_records(&goal, &board).unwrap(),
            vec![record(27, "L"), record(29, "R")]
        );
        assert_eq!(store.task_records(&goal, &other).unwrap().len(), 1);
    }

    #[test]
    fn search_state_is_kept_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let goal = Board::blank_last(3);
        let board = tilesolve::parse_board("2,4,0,1,8,5,3,6,7").unwrap();
        let state = SearchState {
            lower_bound: 24,
            workers: vec![7],
        };
        store
            .put_search_state(&goal, &board, state.clone())
            .unwrap();
        assert_eq!(store.search_state(&goal, &board).unwrap(), Some(state));
        // Storing the answer leaves it (the scheduler removes it if its puzzle stored one).
        let solution = Solver::new(goal, HeuristicKind::Manhattan)
            .solve(&board, &SolveOptions::default(), None)
            .unwrap();
        store
            .put_solution(&solution, "manhattan", &[], PathBoards::Stored)
            .unwrap();
        assert!(store.search_state(&goal, &board).unwrap().is_some());
        store.remove_search_state(&goal, &board).unwrap();
        assert_eq!(store.search_state(&goal, &board).unwrap(), None);
    }
}
