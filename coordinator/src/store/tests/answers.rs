//! Answers and their path boards, search states and task records, in every shape and every
//! older format the store reads.
use super::*;

fn solved_eight_puzzle() -> (Board, Board, Solution) {
    let goal = Board::blank_last(3);
    let board = tilesolve::parse_board("8,6,7,2,5,4,3,0,1").unwrap();
    let solution = Solver::new(goal, HeuristicKind::Manhattan)
        .solve(&board, &SolveOptions::default(), None)
        .unwrap();
    (goal, board, solution)
}

#[test]
fn json_values_of_earlier_versions_are_read_beside_compact_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, solution) = solved_eight_puzzle();
    // As an earlier version wrote them: JSON, empty fields left out.
    let old_solution = r#"{"length":2,"moves":"DR","tiles":[6,8],"nodes":3,"seconds":0.5,"heuristic":"manhattan"}"#;
    let old_item = format!(
        r#"{{"text":"{board}","line":4,"board":"{board}","goal":"{goal}","status":{{"Solved":{old_solution}}}}}"#
    );
    store
        .answers
        .put(&board_key(&goal, &board), old_solution.as_bytes())
        .unwrap();
    store
        .items
        .insert(item_key(9, 0), old_item.as_bytes())
        .unwrap();
    let expected = StoredSolution {
        length: 2,
        moves: "DR".into(),
        tiles: vec![6, 8],
        nodes: 3,
        seconds: 0.5,
        heuristic: "manhattan".into(),
        workers: Vec::new(),
    };
    assert_eq!(
        store.solution(&goal, &board).unwrap(),
        Some(expected.clone())
    );
    let read = store.item(9, 0).unwrap().expect("stored");
    assert_eq!((read.line, read.claimed.as_deref()), (Some(4), None));
    assert_eq!(read.status, ItemStatus::Solved(expected));
    // Written again, compact, and read back the same.
    store.put_item(9, 1, &read).unwrap();
    assert_eq!(
        store.items.get(item_key(9, 1)).unwrap().unwrap()[0],
        COMPACT
    );
    assert_eq!(store.item(9, 1).unwrap(), Some(read));
    store
        .put_solution(&solution, "manhattan", &[7], PathBoards::Skipped)
        .unwrap();
    let stored = store.solution(&goal, &board).unwrap().expect("stored");
    assert_eq!((stored.length, stored.workers), (31, vec![7]));
}

#[test]
fn a_cheap_answer_stores_its_board_and_not_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, solution) = solved_eight_puzzle();
    store
        .put_solution(&solution, "manhattan", &[], PathBoards::Skipped)
        .unwrap();
    let stored = store.solution(&goal, &board).unwrap().expect("stored");
    assert_eq!(stored.length, 31);
    assert!(Store::verified(&goal, &board, &stored).is_some());
    let next = board.apply(solution.moves[0]).unwrap().0;
    assert!(store.solution(&goal, &next).unwrap().is_none());
}

#[test]
fn every_board_on_a_solution_path_is_stored_with_its_distance() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, solution) = solved_eight_puzzle();
    store
        .put_solution(&solution, "manhattan", &[], PathBoards::Stored)
        .unwrap();
    let mut current = board;
    for (step, &direction) in solution.moves.iter().enumerate() {
        let stored = store.solution(&goal, &current).unwrap().expect("stored");
        assert_eq!(stored.length as usize, 31 - step);
        assert!(Store::verified(&goal, &current, &stored).is_some());
        current = current.apply(direction).unwrap().0;
    }
    assert_eq!(store.solution(&goal, &goal).unwrap().unwrap().length, 0);
    let other_goal = Board::blank_first(3);
    assert!(
        store.solution(&other_goal, &board).unwrap().is_none(),
        "solutions are per goal"
    );
    let mut forged = store.solution(&goal, &board).unwrap().unwrap();
    forged.moves = "UUUU".into();
    assert!(
        Store::verified(&goal, &board, &forged).is_none(),
        "a stored answer is replayed, not trusted"
    );
}

#[test]
fn search_state_is_kept_until_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let goal = Board::blank_last(3);
    let board = tilesolve::parse_board("2,4,0,1,8,5,3,6,7").unwrap();
    let state = SearchState {
        lower_bound: 24,
        workers: vec![7],
        best: Some(BestPath {
            moves: "DRUL".into(),
            weight_percent: 150,
        }),
    };
    store
        .put_search_state(&goal, &board, state.clone())
        .unwrap();
    assert_eq!(store.search_state(&goal, &board).unwrap(), Some(state));
    // Storing the answer leaves it (the scheduler removes it if its puzzle stored one).
    let solution = Solver::new(goal, HeuristicKind::Manhattan)
        .solve(&board, &SolveOptions::default(), None)
        .unwrap();
    store
        .put_solution(&solution, "manhattan", &[], PathBoards::Stored)
        .unwrap();
    assert!(store.search_state(&goal, &board).unwrap().is_some());
    store.remove_search_state(&goal, &board).unwrap();
    assert_eq!(store.search_state(&goal, &board).unwrap(), None);
}

#[test]
fn solutions_of_every_shape_keep_their_shape_in_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let shapes = [(3, 4), (4, 3), (2, 6), (6, 2), (4, 4)];
    let mut stored = Vec::new();
    for (rows, cols) in shapes {
        let goal = Board::blank_last_in(Shape::new(rows, cols).unwrap());
        let board = goal.apply(Direction::Up).unwrap().0;
        let solution = Solver::new(goal, HeuristicKind::Manhattan)
            .solve(&board, &SolveOptions::default(), None)
            .unwrap();
        store
            .put_solution(&solution, "manhattan", &[], PathBoards::Stored)
            .unwrap();
        stored.push((goal, board));
    }
    // 3x4 and 4x3 (and 2x6 and 6x2) have as many cells and goals of the same values.
    for (goal, board) in &stored {
        let found = store.solution(goal, board).unwrap().expect("stored");
        assert_eq!(found.length, 1, "{board}");
    }
    let mut read: Vec<(Board, Board)> = store
        .searched_solutions()
        .map(|entry| entry.map(|(goal, board, _)| (goal, board)).unwrap())
        .collect();
    read.sort_by_key(|(_, board)| board.to_string());
    stored.sort_by_key(|(_, board)| board.to_string());
    assert_eq!(read, stored);
}

#[test]
fn a_store_of_format_3_has_its_answers_moved_out_of_sled_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let (goal, board, _) = solved_eight_puzzle();
    let old_solution = r#"{"length":2,"moves":"DR","tiles":[6,8],"nodes":3,"seconds":0.5,"heuristic":"manhattan"}"#;
    {
        let store = Store::open(dir.path()).unwrap();
        // As format 3 kept them: in sled's `solutions` tree.
        store
            .solutions
            .insert(board_key(&goal, &board), old_solution.as_bytes())
            .unwrap();
        store
            .meta
            .insert(meta_key("format"), &3u64.to_be_bytes())
            .unwrap();
        store.flush().unwrap();
    }
    let store = reopen(dir.path());
    assert!(store.solutions.is_empty(), "moved out of the tree");
    let moved = store.solution(&goal, &board).unwrap().expect("moved");
    assert_eq!((moved.length, moved.moves.as_str()), (2, "DR"));
    assert_eq!(store.meta_u64("format").unwrap(), Some(STORE_FORMAT));
    assert_eq!(store.searched_solutions().count(), 1);
}

/// A board's own answer rests on its own workers: another answer whose path passes the board
/// does not overwrite it, so withdrawing that answer's workers leaves it stored (an item
/// answered with it stayed solved while the store had lost it).
#[test]
fn a_path_board_keeps_the_answer_it_had_and_its_workers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, solution) = solved_eight_puzzle();
    let (on_path, _) = board.apply(solution.moves[0]).unwrap();
    let solver = Solver::new(goal, HeuristicKind::Manhattan);
    let own = solver
        .solve(&on_path, &SolveOptions::default(), None)
        .unwrap();
    store
        .put_solution(&own, "manhattan", &[1], PathBoards::Stored)
        .unwrap();
    store
        .put_solution(&solution, "manhattan", &[2], PathBoards::Stored)
        .unwrap();
    assert_eq!(
        store.solution(&goal, &on_path).unwrap().unwrap().workers,
        vec![1]
    );
    store.withdraw_worker(2).unwrap();
    assert_eq!(store.solution(&goal, &board).unwrap(), None);
    assert_eq!(
        store.solution(&goal, &on_path).unwrap().unwrap().workers,
        vec![1]
    );
}

/// From the moment a worker is quarantined its answers and bounds are not read, though the
/// pass that removes them runs later (outside the scheduler's lock); an answer stored over one
/// of them meanwhile, on other workers' reports, outlives that pass.
#[test]
fn a_quarantined_workers_answers_are_unread_at_once_and_an_answer_put_over_them_stays() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (goal, board, solution) = solved_eight_puzzle();
    store
        .put_solution(&solution, "manhattan", &[7], PathBoards::Skipped)
        .unwrap();
    let bound = SearchState {
        lower_bound: 29,
        workers: vec![7],
        best: None,
    };
    store.put_search_state(&goal, &board, bound).unwrap();
    store.withdraw_from_reads(7);
    assert_eq!(store.solution(&goal, &board).unwrap(), None);
    assert_eq!(store.search_state(&goal, &board).unwrap(), None);
    assert_eq!(store.searched_solutions().count(), 0);
    // Solved again by another worker before the pass ran.
    store
        .put_solution(&solution, "manhattan", &[8], PathBoards::Skipped)
        .unwrap();
    assert_eq!(store.withdraw_worker(7).unwrap(), (0, 1));
    assert_eq!(
        store.solution(&goal, &board).unwrap().unwrap().workers,
        vec![8]
    );
}

/// An answer's tiles are written as one run of bytes: compact and in JSON they are the same
/// bytes as the list of numbers written before, so stores and backups of either read alike.
#[test]
fn tiles_written_as_a_run_of_bytes_are_the_bytes_a_list_was() {
    #[derive(serde::Serialize)]
    struct AsListed {
        length: u32,
        moves: String,
        tiles: Vec<u8>,
        nodes: u64,
        seconds: f64,
        heuristic: String,
        workers: Vec<u64>,
    }
    let tiles = vec![6, 8, 0, 15, 24, 200];
    let listed = AsListed {
        length: 6,
        moves: "DRULDR".into(),
        tiles: tiles.clone(),
        nodes: 9,
        seconds: 0.25,
        heuristic: "manhattan".into(),
        workers: vec![3],
    };
    let solution = StoredSolution {
        length: 6,
        moves: "DRULDR".into(),
        tiles,
        nodes: 9,
        seconds: 0.25,
        heuristic: "manhattan".into(),
        workers: vec![3],
    };
    let compact = format::encode_compact(&listed);
    assert_eq!(format::encode_compact(&solution), compact);
    assert_eq!(
        format::decode::<StoredSolution>("solutions", &compact).unwrap(),
        solution
    );
    let json = serde_json::to_vec(&listed).unwrap();
    assert_eq!(serde_json::to_vec(&solution).unwrap(), json);
    assert_eq!(
        serde_json::from_slice::<StoredSolution>(&json).unwrap(),
        solution
    );
    let value = serde_json::to_value(&listed).unwrap();
    assert_eq!(
        serde_json::from_value::<StoredSolution>(value).unwrap(),
        solution
    );
}
