//! The distributed system as processes: a coordinator and two workers on 127.0.0.1, real gRPC,
//! real sled files; the coordinator is killed and restarted.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_tilesolve");

/// A child process killed when dropped, so a failing test leaves nothing running.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a coordinator on a free port; returns it and its URL.
fn coordinator(data: &Path, extra: &[&str]) -> (Process, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start coordinator");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let address = loop {
        let line = lines.next().expect("coordinator output").expect("readable");
        if let Some(address) = line.strip_prefix("tilesolve coordinator on ") {
            break address.trim().to_string();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (Process(child), format!("http://{address}"))
}

/// Starts a worker with its own data directory; its log goes to `data.log`.
fn worker(url: &str, data: &Path) -> Process {
    let log = std::fs::File::create(data.with_extension("log")).expect("worker log");
    let child = Command::new(BIN)
        .args(["worker", "--threads", "1", "--coordinator", url, "--data"])
        .arg(data)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start worker");
    Process(child)
}

fn run(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(BIN)
        .args(args)
        .output()
        .expect("run tilesolve");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// 22 15-puzzles with published optimal lengths: the ten of examples15 and twelve of Korf's.
fn batch_file(dir: &Path) -> (std::path::PathBuf, Vec<(String, u64)>) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/");
    let mut boards = Vec::new();
    for (file, take) in [("examples15.txt", 10), ("korf100-blank-last.txt", 12)] {
        let text = std::fs::read_to_string(format!("{data}{file}")).unwrap();
        for line in text.lines().filter(|l| !l.starts_with('#')).take(take) {
            let (board, facts) = line.split_once(" # ").unwrap();
            let optimal = facts
                .split_whitespace()
                .find_map(|f| f.strip_prefix("optimal="))
                .unwrap()
                .parse()
                .unwrap();
            boards.push((board.to_string(), optimal));
        }
    }
    let path = dir.join("batch.txt");
    let mut text = String::from("# 22 boards and one bad line\n");
    for (index, (board, _)) in boards.iter().enumerate() {
        text.push_str(board);
        text.push('\n');
        if index == 4 {
            text.push_str("1,2,3,x\n");
        }
    }
    std::fs::write(&path, text).unwrap();
    (path, boards)
}

fn lengths(json_lines: &str) -> Vec<(String, Option<u64>)> {
    json_lines
        .lines()
        .map(|line| {
            let value: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            (
                value["board"].as_str().unwrap_or_default().to_string(),
                value["length"].as_u64(),
            )
        })
        .collect()
}

#[test]
fn coordinator_and_two_workers_solve_optimally_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coordinator");
    let (path, boards) = batch_file(dir.path());
    let batch_path = path.to_str().unwrap();

    // Splitting after 20,000 nodes sends the harder puzzles out as many subtree tasks, and a
    // subtree budget of 10,000 sends large subtrees back split into their children.
    let (server, url) = coordinator(
        &store,
        &["--split-after", "20000", "--subtree-budget", "10000"],
    );
    let _workers = [
        worker(&url, &dir.path().join("w1")),
        worker(&url, &dir.path().join("w2")),
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
    for (board, optimal) in &boards {
        let found = results
            .iter()
            .find(|(b, _)| b == board)
            .unwrap_or_else(|| panic!("{board} missing"));
        assert_eq!(found.1, Some(*optimal), "{board}");
    }

    // The workers had no pattern databases: they fetched the coordinator's, checksums verified.
    for name in ["w1", "w2"] {
        let log = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap();
        assert_eq!(
            log.matches("pattern database fetched from the coordinator")
                .count(),
            3,
            "{log}"
        );
        let (ok, stdout, _) = run(&[
            "pdb",
            "verify",
            "--data",
            dir.path().join(name).to_str().unwrap(),
        ]);
        assert!(ok && stdout.matches(" ok (").count() == 3, "{stdout}");
    }

    // Kill the coordinator outright and start another on the same files.
    drop(server);
    let (_server, url) = coordinator(&store, &[]);
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

    let (_server, url) = coordinator(&coordinator_dir, &[]);
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
