//! The scheduler driven directly, with the real kernel standing in for workers.
use super::*;
use crate::store::ItemStatus;
use std::time::Duration;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::PdbEvent;
use tilesolve::proto::MAX_BATCH_LINES;
use tilesolve::task::run_task;
use tilesolve::Direction;

/// A scheduler over a store and pattern databases in `dir` (reopened if already there).
fn scheduler_in(dir: &std::path::Path, config: SchedulerConfig) -> Scheduler {
    let store = crate::store::reopen(&dir.join("store"));
    Scheduler::new(store, PdbStore::new(dir.join("pdb"), 1), config).unwrap()
}

/// Drives a scheduler with `threads` simulated worker threads running the real kernel.
fn run_to_completion(scheduler: &mut Scheduler, batch: u64, threads: u32) {
    let worker = scheduler.register(threads, "test").unwrap();
    work_until_done(scheduler, worker, threads, batch, Vec::new());
}

/// Has `worker` run up to `slots` tasks a poll truthfully with the real kernel (linear
/// conflict), reporting `results` first, until `batch` is done.
fn work_until_done(
    scheduler: &mut Scheduler,
    worker: WorkerId,
    slots: u32,
    batch: u64,
    mut results: Vec<TaskReport>,
) {
    for _ in 0..1_000_000 {
        if scheduler.progress(batch).unwrap().done {
            return;
        }
        let (tasks, _) = scheduler
            .poll(worker, slots, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        results.extend(tasks.iter().map(truthful));
    }
    panic!("batch {batch} did not finish");
}

fn examples() -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/examples15.txt"
    ))
    .unwrap();
    tilesolve::batch_file::board_lines(&text)
        .take(6)
        .map(|l| {
            (
                l.board.to_string(),
                l.fact("optimal").unwrap().parse().unwrap(),
            )
        })
        .collect()
}

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
        assert_eq!(scheduler.store.search_state(&goal, &board).unwrap(), None);
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
    let lost = scheduler.register(1, "test").unwrap();
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
    let again = scheduler.register(1, "test").unwrap();
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
        let worker = scheduler.register(1, "test").unwrap();
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
    let worker = scheduler.register(1, "test").unwrap();
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
    let worker = scheduler.register(1, "test").unwrap();
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
fn a_cancelled_batch_withdraws_its_tasks() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines: Vec<String> = examples().into_iter().map(|(b, _)| b).collect();
    let submitted = scheduler.submit(&lines, "manhattan", "").unwrap();
    let worker = scheduler.register(1, "test").unwrap();
    let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    let progress = scheduler.cancel(submitted.batch).unwrap();
    assert!(progress.done);
    assert_eq!(progress.failed, lines.len() as u32);
    assert_eq!(
        scheduler.heartbeat(worker, &[tasks[0].id]).unwrap(),
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
    let stored = scheduler.store.batch(finished).unwrap().unwrap();
    assert!(
        !stored.cancelled,
        "a finished batch is never marked cancelled"
    );

    // A running batch: its answered item stays answered, the rest fail as cancelled.
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
    assert_eq!((progress.solved, progress.failed), (1, 1));
    assert!(matches!(
        scheduler.items(running).unwrap()[0].status,
        ItemStatus::Solved(_)
    ));
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
fn moves_that_do_not_reach_the_goal_are_a_failed_attempt_retried() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let board = "8,6,7,2,5,4,3,0,1";
    let submitted = scheduler
        .submit(&[board.to_string()], "manhattan", "")
        .unwrap();
    let worker = scheduler.register(1, "test").unwrap();
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
    let worker = scheduler.register(1, "test").unwrap();
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
        Scheduler::prepare(&pdbs, &lines, "pdb:5-5-5", "", u64::MAX, &count).unwrap();
    }
    assert_eq!(*builds.lock().unwrap(), 0);
    Scheduler::prepare(&pdbs, &[solvable], "pdb:5-5-5", "", u64::MAX, &count).unwrap();
    assert!(
        *builds.lock().unwrap() > 0,
        "a batch with a valid board builds"
    );
}

/// `count` distinct 8-puzzles other than the goal, met on a random walk from it (`seed` picks
/// the walk).
fn distinct_eight_puzzles(count: usize, seed: u64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut board = tilesolve::Board::blank_last(3);
    let mut seen = std::collections::HashSet::new();
    let mut state = seed;
    while lines.len() < count {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        if let Some((next, _)) = board.apply(Direction::ALL[(state >> 33) as usize % 4]) {
            board = next;
            if seen.insert(board) && board != tilesolve::Board::blank_last(3) {
                lines.push(board.to_string());
            }
        }
    }
    lines
}

#[test]
fn a_worker_holds_at_most_its_threads_times_prefetch_however_often_it_asks() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    // 60 distinct 8-puzzles: 60 whole-puzzle tasks in the queue.
    let lines = distinct_eight_puzzles(60, 7);
    scheduler.submit(&lines, "manhattan", "").unwrap();
    assert!(
        matches!(
            scheduler.register(MAX_WORKER_THREADS + 1, "greedy"),
            Err(SchedulerError::InvalidArgument(_))
        ),
        "more threads than any machine has is refused"
    );
    let greedy = scheduler.register(2, "greedy").unwrap();
    let limit = 2 * (1 + MAX_PREFETCH) as usize;
    let mut held = 0;
    for _ in 0..5 {
        held += scheduler
            .poll(greedy, u32::MAX, Vec::new())
            .unwrap()
            .0
            .len();
        scheduler.heartbeat(greedy, &[]).unwrap();
    }
    assert_eq!(
        held, limit,
        "asking again never goes past 2 threads x (1 + prefetch)"
    );
    let honest = scheduler.register(1, "honest").unwrap();
    let (tasks, _) = scheduler.poll(honest, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1, "the queue is not all leased to one worker");
}

#[test]
fn a_worker_whose_tasks_are_short_holds_many_unless_its_times_are_impossible() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = distinct_eight_puzzles(3000, 11);
    scheduler.submit(&lines, "manhattan", "").unwrap();
    let unpacked = 1 + MAX_PREFETCH as usize;
    // Each worker runs what it is given and reports it with the time it claims, asking for all
    // it may hold; returns the most it ever held.
    let mut run = |name: &str, seconds: f64| {
        let worker = scheduler.register(1, name).unwrap();
        let (mut held, mut most, mut results) = (Vec::new(), 0, Vec::new());
        for _ in 0..80 {
            let (tasks, _) = scheduler.poll(worker, u32::MAX, results).unwrap();
            held.extend(tasks);
            most = most.max(held.len());
            results = held
                .drain(..)
                .map(|task: TaskSpec| {
                    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::Manhattan);
                    let run = run_task(&solver, task.work(), None);
                    TaskReport {
                        seconds,
                        ..TaskReport::new(task.id, run.outcome, run.nodes.max(1))
                    }
                })
                .collect();
        }
        most
    };
    assert_eq!(
        run("instant", 0.0),
        unpacked,
        "no time is no reason to pack"
    );
    assert_eq!(
        run("faster than light", 1e-12),
        unpacked,
        "nor an impossible one"
    );
    assert_eq!(run("slow", 1.0), unpacked);
    let packed = run("quick", 0.001);
    assert!(
        packed > unpacked && packed <= MAX_PACKED_HELD,
        "0.05 s of 1 ms tasks: {packed}"
    );
}

/// How a lying worker answers a task it ran for real: longer paths for whole puzzles, raised
/// bounds that hide the answers of subtrees, moves off the board now and then; as an auditor
/// it never finds anything.
fn lie(task: &TaskSpec, truth: TaskOutcome, told: usize) -> TaskOutcome {
    if told % 7 == 3 {
        return TaskOutcome::Found(vec![Direction::Up; 40]);
    }
    match truth {
        TaskOutcome::Found(mut moves) if task.iterate => {
            let detour = Direction::ALL
                .into_iter()
                .find(|&d| {
                    tilesolve::moves::replay(&task.board, &task.goal, &[d, d.opposite()]).is_err()
                        && task.board.apply(d).is_some()
                })
                .unwrap_or(Direction::Up);
            moves.splice(0..0, [detour, detour.opposite()]);
            TaskOutcome::Found(moves)
        }
        TaskOutcome::Found(_) => TaskOutcome::Exceeded(task.bound + 2),
        TaskOutcome::Exceeded(next) => TaskOutcome::Exceeded(next + 2),
        TaskOutcome::BudgetSpent(at) => TaskOutcome::BudgetSpent(at + 2),
        other => other,
    }
}

/// Under the default, `--verify sample`: a worker that lies about every task is caught on probation
/// (its claims are cheap) and nothing it told stays stored.
#[test]
fn a_lying_worker_is_caught_and_every_stored_answer_is_optimal() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: 2_000,
            subtree_task_budget: 3_000,
            tasks_per_thread: 8,
            ..SchedulerConfig::default()
        },
    );
    let mut boards = examples();
    boards.push(("8,6,7,2,5,4,3,0,1".into(), 31));
    boards.push(("6,4,7,8,5,0,3,2,1".into(), 31));
    boards.push(("1,2,3,4,5,6,0,7,8".into(), 2));
    let lines: Vec<String> = boards.iter().map(|(b, _)| b.clone()).collect();
    let batch = scheduler
        .submit(&lines, "linear-conflict", "")
        .unwrap()
        .batch;
    let honest = scheduler.register(2, "honest").unwrap();
    let mut liar = scheduler.register(2, "liar").unwrap();
    let (mut honest_results, mut liar_results) = (Vec::new(), Vec::new());
    let (mut told, mut liars) = (0, 1);
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            break;
        }
        match scheduler.poll(liar, 2, std::mem::take(&mut liar_results)) {
            Ok((tasks, _)) => {
                for task in tasks {
                    let truth = run_linear_conflict(&task);
                    told += 1;
                    let outcome = lie(&task, truth.outcome, told);
                    liar_results.push(TaskReport::new(task.id, outcome, truth.nodes));
                }
            }
            // Quarantined: it comes back as a new worker, as a persistent liar would.
            Err(SchedulerError::PermissionDenied(_)) if liars < 3 => {
                liar = scheduler.register(2, "liar").unwrap();
                liars += 1;
            }
            Err(SchedulerError::PermissionDenied(_)) => {}
            Err(error) => panic!("{error}"),
        }
        let (tasks, _) = scheduler
            .poll(honest, 2, std::mem::take(&mut honest_results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        for task in tasks {
            let truth = run_linear_conflict(&task);
            honest_results.push(TaskReport {
                parts: truth.parts,
                ..TaskReport::new(task.id, truth.outcome, truth.nodes)
            });
        }
        scheduler.sweep().unwrap();
    }
    let progress = scheduler.progress(batch).unwrap();
    assert!(
        progress.done && progress.solved == boards.len() as u32,
        "{progress:?} {:?}",
        scheduler.totals()
    );
    let totals = scheduler.totals();
    // Strikes (moves off the board) make the quarantine certain. A disproof is likely but not
    // certain: only claims a shorter path refutes can be disproved, and which claims are made
    // and audited depends on the lease order and the audit draw (1 run in about 15 saw none).
    assert!(totals.workers_quarantined >= 1, "{totals:?}");
    // The default, `--verify sample`: no answer waited for the claims it rests on to be
    // checked; the liar's lies were withdrawn when it was caught.
    assert_eq!(totals.answer_audits, 0, "{totals:?}");
    for (item, (board, optimal)) in scheduler.items(batch).unwrap().iter().zip(&boards) {
        let ItemStatus::Solved(solved) = &item.status else {
            panic!("{board}: {:?}", item.status);
        };
        assert_eq!(solved.length, *optimal, "{board}");
        assert_eq!(
            scheduler.query(board, "").unwrap().map(|s| s.length),
            Some(*optimal),
            "{board}"
        );
    }
}

#[test]
fn a_finished_batch_leaves_memory_and_its_figures_stay_answerable() {
    let data = tempfile::tempdir().unwrap();
    let lines = ["8,6,7,2,5,4,3,0,1".to_string(), "1,2,3".to_string()];
    let (batch, figures) = {
        let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
        let batch = scheduler.submit(&lines, "manhattan", "").unwrap().batch;
        assert!(
            scheduler.batches.counts(batch).is_some(),
            "open while it runs"
        );
        run_to_completion(&mut scheduler, batch, 1);
        assert_eq!(
            scheduler.batches.counts(batch),
            None,
            "nothing kept once done"
        );
        let progress = scheduler.progress(batch).unwrap();
        assert!(progress.done && progress.solved == 1 && progress.failed == 1);
        assert!(progress.nodes > 0);
        // A batch answered wholly from the store is closed as it is acknowledged.
        let again = scheduler.submit(&lines, "manhattan", "").unwrap().batch;
        assert_eq!(scheduler.batches.counts(again), None);
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
    let worker = scheduler.register(1, "holder").unwrap();
    let key = (
        Board::blank_last(4),
        "pdb:5-5-5".parse::<HeuristicChoice>().unwrap(),
    );
    let files: Vec<(String, u64)> = scheduler
        .missing_tables(&key)
        .unwrap()
        .iter()
        .map(|spec| (spec.file_name(), 7))
        .collect();
    assert_eq!(files.len(), 3);
    scheduler.set_worker_tables(worker, &files);
    assert_eq!(scheduler.table_holders(&files[0].0), vec![(worker, 7)]);
    let submitted = scheduler.submit(&lines, "pdb:5-5-5", "").unwrap();
    assert!(scheduler.is_waiting(submitted.batch));
    assert_eq!(
        scheduler.table_needs(),
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
    assert!(scheduler.is_waiting(submitted.batch));

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
    assert!(!scheduler.is_waiting(submitted.batch));
    run_to_completion(&mut scheduler, submitted.batch, 1);
    assert_eq!(first_answer_length(&scheduler, submitted.batch), 1);
}

#[test]
fn a_cancelled_batch_that_waits_for_tables_ends_at_once() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = vec!["1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15".to_string()];
    let submitted = scheduler.submit(&lines, "pdb:5-5-5", "").unwrap();
    assert!(scheduler.is_waiting(submitted.batch));
    let progress = scheduler.cancel(submitted.batch).unwrap();
    assert!(progress.done && progress.failed == 1, "{progress:?}");
    assert!(!scheduler.is_waiting(submitted.batch));
    assert_eq!(scheduler.totals().puzzles_pending, 0);
}

/// The length of the answer stored for `batch`'s first item, which must be solved.
fn first_answer_length(scheduler: &Scheduler, batch: u64) -> u32 {
    let items = scheduler.items(batch).unwrap();
    match &items[0].status {
        ItemStatus::Solved(solution) => solution.length,
        other => panic!("{other:?}"),
    }
}

/// The kernel's truthful run of `task`, with linear conflict.
fn run_linear_conflict(task: &TaskSpec) -> tilesolve::task::TaskRun {
    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::LinearConflict);
    run_task(&solver, task.work(), None)
}

/// What an honest worker reports for `task`: the real kernel's run (linear conflict), with
/// the parts it measured. Every simulated worker in these tests reports through it.
fn truthful(task: &TaskSpec) -> TaskReport {
    let run = run_linear_conflict(task);
    TaskReport {
        parts: run.parts,
        ..TaskReport::new(task.id, run.outcome, run.nodes)
    }
}

/// A lie told: `board` (optimal in `optimal` moves) submitted as one whole task, which a liar
/// answers two moves too long while an honest worker stands by to audit it.
struct ToldLie {
    scheduler: Scheduler,
    batch: u64,
    liar: WorkerId,
    honest: WorkerId,
    /// How the scheduler took the liar's poll with the lie.
    reported: Result<(), SchedulerError>,
}

fn tell_a_lie(dir: &std::path::Path, board: &str, optimal: usize) -> ToldLie {
    let config = SchedulerConfig {
        whole_task_budget: u64::MAX / 4,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(dir, config);
    let batch = scheduler
        .submit(&[board.to_string()], "linear-conflict", "")
        .unwrap()
        .batch;
    let liar = scheduler.register(1, "liar").unwrap();
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let truth = run_linear_conflict(&tasks[0]);
    let lied = lie(&tasks[0], truth.outcome, 1);
    assert!(matches!(&lied, TaskOutcome::Found(moves) if moves.len() == optimal + 2));
    // Another worker is there to audit (with none, an audit is skipped).
    let honest = scheduler.register(1, "honest").unwrap();
    let reports = vec![TaskReport::new(tasks[0].id, lied, truth.nodes)];
    let reported = scheduler.poll(liar, 0, reports).map(|_| ());
    ToldLie {
        scheduler,
        batch,
        liar,
        honest,
        reported,
    }
}

#[test]
fn an_audit_disproves_a_path_two_moves_too_long_and_quarantines_its_worker() {
    let data = tempfile::tempdir().unwrap();
    // 31 moves, far past its linear-conflict estimate: the whole task iterates, so its answer
    // claims that nothing shorter exists below the board.
    let ToldLie {
        mut scheduler,
        batch,
        liar,
        honest,
        reported,
    } = tell_a_lie(data.path(), "8,6,7,2,5,4,3,0,1", 31);
    assert!(matches!(
        reported,
        Ok(()) | Err(SchedulerError::PermissionDenied(_))
    ));
    assert!(
        !scheduler.progress(batch).unwrap().done,
        "the answer waits for its audit"
    );

    work_until_done(&mut scheduler, honest, 1, batch, Vec::new());
    let totals = scheduler.totals();
    assert_eq!(totals.audits_disproved, 1, "{totals:?}");
    assert_eq!(totals.workers_quarantined, 1, "{totals:?}");
    assert!(matches!(
        scheduler.poll(liar, 1, Vec::new()),
        Err(SchedulerError::PermissionDenied(_))
    ));
    assert_eq!(first_answer_length(&scheduler, batch), 31);
}

#[test]
fn an_audit_that_spends_its_budget_goes_on_in_its_children_and_disproves_the_lie() {
    let data = tempfile::tempdir().unwrap();
    // A 15-puzzle: searching it again under one move short of a lie takes more nodes than the
    // kernel runs between looks at its budget (4096).
    let (board, optimal) = examples().swap_remove(0);
    let ToldLie {
        mut scheduler,
        batch,
        honest,
        reported,
        ..
    } = tell_a_lie(data.path(), &board, optimal as usize);
    assert!(reported.is_ok());
    // The honest worker's first task is the audit, and it runs out of nodes (as a real one
    // does on a larger board): it comes back as its children, not as "nothing found".
    let (tasks, _) = scheduler.poll(honest, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let starved = run_linear_conflict(&TaskSpec {
        node_budget: 1,
        ..tasks[0].clone()
    });
    assert!(
        matches!(starved.outcome, TaskOutcome::Split { .. }),
        "{starved:?}"
    );
    let starved = vec![TaskReport::new(tasks[0].id, starved.outcome, starved.nodes)];
    work_until_done(&mut scheduler, honest, 4, batch, starved);
    let totals = scheduler.totals();
    assert_eq!(totals.audits_disproved, 1, "{totals:?}");
    assert_eq!(totals.workers_quarantined, 1, "{totals:?}");
    assert_eq!(
        first_answer_length(&scheduler, batch),
        optimal,
        "the lie never stands"
    );
}

/// `count` 3x3 boards a few random moves from the goal (deterministic).
fn walked_boards(count: usize) -> Vec<String> {
    let goal = Board::blank_last(3);
    let mut seed = 19u64;
    (0..count)
        .map(|_| {
            let mut board = goal;
            for _ in 0..12 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let direction = Direction::ALL[(seed >> 62) as usize];
                board = board.apply(direction).map_or(board, |(next, _)| next);
            }
            board.to_string()
        })
        .collect()
}

#[test]
fn a_batch_is_taken_in_parts_and_its_first_part_is_solved_before_the_rest_is_stored() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = walked_boards(2 * intake::INTAKE_PART + 10);
    let store = scheduler.store_reader();
    let read = Scheduler::read_batch(&store, &lines, "manhattan", "").unwrap();
    let mut intake = scheduler.open_batch(read).unwrap();
    let batch = intake.batch();
    assert!(intake.store_part(&store).unwrap());
    assert!(!scheduler.start_part(&mut intake).unwrap());
    // The first part is solved while the rest is not stored yet (and the batch has no record).
    let worker = scheduler.register(4, "test").unwrap();
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
    let store = scheduler.store_reader();
    let read = Scheduler::read_batch(&store, &lines, "manhattan", "").unwrap();
    let mut intake = scheduler.open_batch(read).unwrap();
    // Counted while it is taken in: nothing more fits.
    assert!(scheduler.check_capacity(1).is_err());
    assert!(intake.store_part(&store).unwrap());
    scheduler.start_part(&mut intake).unwrap();
    scheduler.abandon(&intake);
    // Its started puzzles are gone with their tasks, and it no longer counts.
    let worker = scheduler.register(1, "test").unwrap();
    assert!(scheduler.poll(worker, 8, Vec::new()).unwrap().0.is_empty());
    scheduler.check_capacity(limit).unwrap();
    assert!(scheduler.progress(intake.batch()).is_err());
}

/// A scheduler under `--verify full` whose draw never picks a report once a worker is past
/// probation (audits on, at a share no test reaches): what stops a lie then is the full check.
fn past_probation_setup(dir: &std::path::Path, config: SchedulerConfig) -> Scheduler {
    scheduler_in(
        dir,
        SchedulerConfig {
            audit_fraction: 1e-15,
            verify: Verify::Full,
            ..config
        },
    )
}

/// Has `liar` earn its way past probation on true answers, each claiming that nothing shorter
/// exists, which `honest`'s audits uphold. Returns what `honest` has yet to report.
fn earn_trust(scheduler: &mut Scheduler, liar: WorkerId, honest: WorkerId) -> Vec<TaskReport> {
    let warm_up = scheduler
        .submit(&distinct_eight_puzzles(40, 7), "linear-conflict", "")
        .unwrap()
        .batch;
    let truthful = |_: &TaskSpec, outcome: TaskOutcome| outcome;
    let (mut liar_results, mut honest_results) = (Vec::new(), Vec::new());
    while !scheduler.progress(warm_up).unwrap().done {
        let (tasks, _) = scheduler
            .poll(liar, 1, std::mem::take(&mut liar_results))
            .unwrap();
        liar_results = answer(tasks, &truthful);
        scheduler.run_deferred().unwrap();
        let (tasks, _) = scheduler
            .poll(honest, 1, std::mem::take(&mut honest_results))
            .unwrap();
        honest_results = answer(tasks, &truthful);
    }
    scheduler.poll(liar, 0, liar_results).unwrap();
    assert!(
        !scheduler.workers.on_probation(liar),
        "{:?}",
        scheduler.totals()
    );
    honest_results
}

/// Runs `tasks` as `worker` truthfully, except as `tell` rewrites an outcome.
fn answer(
    tasks: Vec<TaskSpec>,
    tell: &dyn Fn(&TaskSpec, TaskOutcome) -> TaskOutcome,
) -> Vec<TaskReport> {
    tasks
        .into_iter()
        .map(|task| {
            let run = run_linear_conflict(&task);
            TaskReport {
                parts: run.parts,
                ..TaskReport::new(task.id, tell(&task, run.outcome), run.nodes)
            }
        })
        .collect()
}

/// `moves` with a step out and back first, from `board` (not undoing `after`).
fn with_detour(
    board: &Board,
    after: Option<Direction>,
    mut moves: Vec<Direction>,
) -> Vec<Direction> {
    let detour = Direction::ALL
        .into_iter()
        .find(|&d| board.apply(d).is_some() && after.is_none_or(|last| last.opposite() != d))
        .unwrap();
    moves.splice(0..0, [detour, detour.opposite()]);
    moves
}

/// Submits a 31-move 8-puzzle that `liar` takes as a whole task and answers in 33 moves (a
/// step out and back first); the answer waits for its audit. Returns the batch.
fn answer_31_moves_in_33(scheduler: &mut Scheduler, liar: WorkerId) -> u64 {
    let batch = scheduler
        .submit(&["8,6,7,2,5,4,3,0,1".to_string()], "linear-conflict", "")
        .unwrap()
        .batch;
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let lie = |task: &TaskSpec, outcome: TaskOutcome| match outcome {
        TaskOutcome::Found(moves) => TaskOutcome::Found(with_detour(&task.board, None, moves)),
        other => other,
    };
    let lied = answer(tasks, &lie);
    scheduler.poll(liar, 0, lied).unwrap();
    assert!(
        !scheduler.progress(batch).unwrap().done,
        "the answer waits for its audit"
    );
    batch
}

#[test]
fn a_liar_past_probation_cannot_lengthen_a_whole_task_answer_unseen() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = past_probation_setup(
        data.path(),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            ..SchedulerConfig::default()
        },
    );
    let liar = scheduler.register(1, "liar").unwrap();
    let honest = scheduler.register(1, "honest").unwrap();
    let honest_results = earn_trust(&mut scheduler, liar, honest);
    let answer_audits = scheduler.totals().answer_audits;
    // Now a lie no draw picks.
    let batch = answer_31_moves_in_33(&mut scheduler, liar);
    assert_eq!(scheduler.totals().answer_audits, answer_audits + 1);
    work_until_done(&mut scheduler, honest, 1, batch, honest_results);
    let totals = scheduler.totals();
    assert_eq!(totals.audits_disproved, 1, "{totals:?}");
    assert_eq!(totals.workers_quarantined, 1, "{totals:?}");
    assert_eq!(first_answer_length(&scheduler, batch), 31);
}

#[test]
fn a_liar_past_probation_cannot_hide_a_subtree_answer_unseen() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = past_probation_setup(
        data.path(),
        SchedulerConfig {
            whole_task_budget: 2_000,
            subtree_task_budget: 0,
            tasks_per_thread: 8,
            ..SchedulerConfig::default()
        },
    );
    let liar = scheduler.register(64, "liar").unwrap();
    let honest = scheduler.register(1, "honest").unwrap();
    let mut honest_results = earn_trust(&mut scheduler, liar, honest);
    let answer_audits = scheduler.totals().answer_audits;
    let (board, optimal) = examples().swap_remove(0);
    let batch = scheduler
        .submit(std::slice::from_ref(&board), "linear-conflict", "")
        .unwrap()
        .batch;
    // The liar asks for more than there is, so it runs every search task; the honest worker
    // gets only what the liar may not run: audits of the liar's claims.
    // It tells the truth but for the answer: at the optimal bound it says there is nothing
    // (raising the bound), and at the next one it answers with a detour.
    let lie = |task: &TaskSpec, outcome: TaskOutcome| match outcome {
        TaskOutcome::Found(_) if !task.iterate && task.bound == optimal => {
            TaskOutcome::Exceeded(optimal + 2)
        }
        TaskOutcome::Found(moves)
            if !task.iterate && (task.path.len() + moves.len()) as u32 == optimal =>
        {
            TaskOutcome::Found(with_detour(&task.board, task.path.last().copied(), moves))
        }
        other => other,
    };
    let truthful = |_: &TaskSpec, outcome: TaskOutcome| outcome;
    let mut liar_results = Vec::new();
    let mut quarantined = false;
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            break;
        }
        if !quarantined {
            match scheduler.poll(liar, 10_000, std::mem::take(&mut liar_results)) {
                Ok((tasks, _)) => liar_results = answer(tasks, &lie),
                Err(SchedulerError::PermissionDenied(_)) => quarantined = true,
                Err(error) => panic!("{error}"),
            }
        }
        scheduler.run_deferred().unwrap();
        let (tasks, _) = scheduler
            .poll(honest, 1, std::mem::take(&mut honest_results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        honest_results = answer(tasks, &truthful);
    }
    let totals = scheduler.totals();
    assert!(scheduler.progress(batch).unwrap().done, "{totals:?}");
    assert!(totals.answer_audits > answer_audits, "{totals:?}");
    assert_eq!(totals.audits_disproved, 1, "{totals:?}");
    assert_eq!(totals.workers_quarantined, 1, "{totals:?}");
    assert_eq!(
        first_answer_length(&scheduler, batch),
        optimal,
        "the hidden answer is found again"
    );
}

#[test]
fn the_coordinator_audits_a_lone_workers_claims_itself() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            ..SchedulerConfig::default()
        },
    );
    // A lone liar: nobody else could audit it.
    let liar = scheduler.register(1, "liar").unwrap();
    let batch = answer_31_moves_in_33(&mut scheduler, liar);
    scheduler.run_deferred().unwrap();
    let totals = scheduler.totals();
    assert_eq!(
        (
            totals.audits_skipped,
            totals.audits_disproved,
            totals.workers_quarantined
        ),
        (0, 1, 1),
        "{totals:?}"
    );
    // An honest worker solves it again, and its answer, audited the same way, stands.
    let honest = scheduler.register(1, "honest").unwrap();
    work_until_done(&mut scheduler, honest, 1, batch, Vec::new());
    let totals = scheduler.totals();
    assert_eq!(
        (totals.audits_skipped, totals.audits_upheld),
        (0, 1),
        "{totals:?}"
    );
    assert_eq!(first_answer_length(&scheduler, batch), 31);
}

#[test]
fn registrations_under_one_token_never_audit_each_other() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            ..SchedulerConfig::default()
        },
    );
    // Two registrations of one token holder: each would uphold the other's lie.
    let liar = scheduler.register_with_token(1, "liar", 0).unwrap();
    let accomplice = scheduler.register_with_token(1, "accomplice", 0).unwrap();
    let batch = answer_31_moves_in_33(&mut scheduler, liar);
    let (tasks, _) = scheduler.poll(accomplice, 4, Vec::new()).unwrap();
    assert!(
        tasks.is_empty(),
        "the accomplice is given the audit: {tasks:?}"
    );
    scheduler.run_deferred().unwrap();
    let totals = scheduler.totals();
    assert_eq!(
        (totals.audits_disproved, totals.workers_quarantined),
        (1, 1),
        "the coordinator audits the claim itself: {totals:?}"
    );
    // A worker under another token may audit the accomplice's reports: its claims go to it
    // as tasks. Once the accomplice leaves, the coordinator audits the newcomer's.
    let other = scheduler.register_with_token(1, "other", 1).unwrap();
    let (tasks, _) = scheduler.poll(accomplice, 1, Vec::new()).unwrap();
    let reports = answer(tasks, &|_, outcome| outcome);
    scheduler.poll(accomplice, 0, reports).unwrap();
    let (audits, _) = scheduler.poll(other, 4, Vec::new()).unwrap();
    assert!(
        audits.iter().any(|task| !task.iterate),
        "the accomplice's claim is audited by the other token's worker: {audits:?}"
    );
    scheduler.leave(accomplice).unwrap();
    let reports = answer(audits, &|_, outcome| outcome);
    work_until_done(&mut scheduler, other, 1, batch, reports);
    assert_eq!(first_answer_length(&scheduler, batch), 31);
}

#[test]
fn a_report_claiming_a_huge_search_is_audited_all_the_same() {
    let data = tempfile::tempdir().unwrap();
    // Under `full` (under `sample`, a claim's size decides whether probation checks it: that
    // mode guards against faults, not against a liar choosing what it reports).
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            verify: Verify::Full,
            ..SchedulerConfig::default()
        },
    );
    let liar = scheduler.register(1, "liar").unwrap();
    let batch = scheduler
        .submit(&["8,6,7,2,5,4,3,0,1".to_string()], "linear-conflict", "")
        .unwrap()
        .batch;
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new()).unwrap();
    let lie = |task: &TaskSpec, outcome: TaskOutcome| match outcome {
        TaskOutcome::Found(moves) => TaskOutcome::Found(with_detour(&task.board, None, moves)),
        other => other,
    };
    let lied: Vec<TaskReport> = answer(tasks, &lie)
        .into_iter()
        .map(|report| TaskReport {
            nodes: 50_000_000,
            ..report
        })
        .collect();
    scheduler.poll(liar, 0, lied).unwrap();
    let long: Vec<Deferred> = scheduler.take_deferred();
    assert!(
        long.iter().any(Deferred::is_long),
        "a big claim is audited on the coordinator's background pool"
    );
    for work in long {
        scheduler.finish_deferred(work.run()).unwrap();
    }
    scheduler.run_deferred().unwrap();
    let totals = scheduler.totals();
    assert_eq!(
        (totals.audits_disproved, totals.workers_quarantined),
        (1, 1),
        "{totals:?}"
    );
    assert!(!scheduler.progress(batch).unwrap().done, "solved again");
}

#[test]
fn an_audit_no_worker_takes_within_a_lease_timeout_runs_on_the_coordinator() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            lease_timeout: Duration::from_millis(50),
            ..SchedulerConfig::default()
        },
    );
    let liar = scheduler.register_with_token(1, "liar", 0).unwrap();
    // Another token's registration that heartbeats and never asks for work.
    let silent = scheduler.register_with_token(1, "silent", 1).unwrap();
    answer_31_moves_in_33(&mut scheduler, liar);
    assert!(
        scheduler.take_deferred().is_empty(),
        "queued for the silent one"
    );
    std::thread::sleep(Duration::from_millis(60));
    scheduler.heartbeat(silent, &[]).unwrap();
    scheduler.heartbeat(liar, &[]).unwrap();
    scheduler.sweep().unwrap();
    scheduler.run_deferred().unwrap();
    let totals = scheduler.totals();
    assert_eq!(
        (
            totals.audits_skipped,
            totals.audits_disproved,
            totals.workers_quarantined
        ),
        (0, 1, 1),
        "{totals:?}"
    );
}

/// Has `honest` run one task a poll truthfully until `batch` is done, with `beside` (another
/// worker's conduct) first in each round and a sweep after it (leases expire; audits nobody
/// took go to the coordinator). Returns whether `beside` ever returned true.
fn work_beside(
    scheduler: &mut Scheduler,
    honest: WorkerId,
    batch: u64,
    mut beside: impl FnMut(&mut Scheduler) -> bool,
) -> bool {
    let (mut results, mut said) = (Vec::new(), false);
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            return said;
        }
        said |= beside(scheduler);
        let (tasks, _) = scheduler
            .poll(honest, 1, std::mem::take(&mut results))
            .unwrap();
        results.extend(tasks.iter().map(truthful));
        std::thread::sleep(Duration::from_millis(1));
        scheduler.sweep().unwrap();
        scheduler.run_deferred().unwrap();
    }
    panic!("batch {batch} did not finish");
}

#[test]
fn a_registration_declaring_many_threads_holds_only_what_it_has_earned() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            lease_timeout: Duration::from_millis(50),
            ..SchedulerConfig::default()
        },
    );
    let batch = scheduler
        .submit(&distinct_eight_puzzles(60, 7), "manhattan", "")
        .unwrap()
        .batch;
    let hog = scheduler.register(1024, "hog").unwrap();
    let honest = scheduler.register(1, "honest").unwrap();
    let (held, _) = scheduler.poll(hog, 1024, Vec::new()).unwrap();
    assert_eq!(
        held.len(),
        workers::FIRST_LEASES,
        "1,024 threads declared, none shown"
    );
    // It never runs them: its leases expire and the honest worker does everything (the
    // sweep also hands the coordinator the audits that waited for the hog, which never polls).
    work_beside(&mut scheduler, honest, batch, |scheduler| {
        scheduler.heartbeat(hog, &[]).unwrap();
        false
    });
    let progress = scheduler.progress(batch).unwrap();
    assert_eq!((progress.solved, progress.failed), (60, 0));
}

#[test]
fn a_worker_whose_reports_keep_failing_is_shut_out_and_its_failures_retried_elsewhere() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let batch = scheduler
        .submit(&distinct_eight_puzzles(20, 11), "manhattan", "")
        .unwrap()
        .batch;
    let honest = scheduler.register(1, "honest").unwrap();
    let erring = scheduler.register(1, "erring").unwrap();
    let (tasks, _) = scheduler.poll(honest, 1, Vec::new()).unwrap();
    let reports: Vec<TaskReport> = tasks.iter().map(truthful).collect();
    scheduler.poll(honest, 0, reports).unwrap();
    // The erring worker fails one task after another, each as often as it is given back:
    // three failures would have failed a puzzle for good.
    let mut failures = Vec::new();
    let mut shut_out = false;
    for _ in 0..10 {
        match scheduler.poll(erring, 1, std::mem::take(&mut failures)) {
            Ok((tasks, _)) => {
                failures = tasks
                    .iter()
                    .map(|task| {
                        TaskReport::new(task.id, TaskOutcome::Failed("disk full".into()), 0)
                    })
                    .collect();
            }
            Err(error) => {
                assert!(
                    error.to_string().contains("reports were failures"),
                    "{error}"
                );
                shut_out = true;
                break;
            }
        }
    }
    assert!(shut_out, "the erring worker was shut out");
    assert_eq!(scheduler.totals().workers_quarantined, 1);
    work_until_done(&mut scheduler, honest, 1, batch, Vec::new());
    let progress = scheduler.progress(batch).unwrap();
    assert_eq!(
        (progress.solved, progress.failed),
        (20, 0),
        "nothing failed for good"
    );
}

#[test]
fn a_hog_that_heartbeats_the_tasks_it_never_runs_loses_them_at_their_deadline() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            // 2,000 nodes at the least rate a worker runs: a 20 ms deadline past the timeout.
            whole_task_budget: 2_000,
            lease_timeout: Duration::from_millis(50),
            ..SchedulerConfig::default()
        },
    );
    let batch = scheduler
        .submit(&distinct_eight_puzzles(30, 5), "manhattan", "")
        .unwrap()
        .batch;
    let hog = scheduler.register(1024, "hog").unwrap();
    let honest = scheduler.register(1, "honest").unwrap();
    let (held, _) = scheduler.poll(hog, 1024, Vec::new()).unwrap();
    let held: Vec<TaskId> = held.iter().map(|task| task.id).collect();
    // "Still running them", for ever.
    let shut_out = work_beside(&mut scheduler, honest, batch, |scheduler| {
        scheduler.heartbeat(hog, &held).is_err()
    });
    assert!(shut_out, "the hog was shut out");
    let progress = scheduler.progress(batch).unwrap();
    assert_eq!((progress.solved, progress.failed), (30, 0));
}
