//! Owners sharing one coordinator, as processes on 127.0.0.1: an owners file with three owners
//! (a submitter with limits, a reader, an admin), each role and limit refusing what it should
//! with the limit named, batches recorded under their owners across a restart, usage per owner
//! in `/metrics`, and the file read again on SIGHUP and when it changes; and owners of one
//! priority sharing the workers, so one owner's long batch does not hold another's back.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{
    far_boards, lengths, run_with_env, wait_until, walked, worker, write_batch, Coordinator,
};

const WORKER_TOKEN: &str = "the-workers-token";

fn owner(name: &str, role: &str, token: &str, limits: &str) -> String {
    let hash = tilesolve_coordinator::owners::token_sha256_hex(token);
    format!(
        "[[owner]]\nname = \"{name}\"\nrole = \"{role}\"\ntoken_sha256 = \"{hash}\"\n{limits}\n"
    )
}

fn write_owners(path: &Path, alice_limits: &str) {
    let text = owner("alice", "submit", "alice-token", alice_limits)
        + &owner("bob", "read", "bob-token", "")
        + &owner("carol", "admin", "carol-token", "");
    std::fs::write(path, text).unwrap();
}

/// `tilesolve ARGS --coordinator URL` with `token`: (success, stdout, stderr).
/// Submissions name linear conflict: the boards are near the goal, and the default tables
/// would take the coordinator most of a minute to build.
fn as_owner(token: &str, url: &str, args: &[&str]) -> (bool, String, String) {
    let mut all = args.to_vec();
    all.extend(["--coordinator", url]);
    if args[0] == "submit" {
        all.extend(["--heuristic", "linear-conflict"]);
    }
    run_with_env(&all, &[("TILESOLVE_TOKEN", token)])
}

fn metrics(url: &str, token: &str) -> String {
    ureq::get(&format!("{url}/metrics"))
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .unwrap()
        .into_string()
        .unwrap()
}

/// The value of the metrics line that starts with `series`.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn owners_have_roles_limits_and_their_own_batches() {
    let dir = tempfile::tempdir().unwrap();
    let owners = dir.path().join("owners.toml");
    write_owners(&owners, "max_running_batches = 1\nmax_pending_boards = 8");
    let data = dir.path().join("coordinator");
    let serve_args = [
        "--owners",
        owners.to_str().unwrap(),
        "--history-seconds",
        "1",
    ];
    let env = [("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN)];
    let server = Coordinator::start(&data, "127.0.0.1:0", &serve_args, &env);
    let url = server.url();
    let boards = walked(4, 30, 6, 5);
    let batch_file = dir.path().join("six.txt");
    write_batch(&batch_file, &boards, false);
    let file = batch_file.to_str().unwrap();

    // No worker yet: alice's first batch stays running, so her second meets her limit.
    let (ok, stdout, stderr) = as_owner("alice-token", &url, &["submit", file]);
    assert!(ok, "{stderr}");
    let alices = stdout.trim().to_string();
    let (ok, _, stderr) = as_owner("alice-token", &url, &["submit", file]);
    assert!(!ok);
    assert!(
        stderr.contains("ResourceExhausted: owner alice has 1 batch queued or running, its limit (max_running_batches = 1)"),
        "{stderr}"
    );
    // A reader reads and may not submit or cancel; without a token nothing is read.
    let (ok, _, stderr) = as_owner("bob-token", &url, &["submit", file]);
    assert!(!ok);
    assert!(
        stderr.contains("PermissionDenied: owner bob (role read) may not submit a batch"),
        "{stderr}"
    );
    let (ok, _, stderr) = as_owner("bob-token", &url, &["cancel", &alices]);
    assert!(!ok && stderr.contains("PermissionDenied"), "{stderr}");
    let (ok, _, stderr) = run_with_env(&["batches", "--coordinator", &url], &[]);
    assert!(
        !ok && stderr.contains("Unauthenticated: no token"),
        "{stderr}"
    );
    // Owner tokens do not open the worker API, nor the worker token the client API.
    let (ok, _, stderr) = as_owner(WORKER_TOKEN, &url, &["batches"]);
    assert!(!ok && stderr.contains("PermissionDenied"), "{stderr}");

    // The admin's batch is its own; a submitter may not cancel it, the admin may cancel any.
    let (ok, stdout, stderr) = as_owner("carol-token", &url, &["submit", "--priority", "4", file]);
    assert!(ok, "{stderr}");
    let carols = stdout.trim().to_string();
    let (ok, _, stderr) = as_owner("alice-token", &url, &["cancel", &carols]);
    assert!(!ok);
    assert!(
        stderr.contains(&format!(
            "owner alice (role submit) may not cancel batch {carols}: it is owner carol's"
        )),
        "{stderr}"
    );
    let (ok, listed, stderr) = as_owner(
        "bob-token",
        &url,
        &["batches", "--owner", "alice", "--json"],
    );
    assert!(ok, "{stderr}");
    let listed: Vec<serde_json::Value> = listed
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["batch"].as_u64().unwrap().to_string(), alices);
    assert_eq!(listed[0]["owner"], "alice");

    // Usage per owner while both run.
    let scraped = metrics(&url, "bob-token");
    assert_eq!(
        metric(&scraped, "tilesolve_owner_running_batches{owner=\"alice\"}"),
        Some(1.0),
        "{scraped}"
    );
    assert_eq!(
        metric(&scraped, "tilesolve_owner_pending_boards{owner=\"carol\"}"),
        Some(6.0),
        "{scraped}"
    );
    assert_eq!(
        metric(
            &scraped,
            "tilesolve_owner_refusals_total{owner=\"alice\",limit=\"max_running_batches\"}"
        ),
        Some(1.0),
        "{scraped}"
    );
    assert_eq!(
        metric(
            &scraped,
            "tilesolve_owner_limit{owner=\"alice\",limit=\"max_pending_boards\"}"
        ),
        Some(8.0),
        "{scraped}"
    );

    // A worker solves both, optimally; alice's nodes are counted to her.
    let _worker = worker(&url, &dir.path().join("worker"), &["--token", WORKER_TOKEN]);
    let expected: Vec<(String, Option<u64>)> =
        boards.iter().map(|(b, l)| (b.clone(), Some(*l))).collect();
    for batch in [&alices, &carols] {
        wait_until("the batch to end", Duration::from_secs(120), || {
            let (ok, stdout, _) = as_owner("bob-token", &url, &["status", "--json", batch]);
            let status: serde_json::Value = serde_json::from_str(stdout.trim()).ok()?;
            (ok && status["done"] == true).then_some(())
        });
        let (ok, stdout, stderr) = as_owner("bob-token", &url, &["results", "--json", batch]);
        assert!(ok, "{stderr}");
        assert_eq!(lengths(&stdout), expected, "batch {batch}: optimal lengths");
    }
    let alice_nodes = wait_until("alice's nodes counted", Duration::from_secs(30), || {
        metric(
            &metrics(&url, "carol-token"),
            "tilesolve_owner_nodes_today{owner=\"alice\"}",
        )
        .filter(|&nodes| nodes > 0.0)
    });
    // Her pending limit counts the new batch's boards (none of hers is open now).
    let twelve = dir.path().join("twelve.txt");
    write_batch(&twelve, &walked(4, 30, 12, 9), false);
    let (ok, _, stderr) = as_owner("alice-token", &url, &["submit", twelve.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains(
            "owner alice would have 12 boards pending, over its limit (max_pending_boards = 8)"
        ),
        "{stderr}"
    );

    // SIGHUP reads the file again: a nodes-per-day limit she has passed refuses her. A file
    // that does not parse keeps the owners in force.
    write_owners(&owners, "max_nodes_per_day = 1");
    hang_up(&server);
    wait_until(
        "the owners file read again",
        Duration::from_secs(10),
        || {
            server
                .log_text()
                .contains("owners file read again")
                .then_some(())
        },
    );
    let (ok, _, stderr) = as_owner("alice-token", &url, &["submit", file]);
    assert!(!ok);
    assert!(
        stderr.contains("nodes today (UTC), its limit (max_nodes_per_day = 1)"),
        "{stderr}"
    );
    // This time no signal: the coordinator sees the file change (it looks every 10 s).
    std::fs::write(&owners, "[[owner]]\nname = ").unwrap();
    wait_until("the broken file refused", Duration::from_secs(30), || {
        server
            .log_text()
            .contains("owners file not read again")
            .then_some(())
    });
    let (ok, _, stderr) = as_owner("bob-token", &url, &["batches"]);
    assert!(ok, "the owners in force stay: {stderr}");

    // A restart keeps each batch's owner and the day's nodes (kept with the history samples).
    write_owners(&owners, "max_nodes_per_day = 1");
    std::thread::sleep(Duration::from_millis(1_500));
    server.process.kill();
    let server = Coordinator::start(&data, "127.0.0.1:0", &serve_args, &env);
    let url = server.url();
    let (ok, listed, stderr) = as_owner("carol-token", &url, &["batches", "--owner", "carol"]);
    assert!(ok, "{stderr}");
    assert!(
        listed.contains(&format!("batch {carols}:")) && listed.contains("owner carol"),
        "{listed}"
    );
    let kept = metric(
        &metrics(&url, "carol-token"),
        "tilesolve_owner_nodes_today{owner=\"alice\"}",
    );
    assert!(
        kept.is_some_and(|nodes| nodes >= alice_nodes),
        "{kept:?} of {alice_nodes}"
    );
    let (ok, _, stderr) = as_owner("alice-token", &url, &["submit", file]);
    assert!(!ok && stderr.contains("max_nodes_per_day = 1"), "{stderr}");

    // A backup carries each batch's owner into a coordinator without owners.
    let exported = dir.path().join("export.jsonl");
    let out = exported.to_str().unwrap();
    let (ok, _, stderr) = as_owner("carol-token", &url, &["export", "--batches", "-o", out]);
    assert!(ok, "{stderr}");
    let target = Coordinator::start(&dir.path().join("target"), "127.0.0.1:0", &[], &[]);
    let target_url = target.url();
    // The import's answers are proven again by the target's own search, on its worker.
    let _target_worker = worker(&target_url, &dir.path().join("target-worker"), &[]);
    let (ok, _, stderr) = run_with_env(
        &[
            "import",
            "--coordinator",
            &target_url,
            "--heuristic",
            "linear-conflict",
            out,
        ],
        &[],
    );
    assert!(ok, "{stderr}");
    let (ok, listed, stderr) = run_with_env(&["batches", "--coordinator", &target_url], &[]);
    assert!(ok, "{stderr}");
    assert_eq!(listed.matches(", owner alice").count(), 1, "{listed}");
    assert_eq!(listed.matches(", owner carol").count(), 1, "{listed}");
}

fn hang_up(server: &Coordinator) {
    let pid = server.process.0.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Alice's 300 far boards keep two workers busy; Bob's three near boards, submitted after them
/// at the same priority, take turns with hers instead of waiting for all 300.
#[test]
fn owners_of_one_priority_share_the_workers() {
    let dir = tempfile::tempdir().unwrap();
    let owners = dir.path().join("owners.toml");
    let text =
        owner("alice", "submit", "alice-token", "") + &owner("bob", "submit", "bob-token", "");
    std::fs::write(&owners, text).unwrap();
    let env = [("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN)];
    let serve_args = ["--owners", owners.to_str().unwrap()];
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &serve_args,
        &env,
    );
    let url = server.url();
    let _workers = [
        worker(&url, &dir.path().join("w1"), &["--token", WORKER_TOKEN]),
        worker(&url, &dir.path().join("w2"), &["--token", WORKER_TOKEN]),
    ];
    let long_file = dir.path().join("long.txt");
    write_batch(&long_file, &far_boards(300, 7), false);
    let (ok, stdout, stderr) = as_owner(
        "alice-token",
        &url,
        &["submit", long_file.to_str().unwrap()],
    );
    assert!(ok, "{stderr}");
    let long = stdout.trim().to_string();
    let alices = |url: &str| {
        let (ok, stdout, _) = as_owner("alice-token", url, &["status", "--json", &long]);
        ok.then(|| serde_json::from_str::<serde_json::Value>(stdout.trim()).ok())?
    };
    wait_until(
        "alice's batch to run on both workers",
        Duration::from_secs(60),
        || {
            let status = alices(&url)?;
            (status["workers"].as_u64()? == 2).then_some(())
        },
    );
    let near = walked(4, 30, 3, 23);
    let near_file = dir.path().join("near.txt");
    write_batch(&near_file, &near, false);
    let started = std::time::Instant::now();
    let (ok, stdout, stderr) = as_owner(
        "bob-token",
        &url,
        &["submit", "--wait", "--json", near_file.to_str().unwrap()],
    );
    let took = started.elapsed();
    eprintln!("bob's batch took {took:?}");
    assert!(ok, "{stderr}");
    let expected: Vec<(String, Option<u64>)> =
        near.iter().map(|(b, l)| (b.clone(), Some(*l))).collect();
    assert_eq!(
        lengths(&stdout),
        expected,
        "every answer at its optimal length"
    );
    // A liveness bound, not a speed figure: behind all 300 of alice's it would wait minutes.
    assert!(took < Duration::from_secs(30), "it waited {took:?}");
    let alice_now = alices(&url).unwrap();
    assert_eq!(alice_now["state"], "running", "{alice_now}");
}
