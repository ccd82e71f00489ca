//! The virtual workers: one-thread workers as slots holding a running task and prefetched
//! ones, and the events of their tasks ending.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use tilesolve::Board;

/// One task of the simulation.
#[derive(Clone)]
pub(super) struct SimTask {
    pub(super) puzzle: usize,
    /// Index into the puzzle's iterations, or `None` for the whole-puzzle task.
    pub(super) iteration: Option<usize>,
    pub(super) board: Board,
    pub(super) path: Vec<u8>,
    /// Its place in its wave: where one thread's search meets it (`SubtreeTask::order`).
    pub(super) order: Vec<u8>,
    /// Range of the iteration's units below `path`.
    pub(super) units: std::ops::Range<usize>,
    pub(super) nodes: u64,
    pub(super) seconds: f64,
    pub(super) predicted_seconds: f64,
    pub(super) found: bool,
    /// Its turn and wave (with `order`, its place in the queue: [`crate::queue::Place`]), and
    /// the nodes the policy predicted.
    pub(super) turn: u64,
    pub(super) wave: u64,
    pub(super) predicted: u64,
    /// A second search of a reported task: extra work that changes nothing.
    pub(super) audit: bool,
}

#[derive(Clone, Copy, PartialEq)]
pub(super) struct Event {
    pub(super) at: f64,
    pub(super) slot: usize,
    /// Which start of a task on the slot this event ends (a cancelled task's event is stale).
    pub(super) start: u64,
}

impl Eq for Event {}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        self.at
            .total_cmp(&other.at)
            .then(self.slot.cmp(&other.slot))
            .then(self.start.cmp(&other.start))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The simulated workers' threads: what each runs and holds, and when running tasks end.
pub(super) struct Threads {
    /// Per thread: its task, when its search started, and which start it was.
    pub(super) running: Vec<Option<(SimTask, f64, u64)>>,
    /// Per thread: tasks prefetched for it, with when each reaches the worker.
    pub(super) held: Vec<VecDeque<(SimTask, f64)>>,
    pub(super) events: BinaryHeap<Reverse<Event>>,
    pub(super) starts: u64,
}

impl Threads {
    pub(super) fn new(count: usize) -> Threads {
        Threads {
            running: (0..count).map(|_| None).collect(),
            held: (0..count).map(|_| VecDeque::new()).collect(),
            events: BinaryHeap::new(),
            starts: 0,
        }
    }

    /// A thread that wants a task: an idle one (`true`: it runs the task), else one with room
    /// to prefetch (`false`); with `before_idle`, the first with room of either kind.
    pub(super) fn wanting(&self, prefetch: usize, before_idle: bool) -> Option<(usize, bool)> {
        if before_idle {
            // Each worker in turn takes all it may hold.
            return (0..self.running.len())
                .find(|&slot| self.running[slot].is_none() || self.held[slot].len() < prefetch)
                .map(|slot| (slot, self.running[slot].is_none()));
        }
        if let Some(slot) = self.running.iter().position(Option::is_none) {
            return Some((slot, true));
        }
        self.held
            .iter()
            .position(|held| held.len() < prefetch)
            .map(|slot| (slot, false))
    }

    pub(super) fn start(&mut self, slot: usize, task: SimTask, started: f64, seconds: f64) {
        self.starts += 1;
        self.running[slot] = Some((task, started, self.starts));
        self.events.push(Reverse(Event {
            at: started + seconds,
            slot,
            start: self.starts,
        }));
    }

    /// When the next running task ends. Events of cancelled tasks are stale (the thread may
    /// run another by now) and are dropped here.
    pub(super) fn next_end(&mut self) -> Option<f64> {
        while let Some(Reverse(event)) = self.events.peek() {
            let current =
                matches!(&self.running[event.slot], Some((_, _, start)) if *start == event.start);
            if current {
                return Some(event.at);
            }
            self.events.pop();
        }
        None
    }

    /// The next task to end: its thread, the task, when it started, when it ended, and which
    /// start it was.
    pub(super) fn next_finished(&mut self) -> Option<(usize, SimTask, f64, f64, u64)> {
        self.next_end()?;
        let Reverse(event) = self.events.pop()?;
        let (task, started, start) = self.running[event.slot].take()?;
        Some((event.slot, task, started, event.at, start))
    }

    /// Stops the thread's task at `at` if it is `puzzle`'s and would run on past it (its
    /// worker learns then that the puzzle is solved).
    pub(super) fn cancel_at(&mut self, slot: usize, puzzle: usize, at: f64) {
        if matches!(&self.running[slot], Some((task, _, _)) if task.puzzle == puzzle) {
            self.stop_at(slot, at);
        }
    }

    /// Stops the thread's task at `at`, if it would run on past it.
    pub(super) fn stop_at(&mut self, slot: usize, at: f64) {
        if let Some((_, _, start)) = &self.running[slot] {
            // The earlier of a start's two events ends it; the later one is then stale.
            let start = *start;
            self.events.push(Reverse(Event { at, slot, start }));
        }
    }
}
