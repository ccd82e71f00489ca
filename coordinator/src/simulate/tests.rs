//! The simulator on hand-made units and on a recorded run.
use std::collections::BTreeMap;

use super::model::{overhead_figures, path_indices, predict, Iteration, Unit};
use super::*;
use crate::scheduler::{Owned, SchedulerConfig, TaskReport};
use crate::store::{RecordedOutcome, TaskRecord};
use tilesolve::pdb::PdbStore;
use tilesolve::task::run_task;
use tilesolve::{parse_board, Board, Solver};

fn unit(path: &[u8], nodes: u64) -> Unit {
    Unit {
        path: path.to_vec(),
        nodes,
        seconds: nodes as f64 * 1e-6,
        found: false,
        predicted: false,
        interior: false,
    }
}

#[test]
fn cancelled_tasks_are_predicted_from_the_iteration_before_times_its_growth() {
    let previous = Iteration {
        bound: 50,
        units: vec![unit(&[0, 1], 10), unit(&[0, 2], 30), unit(&[1, 0], 20)],
    };
    // Task [1] finished with 40 nodes (twice its 20 before); [0] was cancelled.
    let predicted = predict(&[vec![0]], &[(vec![1], 40)], Some(&previous), &[]);
    let sizes: Vec<(Vec<u8>, u64, bool)> = predicted
        .iter()
        .map(|u| (u.path.clone(), u.nodes, u.predicted))
        .collect();
    assert_eq!(sizes, vec![(vec![0, 1], 20, true), (vec![0, 2], 60, true)]);
}

/// A task handed back counts with the parts it searched (and its nodes above them), and the
/// descendant it handed back with its own record: every node of the subtree once.
#[test]
fn a_handed_back_task_counts_with_what_it_searched() {
    let record = |path: &str, outcome, nodes, part: (&str, u64)| TaskRecord {
        batch: 1,
        index: 0,
        bound: 50,
        path: path.into(),
        iterate: false,
        outcome,
        nodes,
        seconds: nodes as f64 * 1e-5,
        round_trip_seconds: nodes as f64 * 1e-5,
        parts: vec![(part.0.into(), part.1, part.1 * 10)],
        measured_after: false,
    };
    let handed_back = record("R", RecordedOutcome::HandedBack, 130, ("UL", 100));
    let descendant = record("RD", RecordedOutcome::Exceeded(52), 40, ("L", 40));
    let records: BTreeMap<Vec<u8>, &TaskRecord> = [
        (path_indices("R").unwrap(), &handed_back),
        (path_indices("RD").unwrap(), &descendant),
    ]
    .into_iter()
    .collect();
    let iteration = Iteration::from_records(50, &records, None, &[]).unwrap();
    assert_eq!(iteration.units.iter().map(|u| u.nodes).sum::<u64>(), 170);
    let mut searched: Vec<(Vec<u8>, u64)> = iteration
        .units
        .iter()
        .filter(|u| !u.interior)
        .map(|u| (u.path.clone(), u.nodes))
        .collect();
    searched.sort();
    let mut expected = vec![
        (path_indices("RUL").unwrap(), 100),
        (path_indices("RDL").unwrap(), 40),
    ];
    expected.sort();
    assert_eq!(searched, expected);
    assert!(iteration.units.iter().all(|u| !u.predicted));
}

/// A dilated run's calls wait whole quota periods now and then: the mean, which the replay
/// takes, counts those waits; the median does not.
#[test]
fn a_few_long_waits_raise_the_mean_overhead_and_not_the_median() {
    let (count, mean, median) = overhead_figures(vec![0.1, 0.002, 0.001, 0.001, 0.001]);
    assert_eq!((count, median), (5, Some(0.001)));
    assert!((mean.unwrap() - 0.021).abs() < 1e-12, "{mean:?}");
    assert_eq!(overhead_figures(Vec::new()), (0, None, None));
}

/// A policy that splits small runs finely, free of overhead, audits and late cancellations.
fn small_split_policy() -> SimulationPolicy {
    SimulationPolicy {
        tasks_per_thread: 4,
        split_balance: 8,
        min_split_nodes: 1_000,
        min_split_nodes_per_thread: 0,
        profile_depth: 2,
        subtree_task_budget: 0,
        overhead_seconds: 0.0,
        coordinator_seconds_per_task: 0.0,
        split_seconds_per_estimate: None,
        exhaustive: false,
        prefetch: 1,
        audit_fraction: 0.0,
        returns: true,
        hand_backs: false,
        hand_back_after_seconds: 0.2,
        heartbeat_seconds: 0.0,
        whole_task_budget: None,
        prefetch_before_idle: false,
    }
}

/// A split run recorded by the real scheduler (driven in process, the kernel measuring
/// parts) replays: every task is accounted for, more workers are not slower, and a worker
/// is never busier than the time it had.
#[test]
fn a_recorded_run_replays_with_more_workers() {
    let data = tempfile::tempdir().unwrap();
    let store = crate::store::reopen(&data.path().join("store"));
    let pdbs = PdbStore::new(data.path().join("pdb"), 1);
    let config = SchedulerConfig {
        whole_task_budget: 1,
        tasks_per_thread: 4,
        profile_depth: 4,
        ..SchedulerConfig::default()
    };
    let mut scheduler = Owned::new(
        store.clone(),
        PdbStore::new(data.path().join("pdb"), 1),
        config,
    )
    .unwrap();
    // Korf's #12 (45 moves, blank-last goal): a few hundred thousand nodes with linear conflict.
    let board = "1,3,5,6,0,13,14,9,11,4,8,12,10,7,15,2";
    let submitted = scheduler
        .submit(&[board.to_string()], "linear-conflict", "")
        .unwrap();
    let worker = scheduler.register(2, "test", None).unwrap();
    let solver = Solver::new(
        Board::blank_last(4),
        tilesolve::HeuristicKind::LinearConflict,
    );
    let mut reports = Vec::new();
    while !scheduler.progress(submitted.batch).unwrap().done {
        let (tasks, _) = scheduler
            .poll(worker, 2, std::mem::take(&mut reports))
            .unwrap();
        // As the service does, once the lock is released.
        scheduler.run_deferred().unwrap();
        for task in tasks {
            let run = run_task(&solver, task.work(), None);
            reports.push(TaskReport {
                seconds: 1e-3,
                parts: run.parts,
                ..TaskReport::new(task.id, run.outcome, run.nodes)
            });
        }
    }
    let goal = Board::blank_last(4);
    let records = store
        .task_records(&goal, &parse_board(board).unwrap())
        .unwrap();
    assert!(records.iter().any(|r| !r.iterate && !r.parts.is_empty()));
    assert!(records
        .iter()
        .flat_map(|r| &r.parts)
        .all(|(moves, _, _)| moves.len() == 4));
    let puzzles = load_run(&store, submitted.batch).unwrap();
    assert_eq!(puzzles.len(), 1);
    assert_eq!(puzzles[0].length, 45);
    assert!(puzzles[0].measured_nodes > 0);
    let policy = SimulationPolicy {
        overhead_seconds: 1e-4,
        coordinator_seconds_per_task: 1e-5,
        split_seconds_per_estimate: None,
        audit_fraction: 0.25,
        heartbeat_seconds: 0.01,
        ..small_split_policy()
    };
    let one = simulate(&puzzles, &pdbs, &policy, 1).unwrap();
    let four = simulate(&puzzles, &pdbs, &policy, 4).unwrap();
    assert!(one.tasks > 1 && four.tasks >= one.tasks);
    // Splits are charged by the boards they estimate, not timed: a replay repeats exactly.
    assert!(four.split_estimates > 0);
    assert_eq!(
        four.split_seconds,
        four.split_estimates as f64 * SPLIT_SECONDS_PER_ESTIMATE_SMALL
    );
    assert_eq!(simulate(&puzzles, &pdbs, &policy, 4).unwrap(), four);
    assert!(four.makespan_seconds <= one.makespan_seconds);
    let hoarding = SimulationPolicy {
        returns: false,
        ..policy.clone()
    };
    let without_returns = simulate(&puzzles, &pdbs, &hoarding, 4).unwrap();
    let asking = SimulationPolicy {
        hand_backs: true,
        hand_back_after_seconds: 0.0,
        ..policy.clone()
    };
    let handing_back = simulate(&puzzles, &pdbs, &asking, 4).unwrap();
    for result in [&one, &four, &without_returns, &handing_back] {
        // Audits and withdrawn tasks may run on past the last answer; the answers' work may not.
        let capacity = result.workers as f64 * result.makespan_seconds;
        let answers = result.busy_seconds - result.audit_seconds - result.withdrawn_seconds;
        assert!(answers <= capacity + 1e-9, "{result:?}");
        assert!(result.predicted_seconds <= result.busy_seconds);
    }
    // One report in four searched again; cancellations at once leave nothing withdrawn.
    assert!(four.audit_seconds > 0.0, "{four:?}");
    let strict = SimulationPolicy {
        audit_fraction: 0.0,
        heartbeat_seconds: 0.0,
        ..policy
    };
    let four = simulate(&puzzles, &pdbs, &strict, 4).unwrap();
    assert_eq!((four.audit_seconds, four.withdrawn_seconds), (0.0, 0.0));
}

/// A puzzle recorded as a 10-node whole task and two split iterations of 100 and 1,299 nodes
/// (one thread meets the goal in the second's second unit), each node a microsecond. Bounds
/// this low take no children best first: one thread meets the units in the order of their
/// paths.
fn recorded_in_two_iterations() -> RecordedPuzzle {
    let root = parse_board("1,2,3,4,0,5,6,7,8").unwrap();
    let mut puzzle = RecordedPuzzle::empty(0, root, Board::blank_last(3));
    puzzle.heuristic = "linear-conflict".into();
    (puzzle.prelude_nodes, puzzle.prelude_seconds) = (10, 10e-6);
    let mut found = unit(&[1, 0], 200);
    found.found = true;
    puzzle.iterations = vec![
        Iteration {
            bound: 0,
            units: vec![unit(&[0], 40), unit(&[1], 60)],
        },
        Iteration {
            bound: 1,
            units: vec![unit(&[0, 1], 100), found, unit(&[2], 999)],
        },
    ];
    puzzle
}

/// c2d80a6's fixed budget: the whole task runs on through the iterations that fit, and the
/// iteration it ran out in is split from its start (what it searched of it is lost).
#[test]
fn a_fixed_whole_budget_runs_whole_what_fits_and_splits_the_rest() {
    let puzzle = recorded_in_two_iterations();
    let solver = Solver::new(
        Board::blank_last(3),
        tilesolve::HeuristicKind::LinearConflict,
    );
    let as_recorded = puzzle.whole_task(None, &solver);
    assert_eq!(
        (
            as_recorded.nodes,
            as_recorded.found,
            as_recorded.first_split
        ),
        (10, false, 0)
    );
    // 10 + 100 fit in 150; the second iteration runs out after 40 of its nodes.
    let spent = puzzle.whole_task(Some(150), &solver);
    assert_eq!(
        (spent.nodes, spent.found, spent.first_split),
        (150, false, 1)
    );
    assert!((spent.seconds - 150e-6).abs() < 1e-12, "{spent:?}");
    // Everything fits: one task to the goal, which one thread meets before the last unit.
    let whole = puzzle.whole_task(Some(20_000_000), &solver);
    assert_eq!(
        (whole.nodes, whole.found, whole.first_split),
        (410, true, 2)
    );
}

/// Before 719555e each worker took all it could hold: sixteen whole puzzles on fifteen workers
/// prefetching four ran on four of them, five puzzles one after another on the busiest. Served
/// idle threads first, fifteen workers run them two deep at most, and the replay says that
/// the recording (each puzzle solved whole) set that wall.
#[test]
fn workers_taking_all_they_may_hold_leave_the_rest_idle() {
    let data = tempfile::tempdir().unwrap();
    let pdbs = PdbStore::new(data.path().join("pdb"), 1);
    // Each solved by its whole task, in a second.
    let puzzles: Vec<RecordedPuzzle> = (0..16)
        .map(|index| {
            let mut puzzle =
                RecordedPuzzle::empty(index, Board::blank_last(3), Board::blank_last(3));
            puzzle.heuristic = "linear-conflict".into();
            (puzzle.prelude_nodes, puzzle.prelude_seconds) = (1_000, 1.0);
            puzzle
        })
        .collect();
    let policy = SimulationPolicy {
        prefetch: 4,
        returns: false,
        whole_task_budget: Some(20_000_000),
        prefetch_before_idle: true,
        ..small_split_policy()
    };
    let hoarded = simulate(&puzzles, &pdbs, &policy, 15).unwrap();
    assert!((hoarded.makespan_seconds - 5.0).abs() < 1e-9, "{hoarded:?}");
    let spread = SimulationPolicy {
        prefetch_before_idle: false,
        ..policy
    };
    let spread = simulate(&puzzles, &pdbs, &spread, 15).unwrap();
    assert!((spread.makespan_seconds - 2.0).abs() < 1e-9, "{spread:?}");
    // Each was solved whole in the recording: the replay says it could not split them.
    assert!(spread.granularity_limited);
}

/// A task below [0] whose units lie two moves deeper, each a second, in the order of their
/// paths, stopped 2.5 seconds in. With parts as deep as its units it keeps the two units it
/// searched and gives up the one it was in, handing back with it that unit's later sibling and
/// its parent's later sibling. With parts a move below it, it gives up the whole part [0, 2].
/// With parts deeper than its units, it cuts the unit it was in where it stood.
#[test]
fn a_task_stopped_partway_hands_back_what_it_has_not_searched() {
    let second = |path: &[u8]| Unit {
        seconds: 1.0,
        ..unit(path, 1_000)
    };
    let units = [
        second(&[0, 1, 0]),
        second(&[0, 1, 1]),
        second(&[0, 2, 0]),
        second(&[0, 2, 1]),
        second(&[0, 3, 0]),
    ];
    let searched: Vec<(usize, &Unit)> = units.iter().enumerate().collect();
    let order = |path: &[u8]| path.to_vec();
    let plan =
        |profile_depth, elapsed| hand_backs::plan(&searched, &order, 1, profile_depth, elapsed);
    let parts_as_deep = plan(2, 2.5).unwrap();
    assert_eq!(parts_as_deep.kept, vec![0, 1]);
    assert_eq!(
        parts_as_deep.paths,
        vec![vec![0, 2, 0], vec![0, 2, 1], vec![0, 3]]
    );
    assert_eq!(parts_as_deep.split_unit, None);
    let parts_above = plan(1, 2.5).unwrap();
    assert_eq!(parts_above.kept, vec![0, 1]);
    assert_eq!(parts_above.paths, vec![vec![0, 2], vec![0, 3]]);
    let parts_below = plan(4, 2.5).unwrap();
    assert_eq!(parts_below.kept, vec![0, 1]);
    assert_eq!(parts_below.paths, vec![vec![0, 2, 1], vec![0, 3]]);
    assert_eq!(parts_below.split_unit, Some((2, 0.5)));
    // In its first unit it keeps nothing; once past its last it has nothing to hand back.
    let first = plan(2, 0.5).unwrap();
    assert!(first.kept.is_empty());
    assert_eq!(
        first.paths,
        vec![vec![0, 1, 0], vec![0, 1, 1], vec![0, 2], vec![0, 3]]
    );
    assert_eq!(plan(2, 5.0), None);
    // A task that is one subtree at its own depth has nothing below it to share.
    assert_eq!(hand_backs::plan(&searched[..1], &order, 3, 4, 0.5), None);
}
