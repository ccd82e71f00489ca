//! Work asked back: while worker threads idle and find nothing to take, the subtree tasks that
//! have run longest are asked to hand back what they have not searched
//! (`TaskOutcome::HandedBack`), so that a split iteration's last long subtrees are shared out
//! rather than left to the one thread each that holds them while the rest wait (the idle tail
//! of an iteration). The worker searches the subtree in measured parts and stops between them,
//! giving up at most the part it was in; what it searched stays searched.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::tasks::Tasks;
use super::types::{TaskId, WorkerId};

/// Idle threads per task asked at once: a hand-back brings about a dozen descendants.
const IDLE_THREADS_PER_ASK: usize = 8;

/// Looks over the running tasks (each passes over every lease) are at least this share of
/// the age a task is asked at apart: looking more often would find few tasks newly old enough.
const LOOKS_PER_AGE: u32 = 20;

/// The tasks asked to hand back that have not reported yet.
#[derive(Default)]
pub(super) struct HandBacks {
    asked: HashSet<TaskId>,
    last_look: Option<Instant>,
}

impl HandBacks {
    /// The tasks to ask now, each with the worker holding it, when a worker with a thread
    /// idle found nothing it may take (`starved`): the longest running of those that can hand
    /// back and have run at least `after`, one for every [`IDLE_THREADS_PER_ASK`] idle
    /// threads, less those asked already that are still running.
    pub(super) fn ask(
        &mut self,
        tasks: &Tasks,
        (now, after): (Instant, Duration),
        starved: bool,
    ) -> Vec<(WorkerId, TaskId)> {
        let idle = tasks.idle_threads();
        let looked_lately = self
            .last_look
            .is_some_and(|last| now.saturating_duration_since(last) < after / LOOKS_PER_AGE);
        if !starved || idle == 0 || looked_lately {
            return Vec::new();
        }
        self.last_look = Some(now);
        let mut still_asked = HashSet::new();
        let mut candidates = Vec::new();
        for (task, worker, since) in tasks.leased_subtree_tasks() {
            if self.asked.contains(&task) {
                still_asked.insert(task);
            } else if now.saturating_duration_since(since) >= after {
                candidates.push((since, worker, task));
            }
        }
        self.asked = still_asked;
        let room = idle
            .div_ceil(IDLE_THREADS_PER_ASK)
            .saturating_sub(self.asked.len());
        candidates.sort_unstable();
        candidates.truncate(room);
        self.asked
            .extend(candidates.iter().map(|&(_, _, task)| task));
        candidates
            .into_iter()
            .map(|(_, worker, task)| (worker, task))
            .collect()
    }
}
