//! The nodes each owner's batches searched today (UTC), kept in `meta` so that a restart does
//! not hand an owner a fresh day's allowance.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::format::meta_key;
use super::{Store, StoreError};
use crate::owners::OwnerName;

const MS_PER_DAY: u64 = 86_400_000;

/// Nodes searched per owner on one day (days since 1970, UTC).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OwnerNodes {
    pub day: u64,
    pub nodes: BTreeMap<OwnerName, u64>,
}

impl OwnerNodes {
    /// The day (since 1970, UTC) `unix_ms` falls on.
    pub fn day_of(unix_ms: u64) -> u64 {
        unix_ms / MS_PER_DAY
    }

    /// Today (since 1970, UTC).
    pub fn today() -> u64 {
        OwnerNodes::day_of(OwnerNodes::now_unix_ms())
    }

    /// Now, in ms since 1970.
    pub fn now_unix_ms() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    /// Counts `nodes` for `owner` on `day`; a new day starts every count at 0.
    pub fn add(&mut self, owner: &OwnerName, nodes: u64, day: u64) {
        if day != self.day {
            *self = OwnerNodes {
                day,
                nodes: BTreeMap::new(),
            };
        }
        let total = self.nodes.entry(owner.clone()).or_insert(0);
        *total = total.saturating_add(nodes);
    }

    /// `owner`'s nodes on `day`.
    pub fn on(&self, owner: &OwnerName, day: u64) -> u64 {
        match day == self.day {
            true => self.nodes.get(owner).copied().unwrap_or(0),
            false => 0,
        }
    }
}

impl Store {
    /// Keeps `nodes` (written on each history sample).
    pub fn put_owner_nodes(&self, nodes: &OwnerNodes) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(nodes).map_err(|e| StoreError::Corrupt {
            tree: "meta",
            reason: e.to_string(),
        })?;
        self.meta.insert(meta_key("owner_nodes"), bytes)?;
        Ok(())
    }

    /// The owners' nodes last kept, if any.
    pub fn owner_nodes(&self) -> Result<Option<OwnerNodes>, StoreError> {
        self.meta
            .get(meta_key("owner_nodes"))?
            .map(|bytes| {
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                    tree: "meta",
                    reason: format!("owner_nodes: {e}"),
                })
            })
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_day_starts_every_owner_at_zero_and_a_reopened_store_keeps_the_day() {
        let alice = OwnerName::try_from("alice".to_string()).unwrap();
        let mut nodes = OwnerNodes::default();
        nodes.add(&alice, 5, 100);
        nodes.add(&alice, 7, 100);
        assert_eq!(nodes.on(&alice, 100), 12);
        assert_eq!(nodes.on(&alice, 101), 0);
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.put_owner_nodes(&nodes).unwrap();
            store.flush().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.owner_nodes().unwrap(), Some(nodes.clone()));
        nodes.add(&alice, 1, 101);
        assert_eq!(nodes.on(&alice, 101), 1);
        assert_eq!(nodes.on(&alice, 100), 0);
    }
}
