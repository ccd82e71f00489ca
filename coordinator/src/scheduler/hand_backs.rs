//! Work asked back: while worker threads idle and find nothing to take, the subtree tasks and
//! audits that have run longest are asked to hand back what they have not searched
//! (`TaskOutcome::HandedBack`), so that a split iteration's last long subtrees, or the audit
//! an answer waits for, are shared out rather than left to the one thread each that holds them
//! while the rest wait (the idle tail of an iteration, or of a batch). The worker searches the
//! subtree in measured parts and stops between them, giving up at most the part it was in;
//! what it searched stays searched. Tasks and audits waiting unstarted on a busy worker are
//! returned first.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::tasks::Tasks;
use super::types::{HeldTask, TaskId, TaskOutcome, TaskReport, WorkerId};
use super::Parts;

/// Idle threads per task asked at once: a hand-back brings about a dozen descendants.
const IDLE_THREADS_PER_ASK: usize = 8;

/// Looks over the running tasks (each passes over every lease) are at least this share of
/// the age a task is asked at apart: looking more often would find few tasks newly old enough.
const LOOKS_PER_AGE: u32 = 20;

/// The tasks asked back that have not reported yet.
#[derive(Default)]
pub(super) struct HandBacks {
    asked: HashSet<TaskId>,
    last_look: Option<Instant>,
}

/// After `worker`'s poll (which left it wanting, `starved`, when the queue held less than it
/// asked for): if a thread of it idles, asks the workers holding the tasks [`HandBacks::ask`]
/// picks to hand them back, at their next heartbeat or poll.
pub(super) fn ask_work_back(parts: &mut Parts, worker: WorkerId, starved: bool, now: Instant) {
    let tasks = &parts.tasks;
    let idle_here = tasks.idle_threads() - tasks.idle_threads_except(worker);
    if !starved || idle_here == 0 {
        return;
    }
    let after = parts.config.hand_back_after;
    for (holder, task) in parts.hand_backs.ask(tasks, now, after) {
        tracing::debug!(task, worker = holder, "work asked back");
        parts.workers.tell_hand_back(holder, task);
    }
}

/// Counts `worker`'s `report` of work asked back, and takes one of a task returned unstarted
/// (`TaskOutcome::Returned`, true): back in the queue where it was, no attempt spent, nothing
/// searched or claimed. Any other report (a hand-back among them) is the puzzles' to apply.
pub(super) fn take_returned(parts: &mut Parts, worker: WorkerId, report: &TaskReport) -> bool {
    match report.outcome {
        TaskOutcome::Returned => {}
        TaskOutcome::HandedBack { .. } => {
            parts.totals.tasks_handed_back += 1;
            return false;
        }
        _ => return false,
    }
    if let Some(entry) = parts.tasks.take_held(report.task, worker) {
        tracing::debug!(task = report.task, worker, "task returned unstarted");
        parts.tasks.retry_as_new(entry);
        parts.totals.tasks_returned += 1;
    }
    true
}

impl HandBacks {
    /// The tasks to ask now, each with the worker holding it. Of each worker's leases the
    /// oldest, one a thread, are running (a worker runs its tasks in the order they came) and
    /// the rest wait prefetched: waiting ones are returned, newest first, one for each idle
    /// thread; running ones that can hand back and went out at least `after` ago are asked,
    /// longest running first, one for every [`IDLE_THREADS_PER_ASK`] idle threads. Those
    /// asked already and still held count against both.
    pub(super) fn ask(
        &mut self,
        tasks: &Tasks,
        now: Instant,
        after: Duration,
    ) -> Vec<(WorkerId, TaskId)> {
        let idle = tasks.idle_threads();
        let looked_lately = self
            .last_look
            .is_some_and(|last| now.saturating_duration_since(last) < after / LOOKS_PER_AGE);
        if idle == 0 || looked_lately {
            return Vec::new();
        }
        self.last_look = Some(now);
        let mut leases: Vec<HeldTask> = tasks.leases().collect();
        leases.sort_unstable_by_key(|lease| (lease.since, lease.task));
        let mut busy_threads: HashMap<WorkerId, usize> = HashMap::new();
        let (mut running, mut waiting) = (Vec::new(), Vec::new());
        let asked = std::mem::take(&mut self.asked);
        for lease in leases {
            // An asked task still holds its thread (or its place in its worker's queue).
            let busy = busy_threads.entry(lease.worker).or_default();
            let runs = *busy < tasks.threads_of(lease.worker);
            *busy += usize::from(runs);
            if asked.contains(&lease.task) {
                self.asked.insert(lease.task);
            } else if runs {
                let old_enough = now.saturating_duration_since(lease.since) >= after;
                if lease.hands_back && old_enough {
                    running.push((lease.worker, lease.task));
                }
            } else {
                waiting.push((lease.worker, lease.task));
            }
        }
        let room = idle.saturating_sub(self.asked.len());
        let mut chosen: Vec<_> = waiting.into_iter().rev().take(room).collect();
        let room = idle.div_ceil(IDLE_THREADS_PER_ASK);
        let room = room.saturating_sub(self.asked.len() + chosen.len());
        chosen.extend(running.into_iter().take(room));
        self.asked.extend(chosen.iter().map(|&(_, task)| task));
        chosen
    }
}
