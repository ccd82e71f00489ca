//! Rectangles through the cluster: a coordinator and two worker processes on 127.0.0.1 solve
//! 3x4, 2x6, 4x5 and 5x6 random-walk boards (beside a 3x3 one) given every way a shape can be
//! given: a `size=` fact, rows in braces, `submit --size`. `default` takes each shape's
//! `blocks-K` tables within an 8 MiB budget (5x6 has none: linear conflict). Lengths are checked against a
//! bidirectional breadth-first search for 3x4 and 2x6, and against IDA* with another heuristic
//! (Manhattan) in this process for the larger shapes; the store answers a query for each, and
//! the embedded `batch` gives the same lengths.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{run, walked_in, worker, Coordinator};
use tilesolve::moves::{moves_from_string, replay};
use tilesolve::{parse_board, Board, Direction, HeuristicKind, Shape, SolveOptions, Solver};

/// The length of a shortest path from `board` to `goal`, by breadth-first search from both ends
/// (no heuristic at all).
fn breadth_first_length(board: Board, goal: Board) -> u64 {
    if board == goal {
        return 0;
    }
    let mut seen = [
        HashMap::from([(board, 0u64)]),
        HashMap::from([(goal, 0u64)]),
    ];
    let mut frontier = [vec![board], vec![goal]];
    let mut depth = [0u64, 0u64];
    loop {
        let side = usize::from(frontier[0].len() > frontier[1].len());
        let mut next = Vec::new();
        let mut best = None;
        for state in std::mem::take(&mut frontier[side]) {
            for direction in Direction::ALL {
                let Some((child, _)) = state.apply(direction) else {
                    continue;
                };
                if let Some(&other) = seen[1 - side].get(&child) {
                    let length = depth[side] + 1 + other;
                    best = Some(best.map_or(length, |b: u64| b.min(length)));
                }
                if !seen[side].contains_key(&child) {
                    seen[side].insert(child, depth[side] + 1);
                    next.push(child);
                }
            }
        }
        if let Some(length) = best {
            return length;
        }
        depth[side] += 1;
        frontier[side] = next;
    }
}

fn manhattan_length(board: &str, shape: Shape) -> u64 {
    let board = parse_board(board).unwrap();
    let solver = Solver::new(Board::blank_last_in(shape), HeuristicKind::Manhattan);
    let solution = solver
        .solve(&board, &SolveOptions::default(), None)
        .unwrap();
    solution.moves.len() as u64
}

/// The boards and their lengths, each checked by a method other than the one that found it.
fn checked_boards() -> Vec<(String, Shape, u64)> {
    let mut boards = Vec::new();
    for (rows, cols, steps) in [(3, 4, 60), (2, 6, 60), (4, 5, 50), (5, 6, 40)] {
        let shape = Shape::new(rows, cols).unwrap();
        for (board, length) in walked_in(shape, steps, 2, 0x51_7cc1_b727 + rows as u64) {
            let check = if shape.cells() <= 12 {
                breadth_first_length(parse_board(&board).unwrap(), Board::blank_last_in(shape))
            } else {
                manhattan_length(&board, shape)
            };
            assert_eq!(check, length, "{board}");
            boards.push((board, shape, length));
        }
    }
    boards
}

/// The board's values without braces, as a file given `--size` or a `size=` fact holds them.
fn bare(board: &str) -> String {
    board.replace(['{', '}'], "")
}

/// The 8 MiB table budget every process of the test is given: small blocks, built in moments.
const BUDGET: [&str; 2] = ["--memory-budget", "8"];

/// Each JSON line's board and length; every path replayed to the goal of the board's shape,
/// and found with the shape's pattern tables where it has them.
fn answers(stdout: &str) -> Vec<(String, u64)> {
    stdout
        .lines()
        .map(|line| {
            let item: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(item["status"], "solved", "{item}");
            let board = parse_board(item["board"].as_str().unwrap()).unwrap();
            let moves = moves_from_string(item["moves"].as_str().unwrap()).unwrap();
            let goal = Board::blank_last_in(board.shape());
            assert!(replay(&board, &goal, &moves).is_ok(), "{item}");
            if let Some(heuristic) = item["heuristic"].as_str() {
                let tabled = board.shape().cells() <= 20 && board.shape().square_side().is_none();
                assert_eq!(heuristic.starts_with("pdb:blocks-"), tabled, "{item}");
            }
            (board.to_string(), item["length"].as_u64().unwrap())
        })
        .collect()
}

fn assert_lengths(answered: &[(String, u64)], boards: &[(String, Shape, u64)]) {
    assert_eq!(answered.len(), boards.len(), "{answered:?}");
    for ((got, length), (board, _, optimal)) in answered.iter().zip(boards) {
        assert_eq!((got, length), (board, optimal));
    }
}

#[test]
fn rectangles_are_solved_optimally_by_the_cluster_the_store_and_batch() {
    let boards = checked_boards();
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &BUDGET, &[]);
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &BUDGET),
        worker(&url, &dir.path().join("w2"), &BUDGET),
    ];

    // Half the lines give a size= fact, half their rows in braces; one 3x3 board among them.
    let mut text: String = boards
        .iter()
        .enumerate()
        .map(|(i, (board, shape, _))| match i % 2 {
            0 => format!("{} # size={shape}\n", bare(board)),
            _ => format!("{board}\n"),
        })
        .collect();
    text.push_str("1,2,3,4,5,6,0,7,8\n");
    let file = dir.path().join("rectangles.txt");
    std::fs::write(&file, text).unwrap();
    let submit = |file: &Path, extra: &[&str]| {
        let mut args = vec!["submit", "--coordinator", &url, "--wait", "--json"];
        args.extend_from_slice(extra);
        args.push(file.to_str().unwrap());
        let (ok, stdout, stderr) = run(&args);
        assert!(ok, "{stderr}\n{stdout}");
        answers(&stdout)
    };
    let mut answered = submit(&file, &[]);
    assert_eq!(answered.pop(), Some(("1,2,3,4,5,6,0,7,8".into(), 2)));
    assert_lengths(&answered, &boards);

    // Bare values of one shape with --size; answered from the store, as a query is.
    let twelve: Vec<_> = boards
        .iter()
        .filter(|(_, s, _)| s.cols() == 4)
        .cloned()
        .collect();
    let twelve_file = dir.path().join("twelve.txt");
    let bare_lines: String = twelve.iter().map(|(b, _, _)| bare(b) + "\n").collect();
    std::fs::write(&twelve_file, bare_lines).unwrap();
    assert_lengths(&submit(&twelve_file, &["--size", "3x4"]), &twelve);
    for (board, shape, optimal) in &boards {
        let shape = shape.to_string();
        let (ok, stdout, stderr) = run(&[
            "query",
            "--coordinator",
            &url,
            "--json",
            "--size",
            &shape,
            &bare(board),
        ]);
        assert!(ok, "{stderr}");
        assert_eq!(answers(&stdout), vec![(board.clone(), *optimal)]);
    }

    // The embedded batch, on its own data directory, agrees.
    let (_, stdout, stderr) = run(&[
        "batch",
        BUDGET[0],
        BUDGET[1],
        "--data",
        dir.path().join("embedded").to_str().unwrap(),
        "--json",
        file.to_str().unwrap(),
    ]);
    let mut answered = answers(&stdout);
    assert_eq!(answered.pop().map(|(_, l)| l), Some(2), "{stderr}");
    assert_lengths(&answered, &boards);
}
