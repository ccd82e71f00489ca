//! What scripts rely on, against a real coordinator: each refusal ends the command at once with
//! exit status 4 and a message naming its cause, an unreachable coordinator gives 3 after a few
//! tries, and `--json` / `--csv` print what they say (the address coming from
//! `TILESOLVE_COORDINATOR`).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{known_boards, worker, write_batch, Coordinator, BIN};

/// Runs the binary against `url` (given as TILESOLVE_COORDINATOR) with `token`: exit status,
/// stdout, stderr, and how long it took.
fn run_at(url: &str, token: &str, args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let started = Instant::now();
    let output = Command::new(BIN)
        .args(args)
        .env("TILESOLVE_COORDINATOR", url)
        .env("TILESOLVE_TOKEN", token)
        .env("RUST_LOG", "info")
        .output()
        .expect("run tilesolve");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

const RETRYING: &str = "trying the coordinator again";

#[test]
fn a_wrong_address_exits_2_at_once_saying_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let tls_to_plain = format!("https://{}", server.address);
    let cases = [
        ("http//127.0.0.1:7411", "an address is http://HOST:PORT"),
        (server.address.as_str(), "an address is http://HOST:PORT"),
        (tls_to_plain.as_str(), "does not speak TLS: use http://"),
    ];
    for (url, says) in cases {
        let (code, _, stderr, _) = run_at(url, "", &["batches"]);
        assert_eq!(code, Some(2), "{url}: {stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(!stderr.contains(RETRYING), "{url}: not retried: {stderr}");
    }
}

#[test]
fn each_refusal_exits_4_at_once_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--max-message-mib", "1"],
        &[
            ("TILESOLVE_TOKEN", "client"),
            ("TILESOLVE_WORKER_TOKEN", "worker"),
        ],
    );
    let url = server.url();
    // A batch of 2 MB: past the coordinator's 1 MiB request limit.
    let big = dir.path().join("big.txt");
    let line = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15 # some padding to make the file large\n";
    std::fs::write(&big, line.repeat(2_000_000 / line.len())).unwrap();
    let big = big.to_str().unwrap();
    let cases: [(&str, &str, &[&str], &str); 5] = [
        (
            "PermissionDenied",
            "worker",
            &["batches"],
            "was made with the coordinator's worker token",
        ),
        (
            "InvalidArgument",
            "client",
            &["query", "1,2,3"],
            "3 values is not a square board",
        ),
        (
            "OutOfRange",
            "client",
            &["submit", big],
            "the limit is: 1048576 bytes",
        ),
        ("Unauthenticated", "wrong", &["status", "1"], "wrong token"),
        ("NotFound", "client", &["results", "99"], "no batch 99"),
    ];
    for (code, token, args, cause) in cases {
        let (status, _, stderr, took) = run_at(&url, token, args);
        assert_eq!(status, Some(4), "{code}: {stderr}");
        assert!(
            stderr.contains(&format!("refused the call: {code}: ")) && stderr.contains(cause),
            "{code}: {stderr}"
        );
        assert!(
            !stderr.contains(RETRYING),
            "{code} is not retried: {stderr}"
        );
        assert!(took < Duration::from_secs(2), "{code} took {took:?}");
    }
}

#[test]
fn an_unreachable_coordinator_is_retried_then_exits_3() {
    // A port held bound but not listening: a connection there is refused, and no other test
    // running meanwhile can be given it (a port merely released could be, and was).
    let held = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let any_port: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    held.bind(&any_port.into()).unwrap();
    let port = held.local_addr().unwrap().as_socket().unwrap().port();
    let (status, _, stderr, _) = run_at(&format!("http://127.0.0.1:{port}"), "", &["batches"]);
    assert_eq!(status, Some(3), "{stderr}");
    assert!(stderr.matches(RETRYING).count() >= 3, "{stderr}");
    assert!(stderr.contains("connecting to the coordinator"), "{stderr}");
    // What to do is said once, with the error that ends it, not with every try.
    assert_eq!(
        stderr.matches("is the coordinator running").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn json_and_csv_print_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("worker"), &[]);
    let boards = known_boards(0);
    let path = dir.path().join("examples.txt");
    write_batch(&path, &boards, true);
    let path = path.to_str().unwrap();

    // A bad line: done, but not every board solved.
    let (status, csv_text, stderr, _) = run_at(
        &url,
        "",
        &[
            "submit",
            "--heuristic",
            "pdb:5-5-5",
            "--wait",
            "--csv",
            path,
        ],
    );
    assert_eq!(status, Some(1), "{stderr}");
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header = reader.headers().unwrap().clone();
    assert_eq!(
        header.iter().collect::<Vec<_>>(),
        [
            "line",
            "board",
            "length",
            "moves",
            "nodes",
            "seconds",
            "heuristic",
            "error",
            "pending",
            "status",
            "lower_bound"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), boards.len() + 1);
    for (board, optimal) in &boards {
        let row = rows
            .iter()
            .find(|r| &r[1] == board)
            .expect("a row per board");
        assert_eq!(row[2].parse::<u64>().unwrap(), *optimal, "{board}");
        assert_eq!(row[3].len() as u64, *optimal);
    }
    // The bad line's error holds a comma: the csv crate quotes it, and it reads back whole.
    let bad = rows.iter().find(|r| r[2].is_empty()).expect("the bad line");
    assert!(!bad[7].is_empty(), "{bad:?}");

    let (status, listed, _, _) = run_at(&url, "", &["batches", "--json"]);
    assert_eq!(status, Some(0));
    let batch: serde_json::Value = serde_json::from_str(listed.trim()).unwrap();
    assert_eq!(batch["total"], boards.len() + 1);
    assert_eq!(batch["done"], true);
    assert_eq!(batch["state"], "done");
    assert!(batch["submitted_unix_ms"].as_u64().unwrap() > 1_700_000_000_000);
    assert!(
        batch["submitted"].as_str().unwrap().ends_with('Z'),
        "{batch}"
    );
    assert!(!batch["heuristic"].as_str().unwrap().is_empty(), "{batch}");
    assert!(
        batch["eta_seconds"].is_null(),
        "a finished batch has no ETA"
    );
    let id = batch["batch"].to_string();
    for (state, shown) in [("done", 1), ("running", 0), ("cancelled", 0)] {
        let (status, listed, _, _) = run_at(&url, "", &["batches", "--state", state]);
        assert_eq!(status, Some(0));
        assert_eq!(listed.lines().count(), shown, "--state {state}: {listed}");
    }

    let (status, one, _, _) = run_at(&url, "", &["status", &id, "--json"]);
    assert_eq!(status, Some(0));
    let one: serde_json::Value = serde_json::from_str(one.trim()).unwrap();
    assert_eq!(one["solved"], boards.len());
    assert_eq!(one["failed"], 1);

    let (status, lines, _, _) = run_at(&url, "", &["results", &id, "--json"]);
    assert_eq!(status, Some(1));
    assert_eq!(lines.lines().count(), boards.len() + 1);
    for line in lines.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("one JSON object per line");
    }

    let (board, optimal) = &boards[0];
    let (status, answer, _, _) = run_at(&url, "", &["query", board, "--json"]);
    assert_eq!(status, Some(0));
    let answer: serde_json::Value = serde_json::from_str(answer.trim()).unwrap();
    assert_eq!(answer["length"], *optimal);
}

/// Each client command whose standard output's reader is gone (`tilesolve status 1 | head -0`)
/// ends with exit status 0 and no panic: nothing went wrong that anybody is left to hear of.
#[test]
fn a_client_whose_reader_went_away_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let path = dir.path().join("examples.txt");
    write_batch(&path, &known_boards(0), false);
    let path = path.to_str().unwrap();
    let commands: [&[&str]; 8] = [
        &["submit", path],
        &["status", "1"],
        &["status", "--json", "1"],
        &["batches"],
        &["results", "1"],
        &["results", "--csv", "1"],
        &["query", "--json", "1,2,3,4,5,6,7,8,0"],
        &["cancel", "1"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(BIN)
            .args(args)
            .env("TILESOLVE_COORDINATOR", &url)
            .stdout(writer)
            .output()
            .expect("run tilesolve");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn garbage_is_refused_before_it_is_stored_and_never_reaches_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    // 200 KB of noise (xorshift bytes): refused by the client, naming where, exit 2.
    let noise = dir.path().join("noise.bin");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<u8> = (0..200_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&noise, &bytes).unwrap();
    let (code, stdout, stderr, _) = run_at(&url, "", &["submit", noise.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stdout.is_empty() && stderr.contains("this is not a text file"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "no raw bytes echoed");
    // One 4 MB line: refused whole by the client, naming the line.
    let long = dir.path().join("long.txt");
    std::fs::write(
        &long,
        format!("1,2,3,4,5,6,7,0,8\n{}\n", "1 ".repeat(2 << 20)),
    )
    .unwrap();
    let (code, _, stderr, _) = run_at(&url, "", &["submit", long.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("line 2 is 4194304 bytes long"), "{stderr}");
    // One line more than a batch holds: refused by the client, exit 2.
    let many = dir.path().join("many.txt");
    std::fs::write(&many, "1,2,3,4,5,6,7,0,8\n".repeat(100_001)).unwrap();
    let (code, _, stderr, _) = run_at(&url, "", &["submit", many.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("100001 lines; a batch may hold at most 100000"),
        "{stderr}"
    );
    // Only invalid lines (one of them an escape sequence): refused by the coordinator, exit 4,
    // and the sequence is shown escaped.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "\u{1b}[31mred\n1,1,1\n").unwrap();
    let (code, _, stderr, _) = run_at(&url, "", &["submit", bad.to_str().unwrap()]);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains("every one of the batch's 2 board lines is invalid"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && stderr.contains("'\\u{1b}'"),
        "{stderr}"
    );
    // A heuristic for another size: refused at submission, naming the line.
    let fifteen = dir.path().join("fifteen.txt");
    write_batch(&fifteen, &known_boards(0)[..2], false);
    let (code, _, stderr, _) = run_at(
        &url,
        "",
        &[
            "submit",
            "--heuristic",
            "pdb:6-6-6-6",
            fifteen.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        stderr.contains("line 2: heuristic pdb:6-6-6-6 is for 5x5 boards, and this board is 4x4"),
        "{stderr}"
    );
    // Nothing was stored.
    let (code, listed, stderr, _) = run_at(&url, "", &["batches"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(listed.trim().is_empty(), "{listed}");
    // A batch that is stored with a hostile line prints it escaped in its results.
    std::fs::write(&bad, "1,2,3,4,5,6,7,0,8\n\u{1b}[31mred\n").unwrap();
    let _worker = worker(&url, &dir.path().join("w"), &[]);
    let (code, stdout, stderr, _) = run_at(&url, "", &["submit", "--wait", bad.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        !stdout.contains('\u{1b}') && stdout.contains("\\u{1b}[31mred  error: line 2"),
        "{stdout}"
    );
    // And in every other form of its results: CSV too is read in terminals.
    for form in ["--csv", "--json"] {
        let (code, stdout, stderr, _) = run_at(&url, "", &["results", form, "1"]);
        assert_eq!(code, Some(1), "{form}: {stderr}");
        assert!(
            !stdout.contains('\u{1b}') && stdout.contains("[31mred"),
            "{form}: {stdout}"
        );
    }
}
