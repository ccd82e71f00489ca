//! Ended items held in memory until their part is written ([`super::ended`]), grouped by the
//! part each falls in when a batch's parts are [`ITEMS_PER_PART`] items from a multiple of it
//! (how intake writes them; a part found otherwise is still written right, by `ended`).
//!
//! Holding an item is the hot path (every cheap answer): it is appended to its part's list, in
//! the order items end, so that it costs no search of a tree of every held item. Lookups by
//! index go through the short list of one part; they serve readers and the rare item that is
//! written on its own.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use super::batches::{StoredItem, ITEMS_PER_PART};

/// Held items of one part past which its list is sized for the whole part (a small batch's
/// part keeps a list its own size).
const FEW_HELD: usize = 64;

/// The held items of each part, by (batch, first index of the part).
#[derive(Default)]
pub(super) struct HeldItems {
    parts: BTreeMap<(u64, u32), HeldPart>,
    len: usize,
}

/// One part's held items, in the order they ended, and which of its indices they are (so that
/// holding one more asks no search of the list).
#[derive(Default)]
struct HeldPart {
    items: Vec<(u32, StoredItem)>,
    present: [u64; ITEMS_PER_PART.div_ceil(64)],
}

impl HeldPart {
    /// The word and bit of `index` in `present`.
    fn bit(index: u32) -> (usize, u64) {
        let offset = (index - part_first(index)) as usize;
        (offset / 64, 1 << (offset % 64))
    }

    fn position(&self, index: u32) -> Option<usize> {
        let (word, bit) = HeldPart::bit(index);
        match self.present[word] & bit != 0 {
            true => self.items.iter().position(|(held, _)| *held == index),
            false => None,
        }
    }
}

/// The first index of the part that holds item `index` when a batch's parts are
/// [`ITEMS_PER_PART`] items each.
pub(super) fn part_first(index: u32) -> u32 {
    index - index % ITEMS_PER_PART as u32
}

impl HeldItems {
    /// Items held in all.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Holds `item` as item `index` of `batch` (over one held there already); returns how many
    /// items of its part are held now.
    pub(super) fn insert(&mut self, batch: u64, index: u32, item: StoredItem) -> usize {
        let part = self.parts.entry((batch, part_first(index))).or_default();
        match part.position(index) {
            Some(at) => part.items[at].1 = item,
            None => {
                let (word, bit) = HeldPart::bit(index);
                part.present[word] |= bit;
                if part.items.len() == FEW_HELD {
                    // A part this far along is most likely a whole one of a large batch: sized
                    // for all its items at once, not doubled four more times (each doubling
                    // moved every held item and took fresh pages).
                    part.items.reserve_exact(ITEMS_PER_PART - FEW_HELD);
                }
                part.items.push((index, item));
                self.len += 1;
            }
        }
        part.items.len()
    }

    pub(super) fn get(&self, batch: u64, index: u32) -> Option<&StoredItem> {
        let part = self.parts.get(&(batch, part_first(index)))?;
        part.position(index).map(|at| &part.items[at].1)
    }

    /// Takes item `index` of `batch` out, if it is held.
    pub(super) fn remove(&mut self, batch: u64, index: u32) -> Option<StoredItem> {
        let key = (batch, part_first(index));
        let part = self.parts.get_mut(&key)?;
        let at = part.position(index)?;
        let (_, item) = part.items.swap_remove(at);
        let (word, bit) = HeldPart::bit(index);
        part.present[word] &= !bit;
        if part.items.is_empty() {
            self.parts.remove(&key);
        }
        self.len -= 1;
        Some(item)
    }

    /// Takes out every held item of the part of `batch` from `first` when all
    /// [`ITEMS_PER_PART`] of them are held, in order of index; `None` (taking nothing) when not.
    pub(super) fn take_whole(&mut self, batch: u64, first: u32) -> Option<Vec<StoredItem>> {
        let key = (batch, first);
        if self.parts.get(&key)?.items.len() != ITEMS_PER_PART {
            return None;
        }
        let items = self.take_part(key);
        Some(items.into_iter().map(|(_, item)| item).collect())
    }

    /// Takes out every held item within `range`, by (batch, index) in order.
    pub(super) fn take_range(
        &mut self,
        range: RangeInclusive<(u64, u32)>,
    ) -> Vec<((u64, u32), StoredItem)> {
        let (&(low_batch, low), &(high_batch, high)) = (range.start(), range.end());
        let keys: Vec<(u64, u32)> = self
            .parts
            .range((low_batch, part_first(low))..=(high_batch, high))
            .map(|(&key, _)| key)
            .collect();
        let mut taken = Vec::new();
        for key in keys {
            for (index, item) in self.take_part(key) {
                match range.contains(&(key.0, index)) {
                    true => taken.push(((key.0, index), item)),
                    false => {
                        self.insert(key.0, index, item);
                    }
                }
            }
        }
        taken
    }

    /// Takes out the held items of one part, in order of index.
    fn take_part(&mut self, key: (u64, u32)) -> Vec<(u32, StoredItem)> {
        let Some(part) = self.parts.remove(&key) else {
            return Vec::new();
        };
        let mut items = part.items;
        self.len -= items.len();
        items.sort_unstable_by_key(|(index, _)| *index);
        items
    }

    /// The held items of `batch` from index `start` on.
    pub(super) fn from(&self, batch: u64, start: u32) -> impl Iterator<Item = (u32, &StoredItem)> {
        self.parts
            .range((batch, part_first(start))..=(batch, u32::MAX))
            .flat_map(|(_, part)| part.items.iter().map(|(index, item)| (*index, item)))
            .filter(move |(index, _)| *index >= start)
    }

    /// Forgets the held items of `batch`.
    pub(super) fn forget(&mut self, batch: u64) {
        let keys: Vec<(u64, u32)> = self
            .parts
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(&key, _)| key)
            .collect();
        for key in keys {
            self.take_part(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ItemStatus;

    fn item(n: u32) -> StoredItem {
        StoredItem {
            text: format!("line {n}"),
            line: Some(n),
            board: None,
            goal: None,
            status: ItemStatus::Failed(format!("reason {n}")),
            claimed: None,
        }
    }

    /// Items held in any order read back by index and in order, a whole part comes out sorted
    /// and only when whole, and a batch forgotten leaves the others.
    #[test]
    fn held_items_read_back_in_order_and_leave_a_part_only_when_it_is_whole() {
        let mut held = HeldItems::default();
        let size = ITEMS_PER_PART as u32;
        for index in (0..size - 1).rev() {
            held.insert(7, index, item(index));
        }
        assert_eq!(held.insert(7, size + 3, item(size + 3)), 1);
        assert_eq!(held.insert(7, size + 3, item(size + 3)), 1, "held again");
        held.insert(8, 0, item(0));
        assert_eq!(held.len(), ITEMS_PER_PART + 1);
        assert_eq!(held.get(7, 5), Some(&item(5)));
        assert_eq!(held.take_whole(7, 0), None, "one item short");
        assert_eq!(held.insert(7, size - 1, item(size - 1)), ITEMS_PER_PART);
        let from: Vec<u32> = held.from(7, size - 2).map(|(index, _)| index).collect();
        assert_eq!(from, [size - 2, size - 1, size + 3]);
        let whole = held.take_whole(7, 0).expect("whole");
        assert_eq!(whole, (0..size).map(item).collect::<Vec<_>>());
        held.insert(7, size + 1, item(size + 1));
        assert_eq!(held.remove(7, size + 3), Some(item(size + 3)));
        assert_eq!(held.remove(7, size + 3), None);
        held.insert(7, size + 3, item(size + 3));
        let taken: Vec<(u64, u32)> = held
            .take_range((7, size + 2)..=(8, 0))
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        assert_eq!(taken, [(7, size + 3), (8, 0)]);
        assert_eq!(
            held.get(7, size + 1),
            Some(&item(size + 1)),
            "left out of the range"
        );
        held.forget(7);
        assert!(held.is_empty());
    }
}
