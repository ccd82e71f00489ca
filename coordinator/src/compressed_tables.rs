//! Compressed copies of the pattern database files the coordinator serves. A fresh worker
//! fetches a table as one zstd frame (the 15-puzzle's 7-8 tables: 577 MB as 192 MB), so one
//! coordinator's link feeds three times as many workers in the same time. Each copy is made
//! once, on the blocking pool, and kept in `<data>/compressed/` under the table's checksum: a
//! rebuilt (or repacked) table never meets an old copy, and workers verify what they decompress
//! anyway. Making a table's copy removes its copies under other checksums, which nothing asks
//! for again.

use std::path::{Path, PathBuf};

/// zstd level: on the 7-8 tables level 1 compresses as well as level 3 (3.1x) in half the time.
const LEVEL: i32 = 1;

pub struct CompressedTables {
    dir: PathBuf,
    /// One compression at a time: workers storming for the same table wait for one copy
    /// rather than each making its own.
    making: tokio::sync::Mutex<()>,
}

impl CompressedTables {
    pub fn new(data: &Path) -> CompressedTables {
        CompressedTables {
            dir: data.join("compressed"),
            making: tokio::sync::Mutex::new(()),
        }
    }

    /// The compressed copy of the table at `path` (file name `name`, whose header states
    /// `checksum`), made now if there is none yet.
    pub async fn copy_of(
        &self,
        path: &Path,
        name: &str,
        checksum: u64,
    ) -> std::io::Result<PathBuf> {
        let copy = self.dir.join(format!("{name}.{checksum:016x}.zst"));
        if tokio::fs::try_exists(&copy).await? {
            return Ok(copy);
        }
        let _making = self.making.lock().await;
        if tokio::fs::try_exists(&copy).await? {
            return Ok(copy);
        }
        let (source, target, dir) = (path.to_path_buf(), copy.clone(), self.dir.clone());
        let started = std::time::Instant::now();
        let bytes = tokio::task::spawn_blocking(move || compress(&source, &dir, &target))
            .await
            .map_err(std::io::Error::other)??;
        tracing::info!(
            file = name,
            bytes,
            seconds = started.elapsed().as_secs_f64(),
            "compressed copy of a pattern table made for workers"
        );
        self.remove_stale(name, &copy).await;
        Ok(copy)
    }

    /// Removes the copies of `name` other than `current` (a worker still reading one keeps its
    /// open file).
    async fn remove_stale(&self, name: &str, current: &Path) {
        let Ok(mut entries) = tokio::fs::read_dir(&self.dir).await else {
            return;
        };
        let prefix = format!("{name}.");
        while let Ok(Some(entry)) = entries.next_entry().await {
            let path = entry.path();
            let stale = entry.file_name().to_str().is_some_and(|file| {
                file.strip_prefix(&prefix)
                    .and_then(|rest| rest.strip_suffix(".zst"))
                    .is_some_and(|checksum| {
                        checksum.len() == 16 && checksum.bytes().all(|b| b.is_ascii_hexdigit())
                    })
            }) && path != current;
            if stale {
                match tokio::fs::remove_file(&path).await {
                    Ok(()) => {
                        tracing::info!(file = %path.display(), "stale compressed table copy removed")
                    }
                    Err(error) => {
                        tracing::warn!(file = %path.display(), %error, "could not remove a stale compressed table copy")
                    }
                }
            }
        }
    }
}

/// Writes `source` zstd-compressed to `target` (through a temporary file renamed at the end);
/// returns the compressed size.
fn compress(source: &Path, dir: &Path, target: &Path) -> std::io::Result<u64> {
    std::fs::create_dir_all(dir)?;
    let partial = tilesolve::pdb::file::partial_path(target, "compressing");
    let written = (|| {
        let mut input = std::fs::File::open(source)?;
        let mut encoder =
            zstd::stream::write::Encoder::new(std::fs::File::create(&partial)?, LEVEL)?;
        std::io::copy(&mut input, &mut encoder)?;
        let output = encoder.finish()?;
        output.sync_all()?;
        let bytes = output.metadata()?.len();
        std::fs::rename(&partial, target)?;
        Ok(bytes)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table's copy under a new checksum (the table was rebuilt or repacked) replaces its copy
    /// under the old one; other tables' copies stay.
    #[test]
    fn a_new_copy_removes_the_tables_older_copies() {
        let data = tempfile::tempdir().unwrap();
        let (table, other) = ("4x4-blank-last-1.2.3.pdb", "4x4-blank-last-1.2.3.4.pdb");
        for name in [table, other] {
            std::fs::write(data.path().join(name), vec![7u8; 4096]).unwrap();
        }
        let copies = CompressedTables::new(data.path());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let copy = |name: &str, checksum: u64| {
            runtime
                .block_on(copies.copy_of(&data.path().join(name), name, checksum))
                .unwrap()
        };
        let old = copy(table, 1);
        let kept = copy(other, 1);
        let new = copy(table, 2);
        assert!(!old.exists() && new.exists() && kept.exists());
        let mut left: Vec<_> = std::fs::read_dir(data.path().join("compressed"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                format!("{other}.0000000000000001.zst"),
                format!("{table}.0000000000000002.zst")
            ]
        );
    }
}
