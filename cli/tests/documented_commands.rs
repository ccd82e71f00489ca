//! The commands README.md and docs/DEPLOY.md show hold: every `tilesolve` line they print names
//! a subcommand and flags the binary has, and the README's "across machines" block runs as
//! written (its placeholders filled in) against real processes over TLS with both tokens. The
//! container and Kubernetes commands of DEPLOY.md run in `kube.rs` and `deploy_kit.rs`.

mod common;

use std::path::Path;

use common::{assert_optimal, known_boards, lengths, run_with_env, worker, Coordinator, BIN};

fn doc(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)).unwrap()
}

/// The `tilesolve` command lines a document shows in its indented blocks: continuation lines
/// joined, comments cut, and lines joined by ` | ` or ` ; ` outside brackets taken apart.
fn command_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let Some(code) = line.strip_prefix("    ") else {
            open = false;
            continue;
        };
        let code = match code.find(" #") {
            Some(at) => &code[..at],
            None => code,
        };
        let code = code.trim();
        let continues = open
            && lines.last().is_some()
            && (code.starts_with('[') || code.starts_with("BOARD") || code.starts_with("--"));
        if continues {
            let last = lines.last_mut().unwrap();
            last.push(' ');
            last.push_str(code.trim_end_matches('\\').trim());
        } else if code.starts_with("tilesolve ") {
            lines.push(code.trim_end_matches('\\').trim().to_string());
        } else {
            open = false;
            continue;
        }
        open = true;
    }
    lines
        .iter()
        .flat_map(|line| split_outside_brackets(line))
        .collect()
}

fn split_outside_brackets(line: &str) -> Vec<String> {
    let (mut parts, mut current, mut depth) = (Vec::new(), String::new(), 0);
    let chars: Vec<char> = line.chars().collect();
    for (index, &c) in chars.iter().enumerate() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '|' | ';' if depth == 0 && chars.get(index + 1) == Some(&' ') => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    // A part that does not start with a subcommand's name is an alternative argument of the
    // one before (`BOARD... | -`).
    let mut commands: Vec<String> = Vec::new();
    for part in parts {
        let part = part.trim();
        let part = part.strip_prefix("tilesolve ").unwrap_or(part);
        match commands.last_mut() {
            Some(last) if !part.starts_with(|c: char| c.is_ascii_lowercase()) => {
                last.push_str(" | ");
                last.push_str(part);
            }
            _ if !part.is_empty() => commands.push(part.to_string()),
            _ => {}
        }
    }
    commands
}

/// Every documented `tilesolve` line names a subcommand the binary has, and each of its flags
/// is in that subcommand's help (a documented flag that does not exist, such as the
/// `results --failed` an alert once suggested, fails here).
#[test]
fn every_documented_command_names_flags_the_binary_has() {
    let mut checked = 0;
    for path in ["README.md", "docs/DEPLOY.md"] {
        for command in command_lines(&doc(path)) {
            let words: Vec<&str> = command.split_whitespace().collect();
            let mut subcommands = vec![words[0]];
            if words[0] == "pdb" {
                subcommands.push(words[1]);
            }
            for alternative in subcommands.last().unwrap().split('|') {
                let mut args: Vec<&str> = subcommands[..subcommands.len() - 1].to_vec();
                args.push(alternative);
                args.push("--help");
                let (ok, help, stderr) = run_with_env(&args, &[]);
                assert!(
                    ok,
                    "{path}: `tilesolve {command}`: no such subcommand: {stderr}"
                );
                for flag in command
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .filter(|word| word.starts_with("--") && word.len() > 2)
                {
                    let named = help.match_indices(flag).any(|(at, _)| {
                        !help[at + flag.len()..]
                            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
                    });
                    assert!(
                        named,
                        "{path}: `tilesolve {command}`: {alternative} has no {flag}"
                    );
                }
                checked += 1;
            }
        }
    }
    // The README's and DEPLOY.md's lines, each alternative on its own.
    assert!(checked >= 30, "only {checked} documented commands found");
}

/// The README's "across machines" block, line by line, with its placeholders filled in: the
/// tokens exported, `serve` with TLS, a worker trusting the private authority, a submission
/// waited for (optimal lengths), an urgent one, status, results, query, batches, cancel,
/// export and import, prune's dry run, salvage of the stopped coordinator's store, completions
/// and man pages.
#[test]
fn the_readmes_commands_across_machines_run_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = common::certificates(dir.path());
    let env = [
        ("TILESOLVE_TOKEN", "readme-client-token"),
        ("TILESOLVE_WORKER_TOKEN", "readme-worker-token"),
    ];
    let data = dir.path().join("coordinator");
    let server = Coordinator::start(
        &data,
        "127.0.0.1:0",
        &["--tls-cert", &cert, "--tls-key", &key],
        &env,
    );
    let port = server.address.rsplit(':').next().unwrap().to_string();
    // The certificate names localhost: the README's HOST.
    let url = format!("https://localhost:{port}");
    let worker_process = worker(
        &url,
        &dir.path().join("w1"),
        &["--tls-ca", &ca, "--worker-token", "readme-worker-token"],
    );
    let connection = ["--coordinator", url.as_str(), "--tls-ca", ca.as_str()];
    let tilesolve = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        if !matches!(args[0], "completions" | "man" | "salvage") {
            all.extend_from_slice(&connection);
        }
        let (ok, stdout, stderr) = run_with_env(&all, &env);
        assert!(ok, "tilesolve {}: {stderr}", args.join(" "));
        stdout
    };

    let boards = known_boards(0);
    let file = dir.path().join("boards.txt");
    common::write_batch(&file, &boards, false);
    let file = file.to_str().unwrap();
    let answers = tilesolve(&[
        "submit",
        "--heuristic",
        "pdb:5-5-5",
        "--wait",
        "--json",
        file,
    ]);
    assert_optimal(&lengths(&answers), &boards);
    let urgent = tilesolve(&[
        "submit",
        "--heuristic",
        "pdb:5-5-5",
        "--priority",
        "5",
        file,
    ]);
    let batch = urgent.trim();
    let status = tilesolve(&["status", batch]);
    assert!(status.contains("priority 5"), "{status}");
    let results = tilesolve(&["results", "1", "--csv"]);
    assert_eq!(results.lines().count(), boards.len() + 1, "{results}");
    assert_optimal(&lengths(&tilesolve(&["results", "1", "--json"])), &boards);
    let (board, optimal) = &boards[0];
    let query = tilesolve(&["query", board]);
    assert!(query.contains(&format!("{optimal} moves")), "{query}");
    let listed = tilesolve(&["batches", "--json"]);
    assert_eq!(listed.lines().count(), 2, "{listed}");
    tilesolve(&["batches"]);
    tilesolve(&["cancel", batch]);
    let backup = dir.path().join("backup.jsonl");
    let backup = backup.to_str().unwrap();
    tilesolve(&["export", "--batches", "-o", backup]);
    tilesolve(&["import", backup]);
    let pruned = tilesolve(&["prune", "--older-than-days", "30", "--dry-run"]);
    assert!(pruned.contains('0'), "{pruned}");
    drop(worker_process);
    server.process.kill();
    let rescue = dir.path().join("rescue.jsonl");
    tilesolve(&[
        "salvage",
        "--data",
        data.to_str().unwrap(),
        "-o",
        rescue.to_str().unwrap(),
    ]);
    let rescued = std::fs::read_to_string(&rescue).unwrap();
    assert!(rescued.lines().count() >= boards.len(), "{rescued}");
    assert!(tilesolve(&["completions", "bash"]).contains("tilesolve"));
    let man = dir.path().join("man");
    tilesolve(&["man", "--dir", man.to_str().unwrap()]);
    assert!(man.join("tilesolve-submit.1").exists());
    // The binary the lines name is this one.
    assert!(Path::new(BIN).exists());
}
