//! The items each batch has stored but not started. A batch's puzzles start a window at a time
//! ([`live_low`] to [`live_cap`] of them live), and the rest wait in the store, so the
//! coordinator's memory follows the threads it feeds, not the boards it was given: a live
//! puzzle holds about 4 KB (its state and its queued task), a stored item none. A leaf: it
//! only keeps each batch's place and count.

use rustc_hash::FxHashMap;

use super::types::MAX_PREFETCH;

/// A batch with a backlog keeps at least this many puzzles live, whatever the threads: a part
/// of its items at a time (each start reads its items back from the store).
pub(super) const LIVE_LOW_MIN: usize = 1_000;

/// Below this many live puzzles a batch starts more of its backlog: twice what `threads`
/// connected search threads hold at their fullest (one running and [`MAX_PREFETCH`] waiting
/// each), so workers never wait for a puzzle to start, or [`LIVE_LOW_MIN`].
pub(super) fn live_low(threads: usize) -> usize {
    LIVE_LOW_MIN.max(threads.saturating_mul(2 * (1 + MAX_PREFETCH as usize)))
}

/// Starting stops once a batch has this many live puzzles (or at the end of the part it came
/// to, when its items are read back from the store): twice [`live_low`], so a batch starts a
/// window at a time, not one puzzle as each one ends.
pub(super) fn live_cap(threads: usize) -> usize {
    live_low(threads).saturating_mul(2)
}

/// A batch's items not started yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Unstarted {
    /// The first item not started: every queued item before it is live, waits for tables or
    /// has ended; from it on, none has started but those a withdrawn answer sent back to
    /// search (starting skips a live puzzle).
    pub(super) next: u32,
    /// Items stored so far: the batch's total once its intake is done.
    pub(super) stored: u32,
    /// Queued items from `next` on (they count against the pending limit).
    pub(super) queued: usize,
}

#[derive(Default)]
pub(super) struct Backlog {
    batches: FxHashMap<u64, Unstarted>,
    /// The sum of their `queued`.
    queued: usize,
}

impl Backlog {
    /// `batch`'s items from `unstarted.next` on wait to start (replacing what it had).
    pub(super) fn hold(&mut self, batch: u64, unstarted: Unstarted) {
        self.remove(batch);
        self.queued += unstarted.queued;
        self.batches.insert(batch, unstarted);
    }

    /// Items up to `stored` are stored, `queued` more of them queued: held behind the backlog
    /// `batch` has; false when it has none (they may start now).
    pub(super) fn grow(&mut self, batch: u64, stored: u32, queued: usize) -> bool {
        let Some(unstarted) = self.batches.get_mut(&batch) else {
            return false;
        };
        unstarted.stored = stored;
        unstarted.queued += queued;
        self.queued += queued;
        true
    }

    pub(super) fn get(&self, batch: u64) -> Option<Unstarted> {
        self.batches.get(&batch).copied()
    }

    /// `batch` has no items waiting to start any more (all started, cancelled or abandoned).
    pub(super) fn remove(&mut self, batch: u64) -> Option<Unstarted> {
        let removed = self.batches.remove(&batch);
        if let Some(unstarted) = removed {
            self.queued -= unstarted.queued;
        }
        removed
    }

    /// Queued items waiting to start, over every batch.
    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    /// The batches with a backlog, by id (oldest first).
    pub(super) fn batches(&self) -> Vec<u64> {
        let mut batches: Vec<u64> = self.batches.keys().copied().collect();
        batches.sort_unstable();
        batches
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_counts_what_it_holds_and_forgets_what_is_removed() {
        let mut backlog = Backlog::default();
        assert!(
            !backlog.grow(7, 2_000, 1_000),
            "no backlog: the part may start"
        );
        let unstarted = Unstarted {
            next: 1_500,
            stored: 2_000,
            queued: 400,
        };
        backlog.hold(7, unstarted);
        assert!(backlog.grow(7, 3_000, 1_000));
        backlog.hold(
            9,
            Unstarted {
                next: 10,
                ..unstarted
            },
        );
        assert_eq!(backlog.queued(), 1_800);
        assert_eq!(backlog.batches(), vec![7, 9]);
        assert_eq!(
            backlog.get(7),
            Some(Unstarted {
                stored: 3_000,
                queued: 1_400,
                ..unstarted
            })
        );
        backlog.hold(
            7,
            Unstarted {
                queued: 100,
                ..unstarted
            },
        );
        assert_eq!(backlog.queued(), 500);
        assert_eq!(backlog.remove(9).map(|u| u.next), Some(10));
        assert_eq!(backlog.remove(9), None);
        assert_eq!(backlog.queued(), 100);
    }

    #[test]
    fn the_window_follows_the_threads_and_never_falls_below_a_part() {
        assert_eq!(live_low(0), LIVE_LOW_MIN);
        assert_eq!(live_low(2), LIVE_LOW_MIN);
        assert_eq!(live_low(1_024), 10_240);
        assert_eq!(live_cap(1_024), 20_480);
        assert_eq!(live_cap(usize::MAX), usize::MAX);
    }
}
