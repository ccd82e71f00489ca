//! The Python example (`examples/python/submit_batch.py`) against a real coordinator and worker:
//! stubs generated from `proto/` with grpcio-tools, a batch submitted, every answer read back a
//! page at a time, lengths checked against their published optimal values; then a batch under a
//! node limit, read back as bounded answers.
//!
//! It needs a Python with `grpcio` and `grpcio-tools` (`TILESOLVE_PYTHON`, else `python3`);
//! `.ci/run` makes one. Without it the test says so and passes, unless `CI` is set: there it
//! fails, so CI cannot silently skip it.

mod common;

use std::path::Path;
use std::process::Command;

use common::{assert_optimal, known_boards, worker, write_batch, Coordinator};

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn python() -> Option<String> {
    let python = std::env::var("TILESOLVE_PYTHON").unwrap_or_else(|_| "python3".into());
    let usable = Command::new(&python)
        .args(["-c", "import grpc, grpc_tools"])
        .output()
        .is_ok_and(|output| output.status.success());
    if usable {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{python} lacks grpcio and grpcio-tools (set TILESOLVE_PYTHON to a Python that has them; .ci/run makes one)"
    );
    eprintln!("skipped: {python} lacks grpcio and grpcio-tools");
    None
}

fn generate_stubs(python: &str, into: &Path) {
    let output = Command::new(python)
        .args(["-m", "grpc_tools.protoc", "-I"])
        .arg(Path::new(REPO).join("proto"))
        .arg(format!("--python_out={}", into.display()))
        .arg(format!("--grpc_python_out={}", into.display()))
        .arg("tilesolve/v1/client.proto")
        .output()
        .expect("run grpc_tools.protoc");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_python_example_submits_and_reads_every_answer() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let client = dir.path().join("client");
    std::fs::create_dir_all(&client).unwrap();
    std::fs::copy(
        Path::new(REPO).join("examples/python/submit_batch.py"),
        client.join("submit_batch.py"),
    )
    .unwrap();
    generate_stubs(&python, &client);

    let boards = known_boards(5);
    let batch = dir.path().join("batch.txt");
    write_batch(&batch, &boards, false);
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let _worker = worker(&server.url(), &dir.path().join("w1"), &[]);

    let run = |batch: &Path, flags: &[&str]| -> Vec<Vec<String>> {
        let output = Command::new(&python)
            .arg("submit_batch.py")
            .arg(&server.address)
            .arg(batch)
            .args(flags)
            .current_dir(&client)
            .env_remove("TILESOLVE_TOKEN")
            .output()
            .expect("run the Python example");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        // One line per board: board, length, moves (and `bounded ...`), tab-separated.
        stdout
            .lines()
            .map(|line| line.split('\t').map(String::from).collect())
            .collect()
    };
    // Past a node limit each board comes back bounded: a path no shorter than the optimal one
    // and a lower bound no longer (the batch after it proves them optimal, from those bounds).
    let hard = known_boards(0)[5..9].to_vec();
    let hard_batch = dir.path().join("hard.txt");
    write_batch(&hard_batch, &hard, false);
    let flags = ["--heuristic", "linear-conflict", "--node-limit", "100000"];
    let lines = run(&hard_batch, &flags);
    assert_eq!(lines.len(), hard.len(), "{lines:?}");
    for (fields, (board, optimal)) in lines.iter().zip(&hard) {
        assert_eq!(&fields[0], board, "{fields:?}");
        let length: u64 = fields[1].parse().unwrap();
        let lower_bound: u64 = fields
            .get(3)
            .and_then(|field| field.strip_prefix("bounded lower_bound="))
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("{fields:?}"));
        assert!(lower_bound <= *optimal && *optimal <= length, "{fields:?}");
        assert_eq!(fields[2].len() as u64, length, "{fields:?}");
    }

    // 3x4 boards written as bare values: --size gives their shape, and each comes back in rows.
    let twelve = common::walked_in(tilesolve::Shape::new(3, 4).unwrap(), 60, 3, 0x9e37_79b9);
    let bare: String = twelve
        .iter()
        .map(|(board, _)| format!("{}\n", board.replace(['{', '}'], "").replace(",,", ",")))
        .collect();
    let twelve_batch = dir.path().join("twelve.txt");
    std::fs::write(&twelve_batch, bare).unwrap();
    let lines = run(
        &twelve_batch,
        &["--size", "3x4", "--heuristic", "linear-conflict"],
    );
    let results: Vec<(String, Option<u64>)> = lines
        .iter()
        .map(|fields| (fields[0].clone(), fields[1].parse().ok()))
        .collect();
    assert_optimal(&results, &twelve);

    let lines = run(&batch, &["--heuristic", "pdb:5-5-5"]);
    let results: Vec<(String, Option<u64>)> = lines
        .iter()
        .map(|fields| {
            (
                fields[0].clone(),
                fields.get(1).and_then(|l| l.parse().ok()),
            )
        })
        .collect();
    assert_eq!(results.len(), boards.len(), "{lines:?}");
    assert_optimal(&results, &boards);
}
