//! The data directory's pattern databases: load a table if its file is good, otherwise build it
//! (once), save it and load it. A corrupt or mismatched file is reported and rebuilt, never used.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::board::Board;
use crate::pdb::additive::AdditivePdb;
use crate::pdb::blank_cells;
use crate::pdb::builder::{self, BuildProgress};
use crate::pdb::file::{self, PatternSpec, PatternTable, PdbError};
use crate::pdb::packed;
use crate::pdb::preset::Preset;
use crate::pdb::zero_index::ZeroIndex;

/// Placements the builder settles per second on this project's 2-core reference machine, for
/// the "about how long" message before a build (see BENCHMARKS.md).
const PLACEMENTS_PER_SECOND: f64 = 4.5e6;

/// Placements packed per second there (`packed::pack`: 14.6 s for the 8-tile table).
const PACKED_PER_SECOND: f64 = 3.5e7;

/// What the store is doing, for progress bars and log lines.
#[derive(Debug)]
pub enum PdbEvent<'a> {
    Loaded {
        path: &'a Path,
        seconds: f64,
    },
    Refused {
        error: &'a PdbError,
    },
    Building {
        path: &'a Path,
        entries: u64,
        estimated_seconds: f64,
    },
    Progress(BuildProgress),
    Built {
        path: &'a Path,
        seconds: f64,
    },
    /// A table kept at a byte an entry (built by an earlier version), its values found to fit
    /// half a byte, about to be rewritten packed: once.
    Packing {
        path: &'a Path,
        entries: u64,
    },
    /// That table rewritten packed.
    Packed {
        path: &'a Path,
        seconds: f64,
    },
}

/// Pattern databases kept in one directory.
#[derive(Clone, Debug)]
pub struct PdbStore {
    dir: PathBuf,
    threads: usize,
    /// Whether a missing or unusable table is built; if not, it is an error.
    builds: bool,
}

impl PdbStore {
    /// A store in `dir` (created on first build) that builds on `threads` threads.
    pub fn new(dir: impl Into<PathBuf>, threads: usize) -> PdbStore {
        PdbStore {
            dir: dir.into(),
            threads: threads.max(1),
            builds: true,
        }
    }

    /// The same directory, where a missing or unusable table is an error rather than a build:
    /// for a process that obtains its tables elsewhere first (a coordinator fetching from its
    /// workers).
    pub fn without_builds(&self) -> PdbStore {
        PdbStore {
            builds: false,
            ..self.clone()
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, spec: &PatternSpec) -> PathBuf {
        self.dir.join(spec.file_name())
    }

    /// About how long building `spec` takes on the reference machine.
    pub fn estimated_build_seconds(spec: &PatternSpec) -> f64 {
        let packing = if spec.packs() {
            spec.stored_entries(true) as f64 / PACKED_PER_SECOND
        } else {
            0.0
        };
        spec.entries() as f64 / PLACEMENTS_PER_SECOND + packing
    }

    /// The table for `spec`: loaded, or built and saved if missing or unusable.
    pub fn table(
        &self,
        spec: &PatternSpec,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<Arc<PatternTable>, PdbError> {
        let path = self.path_of(spec);
        let started = Instant::now();
        match file::load(&path, spec, true) {
            Ok(table) if self.repacks(&table) => self.repack(table, &path, events),
            Ok(table) => {
                events(PdbEvent::Loaded {
                    path: &path,
                    seconds: started.elapsed().as_secs_f64(),
                });
                Ok(Arc::new(table))
            }
            Err(PdbError::Io { source, .. })
                if self.builds && source.kind() == std::io::ErrorKind::NotFound =>
            {
                self.build(spec, events)
            }
            Err(error @ (PdbError::Corrupt { .. } | PdbError::Mismatch { .. })) if self.builds => {
                events(PdbEvent::Refused { error: &error });
                self.build(spec, events)
            }
            Err(error) => Err(error),
        }
    }

    /// Whether `table`, loaded, is one an earlier version left at a byte an entry that this
    /// store rewrites packed (see [`Self::repack`]).
    fn repacks(&self, table: &PatternTable) -> bool {
        self.builds && !table.packed && !table.spec.zero_aware
    }

    /// Rewrites packed every table in the directory that an earlier version built at a byte an
    /// entry (see [`Self::repack`]); returns how many. A process calls it as it starts, before
    /// it states its tables' checksums to another: so a coordinator and its workers, upgraded
    /// together, hold the same files. Files that do not read as tables are left to be refused
    /// when they are needed.
    pub fn repack_present(
        &self,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<usize, PdbError> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        let mut repacked = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let named = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(file::is_file_name);
            let Some(header) = named.then(|| file::inspect(&path, false).ok()).flatten() else {
                continue;
            };
            if header.packed || header.spec.zero_aware || path != self.path_of(&header.spec) {
                continue;
            }
            if self.table(&header.spec, events)?.packed {
                repacked += 1;
            }
        }
        Ok(repacked)
    }

    /// `table`, at a byte an entry in the file at `path`, rewritten packed and loaded again if
    /// its values allow; else as it is. Once per table: tables built before packing existed
    /// take half the memory from then on.
    fn repack(
        &self,
        table: PatternTable,
        path: &Path,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<Arc<PatternTable>, PdbError> {
        let started = Instant::now();
        let spec = &table.spec;
        // Announced only once its values are known to fit: a table whose values never do (the
        // 8-puzzle's exact one) is tried on every load, and must not say so every time.
        let Some(packed) = packed::pack(&spec.goal, &spec.tiles, table.entries(), self.threads)
        else {
            return Ok(Arc::new(table));
        };
        events(PdbEvent::Packing {
            path,
            entries: spec.entries(),
        });
        file::write(path, spec, &packed, true)?;
        let repacked = file::load(path, spec, true)?;
        events(PdbEvent::Packed {
            path,
            seconds: started.elapsed().as_secs_f64(),
        });
        Ok(Arc::new(repacked))
    }

    /// Builds `spec`, replacing any file there, and loads the result.
    pub fn build(
        &self,
        spec: &PatternSpec,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<Arc<PatternTable>, PdbError> {
        let path = self.path_of(spec);
        std::fs::create_dir_all(&self.dir).map_err(|source| PdbError::Io {
            path: self.dir.clone(),
            source,
        })?;
        let entries = spec.entries();
        events(PdbEvent::Building {
            path: &path,
            entries,
            estimated_seconds: PdbStore::estimated_build_seconds(spec),
        });
        let started = Instant::now();
        let values = builder::build(
            &spec.goal,
            &spec.tiles,
            spec.zero_aware,
            self.threads,
            &|progress| events(PdbEvent::Progress(progress)),
        )
        .map_err(|source| PdbError::Io {
            path: path.clone(),
            source,
        })?;
        // Packed when the values allow (every non-zero-aware preset's do): half the memory.
        let packed = match (spec.packs(), spec.zero_aware) {
            (false, _) => None,
            (true, false) => packed::pack(&spec.goal, &spec.tiles, &values, self.threads),
            (true, true) => {
                let zero = ZeroIndex::new(spec.goal.side(), spec.tiles.len());
                blank_cells::pack(&spec.goal, &spec.tiles, &zero, &values, self.threads)
            }
        };
        match &packed {
            Some(packed) => file::write(&path, spec, packed, true)?,
            None => file::write(&path, spec, &values, false)?,
        };
        drop((values, packed));
        events(PdbEvent::Built {
            path: &path,
            seconds: started.elapsed().as_secs_f64(),
        });
        Ok(Arc::new(file::load(&path, spec, true)?))
    }

    /// The specs of `preset`'s distinct tables for `goal`.
    pub fn specs(preset: Preset, goal: &Board) -> Result<Vec<PatternSpec>, PdbError> {
        if !preset.fits(goal.shape()) {
            return Err(PdbError::WrongSize {
                preset: preset.name(),
                fits: preset.fits_what(),
                board: goal.shape(),
            });
        }
        Ok(preset
            .layout(goal)
            .0
            .into_iter()
            .map(|tiles| PatternSpec {
                goal: *goal,
                tiles,
                zero_aware: preset.zero_aware(),
            })
            .collect())
    }

    /// The specs of `preset`'s tables for `goal` whose files are not in this directory.
    pub fn missing(&self, preset: Preset, goal: &Board) -> Result<Vec<PatternSpec>, PdbError> {
        Ok(PdbStore::specs(preset, goal)?
            .into_iter()
            .filter(|spec| !self.path_of(spec).exists())
            .collect())
    }

    /// Each of `specs` whose file loads as it is (present, intact, and in its current
    /// encoding), loaded on up to the store's threads at once: checking a table's checksum reads
    /// all of it, and a 5x5 preset is 2.5 GB. The rest (`None`) are left to [`Self::table`], one
    /// at a time, since building takes every thread and much memory.
    fn load_present(
        &self,
        specs: &[PatternSpec],
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Vec<Option<Arc<PatternTable>>> {
        let next = AtomicUsize::new(0);
        let loaded: Vec<Mutex<Option<Arc<PatternTable>>>> =
            specs.iter().map(|_| Mutex::new(None)).collect();
        let load = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let (Some(spec), Some(slot)) = (specs.get(i), loaded.get(i)) else {
                return;
            };
            let path = self.path_of(spec);
            let started = Instant::now();
            match file::load(&path, spec, true) {
                // One to repack is left to `table`.
                Ok(table) if !self.repacks(&table) => {
                    events(PdbEvent::Loaded {
                        path: &path,
                        seconds: started.elapsed().as_secs_f64(),
                    });
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(table));
                }
                _ => {}
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..self.threads.min(specs.len()) {
                scope.spawn(load);
            }
            load();
        });
        loaded
            .into_iter()
            .map(|slot| slot.into_inner().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }

    /// The heuristic of `preset` for `goal`, building missing tables, with `SLOTS` term slots
    /// (more than the preset's table count: see [`Preset::tables`]).
    pub fn heuristic<const SLOTS: usize>(
        &self,
        preset: Preset,
        goal: &Board,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<AdditivePdb<SLOTS>, PdbError> {
        let specs = PdbStore::specs(preset, goal)?;
        let mut loaded = self.load_present(&specs, events);
        let tables = specs
            .iter()
            .zip(&mut loaded)
            .map(|(spec, table)| match table.take() {
                Some(table) => Ok(table),
                None => self.table(spec, events),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (_, sets) = preset.layout(goal);
        Ok(AdditivePdb::<SLOTS>::new(
            goal,
            tables,
            &sets,
            preset.reflects(),
        ))
    }
}
