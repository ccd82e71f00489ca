//! Backlogs: a large batch starts a window of its items at a time, and what is not started
//! yet still counts, ends with a cancel and survives a restart.

use super::*;
use crate::scheduler::backlog::{live_cap, live_low};

/// The 8-puzzles of a batch larger than the window a coordinator with no workers starts.
fn beyond_the_window() -> Vec<String> {
    walked_boards(live_cap(0) + 3 * intake::INTAKE_PART / 2)
}

/// A scheduler (default policy, its store in a fresh directory) that took in a batch of
/// [`beyond_the_window`] boards (linear conflict): the directory, the scheduler, the lines and
/// the batch.
fn holding_a_large_batch() -> (tempfile::TempDir, Owned, Vec<String>, u64) {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = beyond_the_window();
    let batch = scheduler
        .submit(&lines, "linear-conflict", "")
        .unwrap()
        .batch;
    (data, scheduler, lines, batch)
}

/// Has a one-thread worker solve `batch` (a few tasks a poll), checking after every poll that
/// the batch never has more than its window live; returns the most it had live.
fn solve_within_the_window(scheduler: &mut Owned, batch: u64) -> usize {
    let worker = scheduler.register(1, "test", None).unwrap();
    let mut results = Vec::new();
    let mut most = 0;
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            return most;
        }
        let (tasks, _) = scheduler
            .poll(worker, 8, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        let live = scheduler.puzzles.live_in(batch);
        assert!(live <= live_cap(1), "{live} live");
        most = most.max(live);
        results.extend(tasks.iter().map(truthful));
    }
    panic!("batch {batch} did not finish: {:?}", scheduler.totals());
}

/// Every 8-puzzle's distance from the goal, by breadth-first search from it (an oracle apart
/// from the kernel).
fn eight_puzzle_distances() -> HashMap<Board, u32> {
    let goal = Board::blank_last(3);
    let mut distances = HashMap::from([(goal, 0)]);
    let mut frontier = vec![goal];
    let mut depth = 0;
    while !frontier.is_empty() {
        depth += 1;
        let mut next = Vec::new();
        for board in frontier {
            for direction in Direction::ALL {
                if let Some((child, _)) = board.apply(direction) {
                    if let std::collections::hash_map::Entry::Vacant(entry) = distances.entry(child)
                    {
                        entry.insert(depth);
                        next.push(child);
                    }
                }
            }
        }
        frontier = next;
    }
    distances
}

/// Every item of `batch` solved, each answer as long as the board's distance from the goal.
fn assert_solved_optimally(scheduler: &Owned, batch: u64, lines: &[String]) {
    let distances = eight_puzzle_distances();
    assert_eq!(distances.len(), 181_440);
    let items = scheduler.items(batch).unwrap();
    assert_eq!(items.len(), lines.len());
    for (item, line) in items.iter().zip(lines) {
        let ItemStatus::Solved(solution) = &item.status else {
            panic!("{line}: {:?}", item.status);
        };
        let board = parse_board(line).unwrap();
        assert_eq!(solution.length, distances[&board], "{line}");
    }
}

#[test]
fn a_large_batch_starts_a_window_and_the_rest_as_its_puzzles_end() {
    let (_data, mut scheduler, lines, batch) = holding_a_large_batch();
    assert_eq!(scheduler.puzzles.live_in(batch), live_cap(0));
    let left = lines.len() - live_cap(0);
    assert_eq!(scheduler.parts.backlog.queued(), left);
    assert_eq!(
        scheduler.totals().puzzles_pending,
        lines.len() as u64,
        "stored, not started, still pending"
    );
    let most = solve_within_the_window(&mut scheduler, batch);
    assert!(most >= live_low(1), "{most}");
    assert_eq!(scheduler.parts.backlog.get(batch), None);
    assert_eq!(scheduler.parts.backlog.queued(), 0);
    assert_solved_optimally(&scheduler, batch, &lines);
}

#[test]
fn cancelling_a_batch_ends_the_items_it_never_started() {
    let (_data, mut scheduler, lines, batch) = holding_a_large_batch();
    let progress = scheduler.cancel(batch).unwrap();
    assert!(progress.done && progress.cancelled, "{progress:?}");
    assert_eq!(progress.items_cancelled, lines.len() as u32);
    assert!(scheduler
        .items(batch)
        .unwrap()
        .iter()
        .all(|item| item.status == ItemStatus::Cancelled));
    assert_eq!(scheduler.parts.backlog.queued(), 0);
    assert_eq!(scheduler.totals().puzzles_pending, 0);
    let worker = scheduler.register(1, "test", None).unwrap();
    assert!(scheduler.poll(worker, 8, Vec::new()).unwrap().0.is_empty());
}

#[test]
fn items_not_started_count_against_the_pending_limit() {
    let data = tempfile::tempdir().unwrap();
    let lines = beyond_the_window();
    let config = SchedulerConfig {
        max_pending_puzzles: lines.len() + 10,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(data.path(), config);
    scheduler.submit(&lines, "linear-conflict", "").unwrap();
    assert!(scheduler.puzzles.len() < lines.len());
    let more = distinct_eight_puzzles(11, 3);
    let refused = scheduler.submit(&more, "linear-conflict", "");
    assert!(
        matches!(refused, Err(SchedulerError::ResourceExhausted(_))),
        "{refused:?}"
    );
    scheduler
        .submit(&more[..10], "linear-conflict", "")
        .unwrap();
}

#[test]
fn a_restarted_coordinator_starts_a_window_of_a_batch_it_resumes_and_finishes_it() {
    let (data, mut scheduler, lines, batch) = holding_a_large_batch();
    // Part of it solved before the restart.
    let worker = scheduler.register(1, "test", None).unwrap();
    let (tasks, _) = scheduler.poll(worker, 8, Vec::new()).unwrap();
    let results = tasks.iter().map(truthful).collect();
    scheduler.poll(worker, 0, results).unwrap();
    scheduler.run_deferred().unwrap();
    let solved_before = scheduler.progress(batch).unwrap().solved;
    assert!(solved_before > 0);
    scheduler.store().flush().unwrap();
    drop(scheduler);

    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    assert_eq!(scheduler.puzzles.live_in(batch), live_cap(0));
    assert_eq!(
        scheduler.totals().puzzles_pending,
        u64::from(lines.len() as u32 - scheduler.progress(batch).unwrap().solved)
    );
    solve_within_the_window(&mut scheduler, batch);
    assert_solved_optimally(&scheduler, batch, &lines);
}
