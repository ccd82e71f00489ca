//! The ready queue's order, shared by the scheduler and the simulator: higher priorities
//! first ([`Priority`]); within a priority, owners take turns (the owner whose batches were
//! handed the fewest tasks goes next, so one owner's long batch does not hold back another's
//! batch of the same priority); within an owner, batches first come, first served; within a
//! batch, by turn, so that the puzzles being searched take turns (below); within a turn, waves
//! (a puzzle's whole task, or one split iteration) in the order they were queued; within a
//! wave, subtrees in the order in-process IDA* meets them (by `frontier::SubtreeTask::order`:
//! per move from the puzzle's root, the child's place among its siblings), and in the order
//! queued among equals.
//!
//! Owners' turns count tasks handed out, not nodes: an owner whose lane empties and fills
//! again starts level with the owners still queued, not with a credit of the turns it missed.
//! Without owners every batch is the operator's, in one lane per priority.
//!
//! Turns: a wave's `k`-th task (in search order) waits for turn `now + k`, where `now` is the
//! turn of the last task taken from the queue; a subtree split again keeps its turn, and its
//! children come in its place. So every puzzle with work queued gets a task in each round, a
//! new wave joins the round in progress, and a batch's threads spread over its puzzles rather
//! than all searching one iteration after another. That matters when a puzzle ends: the
//! first solution withdraws its puzzle's other tasks, and whatever they had searched was spent
//! for nothing. Sixteen 80-move boards on fifteen one-thread workers, one iteration after
//! another: 9.75 M of 100.6 M expanded nodes went to tasks withdrawn that way (about one task
//! per worker per puzzle), against 80.0 M the answers used.
//!
//! Why not the largest first: in the iteration that holds the goal, the work done before the
//! goal is met depends only on the order, and this order is one thread's (Korf-24 #28's last
//! iteration: one thread meets the goal after 13.5 M nodes; two workers in this order after
//! 6.2 M, the split having dropped repeated boards; ordered by increasing h, after 67.5 M; these
//! figures predate the kernel's taking large subtrees' children best first). Turns keep that
//! order within each puzzle. Idle tails are the split's to prevent (fine tasks, and a long
//! task handing back what it has not searched), not the order's.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::owners::OwnerName;
use crate::store::Priority;

/// Where an item waits within its batch: compared by turn, then wave, then order (see the
/// module's doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// The round it waits for ([`ReadyQueue::turn_now`] plus its rank in its wave).
    pub turn: u64,
    /// Its wave: a puzzle's whole task or one split iteration (0: ahead of every wave).
    pub wave: u64,
    /// Where one thread's search meets its subtree within its wave (empty for a whole task).
    pub order: Vec<u8>,
}

/// Which lane a batch's tasks wait in: its priority, then its owner (None: the operator's).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lane {
    pub priority: Priority,
    pub owner: Option<OwnerName>,
}

impl Lane {
    /// The lane of the operator's batches of `priority`.
    pub fn of(priority: Priority) -> Lane {
        Lane {
            priority,
            owner: None,
        }
    }
}

/// Tasks waiting for a worker.
#[derive(Debug)]
pub struct ReadyQueue<T> {
    lanes: BTreeMap<Lane, LaneQueue<T>>,
    len: usize,
    queued: u64,
    /// The turn of the last item taken (the round in progress).
    turn: u64,
}

/// One lane's items, and how many it has handed out (its owner's turns taken).
#[derive(Debug)]
struct LaneQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    served: u64,
}

/// An item taken out of the queue with its key, so that it can be put back where it was
/// (without copying its place) if it is passed over.
#[derive(Debug)]
pub struct Entry<T> {
    lane: Lane,
    key: (Reverse<u64>, Reverse<Place>, Reverse<u64>),
    item: T,
}

impl<T> Entry<T> {
    pub fn item(&self) -> &T {
        &self.item
    }
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
            lanes: BTreeMap::new(),
            len: 0,
            queued: 0,
            turn: 0,
        }
    }
}

impl<T> ReadyQueue<T> {
    /// Queues `item` of `batch`, which waits in `lane`, at `place`.
    pub fn push(&mut self, lane: &Lane, batch: u64, place: Place, item: T) {
        self.queued += 1;
        let entry = Entry {
            lane: lane.clone(),
            key: (Reverse(batch), Reverse(place), Reverse(self.queued)),
            item,
        };
        if self
            .lanes
            .get(lane)
            .is_none_or(|queue| queue.heap.is_empty())
        {
            // A lane that fills again starts level with those queued, not ahead by the turns
            // it had no work for.
            let level = self
                .lanes
                .iter()
                .filter(|(other, queue)| other.priority == lane.priority && !queue.heap.is_empty())
                .map(|(_, queue)| queue.served)
                .min()
                .unwrap_or(0);
            let queue = self.lanes.entry(lane.clone()).or_insert_with(|| LaneQueue {
                heap: BinaryHeap::new(),
                served: 0,
            });
            queue.served = queue.served.max(level);
        }
        self.put_back(entry);
    }

    /// Takes the first item; the round in progress is at least its turn from now on.
    pub fn pop(&mut self) -> Option<T> {
        let entry = self.pop_entry()?;
        self.taken(&entry);
        Some(entry.item)
    }

    /// Takes the first entry out to look at: [`ReadyQueue::taken`] if it is used, else
    /// [`ReadyQueue::put_back`]. The first is in the highest priority with items, in the lane
    /// of that priority that handed out the fewest (the oldest batch's among equals).
    pub fn pop_entry(&mut self) -> Option<Entry<T>> {
        let top = self
            .lanes
            .iter()
            .rev()
            .find(|(_, queue)| !queue.heap.is_empty())?
            .0
            .priority;
        let lane = self
            .lanes
            .range(Lane::of(top)..)
            .filter(|(lane, queue)| lane.priority == top && !queue.heap.is_empty())
            .min_by(|(_, a), (_, b)| {
                (a.served.cmp(&b.served)).then_with(|| b.heap.peek().cmp(&a.heap.peek()))
            })?
            .0
            .clone();
        let entry = self.lanes.get_mut(&lane)?.heap.pop()?;
        self.len -= 1;
        Some(entry)
    }

    /// `entry` was used: the round in progress is at least its turn from now on, and its lane
    /// has taken one more turn.
    pub fn taken(&mut self, entry: &Entry<T>) {
        self.turn = self.turn.max(entry.key.1 .0.turn);
        if let Some(queue) = self.lanes.get_mut(&entry.lane) {
            queue.served += 1;
        }
    }

    /// Puts a passed-over entry back exactly where it was.
    pub fn put_back(&mut self, entry: Entry<T>) {
        self.len += 1;
        self.lanes
            .entry(entry.lane.clone())
            .or_insert_with(|| LaneQueue {
                heap: BinaryHeap::new(),
                served: 0,
            })
            .heap
            .push(entry);
    }

    /// The round in progress: a wave queued now has its first task wait for this turn.
    pub fn turn_now(&self) -> u64 {
        self.turn
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Items queued (a withdrawn task's id counts until it is popped).
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(turn: u64, wave: u64, order: &[u8]) -> Place {
        Place {
            turn,
            wave,
            order: order.to_vec(),
        }
    }

    const NORMAL: Priority = Priority::DEFAULT;

    #[test]
    fn higher_priorities_first_whenever_they_were_queued() {
        let mut queue = ReadyQueue::default();
        queue.push(&Lane::of(NORMAL), 1, place(0, 1, &[0]), "batch 1");
        queue.push(
            &Lane::of(Priority::LOWEST),
            2,
            place(0, 2, &[]),
            "batch 2, lowest",
        );
        queue.push(
            &Lane::of(Priority::HIGHEST),
            3,
            place(5, 3, &[]),
            "batch 3, highest",
        );
        queue.push(&Lane::of(NORMAL), 1, place(0, 1, &[1]), "batch 1 again");
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            [
                "batch 3, highest",
                "batch 1",
                "batch 1 again",
                "batch 2, lowest"
            ]
        );
    }

    fn owned(priority: Priority, name: &str) -> Lane {
        Lane {
            priority,
            owner: Some(OwnerName::try_from(name.to_string()).unwrap()),
        }
    }

    /// Alice's batch came first with six tasks; Bob's, of the same priority, with three: they
    /// take turns, and Bob's do not wait for all of Alice's. Carol's higher priority goes
    /// first, and the operator's lane is a lane like the others.
    #[test]
    fn owners_of_one_priority_take_turns_and_a_higher_priority_goes_first() {
        let mut queue = ReadyQueue::default();
        let (alice, bob) = (owned(NORMAL, "alice"), owned(NORMAL, "bob"));
        for rank in 0..6u64 {
            queue.push(&alice, 1, place(rank, 1, &[]), format!("a{rank}"));
        }
        for rank in 0..3u64 {
            queue.push(&bob, 2, place(rank, 2, &[]), format!("b{rank}"));
        }
        queue.push(
            &owned(Priority::HIGHEST, "carol"),
            3,
            place(9, 3, &[]),
            "c0".into(),
        );
        queue.push(&Lane::of(NORMAL), 4, place(0, 4, &[]), "o0".into());
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            ["c0", "a0", "b0", "o0", "a1", "b1", "a2", "b2", "a3", "a4", "a5"]
        );
    }

    /// An owner that had nothing queued while another took 100 turns starts level with it,
    /// not 100 turns ahead; a passed-over entry put back takes no turn.
    #[test]
    fn an_owner_joining_late_starts_level_and_passing_over_takes_no_turn() {
        let mut queue = ReadyQueue::default();
        let (alice, bob) = (owned(NORMAL, "alice"), owned(NORMAL, "bob"));
        for rank in 0..104u64 {
            queue.push(&alice, 1, place(rank, 1, &[]), format!("a{rank}"));
        }
        for _ in 0..100 {
            queue.pop();
        }
        for rank in 0..3u64 {
            queue.push(&bob, 2, place(rank, 2, &[]), format!("b{rank}"));
        }
        let passed = queue.pop_entry().unwrap();
        assert_eq!(passed.item(), "a100", "the older batch first among equals");
        queue.put_back(passed);
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(order, ["a100", "b0", "a101", "b1", "a102", "b2", "a103"]);
        assert!(queue.is_empty());
    }

    #[test]
    fn older_batches_first_then_turns_then_older_waves_then_search_order_then_first_queued() {
        let mut queue = ReadyQueue::default();
        queue.push(&Lane::of(NORMAL), 2, place(0, 1, &[0]), "batch 2");
        queue.push(
            &Lane::of(NORMAL),
            1,
            place(0, 3, &[0]),
            "batch 1, later wave",
        );
        queue.push(&Lane::of(NORMAL), 1, place(0, 2, &[3, 0]), "batch 1, D U");
        queue.push(&Lane::of(NORMAL), 1, place(0, 2, &[0, 3]), "batch 1, U D");
        queue.push(
            &Lane::of(NORMAL),
            1,
            place(0, 2, &[2, 1, 1]),
            "batch 1, R L L",
        );
        queue.push(
            &Lane::of(NORMAL),
            1,
            place(0, 2, &[2, 1, 0]),
            "batch 1, R L U",
        );
        queue.push(
            &Lane::of(NORMAL),
            1,
            place(0, 2, &[3, 0]),
            "batch 1, D U again",
        );
        queue.push(
            &Lane::of(NORMAL),
            1,
            place(1, 2, &[0]),
            "batch 1, next turn",
        );
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
                "batch 1, next turn",
                "batch 2"
            ]
        );
    }

    #[test]
    fn waves_take_turns_and_a_new_wave_joins_the_round_in_progress() {
        let mut queue = ReadyQueue::default();
        for (wave, puzzle) in [(1, "a"), (2, "b")] {
            let now = queue.turn_now();
            for rank in 0..3u8 {
                let place = place(now + u64::from(rank), wave, &[rank]);
                queue.push(&Lane::of(NORMAL), 1, place, format!("{puzzle}{rank}"));
            }
        }
        let first: Vec<_> = (0..3).filter_map(|_| queue.pop()).collect();
        assert_eq!(first, ["a0", "b0", "a1"]);
        // Queued in round 1: its first task goes with round 1's others, ahead of round 2.
        let now = queue.turn_now();
        assert_eq!(now, 1);
        queue.push(&Lane::of(NORMAL), 1, place(now, 3, &[]), "c0".to_string());
        let rest: Vec<_> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(rest, ["b1", "c0", "a2", "b2"]);
    }
}
