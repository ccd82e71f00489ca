//! Task records: held, written a puzzle's group at a time, read beside values written one
//! record at a time by earlier versions, and replaced where they are.

use super::*;

fn record(bound: u32, path: &str) -> TaskRecord {
    TaskRecord {
        batch: 1,
        index: 0,
        bound,
        path: path.into(),
        iterate: false,
        outcome: RecordedOutcome::Exceeded(bound + 2),
        nodes: 10,
        seconds: 0.5,
        round_trip_seconds: 0.6,
        parts: vec![("UL".into(), 4, 7)],
        measured_after: false,
    }
}

fn eight_puzzles() -> (Board, Board, Board) {
    let goal = Board::blank_last(3);
    let board = tilesolve::parse_board("8,6,7,2,5,4,3,0,1").unwrap();
    let other = tilesolve::parse_board("1,2,3,4,5,6,7,0,8").unwrap();
    (goal, board, other)
}

/// Records (task id, bound, path) of the puzzle `board`, then flushes them.
fn put_and_flush(store: &Store, goal: &Board, board: &Board, records: &[(u64, u32, &str)]) {
    for &(task, bound, path) in records {
        store
            .put_task_record(goal, board, task, record(bound, path))
            .unwrap();
    }
    store.flush().unwrap();
}

/// A `tasks` key: the puzzle's, then a task id.
fn task_key(goal: &Board, board: &Board, task: u64) -> Vec<u8> {
    let mut key = board_key(goal, board);
    key.extend_from_slice(&task.to_be_bytes());
    key
}

#[test]
fn task_records_are_kept_per_puzzle_in_creation_order() {
    let dir = tempfile::tempdir().unwrap();
    let (goal, board, other) = eight_puzzles();
    {
        let store = Store::open(dir.path()).unwrap();
        store
            .put_task_record(&goal, &board, 300, record(29, "R"))
            .unwrap();
        store
            .put_task_record(&goal, &board, 7, record(27, "L"))
            .unwrap();
        store
            .put_task_record(&goal, &other, 8, record(1, ""))
            .unwrap();
        assert_eq!(
            store.task_records(&goal, &board).unwrap(),
            vec![record(27, "L"), record(29, "R")],
            "held records are read before they are written"
        );
        store.flush().unwrap();
        assert_eq!(
            store.tasks.len(),
            2,
            "a puzzle's records are written as one value"
        );
        put_and_flush(&store, &goal, &board, &[(301, 31, "U")]);
    }
    let store = reopen(dir.path());
    assert_eq!(
        store.task_records_with_ids(&goal, &board).unwrap(),
        vec![
            (7, record(27, "L")),
            (300, record(29, "R")),
            (301, record(31, "U"))
        ]
    );
    assert_eq!(store.task_records(&goal, &other).unwrap().len(), 1);
}

#[test]
fn records_written_one_at_a_time_as_json_are_read_beside_groups() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, _) = eight_puzzles();
    // As an earlier version wrote one: JSON, without the field added later.
    let old = r#"{"batch":1,"index":0,"bound":25,"path":"LU","iterate":false,"outcome":{"Exceeded":27},"nodes":10,"seconds":0.5,"round_trip_seconds":0.6,"parts":[["UL",4,7]]}"#;
    store
        .tasks
        .insert(task_key(&goal, &board, 3), old.as_bytes())
        .unwrap();
    store
        .put_task_record(&goal, &board, 9, record(27, "R"))
        .unwrap();
    store.flush().unwrap();
    assert_eq!(
        store.task_records_with_ids(&goal, &board).unwrap(),
        vec![(3, record(25, "LU")), (9, record(27, "R"))]
    );
}

#[test]
fn a_replaced_record_takes_the_place_of_the_old_one_wherever_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, _) = eight_puzzles();
    let old = serde_json::to_vec(&record(25, "LU")).unwrap();
    store.tasks.insert(task_key(&goal, &board, 3), old).unwrap();
    put_and_flush(
        &store,
        &goal,
        &board,
        &[(5, 27, "R"), (6, 27, "D"), (7, 27, "U")],
    );
    let measured = |path: &str| TaskRecord {
        outcome: RecordedOutcome::Exceeded(40),
        measured_after: true,
        ..record(27, path)
    };
    store
        .replace_task_records(
            &goal,
            &board,
            vec![(3, measured("LU")), (6, measured("D")), (8, measured("L"))],
        )
        .unwrap();
    assert_eq!(
        store.task_records_with_ids(&goal, &board).unwrap(),
        vec![
            (3, measured("LU")),
            (5, record(27, "R")),
            (6, measured("D")),
            (7, record(27, "U")),
            (8, measured("L")),
        ]
    );
}

#[test]
fn a_group_whose_key_is_taken_is_merged_into_what_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, _) = eight_puzzles();
    put_and_flush(&store, &goal, &board, &[(4, 27, "R"), (5, 27, "D")]);
    // Task 4 again (no scheduler does this: see the module's invariants), with another.
    put_and_flush(&store, &goal, &board, &[(4, 29, "RU"), (6, 29, "DL")]);
    assert_eq!(
        store.task_records_with_ids(&goal, &board).unwrap(),
        vec![
            (4, record(29, "RU")),
            (5, record(27, "D")),
            (6, record(29, "DL"))
        ]
    );
}

#[test]
fn a_longer_puzzle_key_starting_like_another_is_not_read_as_its() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, _) = eight_puzzles();
    put_and_flush(&store, &goal, &board, &[(1, 27, "R")]);
    let mut longer = task_key(&goal, &board, 1);
    longer.extend_from_slice(&[0; 4]);
    store
        .tasks
        .insert(longer, serde_json::to_vec(&record(99, "L")).unwrap())
        .unwrap();
    assert_eq!(
        store.task_records(&goal, &board).unwrap(),
        vec![record(27, "R")]
    );
}

#[test]
fn a_damaged_group_is_an_error_naming_the_tree_and_costs_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, other) = eight_puzzles();
    put_and_flush(&store, &goal, &board, &[(1, 27, "R"), (2, 27, "D")]);
    put_and_flush(&store, &goal, &other, &[(3, 1, "")]);
    let key = task_key(&goal, &board, 1);
    let value = store.tasks.get(&key).unwrap().unwrap().to_vec();
    for damaged in [
        value[..value.len() / 2].to_vec(),
        [&value[..1], &[0xff; 12][..], &value[1..]].concat(),
    ] {
        store.tasks.insert(&key, damaged).unwrap();
        match store.task_records(&goal, &board) {
            Err(StoreError::Corrupt { tree: "tasks", .. }) => {}
            other => panic!("a damaged group read as {other:?}"),
        }
        assert_eq!(store.task_records(&goal, &other).unwrap().len(), 1);
    }
    // A group whose key it holds is written over it, not failed on (a flush writes groups).
    put_and_flush(&store, &goal, &board, &[(1, 29, "U")]);
    assert_eq!(
        store.task_records_with_ids(&goal, &board).unwrap(),
        vec![(1, record(29, "U"))]
    );
}
