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
//! A log record: the body's length (u32 LE), the body's CRC-32 (u32 LE), the body: kind (1 put,
//! 2 removal), key length (u16 LE), key, value. The log opens with a 16-byte header, a magic
//! and an id drawn when it was created; the index names that id, so an index is never read
//! against another log.
//!
//! The index: a 64-byte header (magic, the log's id, the slot count, the log length it covers,
//! a dirty mark, the slots taken), then slots of (hash with its top bit set, offset of the key's newest record);
//! a zero hash is an empty slot. Open addressing with linear probes; a slot is never emptied (a
//! removal points it at the removal's record), so every probe sequence stays whole. Grown to
//! twice the slots, rebuilt into a new file renamed over the old, when 70% are taken.
//!
//! Crash safety: the log is the truth and the index a cache of it. The first change after a
//! flush marks the index dirty on disk before it touches a slot; a flush writes the pending
//! records, syncs the log, syncs the slots, then records the length covered and clears the
//! mark. An index found dirty, short, of another log or not covering the whole log is rebuilt
//! from the log on opening, and the log is cut at its first record whose CRC fails (a torn
//! write). Every read compares the key it finds, so a slot can only ever miss, never answer for
//! another key.
//!
//! Invariant: every key's newest record is the one its slot points at. Records before it are
//! dead bytes the log keeps (a key is rewritten only when an answer is withdrawn or replaced).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use memmap2::MmapMut;

const LOG_MAGIC: &[u8; 8] = b"TSANSLOG";
const INDEX_MAGIC: &[u8; 8] = b"TSANSIDX";
const LOG_HEADER: u64 = 16;
const INDEX_HEADER: usize = 64;
const SLOT: usize = 16;
const FIRST_SLOTS: u64 = 1 << 10;
const PUT: u8 = 1;
const REMOVAL: u8 = 2;
/// Pending records past this many bytes are written to the file (not synced) at once.
const PENDING_MAX: usize = 1 << 20;

/// The answers' log and index. Every method takes its lock for its own duration only.
pub(super) struct AnswerLog {
    inner: Mutex<Inner>,
    /// The log's file again, to sync it without holding the lock (writers go on meanwhile).
    sync_handle: File,
}

struct Inner {
    log: File,
    /// Bytes of the log in its file.
    written: u64,
    /// Records after `written`, not yet in the file.
    pending: Vec<u8>,
    slots: Slots,
    /// Whether the index on disk is marked dirty (some slot may differ from its last flush).
    dirty: bool,
}

/// The index file's slots, mapped.
struct Slots {
    map: MmapMut,
    count: u64,
    used: u64,
    path: PathBuf,
    log_id: u64,
}

/// A key and its value.
pub(super) type Entry = (Vec<u8>, Vec<u8>);

/// A record read back.
struct Record {
    kind: u8,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The whole record's length, header included.
    length: u64,
}

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

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Appends one record to `into`.
fn encode_record(into: &mut Vec<u8>, kind: u8, key: &[u8], value: &[u8]) {
    let body_length = 1 + 2 + key.len() + value.len();
    let start = into.len();
    into.extend_from_slice(&(body_length as u32).to_le_bytes());
    into.extend_from_slice(&[0; 4]);
    into.push(kind);
    into.extend_from_slice(&(key.len() as u16).to_le_bytes());
    into.extend_from_slice(key);
    into.extend_from_slice(value);
    let crc = crc32fast::hash(&into[start + 8..]);
    into[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Reads the record whose 8-byte header is `header` and whose body `read_body` fills; `None`
/// when it is not a whole, intact record.
fn decode_record(header: [u8; 8], read_body: impl FnOnce(&mut [u8]) -> bool) -> Option<Record> {
    let body_length = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    if !(3..=1 << 24).contains(&body_length) {
        return None;
    }
    let mut body = vec![0u8; body_length];
    if !read_body(&mut body) || crc32fast::hash(&body) != crc {
        return None;
    }
    let key_length = u16::from_le_bytes([body[1], body[2]]) as usize;
    if 3 + key_length > body_length || !matches!(body[0], PUT | REMOVAL) {
        return None;
    }
    Some(Record {
        kind: body[0],
        key: body[3..3 + key_length].to_vec(),
        value: body[3 + key_length..].to_vec(),
        length: 8 + body_length as u64,
    })
}

/// Reads a log file's records from its header on, stopping at the first that is not whole and
/// intact; calls `each` with every record and its offset; returns where they end.
fn read_log(
    file: &File,
    mut each: impl FnMut(u64, Record) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut reader = BufReader::with_capacity(1 << 20, file);
    reader.seek(SeekFrom::Start(LOG_HEADER))?;
    let mut offset = LOG_HEADER;
    loop {
        let mut header = [0u8; 8];
        if reader.read_exact(&mut header).is_err() {
            return Ok(offset);
        }
        let Some(record) = decode_record(header, |body| reader.read_exact(body).is_ok()) else {
            return Ok(offset);
        };
        let length = record.length;
        each(offset, record)?;
        offset += length;
    }
}

/// Opens the log at `path`, creating it with a fresh id if absent; returns it and its id.
fn open_log(path: &Path) -> std::io::Result<(File, u64)> {
    let mut log = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let mut header = [0u8; LOG_HEADER as usize];
    if log.metadata()?.len() < LOG_HEADER {
        header[..8].copy_from_slice(LOG_MAGIC);
        getrandom::getrandom(&mut header[8..]).map_err(|e| std::io::Error::other(e.to_string()))?;
        log.set_len(0)?;
        log.write_all(&header)?;
        log.sync_all()?;
    } else {
        log.read_exact(&mut header)?;
        if &header[..8] != LOG_MAGIC {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not an answer log", path.display()),
            ));
        }
    }
    Ok((log, u64_at(&header, 8)))
}

impl AnswerLog {
    /// Opens the answers in `dir`, creating them if absent, rebuilding the index if it does
    /// not cover the log, and cutting a torn record off the log's end.
    pub(super) fn open(dir: &Path) -> std::io::Result<AnswerLog> {
        let log_path = dir.join("answers.log");
        let index_path = dir.join("answers.idx");
        let (log, log_id) = open_log(&log_path)?;
        let sync_handle = log.try_clone()?;
        let length = log.metadata()?.len();
        let inner = match Slots::open_clean(&index_path, log_id, length)? {
            Some(slots) => Inner {
                log,
                written: length,
                pending: Vec::new(),
                slots,
                dirty: false,
            },
            None => Inner::rebuild(&log_path, index_path, log, log_id)?,
        };
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
        self.lock().write_pending()
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
        let end = inner.end();
        while offset < end && entries.len() < most {
            let Some(record) = inner.record_at(offset)? else {
                break;
            };
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
        inner.written + inner.slots.map.len() as u64
    }
}

impl Drop for AnswerLog {
    /// Hands what is pending to the file, so that a store dropped without closing (a tool's,
    /// a test's) loses nothing but the index's clean mark.
    fn drop(&mut self) {
        let _ = self.lock().write_pending();
    }
}

impl Inner {
    /// Reads the whole log (cutting it after its last intact record) into a new index. Keys
    /// are told apart by their 64-bit hashes here (reading each probed record back would
    /// move the file under the reader): two keys of one hash would leave the older unindexed,
    /// a miss, never a wrong answer.
    fn rebuild(
        log_path: &Path,
        index_path: PathBuf,
        log: File,
        log_id: u64,
    ) -> std::io::Result<Inner> {
        let mut slots = Slots::create(index_path, log_id, FIRST_SLOTS)?;
        let end = read_log(&log, |offset, record| {
            let hash = key_hash(&record.key);
            let slot = slots.probe(hash, |_| Ok(true))?;
            if slots.get(slot).0 == 0 {
                slots.used += 1;
            }
            slots.set(slot, hash, offset);
            slots.grow_if_full()
        })?;
        if end < log.metadata()?.len() {
            tracing::warn!(
                file = %log_path.display(),
                kept_bytes = end,
                "the answer log ended in a torn record (a crash while writing): cut after the last whole one"
            );
            log.set_len(end)?;
            log.sync_all()?;
        }
        let mut inner = Inner {
            log,
            written: end,
            pending: Vec::new(),
            slots,
            dirty: true,
        };
        inner.close()?;
        Ok(inner)
    }

    fn end(&self) -> u64 {
        self.written + self.pending.len() as u64
    }

    /// `key`'s slot and newest record, or the empty slot where it would go.
    fn find(&self, key: &[u8], hash: u64) -> std::io::Result<Result<(usize, Record), usize>> {
        let mut found = None;
        let slot = self.slots.probe(hash, |offset| {
            found = self.record_at(offset)?.filter(|record| record.key == key);
            Ok(found.is_some())
        })?;
        Ok(found.map(|record| (slot, record)).ok_or(slot))
    }

    /// The intact record at `offset`, if there is one.
    fn record_at(&self, offset: u64) -> std::io::Result<Option<Record>> {
        if offset < LOG_HEADER || offset + 8 > self.end() {
            return Ok(None);
        }
        if offset >= self.written {
            let bytes = &self.pending[(offset - self.written) as usize..];
            let header = [
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            ];
            return Ok(decode_record(header, |body| {
                match bytes.get(8..8 + body.len()) {
                    Some(read) => {
                        body.copy_from_slice(read);
                        true
                    }
                    None => false,
                }
            }));
        }
        let mut file = &self.log;
        file.seek(SeekFrom::Start(offset))?;
        let mut header = [0u8; 8];
        if file.read_exact(&mut header).is_err() {
            return Ok(None);
        }
        Ok(decode_record(header, |body| file.read_exact(body).is_ok()))
    }

    /// Appends a record and points `key`'s slot at it.
    fn append(&mut self, kind: u8, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        if key.len() > u16::MAX as usize {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an answer's key is longer than 65,535 bytes",
            ));
        }
        self.mark_dirty()?;
        let hash = key_hash(key);
        let slot = match self.find(key, hash)? {
            Ok((slot, _)) => slot,
            Err(empty) => {
                self.slots.used += 1;
                empty
            }
        };
        let offset = self.end();
        encode_record(&mut self.pending, kind, key, value);
        self.slots.set(slot, hash, offset);
        if self.pending.len() > PENDING_MAX {
            self.write_pending()?;
        }
        self.slots.grow_if_full()
    }

    /// Marks the index dirty on disk before its first change since the last flush.
    fn mark_dirty(&mut self) -> std::io::Result<()> {
        if !self.dirty {
            put_u64(&mut self.slots.map, 32, 1);
            self.slots.map.flush_range(0, INDEX_HEADER)?;
            self.dirty = true;
        }
        Ok(())
    }

    /// Writes the pending records to the file; after a failed write the file is cut back to
    /// its last whole record and the records stay pending.
    fn write_pending(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = self
            .log
            .seek(SeekFrom::Start(self.written))
            .and_then(|_| self.log.write_all(&self.pending));
        if let Err(error) = written {
            let _ = self.log.set_len(self.written);
            return Err(error);
        }
        self.written += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    fn close(&mut self) -> std::io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        self.write_pending()?;
        self.log.sync_data()?;
        self.slots.map.flush()?;
        let (written, used) = (self.written, self.slots.used);
        put_u64(&mut self.slots.map, 24, written);
        put_u64(&mut self.slots.map, 40, used);
        put_u64(&mut self.slots.map, 32, 0);
        self.slots.map.flush_range(0, INDEX_HEADER)?;
        self.dirty = false;
        Ok(())
    }
}

impl Slots {
    /// The index at `path` if it was closed clean for the log `log_id` of `length` bytes.
    fn open_clean(path: &Path, log_id: u64, length: u64) -> std::io::Result<Option<Slots>> {
        let Ok(mut file) = OpenOptions::new().read(true).write(true).open(path) else {
            return Ok(None);
        };
        let mut header = [0u8; INDEX_HEADER];
        if file.read_exact(&mut header).is_err() {
            return Ok(None);
        }
        let count = u64_at(&header, 16);
        let clean = &header[..8] == INDEX_MAGIC
            && u64_at(&header, 8) == log_id
            && u64_at(&header, 24) == length
            && u64_at(&header, 32) == 0
            && count.is_power_of_two()
            && file.metadata()?.len() == INDEX_HEADER as u64 + count * SLOT as u64;
        if !clean {
            return Ok(None);
        }
        // SAFETY: the index file is this process's alone while the store is open (sled's lock
        // on the same directory keeps a second coordinator out), and only changed through
        // this map.
        let map = unsafe { MmapMut::map_mut(&file)? };
        Ok(Some(Slots {
            map,
            count,
            used: u64_at(&header, 40),
            path: path.to_path_buf(),
            log_id,
        }))
    }

    /// A new, empty index of `count` slots for the log `log_id`, marked dirty.
    fn create(path: PathBuf, log_id: u64, count: u64) -> std::io::Result<Slots> {
        Ok(Slots {
            map: new_index_file(&path, log_id, count)?,
            count,
            used: 0,
            path,
            log_id,
        })
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
        grown.map.flush()?;
        std::fs::rename(&grown.path, &self.path)?;
        grown.path = self.path.clone();
        *self = grown;
        Ok(())
    }
}

/// A new, empty, dirty index file of `count` slots for the log `log_id`, mapped.
fn new_index_file(path: &Path, log_id: u64, count: u64) -> std::io::Result<MmapMut> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    reserve(&file, INDEX_HEADER as u64 + count * SLOT as u64)?;
    // SAFETY: as in `Slots::open_clean`: the file is this process's alone and only changed
    // through this map.
    let mut map = unsafe { MmapMut::map_mut(&file)? };
    map[..8].copy_from_slice(INDEX_MAGIC);
    put_u64(&mut map, 8, log_id);
    put_u64(&mut map, 16, count);
    put_u64(&mut map, 32, 1);
    map.flush_range(0, INDEX_HEADER)?;
    Ok(map)
}

/// Sizes `file` to `length` bytes with its blocks taken on disk now: a mapped page of a sparse
/// file that a full disk cannot back kills the process at its first write (SIGBUS), where a
/// refused reservation is an error the coordinator reports.
#[cfg(unix)]
fn reserve(file: &File, length: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let length = libc::off_t::try_from(length).map_err(std::io::Error::other)?;
    // SAFETY: a plain system call on an open descriptor this function borrows.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, length) } {
        0 => Ok(()),
        error => Err(std::io::Error::from_raw_os_error(error)),
    }
}

#[cfg(not(unix))]
fn reserve(file: &File, length: u64) -> std::io::Result<()> {
    file.set_len(length)
}

#[cfg(test)]
mod tests;
