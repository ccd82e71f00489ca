//! Batch records read over both trees that hold them: `finished` (batches that ended) over
//! `batches` (every batch as taken in; the only record of those not ended, and of those that
//! ended before `finished` existed), in id order.

use sled::IVec;

use super::format::batch_key;
use super::{Store, StoreError};

type Entries = Box<dyn Iterator<Item = sled::Result<(IVec, IVec)>>>;

/// Two trees' entries merged by key, ascending or descending. A key in both (every batch that
/// ended) is read once, from `finished`. Nothing leaves `batches` but a removed batch, so an
/// iteration meets every batch while others end.
pub(super) struct Records {
    finished: std::iter::Peekable<Entries>,
    batches: std::iter::Peekable<Entries>,
    newest_first: bool,
}

impl Iterator for Records {
    type Item = Result<IVec, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let key = |entry: Option<&sled::Result<(IVec, IVec)>>| match entry {
            Some(Ok((key, _))) => Some(Some(key.clone())),
            Some(Err(_)) => Some(None),
            None => None,
        };
        let from_finished = match (key(self.finished.peek()), key(self.batches.peek())) {
            (None, None) => return None,
            // An error is passed on as soon as it is met.
            (Some(None), _) => true,
            (_, Some(None)) => false,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(Some(finished)), Some(Some(batches))) => {
                if finished == batches {
                    self.batches.next();
                    true
                } else {
                    (finished < batches) != self.newest_first
                }
            }
        };
        let entry = match from_finished {
            true => self.finished.next(),
            false => self.batches.next(),
        }?;
        Some(entry.map(|(_, value)| value).map_err(StoreError::from))
    }
}

impl Store {
    /// Every batch record after the batch `after` (exclusive) in id order, or before it when
    /// `newest_first`.
    pub(super) fn records(&self, after: Option<u64>, newest_first: bool) -> Records {
        let range = |tree: &sled::Tree| -> Entries {
            let range = match (after, newest_first) {
                (None, _) => tree.range::<Vec<u8>, _>(..),
                (Some(id), false) => tree.range(batch_key(id.saturating_add(1))..),
                (Some(id), true) => tree.range(..batch_key(id)),
            };
            match newest_first {
                true => Box::new(range.rev()),
                false => Box::new(range),
            }
        };
        Records {
            finished: range(&self.finished).peekable(),
            batches: range(&self.batches).peekable(),
            newest_first,
        }
    }

    /// The tree holding `id`'s record, and the record's value: `finished` first.
    pub(super) fn record(&self, id: u64) -> Result<Option<(&sled::Tree, IVec)>, StoreError> {
        for tree in [&self.finished, &self.batches] {
            if let Some(bytes) = tree.get(batch_key(id))? {
                return Ok(Some((tree, bytes)));
            }
        }
        Ok(None)
    }
}
