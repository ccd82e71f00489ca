//! Pattern database files: a 128-byte header, then the entries: a byte per placement, or half a
//! byte (see `packed`) when the table's values allow. The header names what
//! the table is for (board size, goal, pattern tiles, entry encoding) and carries an xxh3 checksum
//! of the entries, so a file that is corrupt, truncated or built for something else is refused
//! rather than used. Tables are memory-mapped, so processes on one host share their pages.
//!
//! Layout (little-endian): magic `TILEPDB\n` (0..8), format version u32 (8..12), columns (12),
//! pattern size (13), entry encoding (14: 1 for one byte per placement, 4 for half a byte per
//! placement as `packed` says, 3 for a byte per zero-aware state, see `zero_index`, 5 for half a
//! byte per placement and blank cell, see `blank_cells`), rows (15:
//! 0 for a square, as every file before rectangles has it), goal tiles (16..41), pattern tiles
//! (41..66), entry count u64 (72..80), checksum u64 (80..88), zeros to 128. A goal has at most
//! [`MAX_TABLE_CELLS`] cells.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use memmap2::Mmap;
use thiserror::Error;

use crate::board::{Board, Shape, MAX_SIDE};
use crate::pdb::blank_cells;
use crate::pdb::index::{placements, Unranker};
use crate::pdb::packed::{half_excess, packed_len, Distances};
use crate::pdb::zero_index::{ZeroIndex, MAX_ZERO_AWARE_TILES};

pub const MAGIC: &[u8; 8] = b"TILEPDB\n";
pub const FORMAT_VERSION: u32 = 1;
/// One byte per placement: the number of pattern-tile moves, 255 for unreachable.
pub const ENCODING_BYTE_MOVES: u8 = 1;
/// One byte per (placement, blank region) state, laid out placement-major as `zero_index` says
/// (2 was an earlier, map-major layout, refused and rebuilt).
pub const ENCODING_ZERO_AWARE: u8 = 3;
/// Half a byte per placement: the halved excess over the pattern's Manhattan distance (`packed`).
pub const ENCODING_PACKED: u8 = 4;
/// A zero-aware table at half a byte per placement and blank cell (`blank_cells`).
pub const ENCODING_ZERO_AWARE_PACKED: u8 = 5;
pub const HEADER_LEN: usize = 128;
/// The most cells of a goal a table's header holds (25 bytes of goal tiles, a 5x5 board).
pub const MAX_TABLE_CELLS: usize = MAX_SIDE * MAX_SIDE;

/// What a table is for. Two tables with equal specs are interchangeable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PatternSpec {
    pub goal: Board,
    /// Pattern tiles, in index order.
    pub tiles: Vec<u8>,
    /// One entry per blank region of each placement rather than per placement.
    pub zero_aware: bool,
}

impl PatternSpec {
    pub fn entries(&self) -> u64 {
        if self.zero_aware {
            zero_aware_entries(self.goal.side(), self.tiles.len())
        } else {
            placements(self.goal.cells(), self.tiles.len())
        }
    }

    /// Entries in a file of this table, packed or not: a packed zero-aware table has one per
    /// placement and blank cell (`blank_cells`).
    pub fn stored_entries(&self, packed: bool) -> u64 {
        if packed && self.zero_aware {
            blank_cells::entries(self.goal.cells(), self.tiles.len())
        } else {
            self.entries()
        }
    }

    /// Bytes of entries in a file of this table, packed or not.
    pub fn entry_bytes(&self, packed: bool) -> u64 {
        let entries = self.stored_entries(packed);
        if packed {
            packed_len(entries)
        } else {
            entries
        }
    }

    /// Whether this table is packed once built: a zero-aware one only where `blank_cells` suits
    /// it, any other when its values allow (those of every preset do).
    pub fn packs(&self) -> bool {
        !self.zero_aware || blank_cells::suits(self.goal.cells(), self.tiles.len())
    }

    fn encoding(&self, packed: bool) -> u8 {
        match (self.zero_aware, packed) {
            (true, true) => ENCODING_ZERO_AWARE_PACKED,
            (true, false) => ENCODING_ZERO_AWARE,
            (false, true) => ENCODING_PACKED,
            (false, false) => ENCODING_BYTE_MOVES,
        }
    }

    /// File name in the data directory, e.g. `4x4-1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.0-9.10.11.pdb`
    /// is shortened by naming the two standard goals; a rectangle's starts with its rows x
    /// columns (`3x4-blank-last-...`).
    pub fn file_name(&self) -> String {
        let shape = self.goal.shape();
        let goal = if self.goal == Board::blank_last_in(shape) {
            "blank-last".to_string()
        } else if self.goal == Board::blank_first_in(shape) {
            "blank-first".to_string()
        } else {
            format!(
                "goal-{:016x}",
                xxhash_rust::xxh3::xxh3_64(self.goal.tiles())
            )
        };
        let tiles: Vec<String> = self.tiles.iter().map(u8::to_string).collect();
        let zero = if self.zero_aware { "-zero" } else { "" };
        format!("{shape}-{goal}-{}{zero}.pdb", tiles.join("."))
    }
}

#[derive(Debug, Error)]
pub enum PdbError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a usable pattern database: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("{path} is a pattern database for something else: {reason}")]
    Mismatch { path: PathBuf, reason: String },
    #[error("pattern database {preset} is for {fits}, not {board}")]
    WrongSize {
        preset: String,
        fits: String,
        board: Shape,
    },
}

impl PdbError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PdbError + '_ {
        move |source| PdbError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A loaded table: header facts and the memory-mapped entries.
#[derive(Debug)]
pub struct PatternTable {
    pub spec: PatternSpec,
    pub checksum: u64,
    /// Half a byte per placement (see `packed`) rather than a byte.
    pub packed: bool,
    entries: Mmap,
}

impl PatternTable {
    /// The entries as stored: a byte per placement (or zero-aware state), or packed.
    #[inline(always)]
    pub fn entries(&self) -> &[u8] {
        &self.entries[HEADER_LEN..]
    }

    /// The value of placement `index` (of a table that is not zero-aware): for tools and tests,
    /// as it unranks a packed table's placement to add its Manhattan distance back.
    pub fn value(&self, index: u32) -> u8 {
        if !self.packed {
            return self.entries()[index as usize];
        }
        let goal = &self.spec.goal;
        let (mut cells, mut digits) = ([0u8; 32], [0u8; 32]);
        Unranker::new(goal.cells(), self.spec.tiles.len()).unrank(index, &mut cells, &mut digits);
        let distance = Distances::new(goal, &self.spec.tiles).of(cells.iter().copied());
        distance + 2 * half_excess(self.entries(), index)
    }

    /// Bytes of the entries (what a worker holds in memory).
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
}

fn header(spec: &PatternSpec, packed: bool, checksum: u64) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    let shape = spec.goal.shape();
    header[12] = shape.cols() as u8;
    header[15] = if shape.square_side().is_some() {
        0
    } else {
        shape.rows() as u8
    };
    header[13] = spec.tiles.len() as u8;
    header[14] = spec.encoding(packed);
    header[16..16 + spec.goal.cells()].copy_from_slice(spec.goal.tiles());
    header[41..41 + spec.tiles.len()].copy_from_slice(&spec.tiles);
    header[72..80].copy_from_slice(&spec.stored_entries(packed).to_le_bytes());
    header[80..88].copy_from_slice(&checksum.to_le_bytes());
    header
}

/// Whether `name` can only be a pattern database file inside a data directory: no path
/// separators, not hidden, ending in `.pdb`. Every name another process sends (a worker asking
/// for a file, a coordinator asking for one) is checked with this before it touches the disk.
pub fn is_file_name(name: &str) -> bool {
    !name.contains(['/', '\\']) && !name.starts_with('.') && name.ends_with(".pdb")
}

/// A temporary name beside `path` for a file on its way in (`doing`: partial, fetching,
/// receiving, compressing): `path`'s name with `.{doing}.{pid}.{call}` appended, unique to
/// this process and call. Processes sharing a table directory (workers on one host, or the
/// replicas of a pod sharing a volume) never write into each other's file, and whichever
/// renames last puts the same table in place.
pub fn partial_path(path: &Path, doing: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let call = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{doing}.{}.{call}", std::process::id()));
    path.with_file_name(name)
}

/// Writes a table atomically (a temporary file renamed into place) and returns its checksum;
/// `packed` says the entries are packed. A temporary file that fails part way (a full disk) is
/// removed, not left beside the tables: it is as large as the table.
pub fn write(
    path: &Path,
    spec: &PatternSpec,
    entries: &[u8],
    packed: bool,
) -> Result<u64, PdbError> {
    let checksum = xxhash_rust::xxh3::xxh3_64(entries);
    let partial = partial_path(path, "partial");
    let written = write_partial(&partial, spec, packed, checksum, entries)
        .and_then(|()| std::fs::rename(&partial, path).map_err(PdbError::io(path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.map(|()| checksum)
}

fn write_partial(
    partial: &Path,
    spec: &PatternSpec,
    packed: bool,
    checksum: u64,
    entries: &[u8],
) -> Result<(), PdbError> {
    let mut file = File::create(partial).map_err(PdbError::io(partial))?;
    file.write_all(&header(spec, packed, checksum))
        .map_err(PdbError::io(partial))?;
    file.write_all(entries).map_err(PdbError::io(partial))?;
    file.sync_all().map_err(PdbError::io(partial))?;
    drop_cached_pages(&file);
    Ok(())
}

/// Drops the page cache of a table file just written and synced, so that its first mapping reads
/// it back from disk into the 2 MiB folios [`huge_pages`] asks for: pages cached by the writes are
/// small and would stay so for as long as they stay cached. Costs one read of the file from disk.
#[cfg(target_os = "linux")]
pub fn drop_cached_pages(file: &impl std::os::fd::AsFd) {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise reads only its integer arguments; the descriptor is borrowed, so it
    // stays open for the call. Synced pages are clean, and the kernel drops only clean ones.
    unsafe { libc::posix_fadvise(file.as_fd().as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Elsewhere the page cache is left as it is.
#[cfg(not(target_os = "linux"))]
pub fn drop_cached_pages<F>(_file: &F) {}

/// What a file's header says.
#[derive(Clone, Debug)]
pub struct Header {
    pub spec: PatternSpec,
    pub checksum: u64,
    pub packed: bool,
}

fn map_file(path: &Path) -> Result<Mmap, PdbError> {
    // Opening a FIFO named like a table would wait for a writer for ever (`serve` hung at
    // start on one); a device or directory is no table either.
    let metadata = std::fs::metadata(path).map_err(PdbError::io(path))?;
    if !metadata.is_file() {
        return Err(PdbError::Corrupt {
            path: path.to_path_buf(),
            reason: "not a regular file (a pipe, device, socket or directory)".into(),
        });
    }
    let file = File::open(path).map_err(PdbError::io(path))?;
    // SAFETY: tables are only ever replaced by rename, never written in place, so the mapped
    // bytes cannot change under us while this process holds the mapping.
    let map = unsafe { Mmap::map(&file) }.map_err(PdbError::io(path))?;
    huge_pages(&map);
    Ok(map)
}

/// Asks for the mapping to be backed by 2 MiB pages, before it is first read. The search reads
/// the tables at random, so with 4 KiB pages nearly every read also misses the TLB; 2 MiB pages
/// made the Korf-100 and hard80 runs about 15% faster when this was added; measured again later,
/// the 5x5 default (2.5 GB) ran 6% faster with them and 4x4's 288 MB alike either way
/// (docs/benchmarks/history.md). Linux maps a file's pages this way when its page cache
/// holds 2 MiB folios, which it allocates when the file is read through such a mapping (seen on
/// Linux 6.18 with ext4: file systems with large folios); elsewhere the advice is ignored, and so
/// is its failure.
fn huge_pages(map: &Mmap) {
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    #[cfg(not(target_os = "linux"))]
    let _ = map;
}

/// Parses and checks the header of a mapped file (everything but the checksum of the entries).
fn read_header(path: &Path, map: &[u8]) -> Result<Header, PdbError> {
    let corrupt = |reason: String| PdbError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let mismatch = |reason: String| PdbError::Mismatch {
        path: path.to_path_buf(),
        reason,
    };
    if map.len() < HEADER_LEN || &map[..8] != MAGIC {
        return Err(corrupt("no tilesolve pattern database header".into()));
    }
    let version = u32::from_le_bytes(map[8..12].try_into().unwrap_or_default());
    if version != FORMAT_VERSION {
        return Err(mismatch(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    let encodings = [
        ENCODING_BYTE_MOVES,
        ENCODING_ZERO_AWARE,
        ENCODING_PACKED,
        ENCODING_ZERO_AWARE_PACKED,
    ];
    if !encodings.contains(&map[14]) {
        return Err(mismatch(format!(
            "entry encoding {}, this build reads {encodings:?}",
            map[14]
        )));
    }
    let (cols, k) = (usize::from(map[12]), usize::from(map[13]));
    let rows = match map[15] {
        0 => cols,
        rows => usize::from(rows),
    };
    let shape = Shape::new(rows, cols)
        .ok()
        .filter(|shape| shape.cells() <= MAX_TABLE_CELLS && k > 0 && k < shape.cells())
        .ok_or_else(|| {
            corrupt(format!(
                "impossible size {rows}x{cols} with {k} pattern tiles"
            ))
        })?;
    let goal_values: Vec<u64> = map[16..16 + shape.cells()]
        .iter()
        .map(|&t| u64::from(t))
        .collect();
    let goal = Board::from_tiles_in(&goal_values, shape)
        .map_err(|e| corrupt(format!("invalid goal: {e}")))?;
    let zero_aware = [ENCODING_ZERO_AWARE, ENCODING_ZERO_AWARE_PACKED].contains(&map[14]);
    let packed = [ENCODING_PACKED, ENCODING_ZERO_AWARE_PACKED].contains(&map[14]);
    if zero_aware && k > MAX_ZERO_AWARE_TILES {
        return Err(corrupt(format!("{k} tiles in a zero-aware table")));
    }
    if zero_aware && packed && !blank_cells::suits(shape.cells(), k) {
        return Err(corrupt(format!(
            "{k} tiles on {shape} stored by blank cell"
        )));
    }
    let spec = PatternSpec {
        goal,
        tiles: map[41..41 + k].to_vec(),
        zero_aware,
    };
    let entries = u64::from_le_bytes(map[72..80].try_into().unwrap_or_default());
    let bytes = spec.entry_bytes(packed);
    if entries != spec.stored_entries(packed) || map.len() as u64 != HEADER_LEN as u64 + bytes {
        return Err(corrupt(format!(
            "{} bytes of entries, expected {bytes}",
            map.len().saturating_sub(HEADER_LEN),
        )));
    }
    let checksum = u64::from_le_bytes(map[80..88].try_into().unwrap_or_default());
    Ok(Header {
        spec,
        checksum,
        packed,
    })
}

fn check_entries(path: &Path, map: &[u8], header: &Header) -> Result<(), PdbError> {
    if xxhash_rust::xxh3::xxh3_64(&map[HEADER_LEN..]) != header.checksum {
        return Err(PdbError::Corrupt {
            path: path.to_path_buf(),
            reason: "checksum mismatch: the entries were altered or truncated".into(),
        });
    }
    Ok(())
}

/// Maps and checks a table file against what the caller expects. `verify_checksum` rehashes the
/// entries (a fraction of a second per GB).
pub fn load(
    path: &Path,
    expected: &PatternSpec,
    verify_checksum: bool,
) -> Result<PatternTable, PdbError> {
    let map = map_file(path)?;
    let header = read_header(path, &map)?;
    if header.spec != *expected {
        return Err(PdbError::Mismatch {
            path: path.to_path_buf(),
            reason: format!(
                "built for goal {} and tiles {:?}{}, wanted goal {} and tiles {:?}{}",
                header.spec.goal,
                header.spec.tiles,
                if header.spec.zero_aware {
                    " (zero-aware)"
                } else {
                    ""
                },
                expected.goal,
                expected.tiles,
                if expected.zero_aware {
                    " (zero-aware)"
                } else {
                    ""
                }
            ),
        });
    }
    if verify_checksum {
        check_entries(path, &map, &header)?;
    }
    Ok(PatternTable {
        spec: header.spec,
        checksum: header.checksum,
        packed: header.packed,
        entries: map,
    })
}

/// Reads a file's header and, with `verify`, checks its entries against the checksum as the
/// disk holds them: the file's cached pages that no process maps are dropped first, so they are
/// read from disk, and cached again in the 2 MiB folios [`huge_pages`] asks for (a table copied
/// in by hand was cached in small ones).
pub fn inspect(path: &Path, verify: bool) -> Result<Header, PdbError> {
    // Only a regular file is opened for it: opening a FIFO waits for a writer (`map_file`
    // refuses one by name).
    if verify && std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        if let Ok(file) = File::open(path) {
            drop_cached_pages(&file);
        }
    }
    let map = map_file(path)?;
    let header = read_header(path, &map)?;
    if verify {
        check_entries(path, &map, &header)?;
    }
    Ok(header)
}

/// Entries of a zero-aware table of `k` tiles on a square of `side`: worked out once per size
/// and process, as it takes flooding every placement's free cells (tens of milliseconds on 5x5,
/// and a process checks it for every table it loads).
fn zero_aware_entries(side: usize, k: usize) -> u64 {
    static COUNTS: OnceLock<Mutex<HashMap<(usize, usize), u64>>> = OnceLock::new();
    *COUNTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry((side, k))
        .or_insert_with(|| ZeroIndex::new(side, k).entries())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe named like a table is refused by name, not opened (which would wait for a
    /// writer for ever).
    #[test]
    fn a_pipe_named_like_a_table_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3x3-blank-last-1.2.pdb");
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file system entry.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        for verify in [false, true] {
            let error = inspect(&path, verify).unwrap_err();
            assert!(matches!(error, PdbError::Corrupt { .. }), "{error}");
            assert!(error.to_string().contains("not a regular file"), "{error}");
        }
    }

    /// A write that fails at its last step (here the rename: a directory holds the table's
    /// name) returns the error and leaves no temporary file behind.
    #[test]
    fn a_failed_write_leaves_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let spec = PatternSpec {
            goal: Board::blank_last(3),
            tiles: vec![1, 2],
            zero_aware: false,
        };
        let path = dir.path().join(spec.file_name());
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("keeps the directory non-empty"), b"x").unwrap();
        let entries = vec![0u8; spec.entries() as usize];
        assert!(matches!(
            write(&path, &spec, &entries, false),
            Err(PdbError::Io { .. })
        ));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![path.file_name().unwrap().to_os_string()]);
    }
}
