//! Pattern tables on a worker: its data directory first, then the coordinator's copies
//! (streamed, zstd when offered, renamed into place once whole), else built here.

use tilesolve::connect::ConnectOptions;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::{PdbEvent, PdbStore, TablePages};
use tilesolve::proto::v1 as pb;
use tilesolve::Board;

use crate::{Metrics, WorkersClient};

/// Log lines for what the pattern database store did that took time.
pub(crate) fn log_table_event(event: PdbEvent<'_>) {
    match event {
        PdbEvent::Built { path, seconds } => {
            tracing::info!(file = %path.display(), seconds, "built pattern table")
        }
        PdbEvent::Packing { path, entries } => {
            tracing::info!(file = %path.display(), entries, "packing a pattern table an earlier version built (once)")
        }
        PdbEvent::Packed { path, seconds } => {
            tracing::info!(file = %path.display(), seconds, "packed a pattern table to half a byte an entry")
        }
        _ => {}
    }
}

/// Logs how much of the tables a worker holds is in 2 MiB pages, with what to do when under
/// half (`TablePages`).
pub(crate) fn log_table_pages(pages: TablePages) {
    let huge_page_share = pages.share();
    match pages.mostly_small() {
        true => tracing::info!(
            table_bytes = pages.table_bytes,
            huge_page_share,
            "{pages}: a lookup may also walk the page tables (searches ran 4-8% slower so on a \
             development machine); `tilesolve pdb verify` reads tables on ext4 or xfs into 2 \
             MiB pages while no process maps them (docs/DEPLOY.md)"
        ),
        false => tracing::info!(table_bytes = pages.table_bytes, huge_page_share, "{pages}"),
    }
}

/// Where a worker thread gets pattern tables: its data directory, the coordinator's copies,
/// and the budget that decides what `default` means.
#[derive(Clone, Copy)]
pub(crate) struct Tables<'a> {
    pub(crate) pdbs: &'a PdbStore,
    pub(crate) fetcher: &'a Fetcher,
    pub(crate) budget: u64,
    pub(crate) metrics: &'a Metrics,
}

/// Brings pattern database files this worker lacks from the coordinator, which has them (it
/// loads them to split iterations). A fetched file is used only if its checksum verifies when it
/// is loaded; otherwise, or if fetching fails, the worker builds the table itself.
#[derive(Clone)]
pub(crate) struct Fetcher {
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) coordinator: ConnectOptions,
}

impl Fetcher {
    /// Called on a worker thread (never inside the async runtime), so it may block on it.
    pub(crate) fn fetch_missing(&self, pdbs: &PdbStore, choice: HeuristicChoice, goal: &Board) {
        let Some(preset) = choice.preset() else {
            return;
        };
        let Ok(specs) = PdbStore::specs(preset, goal) else {
            return;
        };
        for spec in specs {
            let path = pdbs.path_of(&spec);
            if path.exists() {
                continue;
            }
            match self
                .handle
                .block_on(fetch(&self.coordinator, &spec.file_name(), &path))
            {
                Ok(fetched) => {
                    tracing::info!(
                        file = %path.display(),
                        bytes = fetched.bytes,
                        transferred = fetched.transferred,
                        compressed = fetched.compressed,
                        "pattern database fetched from the coordinator"
                    )
                }
                Err(reason) => {
                    tracing::warn!(file = %path.display(), %reason, "could not fetch the pattern database; building it here")
                }
            }
        }
    }
}

/// A table fetched: its size, and the bytes that crossed the network for it.
struct Fetched {
    bytes: u64,
    transferred: u64,
    compressed: bool,
}

/// Streams `name` from the coordinator into `path`, compressed if the coordinator can (through
/// a temporary file renamed at the end, so a broken transfer never leaves a half file under
/// the real name; the table's checksum is verified when it is loaded).
async fn fetch(
    coordinator: &ConnectOptions,
    name: &str,
    path: &std::path::Path,
) -> Result<Fetched, String> {
    let mut client = WorkersClient::new(coordinator.connect().await.map_err(|e| e.to_string())?);
    let mut stream = client
        .fetch_pdb(pb::FetchPdbRequest {
            file_name: name.to_string(),
            accept_zstd: true,
        })
        .await
        .map_err(|s| s.message().to_string())?
        .into_inner();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("creating the folder {}: {e}", dir.display()))?;
    }
    let partial = tilesolve::pdb::file::partial_path(path, "fetching");
    let received = receive(&mut stream, &partial).await;
    let moved = received.and_then(|fetched| {
        std::fs::rename(&partial, path)
            .map_err(|e| format!("renaming {} into place: {e}", partial.display()))?;
        Ok(fetched)
    });
    if moved.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    moved
}

/// Writes a fetched file's chunks to `partial` (decompressing a zstd stream on the way);
/// returns what was fetched once the file is whole and on disk.
async fn receive(
    stream: &mut tonic::Streaming<pb::PdbChunk>,
    partial: &std::path::Path,
) -> Result<Fetched, String> {
    use std::io::Write;
    let file = std::fs::File::create(partial)
        .map_err(|e| format!("creating {}: {e}", partial.display()))?;
    let mut out = TableWriter::Plain(file);
    let (mut received, mut total, mut compressed) = (0u64, 0u64, None);
    while let Some(chunk) = stream
        .message()
        .await
        .map_err(|s| format!("the coordinator's stream broke: {}", s.message()))?
    {
        if chunk.offset != received {
            return Err(format!(
                "chunk at offset {} after {received} bytes",
                chunk.offset
            ));
        }
        match compressed {
            None => {
                compressed = Some(chunk.zstd);
                if chunk.zstd {
                    out = out.decompressing().map_err(|e| e.to_string())?;
                }
            }
            Some(zstd) if zstd != chunk.zstd => {
                return Err("the stream changed its compression midway".into())
            }
            Some(_) => {}
        }
        out.write_all(&chunk.data)
            .map_err(|e| format!("writing {}: {e}", partial.display()))?;
        received += chunk.data.len() as u64;
        total = chunk.total_size;
    }
    if received != total {
        return Err(format!("received {received} of {total} bytes"));
    }
    let written = |e: std::io::Error| format!("writing {}: {e}", partial.display());
    let file = out.finish().map_err(written)?;
    file.sync_all().map_err(written)?;
    tilesolve::pdb::file::drop_cached_pages(&file);
    Ok(Fetched {
        bytes: file.metadata().map_err(|e| e.to_string())?.len(),
        transferred: received,
        compressed: compressed.unwrap_or(false),
    })
}

/// Where a fetched table's bytes go: straight to the file, or through a zstd decoder.
enum TableWriter {
    Plain(std::fs::File),
    Zstd(zstd::stream::write::Decoder<'static, std::fs::File>),
}

impl TableWriter {
    fn decompressing(self) -> std::io::Result<TableWriter> {
        match self {
            TableWriter::Plain(file) => {
                Ok(TableWriter::Zstd(zstd::stream::write::Decoder::new(file)?))
            }
            zstd => Ok(zstd),
        }
    }

    /// The file, with everything written to it.
    fn finish(self) -> std::io::Result<std::fs::File> {
        use std::io::Write;
        match self {
            TableWriter::Plain(file) => Ok(file),
            TableWriter::Zstd(mut decoder) => {
                decoder.flush()?;
                Ok(decoder.into_inner())
            }
        }
    }
}

impl std::io::Write for TableWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        match self {
            TableWriter::Plain(file) => file.write(data),
            TableWriter::Zstd(decoder) => decoder.write(data),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            TableWriter::Plain(file) => file.flush(),
            TableWriter::Zstd(decoder) => decoder.flush(),
        }
    }
}

/// The pattern database files in `dir` with the checksums their headers state.
pub(crate) fn held_pdbs(dir: &std::path::Path) -> Vec<pb::PdbFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|x| x == "pdb"))
        .filter_map(|path| {
            let header = tilesolve::pdb::file::inspect(&path, false).ok()?;
            let name = path.file_name()?.to_str()?.to_string();
            Some(pb::PdbFile {
                name,
                checksum: header.checksum,
            })
        })
        .collect()
}
