//! A puzzle's life: splits, leases, attempts, and reports judged before they count.

use super::*;

#[test]
fn split_puzzles_are_solved_optimally_stored_and_resumed() {
    let data = tempfile::tempdir().unwrap();
    let open = || {
        let config = SchedulerConfig {
            // Tiny budgets, so puzzles are split and subtrees split again.
            whole_task_budget: 2_000,
            subtree_task_budget: 3_000,
            tasks_per_thread: 8,
            ..SchedulerConfig::default()
        };
        scheduler_in(data.path(), config)
    };
    let examples = examples();
    let mut lines: Vec<String> = examples.iter().map(|(b, _)| b.clone()).collect();
    lines.insert(2, "1,2,3".into());
    let batch = {
        let mut scheduler = open();
        let submitted = scheduler.submit(&lines, "linear-conflict", "").unwrap();
        assert_eq!(
            (submitted.items, submitted.invalid, submitted.from_store),
            (7, 1, 0)
        );
        run_to_completion(&mut scheduler, submitted.batch, 3);
        scheduler.flusher().flush().unwrap();
        submitted.batch
    };
    // A new scheduler over the same files: everything is still there, and a resubmission is
    // answered from the store.
    let mut scheduler = open();
    let items = scheduler.items(batch).unwrap();
    let lengths: Vec<Option<u32>> = items
        .iter()
        .map(|i| match &i.status {
            ItemStatus::Solved(s) => Some(s.length),
            _ => None,
        })
        .collect();
    let mut expected: Vec<Option<u32>> = examples.iter().map(|(_, o)| Some(*o)).collect();
    expected.insert(2, None);
    assert_eq!(lengths, expected);
    assert!(
        matches!(&items[2].status, ItemStatus::Failed(reason) if reason.starts_with("line 3:"))
    );
    // Each item keeps its line as submitted; no solved board keeps a search state.
    for (number, (item, line)) in items.iter().zip(&lines).enumerate() {
        assert_eq!((&item.text, item.line), (line, Some(number as u32 + 1)));
    }
    for item in items.iter().filter(|i| i.board.is_some()) {
        let board = parse_board(item.board.as_deref().unwrap()).unwrap();
        let goal = parse_board(item.goal.as_deref().unwrap()).unwrap();
        assert_eq!(scheduler.store().search_state(&goal, &board).unwrap(), None);
    }
    let again = scheduler.submit(&lines, "linear-conflict", "").unwrap();
    assert_eq!(again.from_store, 6);
    assert!(scheduler.progress(again.batch).unwrap().done);
    let (board, optimal) = &examples[5];
    assert_eq!(
        scheduler.query(board, "").unwrap().map(|s| s.length),
        Some(*optimal)
    );
}

#[test]
fn expired_leases_return_to_the_queue_and_late_results_are_ignored() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            lease_timeout: Duration::from_millis(1),
            ..SchedulerConfig::default()
        },
    );
    let submitted = scheduler
        .submit(&["1,2,3,4,5,6,7,0,8".to_string()], "manhattan", "")
        .unwrap();
    let lost = scheduler.register(1, "test", None).unwrap();
    let (tasks, _) = scheduler.poll(lost, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    std::thread::sleep(Duration::from_millis(5));
    let swept = scheduler.sweep().unwrap();
    assert_eq!((swept.workers_lost, swept.tasks_requeued), (vec![lost], 1));
    let late = TaskReport::new(tasks[0].id, TaskOutcome::Found(vec![Direction::Up]), 1);
    assert!(
        matches!(
            scheduler.poll(lost, 0, vec![late.clone()]),
            Err(SchedulerError::UnknownWorker(_))
        ),
        "a forgotten worker must register again"
    );
    let again = scheduler.register(1, "test", None).unwrap();
    scheduler.poll(again, 0, vec![late]).unwrap();
    assert!(
        !scheduler.progress(submitted.batch).unwrap().done,
        "a wrong late answer from an expired lease is ignored"
    );
    std::thread::sleep(Duration::from_millis(5));
    scheduler.sweep().unwrap();
    run_to_completion(&mut scheduler, submitted.batch, 1);
    assert_eq!(
        scheduler
            .query("1,2,3,4,5,6,7,0,8", "")
            .unwrap()
            .map(|s| s.length),
        Some(1)
    );
}

#[test]
fn a_task_that_keeps_losing_its_worker_fails_its_puzzle_not_the_batch() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            lease_timeout: Duration::from_millis(1),
            ..SchedulerConfig::default()
        },
    );
    let lines = ["8,6,7,2,5,4,3,0,1".to_string()];
    let submitted = scheduler.submit(&lines, "manhattan", "").unwrap();
    let mut swept = Swept::default();
    for _ in 0..MAX_ATTEMPTS {
        let worker = scheduler.register(1, "test", None).unwrap();
        assert_eq!(scheduler.poll(worker, 1, Vec::new()).unwrap().0.len(), 1);
        std::thread::sleep(Duration::from_millis(5));
        swept = scheduler.sweep().unwrap();
    }
    assert_eq!(swept.puzzles_failed, 1);
    let progress = scheduler.progress(submitted.batch).unwrap();
    assert!(progress.done && progress.failed == 1);
    let items = scheduler.items(submitted.batch).unwrap();
    assert!(
        matches!(&items[0].status, ItemStatus::Failed(reason) if reason.contains("lost its worker 3 times")),
        "{:?}",
        items[0].status
    );
}

#[test]
fn impossible_reports_are_failed_attempts_never_answers() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    // Optimal is 31 moves; a faulty worker claims a 1-move answer, then a next bound below
    // the task's own, then a real but non-optimal path.
    let board = "8,6,7,2,5,4,3,0,1";
    let submitted = scheduler
        .submit(&[board.to_string()], "manhattan", "")
        .unwrap();
    let worker = scheduler.register(1, "test", None).unwrap();
    let (mut tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    let reports = [
        TaskOutcome::Found(vec![Direction::Up]),
        TaskOutcome::Exceeded(1),
    ];
    for report in reports {
        let task = tasks.pop().unwrap();
        tasks = scheduler
            .poll(worker, 1, vec![TaskReport::new(task.id, report, 10)])
            .unwrap()
            .0;
        assert_eq!(tasks.len(), 1, "the same task is offered again");
    }
    assert!(!scheduler.progress(submitted.batch).unwrap().done);
    // Now the real search, by the worker that holds the task.
    let task = tasks.pop().unwrap();
    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::Manhattan);
    let run = run_task(&solver, task.work(), None);
    scheduler
        .poll(
            worker,
            0,
            vec![TaskReport::new(task.id, run.outcome, run.nodes)],
        )
        .unwrap();
    // The answer's audit, which the coordinator runs itself.
    scheduler.run_deferred().unwrap();
    assert!(scheduler.progress(submitted.batch).unwrap().done);
    assert_eq!(
        scheduler.query(board, "").unwrap().map(|s| s.length),
        Some(31)
    );
}

/// A liar's cheapest wrong answer is the optimal path padded with a move and its reversal: the
/// length it claims is real, and nothing short of a second search disproves it, but the path
/// visits a board twice, which no shortest path does.
#[test]
fn a_path_padded_with_a_reversal_is_never_an_answer() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let board = "8,6,7,2,5,4,3,0,1";
    let submitted = scheduler
        .submit(&[board.to_string()], "manhattan", "")
        .unwrap();
    let worker = scheduler.register(1, "test", None).unwrap();
    let (mut tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    let task = tasks.pop().unwrap();
    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::Manhattan);
    let optimal = solver
        .solve(&task.board, &tilesolve::SolveOptions::default(), None)
        .unwrap()
        .moves;
    assert_eq!(optimal.len(), 31);
    let (after_first, _) = task.board.apply(optimal[0]).unwrap();
    let there = Direction::ALL
        .into_iter()
        .find(|&d| after_first.apply(d).is_some())
        .unwrap();
    let mut padded = vec![optimal[0], there, there.opposite()];
    padded.extend_from_slice(&optimal[1..]);
    let (tasks, _) = scheduler
        .poll(
            worker,
            1,
            vec![TaskReport::new(task.id, TaskOutcome::Found(padded), 10)],
        )
        .unwrap();
    assert_eq!(tasks.len(), 1, "the same task is offered again");
    assert!(!scheduler.progress(submitted.batch).unwrap().done);
    assert_eq!(scheduler.query(board, "").unwrap(), None);
    let run = run_task(&solver, tasks[0].work(), None);
    scheduler
        .poll(
            worker,
            0,
            vec![TaskReport::new(tasks[0].id, run.outcome, run.nodes)],
        )
        .unwrap();
    scheduler.run_deferred().unwrap();
    assert_eq!(
        scheduler.query(board, "").unwrap().map(|s| s.length),
        Some(31)
    );
}

#[test]
fn a_split_done_outside_the_lock_for_a_puzzle_that_ended_meanwhile_is_dropped() {
    let data = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        whole_task_budget: 1_000,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(data.path(), config);
    let (board, _) = examples().into_iter().next().unwrap();
    let submitted = scheduler.submit(&[board], "manhattan", "").unwrap();
    let worker = scheduler.register(1, "test", None).unwrap();
    let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    let solver = Solver::new(tasks[0].goal, tilesolve::HeuristicKind::Manhattan);
    let run = run_task(&solver, tasks[0].work(), None);
    assert!(
        matches!(run.outcome, TaskOutcome::BudgetSpent(_)),
        "a hard puzzle"
    );
    let report = TaskReport::new(tasks[0].id, run.outcome, run.nodes);
    let (leased, _) = scheduler.poll(worker, 1, vec![report]).unwrap();
    assert!(leased.is_empty(), "the next iteration is not split yet");
    // The new worker's report is audited too (on the coordinator, since no other worker is
    // connected): only the split matters here.
    let deferred = scheduler.take_deferred();
    let splits = deferred
        .into_iter()
        .filter(|work| matches!(work, Deferred::Split(_)));
    scheduler.cancel(submitted.batch).unwrap();
    let mut split_count = 0;
    for split in splits {
        split_count += 1;
        scheduler.finish_deferred(split.run()).unwrap();
    }
    assert_eq!(split_count, 1);
    assert!(
        scheduler.poll(worker, 1, Vec::new()).unwrap().0.is_empty(),
        "no tasks for a cancelled batch"
    );
}

#[test]
fn moves_that_do_not_reach_the_goal_are_a_failed_attempt_retried() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let board = "8,6,7,2,5,4,3,0,1";
    let submitted = scheduler
        .submit(&[board.to_string()], "manhattan", "")
        .unwrap();
    let worker = scheduler.register(1, "test", None).unwrap();
    let (mut tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    // Long enough for the bound, but the blank walks off the board.
    let task = tasks.pop().unwrap();
    let off_board = TaskOutcome::Found(vec![Direction::Up; 40]);
    let (mut tasks, _) = scheduler
        .poll(worker, 1, vec![TaskReport::new(task.id, off_board, 10)])
        .unwrap();
    assert_eq!(tasks.len(), 1, "the same task is offered again");
    assert!(!scheduler.progress(submitted.batch).unwrap().done);
    let task = tasks.pop().unwrap();
    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::Manhattan);
    let run = run_task(&solver, task.work(), None);
    scheduler
        .poll(
            worker,
            0,
            vec![TaskReport::new(task.id, run.outcome, run.nodes)],
        )
        .unwrap();
    scheduler.run_deferred().unwrap();
    assert_eq!(
        scheduler.query(board, "").unwrap().map(|s| s.length),
        Some(31)
    );
}

#[test]
fn reported_node_counts_and_reasons_are_bounded() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let submitted = scheduler
        .submit(&["8,6,7,2,5,4,3,0,1".to_string()], "manhattan", "")
        .unwrap();
    let worker = scheduler.register(1, "test", None).unwrap();
    let (mut tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    for _ in 0..MAX_ATTEMPTS {
        let task = tasks.pop().unwrap();
        let failed = TaskOutcome::Failed("x".repeat(1 << 20));
        tasks = scheduler
            .poll(worker, 1, vec![TaskReport::new(task.id, failed, u64::MAX)])
            .unwrap()
            .0;
    }
    assert_eq!(
        scheduler.totals().nodes,
        u64::from(MAX_ATTEMPTS) * MAX_REPORTED_NODES,
        "no counter wrapped"
    );
    let items = scheduler.items(submitted.batch).unwrap();
    let ItemStatus::Failed(reason) = &items[0].status else {
        panic!("{:?}", items[0].status);
    };
    assert!(reason.len() < MAX_REPORTED_REASON + 100, "{}", reason.len());
}

/// A split makes no more tasks than the coordinator serves while the threads search them: the
/// puzzle's measured time a node and the coordinator's time a task set how many.
#[test]
fn a_split_makes_no_more_tasks_than_the_coordinator_keeps_up_with() {
    // Tasks of the first split, with 16 one-thread workers, when the whole task's report says
    // it took a microsecond a node and the coordinator takes `coordinator_seconds_per_task`.
    let first_split = |coordinator_seconds_per_task: f64| -> (usize, u64) {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(
            data.path(),
            SchedulerConfig {
                whole_task_budget: 200_000,
                spread_task_budget: 200_000,
                min_split_nodes: 1,
                min_split_nodes_per_thread: 0,
                verify: Verify::Off,
                coordinator_seconds_per_task,
                ..SchedulerConfig::default()
            },
        );
        let (board, _) = examples()[5].clone();
        scheduler.submit(&[board], "linear-conflict", "").unwrap();
        let workers: Vec<WorkerId> = (0..16)
            .map(|_| scheduler.register(1, "test", None).unwrap())
            .collect();
        let (whole, _) = scheduler.poll(workers[0], 1, Vec::new()).unwrap();
        assert!(whole.len() == 1 && whole[0].iterate);
        let report = truthful(&whole[0]);
        let nodes = report.nodes;
        let report = TaskReport {
            seconds: nodes as f64 * 1e-6,
            ..report
        };
        scheduler.poll(workers[0], 0, vec![report]).unwrap();
        scheduler.run_deferred().unwrap();
        let (leased, _) = scheduler.poll(workers[1], 1, Vec::new()).unwrap();
        assert!(leased.iter().all(|t| !t.iterate && t.profile_depth > 0));
        let totals = scheduler.totals();
        let split = totals.tasks_queued + totals.tasks_running + totals.tasks_prefetched;
        (split as usize, nodes)
    };
    let (free, _) = first_split(0.0);
    // At 4 ms a task, 16 threads keep the coordinator within its load with tasks of at least
    // 16 x 4 / COORDINATOR_LOAD ms on average: the first split's estimate (the whole task's
    // last iteration, measured, times its growth: about four times the nodes so far, at a
    // microsecond each) fills only a few.
    let per_task = 4e-3;
    let (capped, nodes) = first_split(per_task);
    let most =
        (4.0 * nodes as f64 * 1e-6 / crate::frontier::min_mean_task_seconds(16, per_task)) as usize;
    assert!(most < 16, "{most}");
    assert!(free > 16 * 4, "{free}");
    // The smallest even depth with at least that many boards: a few moves down, not hundreds.
    assert!(
        capped >= most.max(1) && capped <= 4 * most.max(3),
        "{capped} for {most}"
    );
}

/// A puzzle's first split iteration is for the threads it shares with the batch's other
/// unfinished puzzles (`frontier::iteration_threads`): six puzzles on twelve threads are split
/// into fewer tasks each than one puzzle alone on them, and each is still solved optimally.
#[test]
fn puzzles_sharing_the_threads_are_split_for_their_share() {
    let examples = examples();
    // The subtree tasks of the first split iteration of the batch's first item.
    let first_split_tasks = |lines: &[String]| {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(
            data.path(),
            SchedulerConfig {
                whole_task_budget: 2_000,
                spread_task_budget: 2_000,
                min_split_nodes: 1,
                min_split_nodes_per_thread: 0,
                verify: Verify::Off,
                ..SchedulerConfig::default()
            },
        );
        let batch = scheduler
            .submit(lines, "linear-conflict", "")
            .unwrap()
            .batch;
        let worker = scheduler.register(12, "test", None).unwrap();
        let mut bounds: Vec<u32> = Vec::new();
        let mut results = Vec::new();
        while !scheduler.progress(batch).unwrap().done {
            let (tasks, _) = scheduler
                .poll(worker, 12, std::mem::take(&mut results))
                .unwrap();
            scheduler.run_deferred().unwrap();
            let subtrees = tasks.iter().filter(|t| !t.iterate && t.puzzle.1 == 0);
            bounds.extend(subtrees.map(|t| t.bound));
            results.extend(tasks.iter().map(truthful));
        }
        for (item, (_, optimal)) in scheduler.items(batch).unwrap().iter().zip(&examples) {
            assert!(
                matches!(&item.status, ItemStatus::Solved(s) if s.length == *optimal),
                "{:?}",
                item.status
            );
        }
        let first = bounds.iter().min().copied().unwrap();
        bounds.iter().filter(|&&b| b == first).count()
    };
    let all: Vec<String> = examples.iter().map(|(board, _)| board.clone()).collect();
    let alone = first_split_tasks(&all[..1]);
    let shared = first_split_tasks(&all);
    // Alone it is split for all twelve threads (296 tasks here); among six, for a third of
    // them (68).
    assert!(alone > 150, "{alone}");
    assert!(
        shared < alone / 2,
        "{shared} tasks among six, {alone} alone"
    );
}
