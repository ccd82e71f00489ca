//! How the store lays out keys and values: the key layouts, compact and JSON values, and the
//! flush guard beside the store directory (see the layout in the parent module).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tilesolve::Board;

use super::StoreError;

pub(super) const KEY_VERSION: u8 = 1;

/// What a store's flushes made durable, counted in `meta` and in a file beside it.
pub(super) struct FlushGuard {
    pub(super) path: PathBuf,
    pub(super) next: AtomicU64,
    /// The highest count written to the file (files are written in increasing order).
    pub(super) written: Mutex<u64>,
}

impl FlushGuard {
    pub(super) fn path_for(dir: &Path) -> PathBuf {
        let mut name = dir.file_name().unwrap_or_default().to_os_string();
        name.push(".flushed");
        dir.with_file_name(name)
    }

    /// The count the file holds (0 without a file: a new store, or one from before it).
    pub(super) fn read(path: &Path) -> u64 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Records that flush `count` finished. Not synced: after a power cut the file may say
    /// less than the store holds, never more.
    pub(super) fn record(&self, count: u64) -> std::io::Result<()> {
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if count <= *written {
            return Ok(());
        }
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".new");
        std::fs::write(&temporary, count.to_string())?;
        std::fs::rename(&temporary, &self.path)?;
        *written = count;
        Ok(())
    }
}

/// `[version, width, goal tiles, board tiles]`. The width and the count of cells fix the shape,
/// so every shape has keys of its own and a square's keys are what they were before rectangles.
pub(super) fn board_key(goal: &Board, board: &Board) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + 2 * goal.cells());
    key.push(KEY_VERSION);
    key.push(goal.shape().cols() as u8);
    key.extend_from_slice(goal.tiles());
    key.extend_from_slice(board.tiles());
    key
}

pub(super) fn meta_key(name: &str) -> Vec<u8> {
    let mut key = vec![KEY_VERSION];
    key.extend_from_slice(name.as_bytes());
    key
}

pub(super) fn batch_key(id: u64) -> Vec<u8> {
    let mut key = vec![KEY_VERSION];
    key.extend_from_slice(&id.to_be_bytes());
    key
}

pub(super) fn item_key(batch: u64, index: u32) -> Vec<u8> {
    let mut key = batch_key(batch);
    key.extend_from_slice(&index.to_be_bytes());
    key
}

/// `tree`'s values of `batch` from key `from` on, each with the item index ending its key.
pub(super) fn batch_entries<'a, T: for<'de> Deserialize<'de>>(
    tree: &'a sled::Tree,
    name: &'static str,
    batch: u64,
    from: Vec<u8>,
) -> impl Iterator<Item = Result<(u32, T), StoreError>> + 'a {
    let prefix = batch_key(batch);
    tree.range(from..)
        .take_while(move |entry| {
            entry
                .as_ref()
                .map_or(true, |(key, _)| key.starts_with(&prefix))
        })
        .map(move |entry| {
            let (key, bytes) = entry?;
            Ok((item_index(&key), decode(name, &bytes)?))
        })
}

/// The item index that ends an `items` or `item_parts` key.
pub(super) fn item_index(key: &[u8]) -> u32 {
    key.get(key.len().saturating_sub(4)..)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// The first byte of a compact value.
pub(super) const COMPACT: u8 = 0;

pub(super) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A value of the `solutions` or `items` tree (see the module's notes).
pub(super) fn encode_compact<T: Serialize>(value: &T) -> Vec<u8> {
    // Sized before it is written: a part of a thousand items grown as it filled took fresh
    // pages from the system at every doubling (a sixth of a coordinator's time on easy boards).
    let mut bytes =
        Vec::with_capacity(1 + postcard::experimental::serialized_size(value).unwrap_or(0));
    bytes.push(COMPACT);
    postcard::to_extend(value, bytes).unwrap_or_default()
}

/// The length of a sequence written by [`encode_compact`], read from its first bytes alone;
/// `None` for a value in another form.
pub(super) fn compact_len(bytes: &[u8]) -> Option<usize> {
    match bytes.split_first() {
        Some((&COMPACT, compact)) => postcard::take_from_bytes::<usize>(compact)
            .ok()
            .map(|(len, _)| len),
        _ => None,
    }
}

/// Reads a value in either form.
pub(super) fn decode<T: for<'de> Deserialize<'de>>(
    tree: &'static str,
    bytes: &[u8],
) -> Result<T, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { tree, reason };
    match bytes.split_first() {
        Some((&COMPACT, compact)) => {
            postcard::from_bytes(compact).map_err(|e| corrupt(e.to_string()))
        }
        _ => serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string())),
    }
}

/// Removes the records of `tree` for which `condition` holds; returns how many.
pub(super) fn remove_where<T: serde::de::DeserializeOwned>(
    tree: &sled::Tree,
    name: &'static str,
    condition: impl Fn(T) -> bool,
) -> Result<usize, StoreError> {
    let mut batch = sled::Batch::default();
    let mut removed = 0;
    for entry in tree.iter() {
        let (key, value) = entry?;
        if condition(decode(name, &value)?) {
            batch.remove(key);
            removed += 1;
        }
    }
    tree.apply_batch(batch)?;
    Ok(removed)
}

/// A list of bytes written as one run of bytes (`#[serde(with = "format::byte_run")]`), where a
/// plain `Vec<u8>` is written and read one element at a time: an answer's moved tiles are
/// written for every answer and every ended item, and element by element they were most of
/// that. Both forms are the same bytes in a compact value (a length, then one byte each) and the
/// same array of numbers in JSON, so values written either way read either way.
pub(super) mod byte_run {
    use std::fmt;

    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub(in crate::store) fn serialize<S: Serializer>(
        bytes: &[u8],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytes)
    }

    pub(in crate::store) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        deserializer.deserialize_bytes(ByteRun)
    }

    struct ByteRun;

    impl<'de> Visitor<'de> for ByteRun {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of bytes")
        }

        fn visit_bytes<E>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
            Ok(bytes.to_vec())
        }

        fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(bytes)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(byte) = seq.next_element()? {
                bytes.push(byte);
            }
            Ok(bytes)
        }
    }
}
