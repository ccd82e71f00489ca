//! Crashes mid-batch, as processes: a worker killed with SIGKILL, and a coordinator killed with
//! SIGKILL and restarted on the same port and files while its workers and a `submit --wait`
//! client keep running. Every acknowledged puzzle must still finish with its published optimal
//! length.

mod common;

use std::time::Duration;

use common::{
    assert_optimal, known_boards, lengths, run, status, wait_until, worker, write_batch,
    Coordinator, WatchedBatch,
};

/// Small budgets, so puzzles are split into many subtree tasks and a crash always catches some
/// leased; a one-second lease timeout, so a dead worker's tasks come back quickly.
const SERVE: [&str; 8] = [
    "--split-after",
    "2000",
    "--subtree-budget",
    "1000",
    "--lease-timeout",
    "1",
    // Audits off: this is about leases, and answers waiting for their audits leave stretches
    // in which a worker of these tiny tasks holds nothing to hand back or lose.
    "--verify",
    "off",
];

#[test]
fn a_worker_killed_mid_batch_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let boards = known_boards(12);
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, false);
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &SERVE, &[]);
    let url = server.url();
    // The doomed worker runs alone until it dies, so the tasks it holds then cannot be
    // withdrawn by another worker finishing their puzzles first: only their leases' expiry
    // can bring them back, and the survivor starts once they are back.
    let doomed = worker(&url, &dir.path().join("w1"), &[]);
    let batch = common::submit(&url, &path);

    common::wait_for_mid_batch(&url, &batch);
    doomed.kill();
    wait_until(
        "the dead worker's leases to expire",
        Duration::from_secs(30),
        || {
            server
                .log_text()
                .contains("expired leases returned to the queue")
                .then_some(())
        },
    );
    let _survivor = worker(&url, &dir.path().join("w2"), &[]);

    wait_until("the batch to finish", Duration::from_secs(300), || {
        (status(&url, &batch, &[])?["done"] == true).then_some(())
    });
    let (ok, stdout, _) = run(&["results", "--coordinator", &url, "--json", &batch]);
    assert!(ok, "every board solved:\n{stdout}");
    assert_optimal(&lengths(&stdout), &boards);
    let log = server.log_text();
    assert!(log.contains("worker lost"), "{log}");
    assert!(
        log.contains("expired leases returned to the queue"),
        "the killed worker held tasks:\n{log}"
    );
}

#[test]
fn a_coordinator_killed_mid_batch_resumes_on_restart() {
    // The client waits through the crash: it must reconnect by itself.
    let WatchedBatch {
        dir,
        boards,
        data,
        address,
        server,
        workers: _workers,
        client,
    } = WatchedBatch::start(&SERVE);
    server.process.kill();
    std::thread::sleep(Duration::from_millis(500));
    let server = Coordinator::start(&data, &address, &SERVE, &[]);

    let results = common::watched_answers(client);
    assert_eq!(results.len(), boards.len());
    assert_optimal(&results, &boards);
    for name in ["w1", "w2"] {
        let log = std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap();
        assert!(
            log.matches("registered with coordinator").count() >= 2,
            "{name} registered again with the restarted coordinator:\n{log}"
        );
    }
    assert!(server.log_text().matches("coordinator serving").count() == 2);
}

#[test]
fn a_damaged_table_on_the_coordinator_is_fetched_again_from_a_worker() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("coordinator");
    let boards = known_boards(0);
    let (first, second) = (dir.path().join("first.txt"), dir.path().join("second.txt"));
    write_batch(&first, &boards[..2], false);
    write_batch(&second, &boards[2..4], false);
    {
        let server = Coordinator::start(&data, "127.0.0.1:0", &[], &[]);
        let url = server.url();
        let _worker = worker(&url, &dir.path().join("w"), &[]);
        assert_optimal(&common::submit_and_wait(&url, &first), &boards[..2]);
        server.process.kill();
    }
    // One flipped bit in one of the coordinator's 5-5-5 tables.
    let table = std::fs::read_dir(&data)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "pdb"))
        .expect("the coordinator's table");
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[4096] ^= 0x10;
    std::fs::write(&table, bytes).unwrap();
    // A coordinator that may not build tables, and the worker that holds a good copy.
    let server = Coordinator::start(&data, "127.0.0.1:0", &["--no-table-builds"], &[]);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w"), &[]);
    assert_optimal(&common::submit_and_wait(&url, &second), &boards[2..4]);
    let log = server.log_text();
    assert!(
        log.contains("a damaged pattern table was set aside"),
        "{log}"
    );
    let mut aside = table.into_os_string();
    aside.push(".damaged");
    assert!(std::path::Path::new(&aside).exists());
}

/// A small tmpfs of its own, unmounted when dropped.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    /// Mounts a `megabytes` tmpfs at `path`; None where this process may not mount (not root).
    fn mount(path: &std::path::Path, megabytes: u32) -> Option<SmallDisk> {
        std::fs::create_dir_all(path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(path)
            .status()
            .is_ok_and(|status| status.success());
        mounted.then(|| SmallDisk(path.to_path_buf()))
    }

    fn resize(&self, megabytes: u32) {
        let resized = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={megabytes}m")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(resized.success());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

fn healthy(url: &str) -> bool {
    run(&["health", "--address", url]).0
}

/// `submit` of `file`: (success, stdout, stderr), or `None` when no answer came within `limit`
/// (the client is killed), so that a submission left waiting fails the test instead of holding
/// it until room returns, which only the test gives.
fn submit_within(
    url: &str,
    file: &std::path::Path,
    limit: Duration,
) -> Option<(bool, String, String)> {
    let mut child = std::process::Command::new(common::BIN)
        .args(["submit", "--coordinator", url, file.to_str().unwrap()])
        .env_remove("TILESOLVE_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run tilesolve");
    let ended = common::within(limit, || child.try_wait().unwrap());
    if ended.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    let output = child.wait_with_output().unwrap();
    Some((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[test]
fn a_full_disk_stops_serving_and_recovers_once_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    // The data directory is the small disk itself: the coordinator's log, beside it, is not.
    let Some(disk) = SmallDisk::mount(&dir.path().join("data"), 3) else {
        eprintln!("skipped: a small filesystem cannot be mounted here (it takes root)");
        return;
    };
    let server = Coordinator::start(&disk.0, "127.0.0.1:0", &[], &[]);
    let url = server.url();
    let _worker = worker(&url, &dir.path().join("w"), &[]);
    // Batches of 400 8-puzzles until the disk is full: the last one acknowledged may not finish
    // then, but it must finish once space returns.
    let mut acknowledged: Vec<(String, Vec<(String, u64)>)> = Vec::new();
    for seed in 1..40u64 {
        let boards = common::walked(3, 60, 400, seed * 0x9e37_79b9_7f4a_7c15);
        let file = dir.path().join(format!("b{seed}.txt"));
        write_batch(&file, &boards, false);
        // A submission whose flush meets the full disk is answered too, once the store check
        // finds the store failed (within its 20 s stall), not left waiting in that flush.
        let (ok, id, said) = submit_within(&url, &file, Duration::from_secs(60))
            .expect("a submission went unanswered for a minute as the disk filled");
        if !ok {
            assert!(said.contains("the coordinator's disk is full"), "{said}");
            break;
        }
        acknowledged.push((id.trim().to_string(), boards));
        let done = common::within(Duration::from_secs(20), || {
            status(&url, id.trim(), &[]).filter(|s| s["done"] == true)
        });
        if done.is_none() {
            break;
        }
    }
    wait_until(
        "the coordinator to say its store stopped taking writes",
        Duration::from_secs(60),
        || {
            server
                .log_text()
                .contains("the store stopped taking writes")
                .then_some(())
        },
    );
    assert!(!healthy(&url), "serving with a store that takes no writes");
    disk.resize(64);
    if common::within(Duration::from_secs(60), || healthy(&url).then_some(())).is_none() {
        panic!(
            "the coordinator did not serve again within 60 s; its log:\n{}",
            server.log_text()
        );
    }
    // Nothing acknowledged was lost: every batch ends with every board at its optimal length.
    for (id, boards) in &acknowledged {
        wait_until("the batch to end", Duration::from_secs(120), || {
            status(&url, id, &[]).filter(|s| s["done"] == true)
        });
        let (_, stdout, stderr) = run(&["results", "--coordinator", &url, "--json", id]);
        assert_optimal(&lengths(&stdout), boards);
        assert!(!stdout.is_empty(), "{stderr}");
    }
    assert!(
        acknowledged.len() >= 2,
        "the disk filled too early to say anything"
    );
}
