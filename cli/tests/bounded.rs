//! Bounded answers through the cluster: a coordinator and two worker processes on 127.0.0.1.
//! A node limit stops each board's optimal search and the board comes back `bounded` (a
//! replayed path, its proven lower bound, never called optimal); the store answers a query with
//! it; a resubmission without the limit resumes from the stored bound and proves the optimal
//! length; `--fast` asks for the bounded answer alone.

mod common;

use std::path::Path;

use common::{known_boards, run, worker, write_batch, Coordinator};
use tilesolve::moves::{moves_from_string, replay};
use tilesolve::parse_board;

/// Boards 6-9 of examples15: linear conflict proves each in 4-9 million nodes, far past the
/// limit the test sets.
fn hard_boards() -> Vec<(String, u64)> {
    known_boards(0)[5..9].to_vec()
}

/// `submit --wait --json` with the linear-conflict heuristic (no tables to build) and `extra`
/// flags: each item's JSON line.
fn submit_lines(url: &str, file: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec![
        "submit",
        "--coordinator",
        url,
        "--heuristic",
        "linear-conflict",
        "--wait",
        "--json",
    ];
    args.extend_from_slice(extra);
    args.push(file.to_str().unwrap());
    let (_, stdout, stderr) = run(&args);
    let items: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
    assert!(!items.is_empty(), "{stderr}");
    items
}

/// The item of `board` among `items`.
fn item<'a>(items: &'a [serde_json::Value], board: &str) -> &'a serde_json::Value {
    items
        .iter()
        .find(|item| item["board"] == board)
        .unwrap_or_else(|| panic!("{board} missing from {items:?}"))
}

/// Asserts that `item` is a bounded answer for a board of optimal length `optimal`: its moves
/// replay to the goal, its length is its moves', and the optimal length lies between its
/// lower bound and its length, which is at most its weight times the optimal.
fn assert_bounded(item: &serde_json::Value, optimal: u64) {
    assert_eq!(item["status"], "bounded", "{item}");
    let board = parse_board(item["board"].as_str().unwrap()).unwrap();
    let moves = moves_from_string(item["moves"].as_str().unwrap()).unwrap();
    replay(&board, &tilesolve::Board::blank_last(4), &moves)
        .unwrap_or_else(|e| panic!("{item}: {e}"));
    let length = item["length"].as_u64().unwrap();
    assert_eq!(length, moves.len() as u64, "{item}");
    let lower_bound = item["lower_bound"].as_u64().unwrap();
    assert!(lower_bound <= optimal && optimal <= length, "{item}");
    let weight = item["weight"].as_f64().unwrap();
    assert!(length as f64 <= weight * optimal as f64, "{item}");
}

#[test]
fn a_node_limit_gives_bounded_answers_that_a_later_search_resumes_and_proves() {
    let dir = tempfile::tempdir().unwrap();
    let boards = hard_boards();
    let path = dir.path().join("hard.txt");
    write_batch(&path, &boards, false);
    // Small splits: each board's search is many subtree tasks on both workers when the limit
    // stops it.
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--split-after", "20000"],
        &[],
    );
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];

    let limited = submit_lines(&url, &path, &["--node-limit", "100000"]);
    for (board, optimal) in &boards {
        assert_bounded(item(&limited, board), *optimal);
    }
    let (ok, stdout, _) = run(&["status", "--coordinator", &url, "--json", "1"]);
    assert!(ok, "{stdout}");
    let status: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        (&status["bounded"], &status["solved"], &status["done"]),
        (
            &serde_json::json!(4),
            &serde_json::json!(0),
            &serde_json::json!(true)
        ),
        "{status}"
    );

    // The store holds the bounded path, never as a solution.
    let (board, optimal) = &boards[0];
    let (found, stdout, _) = run(&["query", "--coordinator", &url, "--json", board]);
    assert!(
        !found,
        "a bounded answer is not a stored solution: {stdout}"
    );
    let queried: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        queried["length"],
        item(&limited, board)["length"],
        "{queried}"
    );
    assert_eq!(queried["status"], "bounded", "{queried}");
    assert!(queried["lower_bound"].as_u64().unwrap() <= *optimal);

    // Without the limit: each search starts from the bound its limited one proved, and ends
    // at the published optimal length.
    let proven = submit_lines(&url, &path, &[]);
    for (board, optimal) in &boards {
        let answer = item(&proven, board);
        assert_eq!(answer["status"], "solved", "{answer}");
        assert_eq!(answer["length"].as_u64(), Some(*optimal), "{answer}");
    }
    let log = server.log_text();
    for (board, _) in &boards {
        let bound = item(&limited, board)["lower_bound"].as_u64().unwrap();
        let resumed = log.lines().any(|line| {
            line.contains("search resumes from the board's stored lower bound")
                && line.contains("batch=2")
                && line.contains(&format!("stored_bound={bound} "))
        });
        assert!(
            resumed,
            "batch 2 did not resume {board} from {bound}:\n{log}"
        );
    }
    let (found, stdout, _) = run(&["query", "--coordinator", &url, "--json", board]);
    assert!(found, "{stdout}");
    assert!(
        stdout.contains(&format!("\"length\":{optimal}")),
        "{stdout}"
    );

    // The dashboard's submission takes the limits too, and refuses a bad one by name.
    let batches = format!("{url}/api/batches");
    let (board, optimal) = known_boards(0)[9].clone();
    let refused = ureq::post(&batches)
        .send_json(serde_json::json!({"lines": [board], "time_limit_seconds": -1.0}));
    match refused {
        Err(ureq::Error::Status(400, response)) => {
            let text = response.into_string().unwrap();
            assert!(text.contains("time_limit_seconds"), "{text}");
        }
        other => panic!("a negative time limit was taken: {other:?}"),
    }
    let submitted: serde_json::Value = ureq::post(&batches)
        .send_json(serde_json::json!({
            "lines": [board],
            "heuristic": "linear-conflict",
            "node_limit": 100000,
        }))
        .unwrap()
        .into_json()
        .unwrap();
    let page = format!("{batches}/{}", submitted["batch"]);
    let item = common::wait_until("the web batch", std::time::Duration::from_secs(60), || {
        let page: serde_json::Value = ureq::get(&page).call().ok()?.into_json().ok()?;
        page["status"]["done"]
            .as_bool()
            .filter(|&done| done)
            .map(|_| page["items"][0].clone())
    });
    assert_eq!(item["status"], "bounded", "{item}");
    let (length, lower_bound) = (item["length"].as_u64(), item["lower_bound"].as_u64());
    assert!(
        lower_bound < Some(optimal) && Some(optimal) < length,
        "{item}"
    );
}

#[test]
fn fast_asks_for_a_bounded_answer_alone() {
    let dir = tempfile::tempdir().unwrap();
    let boards = hard_boards();
    let path = dir.path().join("hard.txt");
    write_batch(&path, &boards, false);
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];
    let answers = submit_lines(&url, &path, &["--fast"]);
    for (board, optimal) in &boards {
        let answer = item(&answers, board);
        // A path that meets the heuristic's estimate is proven optimal, and called so.
        match answer["status"].as_str() {
            Some("solved") => assert_eq!(answer["length"].as_u64(), Some(*optimal)),
            _ => {
                assert_bounded(answer, *optimal);
                assert_eq!(answer["weight"], 1.5, "{answer}");
            }
        }
    }
    // A weight of 1 is the optimal search, and a bad limit is refused by name.
    for (flags, refusal) in [
        (&["--suboptimal", "1"][..], "--suboptimal 1"),
        (&["--time-limit=-2"][..], "--time-limit"),
    ] {
        let mut args = vec!["submit", "--coordinator", &url];
        args.extend_from_slice(flags);
        args.push(path.to_str().unwrap());
        let (ok, _, stderr) = run(&args);
        assert!(!ok && stderr.contains(refusal), "{flags:?}: {stderr}");
    }
}
