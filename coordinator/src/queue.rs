//! The ready queue's order, shared by the scheduler and the simulator: batches first come,
//! first served; within a batch, waves (a puzzle's whole task, or one split iteration) in the
//! order they were queued, because an unfinished iteration holds back its puzzle's next, larger
//! one; within a wave, the task predicted largest first (a long task started last would hold up
//! the end of the iteration), and in the order queued among equals.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Tasks waiting for a worker.
#[derive(Debug)]
pub struct ReadyQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    queued: u64,
}

#[derive(Debug)]
struct Entry<T> {
    key: (Reverse<u64>, Reverse<u64>, u64, Reverse<u64>),
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl<T> Default for ReadyQueue<T> {
    fn default() -> Self {
        ReadyQueue {
            heap: BinaryHeap::new(),
            queued: 0,
        }
    }
}

impl<T> ReadyQueue<T> {
    /// Queues `item` of `batch` and `wave`, predicted to expand `predicted` nodes (0: unknown).
    pub fn push(&mut self, batch: u64, wave: u64, predicted: u64, item: T) {
        self.queued += 1;
        self.heap.push(Entry {
            key: (
                Reverse(batch),
                Reverse(wave),
                predicted,
                Reverse(self.queued),
            ),
            item,
        });
    }

    pub fn pop(&mut self) -> Option<T> {
        self.heap.pop().map(|entry| entry.item)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_batches_first_then_older_waves_then_largest_then_first_queued() {
        let mut queue = ReadyQueue::default();
        queue.push(2, 1, 1_000, "batch 2, large");
        queue.push(1, 3, 9_000, "batch 1, later wave, huge");
        queue.push(1, 2, 10, "batch 1, small");
        queue.push(1, 2, 500, "batch 1, large");
        queue.push(1, 2, 10, "batch 1, small, later");
        queue.push(1, 2, 0, "batch 1, unknown");
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            [
                "batch 1, large",
                "batch 1, small",
                "batch 1, small, later",
                "batch 1, unknown",
                "batch 1, later wave, huge",
                "batch 2, large"
            ]
        );
    }
}
