//! Compressed copies of the pattern database files the coordinator serves. A fresh worker
//! fetches a table as one zstd frame (the 15-puzzle's 7-8 tables: 577 MB as 192 MB), so one
//! coordinator's link feeds three times as many workers in the same time. Each copy is made
//! once, on the blocking pool, and kept in `<data>/compressed/` under the table's checksum: a
//! rebuilt table never meets an old copy, and workers verify what they decompress anyway.

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
        Ok(copy)
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
