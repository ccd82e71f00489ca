//! `tilesolve loadtest`: many concurrent clients submitting small batches, querying stored
//! solutions and reading batch status against a running coordinator for a fixed time; prints
//! throughput, latency percentiles and errors, then checks every answer against an in-process
//! solve. A command, not a test: its figures go into RELIABILITY.md.

use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use tilesolve::proto::v1 as pb;
use tilesolve::{parse_board, Board, Direction, HeuristicKind, SolveOptions, Solver};

use crate::calls::connect;
use crate::client::ConnectArgs;
use crate::output::outln;
use crate::process::runtime;

#[derive(Args)]
pub struct LoadArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Concurrent clients, each with its own connection.
    #[arg(long, default_value_t = 50)]
    clients: usize,
    /// How long to keep submitting and querying.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Boards per submitted batch (half 8-puzzles, half 15-puzzles).
    #[arg(long, default_value_t = 4)]
    batch_size: usize,
    /// Heuristic the batches ask for.
    #[arg(long, default_value = "linear-conflict")]
    heuristic: String,
    /// Random moves from the goal for each 15-puzzle.
    #[arg(long, default_value_t = 40)]
    walk: usize,
    /// Seconds to wait after the run for every submitted batch to finish.
    #[arg(long, default_value_t = 300.0)]
    drain_seconds: f64,
    /// Batches per second across all clients (0: as fast as the coordinator answers). A rate
    /// the workers keep up with holds the coordinator at a steady state, which a soak needs.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
}

/// xorshift64*: reproducible per client, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A uniformly random solvable 8-puzzle: a random permutation, with two tiles swapped when
    /// its parity is the unsolvable one.
    fn eight_puzzle(&mut self) -> Board {
        let goal = Board::blank_last(3);
        let mut tiles: Vec<u64> = (0..9).collect();
        for i in (1..9).rev() {
            tiles.swap(i, self.below(i + 1));
        }
        let board = Board::from_tiles(&tiles).unwrap_or(goal);
        if board.check_solvable(&goal).is_ok() {
            return board;
        }
        let (a, b) = match (
            tiles.iter().position(|&t| t == 1),
            tiles.iter().position(|&t| t == 2),
        ) {
            (Some(a), Some(b)) => (a, b),
            _ => return goal,
        };
        tiles.swap(a, b);
        Board::from_tiles(&tiles).unwrap_or(goal)
    }

    /// A 15-puzzle `moves` random moves from the goal.
    fn walk(&mut self, moves: usize) -> Board {
        let mut board = Board::blank_last(4);
        for _ in 0..moves {
            let direction = Direction::ALL[self.below(4)];
            if let Some((next, _)) = board.apply(direction) {
                board = next;
            }
        }
        board
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operation {
    Submit,
    Query,
    Status,
}

const OPERATIONS: [(Operation, &str); 3] = [
    (Operation::Submit, "submit"),
    (Operation::Query, "query"),
    (Operation::Status, "status"),
];

/// What one client saw.
#[derive(Default)]
struct ClientLog {
    latencies: Vec<(Operation, Duration)>,
    errors: Vec<String>,
    /// Each batch acknowledged, with its boards.
    batches: Vec<(u64, Vec<String>)>,
}

async fn one_client(args: &LoadArgs, index: usize, deadline: Instant) -> ClientLog {
    let mut log = ClientLog::default();
    let options = match args.connect.options() {
        Ok(options) => options,
        Err(error) => {
            log.errors.push(error.to_string());
            return log;
        }
    };
    let mut client = match connect(&options).await {
        Ok(client) => client,
        Err(error) => {
            log.errors.push(format!("{error:#}"));
            return log;
        }
    };
    let mut rng =
        Rng(0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
    let mut known: Vec<String> = Vec::new();
    // Each client keeps its share of the rate; missed ticks are skipped, not made up in a burst.
    let mut pace = (args.rate > 0.0).then(|| {
        let mut interval = tokio::time::interval(
            Duration::from_secs_f64(args.clients as f64 / args.rate).max(Duration::from_micros(1)),
        );
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        interval
    });
    while Instant::now() < deadline {
        if let Some(interval) = pace.as_mut() {
            interval.tick().await;
        }
        let lines: Vec<String> = (0..args.batch_size)
            .map(|i| {
                if i % 2 == 0 {
                    rng.eight_puzzle().to_string()
                } else {
                    rng.walk(args.walk).to_string()
                }
            })
            .collect();
        let started = Instant::now();
        let submitted = client
            .submit_batch(pb::SubmitBatchRequest {
                lines: lines.clone(),
                heuristic: args.heuristic.clone(),
                ..pb::SubmitBatchRequest::default()
            })
            .await;
        log.latencies.push((Operation::Submit, started.elapsed()));
        match submitted {
            Ok(response) => log
                .batches
                .push((response.into_inner().batch_id, lines.clone())),
            Err(status) => log.errors.push(format!("submit: {status}")),
        }
        known.extend(lines);
        // One board this client submitted earlier (usually solved by now) and one new board.
        let boards = [
            known[rng.below(known.len())].clone(),
            rng.eight_puzzle().to_string(),
        ];
        for board in boards {
            let started = Instant::now();
            let answer = client
                .query(pb::QueryRequest {
                    board,
                    goal: String::new(),
                })
                .await;
            log.latencies.push((Operation::Query, started.elapsed()));
            if let Err(status) = answer {
                log.errors.push(format!("query: {status}"));
            }
        }
        if let Some(&(batch, _)) = log.batches.last() {
            let started = Instant::now();
            let status = client
                .get_batch(pb::GetBatchRequest {
                    batch_id: batch,
                    page_size: 1,
                    page_token: String::new(),
                    item_state: String::new(),
                    without_tiles: false,
                })
                .await;
            log.latencies.push((Operation::Status, started.elapsed()));
            if let Err(status) = status {
                log.errors.push(format!("status: {status}"));
            }
        }
    }
    log
}

fn percentile(sorted: &[Duration], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1e3
}

fn latency_row(name: &str, mut latencies: Vec<Duration>, seconds: f64) -> std::io::Result<()> {
    latencies.sort_unstable();
    outln!(
        "{name:<8} {:>9} {:>9.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
        latencies.len(),
        latencies.len() as f64 / seconds,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.95),
        percentile(&latencies, 0.99),
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
    )
}

/// What the check after the run found.
#[derive(Default)]
struct Checked {
    finished: usize,
    /// Finished batches the coordinator had already removed (`serve --keep-batches-days`):
    /// their boards are checked through queries instead.
    pruned: usize,
    answers: usize,
    wrong: Vec<String>,
}

/// Waits for the batches to finish and checks every answer's length against an in-process
/// IDA* solve.
async fn check_answers(args: &LoadArgs, batches: &[(u64, Vec<String>)]) -> anyhow::Result<Checked> {
    let mut client = connect(&args.connect.options()?).await?;
    let deadline = Instant::now() + Duration::from_secs_f64(args.drain_seconds);
    let solvers =
        [3, 4].map(|side| Solver::new(Board::blank_last(side), HeuristicKind::LinearConflict));
    let mut checked = Checked::default();
    let check = |batch: u64, board: &str, length: u32, checked: &mut Checked| {
        checked.answers += 1;
        let board = parse_board(board)?;
        let solver = &solvers[usize::from(board.side() == 4)];
        let expected = solver.solve(&board, &SolveOptions::default(), None)?.len();
        if expected != length as usize {
            checked.wrong.push(format!(
                "batch {batch}: {board} answered in {length} moves, optimal is {expected}"
            ));
        }
        anyhow::Ok(())
    };
    for (batch, lines) in batches {
        let batch = *batch;
        let results = loop {
            // Load-test batches are far smaller than the largest page.
            let results = match client
                .get_batch(pb::GetBatchRequest {
                    batch_id: batch,
                    page_size: 10_000,
                    page_token: String::new(),
                    item_state: String::new(),
                    without_tiles: false,
                })
                .await
            {
                Ok(results) => results.into_inner(),
                Err(status) if status.code() == tonic::Code::NotFound => break None,
                Err(status) => return Err(status.into()),
            };
            if results.status.as_ref().is_some_and(|s| s.done) || Instant::now() > deadline {
                break Some(results);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let Some(results) = results else {
            checked.pruned += 1;
            checked.finished += 1;
            for board in lines {
                let answer = client
                    .query(pb::QueryRequest {
                        board: board.clone(),
                        goal: String::new(),
                    })
                    .await
                    .map_err(crate::calls::CallError::from)?
                    .into_inner();
                match answer.solution {
                    Some(solution) if answer.found => {
                        check(batch, board, solution.length, &mut checked)?
                    }
                    _ => checked.wrong.push(format!(
                        "batch {batch} (pruned): {board} is not in the store"
                    )),
                }
            }
            continue;
        };
        if results.status.as_ref().is_some_and(|s| s.done) {
            checked.finished += 1;
        }
        for item in results.items {
            let Some(pb::item_result::Outcome::Solution(solution)) = item.outcome else {
                checked
                    .wrong
                    .push(format!("batch {batch}: {} unsolved", item.text));
                continue;
            };
            check(batch, &item.board, solution.length, &mut checked)?;
        }
    }
    Ok(checked)
}

pub fn run(args: LoadArgs) -> anyhow::Result<bool> {
    if args.clients == 0 || args.batch_size == 0 {
        bail!("--clients and --batch-size must be at least 1");
    }
    if !args.rate.is_finite() || args.rate < 0.0 {
        bail!("--rate must be a number of batches per second, 0 or more");
    }
    runtime()?.block_on(async {
        outln!(
            "load test: {} clients for {} s against {}, batches of {} boards",
            args.clients,
            args.seconds,
            args.connect.coordinator,
            args.batch_size
        )?;
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(args.seconds);
        let args = std::sync::Arc::new(args);
        let clients: Vec<_> = (0..args.clients)
            .map(|index| {
                let args = args.clone();
                tokio::spawn(async move { one_client(&args, index, deadline).await })
            })
            .collect();
        let mut logs = Vec::new();
        for client in clients {
            logs.push(client.await?);
        }
        let seconds = started.elapsed().as_secs_f64();
        outln!(
            "{:<8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            "call",
            "count",
            "per s",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "max ms"
        )?;
        for (operation, name) in OPERATIONS {
            let latencies: Vec<Duration> = logs
                .iter()
                .flat_map(|log| log.latencies.iter())
                .filter(|(o, _)| *o == operation)
                .map(|(_, d)| *d)
                .collect();
            latency_row(name, latencies, seconds)?;
        }
        latency_row(
            "all",
            logs.iter()
                .flat_map(|log| log.latencies.iter().map(|(_, d)| *d))
                .collect(),
            seconds,
        )?;
        let errors: Vec<String> = logs.iter().flat_map(|log| log.errors.clone()).collect();
        outln!("errors: {}", errors.len())?;
        for error in errors.iter().take(10) {
            outln!("  {error}")?;
        }
        let batches: Vec<(u64, Vec<String>)> =
            logs.into_iter().flat_map(|log| log.batches).collect();
        let checked = check_answers(&args, &batches).await?;
        outln!(
            "batches: {} submitted, {} finished within {} s after the run ({} of them already \
             pruned, checked by query); answers: {}, lengths disagreeing with an in-process \
             solve: {}",
            batches.len(),
            checked.finished,
            args.drain_seconds,
            checked.pruned,
            checked.answers,
            checked.wrong.len()
        )?;
        for line in checked.wrong.iter().take(10) {
            outln!("  {line}")?;
        }
        Ok(errors.is_empty() && checked.wrong.is_empty() && checked.finished == batches.len())
    })
}
