//! How many worker threads one coordinator can feed: starts `tilesolve serve` as its own
//! process, then, for each count N, registers N simulated one-thread workers over real gRPC
//! connections. Each takes one task at a time, really solves it (easy 15-puzzles, linear
//! conflict: microseconds), holds it until the chosen task duration has passed, and reports it
//! with its next poll, sending heartbeats as a worker does. Over a measured window it prints
//! the tasks/s the coordinator sustained against what the workers asked for, the poll round
//! trip's median and 99th percentile, and the coordinator's CPU (from /proc), per task and as
//! the worker threads one coordinator core could keep busy at that duration.
//!
//!     cargo build --release --bin tilesolve
//!     cargo run --release -p tilesolve-coordinator --example swarm -- \
//!         [--bin target/release/tilesolve] [--task-seconds 0.1] [--seconds 10] \
//!         [--workers 16,64,256,1024] [--unary] [-- SERVE_ARGS...]
//!
//! The workers poll and beat as messages of one `Session` call each, as `tilesolve worker`
//! does; `--unary` makes each poll and heartbeat a call of its own (protocol version 3's way),
//! to compare what each costs the coordinator.
//!
//! The coordinator runs `--verify off` unless SERVE_ARGS say otherwise: these workers answer
//! only whole tasks of easy boards, and the task path an audit takes is the same.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tilesolve::proto::v1 as pb;
use tilesolve::task::{run_task, Work};
use tilesolve::worker_session::WorkerSession;
use tilesolve::{parse_board, Board, Direction, HeuristicKind, Solver};
use tonic::transport::{Channel, Endpoint};
use tonic::Status;

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Options {
    bin: String,
    task_seconds: f64,
    seconds: f64,
    workers: Vec<usize>,
    unary: bool,
    serve_args: Vec<String>,
}

fn options() -> Result<Options, Error> {
    let mut options = Options {
        bin: "target/release/tilesolve".into(),
        task_seconds: 0.1,
        seconds: 10.0,
        workers: vec![16, 64, 256, 1024],
        unary: false,
        serve_args: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        // A value that does not parse is named with its flag.
        let bad = |text: &str| format!("{arg}: '{text}' is not a number (or a list of them)");
        match arg.as_str() {
            "--bin" => options.bin = value()?,
            "--task-seconds" | "--seconds" => {
                let text = value()?;
                let seconds = text.parse().map_err(|_| bad(&text))?;
                match arg.as_str() {
                    "--seconds" => options.seconds = seconds,
                    _ => options.task_seconds = seconds,
                }
            }
            "--workers" => {
                let text = value()?;
                options.workers = text
                    .split(',')
                    .map(|count| count.trim().parse().map_err(|_| bad(&text)))
                    .collect::<Result<_, _>>()?
            }
            "--unary" => options.unary = true,
            "--" => options.serve_args = args.by_ref().collect(),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !(options.task_seconds > 0.0 && options.seconds > 0.0) {
        return Err("--task-seconds and --seconds must be positive".into());
    }
    if options.workers.contains(&0) {
        return Err("--workers: every count must be at least 1".into());
    }
    Ok(options)
}

/// The coordinator process, killed when dropped.
struct Coordinator {
    child: Child,
    url: String,
    _data: tempfile::TempDir,
}

impl Coordinator {
    fn start(options: &Options) -> Result<Coordinator, Error> {
        let data = tempfile::tempdir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--data".into(),
            data.path().display().to_string(),
        ];
        if !options.serve_args.iter().any(|a| a == "--verify") {
            args.extend(["--verify".into(), "off".into()]);
        }
        args.extend(options.serve_args.iter().cloned());
        let child = Command::new(&options.bin)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", options.bin))?;
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(Coordinator {
                    child,
                    url,
                    _data: data,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("the coordinator did not listen within 10 s".into())
    }

    /// Its CPU seconds so far (user and system, from /proc).
    fn cpu_seconds(&self) -> Result<f64, Error> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // The fields after the command name, which is in parentheses and may hold spaces.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: f64 = fields.get(11).ok_or("short /proc stat")?.parse::<f64>()?
            + fields.get(12).ok_or("short /proc stat")?.parse::<f64>()?;
        // USER_HZ is 100 on every Linux this runs on.
        Ok(ticks / 100.0)
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Distinct 15-puzzles `moves` random moves from the goal (none undoing the one before).
fn walks(count: usize, moves: usize, seed: u64) -> Vec<String> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut seen = std::collections::HashSet::new();
    let mut boards = Vec::with_capacity(count);
    while boards.len() < count {
        let (mut board, mut last): (Board, Option<Direction>) = (Board::blank_last(4), None);
        for _ in 0..moves {
            let legal: Vec<(Direction, Board)> = Direction::ALL
                .into_iter()
                .filter(|d| last != Some(d.opposite()))
                .filter_map(|d| board.apply(d).map(|(child, _)| (d, child)))
                .collect();
            let (direction, child) = legal[next() as usize % legal.len()];
            (board, last) = (child, Some(direction));
        }
        if board != Board::blank_last(4) && seen.insert(board) {
            boards.push(board.to_string());
        }
    }
    boards
}

/// What the simulated workers measured together.
#[derive(Default)]
struct Tally {
    tasks: AtomicU64,
    polls: Mutex<Vec<f64>>,
}

/// Solves `task` for real: the coordinator replays every answer.
fn solve(solver: &Solver, task: &pb::Task) -> pb::task_result::Outcome {
    use pb::task_result::Outcome;
    let (Ok(board), Some(path)) = (
        parse_board(&task.board),
        tilesolve::moves::moves_from_string(&task.path),
    ) else {
        return Outcome::Error("a task this simulation cannot read".into());
    };
    let work = Work {
        board: &board,
        path: &path,
        bound: task.bound,
        iterate: task.iterate,
        node_budget: task.node_budget,
        profile_depth: 0,
        weighted: None,
    };
    Outcome::from(run_task(solver, work, None).outcome)
}

/// How a simulated worker sends its polls and heartbeats.
#[derive(Clone)]
enum Calls {
    Unary(pb::workers_client::WorkersClient<Channel>),
    Session(WorkerSession),
}

impl Calls {
    async fn poll(&mut self, request: pb::PollRequest) -> Result<pb::PollResponse, Status> {
        match self {
            Calls::Unary(client) => client.poll(request).await.map(tonic::Response::into_inner),
            Calls::Session(session) => session.poll(request).await,
        }
    }

    async fn heartbeat(&mut self, request: pb::HeartbeatRequest) -> Result<(), Status> {
        match self {
            Calls::Unary(client) => client.heartbeat(request).await.map(|_| ()),
            Calls::Session(session) => session.heartbeat(request).await.map(|_| ()),
        }
    }
}

/// One simulated one-thread worker: registers, then polls, holds each task `task_seconds`,
/// and reports it with the next poll until `stop`; heartbeats meanwhile.
async fn worker(
    channel: Channel,
    unary: bool,
    solver: Arc<Solver>,
    task_seconds: Duration,
    tally: Arc<Tally>,
    measuring: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Result<(), Error> {
    let mut client = pb::workers_client::WorkersClient::new(channel);
    let registered = client
        .register(pb::RegisterRequest {
            threads: 1,
            protocol_version: tilesolve::proto::PROTOCOL_VERSION,
            host: "swarm".into(),
            name: "swarm".into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    let (id, secret) = (registered.worker_id, registered.worker_secret.clone());
    let mut calls = if unary {
        Calls::Unary(client)
    } else {
        Calls::Session(WorkerSession::open(|calls| client.session(calls), id, &secret).await?)
    };
    let held: Arc<Mutex<Vec<u64>>> = Arc::default();
    let beats = {
        let (mut calls, held, stop) = (calls.clone(), held.clone(), stop.clone());
        let (secret, every) = (
            secret.clone(),
            Duration::from_millis(u64::from(registered.heartbeat_interval_ms.max(100))),
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let running = held.lock().map(|h| h.clone()).unwrap_or_default();
                let _ = calls
                    .heartbeat(pb::HeartbeatRequest {
                        worker_id: id,
                        worker_secret: secret.clone(),
                        running,
                        hold_ms: 0,
                    })
                    .await;
            }
        })
    };
    let mut results = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let reported = results.len() as u64;
        let asked = Instant::now();
        let response = calls
            .poll(pb::PollRequest {
                worker_id: id,
                worker_secret: secret.clone(),
                free_slots: 1,
                results: std::mem::take(&mut results),
                idle: true,
                leaving: false,
            })
            .await?;
        if measuring.load(Ordering::Relaxed) {
            tally.tasks.fetch_add(reported, Ordering::Relaxed);
            if let Ok(mut polls) = tally.polls.lock() {
                polls.push(asked.elapsed().as_secs_f64());
            }
        }
        for task in response.tasks {
            let started = Instant::now();
            if let Ok(mut held) = held.lock() {
                *held = vec![task.task_id];
            }
            let outcome = solve(&solver, &task);
            tokio::time::sleep_until((started + task_seconds).into()).await;
            results.push(pb::TaskResult {
                task_id: task.task_id,
                nodes: 1,
                seconds: task_seconds.as_secs_f64(),
                outcome: Some(outcome),
                ..Default::default()
            });
        }
    }
    beats.abort();
    Ok(())
}

/// One measurement: `count` workers against a fresh coordinator.
async fn measure(options: &Options, count: usize) -> Result<(), Error> {
    let coordinator = Coordinator::start(options)?;
    let channel = Endpoint::from_shared(coordinator.url.clone())?;
    let mut clients = pb::tilesolve_client::TilesolveClient::new(channel.connect().await?);
    // Enough boards for the whole run and some over, in batches the intake takes quickly.
    let wanted = ((count as f64 * (options.seconds + 4.0) / options.task_seconds) * 1.3) as usize;
    for (index, chunk) in walks(wanted.clamp(1, 200_000), 24, 19)
        .chunks(10_000)
        .enumerate()
    {
        clients
            .submit_batch(pb::SubmitBatchRequest {
                lines: chunk.to_vec(),
                heuristic: "linear-conflict".into(),
                ..Default::default()
            })
            .await
            .map_err(|e| format!("submitting batch {index}: {e}"))?;
    }
    let solver = Arc::new(Solver::new(
        Board::blank_last(4),
        HeuristicKind::LinearConflict,
    ));
    let (tally, measuring, stop) = (Arc::new(Tally::default()), Arc::default(), Arc::default());
    let task_seconds = Duration::from_secs_f64(options.task_seconds);
    let mut running = Vec::new();
    for _ in 0..count {
        // A connection of its own, as a worker process has.
        let channel = Endpoint::from_shared(coordinator.url.clone())?
            .connect()
            .await?;
        running.push(tokio::spawn(worker(
            channel,
            options.unary,
            solver.clone(),
            task_seconds,
            tally.clone(),
            Arc::clone(&measuring),
            Arc::clone(&stop),
        )));
    }
    // Every worker busy before the window opens.
    tokio::time::sleep(Duration::from_secs(2) + 2 * task_seconds).await;
    let (cpu_before, opened) = (coordinator.cpu_seconds()?, Instant::now());
    measuring.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs_f64(options.seconds)).await;
    measuring.store(false, Ordering::Relaxed);
    let (cpu, window) = (
        coordinator.cpu_seconds()? - cpu_before,
        opened.elapsed().as_secs_f64(),
    );
    stop.store(true, Ordering::Relaxed);
    for worker in running {
        if let Ok(Err(error)) = worker.await {
            eprintln!("a simulated worker stopped: {error}");
        }
    }
    let tasks = tally.tasks.load(Ordering::Relaxed) as f64;
    let mut polls = tally.polls.lock().map(|p| p.clone()).unwrap_or_default();
    polls.sort_by(f64::total_cmp);
    let at = |q: f64| {
        polls
            .get(((polls.len() as f64 - 1.0) * q) as usize)
            .copied()
    };
    let asked = count as f64 / options.task_seconds;
    let per_task = cpu / tasks.max(1.0);
    println!(
        "{count:>5} workers, {:.3} s tasks: {:>7.0} tasks/s ({:>5.1}% of the {asked:.0} asked), poll p50 {:.2} ms p99 {:.2} ms; coordinator CPU {cpu:.2} s in {window:.1} s ({:.0}% of a core), {:.0} us a task: one core feeds about {:.0} worker threads",
        options.task_seconds,
        tasks / window,
        100.0 * tasks / window / asked,
        at(0.5).unwrap_or(f64::NAN) * 1e3,
        at(0.99).unwrap_or(f64::NAN) * 1e3,
        100.0 * cpu / window,
        per_task * 1e6,
        options.task_seconds / per_task.max(1e-9),
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let options = options()?;
    for &count in &options.workers {
        measure(&options, count).await?;
    }
    Ok(())
}
