//! Pattern table files between the coordinator and its workers: streamed to a worker that
//! fetches one, received from a worker asked to upload one (checked before it takes the
//! table's name).

use std::pin::Pin;

use tilesolve::proto::v1 as pb;
use tokio_stream::Stream;
use tonic::{Response, Status};

use super::Service;

pub(super) type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::PdbChunk, Status>> + Send>>;

/// Size of the pieces a pattern database file is streamed in.
const CHUNK_BYTES: usize = 1 << 20;

impl Service {
    /// A table file streamed to a worker (`FetchPdb`): only a regular pattern database file of
    /// the coordinator's table folder, compressed when the worker accepts zstd.
    pub(super) async fn send_table(
        &self,
        request: pb::FetchPdbRequest,
    ) -> Result<Response<ChunkStream>, Status> {
        let name = request.file_name;
        if !tilesolve::pdb::file::is_file_name(&name) {
            return Err(Status::invalid_argument(format!(
                "'{}' is not a pattern database file name",
                tilesolve::excerpt::excerpt(&name)
            )));
        }
        let path = self.pdbs.dir().join(&name);
        // Only a regular file (not a link, a FIFO or a device: those could serve any file of the
        // host, stream without end or block) whose header is a pattern database's.
        let not_served = |reason: String| Status::not_found(format!("{name}: {reason}"));
        let metadata = tokio::fs::symlink_metadata(&path)
            .await
            .map_err(|e| not_served(e.to_string()))?;
        if !metadata.is_file() {
            return Err(not_served("not a regular file".into()));
        }
        let header_path = path.clone();
        let header =
            tokio::task::spawn_blocking(move || tilesolve::pdb::file::inspect(&header_path, false))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| not_served(format!("not a pattern database table ({e})")))?;
        let compressed = match request.accept_zstd {
            true => match self.compressed.copy_of(&path, &name, header.checksum).await {
                Ok(copy) => Some(copy),
                Err(error) => {
                    tracing::warn!(file = %name, %error, "no compressed copy: sending the table as it is");
                    None
                }
            },
            false => None,
        };
        let zstd = compressed.is_some();
        let sent = compressed.unwrap_or(path);
        let file = tokio::fs::File::open(&sent)
            .await
            .map_err(|e| not_served(e.to_string()))?;
        let total_size = file
            .metadata()
            .await
            .map_err(|e| not_served(e.to_string()))?
            .len();
        Ok(Response::new(stream_file(file, total_size, zstd)))
    }

    /// A table a worker sends because the coordinator asked for it (`UploadPdb`).
    pub(super) async fn take_upload(
        &self,
        mut stream: tonic::Streaming<pb::PdbUpload>,
    ) -> Result<Response<pb::UploadPdbResponse>, Status> {
        let first = stream
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("an upload needs at least one message"))?;
        self.read(|s| s.check_worker(first.worker_id, &first.worker_secret))?;
        let (worker, name) = (first.worker_id, first.file_name.clone());
        let shown = tilesolve::excerpt::excerpt(&name);
        let Some((spec, checksum)) = self.supply.start_upload(worker, &name) else {
            return Err(Status::failed_precondition(format!(
                "{shown}: this coordinator did not ask worker {worker} for it, or it is already \
                 being sent"
            )));
        };
        let outcome = self.receive_pdb(first, &mut stream, &spec, checksum).await;
        let reply = outcome
            .as_ref()
            .map(|_| ())
            .map_err(|reason| Status::invalid_argument(format!("{shown}: {reason}")));
        self.supply.fetched(worker, &name, outcome);
        reply.map(|()| Response::new(pb::UploadPdbResponse {}))
    }

    /// Writes an uploaded table beside its final name, checks it (the size its spec implies, its
    /// own checksum, the checksum the worker stated when registering) and only then renames it
    /// into place: nothing unchecked is ever under a table's name. Returns the bytes received.
    async fn receive_pdb(
        &self,
        first: pb::PdbUpload,
        stream: &mut tonic::Streaming<pb::PdbUpload>,
        spec: &tilesolve::pdb::file::PatternSpec,
        stated_checksum: u64,
    ) -> Result<u64, String> {
        use tokio::io::AsyncWriteExt;
        // A byte or half a byte per entry: which is the worker's table's to say (its header is
        // checked against its size before the rename).
        let expected_size = [false, true]
            .map(|packed| tilesolve::pdb::file::HEADER_LEN as u64 + spec.entry_bytes(packed))
            .into_iter()
            .find(|&size| size == first.total_size)
            .unwrap_or(tilesolve::pdb::file::HEADER_LEN as u64 + spec.entries());
        let (worker, name) = (first.worker_id, first.file_name.clone());
        let path = self.pdbs.dir().join(&name);
        let partial = tilesolve::pdb::file::partial_path(&path, "receiving");
        tokio::fs::create_dir_all(self.pdbs.dir())
            .await
            .map_err(|e| e.to_string())?;
        let mut file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| e.to_string())?;
        let mut written = 0u64;
        let mut next = Some(first);
        let received = async {
            while let Some(chunk) = next.take() {
                if chunk.total_size != expected_size {
                    return Err(format!(
                        "{} bytes announced, but the table is {expected_size}",
                        chunk.total_size
                    ));
                }
                if chunk.offset != written || written + chunk.data.len() as u64 > expected_size {
                    return Err(format!(
                        "{} bytes at offset {} after {written} bytes",
                        chunk.data.len(),
                        chunk.offset
                    ));
                }
                file.write_all(&chunk.data)
                    .await
                    .map_err(|e| e.to_string())?;
                written += chunk.data.len() as u64;
                self.supply.received(worker, &name, written, expected_size);
                next = stream.message().await.map_err(|s| s.message().to_string())?;
            }
            if written != expected_size {
                return Err(format!("received {written} of {expected_size} bytes"));
            }
            file.sync_all().await.map_err(|e| e.to_string())?;
            tilesolve::pdb::file::drop_cached_pages(&file);
            let (check_path, spec) = (partial.clone(), spec.clone());
            let table = tokio::task::spawn_blocking(move || {
                tilesolve::pdb::file::load(&check_path, &spec, true)
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
            if table.checksum != stated_checksum {
                return Err(format!(
                    "checksum {:016x}, but the worker stated {stated_checksum:016x} when registering",
                    table.checksum
                ));
            }
            drop(table);
            tokio::fs::rename(&partial, &path)
                .await
                .map_err(|e| e.to_string())?;
            Ok(written)
        }
        .await;
        if received.is_err() {
            let _ = tokio::fs::remove_file(&partial).await;
        }
        received
    }
}

/// Streams `file` (`total_size` bytes; a compressed copy when `zstd`) in [`CHUNK_BYTES`] pieces.
fn stream_file(file: tokio::fs::File, total_size: u64, zstd: bool) -> ChunkStream {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut file = file;
        let mut offset = 0u64;
        loop {
            let mut data = vec![0u8; CHUNK_BYTES];
            let read = match file.read(&mut data).await {
                Ok(0) => return,
                Ok(read) => read,
                Err(e) => {
                    let _ = sender.send(Err(Status::internal(e.to_string()))).await;
                    return;
                }
            };
            data.truncate(read);
            // Never past the size the stream announced (a file swapped in meanwhile).
            if offset + read as u64 > total_size {
                let _ = sender
                    .send(Err(Status::aborted("the file changed while it was sent")))
                    .await;
                return;
            }
            let chunk = pb::PdbChunk {
                offset,
                data,
                total_size,
                zstd,
            };
            if sender.send(Ok(chunk)).await.is_err() {
                return;
            }
            offset += read as u64;
        }
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(receiver))
}
