//! A backup that round-trips: a store holding 3x3, 4x4 and 5x5 answers (the 3x3 ones proven
//! by the exact table, which expands nothing) and their batches, exported, imported into a
//! fresh coordinator with a heuristic that fits only one of the sizes, and exported again:
//! the same answers and the same batch outcomes, with every length checked, and the batches'
//! limits and submission times kept; imported a second time, nothing changes.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{known_boards, run, stored_length, walked, worker, write_batch, Coordinator};

/// The answers of an export file: board -> (goal, length), and its batches' items:
/// (batch's place in the file, line, length, error).
type Answers = BTreeMap<String, (String, u64)>;
type Items = Vec<(usize, u64, Option<u64>, Option<String>)>;

fn read_export(path: &Path) -> (Answers, Items) {
    let mut answers = BTreeMap::new();
    let mut items = Vec::new();
    let mut batches = 0;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        if value.get("batch").is_some() {
            batches += 1;
        } else if let Some(item) = value.get("item") {
            items.push((
                batches,
                item["line"].as_u64().unwrap(),
                item["length"].as_u64(),
                item["error"].as_str().map(str::to_string),
            ));
        } else {
            answers.insert(
                value["board"].as_str().unwrap().to_string(),
                (
                    value["goal"].as_str().unwrap().to_string(),
                    value["length"].as_u64().unwrap(),
                ),
            );
        }
    }
    (answers, items)
}

fn export(url: &str, to: &Path) -> String {
    let (ok, _, stderr) = run(&[
        "export",
        "--coordinator",
        url,
        "--batches",
        "-o",
        to.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    stderr
}

fn submit_and_wait(url: &str, file: &Path, heuristic: &str, limits: &[&str]) {
    let mut args = vec![
        "submit",
        "--coordinator",
        url,
        "--heuristic",
        heuristic,
        "--wait",
    ];
    args.extend_from_slice(limits);
    args.push(file.to_str().unwrap());
    let (_, _, stderr) = run(&args);
    assert!(stderr.contains(" solved, "), "{stderr}");
}

/// An export's batch lines, each without its id (an import hands out new ones).
fn batch_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            let batch = value.get_mut("batch")?;
            batch.as_object_mut().unwrap().remove("id");
            Some(batch.clone())
        })
        .collect()
}

fn import(url: &str, file: &Path) -> String {
    let (ok, _, stderr) = run(&[
        "import",
        "--coordinator",
        url,
        "--heuristic",
        "pdb:5-5-5",
        "--heuristic",
        "5x5=linear-conflict",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    stderr
}

#[test]
fn export_import_export_keeps_every_answer_and_batch_of_three_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let mut eight = walked(3, 40, 5, 0x2545_f491_4f6c_dd1d);
    eight.push(("8,6,7,2,5,4,3,0,1".into(), 31));
    let fifteen: Vec<(String, u64)> = known_boards(0).into_iter().take(3).collect();
    let twenty_four = walked(5, 24, 3, 0x9e37_79b9_7f4a_7c15);
    let files: Vec<_> = ["eight", "fifteen", "twenty-four"]
        .iter()
        .zip([&eight, &fifteen, &twenty_four])
        .map(|(name, boards)| {
            let path = dir.path().join(format!("{name}.txt"));
            write_batch(&path, boards, true);
            path
        })
        .collect();
    let first = dir.path().join("first.jsonl");
    let second = dir.path().join("second.jsonl");
    {
        let source = Coordinator::start(&dir.path().join("source"), "127.0.0.1:0", &[], &[]);
        let url = source.url();
        let _worker = worker(&url, &dir.path().join("w1"), &[]);
        // The 8-puzzles by the default for their size: the exact table, no node expanded.
        submit_and_wait(&url, &files[0], "default", &[]);
        // Limits no board here reaches and a priority: kept through the backup.
        submit_and_wait(
            &url,
            &files[1],
            "pdb:5-5-5",
            &["--time-limit", "600", "--priority", "4"],
        );
        submit_and_wait(
            &url,
            &files[2],
            "linear-conflict",
            &["--node-limit", "100000000"],
        );
        // Cancelling a finished batch changes nothing, and says so.
        let (ok, stdout, stderr) = run(&["cancel", "--coordinator", &url, "1"]);
        assert!(ok, "{stderr}");
        assert!(
            stdout.contains(
                "batch 1 had already finished (6 of 7 solved, 1 failed): nothing changed"
            ),
            "{stdout}"
        );
        let said = export(&url, &first);
        assert!(said.contains("exported 12 answers and 3 batches"), "{said}");
    }
    let (answers, items) = read_export(&first);
    for (board, optimal) in eight.iter().chain(&fifteen).chain(&twenty_four) {
        assert_eq!(answers.get(board).map(|a| a.1), Some(*optimal), "{board}");
    }
    assert_eq!(items.iter().filter(|i| i.2.is_some()).count(), 12);
    assert_eq!(
        items.iter().filter(|i| i.3.is_some()).count(),
        1,
        "the bad line"
    );

    let target = Coordinator::start(&dir.path().join("target"), "127.0.0.1:0", &[], &[]);
    let url = target.url();
    let _worker = worker(&url, &dir.path().join("w2"), &[]);
    // pdb:5-5-5 fits only the 15-puzzles: the 8-puzzles get their size's default, the
    // 24-puzzles what is named for them.
    let stderr = import(&url, &first);
    assert!(
        stderr.contains("12 answers in")
            && stderr.contains(
                "/ 12 restored / 0 refused; 3 batches imported, 0 already here, 0 not whole"
            )
            && stderr.contains("batch 1 imported as batch "),
        "{stderr}"
    );
    for (board, optimal) in eight.iter().chain(&fifteen).chain(&twenty_four) {
        assert_eq!(stored_length(&url, board), Some(*optimal), "{board}");
    }
    let said = export(&url, &second);
    assert!(said.contains("exported 12 answers and 3 batches"), "{said}");
    assert_eq!(read_export(&second), (answers.clone(), items.clone()));
    // Limits, priorities and submission times as they were.
    let kept = batch_lines(&first);
    assert_eq!(kept[1]["time_limit_seconds"], 600.0, "{kept:?}");
    assert_eq!(kept[1]["priority"], 4, "{kept:?}");
    assert_eq!(kept[0]["priority"], 3, "{kept:?}");
    assert_eq!(kept[2]["node_limit"], 100_000_000, "{kept:?}");
    assert!(kept
        .iter()
        .all(|b| b["submitted_unix_ms"].as_u64() > Some(0)));
    assert_eq!(batch_lines(&second), kept);

    // The same file again: every answer is already stored and every batch already here.
    let stderr = import(&url, &first);
    assert!(
        stderr
            .contains("/ 12 restored / 0 refused; 0 batches imported, 3 already here, 0 not whole")
            && stderr.contains("batch 3: already here as batch "),
        "{stderr}"
    );
    let third = dir.path().join("third.jsonl");
    let said = export(&url, &third);
    assert!(said.contains("exported 12 answers and 3 batches"), "{said}");
    assert_eq!(read_export(&third), (answers, items));
    assert_eq!(batch_lines(&third), kept);
}

#[test]
fn an_import_that_refuses_answers_says_how_many_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let backup = dir.path().join("backup.jsonl");
    let good = serde_json::json!({"board": "1,2,3,4,5,6,0,7,8", "goal": "1,2,3,4,5,6,7,8,0",
        "moves": "RR", "length": 2, "heuristic": "x"});
    let off_board = serde_json::json!({"board": "4,1,3,7,2,6,0,5,8",
        "goal": "1,2,3,4,5,6,7,8,0", "moves": "LLLL", "length": 4, "heuristic": "x"});
    std::fs::write(&backup, format!("{good}\n{off_board}\n")).unwrap();
    let target = Coordinator::start(&dir.path().join("target"), "127.0.0.1:0", &[], &[]);
    let url = target.url();
    let _worker = worker(&url, &dir.path().join("w"), &[]);
    let output = std::process::Command::new(common::BIN)
        .args(["import", "--coordinator", &url])
        .arg(&backup)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "backup.jsonl line 2: 4,1,3,7,2,6,0,5,8: not restored: line 2: moves=: move 1 (L)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 answers in") && stderr.contains("/ 1 restored / 1 refused"),
        "{stderr}"
    );
    assert_eq!(stored_length(&url, "1,2,3,4,5,6,0,7,8"), Some(2));
}

#[test]
fn a_damaged_store_is_refused_by_name_and_salvaged_into_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let boards = walked(3, 40, 4, 0x1234_5678_9abc_def1);
    let file = dir.path().join("boards.txt");
    write_batch(&file, &boards, false);
    {
        let source = Coordinator::start(&data, "127.0.0.1:0", &[], &[]);
        let url = source.url();
        let _worker = worker(&url, &dir.path().join("w1"), &[]);
        submit_and_wait(&url, &file, "default", &[]);
        // Stopped as an operator would: the store is flushed on the way out.
        let stopped = std::process::Command::new("kill")
            .args(["-TERM", &source.process.0.id().to_string()])
            .status()
            .unwrap();
        assert!(stopped.success());
        common::wait_until(
            "the coordinator to stop",
            std::time::Duration::from_secs(30),
            || {
                let mut process = std::process::Command::new("kill");
                let alive = process
                    .args(["-0", &source.process.0.id().to_string()])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .unwrap()
                    .success();
                let log = source.log_text();
                (!alive || log.contains("coordinator stopped")).then_some(())
            },
        );
    }
    // The last 100 bytes of the store's log are lost (a disk fault, a copy cut short).
    let log_file = data.join("store").join("db");
    let length = std::fs::metadata(&log_file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log_file)
        .unwrap()
        .set_len(length - 100)
        .unwrap();
    let refused = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains(&format!("store {}: damaged", data.join("store").display()))
            && said.contains("tilesolve salvage --data"),
        "{said}"
    );
    let rescue = dir.path().join("rescue.jsonl");
    let (ok, _, said) = run(&[
        "salvage",
        "--data",
        data.to_str().unwrap(),
        "-o",
        rescue.to_str().unwrap(),
    ]);
    assert!(ok, "{said}");
    assert!(said.contains("salvaged "), "{said}");
    // sled's own file unreadable, every byte of it overwritten: the answer and batch logs
    // alone still give every answer and the batch.
    let unreadable = dir.path().join("unreadable");
    std::fs::create_dir_all(unreadable.join("store")).unwrap();
    for entry in std::fs::read_dir(data.join("store")).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(
                entry.path(),
                unreadable.join("store").join(entry.file_name()),
            )
            .unwrap();
        }
    }
    let db = unreadable.join("store").join("db");
    let garbage = vec![0xa5u8; std::fs::metadata(&db).unwrap().len() as usize];
    std::fs::write(&db, garbage).unwrap();
    let logs_alone = dir.path().join("logs-alone.jsonl");
    let (ok, _, said) = run(&[
        "salvage",
        "--data",
        unreadable.to_str().unwrap(),
        "-o",
        logs_alone.to_str().unwrap(),
    ]);
    assert!(
        !ok,
        "what sled held is lost, and the status says so: {said}"
    );
    assert!(
        said.contains("reading the answer and batch logs without sled's files"),
        "{said}"
    );
    let (from_logs, _) = read_export(&logs_alone);
    assert_eq!(from_logs, read_export(&rescue).0, "{said}");
    assert!(
        std::fs::read_to_string(&logs_alone)
            .unwrap()
            .contains("\"batch\""),
        "the batch's record comes back"
    );
    // The way out the message names: the damaged store aside, a new one, the rescue imported.
    std::fs::rename(data.join("store"), dir.path().join("damaged-store")).unwrap();
    let target = Coordinator::start(&data, "127.0.0.1:0", &[], &[]);
    let url = target.url();
    let _worker = worker(&url, &dir.path().join("w2"), &[]);
    let (ok, _, said) = run(&["import", "--coordinator", &url, rescue.to_str().unwrap()]);
    assert!(ok, "{said}");
    let (answers, _) = read_export(&rescue);
    for (board, (_, length)) in &answers {
        let optimal = boards.iter().find(|(b, _)| b == board).map(|b| b.1);
        assert_eq!(Some(*length), optimal, "{board}");
        assert_eq!(stored_length(&url, board), optimal, "{board}");
    }
}
