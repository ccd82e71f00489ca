//! `tilesolve solve`: boards from the command line or standard input, solved in this process.

use std::io::BufRead;

use clap::Args;
use tilesolve::batch_file::BatchLine;
use tilesolve::parse_board;

use crate::options::{SearchArgs, Solvers};
use crate::report::{Origin, Reporter};

#[derive(Args)]
pub struct SolveArgs {
    #[command(flatten)]
    search: SearchArgs,
    /// One JSON object per board per line.
    #[arg(long)]
    json: bool,
    /// Boards, e.g. `2,4,0,1,8,5,3,6,7`; `-` reads one board per line from standard input.
    #[arg(required = true, value_name = "BOARD")]
    boards: Vec<String>,
}

/// Returns whether every board was solved.
pub fn run(args: SolveArgs) -> anyhow::Result<bool> {
    let options = args.search.solve_options()?;
    let mut solvers = Solvers::new(&args.search);
    let reporter = Reporter {
        json: args.json,
        algorithm: args.search.algorithm.to_string(),
    };
    let mut all_solved = true;
    // Returns whether the board was solved; a failure is reported and the rest go on.
    let mut solve_one = |text: &str, origin: Origin| -> bool {
        let board = match parse_board(text) {
            Ok(board) => board,
            Err(error) => {
                reporter.failed(text, origin, &error, None);
                return false;
            }
        };
        let solver = match solvers.for_board(&board) {
            Ok(solver) => solver,
            Err(error) => {
                reporter.failed(text, origin, &error, None);
                return false;
            }
        };
        match solver.solve(&board, &options, None) {
            Ok(solution) => {
                reporter.solved(&solution, solver.heuristic());
                true
            }
            Err(error) => {
                reporter.solve_failed(text, origin, &error);
                false
            }
        }
    };
    for (index, arg) in args.boards.iter().enumerate() {
        if arg != "-" {
            all_solved &= solve_one(arg, Origin::Argument(index + 1));
            continue;
        }
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        for number in 1.. {
            bytes.clear();
            if stdin.read_until(b'\n', &mut bytes)? == 0 {
                break;
            }
            match std::str::from_utf8(&bytes) {
                Ok(line) => {
                    if let Some(entry) = BatchLine::read(number, line) {
                        all_solved &= solve_one(entry.board, Origin::Line(entry.number));
                    }
                }
                Err(_) => {
                    reporter.failed(
                        "",
                        Origin::Line(number),
                        &"the line is not valid UTF-8 text",
                        None,
                    );
                    all_solved = false;
                }
            }
        }
    }
    Ok(all_solved)
}
