//! What the store's own files share (`answer_log`, `batch_log`): an append-only log of
//! checksummed records, and an index of where records start, mapped into memory, whose header
//! says which log it belongs to, how much of it it covers and whether it is clean.
//!
//! A log record: the body's length (u32 LE), the body's CRC-32 (u32 LE), the body: kind (1 put,
//! 2 removal), key length (u16 LE), key, value. A log opens with a 16-byte header, a magic and
//! an id drawn when it was created; its index names that id, so an index is never read against
//! another log.
//!
//! An index's 64-byte header: magic (0), the log's id (8), the slot count (16), the log length
//! it covers (24), a dirty mark (32), a number of the index's own (40), the bytes of the live
//! records (48: those the slots point at, removals not counted), then the index's own again
//! (56).
//!
//! Crash safety (each log keeps it): the log is the truth and the index a cache of it. The
//! first change after a flush marks the index dirty on disk before it touches a slot
//! ([`mark_dirty`]); a close writes the pending records, syncs the log, syncs the slots, then
//! records the length covered and clears the mark ([`mark_clean`]). An index found dirty,
//! short, of another log or not covering the whole log is rebuilt from the log on opening.
//!
//! Damage (a flipped bit, a zeroed page): every reader that goes through a log in order steps
//! over a record that fails its check to the next intact one ([`LogFile::next_intact`]), so
//! one bad record costs only itself, and a reader always moves on. When no intact record
//! follows, the rest is a torn tail: cut off when it is no more than a crash's unsynced writes
//! can leave ([`TORN_TAIL_MAX`]), else refused by name, but for a salvage
//! ([`OnDamage::Cut`]).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use memmap2::MmapMut;

pub(super) const LOG_HEADER: u64 = 16;
pub(super) const INDEX_HEADER: usize = 64;
pub(super) const PUT: u8 = 1;
pub(super) const REMOVAL: u8 = 2;
/// Pending records past this many bytes are written to the file (not synced) at once.
const PENDING_MAX: usize = 1 << 20;
/// Where an index's header keeps the bytes of the log's live records.
pub(super) const LIVE_AT: usize = 48;
/// Dead bytes that, once they also pass the live ones, start a rewrite of a log with its live
/// records only.
pub(super) const COMPACT_AFTER: u64 = 64 << 20;
/// The most a crash can leave torn at a log's end: its writes since the last sync (a flush's
/// or a probe's, seconds apart; pending records are written a MiB at a time), many times over.
pub(super) const TORN_TAIL_MAX: u64 = 64 << 20;

/// What opening a log does with a record that fails its check further from the end than a
/// torn write reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OnDamage {
    /// Refuses the log (an error naming it and the offset).
    Refuse,
    /// Cuts the log there, keeping what came before (a salvage, on a copy).
    Cut,
}

/// Where an index's header keeps the log length it covers, and its dirty mark.
const COVERED_AT: usize = 24;
const DIRTY_AT: usize = 32;

pub(super) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

pub(super) fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// A record read back.
pub(super) struct Record {
    pub(super) kind: u8,
    pub(super) key: Vec<u8>,
    pub(super) value: Vec<u8>,
    /// The whole record's length, header included.
    pub(super) length: u64,
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

/// Bytes of a record's start that [`could_start_record`] looks at: its header, its kind and
/// its key's length.
const PREFIX: usize = 11;

/// Whether `bytes` could start a record of at most `room` bytes: a body length in range that
/// fits, a known kind and a key inside the body (checked before a body is read and summed).
fn could_start_record(bytes: &[u8], room: u64) -> bool {
    if bytes.len() < PREFIX {
        return false;
    }
    let body_length = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let key_length = u16::from_le_bytes([bytes[9], bytes[10]]) as usize;
    (3..=1 << 24).contains(&body_length)
        && 8 + body_length as u64 <= room
        && matches!(bytes[8], PUT | REMOVAL)
        && 3 + key_length <= body_length
}

/// A log file: what is in the file, and the records appended after it, not yet written.
pub(super) struct LogFile {
    file: File,
    /// Bytes of the log in its file.
    pub(super) written: u64,
    /// Records after `written`, not yet in the file.
    pending: Vec<u8>,
    /// The log's id, drawn when it was created.
    pub(super) id: u64,
}

impl LogFile {
    /// Opens the log at `path`, creating it with a fresh id if absent; `what` names it in the
    /// error for a file that is not one.
    pub(super) fn open(path: &Path, magic: &[u8; 8], what: &str) -> std::io::Result<LogFile> {
        regular_or_absent(path)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let mut header = [0u8; LOG_HEADER as usize];
        if file.metadata()?.len() < LOG_HEADER {
            header[..8].copy_from_slice(magic);
            getrandom::getrandom(&mut header[8..])
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            file.set_len(0)?;
            file.write_all(&header)?;
            file.sync_all()?;
        } else {
            file.read_exact(&mut header)?;
            if &header[..8] != magic {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not {what}", path.display()),
                ));
            }
        }
        let written = file.metadata()?.len();
        Ok(LogFile {
            file,
            written,
            pending: Vec::new(),
            id: u64_at(&header, 8),
        })
    }

    /// The file again, to sync it without holding the log's lock.
    pub(super) fn handle(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }

    /// Where the next record starts.
    pub(super) fn end(&self) -> u64 {
        self.written + self.pending.len() as u64
    }

    /// Reads the file's records from its header on, calling `each` with every intact record and
    /// its offset. Past a record that fails its check, reading goes on from the next intact
    /// one ([`LogFile::next_intact`]): the damaged bytes cost only the records in them, each
    /// such stretch logged with where it is. When nothing intact follows, the rest is cut off
    /// when it is a torn tail or `on_damage` says so, else refused (`log_name` names the log).
    pub(super) fn read_all(
        &mut self,
        log_name: &str,
        on_damage: OnDamage,
        mut each: impl FnMut(u64, Record) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut reader = BufReader::with_capacity(1 << 20, &self.file);
        reader.seek(SeekFrom::Start(LOG_HEADER))?;
        let mut offset = LOG_HEADER;
        loop {
            let mut header = [0u8; 8];
            if reader.read_exact(&mut header).is_err() {
                break;
            }
            if let Some(record) = decode_record(header, |body| reader.read_exact(body).is_ok()) {
                let length = record.length;
                each(offset, record)?;
                offset += length;
                continue;
            }
            let Some((next, record)) = self.next_intact(offset + 1)? else {
                break;
            };
            tracing::warn!(
                log = log_name,
                at_byte = offset,
                damaged_bytes = next - offset,
                "a log's record failed its check: stepped over to the next intact record \
                 (what the damaged bytes held is lost, nothing else)"
            );
            let length = record.length;
            each(next, record)?;
            offset = next + length;
            reader.seek(SeekFrom::Start(offset))?;
        }
        let length = self.file.metadata()?.len();
        if length - offset > TORN_TAIL_MAX && on_damage == OnDamage::Refuse {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{log_name} is damaged: from its byte {offset} of {length} on no record \
                     passes its check, further from the end than a crash's torn write reaches"
                ),
            ));
        }
        if offset < length {
            tracing::warn!(
                log = log_name,
                kept_bytes = offset,
                cut_bytes = length - offset,
                "a log's last records failed their check (a write a crash tore, or damage \
                 met by a salvage): cut there, keeping the records before it"
            );
            self.file.set_len(offset)?;
            self.file.sync_all()?;
        }
        self.written = offset;
        self.pending.clear();
        Ok(())
    }

    /// The first intact record that starts at `from` or after it, with its offset; `None` when
    /// none does. Past damage, every byte is tried as a record's start, but a record's body is
    /// read and checked only where its header and first bytes could be one's (a length that
    /// fits, a known kind, a key inside the body), so that garbage costs little.
    pub(super) fn next_intact(&self, from: u64) -> std::io::Result<Option<(u64, Record)>> {
        const WINDOW: u64 = 1 << 16;
        let from = from.max(LOG_HEADER);
        if let Some(record) = self.record_at(from)? {
            return Ok(Some((from, record)));
        }
        let end = self.end();
        let mut at = from + 1;
        while at < self.written {
            let stop = (at + WINDOW + PREFIX as u64).min(self.written);
            let mut bytes = vec![0u8; (stop - at) as usize];
            let mut file = &self.file;
            file.seek(SeekFrom::Start(at))?;
            file.read_exact(&mut bytes)?;
            for start in 0..(stop - at).min(WINDOW) {
                let offset = at + start;
                if could_start_record(&bytes[start as usize..], end - offset) {
                    if let Some(record) = self.record_at(offset)? {
                        return Ok(Some((offset, record)));
                    }
                }
            }
            at += WINDOW;
        }
        // The pending records, never written, are whole: the first starts at `written`.
        let at = at.max(self.written);
        Ok(self.record_at(at)?.map(|record| (at, record)))
    }

    /// The intact record at `offset`, if there is one.
    pub(super) fn record_at(&self, offset: u64) -> std::io::Result<Option<Record>> {
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
        let mut file = &self.file;
        file.seek(SeekFrom::Start(offset))?;
        let mut header = [0u8; 8];
        if file.read_exact(&mut header).is_err() {
            return Ok(None);
        }
        Ok(decode_record(header, |body| file.read_exact(body).is_ok()))
    }

    /// The whole length of the record at `offset` (from its header alone, unchecked).
    pub(super) fn length_at(&self, offset: u64) -> std::io::Result<u64> {
        let mut header = [0u8; 4];
        if offset >= self.written {
            let at = (offset - self.written) as usize;
            header.copy_from_slice(&self.pending[at..at + 4]);
        } else {
            let mut file = &self.file;
            file.seek(SeekFrom::Start(offset))?;
            file.read_exact(&mut header)?;
        }
        Ok(8 + u64::from(u32::from_le_bytes(header)))
    }

    /// Appends a record (written to the file once enough are pending); returns its offset.
    pub(super) fn append(&mut self, kind: u8, key: &[u8], value: &[u8]) -> std::io::Result<u64> {
        if key.len() > u16::MAX as usize {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a record's key is longer than 65,535 bytes",
            ));
        }
        let offset = self.end();
        encode_record(&mut self.pending, kind, key, value);
        if self.pending.len() > PENDING_MAX {
            self.write_pending()?;
        }
        Ok(offset)
    }

    /// Writes the pending records to the file; after a failed write the file is cut back to
    /// its last whole record and the records stay pending.
    pub(super) fn write_pending(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let written = self
            .file
            .seek(SeekFrom::Start(self.written))
            .and_then(|_| self.file.write_all(&self.pending));
        if let Err(error) = written {
            let _ = self.file.set_len(self.written);
            return Err(error);
        }
        self.written += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Writes what is pending and syncs the file.
    pub(super) fn sync(&mut self) -> std::io::Result<()> {
        self.write_pending()?;
        self.file.sync_data()
    }
}

/// Refuses a file at `path` that is there and is not a regular file, naming it: a pipe in the
/// store's place would be waited on for ever, a device written to.
fn regular_or_absent(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(metadata) if !metadata.is_file() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a pipe, device, socket or directory)",
                path.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// The index at `path` if it was closed clean for `log` (its id and its whole length), with
/// `magic` and `count` slots of `slot_bytes`: its map and its slot count.
pub(super) fn open_clean_index(
    path: &Path,
    magic: &[u8; 8],
    log: &LogFile,
    slot_bytes: usize,
) -> std::io::Result<Option<(MmapMut, u64)>> {
    regular_or_absent(path)?;
    let Ok(mut file) = OpenOptions::new().read(true).write(true).open(path) else {
        return Ok(None);
    };
    let mut header = [0u8; INDEX_HEADER];
    if file.read_exact(&mut header).is_err() {
        return Ok(None);
    }
    let count = u64_at(&header, 16);
    let clean = &header[..8] == magic
        && u64_at(&header, 8) == log.id
        && u64_at(&header, COVERED_AT) == log.end()
        && u64_at(&header, DIRTY_AT) == 0
        && count.is_power_of_two()
        && file.metadata()?.len() == INDEX_HEADER as u64 + count * slot_bytes as u64;
    if !clean {
        return Ok(None);
    }
    // SAFETY: the index file is this process's alone while the store is open (sled's lock
    // on the same directory keeps a second coordinator out), and only changed through this
    // map.
    let map = unsafe { MmapMut::map_mut(&file)? };
    Ok(Some((map, count)))
}

/// A new, empty, dirty index file of `count` slots of `slot_bytes` for the log `log_id`,
/// mapped.
pub(super) fn new_index_file(
    path: &Path,
    magic: &[u8; 8],
    log_id: u64,
    count: u64,
    slot_bytes: usize,
) -> std::io::Result<MmapMut> {
    regular_or_absent(path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    reserve(&file, INDEX_HEADER as u64 + count * slot_bytes as u64)?;
    // SAFETY: as in `open_clean_index`: the file is this process's alone and only changed
    // through this map.
    let mut map = unsafe { MmapMut::map_mut(&file)? };
    map[..8].copy_from_slice(magic);
    put_u64(&mut map, 8, log_id);
    put_u64(&mut map, 16, count);
    put_u64(&mut map, DIRTY_AT, 1);
    map.flush_range(0, INDEX_HEADER)?;
    Ok(map)
}

/// Marks the index mapped in `map` dirty on disk (before its first change since it was clean).
pub(super) fn mark_dirty(map: &mut MmapMut) -> std::io::Result<()> {
    put_u64(map, DIRTY_AT, 1);
    map.flush_range(0, INDEX_HEADER)
}

/// Syncs `log` and the index mapped in `map`, then records in the index's header that it
/// covers the whole log, with its own numbers `fields` (offset, value), and clears its mark.
pub(super) fn mark_clean(
    log: &mut LogFile,
    map: &mut MmapMut,
    fields: &[(usize, u64)],
) -> std::io::Result<()> {
    log.sync()?;
    map.flush()?;
    put_u64(map, COVERED_AT, log.written);
    for &(at, value) in fields {
        put_u64(map, at, value);
    }
    put_u64(map, DIRTY_AT, 0);
    map.flush_range(0, INDEX_HEADER)
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
