//! One token holder, many registrations: liars that share the honest worker's token, uphold
//! each other's lies as auditors and claim huge searches, as processes over real gRPC (the
//! coordinator and the honest worker are the binary; the liars are this test speaking the
//! worker protocol). And a liar whose only possible auditor, under another token, never asks
//! for work. Every stored answer must still be optimal.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{lengths, run_with_env, Coordinator};
use tilesolve::moves::{moves_from_string, moves_to_string};
use tilesolve::proto::v1 as pb;
use tilesolve::task::{run_task, TaskOutcome, Work};
use tilesolve::{parse_board, HeuristicKind, Solver};

const CLIENT_TOKEN: &str = "client-secret";
const WORKER_TOKEN: &str = "worker-secret";
const OTHER_TOKEN: &str = "other-worker-secret";

/// What a fake worker does with the tasks it is given.
#[derive(Clone, Copy, PartialEq)]
enum Conduct {
    /// Answers whole puzzles two moves too long (a real path, visiting no board twice), claims a
    /// million nodes a task, and upholds every audit it is given without searching.
    Collude,
    /// Registers and heartbeats, never asks for work.
    Silent,
    /// Declares 1,024 threads, asks for all it may hold until it is given some, then only
    /// heartbeats.
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
            weighted: None,
        };
        match run_task(&solver, work, None).outcome {
            TaskOutcome::Found(moves) => {
                // A real path two moves too long, visiting no board twice.
                let longer = solver.path_two_moves_longer(&board, None).unwrap_or(moves);
                Outcome::Found(moves_to_string(&longer))
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

/// What the test and its fake workers share: whether a quarantined fake registers again, when
/// to stop, how many tasks the fakes took and how often they were refused as quarantined.
struct Fleet {
    rejoin: bool,
    stop: AtomicBool,
    tasks_taken: AtomicUsize,
    quarantines: AtomicUsize,
}

impl Fleet {
    fn new(rejoin: bool) -> Arc<Self> {
        Arc::new(Fleet {
            rejoin,
            stop: AtomicBool::new(false),
            tasks_taken: AtomicUsize::new(0),
            quarantines: AtomicUsize::new(0),
        })
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Registers with `token` and behaves as `conduct` says until the fleet stops; registers again
/// when quarantined if the fleet says so. Returns how many times it was quarantined.
async fn fake_worker(url: String, token: &'static str, conduct: Conduct, fleet: Arc<Fleet>) -> u32 {
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
    while !fleet.stopped() {
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
        let mut held = 0;
        while !fleet.stopped() {
            let heartbeat_only = match conduct {
                Conduct::Silent => true,
                Conduct::Hog => held > 0,
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
                    // Nothing running (a fake answers at once): like a real worker with every
                    // thread idle, it waits in the call for the next tasks and is woken with
                    // the others when a batch comes (not a poll too late for easy boards).
                    idle: true,
                    leaving: false,
                })
                .await;
            match polled {
                Ok(response) => {
                    let tasks = response.into_inner().tasks;
                    held += tasks.len();
                    fleet.tasks_taken.fetch_add(tasks.len(), Ordering::Relaxed);
                    match conduct {
                        Conduct::Err => results.extend(tasks.iter().map(|task| pb::TaskResult {
                            task_id: task.task_id,
                            outcome: Some(pb::task_result::Outcome::Error("disk full".into())),
                            ..Default::default()
                        })),
                        _ => results.extend(tasks.iter().map(lie)),
                    }
                }
                Err(status) if status.code() == tonic::Code::PermissionDenied => {
                    assert!(
                        status.message().contains("quarantined")
                            || status.message().contains("shut out"),
                        "{status:?}"
                    );
                    quarantined += 1;
                    fleet.quarantines.fetch_add(1, Ordering::Relaxed);
                    if !fleet.rejoin {
                        return quarantined;
                    }
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
    more_boards(count, 0)
}

/// Like [`boards`], from another walk for each `round` (boards not yet stored).
fn more_boards(count: usize, round: u64) -> Vec<(String, u64)> {
    common::walked(3, 40, count, 0x2545_f491_4f6c_dd1d ^ round)
}

fn client(args: &[&str]) -> (bool, String, String) {
    run_with_env(args, &[("TILESOLVE_TOKEN", CLIENT_TOKEN)])
}

/// The honest worker: the binary, with `token` as its worker token.
fn start_honest_worker(url: &str, data: &Path, token: &str) -> common::Process {
    common::worker(url, data, &["--worker-token", token])
}

/// Starts the honest worker (with [`WORKER_TOKEN`]) once a fake of `fleet` holds work: started
/// first, it could take every task of these easy boards (a worker packs short tasks) before a
/// fake polls once, and there would be no lie to catch.
fn honest_once_a_fake_holds_work(
    url: &str,
    fleet: &Arc<Fleet>,
    data: &Path,
) -> std::thread::JoinHandle<common::Process> {
    let (url, fleet, data) = (url.to_string(), fleet.clone(), data.to_path_buf());
    std::thread::spawn(move || {
        common::wait_until(
            "a fake worker to take a task",
            Duration::from_secs(60),
            || (fleet.tasks_taken.load(Ordering::Relaxed) > 0).then_some(()),
        );
        start_honest_worker(&url, &data, WORKER_TOKEN)
    })
}

/// Submits `boards`, waits for the answers and checks every one, and what the store answers
/// for each, against its optimal length.
fn assert_all_optimal(url: &str, dir: &Path, boards: &[(String, u64)]) {
    assert_answered_optimally(url, dir, boards);
    assert_stored(url, boards);
}

/// Submits `boards`, waits for the answers and checks every one against its optimal length.
fn assert_answered_optimally(url: &str, dir: &Path, boards: &[(String, u64)]) {
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
    assert!(ok, "{stderr}\n{stdout}");
    let answered = lengths(&stdout);
    assert_eq!(answered.len(), boards.len());
    let wrong: Vec<_> = answered
        .iter()
        .zip(boards)
        .filter(|((_, got), (_, optimal))| *got != Some(*optimal))
        .collect();
    assert!(wrong.is_empty(), "{} wrong: {wrong:?}", wrong.len());
}

/// Checks what the store answers for each of `boards` against its optimal length, by `query`
/// and by `export`: never a wrong one. An answer that rests on a report of a worker caught
/// after the batch ended is withdrawn and solved again, and missing meanwhile; and a
/// withdrawal can leave an item solved while the store no longer holds its answer (issue 65's
/// notes), so a missing answer is waited for a while, then let be.
fn assert_stored(url: &str, boards: &[(String, u64)]) {
    assert_queried(url, boards);
    let (ok, stdout, stderr) = client(&["export", "--coordinator", url]);
    assert!(ok, "{stderr}");
    let optimal: std::collections::HashMap<&str, u64> =
        boards.iter().map(|(b, l)| (b.as_str(), *l)).collect();
    let mut checked = 0;
    for line in stdout.lines() {
        let answer: serde_json::Value = serde_json::from_str(line).unwrap();
        let board = answer["board"].as_str().unwrap();
        if let Some(&length) = optimal.get(board) {
            assert_eq!(answer["length"].as_u64(), Some(length), "exported: {line}");
            checked += 1;
        }
    }
    assert!(checked > 0, "no board of the batch exported:\n{stdout}");
}

fn assert_queried(url: &str, boards: &[(String, u64)]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    for (board, optimal) in boards {
        loop {
            let (_, stdout, _) = client(&["query", "--coordinator", url, "--json", board]);
            let answered = lengths(&stdout);
            assert!(
                answered
                    .iter()
                    .all(|(_, got)| got.is_none_or(|got| got == *optimal)),
                "{stdout}"
            );
            if answered == vec![(board.clone(), Some(*optimal))]
                || std::time::Instant::now() > deadline
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Waits until `honest` honest workers and `fakes` fake workers have registered, so a batch
/// submitted next can reach each of them.
fn registered(server: &Coordinator, honest: usize, fakes: usize) {
    common::wait_until("the workers", Duration::from_secs(30), || {
        let log = server.log_text();
        let registered = log
            .lines()
            .filter(|line| line.contains("worker registered"));
        let (liars, honest_ones): (Vec<&str>, Vec<&str>) =
            registered.partition(|line| line.contains("host=liar"));
        (honest_ones.len() >= honest && liars.len() >= fakes).then_some(())
    });
}

/// Asks the store for every board of `boards` over and over until `stop`, from another thread:
/// returns every answer that was not optimal (an answer must never be served before its audits
/// clear it, not only be right in the end).
fn query_loop(
    url: &str,
    boards: &[(String, u64)],
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(String, Option<u64>)>> {
    let (url, boards) = (url.to_string(), boards.to_vec());
    std::thread::spawn(move || {
        let mut wrong = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            for (board, optimal) in &boards {
                let (_, stdout, _) = client(&["query", "--coordinator", &url, "--json", board]);
                wrong.extend(
                    lengths(&stdout)
                        .into_iter()
                        .filter(|(_, got)| got.is_some_and(|got| got != *optimal)),
                );
            }
        }
        wrong
    })
}

/// Three fakes that answer whole puzzles two moves too long and uphold every audit, under
/// `colluders_token`, beside an honest worker under [`WORKER_TOKEN`], under `verify`: every
/// answer stored and served, during the attack and after it, is optimal.
fn three_colluders_store_no_wrong_answer(
    verify: &[&str],
    colluders_token: &'static str,
    count: usize,
) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = format!("{WORKER_TOKEN},{OTHER_TOKEN}");
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        verify,
        &[
            ("TILESOLVE_TOKEN", CLIENT_TOKEN),
            ("TILESOLVE_WORKER_TOKEN", &tokens),
        ],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fleet = Fleet::new(true);
    let liars: Vec<_> = (0..3)
        .map(|_| {
            runtime.spawn(fake_worker(
                url.clone(),
                colluders_token,
                Conduct::Collude,
                fleet.clone(),
            ))
        })
        .collect();
    let honest = honest_once_a_fake_holds_work(&url, &fleet, &dir.path().join("honest"));
    registered(&server, 0, 3);

    let boards = boards(count);
    let queries_stop = Arc::new(AtomicBool::new(false));
    let queries = query_loop(&url, &boards, queries_stop.clone());
    assert_answered_optimally(&url, dir.path(), &boards);
    // Colluders that register again after every quarantine keep restarting the puzzles they
    // take (answers withdrawn after the batch ended, for resting on a colluder caught later,
    // are solved again): stopped, the honest worker finishes them.
    fleet.stop.store(true, Ordering::Relaxed);
    assert_stored(&url, &boards);
    queries_stop.store(true, Ordering::Relaxed);
    let served_wrong = queries.join().unwrap();
    assert!(served_wrong.is_empty(), "served: {served_wrong:?}");
    let mut honest = honest.join().unwrap();
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
fn three_colluding_registrations_of_one_token_store_no_wrong_answer() {
    three_colluders_store_no_wrong_answer(&["--verify", "full"], WORKER_TOKEN, 200);
}

/// The default, `--verify sample`: the colluders share the honest worker's token, then hold
/// one of their own.
#[test]
fn under_the_default_colluders_on_any_token_store_and_serve_no_wrong_answer() {
    three_colluders_store_no_wrong_answer(&[], WORKER_TOKEN, 100);
    three_colluders_store_no_wrong_answer(&[], OTHER_TOKEN, 100);
}

/// A liar and a registration of another token that never asks for work (the only worker that
/// may audit the liar's and the honest worker's reports under `full`), under `verify`.
fn a_liar_with_a_silent_decoy(verify: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = format!("{WORKER_TOKEN},{OTHER_TOKEN}");
    let mut args = vec!["--lease-timeout", "2"];
    args.extend(verify);
    let server = Coordinator::start(
        &dir.path().join("coordinator"),
        "127.0.0.1:0",
        &args,
        &[
            ("TILESOLVE_TOKEN", CLIENT_TOKEN),
            ("TILESOLVE_WORKER_TOKEN", &tokens),
        ],
    );
    let url = server.url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Caught once, the liar stays away: one that registers again is the colluders' test, and here
    // it would only race the honest worker for each restarted puzzle, a lease timeout a round.
    let fleet = Fleet::new(false);
    let silent = runtime.spawn(fake_worker(
        url.clone(),
        OTHER_TOKEN,
        Conduct::Silent,
        fleet.clone(),
    ));
    let liar = runtime.spawn(fake_worker(
        url.clone(),
        WORKER_TOKEN,
        Conduct::Collude,
        fleet.clone(),
    ));
    // The honest worker shares the liar's token: under `full` the only worker that may audit
    // either is the silent one, so every audit waits a lease timeout in the queue and then
    // runs here; under `sample` the silent one, never past its probation, may audit nobody.
    let honest = honest_once_a_fake_holds_work(&url, &fleet, &dir.path().join("honest"));

    registered(&server, 0, 2);
    let boards = boards(40);
    let queries_stop = Arc::new(AtomicBool::new(false));
    let queries = query_loop(&url, &boards, queries_stop.clone());
    assert_answered_optimally(&url, dir.path(), &boards);
    fleet.stop.store(true, Ordering::Relaxed);
    assert_stored(&url, &boards);
    queries_stop.store(true, Ordering::Relaxed);
    let served_wrong = queries.join().unwrap();
    assert!(served_wrong.is_empty(), "served: {served_wrong:?}");
    let _honest = honest.join().unwrap();
    assert!(
        runtime.block_on(liar).unwrap() >= 1,
        "the liar was never caught"
    );
    assert_eq!(runtime.block_on(silent).unwrap(), 0);
}

#[test]
fn a_liar_whose_only_auditor_never_asks_for_work_is_audited_by_the_coordinator() {
    a_liar_with_a_silent_decoy(&["--verify", "full"]);
}

#[test]
fn under_the_default_a_silent_decoy_opens_no_window_for_a_liar() {
    a_liar_with_a_silent_decoy(&[]);
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
    let fleet = Fleet::new(true);
    let _honest = start_honest_worker(&url, &dir.path().join("honest"), WORKER_TOKEN);
    registered(&server, 1, 0);
    let hog = runtime.spawn(fake_worker(
        url.clone(),
        WORKER_TOKEN,
        Conduct::Hog,
        fleet.clone(),
    ));
    let erring = runtime.spawn(fake_worker(
        url.clone(),
        WORKER_TOKEN,
        Conduct::Err,
        fleet.clone(),
    ));

    // The erring worker is shut out only once it has reported three failures; in a batch of
    // easy boards the honest worker and the hog may leave it fewer tasks than that, so more
    // batches come (every one answered optimally) until it has had its three.
    assert_all_optimal(&url, dir.path(), &boards(100));
    for round in 1..=5 {
        if fleet.quarantines.load(Ordering::Relaxed) > 0 {
            break;
        }
        assert_all_optimal(&url, dir.path(), &more_boards(50, round));
    }
    common::wait_until(
        "the erring worker to be refused as shut out",
        Duration::from_secs(30),
        || (fleet.quarantines.load(Ordering::Relaxed) > 0).then_some(()),
    );
    fleet.stop.store(true, Ordering::Relaxed);
    assert!(
        runtime.block_on(erring).unwrap() >= 1,
        "the erring worker was never shut out"
    );
    assert_eq!(runtime.block_on(hog).unwrap(), 0);
    let log = server.log_text();
    assert!(log.contains("reports were failures"), "{log}");
}
