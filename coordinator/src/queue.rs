//! The ready queue's order, shared by the scheduler and the simulator: batches first come,
//! first served; within a batch, waves (a puzzle's whole task, or one split iteration) in the
//! order they were queued, because an unfinished iteration holds back its puzzle's next, larger
//! one; within a wave, subtrees in the order in-process IDA* meets them (by
//! `frontier::SubtreeTask::order`: per move from the puzzle's root, the child's place among its
//! siblings), and in the order queued among equals.
//!
//! Why not the largest first: in the iteration that holds the goal, the work done before the
//! goal is met depends only on the order, and this order is one thread's (Korf-24 #28's last
//! iteration: one thread meets the goal after 13.5 M nodes; two workers in this order after
//! 6.2 M, the split having dropped repeated boards; ordered by increasing h, after 67.5 M; these
//! figures predate the kernel's taking large subtrees' children best first). A subtree split
//! again keeps its place: its children's orders extend its own. Idle tails are the
//! split's to prevent (fine tasks, and a long task handing back what it has not searched), not
//! the order's.

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
    key: (Reverse<u64>, Reverse<u64>, Reverse<Vec<u8>>, Reverse<u64>),
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
    /// Queues `item` of `batch` and `wave`, the subtree at `order` (where one thread's search
    /// meets it).
    pub fn push(&mut self, batch: u64, wave: u64, order: Vec<u8>, item: T) {
        self.queued += 1;
        self.heap.push(Entry {
            key: (
                Reverse(batch),
                Reverse(wave),
                Reverse(order),
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

    /// Items queued (a withdrawn task's id counts until it is popped).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_batches_first_then_older_waves_then_search_order_then_first_queued() {
        let mut queue = ReadyQueue::default();
        queue.push(2, 1, vec![0], "batch 2");
        queue.push(1, 3, vec![0], "batch 1, later wave");
        queue.push(1, 2, vec![3, 0], "batch 1, D U");
        queue.push(1, 2, vec![0, 3], "batch 1, U D");
        queue.push(1, 2, vec![2, 1, 1], "batch 1, R L L");
        queue.push(1, 2, vec![2, 1, 0], "batch 1, R L U");
        queue.push(1, 2, vec![3, 0], "batch 1, D U again");
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            [
                "batch 1, U D",
                "batch 1, R L U",
                "batch 1, R L L",
                "batch 1, D U",
                "batch 1, D U again",
                "batch 1, later wave",
                "batch 2"
            ]
        );
    }
}
