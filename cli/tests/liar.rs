//! A worker that lies on every task, next to an honest one, as processes over real gRPC: the
//! coordinator and the honest worker are the binary; the liar is this test, speaking the
//! worker protocol with the worker token. It runs each task for real and then reports longer
//! paths for whole puzzles, raised bounds that hide subtree answers, and moves off the board;
//! as an auditor it never finds anything. The batch must still end with every answer optimal.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{assert_optimal, lengths, run_with_env, write_batch, Coordinator, BIN};
use tilesolve::moves::{moves_from_string, moves_to_string};
use tilesolve::proto::v1 as pb;
use tilesolve::task::{run_task, TaskOutcome, Work};
use tilesolve::{parse_board, HeuristicKind, Solver};

const CLIENT_TOKEN: &str = "client-secret";
const WORKER_TOKEN: &str = "worker-secret";

/// The truth about `task`, then the lie told about it (the `told`-th lie).
fn lie(task: &pb::Task, told: u64) -> pb::TaskResult {
    let board = parse_board(&task.board).unwrap();
    let goal = parse_board(&task.goal).unwrap();
    let path = moves_from_string(&task.path).unwrap();
    let solver = Solver::new(goal, HeuristicKind::LinearConflict);
    let work = Work {
        board: &board,
        path: &path,
        bound: task.bound,
        iterate: task.iterate,
        node_budget: task.node_budget,
        profile_depth: 0,
        weighted: None,
    };
    let truth = run_task(&solver, work, None);
    use pb::task_result::Outcome;
    let outcome = if told % 9 == 8 {
        Outcome::Found("U".repeat(40))
    } else {
        match truth.outcome {
            TaskOutcome::Found(moves) if task.iterate => {
                // A real path two moves too long, visiting no board twice.
                let longer = solver.path_two_moves_longer(&board, None).unwrap_or(moves);
                Outcome::Found(moves_to_string(&longer))
            }
            TaskOutcome::Found(_) => Outcome::NextBound(task.bound + 2),
            TaskOutcome::Exceeded(next) => Outcome::NextBound(next.saturating_add(2)),
            TaskOutcome::BudgetSpent(at) => Outcome::BudgetSpentAt(at.saturating_add(2)),
            TaskOutcome::Split {
                children,
                pruned_min_f,
            } => Outcome::Split(pb::SplitChildren {
                moves: moves_to_string(&children[..children.len().saturating_sub(1)]),
                pruned_min_f: pruned_min_f.saturating_add(2),
            }),
            // The liar's batches set no limits: it is never given a weighted task; and its
            // truth is searched without a hand-back flag.
            TaskOutcome::Weighted(_) | TaskOutcome::HandedBack { .. } | TaskOutcome::Returned => {
                Outcome::Error("no weighted or handed back tasks here".into())
            }
            TaskOutcome::Failed(reason) => Outcome::Error(reason),
        }
    };
    pb::TaskResult {
        task_id: task.task_id,
        nodes: truth.nodes,
        outcome: Some(outcome),
        ..Default::default()
    }
}

/// Registers and lies until stopped; comes back under a new registration when quarantined
/// (as a persistent liar would). Returns how many times it was quarantined.
async fn lying_worker(url: String, stop: Arc<AtomicBool>, lies: Arc<AtomicU64>) -> u32 {
    let channel = tonic::transport::Endpoint::from_shared(url)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let authorized = |mut request: tonic::Request<()>| {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {WORKER_TOKEN}").parse().unwrap(),
        );
        Ok(request)
    };
    let mut client = pb::workers_client::WorkersClient::with_interceptor(channel, authorized);
    let (mut quarantined, mut told) = (0, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let registered = client
            .register(pb::RegisterRequest {
                threads: 2,
                protocol_version: tilesolve::proto::PROTOCOL_VERSION,
                host: "liar".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut results = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let polled = client
                .poll(pb::PollRequest {
                    worker_id: registered.worker_id,
                    worker_secret: registered.worker_secret.clone(),
                    free_slots: 2,
                    results: std::mem::take(&mut results),
                    // Nothing running: it waits in the call and is woken when tasks come, as
                    // a real worker with every thread idle is.
                    idle: true,
                    leaving: false,
                })
                .await;
            match polled {
                Ok(response) => {
                    for task in response.into_inner().tasks {
                        told += 1;
                        lies.store(told, Ordering::Relaxed);
                        results.push(lie(&task, told));
                    }
                }
                Err(status) if status.code() == tonic::Code::PermissionDenied => {
                    assert!(status.message().contains("quarantined"), "{status:?}");
                    quarantined += 1;
                    break;
                }
                Err(status) => panic!("{status:?}"),
            }
        }
    }
    quarantined
}

fn boards() -> Vec<(String, u64)> {
    let mut boards = common::known_boards(0);
    boards.truncate(6);
    boards.extend(
        [
            ("8,6,7,2,5,4,3,0,1", 31),
            ("6,4,7,8,5,0,3,2,1", 31),
            ("1,2,3,4,5,6,0,7,8", 2),
            ("4,1,3,7,2,6,0,5,8", 6),
        ]
        .map(|(board, optimal)| (board.to_string(), optimal)),
    );
    boards
}

fn client(args: &[&str]) -> (bool, String, String) {
    run_with_env(args, &[("TILESOLVE_TOKEN", CLIENT_TOKEN)])
}

fn start_honest_worker(url: &str, data: &Path) -> common::Process {
    let log = std::fs::File::create(data.with_extension("log")).unwrap();
    let child = std::process::Command::new(BIN)
        .args(["worker", "--threads", "2", "--coordinator", url, "--data"])
        .arg(data)
        .env("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN)
        .env_remove("TILESOLVE_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    common::Process(child)
}

#[test]
fn with_a_worker_that_lies_on_every_task_every_stored_answer_is_optimal() {
    let dir = tempfile::tempdir().unwrap();
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        // Small budgets, so the 15-puzzles are split into subtree tasks (and some split again);
        // the full check, which promises that no lie reaches an answer at all.
        &[
            "--split-after",
            "3000",
            "--subtree-budget",
            "5000",
            "--verify",
            "full",
        ],
        &[
            ("TILESOLVE_TOKEN", CLIENT_TOKEN),
            ("TILESOLVE_WORKER_TOKEN", WORKER_TOKEN),
        ],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let lies = Arc::new(AtomicU64::new(0));
    let liar = runtime.spawn(lying_worker(url.clone(), stop.clone(), lies.clone()));
    common::wait_until("the liar to register", Duration::from_secs(30), || {
        server.log_text().contains("host=liar").then_some(())
    });
    let boards = boards();
    let path = dir.path().join("batch.txt");
    write_batch(&path, &boards, false);
    let submitted = std::thread::spawn({
        let (url, path) = (url.clone(), path.clone());
        move || {
            client(&[
                "submit",
                "--coordinator",
                &url,
                "--heuristic",
                "linear-conflict",
                "--wait",
                "--json",
                path.to_str().unwrap(),
            ])
        }
    });
    // The honest worker starts once the liar has lied: started first, it could solve every
    // board before a lie of the liar's matters (a lie about a puzzle already solved is
    // dropped unread), and there would be none to catch.
    common::wait_until("the liar to lie", Duration::from_secs(60), || {
        (lies.load(Ordering::Relaxed) > 0).then_some(())
    });
    let mut honest = start_honest_worker(&url, &dir.path().join("honest"));
    let (ok, stdout, stderr) = submitted.join().unwrap();
    assert!(ok, "{stderr}");
    assert_optimal(&lengths(&stdout), &boards);
    // What the store answers, too, for every board (and the boards on their paths).
    for (board, optimal) in &boards {
        let (ok, stdout, stderr) = client(&["query", "--coordinator", &url, "--json", board]);
        assert!(ok, "{stderr}");
        assert_eq!(lengths(&stdout), vec![(board.clone(), Some(*optimal))]);
    }
    stop.store(true, Ordering::Relaxed);
    let quarantined = runtime.block_on(liar).unwrap();
    assert!(quarantined >= 1, "the liar was never caught");
    assert!(
        honest.0.try_wait().unwrap().is_none(),
        "the honest worker was never quarantined: {}",
        std::fs::read_to_string(dir.path().join("honest.log")).unwrap()
    );
    let log = server.log_text();
    assert!(log.contains("worker quarantined"), "{log}");
    // What caught the liar across processes: an audit by the honest worker disproved one of
    // its claims, or its own reports (as a worker or an auditor) could not be right. Which
    // comes first is a race (the scheduler's own tests disprove claims by audit
    // deterministically, on probation and past it).
    assert!(
        log.contains("an audit found one of") || log.contains("impossible"),
        "{log}"
    );
}
