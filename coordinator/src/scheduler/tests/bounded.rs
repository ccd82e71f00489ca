//! Bounded answers: a limit ends a puzzle's optimal search, one weighted task finds its path,
//! and the path is stored with the proven bound, never as a solution; a later search resumes
//! from the bound; a worker's weighted report is judged like any other.
use super::*;
use crate::store::ItemLimits;

/// Takes `lines` in as one batch with `limits` (linear conflict), as the service does.
fn submit_limited(scheduler: &mut Owned, lines: &[String], limits: ItemLimits) -> u64 {
    let store = scheduler.store().clone();
    let read = scheduler.read(lines, "linear-conflict").with_limits(limits);
    let mut intake = scheduler.open_batch(read).unwrap();
    while intake.store_part(&store).unwrap() {
        scheduler.start_part(&mut intake).unwrap();
    }
    intake.batch()
}

/// Examples15 boards 6-9: linear conflict proves each in 4-9 million nodes.
fn hard() -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/examples15.txt"
    ))
    .unwrap();
    tilesolve::batch_file::board_lines(&text)
        .skip(5)
        .take(4)
        .map(|l| {
            let optimal = l.fact("optimal").unwrap().parse().unwrap();
            (l.board.to_string(), optimal)
        })
        .collect()
}

fn node_limit(nodes: u64) -> ItemLimits {
    ItemLimits {
        nodes: Some(nodes),
        ..ItemLimits::default()
    }
}

#[test]
fn a_node_limit_answers_bounded_and_a_later_search_starts_from_the_stored_bound() {
    let dir = tempfile::tempdir().unwrap();
    let config = SchedulerConfig {
        whole_task_budget: 5_000,
        ..SchedulerConfig::default()
    };
    let mut scheduler = scheduler_in(dir.path(), config);
    let boards = hard();
    let lines: Vec<String> = boards.iter().map(|(board, _)| board.clone()).collect();
    let batch = submit_limited(&mut scheduler, &lines, node_limit(100_000));
    // One worker throughout: audits wait for a worker other than the one audited, and a second
    // that stopped polling would hold them.
    let worker = scheduler.register(4, "test", None).unwrap();
    work_until_done(&mut scheduler, worker, 4, batch, Vec::new());

    let progress = scheduler.progress(batch).unwrap();
    assert_eq!((progress.bounded, progress.solved), (4, 0), "{progress:?}");
    assert_eq!(progress.state(), "done");
    let mut bounds = Vec::new();
    for (item, (board, optimal)) in scheduler.items(batch).unwrap().iter().zip(&boards) {
        let ItemStatus::Bounded(bounded) = &item.status else {
            panic!("{board}: {:?}", item.status);
        };
        let (board, goal) = (parse_board(board).unwrap(), Board::blank_last(4));
        let moves = tilesolve::moves::moves_from_string(&bounded.moves).unwrap();
        assert_eq!(
            tilesolve::moves::replay(&board, &goal, &moves).unwrap(),
            bounded.tiles
        );
        assert!(bounded.lower_bound < *optimal && *optimal < bounded.length);
        assert_eq!(bounded.reason, "node limit 100000");
        // Kept with the board's search state, never as its solution.
        assert_eq!(scheduler.store().solution(&goal, &board).unwrap(), None);
        let state = scheduler
            .store()
            .search_state(&goal, &board)
            .unwrap()
            .unwrap();
        assert_eq!(state.lower_bound, bounded.lower_bound);
        assert_eq!(state.best.unwrap().moves, bounded.moves);
        bounds.push(bounded.lower_bound);
    }

    // Without a limit: each first task starts at the stored bound, and the answers are optimal.
    let again = scheduler
        .submit(&lines, "linear-conflict", "")
        .unwrap()
        .batch;
    let (tasks, _) = scheduler.poll(worker, 4, Vec::new()).unwrap();
    let started: Vec<u32> = tasks.iter().map(|task| task.bound).collect();
    assert_eq!(started, bounds);
    let results = tasks.iter().map(truthful).collect();
    work_until_done(&mut scheduler, worker, 4, again, results);
    for (item, (board, optimal)) in scheduler.items(again).unwrap().iter().zip(&boards) {
        match &item.status {
            ItemStatus::Solved(solution) => assert_eq!(solution.length, *optimal, "{board}"),
            other => panic!("{board}: {other:?}"),
        }
    }
}

#[test]
fn a_weighted_task_answered_as_a_search_is_impossible_and_goes_back_to_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let mut scheduler = scheduler_in(dir.path(), SchedulerConfig::default());
    let line = vec![hard()[0].0.clone()];
    let fast = ItemLimits {
        suboptimal_percent: Some(150),
        ..ItemLimits::default()
    };
    let batch = submit_limited(&mut scheduler, &line, fast);
    let worker = scheduler.register(1, "test", None).unwrap();
    let (tasks, _) = scheduler.poll(worker, 1, Vec::new()).unwrap();
    assert!(tasks[0].weighted.is_some(), "{:?}", tasks[0]);
    // A search report for a weighted task, then a weighted report whose path is not one.
    let lies = [
        TaskOutcome::Exceeded(tasks[0].bound + 2),
        TaskOutcome::Weighted(Some((
            vec![Direction::Up; 60],
            tilesolve::heuristic::Weight::new(3, 2).unwrap(),
        ))),
    ];
    let mut task = tasks[0].clone();
    for lie in lies {
        let (next, _) = scheduler
            .poll(worker, 1, vec![TaskReport::new(task.id, lie, 10)])
            .unwrap();
        assert_eq!(next.len(), 1, "the task is back in the queue");
        task = next[0].clone();
    }
    work_until_done(&mut scheduler, worker, 1, batch, vec![truthful(&task)]);
    match &scheduler.items(batch).unwrap()[0].status {
        ItemStatus::Bounded(bounded) => {
            assert_eq!(bounded.weight_percent, 150);
            assert!(f64::from(bounded.length) <= 1.5 * f64::from(hard()[0].1));
        }
        other => panic!("{other:?}"),
    }
}
