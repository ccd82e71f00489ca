//! Batches: intake in parts, garbage refused, cancels, listing, and finished batches out of memory.

use super::*;
use crate::store::Priority;

#[test]
fn a_cancelled_batch_withdraws_its_tasks() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines: Vec<String> = examples().into_iter().map(|(b, _)| b).collect();
    let submitted = scheduler.submit(&lines, "manhattan", "").unwrap();
    let worker = scheduler.register(1, "test", None).unwrap();
    let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    let progress = scheduler.cancel(submitted.batch).unwrap();
    assert!(progress.done);
    assert_eq!(
        (progress.failed, progress.items_cancelled),
        (0, lines.len() as u32),
        "cancelled, not failed"
    );
    assert_eq!(scheduler.totals().puzzles_failed, 0);
    assert_eq!(scheduler.totals().puzzles_cancelled, lines.len() as u64);
    assert_eq!(
        scheduler
            .heartbeat(worker, &[tasks[0].id])
            .unwrap()
            .cancelled,
        vec![tasks[0].id],
        "the worker is told"
    );
    assert!(
        scheduler.poll(worker, 1, Vec::new()).unwrap().0.is_empty(),
        "nothing left to do"
    );
    assert_eq!(scheduler.list(None, 10, false).unwrap().len(), 1);
}

#[test]
fn cancelling_a_finished_batch_changes_nothing_and_a_running_one_keeps_its_answers() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let easy = "1,2,3,4,5,6,0,7,8".to_string();
    let finished = scheduler
        .submit(std::slice::from_ref(&easy), "linear-conflict", "")
        .unwrap()
        .batch;
    run_to_completion(&mut scheduler, finished, 1);
    let before = scheduler.items(finished).unwrap();
    let progress = scheduler.cancel(finished).unwrap();
    assert!(progress.done && !progress.cancelled, "{progress:?}");
    assert_eq!((progress.solved, progress.failed), (1, 0));
    assert_eq!(scheduler.items(finished).unwrap(), before);
    let stored = scheduler.store().batch(finished).unwrap().unwrap();
    assert!(
        !stored.cancelled,
        "a finished batch is never marked cancelled"
    );

    // A running batch: its answered item stays answered, the rest end cancelled.
    let hard = examples()[5].0.clone();
    let running = scheduler
        .submit(&[easy, hard], "manhattan", "")
        .unwrap()
        .batch;
    assert_eq!(
        scheduler.progress(running).unwrap().solved,
        1,
        "from the store"
    );
    let progress = scheduler.cancel(running).unwrap();
    assert!(progress.done && progress.cancelled, "{progress:?}");
    let counts = |p: &BatchProgress| (p.solved, p.failed, p.items_cancelled, p.bounded);
    assert_eq!(counts(&progress), (1, 0, 1, 0));
    let items = scheduler.items(running).unwrap();
    assert!(matches!(items[0].status, ItemStatus::Solved(_)));
    assert_eq!(items[1].status, ItemStatus::Cancelled);
    // The finished batch's figures, read back from its stored record, say the same.
    drop(scheduler);
    let scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    assert_eq!(counts(&scheduler.progress(running).unwrap()), (1, 0, 1, 0));
}

#[test]
fn garbage_is_refused_at_intake_and_nothing_is_stored() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let garbage = vec!["\u{1b}[31mred".to_string(), "1,1,1".to_string()];
    let refused = scheduler.submit(&garbage, "default", "");
    let Err(SchedulerError::InvalidArgument(reason)) = refused else {
        panic!("a batch of only invalid lines is refused: {refused:?}");
    };
    assert!(
        reason.contains("every one of the batch's 2 board lines is invalid"),
        "{reason}"
    );
    let long = vec![
        "1,2,3,4,5,6,7,0,8".to_string(),
        format!("1,2,3,4,5,6,7,0,8 # {}", "x".repeat(5000)),
    ];
    let refused = scheduler.submit(&long, "default", "");
    let Err(SchedulerError::InvalidArgument(reason)) = refused else {
        panic!("a line past the limit is refused: {refused:?}");
    };
    assert!(reason.starts_with("line 2 is 5020 bytes long"), "{reason}");
    assert!(
        scheduler.list(None, 10, false).unwrap().is_empty(),
        "nothing stored"
    );
    // One good line among bad ones is a batch: the bad ones fail by line.
    let mixed = vec!["1,2,3,4,5,6,7,0,8".to_string(), "1,1,1".to_string()];
    assert_eq!(scheduler.submit(&mixed, "default", "").unwrap().invalid, 1);
}

#[test]
fn no_pattern_database_is_built_for_a_batch_that_will_be_refused_or_has_no_valid_board() {
    let data = tempfile::tempdir().unwrap();
    let pdbs = PdbStore::new(data.path().join("pdb"), 1);
    let builds = std::sync::Mutex::new(0);
    let count = |event: PdbEvent<'_>| {
        if let PdbEvent::Building { .. } = event {
            *builds.lock().unwrap() += 1;
        }
    };
    let solvable = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15".to_string();
    // Two tiles swapped: no move sequence reaches the goal.
    let unsolvable = "2,1,3,4,5,6,7,8,9,10,11,12,13,14,15,0".to_string();
    let too_long = vec![solvable.clone(); MAX_BATCH_LINES + 1];
    for lines in [too_long, vec![unsolvable, "1,2,x".into()]] {
        Tables::prepare(
            &pdbs,
            &lines,
            "pdb:5-5-5".parse().unwrap(),
            tilesolve::Goal::BlankLast,
            u64::MAX,
            &count,
        )
        .unwrap();
    }
    assert_eq!(*builds.lock().unwrap(), 0);
    Tables::prepare(
        &pdbs,
        &[solvable],
        "pdb:5-5-5".parse().unwrap(),
        tilesolve::Goal::BlankLast,
        u64::MAX,
        &count,
    )
    .unwrap();
    assert!(
        *builds.lock().unwrap() > 0,
        "a batch with a valid board builds"
    );
}

#[test]
fn a_finished_batch_leaves_memory_and_its_figures_stay_answerable() {
    let data = tempfile::tempdir().unwrap();
    let lines = ["8,6,7,2,5,4,3,0,1".to_string(), "1,2,3".to_string()];
    let (batch, figures) = {
        let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
        let batch = scheduler.submit(&lines, "manhattan", "").unwrap().batch;
        assert!(
            scheduler.parts.batches.counts(batch).is_some(),
            "open while it runs"
        );
        run_to_completion(&mut scheduler, batch, 1);
        assert_eq!(
            scheduler.parts.batches.counts(batch),
            None,
            "nothing kept once done"
        );
        let progress = scheduler.progress(batch).unwrap();
        assert!(progress.done && progress.solved == 1 && progress.failed == 1);
        assert!(progress.nodes > 0);
        // A batch answered wholly from the store is closed as it is acknowledged.
        let again = scheduler.submit(&lines, "manhattan", "").unwrap().batch;
        assert_eq!(scheduler.parts.batches.counts(again), None);
        assert!(scheduler.progress(again).unwrap().done);
        scheduler.flusher().flush().unwrap();
        (batch, progress)
    };
    let scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    assert_eq!(
        scheduler.progress(batch).unwrap(),
        figures,
        "the same after a restart"
    );
}

#[test]
fn batches_are_listed_a_page_at_a_time_either_way() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    for _ in 0..5 {
        scheduler
            .submit(&["1,2,3,4,5,6,7,0,8".to_string()], "manhattan", "")
            .unwrap();
    }
    let ids = |page: Vec<BatchProgress>| page.iter().map(|p| p.batch).collect::<Vec<_>>();
    assert_eq!(ids(scheduler.list(None, 2, false).unwrap()), [1, 2]);
    assert_eq!(ids(scheduler.list(Some(2), 2, false).unwrap()), [3, 4]);
    assert_eq!(ids(scheduler.list(Some(4), 2, false).unwrap()), [5]);
    assert_eq!(ids(scheduler.list(None, 2, true).unwrap()), [5, 4]);
    assert_eq!(ids(scheduler.list(Some(4), 10, true).unwrap()), [3, 2, 1]);
    assert_eq!(
        ids(scheduler.list(Some(1), 10, true).unwrap()),
        Vec::<u64>::new()
    );
}

#[test]
fn a_batch_is_taken_in_parts_and_its_first_part_is_solved_before_the_rest_is_stored() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = walked_boards(2 * intake::INTAKE_PART + 10);
    let store = scheduler.store();
    let read = scheduler.read(&lines, "manhattan");
    let mut intake = scheduler.open_batch(read).unwrap();
    let batch = intake.batch();
    assert!(intake.store_part(&store).unwrap());
    assert!(!scheduler.start_part(&mut intake).unwrap());
    // The first part is solved while the rest is not stored yet (and the batch has no record).
    let worker = scheduler.register(4, "test", None).unwrap();
    let mut results = Vec::new();
    let mut solved_early = 0;
    for _ in 0..10 {
        let (tasks, _) = scheduler
            .poll(worker, 64, std::mem::take(&mut results))
            .unwrap();
        results.extend(tasks.iter().map(truthful));
        solved_early = scheduler.progress(batch).unwrap().solved;
    }
    assert!(solved_early > 0);
    assert!(store.batch(batch).unwrap().is_none());
    // A second batch meanwhile gets an id of its own.
    let other = scheduler.submit(&lines[..3], "manhattan", "").unwrap();
    assert_ne!(other.batch, batch);
    while intake.store_part(&store).unwrap() {
        scheduler.start_part(&mut intake).unwrap();
    }
    assert_eq!(intake.submitted().items, lines.len() as u32);
    work_until_done(&mut scheduler, worker, 4, batch, results);
    let items = scheduler.items(batch).unwrap();
    assert_eq!(items.len(), lines.len());
    for (number, (item, line)) in items.iter().zip(&lines).enumerate() {
        assert_eq!((&item.text, item.line), (line, Some(number as u32 + 1)));
        assert!(matches!(item.status, ItemStatus::Solved(_)), "{item:?}");
    }
    let stored = store.batch(batch).unwrap().unwrap();
    assert_eq!(stored.finished.map(|f| f.solved), Some(lines.len() as u32));
}

#[test]
fn an_intake_that_fails_part_way_is_forgotten_and_frees_its_capacity() {
    let data = tempfile::tempdir().unwrap();
    let limit = 2 * intake::INTAKE_PART;
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            max_pending_puzzles: limit,
            ..SchedulerConfig::default()
        },
    );
    let lines = walked_boards(limit);
    let store = scheduler.store();
    let read = scheduler.read(&lines, "manhattan");
    let mut intake = scheduler.open_batch(read).unwrap();
    // Counted while it is taken in: nothing more fits.
    assert!(scheduler.check_capacity(1).is_err());
    assert!(intake.store_part(&store).unwrap());
    scheduler.start_part(&mut intake).unwrap();
    scheduler.abandon(&intake);
    // Its started puzzles are gone with their tasks, and it no longer counts.
    let worker = scheduler.register(1, "test", None).unwrap();
    assert!(scheduler.poll(worker, 8, Vec::new()).unwrap().0.is_empty());
    scheduler.check_capacity(limit).unwrap();
    assert!(scheduler.progress(intake.batch()).is_err());
}

/// Takes `lines` in as one batch at `priority` (linear conflict), as the service does.
fn submit_at(scheduler: &mut Owned, lines: &[String], priority: Priority) -> u64 {
    let store = scheduler.store().clone();
    let terms = BatchTerms {
        priority,
        ..BatchTerms::default()
    };
    let read = scheduler.read(lines, "linear-conflict").with_terms(terms);
    let mut intake = scheduler.open_batch(read).unwrap();
    while intake.store_part(&store).unwrap() {
        scheduler.start_part(&mut intake).unwrap();
    }
    intake.batch()
}

/// An urgent batch submitted behind a long one is handed out first, and still is after a
/// restart (its priority is stored with it); the long one goes on after it.
#[test]
fn a_higher_priority_batch_is_handed_out_before_the_batches_ahead_of_it() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let long = submit_at(
        &mut scheduler,
        &distinct_eight_puzzles(40, 1),
        Priority::DEFAULT,
    );
    let worker = scheduler.register(3, "test", None).unwrap();
    let (first, _) = scheduler.poll(worker, 3, Vec::new()).unwrap();
    assert!(first.iter().all(|task| task.puzzle.0 == long));
    let urgent = submit_at(
        &mut scheduler,
        &distinct_eight_puzzles(3, 2),
        Priority::HIGHEST,
    );
    let lowest = submit_at(
        &mut scheduler,
        &distinct_eight_puzzles(3, 3),
        Priority::LOWEST,
    );
    let reports = first.iter().map(truthful).collect();
    let (next, _) = scheduler.poll(worker, 3, reports).unwrap();
    let batches: Vec<u64> = next.iter().map(|task| task.puzzle.0).collect();
    assert_eq!(batches, [urgent; 3], "the urgent batch first");
    assert_eq!(
        scheduler.progress(urgent).unwrap().priority,
        Priority::HIGHEST
    );

    // After a restart, the same order from the stored priorities.
    drop(scheduler);
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let worker = scheduler.register(3, "test", None).unwrap();
    let (again, _) = scheduler.poll(worker, 3, Vec::new()).unwrap();
    let batches: Vec<u64> = again.iter().map(|task| task.puzzle.0).collect();
    assert_eq!(batches, [urgent; 3], "after a restart too");
    work_until_done(
        &mut scheduler,
        worker,
        3,
        long,
        again.iter().map(truthful).collect(),
    );
    assert!(scheduler.progress(urgent).unwrap().done);
    assert!(
        !scheduler.progress(lowest).unwrap().done,
        "the lowest priority waits for the rest"
    );
    // What the worker held when it stopped reporting goes back to the queue.
    scheduler.leave(worker).unwrap();
    run_to_completion(&mut scheduler, lowest, 1);
}

/// Autoscaling's figure is the work, not the task count: fifty 8-puzzles queued before any
/// worker reported count a whole task's budget each at the nominal pace of a thread (100
/// thread-seconds: one 4-thread worker at the shipped KEDA target of 2,400), and nothing once
/// solved.
#[test]
fn the_work_left_counts_puzzles_at_a_threads_pace_not_tasks() {
    let data = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::default();
    let budget = config.whole_task_budget as f64;
    let mut scheduler = scheduler_in(data.path(), config);
    let batch = submit_at(
        &mut scheduler,
        &distinct_eight_puzzles(50, 7),
        Priority::DEFAULT,
    );
    let left = scheduler.totals().work_left_thread_seconds;
    assert_eq!(left, 50.0 * budget / eta::NOMINAL_THREAD_RATE);
    assert!(left < 2_400.0, "{left}");
    run_to_completion(&mut scheduler, batch, 2);
    assert_eq!(scheduler.totals().work_left_thread_seconds, 0.0);
}
