//! `tilesolve solve`: boards from the command line or standard input, solved in this process.

use std::io::BufRead;

use clap::Args;
use tilesolve::batch_file::BatchLine;
use tilesolve::heuristic::Weight;
use tilesolve::solver::Answer;
use tilesolve::{parse_board_in, Board, BoardError};

use crate::options::{SearchArgs, Solvers};
use crate::report::{Origin, Reporter};

#[derive(Args)]
pub struct SolveArgs {
    #[command(flatten)]
    search: SearchArgs,
    /// One JSON object per board per line.
    #[arg(long)]
    json: bool,
    /// Ask only for a path at most W times the optimal length (weighted IDA*, 1 <= W <= 10),
    /// found far sooner, with the heuristic's estimate as its lower bound. Without it, a board
    /// stopped by --time-limit or --node-limit comes back with the shortest path such searches
    /// find in the last quarter of the limit, and the lower bound the optimal search proved.
    #[arg(long, value_name = "W", value_parser = crate::options::parse_weight)]
    suboptimal: Option<Weight>,
    /// --suboptimal 1.5: a path at most half again the optimal length, in milliseconds on
    /// every size.
    #[arg(long, conflicts_with = "suboptimal")]
    fast: bool,
    /// Boards, e.g. `2,4,0,1,8,5,3,6,7`; `-` reads one board per line from standard input.
    #[arg(required = true, value_name = "BOARD")]
    boards: Vec<String>,
}

/// Returns whether every board was solved optimally.
pub fn run(args: SolveArgs) -> anyhow::Result<bool> {
    let options = args.search.solve_options()?;
    let weight = match args.fast {
        true => Weight::new(3, 2),
        false => args.suboptimal,
    };
    let mut solvers = Solvers::new(&args.search);
    let reporter = Reporter {
        json: args.json,
        algorithm: args.search.algorithm.to_string(),
    };
    let mut all_solved = true;
    // Returns whether the board was solved; a failure is reported and the rest go on (only a
    // failed write of the report stops them).
    let size = args.search.size;
    let mut solve_one =
        |text: &str, board: Result<Board, BoardError>, origin: Origin| -> std::io::Result<bool> {
            let board = match board {
                Ok(board) => board,
                Err(error) => {
                    reporter.failed(text, origin, &error, None)?;
                    return Ok(false);
                }
            };
            let solver = match solvers.for_board(&board) {
                Ok(solver) => solver,
                Err(error) => {
                    reporter.failed(text, origin, &error, None)?;
                    return Ok(false);
                }
            };
            // A board stopped by a limit still comes back with the best path found in it; it is
            // not counted as solved.
            let answer = match weight {
                Some(weight) => solver.solve_weighted(&board, weight, &options, None),
                None => solver.solve_or_bound(&board, &options, None),
            };
            match answer {
                Ok(Answer::Optimal(solution)) => {
                    reporter.solved(&solution, solver.heuristic())?;
                    Ok(true)
                }
                Ok(Answer::Bounded(answer)) => {
                    reporter.bounded(&answer, solver.heuristic())?;
                    Ok(false)
                }
                Err(error) => {
                    reporter.solve_failed(text, origin, &error)?;
                    Ok(false)
                }
            }
        };
    for (index, arg) in args.boards.iter().enumerate() {
        if arg != "-" {
            let board = parse_board_in(arg, size);
            all_solved &= solve_one(arg, board, Origin::Argument(index + 1))?;
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
                        let board = entry.read_board(size);
                        all_solved &= solve_one(entry.board, board, Origin::Line(entry.number))?;
                    }
                }
                Err(_) => {
                    reporter.failed(
                        "",
                        Origin::Line(number),
                        &"the line is not valid UTF-8 text",
                        None,
                    )?;
                    all_solved = false;
                }
            }
        }
    }
    Ok(all_solved)
}
