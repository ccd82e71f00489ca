//! A coordinator shared by many, as processes on 127.0.0.1: an urgent batch submitted behind a
//! long one is served first; a cancelled batch's items are cancelled, not failed, and can be
//! listed alone and submitted again as a new batch linked to the old.

mod common;

use std::time::{Duration, Instant};

use common::{far_boards, lengths, run, status, walked, worker, write_batch, Coordinator};

#[test]
fn an_urgent_batch_submitted_behind_a_long_one_is_served_first() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &[]),
        worker(&url, &dir.path().join("w2"), &[]),
    ];
    let long_file = dir.path().join("long.txt");
    write_batch(&long_file, &far_boards(1_000, 7), false);
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "linear-conflict",
        long_file.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let long = stdout.trim().to_string();
    common::wait_until("the long batch to run", Duration::from_secs(60), || {
        let status = status(&url, &long, &[])?;
        (status["state"] == "running" && status["workers"].as_u64()? == 2).then_some(())
    });

    let urgent = walked(4, 30, 3, 11);
    let urgent_file = dir.path().join("urgent.txt");
    write_batch(&urgent_file, &urgent, false);
    let started = Instant::now();
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--heuristic",
        "linear-conflict",
        "--priority",
        "5",
        "--wait",
        "--json",
        urgent_file.to_str().unwrap(),
    ]);
    // A liveness bound, not a speed figure: at the default priority the same batch waited a
    // minute here for its turn among the long batch's (64 s against 64 ms at priority 5).
    let took = started.elapsed();
    eprintln!("the urgent batch took {took:?}");
    assert!(ok, "{stderr}");
    assert!(took < Duration::from_secs(20), "it waited {took:?}");
    let answers = lengths(&stdout);
    let expected: Vec<(String, Option<u64>)> = urgent
        .iter()
        .map(|(board, length)| (board.clone(), Some(*length)))
        .collect();
    assert_eq!(answers, expected, "every answer at its optimal length");

    let long_now = status(&url, &long, &[]).unwrap();
    assert_eq!(long_now["state"], "running", "{long_now}");
    assert!(long_now["solved"].as_u64().unwrap() < 1_000, "{long_now}");
    assert_eq!(long_now["priority"], 3, "the default");
    let (ok, listed, stderr) = run(&["batches", "--coordinator", &url]);
    assert!(ok, "{stderr}");
    assert!(listed.contains(", priority 5"), "{listed}");

    // A priority outside 1 to 5 is refused before anything is sent.
    let (ok, _, stderr) = run(&[
        "submit",
        "--coordinator",
        &url,
        "--priority",
        "9",
        urgent_file.to_str().unwrap(),
    ]);
    assert!(!ok && stderr.contains("--priority"), "{stderr}");

    // Cancelling the long batch: its unfinished items end cancelled, not failed, and the
    // failure counter the shipped alert watches does not move.
    let metric = |name: &str| -> u64 {
        let text = ureq::get(&format!("{url}/metrics"))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        let line = text
            .lines()
            .find(|line| line.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let failed_before = metric("tilesolve_puzzles_failed_total");
    let (ok, stdout, stderr) = run(&["cancel", "--coordinator", &url, "--json", &long]);
    assert!(ok, "{stderr}");
    let cancelled: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["failed"], 0, "{cancelled}");
    let solved = cancelled["solved"].as_u64().unwrap();
    assert_eq!(
        cancelled["cancelled_items"].as_u64().unwrap() + solved,
        1_000,
        "{cancelled}"
    );
    assert_eq!(metric("tilesolve_puzzles_failed_total"), failed_before);
    assert_eq!(metric("tilesolve_puzzles_cancelled_total"), 1_000 - solved);
    let (_, results, _) = run(&["results", "--coordinator", &url, "--json", &long]);
    let states: Vec<serde_json::Value> = results
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["status"].clone())
        .collect();
    assert_eq!(states.len(), 1_000);
    assert!(
        states.iter().all(|s| s == "cancelled" || s == "solved"),
        "{results}"
    );

    // Only the cancelled ones, then those submitted again as a new batch linked to the old.
    let cancelled_items = 1_000 - solved;
    let (ok, only, _) = run(&["results", "--coordinator", &url, "--cancelled", &long]);
    assert!(!ok, "not every item solved: exit 1");
    assert_eq!(only.lines().count() as u64, cancelled_items);
    assert!(
        only.lines().all(|line| line.ends_with("  cancelled")),
        "{only}"
    );
    let (ok, stdout, stderr) = run(&[
        "retry",
        "--coordinator",
        &url,
        "--cancelled",
        "--priority",
        "1",
        &long,
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{cancelled_items} boards of batch {long} submitted again"
        )),
        "{stderr}"
    );
    let retry = stdout.trim().to_string();
    let retried = status(&url, &retry, &[]).unwrap();
    assert_eq!(retried["retry_of"].to_string(), long, "{retried}");
    assert_eq!(
        retried["total"].as_u64(),
        Some(cancelled_items),
        "{retried}"
    );
    assert_eq!(retried["priority"], 1, "{retried}");
    assert_eq!(retried["heuristic"], "linear-conflict", "{retried}");
    let (_, listed, _) = run(&["batches", "--coordinator", &url]);
    assert!(
        listed.contains(&format!("priority 1, retry of batch {long}")),
        "{listed}"
    );
    let (ok, _, stderr) = run(&["cancel", "--coordinator", &url, &retry]);
    assert!(ok, "{stderr}");
    // Nothing of that kind to retry: refused, naming why.
    let (ok, _, stderr) = run(&["retry", "--coordinator", &url, "--failed", &long]);
    assert!(
        !ok && stderr.contains(&format!(
            "batch {long} has no failed items: nothing to retry"
        )),
        "{stderr}"
    );
}
