//! The answers' own files: an append-only log of records (`answers.log`) and a hash index of
//! where each key's newest record starts (`answers.idx`, mapped into memory), both in the
//! store's directory beside sled's.
//!
//! sled took one tree insert per answer: on a batch of 10,000 easy boards that was a quarter of
//! the coordinator's CPU (about 7 us an answer, where an append and an index slot take well
//! under one), and every key it ever held kept some bytes of sled's page state in anonymous
//! memory for the life of the process. Here an answer costs its record on disk and 16 bytes of
//! index, both in file pages the kernel may drop.
//!
//! The records and the index's header, and how a crash is survived, are `log_file`'s. The
//! index's slots: (hash with its top bit set, offset of the key's newest record); a zero hash
//! is an empty slot. Open addressing with linear probes; a slot is never emptied (a removal
//! points it at the removal's record), so every probe sequence stays whole. Grown to twice the
//! slots, rebuilt into a new file renamed over the old, when 70% are taken. Every read compares
//! the key it finds, so a slot can only ever miss, never answer for another key. The header's
//! own numbers: the slots taken (40), and 1 at 56 once it counts the live bytes (an index
//! from before that is rebuilt).
//!
//! Dead bytes (answers replaced, withdrawn or pruned with `prune --solutions`) are reclaimed
//! when the log is opened, once they pass both the live bytes and [`COMPACT_AFTER`]: the live
//! records are rewritten into a new log and index, renamed over the old ones, log first (a
//! crash between leaves an index of another log, which is rebuilt). Only at opening: a reader
//! going through the log by offset ([`AnswerLog::entries_from`], an export) would otherwise
//! find its offsets pointing into another file.
//!
//! Invariant: every key's newest record is the one its slot points at. Records before it are
//! dead bytes the log keeps (a key is rewritten only when an answer is withdrawn or replaced).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use memmap2::MmapMut;

use super::log_file::{
    mark_clean, mark_dirty, new_index_file, open_clean_index, put_u64, u64_at, LogFile, OnDamage,
    Record, COMPACT_AFTER, INDEX_HEADER, LIVE_AT, LOG_HEADER, PUT, REMOVAL,
};

pub(super) const LOG_NAME: &str = "answers.log";
pub(super) const INDEX_NAME: &str = "answers.idx";
const LOG_MAGIC: &[u8; 8] = b"TSANSLOG";
const INDEX_MAGIC: &[u8; 8] = b"TSANSIDX";
const SLOT: usize = 16;
/// Slots of a new index (1 MiB): a first batch of easy boards grew one of a thousand slots
/// six times on its way to 40,000 answers, 2% of the coordinator's time on that batch.
const FIRST_SLOTS: u64 = 1 << 16;
/// Where the index's header keeps the slots taken, and its mark that it counts the live bytes.
const USED_AT: usize = 40;
const LIVE_KNOWN_AT: usize = 56;

/// The answers' log and index. Every method takes its lock for its own duration only.
pub(super) struct AnswerLog {
    inner: Mutex<Inner>,
    /// The log's file again, to sync it without holding the lock (writers go on meanwhile).
    sync_handle: File,
}

struct Inner {
    log: LogFile,
    slots: Slots,
    /// Whether the index on disk is marked dirty (some slot may differ from its last flush).
    dirty: bool,
}

/// The index file's slots, mapped.
struct Slots {
    map: MmapMut,
    count: u64,
    used: u64,
    /// Bytes of the records the slots point at that are puts.
    live: u64,
    path: PathBuf,
    log_id: u64,
}

/// A key and its value.
pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// The slot's hash of a key: FNV-1a, then a 64-bit finaliser (FNV's low bits, which pick the
/// slot, are weak), top bit set so that no key hashes to an empty slot's zero.
fn key_hash(key: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in key {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    hash | 1 << 63
}

impl AnswerLog {
    /// Opens the answers in `dir`, creating them if absent, rebuilding the index if it does
    /// not cover the log, and cutting a torn record off the log's end.
    pub(super) fn open(dir: &Path) -> std::io::Result<AnswerLog> {
        AnswerLog::open_compacting_after(dir, COMPACT_AFTER, OnDamage::Refuse)
    }

    /// [`AnswerLog::open`] for a salvage: a damaged record cuts the log there (see `log_file`).
    pub(super) fn open_salvaging(dir: &Path) -> std::io::Result<AnswerLog> {
        AnswerLog::open_compacting_after(dir, COMPACT_AFTER, OnDamage::Cut)
    }

    /// [`AnswerLog::open`], reclaiming dead bytes once they pass `compact_after` (and the
    /// live ones).
    fn open_compacting_after(
        dir: &Path,
        compact_after: u64,
        on_damage: OnDamage,
    ) -> std::io::Result<AnswerLog> {
        let log = LogFile::open(&dir.join(LOG_NAME), LOG_MAGIC, "an answer log")?;
        let index_path = dir.join(INDEX_NAME);
        let mut inner = match open_clean_index(&index_path, INDEX_MAGIC, &log, SLOT)? {
            Some((map, count)) if u64_at(&map, LIVE_KNOWN_AT) == 1 => Inner {
                slots: Slots {
                    used: u64_at(&map, USED_AT),
                    live: u64_at(&map, LIVE_AT),
                    map,
                    count,
                    path: index_path,
                    log_id: log.id,
                },
                log,
                dirty: false,
            },
            _ => Inner::rebuild(index_path, log, on_damage)?,
        };
        let dead = inner.log.end() - LOG_HEADER - inner.slots.live;
        if dead > inner.slots.live && dead > compact_after {
            inner.compact(dir)?;
        }
        let sync_handle = inner.log.handle()?;
        Ok(AnswerLog {
            inner: Mutex::new(inner),
            sync_handle,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value stored under `key`.
    pub(super) fn get(&self, key: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
        let inner = self.lock();
        Ok(match inner.find(key, key_hash(key))? {
            Ok((_, record)) if record.kind == PUT => Some(record.value),
            _ => None,
        })
    }

    /// Stores `value` under `key`, over what it held.
    pub(super) fn put(&self, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        self.lock().append(PUT, key, value)
    }

    /// Removes `key` if the value it holds meets `condition` (checked and removed under one
    /// lock, so a value put meanwhile is judged itself); returns whether it was removed.
    pub(super) fn remove_if(
        &self,
        key: &[u8],
        condition: impl FnOnce(&[u8]) -> bool,
    ) -> std::io::Result<bool> {
        let mut inner = self.lock();
        match inner.find(key, key_hash(key))? {
            Ok((_, record)) if record.kind == PUT && condition(&record.value) => {
                inner.append(REMOVAL, key, &[]).map(|()| true)
            }
            _ => Ok(false),
        }
    }

    /// Removes `key`; returns whether it held a value.
    pub(super) fn remove(&self, key: &[u8]) -> std::io::Result<bool> {
        let mut inner = self.lock();
        match inner.find(key, key_hash(key))? {
            Ok((_, record)) if record.kind == PUT => inner.append(REMOVAL, key, &[]).map(|()| true),
            _ => Ok(false),
        }
    }

    /// Hands the pending records to the file (a crash of this process no longer loses them;
    /// the host's may, until [`AnswerLog::sync`]).
    pub(super) fn write_out(&self) -> std::io::Result<()> {
        self.lock().log.write_pending()
    }

    /// Makes every record so far durable. The index stays marked dirty (a crash rebuilds it
    /// from the log): syncing its scattered pages at every call would write most of it.
    pub(super) fn sync(&self) -> std::io::Result<()> {
        self.write_out()?;
        self.sync_handle.sync_data()
    }

    /// Makes everything durable, the index too, and marks it clean, so the next opening
    /// trusts it instead of rebuilding it from the log: at the end of a coordinator's run.
    pub(super) fn close(&self) -> std::io::Result<()> {
        self.lock().close()
    }

    /// Up to `most` live entries (key, value) from log offset `from` on (0: the start), and the
    /// offset to go on from (`None` at the end): a reader takes the lock a chunk at a time.
    pub(super) fn entries_from(
        &self,
        from: u64,
        most: usize,
    ) -> std::io::Result<(Vec<Entry>, Option<u64>)> {
        let inner = self.lock();
        let mut offset = from.max(LOG_HEADER);
        let mut entries = Vec::new();
        let end = inner.log.end();
        while offset < end && entries.len() < most {
            // Past a damaged record, the next intact one: a reader never stops on damage.
            let Some((at, record)) = inner.log.next_intact(offset)? else {
                offset = end;
                break;
            };
            if at != offset {
                tracing::warn!(
                    log = LOG_NAME,
                    at_byte = offset,
                    damaged_bytes = at - offset,
                    "an answer record failed its check: stepped over"
                );
            }
            offset = at;
            let length = record.length;
            if record.kind == PUT {
                if let Ok((slot, _)) = inner.find(&record.key, key_hash(&record.key))? {
                    if inner.slots.get(slot).1 == offset {
                        entries.push((record.key, record.value));
                    }
                }
            }
            offset += length;
        }
        Ok((entries, (offset < end).then_some(offset)))
    }

    /// Bytes on disk, the index included.
    pub(super) fn size_on_disk(&self) -> u64 {
        let inner = self.lock();
        inner.log.written + inner.slots.map.len() as u64
    }
}

impl Drop for AnswerLog {
    /// Hands what is pending to the file, so that a store dropped without closing (a tool's,
    /// a test's) loses nothing but the index's clean mark.
    fn drop(&mut self) {
        let _ = self.lock().log.write_pending();
    }
}

impl Inner {
    /// Reads the whole log (cutting it after its last intact record) into a new index. Keys
    /// are told apart by their 64-bit hashes here (reading each probed record back would
    /// move the file under the reader): two keys of one hash would leave the older unindexed,
    /// a miss, never a wrong answer.
    fn rebuild(
        index_path: PathBuf,
        mut log: LogFile,
        on_damage: OnDamage,
    ) -> std::io::Result<Inner> {
        let mut slots = Slots::create(index_path, log.id, FIRST_SLOTS)?;
        log.read_all(LOG_NAME, on_damage, |offset, record| {
            let hash = key_hash(&record.key);
            let slot = slots.probe(hash, |_| Ok(true))?;
            if slots.get(slot).0 == 0 {
                slots.used += 1;
            }
            slots.set(slot, hash, offset);
            slots.grow_if_full()
        })?;
        for slot in 0..slots.count as usize {
            let (hash, offset) = slots.get(slot);
            if hash != 0 {
                slots.live += log
                    .record_at(offset)?
                    .filter(|record| record.kind == PUT)
                    .map_or(0, |record| record.length);
            }
        }
        let mut inner = Inner {
            log,
            slots,
            dirty: true,
        };
        inner.close()?;
        Ok(inner)
    }

    /// `key`'s slot and newest record, or the empty slot where it would go.
    fn find(&self, key: &[u8], hash: u64) -> std::io::Result<Result<(usize, Record), usize>> {
        let mut found = None;
        let slot = self.slots.probe(hash, |offset| {
            found = self
                .log
                .record_at(offset)?
                .filter(|record| record.key == key);
            Ok(found.is_some())
        })?;
        Ok(found.map(|record| (slot, record)).ok_or(slot))
    }

    /// Appends a record and points `key`'s slot at it.
    fn append(&mut self, kind: u8, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        if !self.dirty {
            mark_dirty(&mut self.slots.map)?;
            self.dirty = true;
        }
        let hash = key_hash(key);
        let slot = match self.find(key, hash)? {
            Ok((slot, old)) => {
                if old.kind == PUT {
                    self.slots.live -= old.length;
                }
                slot
            }
            Err(empty) => {
                self.slots.used += 1;
                empty
            }
        };
        let offset = self.log.append(kind, key, value)?;
        if kind == PUT {
            self.slots.live += self.log.end() - offset;
        }
        self.slots.set(slot, hash, offset);
        self.slots.grow_if_full()
    }

    /// Rewrites the live records into a new log and index, renamed over these (log first).
    fn compact(&mut self, dir: &Path) -> std::io::Result<()> {
        let (log_path, index_path) = (dir.join(LOG_NAME), dir.join(INDEX_NAME));
        let new_log_path = log_path.with_extension("log.new");
        let _ = std::fs::remove_file(&new_log_path);
        let mut log = LogFile::open(&new_log_path, LOG_MAGIC, "an answer log")?;
        let building = index_path.with_extension("idx.new");
        let mut slots = Slots::create(building.clone(), log.id, self.slots.count)?;
        for slot in 0..self.slots.count as usize {
            let (hash, offset) = self.slots.get(slot);
            let Some(record) = (hash != 0)
                .then(|| self.log.record_at(offset))
                .transpose()?
                .flatten()
                .filter(|record| record.kind == PUT)
            else {
                continue;
            };
            let at = log.append(PUT, &record.key, &record.value)?;
            let empty = slots.probe(hash, |_| Ok(false))?;
            slots.set(empty, hash, at);
            slots.used += 1;
            slots.live += record.length;
        }
        let fields = slots.header_fields();
        mark_clean(&mut log, &mut slots.map, &fields)?;
        std::fs::rename(&new_log_path, &log_path)?;
        std::fs::rename(&building, &index_path)?;
        slots.path = index_path;
        tracing::info!(
            live_bytes = slots.live,
            dropped_bytes = self.log.end() - LOG_HEADER - self.slots.live,
            "the answer log rewritten with its live records"
        );
        self.log = log;
        self.slots = slots;
        self.dirty = false;
        Ok(())
    }

    fn close(&mut self) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let fields = self.slots.header_fields();
        mark_clean(&mut self.log, &mut self.slots.map, &fields)?;
        self.dirty = false;
        Ok(())
    }
}

impl Slots {
    /// A new, empty index of `count` slots for the log `log_id`, marked dirty.
    fn create(path: PathBuf, log_id: u64, count: u64) -> std::io::Result<Slots> {
        Ok(Slots {
            map: new_index_file(&path, INDEX_MAGIC, log_id, count, SLOT)?,
            count,
            used: 0,
            live: 0,
            path,
            log_id,
        })
    }

    /// The header's own numbers, as a clean close records them.
    fn header_fields(&self) -> [(usize, u64); 3] {
        [
            (USED_AT, self.used),
            (LIVE_AT, self.live),
            (LIVE_KNOWN_AT, 1),
        ]
    }

    fn get(&self, slot: usize) -> (u64, u64) {
        let at = INDEX_HEADER + slot * SLOT;
        (u64_at(&self.map, at), u64_at(&self.map, at + 8))
    }

    fn set(&mut self, slot: usize, hash: u64, offset: u64) {
        let at = INDEX_HEADER + slot * SLOT;
        put_u64(&mut self.map, at, hash);
        put_u64(&mut self.map, at + 8, offset);
    }

    /// The first slot from `hash`'s that is empty or of that hash with a record `holds` says
    /// is the one sought.
    fn probe(
        &self,
        hash: u64,
        mut holds: impl FnMut(u64) -> std::io::Result<bool>,
    ) -> std::io::Result<usize> {
        let mask = self.count - 1;
        let mut slot = hash & mask;
        loop {
            let (taken, offset) = self.get(slot as usize);
            if taken == 0 || (taken == hash && holds(offset)?) {
                return Ok(slot as usize);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Twice the slots once 70% are taken: a new file filled from these slots (their hashes
    /// say where each goes), renamed over the old one.
    fn grow_if_full(&mut self) -> std::io::Result<()> {
        if self.used * 10 <= self.count * 7 {
            return Ok(());
        }
        let building = self.path.with_extension("idx.new");
        let mut grown = Slots::create(building, self.log_id, self.count * 2)?;
        for slot in 0..self.count as usize {
            let (hash, offset) = self.get(slot);
            if hash != 0 {
                let empty = grown.probe(hash, |_| Ok(false))?;
                grown.set(empty, hash, offset);
            }
        }
        grown.used = self.used;
        grown.live = self.live;
        grown.map.flush()?;
        std::fs::rename(&grown.path, &self.path)?;
        grown.path = self.path.clone();
        *self = grown;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
