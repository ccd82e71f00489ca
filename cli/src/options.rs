//! Search options shared by every subcommand that solves boards.

use std::collections::HashMap;
use std::time::Duration;

use clap::Args;
use tilesolve::{Algorithm, Board, Goal, HeuristicKind, SolveOptions, Solver};

#[derive(Args, Clone, Debug)]
pub struct SearchArgs {
    /// Heuristic: hamming, manhattan or linear-conflict.
    #[arg(long, default_value = "linear-conflict")]
    pub heuristic: HeuristicKind,
    /// Algorithm: ida (iterative deepening A*) or astar.
    #[arg(long, default_value = "ida")]
    pub algorithm: Algorithm,
    /// Goal: `default` (1,2,...,N-1,0), `korf` (0,1,...,N-1) or a board.
    #[arg(long, default_value = "default")]
    pub goal: Goal,
    /// Give up on a board after this many seconds (per board).
    #[arg(long, value_name = "SECS")]
    pub time_limit: Option<f64>,
    /// Give up on a board after this many expanded nodes.
    #[arg(long, value_name = "NODES")]
    pub node_limit: Option<u64>,
    /// Memory A* may use, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 2048)]
    pub memory_budget: usize,
}

impl SearchArgs {
    pub fn solve_options(&self) -> anyhow::Result<SolveOptions> {
        let time_limit = match self.time_limit {
            Some(secs) if !(secs.is_finite() && secs > 0.0) => {
                anyhow::bail!("--time-limit must be a positive number of seconds, not {secs}")
            }
            secs => secs.map(Duration::from_secs_f64),
        };
        Ok(SolveOptions {
            algorithm: self.algorithm,
            time_limit,
            node_limit: self.node_limit,
            memory_budget: self.memory_budget << 20,
        })
    }
}

/// One solver per board size, built on first use (a custom goal fixes the size).
pub struct Solvers {
    goal: Goal,
    heuristic: HeuristicKind,
    by_side: HashMap<usize, Solver>,
}

impl Solvers {
    pub fn new(args: &SearchArgs) -> Solvers {
        Solvers { goal: args.goal, heuristic: args.heuristic, by_side: HashMap::new() }
    }

    pub fn for_board(&mut self, board: &Board) -> &Solver {
        let (goal, heuristic) = (self.goal, self.heuristic);
        self.by_side.entry(board.side()).or_insert_with(|| Solver::new(goal.for_side(board.side()), heuristic))
    }
}
