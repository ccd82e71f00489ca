//! `tilesolve`: the one user-facing binary. Each subcommand lives in its own module; this file
//! only parses arguments and turns errors into exit codes.

#![deny(clippy::print_stdout)]

mod backup;
mod batch;
mod bench;
mod calls;
mod client;
mod exit_status;
mod hash_token;
mod health;
mod load;
mod options;
mod output;
mod pdb;
mod process;
mod progress;
mod prune;
mod report;
mod restart;
mod results;
mod retry;
mod salvage;
mod serve;
mod simulate;
mod solve;
mod telemetry;
mod worker;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use exit_status::ExitStatus;

/// mimalloc rather than glibc's malloc: under a steady load a coordinator on glibc kept
/// growing (its per-thread arenas fragment under the store's churn) while what it held stayed
/// the same; on mimalloc it levels off (BENCHMARKS.md, soaks 6 and 7).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Optimal solutions to sliding-tile puzzles (8-, 15- and 24-puzzle).
#[derive(Parser)]
#[command(name = "tilesolve", version, about, after_help = exit_status::EXIT_STATUS_HELP)]
struct Cli {
    /// Log lines for people (`human`) or one JSON object per line (`json`); `RUST_LOG`
    /// filters them either way.
    #[arg(long, global = true, env = "TILESOLVE_LOG_FORMAT", default_value = "human", value_parser = ["human", "json"])]
    log_format: String,
    /// Send traces to this OpenTelemetry collector (OTLP over gRPC, e.g.
    /// http://127.0.0.1:4317): off unless given. The trace context travels with every call, so
    /// a batch's trace runs from `submit` through the coordinator to the workers' tasks.
    #[arg(
        long,
        global = true,
        env = "OTEL_EXPORTER_OTLP_ENDPOINT",
        value_name = "URL"
    )]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve boards given on the command line, or one per line on standard input with `-`.
    Solve(solve::SolveArgs),
    /// Solve every board of a benchmark file and report node counts, rates and mismatches
    /// against the file's `optimal=` and `korf1985_nodes=` facts.
    Bench(bench::BenchArgs),
    /// Build, list and verify pattern databases in the data directory.
    #[command(subcommand)]
    Pdb(pdb::PdbCommand),
    /// Solve a batch file with an embedded coordinator, local workers and the store in the data
    /// directory: the way to run the main job on one machine.
    Batch(batch::BatchArgs),
    /// Run the coordinator (gRPC) with its store in the data directory.
    Serve(serve::ServeArgs),
    /// Run a worker that takes tasks from a coordinator.
    Worker(worker::WorkerArgs),
    /// Submit a batch file to a coordinator.
    Submit(client::SubmitArgs),
    /// A batch's progress.
    Status(client::StatusArgs),
    /// A batch's results.
    Results(client::ResultsArgs),
    /// A stored solution.
    Query(client::QueryArgs),
    /// Every batch the coordinator holds.
    Batches(client::ListArgs),
    /// Cancel a batch.
    Cancel(client::CancelArgs),
    /// Submit a batch's failed and/or cancelled items again, as a new batch linked to it.
    Retry(retry::RetryArgs),
    /// Every stored answer as JSON lines (a backup, taken while the coordinator runs).
    Export(backup::ExportArgs),
    /// Load a file `export` wrote into a coordinator: each answer is replayed and proven
    /// optimal by the coordinator's own search before it is stored.
    Import(backup::ImportArgs),
    /// Remove finished batches older than a limit (their answers stay unless --solutions).
    Prune(prune::PruneArgs),
    /// Read what a damaged store still holds into a file `import` takes (the coordinator is
    /// not running; the store is copied first and the copy read).
    Salvage(salvage::SalvageArgs),
    /// Load-test a running coordinator: concurrent clients submitting and querying for a fixed
    /// time; prints throughput, latency percentiles and errors, then checks every answer.
    Loadtest(load::LoadArgs),
    /// Print the SHA-256 of a token read from standard input, as an owners file (`serve
    /// --owners`) names it; with --new, make a new token and print both.
    HashToken(hash_token::HashTokenArgs),
    /// Ask a coordinator, or a worker's health endpoint, whether it is serving (exit 0) or
    /// not (exit 1): for exec probes and scripts.
    Health(health::HealthArgs),
    /// Print a completion script for a shell, e.g.
    /// `tilesolve completions bash > /usr/share/bash-completion/completions/tilesolve`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff); with --dir, write it and the page of every subcommand
    /// (`tilesolve-submit.1`, ... which it refers to) there, e.g. `tilesolve man --dir
    /// /usr/local/share/man/man1`.
    Man {
        /// Directory to write every page to, instead of printing this one.
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
    /// Replay a recorded batch (its tasks' sizes and times, kept by the coordinator) with 1 to
    /// 1,024 virtual workers under the scheduler's policy; prints makespan and efficiency.
    Simulate(simulate::SimulateArgs),
}

fn main() -> ExitCode {
    let matches = match Cli::command().try_get_matches() {
        Ok(matches) => matches,
        // Help and version, on standard output.
        Err(error) if !error.use_stderr() => error.exit(),
        // A refused value is quoted in part, however long it was.
        Err(error) => {
            eprint!(
                "{}",
                tilesolve::excerpt::quotes_cut(&error.render().to_string())
            );
            return ExitCode::from(error.exit_code() as u8);
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let name = matches.subcommand_name().unwrap_or("tilesolve");
    // Huge pages only where pattern tables are looked up at random (see `small_pages_only`).
    if !matches!(
        cli.command,
        Command::Solve(_)
            | Command::Bench(_)
            | Command::Pdb(_)
            | Command::Batch(_)
            | Command::Worker(_)
    ) {
        process::small_pages_only();
    }
    let server = matches!(cli.command, Command::Serve(_) | Command::Worker(_));
    let service = match &cli.command {
        Command::Serve(_) => "tilesolve-coordinator".to_string(),
        Command::Worker(_) => "tilesolve-worker".to_string(),
        _ => format!("tilesolve-{name}"),
    };
    let telemetry = match telemetry::install_subscriber(
        &cli.log_format,
        server,
        cli.otlp_endpoint.as_deref(),
        &service,
    ) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("error: --otlp-endpoint: {error:#}");
            return ExitCode::from(ExitStatus::BadInput as u8);
        }
    };
    // A client command's calls belong to one trace, rooted here (servers' spans are rooted in
    // the calls and tasks they serve).
    let root =
        (telemetry.is_some() && !server).then(|| tracing::info_span!("tilesolve", command = name));
    let entered = root.as_ref().map(tracing::Span::enter);
    let outcome = run(cli.command);
    drop(entered);
    drop(root);
    drop(telemetry);
    let status = match outcome {
        Ok(true) => ExitStatus::Done,
        Ok(false) => ExitStatus::Unsolved,
        // The reader of our output stopped reading (`tilesolve results 1 | head`): nothing
        // went wrong here, and there is nobody left to tell.
        Err(error) if reader_went_away(&error) => ExitStatus::Done,
        Err(error) => {
            // The message may quote a submitted line: no control characters reach the terminal.
            eprintln!("error: {}", results::printable(&format!("{error:#}")));
            exit_status(&error)
        }
    };
    ExitCode::from(status as u8)
}

/// Runs the command: Ok(false) when it ended without every board solved.
fn run(command: Command) -> anyhow::Result<bool> {
    match command {
        Command::Solve(args) => solve::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Pdb(command) => pdb::run(command),
        Command::Batch(args) => batch::batch(args),
        Command::Serve(args) => serve::serve(args),
        Command::Worker(args) => worker::worker(args),
        Command::Submit(args) => client::submit(args),
        Command::Status(args) => client::status(args),
        Command::Results(args) => client::results(args),
        Command::Query(args) => client::query(args),
        Command::Batches(args) => client::list(args),
        Command::Cancel(args) => client::cancel(args),
        Command::Retry(args) => retry::retry(args),
        Command::Export(args) => backup::export(args),
        Command::Import(args) => backup::import(args),
        Command::Prune(args) => prune::prune(args),
        Command::Salvage(args) => salvage::run(args),
        Command::Loadtest(args) => load::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Health(args) => health::run(args),
        Command::HashToken(args) => hash_token::run(args),
        // Into memory first: the generator panics on a write that fails.
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "tilesolve", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
            Ok(true)
        }
        // Without the `help` subcommand, which has no page of its own.
        Command::Man { dir: None } => {
            clap_mangen::Man::new(Cli::command().disable_help_subcommand(true))
                .render(&mut std::io::stdout())
                .map(|()| true)
                .map_err(anyhow::Error::from)
        }
        Command::Man { dir: Some(dir) } => write_man_pages(&dir),
    }
}

/// Writes the manual page and one per subcommand (the pages the first one names) into `dir`.
fn write_man_pages(dir: &std::path::Path) -> anyhow::Result<bool> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing manual pages into {}", dir.display()))?;
    eprintln!("manual pages written to {}", dir.display());
    Ok(true)
}

/// Whether `error` is a write to a pipe whose reader has gone (directly, or inside a CSV
/// writer's error).
fn reader_went_away(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        let io = cause.downcast_ref::<std::io::Error>().or_else(|| {
            cause
                .downcast_ref::<csv::Error>()
                .and_then(|csv| match csv.kind() {
                    csv::ErrorKind::Io(io) => Some(io),
                    _ => None,
                })
        });
        io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The exit status an error stands for: a call the coordinator refused, or one that could not
/// reach it, or anything else.
fn exit_status(error: &anyhow::Error) -> ExitStatus {
    if let Some(call) = error.downcast_ref::<calls::CallError>() {
        return call.exit_status();
    }
    if error.chain().any(|cause| {
        cause.is::<tilesolve::batch_file::NotText>() || cause.is::<prune::PruneNeedsYes>()
    }) {
        return ExitStatus::BadInput;
    }
    match error.downcast_ref::<tilesolve_worker::WorkerError>() {
        Some(tilesolve_worker::WorkerError::Refused(_)) => ExitStatus::Refused,
        _ => ExitStatus::Failed,
    }
}
