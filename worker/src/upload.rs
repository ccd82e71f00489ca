//! Sends pattern database files to the coordinator when it asks (`send_pdbs` in a Poll or
//! Heartbeat response): a coordinator that lacks a table gets it from a worker that holds it
//! rather than building it. Each file goes at most once at a time, on its own task, so polls
//! and heartbeats go on meanwhile.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tilesolve::proto::v1 as pb;

use crate::WorkersClient;

/// Bytes per upload message (well inside gRPC's default 4 MiB message limit).
const CHUNK_BYTES: usize = 1 << 20;

/// Starts uploads of the files the coordinator asked for.
#[derive(Clone)]
pub(crate) struct Uploader {
    client: WorkersClient,
    worker_id: u64,
    worker_secret: String,
    dir: PathBuf,
    /// Files being sent now.
    sending: Arc<Mutex<HashSet<String>>>,
}

impl Uploader {
    pub(crate) fn new(
        client: WorkersClient,
        worker_id: u64,
        worker_secret: String,
        dir: PathBuf,
    ) -> Uploader {
        Uploader {
            client,
            worker_id,
            worker_secret,
            dir,
            sending: Arc::default(),
        }
    }

    /// Starts sending each named file not already on its way.
    pub(crate) fn send(&self, names: Vec<String>) {
        for name in names {
            // Only a plain file name in the data directory: the coordinator names a file the
            // worker said it holds, and nothing else of this host may be sent.
            if !tilesolve::pdb::file::is_file_name(&name) {
                tracing::warn!(file = %name, "coordinator asked for a file that is not a pattern table");
                continue;
            }
            if !self
                .sending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(name.clone())
            {
                continue;
            }
            let uploader = self.clone();
            tokio::spawn(async move {
                match uploader.upload(&name).await {
                    Ok(bytes) => {
                        tracing::info!(file = %name, bytes, "pattern table sent to the coordinator")
                    }
                    Err(reason) => {
                        tracing::warn!(file = %name, %reason, "could not send the pattern table")
                    }
                }
                uploader
                    .sending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&name);
            });
        }
    }

    async fn upload(&self, name: &str) -> Result<u64, String> {
        let path = self.dir.join(name);
        let (file, total_size) = open_regular(&path).await?;
        let (sender, receiver) = tokio::sync::mpsc::channel(4);
        let (worker_id, worker_secret, file_name) =
            (self.worker_id, self.worker_secret.clone(), name.to_string());
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut file = file;
            let mut offset = 0u64;
            while offset < total_size {
                let mut data = vec![0u8; CHUNK_BYTES];
                let read = match file.read(&mut data).await {
                    Ok(0) => return Err("the file ended early".to_string()),
                    Ok(read) => read,
                    Err(e) => return Err(e.to_string()),
                };
                data.truncate(read);
                let first = offset == 0;
                let message = pb::PdbUpload {
                    worker_id,
                    worker_secret: if first {
                        worker_secret.clone()
                    } else {
                        String::new()
                    },
                    file_name: if first {
                        file_name.clone()
                    } else {
                        String::new()
                    },
                    offset,
                    data,
                    total_size,
                };
                if sender.send(message).await.is_err() {
                    return Ok(offset);
                }
                offset += read as u64;
            }
            Ok(offset)
        });
        let sent = self
            .client
            .clone()
            .upload_pdb(tokio_stream::wrappers::ReceiverStream::new(receiver))
            .await;
        let read = reader.await.map_err(|e| e.to_string())??;
        sent.map_err(|status| status.message().to_string())?;
        Ok(read)
    }
}

/// Opens `path` if it is a regular file (not a link or device), with its size.
async fn open_regular(path: &Path) -> Result<(tokio::fs::File, u64), String> {
    let metadata = tokio::fs::symlink_metadata(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !metadata.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((file, metadata.len()))
}
