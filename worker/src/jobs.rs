//! The tasks a worker holds and no thread runs yet, handed to its threads highest priority
//! first and, within a priority, in the order they came. A worker prefetches: with every thread
//! busy it holds the next task of a long batch, and an urgent batch's task that arrives after it
//! must not wait behind it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use tilesolve::proto::v1 as pb;

/// A task waiting for a thread, with when it arrived (its report says how long it waited).
struct Job {
    key: (u32, Reverse<u64>),
    task: pb::Task,
    arrived: Instant,
}

impl PartialEq for Job {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Job {}

impl PartialOrd for Job {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Job {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Default)]
struct Waiting {
    heap: BinaryHeap<Job>,
    arrivals: u64,
    closed: bool,
    /// Threads waiting in [`Jobs::take`]: a push wakes one only when there is one, since a
    /// condition variable's notify is a system call even with nobody waiting (one for every
    /// task of a batch of easy boards).
    sleeping: usize,
}

/// The queue between the session (which pushes what the coordinator leases) and the threads
/// (which take from it); closed when the worker stops.
#[derive(Default)]
pub(crate) struct Jobs {
    waiting: Mutex<Waiting>,
    ready: Condvar,
}

/// The queue is closed: the worker is stopping.
#[derive(Debug)]
pub(crate) struct Closed;

impl Jobs {
    /// Queues `task`, which arrived at `arrived`.
    pub(crate) fn push(&self, task: pb::Task, arrived: Instant) -> Result<(), Closed> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if waiting.closed {
            return Err(Closed);
        }
        waiting.arrivals += 1;
        let key = (task.priority, Reverse(waiting.arrivals));
        waiting.heap.push(Job { key, task, arrived });
        let sleeping = waiting.sleeping > 0;
        drop(waiting);
        if sleeping {
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Takes `task` back out of the queue: whether it was still waiting there (no thread has
    /// started it, and none will).
    pub(crate) fn take_back(&self, task: u64) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let before = waiting.heap.len();
        waiting.heap.retain(|job| job.task.task_id != task);
        waiting.heap.len() < before
    }

    /// The next task, waiting for one; None once the queue is closed.
    pub(crate) fn take(&self) -> Option<(pb::Task, Instant)> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if waiting.closed {
                return None;
            }
            if let Some(job) = waiting.heap.pop() {
                return Some((job.task, job.arrived));
            }
            waiting.sleeping += 1;
            waiting = self.ready.wait(waiting).unwrap_or_else(|p| p.into_inner());
            waiting.sleeping -= 1;
        }
    }

    /// Closes the queue: every thread waiting, and every later [`Jobs::take`], gets None.
    pub(crate) fn close(&self) {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .closed = true;
        self.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn task(id: u64, priority: u32) -> pb::Task {
        pb::Task {
            task_id: id,
            priority,
            ..pb::Task::default()
        }
    }

    #[test]
    fn higher_priorities_first_then_in_the_order_they_came() {
        let jobs = Jobs::default();
        let now = Instant::now();
        for (id, priority) in [(1, 3), (2, 3), (3, 5), (4, 1), (5, 5)] {
            jobs.push(task(id, priority), now).unwrap();
        }
        let order: Vec<u64> = (0..5).map(|_| jobs.take().unwrap().0.task_id).collect();
        assert_eq!(order, [3, 5, 1, 2, 4]);
    }

    /// A thread taking the next task of `jobs`: its id, or None once the queue closed.
    fn taker(jobs: &Arc<Jobs>) -> std::thread::JoinHandle<Option<u64>> {
        let jobs = jobs.clone();
        std::thread::spawn(move || jobs.take().map(|(task, _)| task.task_id))
    }

    #[test]
    fn a_push_wakes_a_waiting_thread() {
        let jobs = Arc::new(Jobs::default());
        let taker = taker(&jobs);
        // Pushed once the thread waits, so that the push is what wakes it.
        while jobs.waiting.lock().unwrap().sleeping == 0 {
            std::thread::yield_now();
        }
        jobs.push(task(7, 3), Instant::now()).unwrap();
        assert_eq!(taker.join().unwrap(), Some(7));
    }

    #[test]
    fn closing_wakes_a_waiting_thread_and_refuses_more() {
        let jobs = Arc::new(Jobs::default());
        let taker = taker(&jobs);
        jobs.close();
        assert_eq!(taker.join().unwrap(), None);
        assert!(jobs.push(task(1, 3), Instant::now()).is_err());
    }
}
