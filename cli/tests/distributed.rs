//! The distributed system as processes: a coordinator and two workers on 127.0.0.1, real gRPC,
//! real sled files; the coordinator is killed and restarted.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{
    assert_optimal, known_boards, lengths, run, stored_length, worker, write_batch, Coordinator,
    BIN,
};
use tilesolve::proto::v1 as pb;

#[test]
fn coordinator_and_two_workers_solve_optimally_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coordinator");
    let boards = known_boards(12);
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, true);
    let batch_path = path.to_str().unwrap();

    // Splitting after 20,000 nodes sends the harder puzzles out as many subtree tasks, and a
    // subtree budget of 10,000 sends large subtrees back split into their children.
    let server = Coordinator::start(
        &store,
        "127.0.0.1:0",
        &["--split-after", "20000", "--subtree-budget", "10000"],
        &[],
    );
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "pdb:5-5-5",
        "--wait",
        "--json",
        batch_path,
    ]);
    assert!(!ok, "the bad line makes the exit status non-zero");
    assert!(stderr.contains("23 boards (1 invalid"), "{stderr}");
    let results = lengths(&stdout);
    assert_eq!(results.len(), 23);
    let bad: Vec<_> = results
        .iter()
        .filter(|(_, length)| length.is_none())
        .collect();
    assert_eq!(bad.len(), 1);
    assert!(
        stdout.contains("\"line\":7") && stdout.contains("unexpected 'x' at column 7"),
        "{stdout}"
    );
    assert_optimal(&results, &boards);

    // The workers had no pattern databases: they fetched the coordinator's, zstd-compressed
    // (fewer bytes than the file), and the checksums verify.
    for name in ["w1", "w2"] {
        let log = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap();
        let fetched: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("pattern database fetched from the coordinator"))
            .collect();
        assert_eq!(fetched.len(), 3, "{log}");
        for line in fetched {
            let field = |key: &str| -> u64 {
                line.split_whitespace()
                    .find_map(|word| word.strip_prefix(key))
                    .and_then(|value| value.parse().ok())
                    .unwrap_or_else(|| panic!("{key} in {line}"))
            };
            assert!(line.contains("compressed=true"), "{line}");
            // A 5-tile 4x4 table, packed: the header and 524,160 placements at half a byte.
            assert_eq!(field("bytes="), 128 + 524_160 / 2, "{line}");
            assert!(field("transferred=") < field("bytes="), "{line}");
        }
        let (ok, stdout, _) = run(&[
            "pdb",
            "verify",
            "--data",
            dir.path().join(name).to_str().unwrap(),
        ]);
        assert!(ok && stdout.matches(" ok (").count() == 3, "{stdout}");
    }

    // Kill the coordinator outright and start another on the same files.
    server.process.kill();
    let server = Coordinator::start(&store, "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let (ok, stdout, _) = run(&["results", "--coordinator", &url, "--json", "1"]);
    assert!(!ok, "one item failed");
    assert_eq!(
        lengths(&stdout).iter().filter(|(_, l)| l.is_some()).count(),
        22
    );
    let (board, optimal) = &boards[9];
    let (ok, stdout, _) = run(&["query", "--coordinator", &url, "--json", board]);
    assert!(ok);
    assert!(
        stdout.contains(&format!("\"length\":{optimal}")),
        "{stdout}"
    );
    // A resubmitted batch is answered from the store: no worker is connected to this one.
    let (_, _, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "pdb:5-5-5",
        batch_path,
    ]);
    assert!(stderr.contains("22 answered from the store"), "{stderr}");
}

#[test]
fn a_worker_with_a_different_pattern_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (coordinator_dir, worker_dir) = (dir.path().join("coordinator"), dir.path().join("worker"));
    let (ok, stdout, _) = run(&[
        "pdb",
        "build",
        "5-5-5",
        "--data",
        coordinator_dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}");
    // The worker holds the same file with another checksum in its header.
    std::fs::create_dir_all(&worker_dir).unwrap();
    let name = "4x4-blank-last-1.2.5.6.9.pdb";
    let mut bytes = std::fs::read(coordinator_dir.join(name)).unwrap();
    bytes[80] ^= 1;
    std::fs::write(worker_dir.join(name), bytes).unwrap();

    let server = Coordinator::start(&coordinator_dir, "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let output = Command::new(BIN)
        .args(["worker", "--threads", "1", "--coordinator", &url, "--data"])
        .arg(&worker_dir)
        .output()
        .expect("run worker");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("pattern database {name} has checksum")),
        "{stderr}"
    );
}

/// A fresh coordinator that may not build tables takes them from the worker that holds them:
/// a batch nobody can supply is refused with the reason, one that a worker can supply is
/// acknowledged before the tables arrive, and ends optimal with the coordinator building
/// nothing.
#[test]
fn a_fresh_coordinator_takes_its_tables_from_a_worker_and_builds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (coordinator_dir, worker_dir) = (dir.path().join("coordinator"), dir.path().join("worker"));
    let (ok, stdout, _) = run(&[
        "pdb",
        "build",
        "5-5-5",
        "--data",
        worker_dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}");
    let boards = known_boards(0);
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, false);

    let server = Coordinator::start(&coordinator_dir, "127.0.0.1:0", &["--no-table-builds"], &[]);
    let url = server.url();
    let submit_args = ["submit", "--coordinator", &url, "--heuristic", "pdb:5-5-5"];
    let (ok, _, stderr) = run(&[&submit_args[..], &[path.to_str().unwrap()]].concat());
    assert!(
        !ok,
        "no worker holds the tables and the coordinator may not build them"
    );
    assert!(
        stderr.contains("no connected worker holds")
            && stderr.contains("4x4-blank-last-")
            && stderr.contains("--no-table-builds"),
        "{stderr}"
    );

    let _worker = worker(&url, &worker_dir, &[]);
    common::wait_until("the worker to register", Duration::from_secs(60), || {
        server
            .log_text()
            .contains("worker registered")
            .then_some(())
    });
    let (ok, stdout, stderr) = run(&[
        &submit_args[..],
        &["--wait", "--json", path.to_str().unwrap()],
    ]
    .concat());
    assert!(ok, "{stderr}");
    assert_optimal(&lengths(&stdout), &boards);

    let log = server.log_text();
    assert_eq!(
        log.matches("pattern table received from a worker").count(),
        3,
        "{log}"
    );
    assert!(!log.contains("building"), "{log}");
    // The coordinator's copies are the worker's, checksums verified.
    let (ok, stdout, _) = run(&["pdb", "verify", "--data", coordinator_dir.to_str().unwrap()]);
    assert!(ok && stdout.matches(" ok (").count() == 3, "{stdout}");
}

/// A batch larger than any one results message: `submit --wait` and `results` read it back page
/// by page, every answer optimal (distances by breadth-first search from the goal).
#[test]
fn a_batch_of_many_pages_comes_back_whole() {
    const BOARDS: usize = 25_000;
    let dir = tempfile::tempdir().unwrap();
    let distances = eight_puzzle_distances();
    let step = distances.len() / BOARDS;
    let mut text = String::new();
    for (board, distance) in distances.iter().step_by(step).take(BOARDS) {
        text.push_str(&format!("{board} # optimal={distance}\n"));
    }
    let path = dir.path().join("many.txt");
    std::fs::write(&path, text).unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--wait",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.lines().count(), BOARDS);
    assert!(
        stderr.contains(&format!(
            "lengths matching the file's optimal= facts: {BOARDS} of {BOARDS}"
        )),
        "{stderr}"
    );
    // JSON lines print the tiles, so they were asked for: one a move.
    for line in stdout.lines().take(100) {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let tiles = record["tiles"].as_array().map_or(0, Vec::len) as u64;
        assert_eq!(Some(tiles), record["length"].as_u64(), "{line}");
    }
    let (ok, stdout, stderr) = run(&["results", "--coordinator", &url, "--csv", "1"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout.lines().count(),
        BOARDS + 1,
        "a header and every item"
    );
    a_page_leaves_out_tiles_only_when_asked(&url);
}

#[test]
fn a_large_batch_is_held_in_the_store_but_a_window_and_survives_a_crash_there() {
    const BOARDS: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let distances = eight_puzzle_distances();
    let step = distances.len() / BOARDS;
    let boards: Vec<(String, usize)> = distances.into_iter().step_by(step).take(BOARDS).collect();
    let text: String = boards
        .iter()
        .map(|(board, _)| format!("{board}\n"))
        .collect();
    let path = dir.path().join("large.txt");
    std::fs::write(&path, text).unwrap();
    let data = dir.path().join("coordinator");
    let server = Coordinator::start(&data, "127.0.0.1:0", &[], &[]);
    let (address, url) = (server.address.clone(), server.url());
    // Linear conflict: no tables to wait for, so its puzzles start as it is taken in.
    let submit = [
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "linear-conflict",
        path.to_str().unwrap(),
    ];
    let (ok, stdout, stderr) = run(&submit);
    assert!(ok, "{stderr}");
    let batch = stdout.trim().to_string();
    // No worker yet: the window of a coordinator feeding no thread, 2,000 live puzzles; the
    // other 18,000 items wait in the store, pending all the same.
    assert_eq!(gauges(&url), (2_000, BOARDS as u64));
    server.process.kill();
    let server = Coordinator::start(&data, &address, &[], &[]);
    assert_eq!(gauges(&url), (2_000, BOARDS as u64), "resumed the same way");
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];
    common::wait_until("the batch to finish", Duration::from_secs(300), || {
        (common::status(&url, &batch, &[])?["done"] == true).then_some(())
    });
    let (ok, stdout, stderr) = run(&["results", "--coordinator", &url, "--json", &batch]);
    assert!(ok, "{stderr}");
    let answers = lengths(&stdout);
    assert_eq!(answers.len(), BOARDS);
    for ((board, length), (expected, distance)) in answers.iter().zip(&boards) {
        assert_eq!(board, expected);
        assert_eq!(*length, Some(*distance as u64), "{board}");
    }
    assert_eq!(gauges(&url), (0, 0));
    assert_eq!(server.log_text().matches("coordinator serving").count(), 2);
}

/// The coordinator's `tilesolve_puzzles_live` and `tilesolve_puzzles_pending`.
fn gauges(url: &str) -> (u64, u64) {
    let metrics = ureq::get(&format!("{url}/metrics")).call().unwrap();
    let metrics = metrics.into_string().unwrap();
    let gauge = |name: &str| -> u64 {
        let line = metrics
            .lines()
            .find(|line| line.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name}: {metrics}"));
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<f64>()
            .unwrap() as u64
    };
    (
        gauge("tilesolve_puzzles_live"),
        gauge("tilesolve_puzzles_pending"),
    )
}

/// A results page with `without_tiles` carries the same answers with no tiles; without it, the
/// tiles the moves slide.
fn a_page_leaves_out_tiles_only_when_asked(url: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let page = |without_tiles: bool| {
        runtime.block_on(async {
            let mut client = pb::tilesolve_client::TilesolveClient::connect(url.to_string())
                .await
                .unwrap();
            let request = pb::GetBatchRequest {
                batch_id: 1,
                page_size: 200,
                without_tiles,
                ..Default::default()
            };
            client.get_batch(request).await.unwrap().into_inner().items
        })
    };
    let solutions = |items: Vec<pb::ItemResult>| -> Vec<(String, pb::SolutionRecord)> {
        items
            .into_iter()
            .filter_map(|item| match item.outcome {
                Some(pb::item_result::Outcome::Solution(solution)) => Some((item.board, solution)),
                _ => None,
            })
            .collect()
    };
    let (with, without) = (solutions(page(false)), solutions(page(true)));
    assert_eq!(with.len(), 200);
    assert_eq!(with.len(), without.len());
    for ((board, full), (_, bare)) in with.iter().zip(&without) {
        assert!(bare.tiles.is_empty());
        assert_eq!((&bare.moves, bare.length), (&full.moves, full.length));
        let start = tilesolve::parse_board(board).unwrap();
        let moves = tilesolve::moves::moves_from_string(&full.moves).unwrap();
        let slid = tilesolve::moves::replay(&start, &tilesolve::Board::blank_last(3), &moves);
        let slid: Vec<u32> = slid.unwrap().into_iter().map(u32::from).collect();
        assert_eq!(full.tiles, slid, "{board}");
    }
}

/// Every 3x3 board solvable towards the blank-last goal, with its distance, in BFS order.
fn eight_puzzle_distances() -> Vec<(String, usize)> {
    let goal: Vec<u8> = vec![1, 2, 3, 4, 5, 6, 7, 8, 0];
    let mut seen = std::collections::HashSet::from([goal.clone()]);
    let mut order = vec![(goal, 0)];
    let mut next = 0;
    while next < order.len() {
        let (board, distance) = order[next].clone();
        next += 1;
        let blank = board.iter().position(|&t| t == 0).unwrap();
        let (row, col) = (blank / 3, blank % 3);
        let mut targets = Vec::new();
        if row > 0 {
            targets.push(blank - 3);
        }
        if row < 2 {
            targets.push(blank + 3);
        }
        if col > 0 {
            targets.push(blank - 1);
        }
        if col < 2 {
            targets.push(blank + 1);
        }
        for target in targets {
            let mut child = board.clone();
            child.swap(blank, target);
            if seen.insert(child.clone()) {
                order.push((child, distance + 1));
            }
        }
    }
    order
        .into_iter()
        .map(|(board, distance)| {
            let text: Vec<String> = board.iter().map(u8::to_string).collect();
            (text.join(","), distance)
        })
        .collect()
}

#[test]
fn export_then_import_into_a_fresh_coordinator_answers_every_board_optimally() {
    let dir = tempfile::tempdir().unwrap();
    let mut boards = known_boards(0);
    boards.truncate(6);
    boards.push(("8,6,7,2,5,4,3,0,1".into(), 31));
    boards.push(("1,2,3,4,5,6,0,7,8".into(), 2));
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, false);
    let exported = dir.path().join("answers.jsonl");
    {
        let source = Coordinator::start(&dir.path().join("source"), "127.0.0.1:0", &[], &[]);
        let url = source.url();
        let _worker = worker(&url, &dir.path().join("w1"), &[]);
        let (ok, _, stderr) = run(&[
            "submit",
            "--coordinator",
            &url,
            "--heuristic",
            "linear-conflict",
            "--wait",
            path.to_str().unwrap(),
        ]);
        assert!(ok, "{stderr}");
        let (ok, _, stderr) = run(&[
            "export",
            "--coordinator",
            &url,
            "-o",
            exported.to_str().unwrap(),
        ]);
        assert!(ok, "{stderr}");
        assert!(stderr.contains("exported 8 answers"), "{stderr}");
    }
    // Tamper with the file: one answer two moves too long (a step up and back first), and one
    // line whose moves leave the board.
    let text = std::fs::read_to_string(&exported).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if record["board"] == "8,6,7,2,5,4,3,0,1" {
                let moves = format!("UD{}", record["moves"].as_str().unwrap());
                record["moves"] = moves.into();
                record["length"] = 33.into();
            }
            record.to_string()
        })
        .collect();
    lines.push(
        serde_json::json!({"board": "4,1,3,7,2,6,0,5,8", "goal": "1,2,3,4,5,6,7,8,0",
            "moves": "LLLL", "length": 4, "heuristic": "x"})
        .to_string(),
    );
    std::fs::write(&exported, lines.join("\n") + "\n").unwrap();

    let target = Coordinator::start(&dir.path().join("target"), "127.0.0.1:0", &[], &[]);
    let url = target.url();
    let _worker = worker(&url, &dir.path().join("w2"), &[]);
    let (ok, stdout, stderr) = run(&[
        "import",
        "--coordinator",
        &url,
        "--heuristic",
        "linear-conflict",
        "--wait",
        "--json",
        exported.to_str().unwrap(),
    ]);
    assert!(!ok, "the bad line makes the import report a failure");
    assert!(stdout.contains("moves=: move 1 (L)"), "{stdout}\n{stderr}");
    for (board, optimal) in &boards {
        assert_eq!(stored_length(&url, board), Some(*optimal), "{board}");
    }
}

/// (line, board, length, error) of each item of `batch`, from `results --json`.
fn item_outcomes(url: &str, batch: &str) -> Vec<(u64, String, Option<u64>, Option<String>)> {
    let (ok, stdout, stderr) = run(&["results", "--coordinator", url, "--json", batch]);
    assert!(
        ok || stdout.contains("error") || stdout.contains("cancelled"),
        "{stderr}"
    );
    stdout
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                value["line"].as_u64().unwrap_or(0),
                value["board"].as_str().unwrap_or_default().to_string(),
                value["length"].as_u64(),
                // A cancelled item is no error: it says so in its status.
                value["error"]
                    .as_str()
                    .or((value["status"] == "cancelled").then_some("cancelled"))
                    .map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn export_with_batches_then_import_submits_the_same_batches_again() {
    let dir = tempfile::tempdir().unwrap();
    let easy = dir.path().join("easy.txt");
    std::fs::write(
        &easy,
        "# 3x3 and 4x4 boards (each towards its own default goal) and a bad line\n\
         8,6,7,2,5,4,3,0,1\n1,2,3\n\n1,2,3,4,5,6,0,7,8\n1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15\n",
    )
    .unwrap();
    let hard = dir.path().join("hard.txt");
    write_batch(&hard, &known_boards(1)[10..], false);
    let exported = dir.path().join("backup.jsonl");
    let source_outcomes = {
        let source = Coordinator::start(&dir.path().join("source"), "127.0.0.1:0", &[], &[]);
        let url = source.url();
        let _worker = worker(&url, &dir.path().join("w1"), &[]);
        let submit = |file: &Path, wait: bool| {
            let mut args = vec!["submit", "--coordinator", &url, "--heuristic", "manhattan"];
            if wait {
                args.push("--wait");
            }
            args.push(file.to_str().unwrap());
            run(&args)
        };
        let (_, _, stderr) = submit(&easy, true);
        assert!(stderr.contains("1 invalid"), "{stderr}");
        // A 15-puzzle that Manhattan takes a while over, cancelled at once.
        let (ok, id, stderr) = submit(&hard, false);
        assert!(ok && id.trim() == "2", "{id} {stderr}");
        let (ok, _, stderr) = run(&["cancel", "--coordinator", &url, "2"]);
        assert!(ok, "{stderr}");
        let (ok, _, stderr) = run(&[
            "export",
            "--coordinator",
            &url,
            "--batches",
            "-o",
            exported.to_str().unwrap(),
        ]);
        assert!(ok, "{stderr}");
        assert!(
            stderr.contains("exported 3 answers and 2 batches"),
            "{stderr}"
        );
        (item_outcomes(&url, "1"), item_outcomes(&url, "2"))
    };
    assert_eq!(
        source_outcomes
            .0
            .iter()
            .map(|o| (o.0, o.2))
            .collect::<Vec<_>>(),
        vec![(2, Some(31)), (3, None), (5, Some(2)), (6, Some(1))]
    );
    assert_eq!(source_outcomes.1[0].3.as_deref(), Some("cancelled"));

    let target = Coordinator::start(&dir.path().join("target"), "127.0.0.1:0", &[], &[]);
    let url = target.url();
    let _worker = worker(&url, &dir.path().join("w2"), &[]);
    let (ok, _, stderr) = run(&[
        "import",
        "--coordinator",
        &url,
        "--heuristic",
        "linear-conflict",
        exported.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    // The answers go first (a batch per goal, here 3x3 and 4x4: batches 1 and 2, removed
    // once proven), then the batches, with new ids.
    assert!(stderr.contains("batch 1 imported as batch 3"), "{stderr}");
    assert!(stderr.contains("batch 2 imported as batch 4"), "{stderr}");
    common::wait_until(
        "the imported batches to end",
        Duration::from_secs(120),
        || {
            let (_, listed, _) = run(&["batches", "--coordinator", &url]);
            (listed.lines().count() == 2 && !listed.contains("running")).then_some(())
        },
    );
    // The same items at the same lines with the same answers and errors, from the store.
    assert_eq!(item_outcomes(&url, "3"), source_outcomes.0);
    assert_eq!(item_outcomes(&url, "4"), source_outcomes.1);
}

#[test]
fn serve_keeps_batches_only_as_long_as_told_and_keeps_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = run(&["serve", "--keep-batches-days", "0"]);
    assert!(
        !ok && stderr.contains("not a number of days above 0"),
        "{stderr}"
    );
    // 0.00005 days is 4.3 s; the coordinator looks every 10 s at most.
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--keep-batches-days", "0.00005"],
        &[],
    );
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w1"), &[]);
    let path = dir.path().join("batch.txt");
    std::fs::write(&path, "8,6,7,2,5,4,3,0,1\n").unwrap();
    let (ok, _, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "manhattan",
        "--wait",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    common::wait_until(
        "the finished batch to be pruned",
        Duration::from_secs(60),
        || {
            let (ok, listed, _) = run(&["batches", "--coordinator", &url]);
            (ok && listed.trim().is_empty()).then_some(())
        },
    );
    assert_eq!(stored_length(&url, "8,6,7,2,5,4,3,0,1"), Some(31));
    assert!(
        server.log_text().contains("batches pruned"),
        "{}",
        server.log_text()
    );
}

#[test]
fn prune_removes_old_finished_batches_and_keeps_or_drops_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w1"), &[]);
    let path = dir.path().join("batch.txt");
    std::fs::write(&path, "8,6,7,2,5,4,3,0,1\n1,2,3,4,5,6,0,7,8\n").unwrap();
    let submit = || {
        let (ok, _, stderr) = run(&[
            "submit",
            "--coordinator",
            &url,
            "--heuristic",
            "manhattan",
            "--wait",
            path.to_str().unwrap(),
        ]);
        assert!(ok, "{stderr}");
    };
    let prune = |args: &[&str]| {
        let mut all = vec!["prune", "--coordinator", &url];
        all.extend_from_slice(args);
        let (ok, stdout, stderr) = run(&all);
        assert!(ok, "{stderr}");
        stdout
    };
    let query = || stored_length(&url, "8,6,7,2,5,4,3,0,1");
    submit();
    submit();
    assert!(prune(&["--older-than-days", "30"]).starts_with("pruned 0 batches"));
    let counted = prune(&["--older-than-days", "0", "--dry-run"]);
    assert!(
        counted.starts_with("would prune 2 batches (4 items) of the 2 finished batches"),
        "{counted}"
    );
    // Every finished batch: counted, and removed only with --yes.
    let refused = Command::new(BIN)
        .args(["prune", "--coordinator", &url, "--older-than-days", "0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("every finished batch") && stderr.contains("--yes"),
        "{stderr}"
    );
    let (ok, listed, _) = run(&["batches", "--coordinator", &url]);
    assert!(
        ok && listed.lines().count() == 2,
        "nothing removed: {listed}"
    );
    let pruned = prune(&["--older-than-days", "0", "--yes"]);
    assert!(
        pruned.starts_with("pruned 2 batches (4 items, 0 stored boards)"),
        "{pruned}"
    );
    let (ok, listed, _) = run(&["batches", "--coordinator", &url]);
    assert!(ok && listed.trim().is_empty(), "{listed}");
    assert_eq!(query(), Some(31));
    // With --solutions the answers go too: every board on their paths.
    submit();
    let pruned = prune(&["--older-than-days", "0", "--solutions", "--yes"]);
    assert!(
        pruned.starts_with("pruned 1 batches (2 items, 33 stored boards)"),
        "{pruned}"
    );
    assert_eq!(query(), None);
}
