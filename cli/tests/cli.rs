//! The `tilesolve` binary as a user runs it: real processes, real exit codes, real output.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs the binary with a fresh data directory, so no test writes pattern databases into the
/// working directory or sees another test's.
fn tilesolve(args: &[&str], stdin: &str) -> Output {
    let data = tempfile::tempdir().expect("temporary data directory");
    tilesolve_in(data.path(), args, stdin)
}

fn tilesolve_in(data: &std::path::Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilesolve"))
        .env("TILESOLVE_DATA", data)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tilesolve");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("run tilesolve")
}

fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line}: {e}")))
        .collect()
}

#[test]
fn solves_and_prints_moves_and_tiles() {
    let output = tilesolve(&["solve", "2,4,0,1,8,5,3,6,7"], "");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("length   26 moves"), "{stdout}");
    assert!(stdout.contains("moves    "), "{stdout}");
    assert!(stdout.contains("tiles    "), "{stdout}");
}

#[test]
fn json_has_the_documented_fields() {
    let output = tilesolve(
        &[
            "solve",
            "--json",
            "--heuristic",
            "manhattan",
            "{{2,7,4,3},{1,12,8,6},{0,14,15,9},{13,5,11,10}}",
        ],
        "",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let objects = json_lines(&output);
    assert_eq!(objects.len(), 1);
    let object = &objects[0];
    assert_eq!(object["length"], 40, "examples15 #1 is 40 moves");
    assert_eq!(object["moves"].as_str().map(str::len), Some(40));
    assert_eq!(object["tiles"].as_array().map(Vec::len), Some(40));
    assert!(object["nodes"].as_u64().is_some_and(|n| n > 0));
    assert!(object["seconds"].as_f64().is_some());
    assert_eq!(object["board"], "2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10");
}

#[test]
fn bad_boards_are_clear_errors_and_the_rest_still_solve() {
    let stdin = "# a comment\n\n1,2,3\n2,4,0,1,8,5,3,6,7\n1,1,2,3,4,5,6,7,0\n  \n1,2,3,4,5,6,7,8,9,10,11,12,13,15,14,0\na,b,c\n{}\n0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35\n8,1,3,4,0,2,7,6,5 # id=9\n";
    let output = tilesolve(&["solve", "--json", "-"], stdin);
    assert_eq!(
        output.status.code(),
        Some(1),
        "failures give a non-zero exit at the end"
    );
    let objects = json_lines(&output);
    let by_line = |line: u64| {
        objects
            .iter()
            .find(|o| o["line"] == line)
            .unwrap_or_else(|| panic!("no object for line {line}: {objects:?}"))
    };
    assert!(by_line(3)["error"]
        .as_str()
        .unwrap()
        .contains("3 values is not a square board"));
    assert!(by_line(5)["error"]
        .as_str()
        .unwrap()
        .contains("tile 1 appears twice"));
    assert!(by_line(7)["error"].as_str().unwrap().contains("unsolvable"));
    assert!(by_line(8)["error"]
        .as_str()
        .unwrap()
        .contains("unexpected 'a' at column 1"));
    assert!(by_line(9)["error"]
        .as_str()
        .unwrap()
        .contains("empty board"));
    assert!(by_line(10)["error"]
        .as_str()
        .unwrap()
        .contains("6x6 board, an unsupported size"));
    let solved: Vec<_> = objects
        .iter()
        .filter(|o| o.get("error").is_none())
        .collect();
    assert_eq!(
        solved.len(),
        2,
        "the two valid boards are solved: {objects:?}"
    );
    assert_eq!(solved[0]["length"], 26);
    assert_eq!(
        objects.len(),
        8,
        "blank and comment lines are skipped, not errors"
    );
}

#[test]
fn each_bad_argument_exits_non_zero_with_its_reason() {
    let cases = [
        ("1,2,3", "3 values is not a square board"),
        ("1,1,2,3,4,5,6,7,0", "tile 1 appears twice"),
        ("1,2,3,4,5,6,7,8,9,10,11,12,13,15,14,0", "unsolvable"),
        ("a,b,c", "unexpected 'a' at column 1"),
        ("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35", "unsupported size"),
    ];
    for (board, reason) in cases {
        let output = tilesolve(&["solve", board], "");
        assert_eq!(output.status.code(), Some(1), "{board}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(reason), "{board}: {stderr}");
        assert!(!stderr.contains("panicked"), "{board}: {stderr}");
    }
    // A flag's value that is no number of seconds is the command line's fault: exit 2, at once.
    for limit in ["inf", "NaN", "0", "-3", "1e30", "soon"] {
        let flag = format!("--time-limit={limit}");
        for command in [
            &["solve", &flag, "1,2,3,4,5,6,0,7,8"][..],
            &["submit", &flag, "boards.txt"][..],
        ] {
            let output = tilesolve(command, "");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{command:?}: {stderr}");
            assert!(
                stderr.contains("--time-limit") && stderr.contains("positive number of seconds"),
                "{command:?}: {stderr}"
            );
        }
    }
    // A refused value is quoted in part, not replayed whole.
    let long = format!("pdb:{}", "x".repeat(100_000));
    let output = tilesolve(&["solve", "--heuristic", &long, "1,2,3,4,5,6,0,7,8"], "");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let start: String = stderr.chars().take(300).collect();
    assert_eq!(output.status.code(), Some(2), "{start}");
    assert!(
        stderr.len() < 4_000 && stderr.contains("(100004 bytes in all)"),
        "{} bytes: {start}",
        stderr.len()
    );
}

#[test]
fn a_limit_gives_a_bounded_answer_with_the_proven_bound() {
    // Korf #88 (65 moves) needs billions of Manhattan nodes: far more than the limit.
    let korf88 = "15,2,12,11,14,13,9,5,1,3,8,7,0,10,6,4";
    let limited = |limit: &str| {
        tilesolve(
            &[
                "solve",
                "--json",
                "--goal",
                "korf",
                "--heuristic",
                "manhattan",
                limit,
                "400000",
                korf88,
            ],
            "",
        )
    };
    let output = limited("--node-limit");
    assert_eq!(
        output.status.code(),
        Some(1),
        "a bounded answer is not a solved board"
    );
    let objects = json_lines(&output);
    let answer = &objects[0];
    assert_eq!(answer["status"], "bounded", "{objects:?}");
    assert!(answer["error"]
        .as_str()
        .unwrap()
        .contains("node limit of 400000"));
    let (length, bound) = (
        answer["length"].as_u64().unwrap(),
        answer["lower_bound"].as_u64().unwrap(),
    );
    assert!(bound <= 65 && length >= 65, "{answer}");
    assert!(
        length as f64 <= answer["weight"].as_f64().unwrap() * 65.0,
        "{answer}"
    );
    assert_eq!(answer["moves"].as_str().unwrap().len() as u64, length);

    let output = tilesolve(
        &[
            "solve",
            "--goal",
            "korf",
            "--heuristic",
            "manhattan",
            "--node-limit",
            "400000",
            korf88,
        ],
        "",
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("NOT proven optimal: no solution shorter than"),
        "{text}"
    );
}

#[test]
fn suboptimal_and_fast_ask_for_a_bounded_answer_only() {
    let korf88 = "15,2,12,11,14,13,9,5,1,3,8,7,0,10,6,4";
    for args in [&["--fast"][..], &["--suboptimal", "1.2"][..]] {
        let output = tilesolve(
            &[
                &[
                    "solve",
                    "--json",
                    "--goal",
                    "korf",
                    "--heuristic",
                    "linear-conflict",
                ],
                args,
                &[korf88],
            ]
            .concat(),
            "",
        );
        let objects = json_lines(&output);
        let answer = &objects[0];
        assert_eq!(answer["status"], "bounded", "{args:?}: {objects:?}");
        let length = answer["length"].as_u64().unwrap();
        let weight = answer["weight"].as_f64().unwrap();
        assert!(
            length >= 65 && length as f64 <= weight * 65.0,
            "{args:?}: {answer}"
        );
        assert!(answer["lower_bound"].as_u64().unwrap() <= 65);
    }
    let refused = tilesolve(&["solve", "--suboptimal", "11", korf88], "");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr)
        .contains("--suboptimal must be a number between 1 and 10"));
}

#[test]
fn goals_korf_and_custom() {
    let korf = tilesolve(
        &["solve", "--json", "--goal", "korf", "1,2,0,3,4,5,6,7,8"],
        "",
    );
    assert!(korf.status.success());
    assert_eq!(json_lines(&korf)[0]["length"], 2);
    let custom = tilesolve(
        &[
            "solve",
            "--json",
            "--goal",
            "1,2,3,4,5,6,7,0,8",
            "1,2,3,4,5,6,7,8,0",
        ],
        "",
    );
    assert!(custom.status.success());
    assert_eq!(json_lines(&custom)[0]["length"], 1);
    let mismatch = tilesolve(
        &[
            "solve",
            "--goal",
            "1,2,3,4,5,6,7,0,8",
            "1,2,3,4,5,6,7,8,9,10,11,12,13,14,0,15",
        ],
        "",
    );
    assert_eq!(mismatch.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&mismatch.stderr).contains("board is 4x4 but the goal is 3x3"));
}

#[test]
fn astar_reports_the_same_length() {
    let output = tilesolve(
        &[
            "solve",
            "--json",
            "--algorithm",
            "astar",
            "2,4,0,1,8,5,3,6,7",
        ],
        "",
    );
    assert!(output.status.success());
    assert_eq!(json_lines(&output)[0]["length"], 26);
    assert_eq!(json_lines(&output)[0]["algorithm"], "astar");
}

#[test]
fn pattern_database_is_built_once_then_reused() {
    let data = tempfile::tempdir().unwrap();
    let board = "2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10";
    let first = tilesolve_in(
        data.path(),
        &["solve", "--json", "--heuristic", "pdb:5-5-5", board],
        "",
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stderr).contains("building pattern database"));
    assert_eq!(json_lines(&first)[0]["length"], 40);
    assert_eq!(json_lines(&first)[0]["heuristic"], "pdb:5-5-5");
    let second = tilesolve_in(
        data.path(),
        &["solve", "--json", "--heuristic", "pdb:5-5-5", board],
        "",
    );
    assert!(
        !String::from_utf8_lossy(&second.stderr).contains("building"),
        "reused, not rebuilt"
    );
    assert_eq!(json_lines(&second)[0]["length"], 40);

    let info = tilesolve_in(data.path(), &["pdb", "verify"], "");
    assert!(info.status.success());
    let listing = String::from_utf8_lossy(&info.stdout);
    assert_eq!(listing.matches(" ok (").count(), 3, "{listing}");

    let wrong_size = tilesolve_in(
        data.path(),
        &["solve", "--heuristic", "pdb:5-5-5", "1,2,3,4,5,6,7,0,8"],
        "",
    );
    assert_eq!(wrong_size.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong_size.stderr)
        .contains("pattern database 5-5-5 is for 4x4 boards, not 3x3"));
}

#[test]
fn bench_says_how_much_of_its_tables_is_in_huge_pages() {
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("one.txt");
    std::fs::write(
        &file,
        "2,7,4,3,1,12,8,6,0,14,15,9,13,5,11,10 # id=1 optimal=40\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let text = tilesolve_in(
        data.path(),
        &["bench", "--heuristic", "pdb:5-5-5", file],
        "",
    );
    assert!(text.status.success());
    let stdout = String::from_utf8_lossy(&text.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let json = tilesolve_in(
        data.path(),
        &["bench", "--heuristic", "pdb:5-5-5", "--json", file],
        "",
    );
    let summary = json_lines(&json).pop().unwrap();
    let manhattan = tilesolve_in(
        data.path(),
        &["bench", "--heuristic", "manhattan", "--json", file],
        "",
    );
    let without_tables = json_lines(&manhattan).pop().unwrap();
    assert_eq!(without_tables["table_bytes"], serde_json::Value::Null);
    if cfg!(target_os = "linux") {
        // Three 5-tile tables of 524,160 entries, half a byte each.
        assert!(
            last.starts_with("tables            0 MB of pattern tables, ")
                && last.ends_with("% of them in 2 MiB pages"),
            "{stdout}"
        );
        assert_eq!(summary["table_bytes"], 3 * 262_080);
        let huge = summary["table_bytes_in_huge_pages"].as_u64().unwrap();
        assert!(huge <= 3 * 262_080, "{summary}");
    }
}

#[test]
fn default_heuristic_takes_what_fits_the_memory_budget() {
    // The exact 3x3 table takes 362,880 bytes: 1 MiB holds it, 0 MiB holds no table at all.
    for (mib, heuristic) in [("1", "pdb:exact"), ("0", "linear-conflict")] {
        let output = tilesolve(
            &[
                "solve",
                "--json",
                "--memory-budget",
                mib,
                "8,6,7,2,5,4,3,0,1",
            ],
            "",
        );
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let object = &json_lines(&output)[0];
        assert_eq!(object["length"], 31);
        assert_eq!(object["heuristic"], heuristic, "budget {mib} MiB");
    }
}

#[test]
fn default_heuristic_on_3x3_is_the_exact_table() {
    let output = tilesolve(&["solve", "--json", "8,6,7,2,5,4,3,0,1"], "");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let object = &json_lines(&output)[0];
    assert_eq!(object["length"], 31);
    assert_eq!(object["heuristic"], "pdb:exact");
    assert_eq!(
        object["nodes"], 31,
        "an exact heuristic expands only the solution path"
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_command_definitions() {
    let run = |args: &[&str]| {
        let output = tilesolve(args, "");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (ok, bash, stderr) = run(&["completions", "bash"]);
    assert!(ok, "{stderr}");
    assert!(bash.contains("complete -F _tilesolve") || bash.contains("-F _tilesolve tilesolve"));
    // Every subcommand is offered, the newest too.
    for command in ["serve", "worker", "submit", "health", "completions"] {
        assert!(
            bash.contains(command),
            "{command} missing from the bash completions"
        );
    }
    for shell in ["zsh", "fish"] {
        let (ok, script, stderr) = run(&["completions", shell]);
        assert!(ok && script.contains("tilesolve"), "{shell}: {stderr}");
    }
    let (ok, page, stderr) = run(&["man"]);
    assert!(ok, "{stderr}");
    assert!(page.contains(".TH tilesolve 1"), "{page}");
    let (ok, _, stderr) = run(&["completions", "tcsh"]);
    assert!(!ok && stderr.contains("tcsh"), "{stderr}");
}

/// Runs the binary with its standard output a pipe whose reader is already gone, as
/// `tilesolve ... | head -0` leaves it: every write there fails.
fn without_a_reader(data: &std::path::Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_tilesolve"))
        .env("TILESOLVE_DATA", data)
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run tilesolve")
}

#[test]
fn a_reader_that_stops_reading_is_no_error() {
    let data = tempfile::tempdir().expect("temporary data directory");
    let batch = data.path().join("batch.txt");
    let boards = [
        "8,6,7,2,5,4,3,0,1",
        "6,4,7,8,5,0,3,2,1",
        "1,2,3,4,5,6,0,7,8",
    ];
    let lines: Vec<&str> = boards.iter().cycle().take(300).copied().collect();
    std::fs::write(&batch, lines.join("\n")).expect("batch file");
    let batch = batch.to_str().expect("UTF-8 path");
    let commands: [&[&str]; 6] = [
        &["batch", "--heuristic", "manhattan", batch],
        &["bench", "--heuristic", "manhattan", "--threads", "2", batch],
        &["bench", "--heuristic", "manhattan", "--json", batch],
        &["solve", "--heuristic", "manhattan", boards[0], boards[1]],
        &["solve", "--heuristic", "manhattan", "--json", boards[0]],
        &["completions", "bash"],
    ];
    for args in commands {
        let output = without_a_reader(data.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            output.status.success(),
            "{args:?}: {:?}: {stderr}",
            output.status
        );
    }
}

#[test]
fn every_manual_page_named_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let written = tilesolve(&["man", "--dir", dir.path().to_str().unwrap()], "");
    assert!(written.status.success());
    let printed = tilesolve(&["man"], "");
    let mut pages = vec![String::from_utf8_lossy(&printed.stdout).into_owned()];
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        pages.push(std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    let mut named = 0;
    for page in &pages {
        // roff writes a page reference as `tilesolve\-submit(1)`.
        for reference in page.split_whitespace().filter(|word| word.ends_with("(1)")) {
            let name = reference.trim_end_matches("(1)").replace("\\-", "-");
            if name.starts_with("tilesolve-") {
                named += 1;
                assert!(
                    dir.path().join(format!("{name}.1")).exists(),
                    "{name}(1) is named but not written"
                );
            }
        }
    }
    assert!(named > 20, "the subcommands are named ({named})");
}

/// What a container sets: every flag of `serve` and `worker` (but `--help`) names its
/// environment variable in the help (`TILESOLVE_*`, or OpenTelemetry's own), as DEPLOY.md
/// promises.
#[test]
fn every_flag_of_serve_and_worker_has_its_environment_variable() {
    for command in ["serve", "worker"] {
        let output = tilesolve(&[command, "--help"], "");
        assert!(output.status.success());
        let help = String::from_utf8_lossy(&output.stdout).into_owned();
        // One entry per flag: from the line that names it to the next such line.
        let mut entries: Vec<(String, String)> = Vec::new();
        for line in help.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            let flag = line.split_whitespace().find(|word| word.starts_with("--"));
            match (first.starts_with('-'), flag) {
                (true, Some(flag)) => {
                    entries.push((flag.trim_end_matches(',').into(), line.into()))
                }
                _ => {
                    if let Some((_, text)) = entries.last_mut() {
                        text.push_str(line);
                    }
                }
            }
        }
        let missing: Vec<&str> = entries
            .iter()
            .filter(|(flag, text)| flag != "--help" && !text.contains("[env: "))
            .map(|(flag, _)| flag.as_str())
            .collect();
        assert!(entries.len() > 5, "{help}");
        assert!(missing.is_empty(), "{command}: no variable for {missing:?}");
    }
}
