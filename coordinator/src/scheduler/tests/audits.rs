//! Audits and quarantine: lying workers under `sample` and `full`, lineages, the coordinator's own audits.

use super::*;
use tilesolve::search::PartSize;

/// How a lying worker answers a task it ran for real: longer paths for whole puzzles, raised
/// bounds that hide the answers of subtrees, moves off the board now and then; as an auditor
/// it never finds anything.
fn lie(task: &TaskSpec, truth: TaskOutcome, told: usize) -> TaskOutcome {
    if told % 7 == 3 {
        return TaskOutcome::Found(vec![Direction::Up; 40]);
    }
    match truth {
        TaskOutcome::Found(moves) if task.iterate => {
            TaskOutcome::Found(two_moves_longer(&task.board, task.goal, None).unwrap_or(moves))
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
    let honest = scheduler.register(2, "honest", None).unwrap();
    let mut liar = scheduler.register(2, "liar", None).unwrap();
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
                liar = scheduler.register(2, "liar", None).unwrap();
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
    // The default, `--verify sample`: answers waited only for the audits of claims made on
    // probation, which every registration of the liar was on.
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

/// A lie told: `board` (optimal in `optimal` moves) submitted as one whole task, which a liar
/// answers two moves too long while an honest worker stands by to audit it.
struct ToldLie {
    scheduler: Owned,
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
    // Another worker is there to audit, past its probation (else the coordinator audits).
    let honest = trusted_worker(&mut scheduler, "honest", None);
    let batch = scheduler
        .submit(&[board.to_string()], "linear-conflict", "")
        .unwrap()
        .batch;
    let liar = scheduler.register(1, "liar", None).unwrap();
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let truth = run_linear_conflict(&tasks[0]);
    let lied = lie(&tasks[0], truth.outcome, 1);
    assert!(matches!(&lied, TaskOutcome::Found(moves) if moves.len() == optimal + 2));
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

/// A scheduler under `--verify full` whose draw never picks a report once a worker is past
/// probation (audits on, at a share no test reaches): what stops a lie then is the full check.
fn past_probation_setup(dir: &std::path::Path, config: SchedulerConfig) -> Owned {
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
fn earn_trust(scheduler: &mut Owned, liar: WorkerId, honest: WorkerId) -> Vec<TaskReport> {
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
        !scheduler.parts.workers.on_probation(liar),
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

/// A real path from `board` to `goal` two moves longer than the shortest, visiting no board
/// twice (a path with a step out and back is refused by replay), not undoing `after` first.
fn two_moves_longer(
    board: &Board,
    goal: Board,
    after: Option<Direction>,
) -> Option<Vec<Direction>> {
    Solver::new(goal, tilesolve::HeuristicKind::LinearConflict)
        .path_two_moves_longer(board, after.map(Direction::opposite))
}

/// A scheduler in `dir` under the default settings but for whole tasks that never stop on a
/// budget: each puzzle is one task, its answer one report.
fn whole_tasks_scheduler(dir: &std::path::Path) -> Owned {
    scheduler_in(
        dir,
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            ..SchedulerConfig::default()
        },
    )
}

/// Submits a 31-move 8-puzzle that `liar` takes as a whole task and answers in 33 moves; the
/// answer waits for its audit. Returns the batch.
fn answer_31_moves_in_33(scheduler: &mut Owned, liar: WorkerId) -> u64 {
    answer_31_moves_in_33_saying(scheduler, liar, None)
}

/// [`answer_31_moves_in_33`], the report saying it expanded `nodes` (`None`: what it did).
/// Under `sample`, a fresh worker's report that says it is too large to draw for probation
/// (`PROBATION_SAMPLE_NODES`) is not audited at once on the coordinator, as a cheap one is:
/// its claims wait, and the answer's audit goes where any audit of that size goes.
fn answer_31_moves_in_33_saying(scheduler: &mut Owned, liar: WorkerId, nodes: Option<u64>) -> u64 {
    let batch = scheduler
        .submit(&["8,6,7,2,5,4,3,0,1".to_string()], "linear-conflict", "")
        .unwrap()
        .batch;
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new()).unwrap();
    assert_eq!(tasks.len(), 1);
    let lie = |task: &TaskSpec, outcome: TaskOutcome| match outcome {
        TaskOutcome::Found(_) => {
            TaskOutcome::Found(two_moves_longer(&task.board, task.goal, None).unwrap())
        }
        other => other,
    };
    let mut lied = answer(tasks, &lie);
    for report in &mut lied {
        report.nodes = nodes.unwrap_or(report.nodes);
    }
    scheduler.poll(liar, 0, lied).unwrap();
    assert!(
        !scheduler.progress(batch).unwrap().done,
        "the answer waits for its audit"
    );
    batch
}

/// Past [`crate::scheduler::config::PROBATION_SAMPLE_NODES`]: too large to draw for probation.
const TOO_LARGE_TO_DRAW: u64 = crate::scheduler::config::PROBATION_SAMPLE_NODES + 1;

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
    let liar = scheduler.register(1, "liar", None).unwrap();
    let honest = scheduler.register(1, "honest", None).unwrap();
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
    let liar = scheduler.register(64, "liar", None).unwrap();
    let honest = scheduler.register(1, "honest", None).unwrap();
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
    // (raising the bound), and at the next one it answers two moves longer.
    let lie = |task: &TaskSpec, outcome: TaskOutcome| match outcome {
        TaskOutcome::Found(_) if !task.iterate && task.bound == optimal => {
            TaskOutcome::Exceeded(optimal + 2)
        }
        TaskOutcome::Found(moves)
            if !task.iterate && (task.path.len() + moves.len()) as u32 == optimal =>
        {
            TaskOutcome::Found(
                two_moves_longer(&task.board, task.goal, task.path.last().copied())
                    .unwrap_or(moves),
            )
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
    let mut scheduler = whole_tasks_scheduler(data.path());
    // A lone liar: nobody else could audit it.
    let liar = scheduler.register(1, "liar", None).unwrap();
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
    let honest = scheduler.register(1, "honest", None).unwrap();
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
fn under_sample_another_registration_of_the_same_token_audits_not_the_coordinator() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = whole_tasks_scheduler(data.path());
    // One worker token on many hosts (the usual cluster): a faulty one is checked by another
    // (once that one is past its own probation).
    let other = trusted_worker(&mut scheduler, "other", Some(0));
    let faulty = scheduler.register(1, "faulty", Some(0)).unwrap();
    let batch = answer_31_moves_in_33_saying(&mut scheduler, faulty, Some(TOO_LARGE_TO_DRAW));
    assert!(
        scheduler.take_deferred().is_empty(),
        "nothing is audited on the coordinator"
    );
    let (audits, _) = scheduler.poll(other, 4, Vec::new()).unwrap();
    assert!(
        audits.iter().any(|task| !task.iterate),
        "the faulty worker's claim is audited by the other registration: {audits:?}"
    );
    let reports = answer(audits, &|_, outcome| outcome);
    work_until_done(&mut scheduler, other, 1, batch, reports);
    let totals = scheduler.totals();
    assert_eq!(
        (totals.audits_disproved, totals.workers_quarantined),
        (1, 1),
        "{totals:?}"
    );
    assert_eq!(first_answer_length(&scheduler, batch), 31);
}

/// Under `sample`, a large report of a worker on probation drawn at random while no worker may
/// audit it is not audited on the coordinator: its claims are kept, as undrawn ones are (an
/// answer resting on them while its worker is still on probation is audited first).
#[test]
fn a_large_claim_on_probation_drawn_while_nobody_may_audit_it_is_kept_for_its_answer() {
    let data = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        audit_fraction: 1.0,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(data.path(), config);
    let lone = scheduler.register(1, "lone", None).unwrap();
    let batch = scheduler
        .submit(&[examples()[5].0.clone()], "linear-conflict", "")
        .unwrap()
        .batch;
    // Its first whole task, cut short for probation: a claim, not an answer.
    let (tasks, _) = scheduler.poll(lone, 1, Vec::new()).unwrap();
    let mut report = truthful(&tasks[0]);
    assert!(
        !matches!(report.outcome, TaskOutcome::Found(_)),
        "{report:?}"
    );
    report.nodes = TOO_LARGE_TO_DRAW;
    report.parts.clear();
    scheduler.poll(lone, 0, vec![report]).unwrap();
    let deferred = scheduler.take_deferred();
    assert!(
        !deferred.iter().any(|d| matches!(d, Deferred::Audit(_))),
        "nothing is audited on the coordinator"
    );
    for split in deferred {
        scheduler.finish_deferred(split.run()).unwrap();
    }
    work_until_done(&mut scheduler, lone, 1, batch, Vec::new());
    let totals = scheduler.totals();
    assert_eq!(
        (totals.audits_skipped, totals.audits_disproved),
        (0, 0),
        "{totals:?}"
    );
    assert_eq!(first_answer_length(&scheduler, batch), examples()[5].1);
}

#[test]
fn under_full_registrations_under_one_token_never_audit_each_other() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(
        data.path(),
        SchedulerConfig {
            whole_task_budget: u64::MAX / 4,
            verify: Verify::Full,
            ..SchedulerConfig::default()
        },
    );
    // Two registrations of one token holder: each would uphold the other's lie.
    let liar = scheduler.register(1, "liar", Some(0)).unwrap();
    let accomplice = scheduler.register(1, "accomplice", Some(0)).unwrap();
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
    let other = scheduler.register(1, "other", Some(1)).unwrap();
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
    let liar = scheduler.register(1, "liar", None).unwrap();
    let batch = scheduler
        .submit(&["8,6,7,2,5,4,3,0,1".to_string()], "linear-conflict", "")
        .unwrap()
        .batch;
    let (tasks, _) = scheduler.poll(liar, 1, Vec::new()).unwrap();
    let lie = |task: &TaskSpec, outcome: TaskOutcome| match outcome {
        TaskOutcome::Found(_) => {
            TaskOutcome::Found(two_moves_longer(&task.board, task.goal, None).unwrap())
        }
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
    // Another token's registration, past its probation, that now heartbeats and never asks
    // for work.
    let silent = trusted_worker(&mut scheduler, "silent", Some(1));
    let liar = scheduler.register(1, "liar", Some(0)).unwrap();
    answer_31_moves_in_33_saying(&mut scheduler, liar, Some(TOO_LARGE_TO_DRAW));
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

/// A lone liar brings along a registration of another token that heartbeats and never asks for
/// work: under `sample` it is on probation, so it may audit nobody, and the liar's claims are
/// audited on the coordinator at once, not after a lease timeout; nothing is stored meanwhile.
#[test]
fn a_silent_decoy_on_probation_holds_up_no_audit() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = whole_tasks_scheduler(data.path());
    let liar = scheduler.register(1, "liar", Some(0)).unwrap();
    let decoy = scheduler.register(1, "decoy", Some(1)).unwrap();
    let batch = answer_31_moves_in_33(&mut scheduler, liar);
    scheduler.heartbeat(decoy, &[]).unwrap();
    assert_eq!(scheduler.query("8,6,7,2,5,4,3,0,1", "").unwrap(), None);
    scheduler.run_deferred().unwrap();
    let totals = scheduler.totals();
    assert_eq!(
        (totals.audits_disproved, totals.workers_quarantined),
        (1, 1),
        "{totals:?}"
    );
    assert!(!scheduler.progress(batch).unwrap().done);
    assert_eq!(scheduler.query("8,6,7,2,5,4,3,0,1", "").unwrap(), None);
}

/// Under `sample`, what a worker claims on probation is kept, and an answer resting on it is
/// audited while the worker is still on probation; once it has passed, its answers are taken
/// at its word (a fresh cluster's answers wait only for its workers' probations).
#[test]
fn under_sample_answers_wait_on_probation_and_not_after_it() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = whole_tasks_scheduler(data.path());
    // The only worker that may run the new one's probation audits: until it polls, they wait.
    let trusted = trusted_worker(&mut scheduler, "trusted", None);
    let before = scheduler.totals().answer_audits;
    let new = scheduler.register(1, "new", None).unwrap();
    // Boards far from the goal, whose answers rest on claims (near it, the heuristic is exact).
    let far = |seed| distinct_eight_puzzles(140, seed).split_off(100);
    let first = scheduler
        .submit(&far(11), "linear-conflict", "")
        .unwrap()
        .batch;
    // Its reports say they are too large to draw for probation (a cheap one the coordinator
    // would audit at once): the draws wait for its eighth report, and go to the trusted one.
    let too_large = |task: &TaskSpec| TaskReport {
        nodes: TOO_LARGE_TO_DRAW,
        ..truthful(task)
    };
    let mut results = Vec::new();
    for _ in 0..4 {
        let (tasks, _) = scheduler
            .poll(new, 4, std::mem::take(&mut results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        results.extend(tasks.iter().map(too_large));
    }
    scheduler.poll(new, 0, results).unwrap();
    scheduler.run_deferred().unwrap();
    assert!(scheduler.parts.workers.on_probation(new));
    assert!(
        scheduler.totals().answer_audits > before,
        "{:?}",
        scheduler.totals()
    );
    // Both work on (each runs the other's audits); the new worker passes its probation.
    let mut audited = Vec::new();
    let mut beside = |scheduler: &mut Owned| {
        let (tasks, _) = scheduler
            .poll(trusted, 1, std::mem::take(&mut audited))
            .unwrap();
        audited.extend(tasks.iter().map(truthful));
        false
    };
    work_beside(&mut scheduler, new, first, &mut beside);
    assert!(!scheduler.parts.workers.on_probation(new));
    let passed = scheduler.totals().answer_audits;
    let second = scheduler
        .submit(&far(12), "linear-conflict", "")
        .unwrap()
        .batch;
    work_beside(&mut scheduler, new, second, &mut beside);
    let totals = scheduler.totals();
    assert_eq!(totals.answer_audits, passed, "{totals:?}");
    assert_eq!(totals.audits_disproved, 0, "{totals:?}");
}

/// Under `sample`, a worker on probation whose subtree reports are too large to be drawn
/// passes on cheap measured parts of them, which the coordinator audits within the poll: in
/// its first few reports, where without their parts it would wait for
/// `PROBATION_ANY_SIZE_AFTER` of them.
#[test]
fn a_worker_on_probation_passes_on_cheap_parts_of_large_reports() {
    use crate::scheduler::config::{PROBATION_ANY_SIZE_AFTER, PROBATION_SAMPLE_NODES};
    // The reports a fresh worker alone makes before it passes (None: the batch ended first),
    // with the parts it measured or without them; each says it is too large to be drawn.
    let passed_after = |keep_parts: bool| -> Option<u32> {
        let data = tempfile::tempdir().unwrap();
        let (mut scheduler, worker, batch) = fresh_worker_on_example(data.path(), 5);
        let (mut results, mut reports) = (Vec::new(), 0);
        while !scheduler.progress(batch).unwrap().done {
            let (tasks, _) = scheduler
                .poll(worker, 1, std::mem::take(&mut results))
                .unwrap();
            scheduler.run_deferred().unwrap();
            if !scheduler.parts.workers.on_probation(worker) {
                return Some(reports);
            }
            for task in &tasks {
                let mut report = truthful(task);
                report.nodes = report.nodes.max(PROBATION_SAMPLE_NODES + 1);
                if !keep_parts {
                    report.parts.clear();
                }
                reports += 1;
                results.push(report);
            }
        }
        None
    };
    let with_parts = passed_after(true);
    assert!(
        with_parts.is_some_and(|reports| reports < PROBATION_ANY_SIZE_AFTER),
        "{with_parts:?}"
    );
    let without = passed_after(false);
    assert!(
        without.is_none_or(|reports| reports > PROBATION_ANY_SIZE_AFTER),
        "{without:?}"
    );
}

/// Under `sample`, a probation audit that ends without a verdict gives its draw back: a part
/// that said it was cheap and is not spends the coordinator's budget and goes on in its
/// children, which uphold nothing for probation, and the worker is drawn again. (With the draw
/// kept, a worker whose one part audit split never passed, and every claim it made was
/// audited again before an answer rested on it.)
#[test]
fn a_probation_audit_that_upholds_nothing_gives_its_draw_back() {
    use crate::scheduler::config::{COORDINATOR_AUDIT_NODES, PROBATION_SAMPLE_NODES};
    let data = tempfile::tempdir().unwrap();
    let (mut scheduler, worker, batch) = fresh_worker_on_example(data.path(), 4);
    let coordinator_nodes = |scheduler: &Owned| scheduler.totals().coordinator_audit_nodes;
    // Whether a misleading report was made, and whether its audit was seen to split.
    let (mut results, mut misleading, mut split) = (Vec::new(), false, false);
    while !scheduler.progress(batch).unwrap().done {
        let carries = misleading && !split;
        let (tasks, _) = scheduler
            .poll(worker, 1, std::mem::take(&mut results))
            .unwrap();
        let before = coordinator_nodes(&scheduler);
        scheduler.run_deferred().unwrap();
        if carries {
            // Its part's audit spent the coordinator's budget (and its children ran after).
            let spent = coordinator_nodes(&scheduler) - before;
            assert!(spent > COORDINATOR_AUDIT_NODES, "{spent}");
            split = true;
        }
        if !scheduler.parts.workers.on_probation(worker) {
            assert!(split, "no report was misleading: {:?}", scheduler.totals());
            return;
        }
        for task in &tasks {
            let mut report = truthful(task);
            report.nodes = report.nodes.max(PROBATION_SAMPLE_NODES + 1);
            // The first subtree report large enough says its largest move from the board's
            // subtree took one node: the one cheap part to draw, which is not.
            let largest = (matches!(report.outcome, TaskOutcome::Exceeded(_)) && !misleading)
                .then(|| largest_first_move(&report.parts))
                .flatten()
                .filter(|&(_, nodes)| nodes > 2 * COORDINATOR_AUDIT_NODES);
            if let Some((first, _)) = largest {
                report.parts = vec![PartSize {
                    moves: vec![first],
                    expanded: 1,
                    micros: 1,
                }];
                misleading = true;
            }
            results.push(report);
        }
    }
    panic!(
        "the batch ended with its worker on probation (a misleading report: {misleading}): {:?}",
        scheduler.totals()
    );
}

/// A scheduler in `dir` whose whole tasks run up to 300,000 nodes, one fresh one-thread
/// worker, and a batch of the `example`th 15-puzzle alone.
fn fresh_worker_on_example(dir: &std::path::Path, example: usize) -> (Owned, WorkerId, u64) {
    let config = SchedulerConfig {
        whole_task_budget: 300_000,
        spread_task_budget: 300_000,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(dir, config);
    let worker = scheduler.register(1, "fresh", None).unwrap();
    let (board, _) = examples()[example].clone();
    let batch = scheduler
        .submit(&[board], "linear-conflict", "")
        .unwrap()
        .batch;
    (scheduler, worker, batch)
}

/// The first move of the measured parts `parts` under which they expanded the most, with
/// those nodes.
fn largest_first_move(parts: &[PartSize]) -> Option<(Direction, u64)> {
    let mut under: Vec<(Direction, u64)> = Vec::new();
    for part in parts {
        let Some(&first) = part.moves.first() else {
            continue;
        };
        match under.iter_mut().find(|(d, _)| *d == first) {
            Some((_, nodes)) => *nodes += part.expanded,
            None => under.push((first, part.expanded)),
        }
    }
    under.into_iter().max_by_key(|&(_, nodes)| nodes)
}
