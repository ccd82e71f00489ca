//! The batches' own files: an append-only log of batch records (`batches.log`, keyed by the
//! batch id, big-endian) and an index of where each id's newest record starts
//! (`batches.idx`, mapped into memory), both in the store's directory beside sled's.
//!
//! In sled, every batch a coordinator kept cost it anonymous memory for the life of the
//! process: sled holds a list of fragments for every page it ever wrote, cached or not, and a
//! leaf page holds at most 16 keys, so a coordinator that keeps its batches grew with them
//! (issue 45's soak). Here a batch costs its records on disk and 8 bytes of index, in file
//! pages the kernel may drop.
//!
//! The records, the index's header and how a crash is survived are `log_file`'s. Batch ids are
//! small and sequential, so the index is dense: slot `id` holds the offset of the id's newest
//! record, 0 for none (never put, or removed). Reading ids in order is reading slots in order.
//! Grown to the next power of two above an id that does not fit, rebuilt into a new file
//! renamed over the old. The header's own numbers: the highest id ever put (40), so that no
//! id is handed out twice, and the bytes of the live records (48).
//!
//! Dead bytes (records rewritten or removed: a batch's intake record once it ended, every
//! record of a batch the retention removed) are reclaimed by rewriting the live records into a
//! new log and index, renamed over the old ones (log first: an index of another log is
//! rebuilt), once they pass both the live bytes and [`COMPACT_AFTER`].
//!
//! Invariants: every id's newest record is the one its slot points at; no slot below `first`
//! is taken.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use memmap2::MmapMut;

use super::log_file::{
    mark_clean, mark_dirty, new_index_file, open_clean_index, put_u64, u64_at, LogFile, OnDamage,
    Record, COMPACT_AFTER, INDEX_HEADER, LIVE_AT, LOG_HEADER, PUT, REMOVAL,
};

const LOG_MAGIC: &[u8; 8] = b"TSBATLOG";
const INDEX_MAGIC: &[u8; 8] = b"TSBATIDX";
pub(super) const LOG_NAME: &str = "batches.log";
pub(super) const INDEX_NAME: &str = "batches.idx";
const SLOT: usize = 8;
const FIRST_SLOTS: u64 = 1 << 12;
/// Where the index's header keeps the highest id ever put.
const LAST_AT: usize = 40;
/// Ids from here on are refused (a bound on the index's size, far above any store's ids).
const IDS_END: u64 = 1 << 40;

/// The batches' log and index. Every method takes its lock for its own duration only.
pub(super) struct BatchLog {
    inner: Mutex<Inner>,
    /// The log (by id: a rewrite makes a new one) and the length of it last synced; held
    /// through a sync, so that calls that waited for one sync are covered by the next, one
    /// for all: every intake syncs, and 16 clients submitting make at most two syncs wait on
    /// each other instead of sixteen.
    synced: Mutex<(u64, u64)>,
}

struct Inner {
    log: LogFile,
    slots: Slots,
    /// Whether the index on disk is marked dirty (some slot may differ from its last close).
    dirty: bool,
    /// No id below this one has a record.
    first: u64,
    /// The store's directory, where both files are.
    dir: PathBuf,
    /// [`COMPACT_AFTER`], but in tests.
    compact_after: u64,
}

/// The index file's slots, mapped, and its header's numbers.
struct Slots {
    map: MmapMut,
    count: u64,
    last: u64,
    live: u64,
}

fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

impl BatchLog {
    /// Opens the batches in `dir`, creating them if absent, rebuilding the index if it does
    /// not cover the log, and cutting a torn record off the log's end.
    pub(super) fn open(dir: &Path) -> std::io::Result<BatchLog> {
        BatchLog::open_compacting_after(dir, COMPACT_AFTER, OnDamage::Refuse)
    }

    /// [`BatchLog::open`] for a salvage: a damaged record cuts the log there (see `log_file`).
    pub(super) fn open_salvaging(dir: &Path) -> std::io::Result<BatchLog> {
        BatchLog::open_compacting_after(dir, COMPACT_AFTER, OnDamage::Cut)
    }

    /// [`BatchLog::open`], reclaiming dead bytes once they pass `compact_after` (and the live).
    fn open_compacting_after(
        dir: &Path,
        compact_after: u64,
        on_damage: OnDamage,
    ) -> std::io::Result<BatchLog> {
        let log = LogFile::open(&dir.join(LOG_NAME), LOG_MAGIC, "a batch log")?;
        let index_path = dir.join(INDEX_NAME);
        let mut inner = match open_clean_index(&index_path, INDEX_MAGIC, &log, SLOT)? {
            // Every id up to the last has a slot: a header saying otherwise is not trusted.
            Some((map, count)) if u64_at(&map, LAST_AT) < count => Inner {
                slots: Slots {
                    last: u64_at(&map, LAST_AT),
                    live: u64_at(&map, LIVE_AT),
                    map,
                    count,
                },
                log,
                dirty: false,
                first: 1,
                dir: dir.to_path_buf(),
                compact_after,
            },
            _ => Inner::rebuild(dir, log, compact_after, on_damage)?,
        };
        inner.first = (1..=inner.slots.last)
            .find(|&id| inner.slots.get(id) != 0)
            .unwrap_or(inner.slots.last + 1);
        Ok(BatchLog {
            synced: Mutex::new((inner.log.id, inner.log.written)),
            inner: Mutex::new(inner),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The record of batch `id`.
    pub(super) fn get(&self, id: u64) -> std::io::Result<Option<Vec<u8>>> {
        let inner = self.lock();
        Ok(inner.record(id)?.map(|record| record.value))
    }

    /// Stores `value` as batch `id`'s record, over what it held.
    pub(super) fn put(&self, id: u64, value: &[u8]) -> std::io::Result<()> {
        self.lock().put(id, value)
    }

    /// Removes batch `id`'s record; returns whether it had one. Reclaims the log's dead bytes
    /// once they are many (see the module's doc).
    pub(super) fn remove(&self, id: u64) -> std::io::Result<bool> {
        let mut inner = self.lock();
        let Some(offset) = inner.slot(id) else {
            return Ok(false);
        };
        inner.change()?;
        inner.slots.live -= inner.log.length_at(offset)?;
        inner.log.append(REMOVAL, &key(id), &[])?;
        inner.slots.set(id, 0);
        if id == inner.first {
            let last = inner.slots.last;
            inner.first = (id + 1..=last)
                .find(|&id| inner.slots.get(id) != 0)
                .unwrap_or(last + 1);
        }
        let dead = inner.log.end() - LOG_HEADER - inner.slots.live;
        if dead > inner.slots.live && dead > inner.compact_after {
            inner.compact()?;
        }
        Ok(true)
    }

    /// The highest id ever put (0 if none): an id removed since is not handed out again.
    pub(super) fn last_id(&self) -> u64 {
        self.lock().slots.last
    }

    /// Up to `count` records (id, value) after the id `after` (exclusive; `None`: from the
    /// first) in id order, or before it when `newest_first` (`None`: from the last).
    pub(super) fn page(
        &self,
        after: Option<u64>,
        count: usize,
        newest_first: bool,
    ) -> std::io::Result<Vec<(u64, Vec<u8>)>> {
        let inner = self.lock();
        let (first, last) = (inner.first, inner.slots.last);
        let ids: Box<dyn Iterator<Item = u64>> = match (after, newest_first) {
            (None, false) => Box::new(first..=last),
            (Some(id), false) => Box::new(id.saturating_add(1).max(first)..=last),
            (None, true) => Box::new((first..=last).rev()),
            (Some(id), true) => Box::new((first..id.min(last.saturating_add(1))).rev()),
        };
        let mut records = Vec::new();
        for id in ids {
            if records.len() == count {
                break;
            }
            if let Some(record) = inner.record(id)? {
                records.push((id, record.value));
            }
        }
        Ok(records)
    }

    /// Makes every record so far durable. The index stays marked dirty (a crash rebuilds it
    /// from the log). The file is synced through its own handle, outside the log's lock.
    pub(super) fn sync(&self) -> std::io::Result<()> {
        let written = |inner: &mut Inner| -> std::io::Result<(u64, u64)> {
            inner.log.write_pending()?;
            Ok((inner.log.id, inner.log.written))
        };
        let (log, wanted) = written(&mut self.lock())?;
        let mut synced = self.synced.lock().unwrap_or_else(|p| p.into_inner());
        if synced.0 == log && synced.1 >= wanted {
            return Ok(());
        }
        let (handle, covered) = {
            let mut inner = self.lock();
            (inner.log.handle()?, written(&mut inner)?)
        };
        handle.sync_data()?;
        *synced = covered;
        Ok(())
    }

    /// Makes everything durable, the index too, and marks it clean, so the next opening
    /// trusts it instead of rebuilding it from the log: at the end of a coordinator's run.
    pub(super) fn close(&self) -> std::io::Result<()> {
        self.lock().close()
    }

    /// Bytes on disk, the index included.
    pub(super) fn size_on_disk(&self) -> u64 {
        let inner = self.lock();
        inner.log.end() + inner.slots.map.len() as u64
    }
}

impl Drop for BatchLog {
    /// Hands what is pending to the file, so that a store dropped without closing (a tool's,
    /// a test's) loses nothing but the index's clean mark.
    fn drop(&mut self) {
        let _ = self.lock().log.write_pending();
    }
}

impl Inner {
    /// Reads the whole log (cutting it after its last intact record) into a new index.
    fn rebuild(
        dir: &Path,
        mut log: LogFile,
        compact_after: u64,
        on_damage: OnDamage,
    ) -> std::io::Result<Inner> {
        let index_path = dir.join(INDEX_NAME);
        let mut slots = Slots::create(&index_path, log.id, FIRST_SLOTS)?;
        log.read_all(LOG_NAME, on_damage, |offset, record| {
            let Some(id) = <[u8; 8]>::try_from(record.key.as_slice())
                .ok()
                .map(u64::from_be_bytes)
                .filter(|id| (1..IDS_END).contains(id))
            else {
                return Ok(());
            };
            slots.fit(id, &index_path)?;
            slots.last = slots.last.max(id);
            slots.set(id, if record.kind == PUT { offset } else { 0 });
            Ok(())
        })?;
        for id in 1..=slots.last {
            if let Some(offset) = Some(slots.get(id)).filter(|&offset| offset != 0) {
                slots.live += log.length_at(offset)?;
            }
        }
        let mut inner = Inner {
            log,
            slots,
            dirty: true,
            first: 1,
            dir: dir.to_path_buf(),
            compact_after,
        };
        inner.close()?;
        Ok(inner)
    }

    /// The offset of `id`'s record, if it has one.
    fn slot(&self, id: u64) -> Option<u64> {
        (id < self.slots.count)
            .then(|| self.slots.get(id))
            .filter(|&offset| offset != 0)
    }

    /// `id`'s record, checked to be its own.
    fn record(&self, id: u64) -> std::io::Result<Option<Record>> {
        let Some(offset) = self.slot(id) else {
            return Ok(None);
        };
        let Some(record) = self.log.record_at(offset)? else {
            tracing::warn!(
                log = LOG_NAME,
                batch = id,
                at_byte = offset,
                "a batch's record failed its check: the batch is lost"
            );
            return Ok(None);
        };
        Ok(Some(record).filter(|record| record.kind == PUT && record.key == key(id)))
    }

    /// Marks the index dirty on disk before its first change since the last close.
    fn change(&mut self) -> std::io::Result<()> {
        if !self.dirty {
            mark_dirty(&mut self.slots.map)?;
            self.dirty = true;
        }
        Ok(())
    }

    fn put(&mut self, id: u64, value: &[u8]) -> std::io::Result<()> {
        if !(1..IDS_END).contains(&id) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("batch id {id} is out of the stored range"),
            ));
        }
        self.change()?;
        let previous = self.slot(id);
        let offset = self.log.append(PUT, &key(id), value)?;
        if let Some(previous) = previous {
            self.slots.live -= self.log.length_at(previous)?;
        }
        self.slots.live += self.log.end() - offset;
        self.slots.fit(id, &self.dir.join(INDEX_NAME))?;
        self.slots.set(id, offset);
        self.slots.last = self.slots.last.max(id);
        self.first = self.first.min(id);
        Ok(())
    }

    fn close(&mut self) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let fields = [(LAST_AT, self.slots.last), (LIVE_AT, self.slots.live)];
        mark_clean(&mut self.log, &mut self.slots.map, &fields)?;
        self.dirty = false;
        Ok(())
    }

    /// Rewrites the live records into a new log and index, renamed over these.
    fn compact(&mut self) -> std::io::Result<()> {
        let (log_path, index_path) = (self.dir.join(LOG_NAME), self.dir.join(INDEX_NAME));
        let new_log_path = log_path.with_extension("log.new");
        let new_index_path = index_path.with_extension("idx.new");
        let _ = std::fs::remove_file(&new_log_path);
        let mut log = LogFile::open(&new_log_path, LOG_MAGIC, "a batch log")?;
        let mut slots = Slots::create(&new_index_path, log.id, self.slots.count)?;
        slots.last = self.slots.last;
        for id in self.first..=self.slots.last {
            if let Some(record) = self.record(id)? {
                let offset = log.append(PUT, &record.key, &record.value)?;
                slots.set(id, offset);
                slots.live += record.length;
            }
        }
        let fields = [(LAST_AT, slots.last), (LIVE_AT, slots.live)];
        mark_clean(&mut log, &mut slots.map, &fields)?;
        std::fs::rename(&new_log_path, &log_path)?;
        std::fs::rename(&new_index_path, &index_path)?;
        tracing::info!(
            live_bytes = slots.live,
            dropped_bytes = self.log.end() - LOG_HEADER - self.slots.live,
            "the batch log rewritten with its live records"
        );
        self.log = log;
        self.slots = slots;
        self.dirty = false;
        Ok(())
    }
}

impl Slots {
    /// A new, empty index of `count` slots for the log `log_id`, marked dirty.
    fn create(path: &Path, log_id: u64, count: u64) -> std::io::Result<Slots> {
        Ok(Slots {
            map: new_index_file(path, INDEX_MAGIC, log_id, count, SLOT)?,
            count,
            last: 0,
            live: 0,
        })
    }

    fn get(&self, id: u64) -> u64 {
        u64_at(&self.map, INDEX_HEADER + id as usize * SLOT)
    }

    fn set(&mut self, id: u64, offset: u64) {
        put_u64(&mut self.map, INDEX_HEADER + id as usize * SLOT, offset);
    }

    /// Grows the index (a new file at `path`'s, renamed over it) until slot `id` fits.
    fn fit(&mut self, id: u64, path: &Path) -> std::io::Result<()> {
        if id < self.count {
            return Ok(());
        }
        let count = (id + 1).next_power_of_two();
        let log_id = u64_at(&self.map, 8);
        let building = path.with_extension("idx.new");
        let mut grown = Slots::create(&building, log_id, count)?;
        let used = INDEX_HEADER..INDEX_HEADER + self.count as usize * SLOT;
        grown.map[used.clone()].copy_from_slice(&self.map[used]);
        grown.map.flush()?;
        std::fs::rename(&building, path)?;
        grown.last = self.last;
        grown.live = self.live;
        *self = grown;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
