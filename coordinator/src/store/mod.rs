//! The coordinator's store: the only module that touches sled.
//!
//! Trees and keys (every key starts with a format version byte; integers are big-endian so keys
//! sort numerically; "width" is the board's count of columns, which with its count of tiles
//! gives its shape, so a rectangle's keys never meet a square's or another shape's):
//! - the answers, in their own files beside sled's (`answer_log`: an append-only log and a
//!   mapped hash index): version, width, goal tiles, board tiles -> [`StoredSolution`]
//!   (compact). Every solved board, and every board on the optimal path of an answer that took
//!   a real search (see [`PathBoards`]), is stored with its exact distance. Stores of format 3
//!   and before held them in sled's `solutions` tree: opening one moves them out.
//! - the batches, in their own files beside sled's too (`batch_log`: an append-only log and a
//!   mapped index by id): batch id (u64) -> [`StoredBatch`] (JSON), as taken in, then as it
//!   ended ([`Store::finish_batch`]); a batch of at most [`EMBEDDED_ITEMS_MAX`] items compact,
//!   the record then its items, and no part ([`Store::put_small_batch`]). Stores of format 4
//!   and before held them in sled's `batches` and `finished` trees: opening one moves them out.
//! - `item_parts`: version, batch id (u64), first item index (u32) -> up to [`ITEMS_PER_PART`]
//!   [`StoredItem`]s (compact), as the batch was taken in: one write for a thousand lines (an
//!   entry each took ten times the CPU of a board's whole answer on a batch of easy boards).
//! - `items`: version, batch id (u64), item index (u32) -> [`StoredItem`] (compact): an item as
//!   it ended, over its part's copy. Batches stored before parts have every item here and no
//!   part; reads merge the two trees, so both read alike. Cheap answers' items skip this tree:
//!   they are held in memory and written into their parts a group at a time (`ended`).
//! - `search`: version, width, goal tiles, board tiles -> [`SearchState`] (JSON): the proven lower
//!   bound of a puzzle still being solved, so a restart resumes at the right bound.
//! - `tasks`: version, width, goal tiles, board tiles, first task id (u64) -> a group of
//!   (task id, [`TaskRecord`]) (compact, after a leading 1; earlier versions wrote one record,
//!   JSON, under its own id): every task a puzzle's search ran, with its size and time (and its
//!   measured parts when the coordinator asked for them), beside the puzzle's search state; what
//!   `tilesolve simulate` replays. Written a group at a time (`task_records`).
//! - `history`: version, unix ms (u64) -> [`HistorySample`] (JSON): totals and levels every few
//!   seconds for the dashboard's charts, the last [`HISTORY_KEPT`] of them.
//! - `notices`: version, batch id (u64) -> [`PendingNotice`] (JSON): completion notices of
//!   ended batches not yet delivered, written as the batch ends and removed once delivered.
//! - `meta`: version, name -> value; `incarnation` (u64) counts the coordinator's starts;
//!   `format` (u64) is the newest [`STORE_FORMAT`] that wrote the store (absent: format 1);
//!   `flushed` (u64) counts the flushes that made writes durable; `owner_nodes` ([`OwnerNodes`],
//!   JSON) the nodes each owner's batches searched today, written with each history sample.
//!
//! Beside the store directory, `<dir>.flushed` holds the count of the last flush that finished
//! (written after it, by rename): a store whose own count is lower lost writes it had made
//! durable (a damaged or cut-short file, from which sled's recovery silently keeps only what
//! came before the damage), and is refused by name rather than served half empty.
//! [`Store::open_damaged`] opens it anyway, for `tilesolve salvage`.
//!
//! Values are JSON, but for the trees written for every puzzle or task (items, task records):
//! "compact" is a zero byte (a task records group: a one) then postcard, which took a third of
//! the instructions JSON did for an item (encoding it, and reading it back for results). A zero byte never starts JSON, so values either wrote are
//! read: stores from before compact values need no conversion. Postcard does not name fields,
//! so a compact type's fields are never skipped when empty, and a field added to one needs a
//! new leading byte.
//!
//! Writes that acknowledge something to a client (a new batch) are flushed before returning.

use rustc_hash::FxHashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use thiserror::Error;

mod answer_log;
mod answers;
mod batch_log;
mod batches;
mod ended;
mod format;
mod held;
mod history;
mod log_file;
mod notices;
mod owner_nodes;
mod priority;
mod records;
mod search;
mod task_records;
#[cfg(test)]
mod tests;

pub use answers::{PathBoards, StoredSolution};
pub use batches::{
    BatchFigures, ItemLimits, ItemStatus, StoredBatch, StoredBounded, StoredItem,
    EMBEDDED_ITEMS_MAX, ITEMS_PER_PART,
};
use format::{meta_key, FlushGuard};
pub use history::{HistorySample, HISTORY_KEPT};
pub use notices::PendingNotice;
pub use owner_nodes::OwnerNodes;
pub use priority::Priority;
pub use search::{BestPath, RecordedOutcome, SearchState, TaskRecord};

/// The store's layout, recorded in `meta` at every open: 1 was every item in `items` (stores
/// from before the format was recorded), 2 adds `item_parts`, 3 adds `finished` (whose small
/// batches' records hold their items), 4 moves the answers out of sled into their own files
/// (`answer_log`), 5 moves the batch records out of sled into theirs (`batch_log`), 6 writes a
/// puzzle's task records as groups (`task_records`), which 5 cannot read. A store recorded with
/// a newer format than this is refused by name: this version would miss what it cannot read
/// (the queued items of a batch in parts, for one) instead of failing on it.
pub const STORE_FORMAT: u64 = 6;

/// The store's page cache unless told otherwise: lookups of recent answers and batches hit it;
/// everything else is a read from the page cache of the kernel.
pub const DEFAULT_CACHE_BYTES: u64 = 64 << 20;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("store: {0}")]
    Sled(#[from] sled::Error),
    #[error("store: its answers' or batches' files: {0}")]
    Files(#[from] std::io::Error),
    /// A write and its flush did not finish in time: after some I/O errors (the store's files
    /// removed, a failing disk) sled waits for ever for its log to become durable.
    #[error(
        "store: a write and its flush did not finish within {seconds} s (a failing disk, or the \
         store's files removed?)"
    )]
    Unresponsive { seconds: u64 },
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

/// The coordinator's sled database.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    /// Only read, to move a store of format 3 or before's answers into `answers`.
    solutions: sled::Tree,
    answers: Arc<answer_log::AnswerLog>,
    batch_log: Arc<batch_log::BatchLog>,
    /// Only read, to move a store of format 4 or before's batch records into `batch_log`.
    batches: sled::Tree,
    finished: sled::Tree,
    items: sled::Tree,
    item_parts: sled::Tree,
    search: sled::Tree,
    /// `search` may hold an entry: false while it was empty at opening and nothing was put
    /// since, so the start of each of a batch's puzzles skips a lookup that finds nothing.
    search_kept: Arc<AtomicBool>,
    tasks: sled::Tree,
    /// Task records not yet written into `tasks` ([`Store::put_task_record`]).
    held_records: Arc<Mutex<task_records::HeldRecords>>,
    meta: sled::Tree,
    history: sled::Tree,
    notices: sled::Tree,
    /// Keys of goals whose own entry (length 0) is known to be stored: every answer would
    /// otherwise look it up again.
    goals_stored: Arc<Mutex<FxHashSet<Vec<u8>>>>,
    /// Quarantined workers: no answer or bound resting on one is read, from the moment it is
    /// quarantined, while the pass that removes them runs ([`Store::withdraw_from_reads`]).
    withdrawn_workers: Arc<std::sync::RwLock<FxHashSet<u64>>>,
    /// The flush count (`meta` `flushed`) and the guard file beside the store.
    flushes: Arc<FlushGuard>,
    /// Cheap answers' items not yet written into their parts ([`Store::put_item_later`]).
    ended: Arc<Mutex<ended::EndedItems>>,
    /// The store's directory, for the free space of its disk.
    dir: Arc<Path>,
}

/// What a caught panic said.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
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

impl Store {
    /// Opens (or creates) the store in `dir`, with the default page cache.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_with_cache(dir, DEFAULT_CACHE_BYTES)
    }

    /// Opens (or creates) the store in `dir`; sled keeps at most about `cache_bytes` of pages
    /// in memory (its own default, 1 GiB, was most of a busy coordinator's memory).
    pub fn open_with_cache(dir: &Path, cache_bytes: u64) -> Result<Store, StoreError> {
        let store = Store::open_unchecked(dir, cache_bytes, false)?;
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
        Store::open_unchecked(dir, DEFAULT_CACHE_BYTES, true)
    }

    /// Opens a store whose sled files [`Store::open_damaged`] cannot read, with its two logs
    /// alone: removes every other file from `dir` (give it a copy) and opens the logs beside
    /// an empty sled database. Every answer and batch the logs hold can be read; what only
    /// sled held (batch items not yet in the batch log, search states, task records) is gone.
    pub fn open_logs_alone(dir: &Path) -> Result<Store, StoreError> {
        let logs = [
            answer_log::LOG_NAME,
            answer_log::INDEX_NAME,
            batch_log::LOG_NAME,
            batch_log::INDEX_NAME,
        ];
        let io = |path: &Path, error: std::io::Error| StoreError::Open {
            path: path.to_path_buf(),
            reason: error.to_string(),
        };
        for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let entry = entry.map_err(|e| io(dir, e))?;
            if logs.iter().any(|name| entry.file_name() == *name) {
                continue;
            }
            let path = entry.path();
            let removed = match entry.file_type().map_err(|e| io(&path, e))?.is_dir() {
                true => std::fs::remove_dir_all(&path),
                false => std::fs::remove_file(&path),
            };
            removed.map_err(|e| io(&path, e))?;
        }
        Store::open_damaged(dir)
    }

    /// Opens the sled database without checking its flush count or format. A panic inside
    /// sled (it has them on some damaged files) is an error naming the store.
    fn open_unchecked(dir: &Path, cache_bytes: u64, salvaging: bool) -> Result<Store, StoreError> {
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
            // After sled's: its lock on the directory keeps a second process out of both.
            let (answers, batch_log) = match salvaging {
                false => (
                    answer_log::AnswerLog::open(dir),
                    batch_log::BatchLog::open(dir),
                ),
                true => (
                    answer_log::AnswerLog::open_salvaging(dir),
                    batch_log::BatchLog::open_salvaging(dir),
                ),
            };
            let answers = answers.map_err(sled::Error::Io)?;
            let batch_log = batch_log.map_err(sled::Error::Io)?;
            let search_tree = db.open_tree("search")?;
            Ok(Store {
                answers: Arc::new(answers),
                batch_log: Arc::new(batch_log),
                solutions: db.open_tree("solutions")?,
                batches: db.open_tree("batches")?,
                finished: db.open_tree("finished")?,
                items: db.open_tree("items")?,
                item_parts: db.open_tree("item_parts")?,
                search: search_tree.clone(),
                search_kept: Arc::new(AtomicBool::new(!search_tree.is_empty())),
                tasks: db.open_tree("tasks")?,
                held_records: Arc::default(),
                meta: db.open_tree("meta")?,
                history: db.open_tree("history")?,
                notices: db.open_tree("notices")?,
                goals_stored: Arc::default(),
                withdrawn_workers: Arc::default(),
                flushes: Arc::new(FlushGuard {
                    written: Mutex::new(FlushGuard::read(&guard)),
                    path: guard,
                    next: AtomicU64::new(0),
                }),
                ended: Arc::default(),
                dir: Arc::from(dir),
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
        store.move_answers_out_of_sled()?;
        store.move_batches_out_of_sled()?;
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

    /// Bytes the database takes on disk (0 if sled cannot tell).
    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
            + self.answers.size_on_disk()
            + self.batch_log.size_on_disk()
    }

    /// Free and total bytes of the file system the store is on (`None` if it cannot be read).
    pub fn disk_space(&self) -> Option<(u64, u64)> {
        tilesolve::process_stats::disk_space(&self.dir)
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

    /// Keeps this store open until the process ends, for a store that stopped taking writes:
    /// sled flushes when the last handle on a tree is dropped, and after a failed write that
    /// flush can wait for ever, so whichever thread dropped the last handle would hang (the
    /// coordinator's restart in place once did). The process replaces itself or exits instead,
    /// which closes every file; what was acknowledged is already on disk.
    pub fn never_close(&self) {
        std::mem::forget(self.clone());
    }

    /// Whether the store still takes writes: once one write failed (a full disk), sled fails
    /// every later one, even after space returns, until the store is opened again. It writes
    /// (a key overwritten each time) and flushes: a flush with nothing to write says nothing.
    pub fn writable(&self) -> Result<(), StoreError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        // The answers first: once one of their writes failed, sled's next flush may wait
        // for ever instead of failing.
        self.answers.sync()?;
        self.batch_log.sync()?;
        self.meta.insert(meta_key("probe"), &now.to_be_bytes())?;
        self.db.flush()?;
        Ok(())
    }

    /// Whether `error` is the disk being full.
    pub fn is_disk_full(error: &StoreError) -> bool {
        let full = |io: &std::io::Error| io.kind() == std::io::ErrorKind::StorageFull;
        match error {
            StoreError::Sled(sled::Error::Io(io)) | StoreError::Files(io) => full(io),
            _ => false,
        }
    }

    /// The last flush of a run: [`Store::flush`], and the answers' and batches' indexes marked
    /// clean, so that the next opening need not rebuild them from their logs.
    pub fn close(&self) -> Result<(), StoreError> {
        self.flush()?;
        self.answers.close()?;
        self.batch_log.close()?;
        Ok(())
    }

    /// Makes the batch records written so far durable, and nothing else: all a batch taken in
    /// with no part ([`Store::put_small_batch`]) needs before it is acknowledged. A flush of
    /// sled as well made each such intake wait for two syncs (8-10% fewer submissions in a
    /// load test).
    pub fn sync_batch_records(&self) -> Result<(), StoreError> {
        Ok(self.batch_log.sync()?)
    }

    /// Makes every write so far durable (the answers within the store's next probe, see
    /// `answer_log`; the batch records now, since a new batch is acknowledged after this), and
    /// records that it did beside the store.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.write_ended()?;
        self.write_task_records()?;
        self.answers.write_out()?;
        self.batch_log.sync()?;
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
