//! Items that ended cheaply, held in memory and written into their batch's parts a group at a
//! time ([`Store::put_item_later`]).
//!
//! An `items` entry per answer cost a coordinator more CPU than the search that found an easy
//! answer (sled splits a leaf every 16 keys and clones nodes as it goes): on 10,000 random
//! walks, writing each ended item took a fifth of the coordinator's time. Here a part of a
//! thousand items is rewritten once for all of its items that ended since the last write, and
//! at once when all of them are held: then it is made of them alone, not read back and decoded
//! first (items end in about the order they were taken in, so most parts are written so, once).
//! A batch seen with no `items` entry is remembered, so an answer costs no look there.
//!
//! Invariants:
//! - Reads see held items over both trees: [`Store::item`] looks here first, and
//!   [`Store::items_page`] overlays what it read with a copy taken before it read, and reads
//!   again if a write moved items from here into the parts meanwhile (the `written` count).
//! - An item with an `items` entry of its own is never held: that entry stands over its part,
//!   so a later end written into the part would be hidden. It is written there instead.
//! - Held items leave only as their part is written, under the same lock (those of a part
//!   whose write failed are held again), so an item is always in one of the two places a
//!   reader looks.
//! - Only answers whose loss costs less than their write are held: a crash forgets them and
//!   their boards are searched again (the scheduler holds back only cheap answers).
//! - A small batch taken in with its items in its record ([`Store::put_small_batch`]) has no
//!   part: its items, as they end, are kept here until the batch ends and its finished record
//!   takes them ([`Store::finish_batch`]), so that such a batch costs two records in the batch
//!   log and no write to sled (each rewrite of a part left sled a fragment it keeps in memory
//!   for good). An item of it that must be written now ([`Store::put_item`]) ends that: its
//!   kept items are held as any others from then on.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use rustc_hash::FxHashSet;

use super::batches::{StoredItem, ITEMS_PER_PART};
use super::format::{compact_len, decode, encode_compact, item_index, item_key};
use super::held::{part_first, HeldItems};
use super::{Store, StoreError};

/// Held items that start a write of them all: a bound on the memory they take (about 300
/// bytes each) and on how long one write holds readers off.
const WRITE_AT: usize = 4_000;

/// Items ended and not yet written, by (batch, index).
#[derive(Default)]
pub(super) struct EndedItems {
    /// A part all of whose items are held is written alone at once, so that items ending in
    /// order cost one write of each part.
    held: HeldItems,
    /// Batches seen to have no `items` entry, whose ended items need no look there.
    without_entries: FxHashSet<u64>,
    /// Ended items of the batches in `small`, never written on their own.
    kept: BTreeMap<(u64, u32), StoredItem>,
    /// Small batches whose record holds their items and whose ended items are kept.
    pub(super) small: FxHashSet<u64>,
    /// Writes of held items into parts so far (and moves of parts into their records).
    pub(super) written: u64,
}

impl Store {
    /// Records how an item ended, written into its part with others later (by [`Store::flush`]
    /// or once [`WRITE_AT`] are held). For answers cheap enough to search again: a crash before
    /// the write loses them.
    pub fn put_item_later(
        &self,
        batch: u64,
        index: u32,
        item: StoredItem,
    ) -> Result<(), StoreError> {
        let mut ended = self.lock_ended();
        if ended.small.contains(&batch) {
            ended.kept.insert((batch, index), item);
            return Ok(());
        }
        if self.has_own_entry(&mut ended, batch, index)? {
            self.items
                .insert(item_key(batch, index), encode_compact(&item))?;
            return Ok(());
        }
        if ended.held.insert(batch, index, item) == ITEMS_PER_PART {
            return self.write_whole_part(&mut ended, batch, part_first(index));
        }
        if ended.held.len() >= WRITE_AT {
            self.write_held(&mut ended)?;
        }
        Ok(())
    }

    /// Whether item `index` of `batch` has an `items` entry of its own (looked up only while
    /// its batch may have one: a batch seen with none is remembered until one is written).
    fn has_own_entry(
        &self,
        ended: &mut EndedItems,
        batch: u64,
        index: u32,
    ) -> Result<bool, StoreError> {
        if ended.without_entries.contains(&batch) {
            return Ok(false);
        }
        let mut entries = self
            .items
            .range(item_key(batch, 0)..=item_key(batch, u32::MAX));
        if entries.next().transpose()?.is_none() {
            ended.without_entries.insert(batch);
            return Ok(false);
        }
        Ok(self.items.contains_key(item_key(batch, index))?)
    }

    /// Records how an item ended, now.
    pub fn put_item(&self, batch: u64, index: u32, item: &StoredItem) -> Result<(), StoreError> {
        let mut ended = self.lock_ended();
        ended.without_entries.remove(&batch);
        self.items
            .insert(item_key(batch, index), encode_compact(item))?;
        ended.held.remove(batch, index);
        ended.kept.remove(&(batch, index));
        if ended.small.remove(&batch) {
            let kept = ended.take_kept(batch);
            ended.hold(batch, kept);
        }
        Ok(())
    }

    /// Writes every held item into its part.
    pub fn write_ended(&self) -> Result<(), StoreError> {
        self.write_held(&mut self.lock_ended())
    }

    /// The held items, under their lock. A poisoned lock is taken anyway: items leave the map
    /// only after their write, so what it holds is still to be written.
    pub(super) fn lock_ended(&self) -> std::sync::MutexGuard<'_, EndedItems> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets the held items of `batch` (being removed).
    pub(super) fn forget_ended(&self, batch: u64) {
        let mut ended = self.lock_ended();
        ended.held.forget(batch);
        ended.without_entries.remove(&batch);
        ended.take_kept(batch);
        ended.small.remove(&batch);
        ended.written += 1;
    }

    /// The held (or kept) item `index` of `batch`, if it is held.
    pub(super) fn held_item(&self, batch: u64, index: u32) -> Option<StoredItem> {
        let ended = self.lock_ended();
        let key = (batch, index);
        ended
            .kept
            .get(&key)
            .or_else(|| ended.held.get(batch, index))
            .cloned()
    }

    /// A copy of the held items of `batch` from index `start` on, and the count of writes so
    /// far (see [`Store::overlay_held`]).
    pub(super) fn held_from(&self, batch: u64, start: u32) -> (u64, BTreeMap<u32, StoredItem>) {
        let ended = self.lock_ended();
        let range = (batch, start)..=(batch, u32::MAX);
        let held = ended
            .held
            .from(batch, start)
            .chain(
                ended
                    .kept
                    .range(range)
                    .map(|(&(_, index), item)| (index, item)),
            )
            .map(|(index, item)| (index, item.clone()))
            .collect();
        (ended.written, held)
    }

    /// Lays `held` (taken by [`Store::held_from`] before `page` was read) over `page`; false
    /// when a write moved held items into the parts since, and the page must be read again.
    pub(super) fn overlay_held(
        &self,
        written: u64,
        mut held: BTreeMap<u32, StoredItem>,
        page: &mut [(u32, StoredItem)],
    ) -> bool {
        if self.lock_ended().written != written {
            return false;
        }
        for (index, item) in page.iter_mut() {
            if let Some(ended) = held.remove(index) {
                *item = ended;
            }
        }
        true
    }

    /// Writes the held items into their parts, a part once for all of its items (an item
    /// without a part, of a batch stored before parts, into `items`), then lets them go.
    pub(super) fn write_held(&self, ended: &mut EndedItems) -> Result<(), StoreError> {
        if ended.held.is_empty() {
            return Ok(());
        }
        self.write_range(ended, (0, 0)..=(u64::MAX, u32::MAX))
    }

    /// Writes the held items within `range` as [`Store::write_held`] does. Each item moves
    /// into its part; one whose part cannot be written goes back to the held items, so none
    /// is lost from both places.
    fn write_range(
        &self,
        ended: &mut EndedItems,
        range: RangeInclusive<(u64, u32)>,
    ) -> Result<(), StoreError> {
        let mut part: Option<Part> = None;
        let mut held = ended.held.take_range(range).into_iter();
        while let Some(((batch, index), item)) = held.next() {
            if !part.as_ref().is_some_and(|part| part.holds(batch, index)) {
                if let Some(done) = part.take() {
                    if let Err(error) = self.write_part(ended, done) {
                        ended.hold_again(std::iter::once(((batch, index), item)).chain(held));
                        return Err(error);
                    }
                }
                part = match self.part_holding(batch, index) {
                    Ok(found) => found,
                    Err(error) => {
                        ended.hold_again(std::iter::once(((batch, index), item)).chain(held));
                        return Err(error);
                    }
                };
            }
            match &mut part {
                Some(part) if part.holds(batch, index) => {
                    part.items[(index - part.first) as usize] = item;
                    part.moved.push(index);
                }
                _ => {
                    ended.without_entries.remove(&batch);
                    let written = self
                        .items
                        .insert(item_key(batch, index), encode_compact(&item));
                    if let Err(error) = written {
                        ended.hold_again(std::iter::once(((batch, index), item)).chain(held));
                        return Err(error.into());
                    }
                }
            }
        }
        if let Some(done) = part {
            self.write_part(ended, done)?;
        }
        ended.written += 1;
        Ok(())
    }

    /// Writes the part of `batch` from item `first`, all of whose items are held: made of them
    /// alone when the stored part holds exactly these items (its length is read from its first
    /// bytes), so the part is not read and decoded first.
    fn write_whole_part(
        &self,
        ended: &mut EndedItems,
        batch: u64,
        first: u32,
    ) -> Result<(), StoreError> {
        let whole = match self.item_parts.get(item_key(batch, first))? {
            Some(bytes) => compact_len(&bytes) == Some(ITEMS_PER_PART),
            None => false,
        };
        let taken = match whole {
            true => ended.held.take_whole(batch, first),
            false => None,
        };
        let Some(items) = taken else {
            let last = first + (ITEMS_PER_PART as u32 - 1);
            return self.write_range(ended, (batch, first)..=(batch, last));
        };
        let part = Part {
            batch,
            key: item_key(batch, first),
            first,
            items,
            moved: (first..first + ITEMS_PER_PART as u32).collect(),
        };
        self.write_part(ended, part)?;
        ended.written += 1;
        Ok(())
    }

    /// Writes `part` with the held items moved into it; if it cannot be written, they are held
    /// again.
    fn write_part(&self, ended: &mut EndedItems, part: Part) -> Result<(), StoreError> {
        match self
            .item_parts
            .insert(part.key.as_slice(), encode_compact(&part.items))
        {
            Ok(_) => Ok(()),
            Err(error) => {
                let (batch, first) = (part.batch, part.first);
                let mut items: Vec<Option<StoredItem>> = part.items.into_iter().map(Some).collect();
                ended.hold_again(part.moved.iter().filter_map(|&index| {
                    Some(((batch, index), items[(index - first) as usize].take()?))
                }));
                Err(error.into())
            }
        }
    }

    /// The part of `batch` that holds item `index`, if it has one.
    fn part_holding(&self, batch: u64, index: u32) -> Result<Option<Part>, StoreError> {
        let Some((key, bytes)) = self
            .item_parts
            .range(item_key(batch, 0)..=item_key(batch, index))
            .next_back()
            .transpose()?
        else {
            return Ok(None);
        };
        let part = Part {
            batch,
            key: key.to_vec(),
            first: item_index(&key),
            items: decode("item_parts", &bytes)?,
            moved: Vec::new(),
        };
        Ok(part.holds(batch, index).then_some(part))
    }
}

impl EndedItems {
    /// Holds `items` of `batch` to be written into their part as any others.
    pub(super) fn hold(&mut self, batch: u64, items: BTreeMap<u32, StoredItem>) {
        self.hold_again(
            items
                .into_iter()
                .map(|(index, item)| ((batch, index), item)),
        );
    }

    /// Holds items again (taken out for a write that failed, or kept for a small batch).
    fn hold_again(&mut self, items: impl IntoIterator<Item = ((u64, u32), StoredItem)>) {
        for ((batch, index), item) in items {
            self.held.insert(batch, index, item);
        }
    }

    /// Takes the kept items of `batch`, by index.
    pub(super) fn take_kept(&mut self, batch: u64) -> BTreeMap<u32, StoredItem> {
        let keys: Vec<(u64, u32)> = self
            .kept
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(&key, _)| key)
            .collect();
        keys.into_iter()
            .filter_map(|key| Some((key.1, self.kept.remove(&key)?)))
            .collect()
    }
}

/// A part read to be written again with ended items.
struct Part {
    batch: u64,
    key: Vec<u8>,
    first: u32,
    items: Vec<StoredItem>,
    /// The indices of the held items moved into `items`.
    moved: Vec<u32>,
}

impl Part {
    fn holds(&self, batch: u64, index: u32) -> bool {
        self.batch == batch && (self.first..self.first + self.items.len() as u32).contains(&index)
    }
}
