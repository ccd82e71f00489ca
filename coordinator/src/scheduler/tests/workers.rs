//! Workers: what each may hold, earned leases, hogs and workers whose reports keep failing.

use super::*;

#[test]
fn a_worker_holds_at_most_its_threads_times_prefetch_however_often_it_asks() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    // 60 distinct 8-puzzles: 60 whole-puzzle tasks in the queue.
    let lines = distinct_eight_puzzles(60, 7);
    scheduler.submit(&lines, "manhattan", "").unwrap();
    assert!(
        matches!(
            scheduler.register(MAX_WORKER_THREADS + 1, "greedy", None),
            Err(SchedulerError::InvalidArgument(_))
        ),
        "more threads than any machine has is refused"
    );
    let greedy = scheduler.register(2, "greedy", None).unwrap();
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
    let honest = scheduler.register(1, "honest", None).unwrap();
    let (tasks, _) = scheduler.poll(honest, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1, "the queue is not all leased to one worker");
}

#[test]
fn whole_puzzles_spread_over_idle_workers_before_any_worker_prefetches() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    // 16 whole-puzzle tasks of unknown cost, 15 one-thread workers connected.
    let lines = distinct_eight_puzzles(16, 11);
    scheduler.submit(&lines, "manhattan", "").unwrap();
    let workers: Vec<WorkerId> = (0..15)
        .map(|_| scheduler.register(1, "test", None).unwrap())
        .collect();
    let free_slots = 1 + MAX_PREFETCH;
    let taken: Vec<usize> = workers
        .iter()
        .map(|&worker| {
            scheduler
                .poll(worker, free_slots, Vec::new())
                .unwrap()
                .0
                .len()
        })
        .collect();
    assert_eq!(taken.iter().sum::<usize>(), 16, "{taken:?}");
    assert!(
        taken.iter().all(|&n| (1..=2).contains(&n)),
        "every worker has a task, and the first prefetches only the one left over: {taken:?}"
    );
    // With nobody else idle, a worker prefetches as before.
    let lines = distinct_eight_puzzles(40, 12);
    scheduler.submit(&lines, "manhattan", "").unwrap();
    let (more, _) = scheduler.poll(workers[0], free_slots, Vec::new()).unwrap();
    assert!(more.len() >= 3, "{}", more.len());
}

#[test]
fn few_puzzles_per_thread_are_split_early_and_many_run_whole() {
    // Without audits: under `sample` a worker on probation gets short whole tasks (below).
    let config = SchedulerConfig {
        verify: Verify::Off,
        ..SchedulerConfig::default()
    };
    // The budgets of the whole-puzzle tasks `puzzles` boards get with `workers` one-thread
    // workers connected, under `config`.
    let budgets_under = |config: &SchedulerConfig, puzzles: usize, workers: usize| -> Vec<u64> {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(data.path(), config.clone());
        let workers: Vec<WorkerId> = (0..workers)
            .map(|_| scheduler.register(1, "test", None).unwrap())
            .collect();
        scheduler
            .submit(&distinct_eight_puzzles(puzzles, 11), "manhattan", "")
            .unwrap();
        workers
            .iter()
            .flat_map(|&worker| scheduler.poll(worker, 1, Vec::new()).unwrap().0)
            .map(|task| task.node_budget)
            .collect()
    };
    let budgets = |puzzles, workers| budgets_under(&config, puzzles, workers);
    // Four puzzles a thread or more: whole puzzles keep every thread busy.
    let many = budgets(32, 8);
    assert_eq!(many, vec![config.whole_task_budget; 8]);
    // Fewer: each is split after its first cheap iterations, so every thread has a part.
    let few = budgets(31, 8);
    assert_eq!(few, vec![config.spread_task_budget; 8]);
    assert!(config.spread_task_budget < config.whole_task_budget);
    // Under `sample`, fresh workers (on probation) run no long whole task; spread tasks are
    // short already.
    let sample = SchedulerConfig::default();
    let fresh = budgets_under(&sample, 32, 8);
    assert_eq!(fresh, vec![PROBATION_WHOLE_BUDGET; 8]);
    assert_eq!(
        budgets_under(&sample, 31, 8),
        vec![sample.spread_task_budget; 8]
    );
}

#[test]
fn a_worker_on_probation_runs_only_its_first_few_whole_tasks_short() {
    use crate::scheduler::config::PROBATION_SHORT_WHOLE_TASKS;
    let data = tempfile::tempdir().unwrap();
    let config = SchedulerConfig::default();
    assert_eq!(config.verify, Verify::Sample);
    let mut scheduler = scheduler_in(data.path(), config.clone());
    let worker = scheduler.register(1, "fresh", None).unwrap();
    scheduler
        .submit(&distinct_eight_puzzles(32, 11), "manhattan", "")
        .unwrap();
    // Asked for two at a time: the count of short ones carries from one poll to the next.
    let mut budgets = Vec::new();
    for _ in 0..2 {
        let (tasks, _) = scheduler.poll(worker, 2, Vec::new()).unwrap();
        assert!(tasks.iter().all(|task| task.iterate));
        budgets.extend(tasks.iter().map(|task| task.node_budget));
    }
    let short = PROBATION_SHORT_WHOLE_TASKS as usize;
    assert_eq!(budgets.len(), 4);
    assert!(short < budgets.len());
    assert_eq!(budgets[..short], vec![PROBATION_WHOLE_BUDGET; short]);
    assert!(
        budgets[short..]
            .iter()
            .all(|&budget| budget == config.whole_task_budget),
        "{budgets:?}"
    );
}

/// A whole task cut short for probation that spends its short budget does not split its
/// puzzle: the puzzle goes on whole from the bound the task reached, with the full budget once
/// its worker has passed, and is solved at its optimal length.
#[test]
fn a_whole_task_cut_short_for_probation_leaves_its_puzzle_whole() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let worker = scheduler.register(1, "fresh", None).unwrap();
    // Four puzzles a thread: whole tasks at the full budget, so the cut is probation's. The
    // hardest of the examples first, so that the first task leased is its.
    let mut boards: Vec<(String, u32)> = examples().into_iter().rev().collect();
    boards.truncate(4);
    let lines: Vec<String> = boards.iter().map(|(board, _)| board.clone()).collect();
    let optimal = boards[0].1;
    let batch = scheduler
        .submit(&lines, "linear-conflict", "")
        .unwrap()
        .batch;
    let (first, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    assert!(first.len() == 1 && first[0].iterate, "{first:?}");
    assert_eq!(first[0].puzzle.1, 0, "the batch's first item first");
    assert_eq!(first[0].node_budget, PROBATION_WHOLE_BUDGET);
    let report = truthful(&first[0]);
    let TaskOutcome::BudgetSpent(reached) = report.outcome else {
        panic!(
            "the short budget should not finish this board: {:?}",
            report.outcome
        );
    };
    // The other puzzles' tasks are searched as they come, until the first puzzle's next one.
    let mut results = vec![report];
    let next = loop {
        let (tasks, _) = scheduler
            .poll(worker, 1, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        if let Some(task) = tasks.iter().find(|task| task.puzzle.1 == 0) {
            break task.clone();
        }
        assert!(!scheduler.progress(batch).unwrap().done);
        results.extend(tasks.iter().map(truthful));
    };
    assert!(
        next.iterate && next.path.is_empty(),
        "whole again: {next:?}"
    );
    assert_eq!(next.bound, reached, "from where the short task stopped");
    work_until_done(&mut scheduler, worker, 1, batch, vec![truthful(&next)]);
    assert_eq!(first_answer_length(&scheduler, batch), optimal);
}

#[test]
fn a_worker_whose_tasks_are_short_holds_many_unless_its_times_are_impossible() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let lines = distinct_eight_puzzles(3000, 11);
    scheduler.submit(&lines, "manhattan", "").unwrap();
    let unpacked = 1 + MAX_PREFETCH as usize;
    let mut run = |name: &str, seconds: f64| most_held(&mut scheduler, name, seconds);
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

/// A one-thread worker registered as `name` runs what it is given and reports each task with
/// the `seconds` it claims, asking for all it may hold, 80 times; the most it ever held.
fn most_held(scheduler: &mut Owned, name: &str, seconds: f64) -> usize {
    let worker = scheduler.register(1, name, None).unwrap();
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
}

/// Held to a tenth of a core, a worker takes ten times as long over each task; with the
/// policy's times stretched ten times it holds what it would at the host's pace.
#[test]
fn under_a_tenfold_time_scale_a_worker_ten_times_slower_holds_what_the_host_would() {
    let held_with = |config: SchedulerConfig, seconds: f64| {
        let data = tempfile::tempdir().unwrap();
        let mut scheduler = scheduler_in(data.path(), config);
        let lines = distinct_eight_puzzles(3000, 11);
        scheduler.submit(&lines, "manhattan", "").unwrap();
        most_held(&mut scheduler, "timed", seconds)
    };
    let host = held_with(SchedulerConfig::default(), 0.001);
    let ten = TimeScale::new(10.0).unwrap();
    let emulated = held_with(SchedulerConfig::default().stretched(ten), 0.01);
    assert!(
        host > 1 + MAX_PREFETCH as usize,
        "1 ms tasks are packed: {host}"
    );
    assert_eq!(emulated, host);
    assert_eq!(
        held_with(SchedulerConfig::default(), 0.01),
        1 + MAX_PREFETCH as usize,
        "unstretched, 10 ms tasks are not packed"
    );
}

#[test]
fn a_stretched_policy_has_its_times_stretched_and_its_other_knobs_as_they_were() {
    let host = SchedulerConfig::default();
    let ten = host.clone().stretched(TimeScale::new(10.0).unwrap());
    assert_eq!(ten.lease_timeout, host.lease_timeout * 10);
    assert_eq!(ten.hand_back_after, host.hand_back_after * 10);
    assert!(
        (ten.coordinator_seconds_per_task / host.coordinator_seconds_per_task - 10.0).abs() < 1e-9
    );
    assert_eq!(ten.time_scale.factor(), 10.0);
    assert_eq!(
        (
            ten.whole_task_budget,
            ten.spread_task_budget,
            ten.tasks_per_thread
        ),
        (
            host.whole_task_budget,
            host.spread_task_budget,
            host.tasks_per_thread
        ),
        "work is counted in nodes, which no time scale changes"
    );
    assert_eq!(host.time_scale, TimeScale::REAL);
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
    let hog = scheduler.register(1024, "hog", None).unwrap();
    let honest = scheduler.register(1, "honest", None).unwrap();
    let (held, _) = scheduler.poll(hog, 1024, Vec::new()).unwrap();
    assert_eq!(
        held.len(),
        crate::scheduler::workers::FIRST_LEASES,
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

/// Registering again and again buys no leases: what the registrations of one worker token
/// hold beyond what their own reports earned comes from one pool, one fresh registration's
/// allowance (and as many again as they hold on their earnings). A registration that reports earns its own, and the others get the pool back.
#[test]
fn ten_registrations_of_one_token_hold_what_one_may() {
    use crate::scheduler::workers::FIRST_LEASES;
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let batch = scheduler
        .submit(&distinct_eight_puzzles(600, 7), "manhattan", "")
        .unwrap()
        .batch;
    let hogs: Vec<WorkerId> = (0..10)
        .map(|_| scheduler.register(16, "hog", Some(1)).unwrap())
        .collect();
    let held: usize = hogs
        .iter()
        .map(|&hog| scheduler.poll(hog, 1024, Vec::new()).unwrap().0.len())
        .sum();
    assert_eq!(held, FIRST_LEASES, "ten registrations, nothing shown");
    // Another token's registration has a pool of its own.
    let other = scheduler.register(1, "other", Some(2)).unwrap();
    assert_eq!(scheduler.poll(other, 1, Vec::new()).unwrap().0.len(), 1);

    // Registrations of one token that report: each holds what it earned, and the pool goes
    // round the rest, one thread's task each before anyone prefetches from it.
    let workers: Vec<WorkerId> = (0..15)
        .map(|_| scheduler.register(1, "honest", Some(3)).unwrap())
        .collect();
    let first: Vec<Vec<TaskSpec>> = workers
        .iter()
        .map(|&worker| scheduler.poll(worker, 5, Vec::new()).unwrap().0)
        .collect();
    let counts: Vec<usize> = first.iter().map(Vec::len).collect();
    assert_eq!(counts.iter().sum::<usize>(), FIRST_LEASES, "{counts:?}");
    assert!(counts.iter().all(|&count| count <= 1), "{counts:?}");
    // The first reports its task: it earns leases of its own, and the pool it drew on goes
    // to a registration that had none.
    let reports: Vec<TaskReport> = first[0].iter().map(truthful).collect();
    let (again, _) = scheduler.poll(workers[0], 5, reports).unwrap();
    assert!(!again.is_empty());
    let waiting = counts.iter().position(|&count| count == 0).unwrap();
    let (later, _) = scheduler.poll(workers[waiting], 5, Vec::new()).unwrap();
    assert_eq!(later.len(), 1);
    assert!(!scheduler.progress(batch).unwrap().done);
}

/// A token's pool grows with the leases its registrations hold on their own earnings: a
/// hundred fresh one-thread registrations of a token that reports are all busy by the fifth
/// round of tasks (10, then each round at least twice the last plus 10), where a pool of one
/// allowance fed ten more a round.
#[test]
fn fresh_registrations_of_a_token_that_reports_start_doubling_each_round() {
    use crate::scheduler::workers::FIRST_LEASES;
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let batch = scheduler
        .submit(&distinct_eight_puzzles(800, 13), "manhattan", "")
        .unwrap()
        .batch;
    let workers: Vec<WorkerId> = (0..100)
        .map(|_| scheduler.register(1, "fresh", Some(1)).unwrap())
        .collect();
    let mut held: Vec<Vec<TaskSpec>> = vec![Vec::new(); workers.len()];
    let mut busy = Vec::new();
    for _ in 0..5 {
        // Each round every registration reports what it ran and asks for its thread's task.
        for (worker, tasks) in workers.iter().zip(held.iter_mut()) {
            let reports: Vec<TaskReport> = tasks.drain(..).map(|task| truthful(&task)).collect();
            *tasks = scheduler.poll(*worker, 1, reports).unwrap().0;
        }
        busy.push(held.iter().filter(|tasks| !tasks.is_empty()).count());
    }
    assert_eq!(busy[0], FIRST_LEASES, "{busy:?}");
    for round in 1..busy.len() {
        assert!(
            busy[round] >= (2 * busy[round - 1] + FIRST_LEASES).min(workers.len()),
            "round {round}: {busy:?}"
        );
    }
    assert_eq!(busy[4], workers.len(), "{busy:?}");
    assert!(!scheduler.progress(batch).unwrap().done);
}

#[test]
fn a_worker_whose_reports_keep_failing_is_shut_out_and_its_failures_retried_elsewhere() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let batch = scheduler
        .submit(&distinct_eight_puzzles(20, 11), "manhattan", "")
        .unwrap()
        .batch;
    let honest = scheduler.register(1, "honest", None).unwrap();
    let erring = scheduler.register(1, "erring", None).unwrap();
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
    let hog = scheduler.register(1024, "hog", None).unwrap();
    let honest = scheduler.register(1, "honest", None).unwrap();
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

#[test]
fn a_fresh_worker_that_only_fails_cannot_fail_a_task_whose_leases_lapsed() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            lease_timeout: Duration::from_millis(50),
            ..SchedulerConfig::default()
        },
    );
    let batch = scheduler
        .submit(&distinct_eight_puzzles(1, 3), "manhattan", "")
        .unwrap()
        .batch;
    let honest = scheduler.register(1, "honest", None).unwrap();
    // Two registrations take the task and fall silent: two attempts lost with their workers.
    for ghost in ["ghost 1", "ghost 2"] {
        let ghost = scheduler.register(1, ghost, None).unwrap();
        assert_eq!(scheduler.poll(ghost, 1, Vec::new()).unwrap().0.len(), 1);
        std::thread::sleep(Duration::from_millis(60));
        scheduler.heartbeat(honest, &[]).unwrap();
        scheduler.sweep().unwrap();
    }
    // A broken host's fresh registration fails it once: its fault, not the task's.
    let erring = scheduler.register(1, "erring", None).unwrap();
    let (tasks, _) = scheduler.poll(erring, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let failure = TaskReport::new(tasks[0].id, TaskOutcome::Failed("disk full".into()), 0);
    scheduler.poll(erring, 0, vec![failure]).unwrap();
    work_until_done(&mut scheduler, honest, 1, batch, Vec::new());
    let progress = scheduler.progress(batch).unwrap();
    assert_eq!((progress.solved, progress.failed), (1, 0));
}

#[test]
fn idle_workers_are_woken_when_tasks_are_queued_not_whenever_some_wait() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    scheduler
        .submit(&distinct_eight_puzzles(4, 13), "manhattan", "")
        .unwrap();
    assert!(
        scheduler.take_cycle().tasks_ready,
        "a submission queues tasks"
    );
    let worker = scheduler.register(1, "test", None).unwrap();
    let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    scheduler.heartbeat(worker, &[tasks[0].id]).unwrap();
    assert!(
        !scheduler.take_cycle().tasks_ready,
        "a heartbeat or a poll that queues nothing wakes nobody, though three tasks wait"
    );
    assert_eq!(scheduler.leave(worker).unwrap(), 1);
    assert!(
        scheduler.take_cycle().tasks_ready,
        "a task back in the queue wakes them"
    );
}

/// Puzzles take turns in the queue: with two puzzles' split iterations queued, a worker's
/// tasks alternate between them instead of running one puzzle's iteration after the other's,
/// so that when a puzzle ends, few of the batch's threads hold its tasks (whatever they had
/// searched is then spent for nothing).
#[test]
fn split_puzzles_take_turns_in_the_queue() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: 2_000,
            spread_task_budget: 2_000,
            min_split_nodes: 100,
            min_split_nodes_per_thread: 0,
            ..SchedulerConfig::default()
        },
    );
    let lines = ["8,6,7,2,5,4,3,0,1".to_string(), "6,4,7,8,5,0,3,2,1".into()];
    let batch = scheduler
        .submit(&lines, "linear-conflict", "")
        .unwrap()
        .batch;
    let worker = scheduler.register(1, "test", None).unwrap();
    // The puzzle of each subtree task, in the order the worker got them.
    let (mut order, mut results) = (Vec::new(), Vec::new());
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            break;
        }
        let (tasks, _) = scheduler
            .poll(worker, 1, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        order.extend(tasks.iter().filter(|t| !t.iterate).map(|t| t.puzzle.1));
        results.extend(tasks.iter().map(truthful));
    }
    for item in scheduler.items(batch).unwrap() {
        assert!(
            matches!(&item.status, ItemStatus::Solved(s) if s.length == 31),
            "{:?}",
            item.status
        );
    }
    // While both are searched (up to the last task of the one that ends first), neither runs
    // more than a few tasks in a row: only while the other's next iteration is being split.
    let ends_first = (0..2)
        .map(|puzzle| order.iter().rposition(|&p| p == puzzle).unwrap())
        .min()
        .unwrap();
    let both = &order[..=ends_first];
    let longest_run = both
        .chunk_by(|a, b| a == b)
        .map(<[u32]>::len)
        .max()
        .unwrap();
    assert!(both.len() >= 20, "{order:?}");
    assert!(longest_run <= 3, "{order:?}");
}

/// Idle threads are counted over time as each poll leaves them: a worker that took the only
/// task leaves the other worker's thread idle, and that thread alone adds to the count.
#[test]
fn threads_holding_no_task_are_counted_over_time() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    scheduler
        .submit(&distinct_eight_puzzles(1, 3), "manhattan", "")
        .unwrap();
    let busy = scheduler.register(1, "busy", None).unwrap();
    scheduler.register(1, "idle", None).unwrap();
    let (tasks, _) = scheduler.poll(busy, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let workers = &scheduler.parts.workers;
    let later = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let (at, two_seconds_on) = (
        workers.idle_seconds(later),
        workers.idle_seconds(later + std::time::Duration::from_secs(2)),
    );
    assert!(
        (two_seconds_on - at - 2.0).abs() < 1e-9,
        "{at} {two_seconds_on}"
    );
}
