//! The worker API as a raw gRPC worker calls it, against a real `serve` on 127.0.0.1: idle
//! workers' long polls, and a worker's session (its polls and heartbeats as messages of one
//! call, and what it is told unasked).

mod common;

use std::path::Path;
use std::time::Duration;

use common::{run, Coordinator};
use tilesolve::proto::v1 as pb;
use tilesolve::worker_session::WorkerSession;

/// Every idle worker's long poll is woken when a task is queued; the one that finds it taken by
/// another waits on for the next task rather than answering empty (with a thousand idle
/// workers, up to a thousand calls for every task queued).
#[test]
fn an_idle_workers_poll_waits_on_when_another_takes_the_task() {
    let dir = tempfile::tempdir().unwrap();
    // A hundred times the host's times: the long poll holds for 100 s.
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--verify", "off", "--time-scale", "100"],
        &[],
    );
    let url = server.url();
    let submit = |name: &str, board: &str| submit_board(dir.path(), &url, name, board);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        // A fresh worker's poll with every thread idle, under way.
        let idle_poll = || {
            let url = url.clone();
            tokio::spawn(async move {
                let (mut workers, worker_id, worker_secret) = common::registered_worker(&url).await;
                let poll = pb::PollRequest {
                    worker_id,
                    worker_secret,
                    free_slots: 1,
                    idle: true,
                    ..Default::default()
                };
                workers.poll(poll).await.unwrap().into_inner()
            })
        };
        let (mut one, mut other) = (idle_poll(), idle_poll());
        // Long enough for both calls to reach the coordinator and wait there.
        tokio::time::sleep(Duration::from_secs(2)).await;
        submit("first.txt", "8,6,7,2,5,4,3,0,1");
        let (answered, mut waiting) = tokio::select! {
            answered = &mut one => (answered, other),
            answered = &mut other => (answered, one),
        };
        assert_eq!(
            answered.unwrap().tasks.len(),
            1,
            "the first poll answered takes the task: none is answered empty"
        );
        // Answered empty, it would have come back within milliseconds.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!waiting.is_finished(), "the other poll was answered empty");
        submit("second.txt", "6,4,7,8,5,0,3,2,1");
        let answered = tokio::time::timeout(Duration::from_secs(60), &mut waiting)
            .await
            .expect("the waiting poll to take the next task")
            .unwrap();
        assert_eq!(answered.tasks.len(), 1, "it takes the next task");
    });
}

/// A worker's session answers each message as its unary call would: a long poll and a held
/// heartbeat wait side by side, the first call that fails ends the stream with its status, a
/// worker whose session is gone is leased nothing by the long poll it left waiting, and a worker
/// of protocol version 3 (unary calls only) is still served.
#[test]
fn a_workers_session_answers_its_calls_side_by_side_and_ends_with_the_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    // A hundred times the host's times: a long poll holds for 100 s; a heartbeat is held up to
    // its interval, 150 s of a 600 s lease.
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &[
            "--verify",
            "off",
            "--time-scale",
            "100",
            "--lease-timeout",
            "600",
        ],
        &[],
    );
    let url = server.url();
    let submit = |name: &str, board: &str| submit_board(dir.path(), &url, name, board);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let open = |url: String| async move {
            let (mut workers, worker_id, worker_secret) = common::registered_worker(&url).await;
            let session =
                WorkerSession::open(|calls| workers.session(calls), worker_id, &worker_secret)
                    .await
                    .unwrap();
            (session, worker_id, worker_secret)
        };
        let idle_poll = |worker_id: u64, worker_secret: &str| pb::PollRequest {
            worker_id,
            worker_secret: worker_secret.to_string(),
            free_slots: 1,
            idle: true,
            ..Default::default()
        };

        // A session whose worker goes away while its long poll waits.
        let (gone, gone_id, gone_secret) = open(url.clone()).await;
        let left_waiting = {
            let gone = gone.clone();
            let poll = idle_poll(gone_id, &gone_secret);
            tokio::spawn(async move { gone.poll(poll).await })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        left_waiting.abort();
        drop(gone);
        // Long enough for the coordinator to see the stream end.
        tokio::time::sleep(Duration::from_secs(1)).await;

        let (session, worker_id, worker_secret) = open(url.clone()).await;
        let held = {
            let session = session.clone();
            let beat = pb::HeartbeatRequest {
                worker_id,
                worker_secret: worker_secret.clone(),
                running: Vec::new(),
                hold_ms: 150_000,
            };
            tokio::spawn(async move { session.heartbeat(beat).await })
        };
        // Queued while nobody but the worker gone had a poll waiting: it is not leased there.
        submit("one.txt", "8,6,7,2,5,4,3,0,1");
        let answered = tokio::time::timeout(
            Duration::from_secs(30),
            session.poll(idle_poll(worker_id, &worker_secret)),
        )
        .await
        .expect("the session's poll to be answered")
        .unwrap();
        assert_eq!(
            answered.tasks.len(),
            1,
            "the task waits for the live session's poll: the worker gone took it with the long poll it left"
        );
        assert!(
            !held.is_finished(),
            "the heartbeat is still held while the poll beside it was answered"
        );

        // A call that fails ends the stream with its status; every later call fails with it.
        let failed = session
            .poll(idle_poll(worker_id, "not the secret"))
            .await
            .expect_err("a poll with another secret is refused");
        let beat = tokio::time::timeout(Duration::from_secs(30), held)
            .await
            .expect("the held heartbeat to end with the stream")
            .unwrap()
            .expect_err("the held heartbeat ends with the failed call's status");
        assert_eq!(beat.code(), failed.code(), "{beat:?} / {failed:?}");
        let later = session
            .poll(idle_poll(worker_id, &worker_secret))
            .await
            .expect_err("the stream has ended");
        assert_eq!(later.code(), failed.code(), "{later:?} / {failed:?}");

        // Protocol version 3: registered, and its unary poll served.
        let channel = tonic::transport::Endpoint::from_shared(url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut old = pb::workers_client::WorkersClient::new(channel);
        let registered = old
            .register(pb::RegisterRequest {
                threads: 1,
                protocol_version: 3,
                host: "old".into(),
                ..Default::default()
            })
            .await
            .expect("a version 3 worker is registered")
            .into_inner();
        submit("two.txt", "6,4,7,8,5,0,3,2,1");
        let answered = old
            .poll(idle_poll(registered.worker_id, &registered.worker_secret))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answered.tasks.len(), 1, "the version 3 worker takes the task");
    });
}

/// An opened session is told unasked: a task of a cancelled batch is named to its worker at
/// once, with no heartbeat outstanding, and a heartbeat that is not held is answered at once;
/// a session opened with another secret ends with the refusal.
#[test]
fn an_opened_session_is_told_of_a_task_to_stop_unasked() {
    let dir = tempfile::tempdir().unwrap();
    // A heartbeat could be held up to its interval: 150 s of a 600 s lease.
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--verify", "off", "--lease-timeout", "600"],
        &[],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (mut workers, worker_id, worker_secret) = common::registered_worker(&url).await;
        let session =
            WorkerSession::open(|calls| workers.session(calls), worker_id, &worker_secret)
                .await
                .unwrap();
        submit_board(dir.path(), &url, "one.txt", "8,6,7,2,5,4,3,0,1");
        let leased = session
            .poll(pb::PollRequest {
                worker_id,
                worker_secret: worker_secret.clone(),
                free_slots: 1,
                idle: true,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(leased.tasks.len(), 1, "the worker takes the board's task");
        let task = leased.tasks[0].task_id;
        let beat = pb::HeartbeatRequest {
            worker_id,
            worker_secret: worker_secret.clone(),
            running: vec![task],
            hold_ms: 0,
        };
        let answered = tokio::time::timeout(Duration::from_secs(30), session.heartbeat(beat))
            .await
            .expect("a heartbeat that is not held to be answered at once")
            .unwrap();
        assert!(answered.cancelled.is_empty(), "{answered:?}");

        // The worker never reports the task: it holds it until told to stop.
        let (ok, _, stderr) = run(&["cancel", "--coordinator", &url, "1"]);
        assert!(ok, "{stderr}");
        let told = tokio::time::timeout(Duration::from_secs(30), session.told())
            .await
            .expect("the task to stop to be told unasked")
            .unwrap();
        assert_eq!(told.cancelled, vec![task], "{told:?}");

        let (mut other, other_id, _) = common::registered_worker(&url).await;
        let refused = WorkerSession::open(|calls| other.session(calls), other_id, "not the secret")
            .await
            .unwrap();
        let why = tokio::time::timeout(Duration::from_secs(30), refused.told())
            .await
            .expect("the refused session to end")
            .expect_err("a session opened with another secret is refused");
        assert_eq!(why.code(), tonic::Code::PermissionDenied, "{why:?}");
    });
}

/// Writes `board` as the batch file `name` in `dir` and submits it to the coordinator at `url`
/// (solved with Manhattan distance: a whole task, no tables).
fn submit_board(dir: &Path, url: &str, name: &str, board: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("{board}\n")).unwrap();
    let (ok, _, stderr) = run(&[
        "submit",
        "--coordinator",
        url,
        "--heuristic",
        "manhattan",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
}
