//! How results are shown: a short block per board for people, one JSON object per line for
//! programs. Failures use the same shapes so a batch's output stays one stream.

use crate::output::outln;
use crate::results::{printable, status_json, utc_time};
use serde::Serialize;
use tilesolve::moves::moves_to_string;
use tilesolve::proto::v1 as pb;
use tilesolve::solver::{BoundedSolution, Solution};
use tilesolve::SolveError;

#[derive(Serialize)]
struct SolvedJson<'a> {
    board: String,
    goal: String,
    /// `optimal`.
    status: &'static str,
    length: usize,
    moves: String,
    tiles: &'a [u8],
    nodes: u64,
    generated: u64,
    iterations: u32,
    seconds: f64,
    heuristic: &'a str,
    algorithm: &'a str,
}

/// A path found when a limit stopped the optimal search: not proven optimal.
#[derive(Serialize)]
struct BoundedJson<'a> {
    board: String,
    goal: String,
    /// `bounded`.
    status: &'static str,
    length: usize,
    /// No solution is shorter.
    lower_bound: u32,
    /// The path is at most this many times the optimal length.
    weight: f64,
    moves: String,
    tiles: &'a [u8],
    nodes: u64,
    generated: u64,
    seconds: f64,
    heuristic: &'a str,
    /// Why the optimal search stopped.
    error: String,
}

#[derive(Serialize)]
struct FailedJson<'a> {
    board: &'a str,
    error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    /// Proven lower bound on the length when a limit stopped the search.
    #[serde(skip_serializing_if = "Option::is_none")]
    bound: Option<u32>,
}

/// Where a board came from, for error messages.
#[derive(Clone, Copy)]
pub enum Origin {
    /// The n-th board argument.
    Argument(usize),
    /// A line of standard input or of a file.
    Line(usize),
}

pub struct Reporter {
    pub json: bool,
    pub algorithm: String,
}

impl Reporter {
    pub fn solved(&self, solution: &Solution, heuristic: &str) -> std::io::Result<()> {
        if self.json {
            let json = SolvedJson {
                board: solution.board.to_string(),
                goal: solution.goal.to_string(),
                status: "optimal",
                length: solution.len(),
                moves: moves_to_string(&solution.moves),
                tiles: &solution.tiles,
                nodes: solution.counters.expanded,
                generated: solution.counters.generated,
                iterations: solution.iterations,
                seconds: solution.seconds,
                heuristic,
                algorithm: &self.algorithm,
            };
            outln!("{}", serde_json::to_string(&json).unwrap_or_default())?;
        } else {
            let tiles: Vec<String> = solution.tiles.iter().map(u8::to_string).collect();
            outln!("board    {}", solution.board)?;
            outln!("length   {} moves (optimal)", solution.len())?;
            outln!("moves    {}", moves_to_string(&solution.moves))?;
            outln!("tiles    {}", tiles.join(" "))?;
            outln!(
                "nodes    {} expanded, {} generated, {} iterations",
                solution.counters.expanded,
                solution.counters.generated,
                solution.iterations
            )?;
            outln!("seconds  {:.6} ({heuristic})", solution.seconds)?;
            outln!()?;
        }
        Ok(())
    }

    pub fn bounded(&self, answer: &BoundedSolution, heuristic: &str) -> std::io::Result<()> {
        if self.json {
            let json = BoundedJson {
                board: answer.board.to_string(),
                goal: answer.goal.to_string(),
                status: "bounded",
                length: answer.len(),
                lower_bound: answer.lower_bound,
                weight: answer.weight,
                moves: moves_to_string(&answer.moves),
                tiles: &answer.tiles,
                nodes: answer.counters.expanded,
                generated: answer.counters.generated,
                seconds: answer.seconds,
                heuristic,
                error: answer.stopped.to_string(),
            };
            outln!("{}", serde_json::to_string(&json).unwrap_or_default())?;
        } else {
            let tiles: Vec<String> = answer.tiles.iter().map(u8::to_string).collect();
            outln!("board    {}", answer.board)?;
            outln!(
                "length   {} moves (NOT proven optimal: no solution shorter than {} moves \
                 exists; found by a search weighted {})",
                answer.len(),
                answer.lower_bound,
                answer.weight
            )?;
            outln!("moves    {}", moves_to_string(&answer.moves))?;
            outln!("tiles    {}", tiles.join(" "))?;
            outln!("stopped  {}", answer.stopped)?;
            outln!(
                "nodes    {} expanded in both searches",
                answer.counters.expanded
            )?;
            outln!("seconds  {:.6} ({heuristic})", answer.seconds)?;
            outln!()?;
        }
        Ok(())
    }

    pub fn failed(
        &self,
        text: &str,
        origin: Origin,
        error: &dyn std::fmt::Display,
        bound: Option<u32>,
    ) -> std::io::Result<()> {
        if self.json {
            let line = match origin {
                Origin::Line(line) => Some(line),
                Origin::Argument(_) => None,
            };
            let json = FailedJson {
                board: text,
                error: error.to_string(),
                line,
                bound,
            };
            outln!("{}", serde_json::to_string(&json).unwrap_or_default())?;
        } else {
            match origin {
                Origin::Line(line) => eprintln!("error: line {line}: '{text}': {error}"),
                Origin::Argument(n) => eprintln!("error: board {n} '{text}': {error}"),
            }
        }
        Ok(())
    }

    pub fn solve_failed(
        &self,
        text: &str,
        origin: Origin,
        error: &SolveError,
    ) -> std::io::Result<()> {
        self.failed(text, origin, error, error.lower_bound())
    }
}

/// The bounds of a batch's running puzzles, for people: each one while few run, else their
/// count and range (a batch keeps up to 20 live puzzles a search thread).
pub(crate) fn running_bounds(bounds: &[u32]) -> String {
    match (bounds.iter().min(), bounds.iter().max()) {
        (Some(low), Some(high)) if bounds.len() > RUNNING_BOUNDS_LISTED => {
            format!("{} running, bounds {low} to {high}", bounds.len())
        }
        _ => format!("running bounds {bounds:?}"),
    }
}

/// Running puzzles whose bounds `status` lists one by one.
const RUNNING_BOUNDS_LISTED: usize = 16;

/// One batch's status line: for people, or as one JSON object.
pub(crate) fn print_status_line(status: &pb::BatchStatus, json: bool) -> std::io::Result<()> {
    if json {
        outln!("{}", status_json(status))
    } else {
        outln!("{}", status_text(status))
    }
}

/// A batch's status for people: `batch 3: 7 of 10 solved, 0 failed, running (4 to 40 s to
/// go); submitted 2026-11-25T20:14:03Z, pdb:7-8`.
pub(crate) fn status_text(status: &pb::BatchStatus) -> String {
    let state = if status.state.is_empty() {
        if status.done {
            "done"
        } else {
            "running"
        }
    } else {
        status.state.as_str()
    };
    let eta = match (status.eta_low_seconds, status.eta_high_seconds) {
        (Some(low), Some(high)) if low >= 1.0 => format!(" ({low:.0} to {high:.0} s to go)"),
        (_, Some(high)) => format!(" (up to {high:.0} s to go)"),
        _ => String::new(),
    };
    let cancelled = match status.items_cancelled {
        0 => String::new(),
        items => format!(", {items} cancelled"),
    };
    let mut line = format!(
        "batch {}: {} of {} solved, {} failed{cancelled}, {state}{eta}",
        status.batch_id, status.solved, status.total, status.failed
    );
    if status.submitted_unix_ms > 0 {
        line.push_str(&format!(
            "; submitted {}, {}",
            utc_time(status.submitted_unix_ms),
            printable(&status.heuristic)
        ));
    }
    if status.priority > 0 && status.priority != 3 {
        line.push_str(&format!(", priority {}", status.priority));
    }
    if status.retry_of > 0 {
        line.push_str(&format!(", retry of batch {}", status.retry_of));
    }
    if !status.owner.is_empty() {
        line.push_str(&format!(", owner {}", printable(&status.owner)));
    }
    line
}

#[cfg(test)]
mod running_bounds_tests {
    use super::running_bounds;

    #[test]
    fn a_few_bounds_are_listed_and_many_are_summed_up() {
        assert_eq!(running_bounds(&[]), "running bounds []");
        assert_eq!(running_bounds(&[78, 80]), "running bounds [78, 80]");
        let many: Vec<u32> = (0..2_000).map(|i| 13 + i % 35).collect();
        assert_eq!(running_bounds(&many), "2000 running, bounds 13 to 47");
    }
}
