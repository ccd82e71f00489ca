//! Batch records in id order, read from the batch log a page at a time (each page under the
//! log's lock for its own duration only, so an iteration over every batch never holds writers
//! off for long).

use super::{Store, StoreError};

/// Records read per page.
const PAGE: usize = 256;

/// Batch records after a given id, ascending or descending.
pub(super) struct Records<'a> {
    store: &'a Store,
    after: Option<u64>,
    newest_first: bool,
    page: std::vec::IntoIter<(u64, Vec<u8>)>,
    done: bool,
}

impl Iterator for Records<'_> {
    type Item = Result<Vec<u8>, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((id, value)) = self.page.next() {
                self.after = Some(id);
                return Some(Ok(value));
            }
            if self.done {
                return None;
            }
            match self
                .store
                .batch_log
                .page(self.after, PAGE, self.newest_first)
            {
                Ok(page) => {
                    self.done = page.len() < PAGE;
                    self.page = page.into_iter();
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error.into()));
                }
            }
        }
    }
}

impl Store {
    /// Every batch record after the batch `after` (exclusive) in id order, or before it when
    /// `newest_first`.
    pub(super) fn records(&self, after: Option<u64>, newest_first: bool) -> Records<'_> {
        Records {
            store: self,
            after,
            newest_first,
            page: Vec::new().into_iter(),
            done: false,
        }
    }

    /// Batch `id`'s record.
    pub(super) fn record(&self, id: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.batch_log.get(id)?)
    }
}
