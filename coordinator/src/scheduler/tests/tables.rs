//! Batches that wait for pattern tables, off the scheduler's lock.

use super::*;

#[test]
fn a_batch_needing_tables_is_stored_at_once_and_waits_for_them_off_the_lock() {
    let data = tempfile::tempdir().unwrap();
    let fifteen = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15".to_string();
    let eight = "1,2,3,4,5,6,7,0,8".to_string();
    let lines = vec![fifteen.clone()];
    let no_builds = SchedulerConfig {
        build_tables: false,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(data.path(), no_builds.clone());

    // Nobody holds the 4x4 tables and the coordinator may not build them: refused, nothing stored.
    let refused = scheduler.submit(&lines, "pdb:5-5-5", "");
    let Err(SchedulerError::FailedPrecondition(reason)) = refused else {
        panic!("a batch nobody can supply tables for is refused: {refused:?}");
    };
    assert!(
        reason.contains("4x4-blank-last-") && reason.contains("no connected worker holds"),
        "{reason}"
    );
    assert!(scheduler.list(None, 10, false).unwrap().is_empty());

    // A worker that holds them makes the same batch acceptable: stored, acknowledged, waiting.
    let worker = scheduler.register(1, "holder", None).unwrap();
    let key = (
        Board::blank_last(4),
        "pdb:5-5-5".parse::<HeuristicChoice>().unwrap(),
    );
    let files: Vec<(String, u64)> = scheduler
        .tables()
        .missing_tables(&key)
        .unwrap()
        .iter()
        .map(|spec| (spec.file_name(), 7))
        .collect();
    assert_eq!(files.len(), 3);
    scheduler.set_worker_tables(worker, &files);
    assert_eq!(scheduler.table_holders(&files[0].0), vec![(worker, 7)]);
    let submitted = scheduler.submit(&lines, "pdb:5-5-5", "").unwrap();
    assert!(scheduler.tables().is_waiting(submitted.batch));
    assert_eq!(
        scheduler.tables().table_needs(),
        vec![TableNeed {
            batch: submitted.batch,
            keys: vec![key]
        }]
    );
    let progress = scheduler.progress(submitted.batch).unwrap();
    assert_eq!(
        progress.preparing.as_deref(),
        Some("preparing pattern tables")
    );
    // An 8-puzzle cannot use a 4x4 preset: the batch is refused at submission, naming the line.
    let mixed = scheduler.submit(&[fifteen.clone(), eight], "pdb:5-5-5", "");
    let Err(SchedulerError::InvalidArgument(reason)) = mixed else {
        panic!("a heuristic for another size is refused: {mixed:?}");
    };
    assert!(
        reason.contains("line 2: heuristic pdb:5-5-5 is for 4x4 boards, and this board is 3x3"),
        "{reason}"
    );
    assert_eq!(scheduler.totals().puzzles_pending, 1);
    scheduler.set_preparing(HashMap::from([(key, "fetching x: 1 of 2 MB".into())]));
    assert_eq!(
        scheduler
            .progress(submitted.batch)
            .unwrap()
            .preparing
            .as_deref(),
        Some("fetching x: 1 of 2 MB")
    );

    // A restart keeps it waiting (nothing is loaded while the scheduler opens).
    drop(scheduler);
    let mut scheduler = scheduler_in(data.path(), no_builds);
    assert!(scheduler.tables().is_waiting(submitted.batch));

    // The tables arrive (built here for the test) and are loaded outside the scheduler; once
    // the solver is installed, the batch starts and ends optimal.
    let pdbs = PdbStore::new(data.path().join("pdb"), 2);
    let quiet = |_: PdbEvent<'_>| {};
    let heuristic = HeuristicChoice::Pdb("5-5-5".parse().unwrap())
        .build(&key.0, u64::MAX, &pdbs, &quiet)
        .unwrap();
    scheduler.install_solver(
        key,
        Solver::with_heuristic(key.0, heuristic, "pdb:5-5-5".to_string()),
    );
    assert_eq!(
        scheduler.start_ready_batches().unwrap(),
        vec![submitted.batch]
    );
    assert!(!scheduler.tables().is_waiting(submitted.batch));
    run_to_completion(&mut scheduler, submitted.batch, 1);
    assert_eq!(first_answer_length(&scheduler, submitted.batch), 1);
}

#[test]
fn a_cancelled_batch_that_waits_for_tables_ends_at_once() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = vec!["1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15".to_string()];
    let submitted = scheduler.submit(&lines, "pdb:5-5-5", "").unwrap();
    assert!(scheduler.tables().is_waiting(submitted.batch));
    let progress = scheduler.cancel(submitted.batch).unwrap();
    assert!(
        progress.done && progress.items_cancelled == 1 && progress.failed == 0,
        "{progress:?}"
    );
    assert!(!scheduler.tables().is_waiting(submitted.batch));
    assert_eq!(scheduler.totals().puzzles_pending, 0);
}
