//! Stopping and starting as an orchestrator does, as processes: a worker sent SIGTERM mid-batch
//! hands its tasks back at once (the lease timeout here is an hour, so waiting it out would
//! stall the batch), a coordinator sent SIGTERM flushes and exits while a client waits, and a
//! worker started before its coordinator waits for it, its readiness probe saying so.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{
    assert_optimal, known_boards, lengths, port_outside_the_ephemeral_range, run, status,
    wait_until, worker, write_batch, Coordinator, Process, WatchedBatch,
};
use tilesolve::proto::v1 as pb;

/// Small budgets, so puzzles are split into many subtree tasks and a worker always holds some;
/// an hour's lease timeout, so only a hand-back brings them back in time.
const SERVE: [&str; 8] = [
    "--split-after",
    "2000",
    "--subtree-budget",
    "1000",
    "--lease-timeout",
    "3600",
    // Audits off: this is about leases, and answers waiting for their audits leave stretches
    // in which a worker of these tiny tasks holds nothing to hand back or lose.
    "--verify",
    "off",
];

fn sigterm(process: &Process) {
    let sent = Command::new("kill")
        .args(["-TERM", &process.0.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
}

/// Waits for `process` to exit by itself; returns whether it succeeded.
fn exit_status(mut process: Process, what: &str) -> bool {
    wait_until(what, Duration::from_secs(30), || {
        process.0.try_wait().expect("wait").map(|s| s.success())
    })
}

#[test]
fn a_worker_sent_sigterm_hands_its_tasks_back_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let boards = known_boards(16);
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, false);
    let server = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &SERVE, &[]);
    let url = server.url();
    // Alone until it leaves, so that it holds tasks then (beside a second worker it could be
    // caught between its tasks, with nothing to hand back); the batch ends on the other.
    let leaving = worker(&url, &dir.path().join("w1"), &["--prefetch", "2"]);
    let batch = common::submit(&url, &path);

    common::wait_for_mid_batch(&url, &batch);
    sigterm(&leaving);
    assert!(exit_status(leaving, "the worker to exit after SIGTERM"));
    let _staying = worker(&url, &dir.path().join("w2"), &[]);

    wait_until("the batch to finish", Duration::from_secs(300), || {
        (status(&url, &batch, &[])?["done"] == true).then_some(())
    });
    let (ok, stdout, _) = run(&["results", "--coordinator", &url, "--json", &batch]);
    assert!(ok, "every board solved:\n{stdout}");
    assert_optimal(&lengths(&stdout), &boards);
    let log = server.log_text();
    let left = log
        .lines()
        .find(|line| line.contains("worker left"))
        .unwrap_or_else(|| panic!("no hand-back in the coordinator log:\n{log}"));
    assert!(!left.contains("tasks_returned=0"), "it held tasks: {left}");
    assert!(!log.contains("expired leases"), "{log}");
    let worker_log = std::fs::read_to_string(dir.path().join("w1.log")).unwrap();
    assert!(worker_log.contains("signal=\"SIGTERM\""), "{worker_log}");
    assert!(
        worker_log.contains("worker left the coordinator"),
        "{worker_log}"
    );
}

#[test]
fn a_coordinator_sent_sigterm_flushes_exits_and_resumes() {
    // The watching client keeps a stream open through the stop.
    let WatchedBatch {
        dir: _dir,
        boards,
        data,
        address,
        server,
        workers: _workers,
        client,
    } = WatchedBatch::start(&SERVE);
    let Coordinator { process, log, .. } = server;
    sigterm(&process);
    assert!(exit_status(
        process,
        "the coordinator to exit after SIGTERM"
    ));
    // The watch stream was ended by the stop (the client watches again), not held open to the
    // end of the grace period.
    assert_stopped_at_once(&log);

    let server = Coordinator::start(&data, &address, &SERVE, &[]);
    let results = common::watched_answers(client);
    assert_eq!(results.len(), boards.len());
    assert_optimal(&results, &boards);
    assert_eq!(server.log_text().matches("coordinator serving").count(), 2);
}

/// A worker's heartbeat held by the coordinator (nothing to tell it yet: held up to the
/// heartbeat interval, here 15 minutes) is answered when the coordinator stops, not cut off at
/// the end of the stop's grace period: the stop waits for every call in flight, and a held one
/// kept the embedded `batch` a heartbeat interval past its last answer.
#[test]
fn a_stopping_coordinator_answers_a_held_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let Coordinator {
        process,
        address,
        log,
    } = Coordinator::start(&dir.path().join("coordinator"), "127.0.0.1:0", &SERVE, &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answered = runtime.block_on(async {
        let (mut workers, worker_id, worker_secret) =
            common::registered_worker(&format!("http://{address}")).await;
        let beat = pb::HeartbeatRequest {
            worker_id,
            worker_secret,
            running: Vec::new(),
            hold_ms: u32::MAX,
        };
        let held = tokio::spawn(async move { workers.heartbeat(beat).await });
        // Long enough for the call to reach the coordinator; held there, with nothing to tell.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!held.is_finished(), "the heartbeat was not held");
        sigterm(&process);
        held.await.unwrap()
    });
    assert!(answered.is_ok(), "{answered:?}");
    assert!(exit_status(
        process,
        "the coordinator to exit after SIGTERM"
    ));
    assert_stopped_at_once(&log);
}

/// The coordinator whose log is `log` flushed its store and stopped with no call left open at
/// the end of the stop's grace period.
fn assert_stopped_at_once(log: &std::path::Path) {
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        text.contains("coordinator stopped: store flushed"),
        "{text}"
    );
    assert!(
        !text.contains("calls still open after the grace period"),
        "{text}"
    );
}

fn health(address: &str, service: &str) -> (bool, String) {
    let (ok, stdout, stderr) = run(&["health", "--address", address, "--service", service]);
    (ok, format!("{stdout}{stderr}"))
}

#[test]
fn a_worker_started_before_its_coordinator_waits_for_it_and_says_when_ready() {
    let dir = tempfile::tempdir().unwrap();
    let (port, health_port) = (
        port_outside_the_ephemeral_range(),
        port_outside_the_ephemeral_range(),
    );
    let (address, url) = (
        format!("127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}"),
    );
    let probe = format!("http://127.0.0.1:{health_port}");
    let _worker = worker(
        &url,
        &dir.path().join("w1"),
        &["--health-listen", &format!("127.0.0.1:{health_port}")],
    );
    let alive = wait_until(
        "the worker's health endpoint",
        Duration::from_secs(30),
        || {
            let (ok, text) = health(&probe, "");
            ok.then_some(text)
        },
    );
    assert_eq!(alive.trim(), "SERVING");
    let (ready, text) = health(&probe, "tilesolve.worker.ready");
    assert!(!ready, "no coordinator yet, so not ready: {text}");
    assert!(text.contains("NOT_SERVING"), "{text}");

    std::thread::sleep(Duration::from_secs(1));
    let server = Coordinator::start(&dir.path().join("coordinator"), &address, &[], &[]);
    wait_until("the worker to be ready", Duration::from_secs(30), || {
        health(&probe, "tilesolve.worker.ready").0.then_some(())
    });
    let (coordinator_ok, _) = health(&server.url(), "");
    assert!(coordinator_ok);

    let boards = known_boards(2);
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, false);
    let batch = common::submit(&url, &path);
    wait_until("the batch to finish", Duration::from_secs(120), || {
        (status(&url, &batch, &[])?["done"] == true).then_some(())
    });
    let (ok, stdout, _) = run(&["results", "--coordinator", &url, "--json", &batch]);
    assert!(ok, "{stdout}");
    assert_optimal(&lengths(&stdout), &boards);
    let log = std::fs::read_to_string(dir.path().join("w1.log")).unwrap();
    assert!(log.contains("lost the coordinator"), "it waited: {log}");
    assert!(log.contains("registered with coordinator"), "{log}");
}
