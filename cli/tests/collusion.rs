//! One token holder, many registrations: liars that share the honest worker's token, uphold
//! each other's lies as auditors and claim huge searches, as processes over real gRPC (the
//! coordinator and the honest worker are the binary; the liars are this test speaking the
//! worker protocol). And a liar whose only possible auditor, under another token, never asks
//! for work. Every stored answer must still be optimal.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{lengths, run_with_env, Coordinator};
use tilesolve::moves::{moves_from_string, moves_to_string, replay};
use tilesolve::proto::v1 as pb;
use tilesolve::task::{run_task, TaskOutcome, Work};
use tilesolve::{parse_board, Direction, HeuristicKind, Solver};

const CLIENT_TOKEN: &str = "client-secret";
const WORKER_TOKEN: &str = "worker-secret";
const OTHER_TOKEN: &str = "other-worker-secret";

/// What a fake worker does with the tasks it is given.
#[derive(Clone, Copy, PartialEq)]
enum Conduct {
    /// Answers whole puzzles two moves too long (a step back and forth at the end), claims a
    /// million nodes a task, and upholds every audit it is given without searching.
    Collude,
    /// Registers and heartbeats, never asks for work.
    Silent,
    /// Declares 1,024 threads, asks once for all it may hold, then only heartbeats.
    Hog,
    /// Reports every task it is given as failed.
    Err,
}

/// The lie told about `task`.
fn lie(task: &pb::Task) -> pb::TaskResult {
    use pb::task_result::Outcome;
    let board = parse_board(&task.board).unwrap();
    let goal = parse_board(&task.goal).unwrap();
    let outcome = if task.iterate {
        let path = moves_from_string(&task.path).unwrap();
        let solver = Solver::new(goal, HeuristicKind::LinearConflict);
        let work = Work {
            board: &board,
            path: &path,
            bound: task.bound,
            iterate: true,
            node_budget: task.node_budget,
            profile_depth: 0,
        };
        match run_task(&solver, work, None).outcome {
            TaskOutcome::Found(mut moves) => {
                // A real path two moves too long, ending in a step out and back.
                let last = moves.last().copied();
                let detour = Direction::ALL
                    .into_iter()
                    .find(|&d| goal.apply(d).is_some() && last.is_none_or(|l| l.opposite() != d))
                    .unwrap();
                moves.extend([detour, detour.opposite()]);
                assert!(replay(&board, &goal, &moves).is_ok());
                Outcome::Found(moves_to_string(&moves))
            }
            TaskOutcome::BudgetSpent(at) => Outcome::BudgetSpentAt(at),
            other => Outcome::Error(format!("{other:?}")),
        }
    } else {
        // An audit: "nothing below the bound", without looking.
        Outcome::NextBound(task.bound + 1)
    };
    pb::TaskResult {
        task_id: task.task_id,
        nodes: 1_000_000,
        outcome: Some(outcome),
        ..Default::default()
    }
}

/// Registers with `token` and behaves as `conduct` says until stopped; registers again when
/// quarantined. Returns how many times it was quarantined.
async fn fake_worker(
    url: String,
    token: &'static str,
    conduct: Conduct,
    stop: Arc<AtomicBool>,
) -> u32 {
    let channel = tonic::transport::Endpoint::from_shared(url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let authorized = move |mut request: tonic::Request<()>| {
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        Ok(request)
    };
    let mut client = pb::workers_client::WorkersClient::with_interceptor(channel, authorized);
    let mut quarantined = 0;
    while !stop.load(Ordering::Relaxed) {
        let registered = client
            .register(pb::RegisterRequest {
                threads: if conduct == Conduct::Hog { 1024 } else { 1 },
                protocol_version: tilesolve::proto::PROTOCOL_VERSION,
                host: "liar".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut results = Vec::new();
        let mut polls = 0;
        while !stop.load(Ordering::Relaxed) {
            let heartbeat_only = match conduct {
                Conduct::Silent => true,
                Conduct::Hog => polls > 0,
                Conduct::Collude | Conduct::Err => false,
            };
            if heartbeat_only {
                client
                    .heartbeat(pb::HeartbeatRequest {
                        worker_id: registered.worker_id,
                        worker_secret: registered.worker_secret.clone(),
                        ..Default::default()
                    })
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            let polled = client
                .poll(pb::PollRequest {
                    worker_id: registered.worker_id,
                    worker_secret: registered.worker_secret.clone(),
                    free_slots: if conduct == Conduct::Hog { 1024 } else { 4 },
                    results: std::mem::take(&mut results),
                    idle: false,
                    leaving: false,
                })
                .await;
            match polled {
                Ok(response) => {
                    polls += 1;
                    let tasks = response.into_inner().tasks;
                    match conduct {
                        Conduct::Err => results.extend(tasks.iter().map(|task| pb::TaskResult {
                            task_id: task.task_id,
                            outcome: Some(pb::task_result::Outcome::Error("disk full".into())),
                            ..Default::default()
                        })),
                        _ => results.extend(tasks.iter().map(lie)),
                    }
                    if results.is_empty() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                Err(status) if status.code() == tonic::Code::PermissionDenied => {
                    assert!(
                        status.message().contains("quarantined")
                            || status.message().contains("shut out"),
                        "{status:?}"
                    );
                    quarantined += 1;
                    break;
                }
                Err(status) => panic!("{status:?}"),
            }
        }
    }
    quarantined
}

/// `count` 8-puzzles a random walk away from the goal, with their optimal lengths.
fn boards(count: usize) -> Vec<(String, u64)> {
    common::walked(3, 40, count, 0x2545_f491_4f6c_dd1d)
}

fn client(args: &[&str]) -> (bool, String, String) {
    run_with_env(args, &[("TILESOLVE_TOKEN", CLIENT_TOKEN)])
}

/// The honest worker: the binary, with `token` as its worker token.
fn start_honest_worker(url: &str, data: &Path, token: &str) -> common::Process {
    common::worker(url, data, &["--worker-token", token])
}

/// Submits `boards`, waits for the answers and checks every one, and what the store answers
/// for each, against its optimal length.
fn assert_all_optimal(url: &str, dir: &Path, boards: &[(String, u64)]) {
    let path = dir.join("batch.txt");
    let text: String = boards.iter().map(|(b, _)| format!("{b}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let (ok, stdout, stderr) = client(&[
        "submit",
        "--coordinator",
        url,
        "--heuristic",
        "linear-conflict",
        "--wait",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let answered = lengths(&stdout);
    assert_eq!(answered.len(), boards.len());
    let wrong: Vec<_> = answered
        .iter()
        .zip(boards)
        .filter(|((_, got), (_, optimal))| *got != Some(*optimal))
        .collect();
    assert!(wrong.is_empty(), "{} wrong: {wrong:?}", wrong.len());
    for (board, optimal) in boards {
        let (ok, stdout, stderr) = client(&["query", "--coordinator", url, "--json", board]);
        assert!(ok, "{stderr}");
        assert_eq!(lengths(&stdout), vec![(board.clone(), Some(*optimal))]);
    }
}

/// Waits until the honest worker and `fakes` fake workers have registered, so a batch
/// submitted next can reach each of them.
fn registered_honest(server: &Coordinator, fakes: usize) {
    common::wait_until("the workers", Duration::from_secs(30), || {
        let log = server.log_text();
        let registered = log
            .lines()
            .filter(|line| line.contains("worker registered"));
        let (liars, honest): (Vec<&str>, Vec<&str>) =
            registered.partition(|line| line.contains("host=liar"));
        (!honest.is_empty() && liars.len() >= fakes).then_some(())
    });
}

#[test]
fn three_colluding_registrations_of_one_token_store_no_wrong_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--verify", "full"],
        &[
            ("TILESOLVE_TOKEN", CLIENT_TOKEN),
            ("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN),
        ],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let liars: Vec<_> = (0..3)
        .map(|_| {
            runtime.spawn(fake_worker(
                url.clone(),
                WORKER_TOKEN,
                Conduct::Collude,
                stop.clone(),
            ))
        })
        .collect();
    let mut honest = start_honest_worker(&url, &dir.path().join("honest"), WORKER_TOKEN);
    registered_honest(&server, 3);

    assert_all_optimal(&url, dir.path(), &boards(200));
    stop.store(true, Ordering::Relaxed);
    let caught: u32 = liars
        .into_iter()
        .map(|liar| runtime.block_on(liar).unwrap())
        .sum();
    assert!(caught >= 1, "no colluder was caught");
    assert!(
        honest.0.try_wait().unwrap().is_none(),
        "the honest worker stopped: {}",
        std::fs::read_to_string(dir.path().join("honest.log")).unwrap()
    );
    let log = server.log_text();
    assert!(log.contains("an audit found one of"), "{log}");
}

#[test]
fn a_liar_whose_only_auditor_never_asks_for_work_is_audited_by_the_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = format!("{WORKER_TOKEN},{OTHER_TOKEN}");
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--lease-timeout", "2", "--verify", "full"],
        &[
            ("TILESOLVE_TOKEN", CLIENT_TOKEN),
            ("TILESOLVE_WORKER_TOKEN", &tokens),
        ],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let silent = runtime.spawn(fake_worker(
        url.clone(),
        OTHER_TOKEN,
        Conduct::Silent,
        stop.clone(),
    ));
    let liar = runtime.spawn(fake_worker(
        url.clone(),
        WORKER_TOKEN,
        Conduct::Collude,
        stop.clone(),
    ));
    // The honest worker shares the liar's token: the only worker that may audit either is the
    // silent one, so every audit waits a lease timeout in the queue and then runs here.
    let _honest = start_honest_worker(&url, &dir.path().join("honest"), WORKER_TOKEN);
    registered_honest(&server, 2);

    assert_all_optimal(&url, dir.path(), &boards(40));
    stop.store(true, Ordering::Relaxed);
    assert!(
        runtime.block_on(liar).unwrap() >= 1,
        "the liar was never caught"
    );
    assert_eq!(runtime.block_on(silent).unwrap(), 0);
}

#[test]
fn a_hog_and_an_erring_worker_beside_an_honest_one_fail_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &["--lease-timeout", "2"],
        &[
            ("TILESOLVE_TOKEN", CLIENT_TOKEN),
            ("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN),
        ],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let _honest = start_honest_worker(&url, &dir.path().join("honest"), WORKER_TOKEN);
    registered_honest(&server, 0);
    let hog = runtime.spawn(fake_worker(
        url.clone(),
        WORKER_TOKEN,
        Conduct::Hog,
        stop.clone(),
    ));
    let erring = runtime.spawn(fake_worker(
        url.clone(),
        WORKER_TOKEN,
        Conduct::Err,
        stop.clone(),
    ));

    assert_all_optimal(&url, dir.path(), &boards(100));
    stop.store(true, Ordering::Relaxed);
    assert!(
        runtime.block_on(erring).unwrap() >= 1,
        "the erring worker was never shut out"
    );
    assert_eq!(runtime.block_on(hog).unwrap(), 0);
    let log = server.log_text();
    assert!(log.contains("reports were failures"), "{log}");
}
