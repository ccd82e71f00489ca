//! Helpers for the process-level tests: the `tilesolve` binary started as coordinators, workers
//! and clients on 127.0.0.1, each killed when its handle is dropped.

#![allow(dead_code)] // each test crate uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_tilesolve");

/// A child process killed (SIGKILL) when dropped, so a failing test leaves nothing running.
pub struct Process(pub Child);

impl Process {
    /// SIGKILL, as a crash would: no shutdown code runs.
    pub fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    /// Waits for the process to exit by itself and collects its piped output.
    pub fn wait_with_output(mut self) -> std::process::Output {
        use std::io::Read;
        let mut stderr = self.0.stderr.take();
        let errors = std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(pipe) = stderr.as_mut() {
                let _ = pipe.read_to_end(&mut text);
            }
            text
        });
        let mut stdout = Vec::new();
        if let Some(pipe) = self.0.stdout.as_mut() {
            let _ = pipe.read_to_end(&mut stdout);
        }
        let status = self.0.wait().expect("wait for the process");
        std::process::Output {
            status,
            stdout,
            stderr: errors.join().unwrap_or_default(),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A raw gRPC worker of one thread, registered with the coordinator at `url` (`http://...`): its
/// client, and the id and secret its calls name it by.
pub async fn registered_worker(
    url: &str,
) -> (
    tilesolve::proto::v1::workers_client::WorkersClient<tonic::transport::Channel>,
    u64,
    String,
) {
    use tilesolve::proto::v1 as pb;
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut workers = pb::workers_client::WorkersClient::new(channel);
    let registered = workers
        .register(pb::RegisterRequest {
            threads: 1,
            protocol_version: tilesolve::proto::PROTOCOL_VERSION,
            host: "test".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    (workers, registered.worker_id, registered.worker_secret)
}

/// A port a server started later in the test can listen on: free now, and below the range the
/// kernel hands out for port 0. Servers of the tests running alongside bind port 0, so one of
/// them being given this port while it is not yet (or, across a restart, no longer) bound is
/// ruled out; that race once failed a CI run. Each test process walks the 8,000 ports below the
/// range from its own random place, and a process never hands out one port twice.
pub fn port_outside_the_ephemeral_range() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;
    static START: OnceLock<u32> = OnceLock::new();
    static HANDED_OUT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let span = u32::from(ephemeral_low.saturating_sub(1024).clamp(1, 8000));
    let low = u32::from(ephemeral_low) - span;
    let start = *START.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        nanos ^ std::process::id().wrapping_mul(2_654_435_761)
    });
    loop {
        let step = HANDED_OUT.fetch_add(1, Ordering::Relaxed);
        assert!(step < span, "no free port below the ephemeral range");
        let port = (low + start.wrapping_add(step) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Polls `condition` every 50 ms for up to `limit`; panics with `what` if it never holds.
pub fn wait_until<T>(what: &str, limit: Duration, condition: impl FnMut() -> Option<T>) -> T {
    within(limit, condition).unwrap_or_else(|| panic!("gave up waiting for {what}"))
}

/// What `condition` gives within `limit` (asked every 50 ms), or None.
pub fn within<T>(limit: Duration, mut condition: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = condition() {
            return Some(value);
        }
        if started.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running coordinator: its process, its address and its log file.
pub struct Coordinator {
    pub process: Process,
    pub address: String,
    pub log: PathBuf,
}

impl Coordinator {
    /// Starts `serve` on `listen` (e.g. `127.0.0.1:0`) with its log in `data.log`.
    pub fn start(data: &Path, listen: &str, extra: &[&str], env: &[(&str, &str)]) -> Coordinator {
        let log = data.with_extension("log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("coordinator log");
        let start = std::fs::metadata(&log).map_or(0, |m| m.len()) as usize;
        let child = Command::new(BIN)
            .args(["serve", "--listen", listen, "--data"])
            .arg(data)
            .args(extra)
            .env_remove("TILESOLVE_TOKEN")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start coordinator");
        let process = Process(child);
        let address = wait_until("the coordinator to listen", Duration::from_secs(60), || {
            let text = std::fs::read_to_string(&log).ok()?;
            // Only a whole line: the log may be read while the line is half written.
            text.get(start..)?
                .split_inclusive('\n')
                .filter_map(|line| line.strip_suffix('\n'))
                .find_map(|line| line.strip_prefix("tilesolve coordinator on "))
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
        });
        Coordinator {
            process,
            address,
            log,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Starts a worker with one thread and its own data directory; its log goes to `data.log`.
pub fn worker(url: &str, data: &Path, extra: &[&str]) -> Process {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data.with_extension("log"))
        .expect("worker log");
    let child = Command::new(BIN)
        .args(["worker", "--threads", "1", "--coordinator", url, "--data"])
        .arg(data)
        .args(extra)
        .env("RUST_LOG", "info")
        .env_remove("TILESOLVE_TOKEN")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start worker");
    Process(child)
}

/// Runs the binary to completion: (success, stdout, stderr).
pub fn run(args: &[&str]) -> (bool, String, String) {
    run_with_env(args, &[])
}

pub fn run_with_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let output = Command::new(BIN)
        .args(args)
        .env_remove("TILESOLVE_TOKEN")
        .envs(env.iter().copied())
        .output()
        .expect("run tilesolve");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// 15-puzzles with published optimal lengths: the ten of examples15 and the first `korf` of
/// Korf's 100 (tests/data).
pub fn known_boards(korf: usize) -> Vec<(String, u64)> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/");
    let mut boards = Vec::new();
    for (file, take) in [("examples15.txt", 10), ("korf100-blank-last.txt", korf)] {
        let text = std::fs::read_to_string(format!("{data}{file}")).unwrap();
        for line in text.lines().filter(|l| !l.starts_with('#')).take(take) {
            let (board, facts) = line.split_once(" # ").unwrap();
            let optimal = facts
                .split_whitespace()
                .find_map(|f| f.strip_prefix("optimal="))
                .unwrap()
                .parse()
                .unwrap();
            boards.push((board.to_string(), optimal));
        }
    }
    boards
}

/// Writes `boards` as a batch file, with the bad line `1,2,3,x` after the fifth board when
/// `bad_line` is set.
pub fn write_batch(path: &Path, boards: &[(String, u64)], bad_line: bool) {
    let mut text = format!("# {} boards\n", boards.len());
    for (index, (board, _)) in boards.iter().enumerate() {
        text.push_str(board);
        text.push('\n');
        if bad_line && index == 4 {
            text.push_str("1,2,3,x\n");
        }
    }
    std::fs::write(path, text).unwrap();
}

/// (board, length) of each JSON line of `results --json` or `submit --wait --json`.
pub fn lengths(json_lines: &str) -> Vec<(String, Option<u64>)> {
    json_lines
        .lines()
        .map(|line| {
            let value: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            (
                value["board"].as_str().unwrap_or_default().to_string(),
                value["length"].as_u64(),
            )
        })
        .collect()
}

/// The length of `board`'s stored answer on the coordinator at `url` (`query --json`); None
/// when the store has none (`query` then exits with 1 but still prints the board).
pub fn stored_length(url: &str, board: &str) -> Option<u64> {
    let (ok, stdout, stderr) = run(&["query", "--coordinator", url, "--json", board]);
    assert!(!stdout.is_empty(), "{board}: {stderr}");
    let answers = lengths(&stdout);
    assert_eq!(answers.len(), 1, "{stdout}");
    assert_eq!(answers[0].0, board, "{stdout}");
    assert_eq!(ok, answers[0].1.is_some(), "{stdout}\n{stderr}");
    answers[0].1
}

/// Asserts that every known board was answered with its published optimal length.
pub fn assert_optimal(results: &[(String, Option<u64>)], boards: &[(String, u64)]) {
    for (board, optimal) in boards {
        let found = results
            .iter()
            .find(|(b, _)| b == board)
            .unwrap_or_else(|| panic!("{board} missing from {results:?}"));
        assert_eq!(found.1, Some(*optimal), "{board}");
    }
}

/// Submits a batch file with the small `pdb:5-5-5` tables and waits: (board, length) of each
/// answer.
pub fn submit_and_wait(url: &str, file: &Path) -> Vec<(String, Option<u64>)> {
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        url,
        "--heuristic",
        "pdb:5-5-5",
        "--wait",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    lengths(&stdout)
}

/// Submits a batch file with the small `pdb:5-5-5` tables, without waiting; returns its id.
pub fn submit(url: &str, file: &Path) -> String {
    let (ok, stdout, stderr) = run(&[
        "submit",
        "--coordinator",
        url,
        "--heuristic",
        "pdb:5-5-5",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    stdout.trim().to_string()
}

/// A batch's status from `status --json`.
pub fn status(url: &str, batch: &str, extra: &[&str]) -> Option<serde_json::Value> {
    let mut args = vec!["status", "--coordinator", url, "--json", batch];
    args.extend_from_slice(extra);
    let (ok, stdout, _) = run(&args);
    ok.then(|| serde_json::from_str(stdout.trim()).ok())?
}

/// Waits until the batch has some answers but is not done: the moment to crash or stop
/// something.
pub fn wait_for_mid_batch(url: &str, batch: &str) {
    wait_until(
        "the batch to be under way",
        Duration::from_secs(120),
        || {
            let status = status(url, batch, &[])?;
            assert_eq!(status["done"], false, "the batch ended before the crash");
            (status["solved"].as_u64()? >= 2).then_some(())
        },
    );
}

/// `submit --wait --json` of `file` with the small tables, running until the batch is done
/// (through coordinator restarts: it reconnects by itself).
pub fn watching_client(url: &str, file: &Path) -> Process {
    Process(
        Command::new(BIN)
            .args(["submit", "--coordinator", url, "--heuristic", "pdb:5-5-5"])
            .args(["--wait", "--json"])
            .arg(file)
            .env_remove("TILESOLVE_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start submit --wait"),
    )
}

/// Waits for a `watching_client` to end; asserts it succeeded and returns its answers.
pub fn watched_answers(client: Process) -> Vec<(String, Option<u64>)> {
    let output = client.wait_with_output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    lengths(&String::from_utf8_lossy(&output.stdout))
}

/// Batch 1 (the ten examples15 boards and two of Korf's) under way on a coordinator started
/// with `serve` flags, two workers and a `submit --wait` client watching it: for tests that
/// stop or crash the coordinator mid-batch and restart it on `data` at `address`.
pub struct WatchedBatch {
    pub dir: tempfile::TempDir,
    pub boards: Vec<(String, u64)>,
    pub data: PathBuf,
    pub address: String,
    pub server: Coordinator,
    pub workers: [Process; 2],
    pub client: Process,
}

impl WatchedBatch {
    pub fn start(serve: &[&str]) -> WatchedBatch {
        let dir = tempfile::tempdir().unwrap();
        let boards = known_boards(12);
        let path = dir.path().join("batch.txt");
        write_batch(&path, &boards, false);
        let data = dir.path().join("coordinator");
        let server = Coordinator::start(&data, "127.0.0.1:0", serve, &[]);
        let (address, url) = (server.address.clone(), server.url());
        let workers = [
            worker(&url, &dir.path().join("w1"), &[]),
            worker(&url, &dir.path().join("w2"), &[]),
        ];
        let client = watching_client(&url, &path);
        wait_until("the batch to be accepted", Duration::from_secs(60), || {
            status(&url, "1", &[]).map(drop)
        });
        wait_for_mid_batch(&url, "1");
        WatchedBatch {
            dir,
            boards,
            data,
            address,
            server,
            workers,
            client,
        }
    }
}

/// `count` distinct boards of `side` x `side` a `steps`-move random walk (xorshift from `seed`)
/// from the default goal, each at least 4 moves away, with their optimal lengths found in this
/// process (IDA* with linear conflict, which is admissible).
pub fn walked(side: usize, steps: usize, count: usize, seed: u64) -> Vec<(String, u64)> {
    walked_in(tilesolve::Shape::square(side), steps, count, seed)
}

/// [`walked`] on a board of any `shape` (a rectangle's text is its rows in braces).
pub fn walked_in(
    shape: tilesolve::Shape,
    steps: usize,
    count: usize,
    seed: u64,
) -> Vec<(String, u64)> {
    use tilesolve::{Board, HeuristicKind, SolveOptions, Solver};
    let goal = Board::blank_last_in(shape);
    let solver = Solver::new(goal, HeuristicKind::LinearConflict);
    let mut state = seed;
    let mut boards: Vec<(String, u64)> = Vec::new();
    while boards.len() < count {
        let board = random_walk(goal, steps, &mut state);
        let length = solver
            .solve(&board, &SolveOptions::default(), None)
            .unwrap()
            .moves
            .len() as u64;
        let text = board.to_string();
        if length >= 4 && !boards.iter().any(|(b, _)| *b == text) {
            boards.push((text, length));
        }
    }
    boards
}

/// The board `steps` random moves (xorshift from `state`, which it advances) away from `from`;
/// a move off the board is skipped.
pub fn random_walk(from: tilesolve::Board, steps: usize, state: &mut u64) -> tilesolve::Board {
    let mut board = from;
    for _ in 0..steps {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let direction = tilesolve::Direction::ALL[(*state % 4) as usize];
        board = board.apply(direction).map_or(board, |(next, _)| next);
    }
    board
}

/// `count` 15-puzzles far from the goal (random walks of 400 moves), their lengths unknown
/// (0): with linear conflict each takes seconds or more, so a batch of them keeps workers busy
/// for the whole of a test.
pub fn far_boards(count: usize, seed: u64) -> Vec<(String, u64)> {
    let goal = tilesolve::Board::blank_last_in(tilesolve::Shape::square(4));
    let mut state = seed;
    (0..count)
        .map(|_| (random_walk(goal, 400, &mut state).to_string(), 0))
        .collect()
}

/// A certificate authority and a server certificate for `localhost` it signed, as PEM files.
pub fn certificates(dir: &Path) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path.to_str().unwrap().to_string()
    };
    (
        write("ca.pem", ca_cert.pem()),
        write("server.pem", server_cert.pem()),
        write("server.key", server_key.serialize_pem()),
    )
}
