//! Work asked back: a running subtree task is asked to hand back what it has not searched while
//! a thread idles, and what it hands back is judged, audited and queued.

use std::sync::atomic::AtomicBool;

use tilesolve::task::{run_task_handing_back, MAX_PROFILE_DEPTH};

use super::*;

/// What an honest worker reports for `task` when asked to hand it back before it starts: the
/// real kernel's run with the flag set, which hands back every part from its first.
fn handed_back(task: &TaskSpec) -> TaskReport {
    let solver = Solver::new(task.goal, tilesolve::HeuristicKind::LinearConflict);
    let asked = AtomicBool::new(true);
    let run = run_task_handing_back(&solver, task.work(), None, Some(&asked));
    TaskReport {
        parts: run.parts,
        ..TaskReport::new(task.id, run.outcome, run.nodes)
    }
}

/// A scheduler in `dir` under `config`, but with whole tasks so small that its one puzzle, the
/// `example`th 15-puzzle, is split at once; with the batch and the puzzle's published length.
fn one_split_puzzle(
    dir: &std::path::Path,
    config: SchedulerConfig,
    example: usize,
) -> (Owned, u64, u32) {
    let config = SchedulerConfig {
        whole_task_budget: 2_000,
        spread_task_budget: 2_000,
        ..config
    };
    let mut scheduler = scheduler_in(dir, config);
    let (board, optimal) = examples()[example].clone();
    let batch = scheduler
        .submit(&[board], "linear-conflict", "")
        .unwrap()
        .batch;
    (scheduler, batch, optimal)
}

/// One worker holds each subtree task it takes without reporting it until asked to hand it
/// back; another runs everything else. Whenever the second finds the queue empty, the first
/// is asked (at its next heartbeat) for the task it holds; what it hands back is queued, and
/// the puzzle is still solved at its published length.
#[test]
fn a_held_task_is_asked_back_while_a_thread_idles_and_the_answer_stays_optimal() {
    let data = tempfile::tempdir().unwrap();
    let (mut scheduler, batch, optimal) = one_split_puzzle(
        data.path(),
        SchedulerConfig {
            tasks_per_thread: 2,
            hand_back_after: Duration::ZERO,
            ..SchedulerConfig::default()
        },
        5,
    );
    let holder = scheduler.register(1, "holder", None).unwrap();
    let runner = scheduler.register(1, "runner", None).unwrap();
    // A whole task cannot be handed back, and an audit here could run only on the holder
    // (the runner's): the holder runs them at once.
    let asked = hold_until_asked(
        &mut scheduler,
        batch,
        (holder, runner),
        |scheduler, task, _| !task.iterate && task.profile_depth > 0 && !is_audit(scheduler, task),
    );
    assert!(scheduler.progress(batch).unwrap().done);
    assert!(asked > 0, "no task was asked back");
    assert_eq!(first_answer_length(&scheduler, batch), optimal);
}

/// An audit one worker runs while the other's thread idles with nothing queued (a batch's
/// last audit, say) is asked back as a subtree task is: what it did not search is audited in
/// its place, under the same bound and claim, and the answer waits for that and stays
/// optimal.
#[test]
fn an_audit_is_asked_back_while_a_thread_idles_and_the_rest_audited_in_its_place() {
    let data = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        audit_fraction: 1.0,
        hand_back_after: Duration::ZERO,
        whole_task_budget: 2_000,
        spread_task_budget: 2_000,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(data.path(), config);
    // Under `sample` only a worker past its probation audits another's report: both pass
    // theirs on a warm-up batch, each running what the other may not.
    let holder = trusted_worker(&mut scheduler, "holder", None);
    let runner = scheduler.register(1, "runner", None).unwrap();
    let warm_up = scheduler
        .submit(&distinct_eight_puzzles(40, 8), "linear-conflict", "")
        .unwrap()
        .batch;
    work_beside(&mut scheduler, runner, warm_up, |scheduler: &mut Owned| {
        let (tasks, _) = scheduler.poll(holder, 1, Vec::new()).unwrap();
        let results = tasks.iter().map(truthful).collect();
        scheduler.poll(holder, 0, results).unwrap();
        false
    });
    assert!(!scheduler.parts.workers.on_probation(runner));
    let (board, optimal) = examples()[5].clone();
    let batch = scheduler
        .submit(&[board], "linear-conflict", "")
        .unwrap()
        .batch;
    // It holds the first audit it gets.
    let asked = hold_until_asked(
        &mut scheduler,
        batch,
        (holder, runner),
        |scheduler, task, asked| asked == 0 && is_audit(scheduler, task),
    );
    assert!(scheduler.progress(batch).unwrap().done);
    assert_eq!(asked, 1, "the held audit was not asked back");
    let totals = scheduler.totals();
    assert_eq!(totals.tasks_handed_back, 1, "{totals:?}");
    assert_eq!(totals.audits_disproved, 0, "{totals:?}");
    assert_eq!(first_answer_length(&scheduler, batch), optimal);
}

/// Whether `task` is an audit.
fn is_audit(scheduler: &Owned, task: &TaskSpec) -> bool {
    (scheduler.parts.tasks.get(task.id)).is_some_and(|entry| entry.audit.is_some())
}

/// Runs `batch` on two one-thread workers until it is done: `runner` runs everything
/// truthfully; `holder` holds a task that `holds` picks (given how many were asked back so
/// far) without reporting it until it is asked to hand it back, at a heartbeat after each of
/// the runner's polls, and runs the rest truthfully. Whenever the runner finds nothing to do,
/// the held task must be asked back. Returns how many were.
fn hold_until_asked(
    scheduler: &mut Owned,
    batch: u64,
    (holder, runner): (WorkerId, WorkerId),
    mut holds: impl FnMut(&Owned, &TaskSpec, u32) -> bool,
) -> u32 {
    let (mut held, mut holder_results): (Option<TaskSpec>, Vec<TaskReport>) = (None, Vec::new());
    let (mut runner_results, mut asked) = (Vec::new(), 0);
    for _ in 0..100_000 {
        if scheduler.progress(batch).unwrap().done {
            break;
        }
        if held.is_none() {
            let (tasks, _) = scheduler
                .poll(holder, 1, std::mem::take(&mut holder_results))
                .unwrap();
            scheduler.run_deferred().unwrap();
            for task in tasks {
                if held.is_none() && holds(scheduler, &task, asked) {
                    held = Some(task);
                } else {
                    holder_results.push(truthful(&task));
                }
            }
        }
        let (tasks, _) = scheduler
            .poll(runner, 1, std::mem::take(&mut runner_results))
            .unwrap();
        scheduler.run_deferred().unwrap();
        runner_results.extend(tasks.iter().map(truthful));
        let Some(task) = &held else { continue };
        let told = scheduler.heartbeat(holder, &[task.id]).unwrap();
        if told.cancelled.contains(&task.id) {
            // Its puzzle ended.
            held = None;
        } else if told.hand_back.contains(&task.id) {
            asked += 1;
            holder_results.push(handed_back(task));
            held = None;
        } else {
            assert!(
                !tasks.is_empty(),
                "the runner found nothing to do, and the held task was not asked back"
            );
        }
    }
    asked
}

/// A task the kernel handed back, for judging reports against.
fn a_handed_back_subtree_task() -> (TaskSpec, Vec<Vec<Direction>>, u32) {
    let (board, _) = examples()[5].clone();
    let board = parse_board(&board).unwrap();
    let solver = Solver::new(
        Board::blank_last(4),
        tilesolve::HeuristicKind::LinearConflict,
    );
    let spec = TaskSpec {
        id: 1,
        puzzle: (1, 0),
        board,
        goal: Board::blank_last(4),
        heuristic: HeuristicChoice::Default,
        path: Vec::new(),
        bound: solver.estimate(&board) + 4,
        iterate: false,
        node_budget: 0,
        profile_depth: 3,
        weighted: None,
        priority: crate::store::Priority::DEFAULT,
    };
    match handed_back(&spec).outcome {
        TaskOutcome::HandedBack {
            paths,
            searched_min_f,
        } => (spec, paths, searched_min_f),
        other => panic!("{other:?}"),
    }
}

/// The descendants handed back and the subtrees claimed searched cover the task's subtree,
/// each node once: every path the search follows, down to the handed back depth, lies below
/// exactly one of them.
#[test]
fn handed_back_and_searched_subtrees_cover_the_task_once() {
    let (spec, paths, _) = a_handed_back_subtree_task();
    assert_eq!(super::super::handed_back::fault(&spec, &paths), None);
    let searched: Vec<Vec<Direction>> = super::super::handed_back::searched_subtrees(&spec, &paths)
        .into_iter()
        .map(|(board, moves)| {
            let reached = moves.iter().fold(spec.board, |b, &d| b.apply(d).unwrap().0);
            assert_eq!(board, reached);
            moves
        })
        .collect();
    let covering: Vec<&Vec<Direction>> = paths.iter().chain(&searched).collect();
    let mut level = vec![(spec.board, Vec::new())];
    for _ in 0..spec.profile_depth {
        let mut next = Vec::new();
        for (board, moves) in level {
            for (direction, child) in spec.followed_children_below(&board, &moves) {
                let mut below: Vec<Direction> = moves.clone();
                below.push(direction);
                let above = covering.iter().filter(|c| below.starts_with(c)).count();
                assert!(above <= 1, "{below:?} lies below {above} of them");
                if above == 0 {
                    next.push((child, below));
                }
            }
        }
        level = next;
    }
    assert!(level.is_empty(), "{} paths below none of them", level.len());
}

/// A hand-back report that no honest worker sends is impossible: the task goes back to the
/// queue and nothing of it is queued or claimed.
#[test]
fn impossible_hand_backs_are_refused() {
    let (spec, paths, searched_min_f) = a_handed_back_subtree_task();
    let judged = |paths: Vec<Vec<Direction>>, searched_min_f: u32| {
        let outcome = TaskOutcome::HandedBack {
            paths,
            searched_min_f,
        };
        matches!(
            super::super::judge::judge(&spec, &outcome),
            super::super::judge::Verdict::Impossible(_)
        )
    };
    assert!(!judged(paths.clone(), searched_min_f), "the kernel's own");
    assert!(judged(Vec::new(), searched_min_f), "nothing handed back");
    assert!(judged(paths.clone(), spec.bound), "f within the bound");
    let mut twice = paths.clone();
    twice.push(paths[0].clone());
    assert!(judged(twice, searched_min_f), "a path twice");
    let mut below = paths.clone();
    let mut deeper = paths[0].clone();
    let (_, onward) = spec
        .followed_children_below(&board_after(&spec, &deeper), &deeper)
        .into_iter()
        .map(|(d, b)| (b, d))
        .next()
        .unwrap();
    deeper.push(onward);
    below.push(deeper);
    assert!(judged(below, searched_min_f), "a path below another");
    let back = paths[0][0].opposite();
    assert!(
        judged(vec![vec![paths[0][0], back]], searched_min_f),
        "a move undone"
    );
    let long = vec![paths[0][0]; MAX_PROFILE_DEPTH as usize + 1];
    assert!(judged(vec![long], searched_min_f), "too deep");
    let many: Vec<Vec<Direction>> = (0..1_000).map(|_| paths[0].clone()).collect();
    assert!(judged(many, searched_min_f), "more than a walk leaves");
    let whole = TaskSpec {
        iterate: true,
        ..spec.clone()
    };
    let outcome = TaskOutcome::HandedBack {
        paths,
        searched_min_f,
    };
    assert!(matches!(
        super::super::judge::judge(&whole, &outcome),
        super::super::judge::Verdict::Impossible(_)
    ));
}

fn board_after(spec: &TaskSpec, moves: &[Direction]) -> Board {
    moves.iter().fold(spec.board, |b, &d| b.apply(d).unwrap().0)
}

/// A worker that hands back every subtree task but keeps quiet about the descendants below
/// which the goal lies, claiming them searched: under `full` each claim is audited (here by
/// the coordinator: no other worker is connected), the worker is quarantined, and the answer
/// an honest worker then finds is optimal.
#[test]
fn a_hand_back_hiding_the_goal_is_caught_and_the_answer_stays_optimal() {
    let data = tempfile::tempdir().unwrap();
    let (mut scheduler, batch, optimal) = one_split_puzzle(
        data.path(),
        SchedulerConfig {
            tasks_per_thread: 4,
            verify: Verify::Full,
            ..SchedulerConfig::default()
        },
        0,
    );
    let liar = scheduler.register(1, "liar", None).unwrap();
    let (mut liar_results, mut hidden) = (Vec::new(), 0);
    for _ in 0..100_000 {
        let tasks = match scheduler.poll(liar, 1, std::mem::take(&mut liar_results)) {
            Ok((tasks, _)) => tasks,
            Err(SchedulerError::PermissionDenied(_)) => break,
            Err(error) => panic!("{error}"),
        };
        scheduler.run_deferred().unwrap();
        for task in tasks {
            let truth = truthful(&task);
            if task.iterate || !matches!(truth.outcome, TaskOutcome::Found(_)) {
                liar_results.push(truth);
                continue;
            }
            // The goal is below: it hands the task back, keeping quiet about where.
            let mut lie = handed_back(&task);
            match &mut lie.outcome {
                TaskOutcome::HandedBack { paths, .. } => {
                    let before = paths.len();
                    paths.retain(|path| !goal_below(&task, path));
                    hidden += before - paths.len();
                    if paths.is_empty() {
                        lie.outcome = TaskOutcome::Exceeded(task.bound + 2);
                    }
                }
                _ => lie.outcome = TaskOutcome::Exceeded(task.bound + 2),
            }
            liar_results.push(lie);
        }
    }
    assert!(hidden > 0, "the liar never had a goal to hide");
    assert!(scheduler.parts.workers.is_quarantined(liar));
    assert!(!scheduler.progress(batch).unwrap().done);
    run_to_completion(&mut scheduler, batch, 1);
    assert_eq!(first_answer_length(&scheduler, batch), optimal);
}

/// Whether a search of `task`'s subtree below `path` meets the goal within its bound.
fn goal_below(task: &TaskSpec, path: &[Direction]) -> bool {
    let below = TaskSpec {
        board: board_after(task, path),
        path: [task.path.as_slice(), path].concat(),
        ..task.clone()
    };
    matches!(truthful(&below).outcome, TaskOutcome::Found(_))
}

/// A worker holding tasks no thread of it has started while another worker's thread idles with
/// nothing queued is asked for them back (the newest first, one for each idle thread); returned,
/// each goes back to the queue as it was and the idle worker takes it.
#[test]
fn tasks_waiting_on_a_busy_worker_are_returned_to_an_idle_one() {
    let data = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(data.path(), SchedulerConfig::default());
    let boards = walked_boards(6);
    let batch = scheduler
        .submit(&boards, "linear-conflict", "")
        .unwrap()
        .batch;
    let busy = scheduler.register(1, "busy", None).unwrap();
    let (held, _) = scheduler.poll(busy, 4, Vec::new()).unwrap();
    assert!(held.len() > 1, "it prefetched: {}", held.len());
    // The rest of the batch done, so that nothing is queued.
    let others = scheduler.register(1, "others", None).unwrap();
    let mut results = Vec::new();
    loop {
        let (tasks, _) = scheduler.poll(others, 1, results).unwrap();
        results = tasks.iter().map(truthful).collect();
        if tasks.is_empty() {
            break;
        }
    }
    let told = scheduler.heartbeat(busy, &[]).unwrap();
    let newest = held.last().unwrap().id;
    assert_eq!(
        told.hand_back,
        vec![newest],
        "the newest waiting one, for one idle thread"
    );
    let returned = TaskReport::new(newest, TaskOutcome::Returned, 0);
    let (tasks, _) = scheduler.poll(busy, 0, vec![returned]).unwrap();
    assert!(tasks.is_empty());
    let (tasks, _) = scheduler.poll(others, 1, Vec::new()).unwrap();
    assert_eq!(tasks.iter().map(|t| t.id).collect::<Vec<_>>(), vec![newest]);
    assert_eq!(scheduler.parts.tasks.get(newest).unwrap().attempts, 0);
    let kept = &held[..held.len() - 1];
    scheduler
        .poll(busy, 0, kept.iter().map(truthful).collect())
        .unwrap();
    scheduler
        .poll(others, 0, tasks.iter().map(truthful).collect())
        .unwrap();
    scheduler.run_deferred().unwrap();
    assert!(scheduler.progress(batch).unwrap().done);
}
