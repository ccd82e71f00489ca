//! The leases each worker holds against the threads it may run, and the idle threads over all
//! of them, kept as leases come and go: every poll asks how many threads elsewhere have nothing
//! to do, and a pass over every worker for that cost each poll more than the rest of it with a
//! thousand workers.
//!
//! It also keeps each worker token's pool of unearned leases. A registration may hold the
//! leases its own reports earned; what it holds beyond them is drawn from one pool per worker
//! token: one fresh registration's allowance, plus as many as the token's registrations hold
//! on their own earnings now. So a token's capacity is what its registrations have shown,
//! however many times it registers: ten registrations that take tasks and never report hold
//! what one would, not ten times that. And a thousand fresh registrations of a token that
//! reports start as its reports come in, doubling each round of tasks, not one allowance a
//! round (with the pool at one allowance, a thousand one-thread workers on 1 s tasks ran 90
//! tasks twelve seconds in). Registrations that never report still hold at most one
//! allowance beyond what the token's reporting ones hold on their earnings.
//!
//! Invariants: `idle` is the sum over `holders` of `capacity - held` (0 where a worker holds at
//! least its capacity); each token's `idle`, `unearned` and `earned_held` are the sums of its
//! holders' `idle`, `held - earned` and `min(held, earned)`; every change goes through
//! [`Holders::change`], which keeps them.

use rustc_hash::FxHashMap;

use super::types::WorkerId;

#[derive(Clone, Copy, Debug, Default)]
struct Holder {
    /// Leases the worker holds.
    held: usize,
    /// Threads it may run now: its threads, as far as it has earned them (0 once it is gone,
    /// while leases it held have not yet expired).
    capacity: usize,
    /// Leases its own reports earned: what it holds beyond them comes from its token's pool.
    earned: usize,
    /// The worker token it registered with (None: a lineage of its own, no pool).
    token: Option<usize>,
}

impl Holder {
    fn idle(self) -> usize {
        self.capacity.saturating_sub(self.held)
    }

    fn unearned(self) -> usize {
        self.held.saturating_sub(self.earned)
    }

    fn earned_held(self) -> usize {
        self.held.min(self.earned)
    }
}

/// One worker token's holders, summed.
#[derive(Clone, Copy, Debug, Default)]
struct TokenLeases {
    idle: usize,
    unearned: usize,
    /// Leases held on their holders' own earnings: the pool grows by as many.
    earned_held: usize,
    /// A lease was refused for want of room in the pool since it last grew.
    refused: bool,
}

/// What a worker may take beyond the leases it holds, as far as its token's pool says.
#[derive(Clone, Copy, Debug)]
pub(super) struct TokenRoom {
    /// Leases it may take on its own earnings, drawing nothing from the pool.
    pub(super) earned: usize,
    /// Leases left in its token's pool (`usize::MAX` without a token).
    pub(super) pool: usize,
    /// Threads of its token's other registrations with nothing to do: a lease drawn from the
    /// pool goes to a prefetch only when the pool could still give each of them one.
    pub(super) idle_elsewhere: usize,
}

impl TokenRoom {
    /// No pool limits the worker (tests and tools that drive the tasks alone).
    pub(super) const UNLIMITED: TokenRoom = TokenRoom {
        earned: usize::MAX,
        pool: usize::MAX,
        idle_elsewhere: 0,
    };
}

#[derive(Debug, Default)]
pub(super) struct Holders {
    holders: FxHashMap<WorkerId, Holder>,
    /// Threads with nothing to do over every holder.
    idle: usize,
    tokens: FxHashMap<usize, TokenLeases>,
    /// A token's pool grew after it refused a lease: the waiting pollers should ask again.
    freed: bool,
}

impl Holders {
    /// Applies `change` to `worker`'s entry, keeping the idle counts and the pools; an entry
    /// that holds nothing and may run nothing is dropped.
    fn change(&mut self, worker: WorkerId, change: impl FnOnce(&mut Holder)) {
        let holder = self.holders.entry(worker).or_default();
        let before = *holder;
        change(holder);
        let after = *holder;
        if after.held == 0 && after.capacity == 0 {
            self.holders.remove(&worker);
        }
        self.account(before, after);
    }

    /// Moves `before`'s share of the sums to `after`'s.
    fn account(&mut self, before: Holder, after: Holder) {
        self.idle = self.idle - before.idle() + after.idle();
        if let Some(token) = before.token {
            let leases = self.tokens.entry(token).or_default();
            leases.idle -= before.idle();
            leases.unearned -= before.unearned();
            leases.earned_held -= before.earned_held();
        }
        if let Some(token) = after.token {
            let leases = self.tokens.entry(token).or_default();
            leases.idle += after.idle();
            leases.unearned += after.unearned();
            leases.earned_held += after.earned_held();
        }
        if let Some(token) = before.token {
            let leases = self.tokens.get_mut(&token);
            if let Some(leases) = leases {
                let grew = after.token != before.token
                    || after.unearned() < before.unearned()
                    || after.earned_held() > before.earned_held();
                if grew && leases.refused {
                    leases.refused = false;
                    self.freed = true;
                }
                if leases.idle == 0
                    && leases.unearned == 0
                    && leases.earned_held == 0
                    && !leases.refused
                {
                    self.tokens.remove(&token);
                }
            }
        }
    }

    /// Leases `worker` holds now.
    pub(super) fn held(&self, worker: WorkerId) -> usize {
        self.holders.get(&worker).map_or(0, |h| h.held)
    }

    /// `worker`, registered with `token` (None: no pool), may run `capacity` threads.
    pub(super) fn join(&mut self, worker: WorkerId, token: Option<usize>, capacity: usize) {
        self.change(worker, |h| {
            h.token = token;
            h.capacity = capacity;
        });
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

    /// Threads `worker` may run now.
    pub(super) fn capacity(&self, worker: WorkerId) -> usize {
        self.holders.get(&worker).map_or(0, |h| h.capacity)
    }

    /// `worker` may run `capacity` threads from now on (0: it is gone).
    pub(super) fn set_capacity(&mut self, worker: WorkerId, capacity: usize) {
        if capacity > 0 || self.holders.contains_key(&worker) {
            self.change(worker, |h| h.capacity = capacity);
        }
    }

    /// `worker`'s own reports have earned it `earned` leases.
    pub(super) fn set_earned(&mut self, worker: WorkerId, earned: usize) {
        if self.holders.contains_key(&worker) {
            self.change(worker, |h| h.earned = earned);
        }
    }

    /// Forgets `worker`: its leases went back to the queue and it runs nothing more.
    pub(super) fn forget(&mut self, worker: WorkerId) {
        if let Some(holder) = self.holders.remove(&worker) {
            self.account(holder, Holder::default());
        }
    }

    /// Threads with nothing to do over every worker but `worker`.
    pub(super) fn idle_except(&self, worker: WorkerId) -> usize {
        self.idle - self.holders.get(&worker).map_or(0, |h| h.idle())
    }

    /// Leases a worker thread is running: each worker's leases up to the threads it may run
    /// (the rest wait in its own queue, prefetched). A pass over the workers, for totals.
    pub(super) fn running(&self) -> usize {
        self.holders
            .values()
            .map(|holder| holder.held.min(holder.capacity))
            .sum()
    }

    /// Threads with nothing to do over every worker.
    pub(super) fn idle(&self) -> usize {
        self.idle
    }

    /// What `worker` may take beyond what it holds, its token's pool holding `pool` unearned
    /// leases in all besides one for each lease its registrations hold on their own earnings.
    pub(super) fn token_room(&self, worker: WorkerId, pool: usize) -> TokenRoom {
        let Some(holder) = self.holders.get(&worker) else {
            return TokenRoom::UNLIMITED;
        };
        let Some(leases) = holder.token.and_then(|token| self.tokens.get(&token)) else {
            return TokenRoom::UNLIMITED;
        };
        TokenRoom {
            earned: holder.earned.saturating_sub(holder.held),
            pool: pool
                .saturating_add(leases.earned_held)
                .saturating_sub(leases.unearned),
            idle_elsewhere: leases.idle - holder.idle(),
        }
    }

    /// A lease `worker` asked for was refused for want of room in its token's pool: when the
    /// pool grows, the pollers waiting are told to ask again ([`Holders::take_freed`]).
    pub(super) fn refused(&mut self, worker: WorkerId) {
        let token = self.holders.get(&worker).and_then(|h| h.token);
        if let Some(leases) = token.and_then(|token| self.tokens.get_mut(&token)) {
            leases.refused = true;
        }
    }

    /// Whether a pool that refused a lease has grown since it was last asked.
    pub(super) fn take_freed(&mut self) -> bool {
        std::mem::take(&mut self.freed)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn recounted(holders: &Holders) -> usize {
        holders.holders.values().map(|h| h.idle()).sum()
    }

    /// Two threads holding five leases run two; a gone worker's leases run nowhere.
    #[test]
    fn running_counts_leases_up_to_each_workers_threads() {
        let mut holders = Holders::default();
        holders.join(1, None, 2);
        holders.leased(1, 5);
        holders.join(2, None, 4);
        holders.leased(2, 1);
        assert_eq!(holders.running(), 3);
        holders.set_capacity(2, 0);
        assert_eq!(holders.running(), 2);
    }

    #[test]
    fn a_tokens_pool_counts_what_its_registrations_hold_beyond_their_earnings() {
        let mut holders = Holders::default();
        holders.join(1, Some(0), 1);
        holders.join(2, Some(0), 1);
        holders.join(3, None, 1);
        let room = holders.token_room(1, 10);
        assert_eq!((room.earned, room.pool, room.idle_elsewhere), (0, 10, 1));
        holders.leased(1, 4);
        holders.leased(3, 50);
        assert_eq!(holders.token_room(2, 10).pool, 6);
        assert_eq!(holders.token_room(3, 10).pool, usize::MAX);
        // A report earns leases of its own: what it holds no longer draws on the pool.
        holders.refused(2);
        holders.set_earned(1, 2);
        assert!(holders.take_freed() && !holders.take_freed());
        // Two of its four leases are earned: two fewer drawn, and the pool two larger.
        let room = holders.token_room(1, 10);
        assert_eq!((room.earned, room.pool, room.idle_elsewhere), (0, 10, 1));
        for _ in 0..3 {
            holders.released(1);
        }
        assert_eq!(holders.token_room(1, 10).earned, 1);
        // Gone: its leases are back in the pool.
        holders.refused(2);
        holders.forget(1);
        assert!(holders.take_freed());
        let room = holders.token_room(2, 10);
        assert_eq!((room.earned, room.pool, room.idle_elsewhere), (0, 10, 0));
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
