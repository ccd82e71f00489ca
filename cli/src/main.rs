//! `tilesolve`: the one user-facing binary. Each subcommand lives in its own module; this file
//! only parses arguments and turns errors into exit codes.

mod bench;
mod options;
mod pdb;
mod progress;
mod report;
mod solve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Optimal solutions to sliding-tile puzzles (8-, 15- and 24-puzzle).
#[derive(Parser)]
#[command(name = "tilesolve", version, about)]
struct Cli {
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Solve(args) => solve::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Pdb(command) => pdb::run(command),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
