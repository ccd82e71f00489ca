//! Backlogs: a large batch starts a window of its items at a time, and what is not started
//! yet still counts, ends with a cancel and survives a restart.

use super::*;
use crate::scheduler::backlog::{live_cap, live_low};
use crate::store::ITEMS_PER_PART;
use tilesolve::pdb::Preset;

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
/// the batch never has more than its window live, and the rest of the last part it started
/// (a part read back starts whole); returns the most it had live.
fn solve_within_the_window(scheduler: &mut Owned, batch: u64) -> usize {
    let worker = scheduler.register(1, "test", None).unwrap();
    let mut results = Vec::new();
    let mut most = 0;
    let window_end = scheduler
        .parts
        .backlog
        .get(batch)
        .map_or(0, |held| held.next);
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            return most;
        }
        let (tasks, _) = scheduler
            .poll(worker, 8, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        let live = scheduler.puzzles.live_in(batch);
        assert!(live < live_cap(1) + ITEMS_PER_PART, "{live} live");
        // Each part read back starts whole: past the window's first stop, the next item to
        // start is a part's first.
        let next = scheduler.parts.backlog.get(batch).map(|held| held.next);
        assert!(
            next.is_none_or(
                |next| next == window_end || (next as usize).is_multiple_of(ITEMS_PER_PART)
            ),
            "{next:?}"
        );
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

#[test]
fn a_batch_waiting_for_some_tables_starts_what_it_has_solvers_for_past_its_window() {
    // A table budget that holds a 4x4 preset and no 3x3 one: under `default`, the 15-puzzle
    // waits for its tables (nobody builds them here) and the 8-puzzles search with linear
    // conflict at once.
    let (eight, fifteen) = (Board::blank_last(3), Board::blank_last(4));
    let sizes = |goal: Board| {
        let side = goal.shape().square_side().unwrap();
        Preset::by_strength(side)
            .into_iter()
            .map(move |preset| preset.table_bytes(&goal))
    };
    let budget = sizes(fifteen).min().unwrap();
    assert!(sizes(eight).all(|bytes| bytes > budget));
    let data = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        table_budget: budget,
        build_tables: false,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(data.path(), config);
    let mut near: Vec<(Board, u32)> = eight_puzzle_distances().into_iter().collect();
    near.sort_by_key(|(board, distance)| (*distance, board.to_string()));
    let near: Vec<(Board, u32)> = near.into_iter().skip(1).step_by(60).collect();
    assert!(near.len() > live_cap(1));
    let mut lines = vec!["1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15".to_string()];
    lines.extend(near.iter().map(|(board, _)| board.to_string()));
    let worker = scheduler.register(1, "holder", None).unwrap();
    let key = (fifteen, HeuristicChoice::Default);
    let files: Vec<(String, u64)> = (scheduler.tables().missing_tables(&key).unwrap())
        .iter()
        .map(|spec| (spec.file_name(), 7))
        .collect();
    scheduler.set_worker_tables(worker, &files);
    let batch = scheduler.submit(&lines, "default", "").unwrap().batch;
    assert!(scheduler.tables().is_waiting(batch));
    assert_eq!(scheduler.puzzles.live_in(batch), live_cap(1));

    // Every 8-puzzle is solved, past the window, while the 15-puzzle still waits.
    let mut results = Vec::new();
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().solved == near.len() as u32 {
            break;
        }
        let (tasks, _) = scheduler
            .poll(worker, 8, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        results.extend(tasks.iter().map(truthful));
    }
    let progress = scheduler.progress(batch).unwrap();
    assert_eq!(progress.solved, near.len() as u32, "{progress:?}");
    assert!(!progress.done && scheduler.tables().is_waiting(batch));
    let items = scheduler.items(batch).unwrap();
    assert_eq!(items[0].status, ItemStatus::Queued);
    for (item, (board, distance)) in items[1..].iter().zip(&near) {
        let ItemStatus::Solved(solution) = &item.status else {
            panic!("{board}: {:?}", item.status);
        };
        assert_eq!(solution.length, *distance, "{board}");
    }
}
