//! The leases each worker holds against the threads it may run, and the idle threads over all
//! of them, kept as leases come and go: every poll asks how many threads elsewhere have nothing
//! to do, and a pass over every worker for that cost each poll more than the rest of it with a
//! thousand workers.
//!
//! Invariant: `idle` is the sum over `holders` of `capacity - held` (0 where a worker holds at
//! least its capacity); every change goes through [`Holders::change`], which keeps it.

use std::collections::HashMap;

use super::types::WorkerId;

#[derive(Clone, Copy, Debug, Default)]
struct Holder {
    /// Leases the worker holds.
    held: usize,
    /// Threads it may run now: its threads, as far as it has earned them (0 once it is gone,
    /// while leases it held have not yet expired).
    capacity: usize,
}

impl Holder {
    fn idle(self) -> usize {
        self.capacity.saturating_sub(self.held)
    }
}

#[derive(Debug, Default)]
pub(super) struct Holders {
    holders: HashMap<WorkerId, Holder>,
    /// Threads with nothing to do over every holder.
    idle: usize,
}

impl Holders {
    /// Applies `change` to `worker`'s entry, keeping the idle count; an entry that holds
    /// nothing and may run nothing is dropped.
    fn change(&mut self, worker: WorkerId, change: impl FnOnce(&mut Holder)) {
        let holder = self.holders.entry(worker).or_default();
        self.idle -= holder.idle();
        change(holder);
        self.idle += holder.idle();
        if holder.held == 0 && holder.capacity == 0 {
            self.holders.remove(&worker);
        }
    }

    /// Leases `worker` holds now.
    pub(super) fn held(&self, worker: WorkerId) -> usize {
        self.holders.get(&worker).map_or(0, |h| h.held)
    }

    /// `worker` took `count` more leases.
    pub(super) fn leased(&mut self, worker: WorkerId, count: usize) {
        self.change(worker, |h| h.held += count);
    }

    /// One lease of `worker` ended (reported, expired, withdrawn).
    pub(super) fn released(&mut self, worker: WorkerId) {
        if self.holders.contains_key(&worker) {
            self.change(worker, |h| h.held = h.held.saturating_sub(1));
        }
    }

    /// `worker` may run `capacity` threads from now on (0: it is gone).
    pub(super) fn set_capacity(&mut self, worker: WorkerId, capacity: usize) {
        if capacity > 0 || self.holders.contains_key(&worker) {
            self.change(worker, |h| h.capacity = capacity);
        }
    }

    /// Forgets `worker`: its leases went back to the queue and it runs nothing more.
    pub(super) fn forget(&mut self, worker: WorkerId) {
        if let Some(holder) = self.holders.remove(&worker) {
            self.idle -= holder.idle();
        }
    }

    /// Threads with nothing to do over every worker but `worker`.
    pub(super) fn idle_except(&self, worker: WorkerId) -> usize {
        self.idle - self.holders.get(&worker).map_or(0, |h| h.idle())
    }

    /// Threads with nothing to do over every worker.
    pub(super) fn idle(&self) -> usize {
        self.idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recounted(holders: &Holders) -> usize {
        holders.holders.values().map(|h| h.idle()).sum()
    }

    #[test]
    fn the_idle_count_follows_leases_capacities_and_departures() {
        let mut holders = Holders::default();
        holders.set_capacity(1, 4);
        holders.set_capacity(2, 2);
        assert_eq!((holders.idle(), holders.idle_except(1)), (6, 2));
        holders.leased(1, 3);
        holders.leased(2, 5);
        assert_eq!((holders.idle(), holders.idle_except(2)), (1, 1));
        holders.released(2);
        holders.released(2);
        holders.released(2);
        holders.released(2);
        assert_eq!((holders.held(2), holders.idle()), (1, 2));
        // Gone: its threads no longer count, its last lease may still end.
        holders.set_capacity(2, 0);
        assert_eq!(holders.idle(), 1);
        holders.released(2);
        holders.released(2);
        assert_eq!((holders.held(2), holders.idle()), (0, 1));
        assert!(!holders.holders.contains_key(&2));
        // A report earns more capacity; a worker that never held a lease counts too.
        holders.set_capacity(1, 6);
        holders.set_capacity(3, 1);
        assert_eq!(holders.idle(), 4);
        holders.forget(1);
        assert_eq!((holders.idle(), holders.held(1)), (1, 0));
        holders.released(7);
        holders.set_capacity(8, 0);
        assert_eq!(holders.idle(), recounted(&holders));
        assert_eq!(holders.holders.len(), 1);
    }
}
