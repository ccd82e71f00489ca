//! How long a batch has left, as a range, from its search: each unfinished puzzle's nodes left
//! in its current IDA* iteration, the growth of one iteration to the next (about b², measured
//! on the puzzle when it can be), and what the batch's finished puzzles cost for those not yet
//! split; divided by the batch's nodes/s over [`super::rate::RATE_WINDOW`]. A leaf: pure
//! arithmetic on what `lifecycle` and `batches` hand it.
//!
//! Why a range and why these ends: IDA* may meet the goal at any node of an iteration, and
//! nothing tells whether the current bound is the last, so a puzzle being searched may end at
//! once (its low end is 0) or need the rest of this iteration and the start of the next, where
//! the search order meets the goal early (its high end; a puzzle whose goal lies two or more
//! bounds on needs more, which happens before its costliest iteration, while most of its work
//! is still ahead). A puzzle not split yet costs what the batch's finished puzzles did, give or take
//! their spread. `scripts/eta-check.py` checks on real runs that the range holds the true time
//! left at 50% and 90% of the work (BENCHMARKS.md).

use std::time::Duration;

/// How much larger than the one before an iteration is taken to be when the puzzle has not
/// shown its own growth (b² for the 15- and 24-puzzle under pattern databases is 4-8).
pub const DEFAULT_GROWTH: f64 = 6.0;

/// A thread's pace assumed while none is measured (the 15-puzzle's 7-8 search runs at 8-10 M
/// nodes/s a thread): the work left of a batch before any worker reported.
pub const NOMINAL_THREAD_RATE: f64 = 1e7;

/// The high end takes the growth at least this large: a puzzle's next iteration may grow more
/// than its last did.
const HIGH_GROWTH_MARGIN: f64 = 1.5;

/// How much of its last iteration a puzzle searches before it meets the goal, at most, for the
/// high end: the search order meets it early. Measured on the 80-move 15-puzzles: 0.05% to 6%
/// of the full iteration under 7-8, about 2% under 5-5-5 (BENCHMARKS.md); four times the most.
const LAST_ITERATION_SHARE: f64 = 0.25;

/// Standard deviations of the finished puzzles' cost a range's ends lie from the mean (for
/// the puzzles not split yet); the spread is taken as at least [`LEAST_SPREAD`] of the mean
/// while few have finished.
const SPREAD_DEVIATIONS: f64 = 3.0;
const LEAST_SPREAD: f64 = 0.5;

/// A batch's time left: at least `low`, at most `high`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EtaRange {
    pub low: Duration,
    pub high: Duration,
}

impl EtaRange {
    /// The middle of the range (what `BatchStatus.eta_seconds` carries).
    pub fn middle(&self) -> Duration {
        (self.low + self.high) / 2
    }
}

/// One split iteration of a puzzle: what it is expected to cost, and what it has cost so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterationWork {
    /// The puzzle's nodes before this iteration.
    pub nodes_before: u64,
    /// What the iteration is expected to expand: the last one's nodes times the growth, or,
    /// for the first split iteration, what every earlier iteration cost times (growth - 1).
    pub expected: u64,
    /// The nodes of the split iteration before it, if there was one.
    pub last: Option<u64>,
    /// This puzzle's growth from one split iteration to the next, once it has shown one.
    pub growth: Option<f64>,
    /// Subtree tasks of this iteration reported.
    pub reported: u64,
}

impl IterationWork {
    /// The iteration after `previous` (None: the first one split), for a puzzle that has
    /// expanded `nodes` so far.
    pub fn next(previous: Option<IterationWork>, nodes: u64) -> IterationWork {
        let last = previous.map(|p| nodes.saturating_sub(p.nodes_before));
        let growth = previous
            .and_then(|p| Some((last? as f64) / (p.last? as f64).max(1.0)))
            .filter(|g| g.is_finite() && *g >= 1.0)
            .or(previous.and_then(|p| p.growth));
        let expected = match last {
            Some(last) => last as f64 * growth.unwrap_or(DEFAULT_GROWTH),
            None => nodes as f64 * (DEFAULT_GROWTH - 1.0),
        };
        IterationWork {
            nodes_before: nodes,
            expected: expected as u64,
            last,
            growth,
            reported: 0,
        }
    }
}

/// Where an unfinished puzzle of the batch is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PuzzleLeft {
    /// Queued, waiting for tables, or running as one whole task: nothing measured yet.
    NotSplit,
    /// In a split iteration: `nodes` expanded so far, `outstanding` tasks not reported.
    Searching {
        iteration: IterationWork,
        nodes: u64,
        outstanding: usize,
    },
}

/// The cost of the batch's finished puzzles (those that searched): a prior for the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FinishedCosts {
    count: u32,
    sum: f64,
    sum_squares: f64,
}

impl FinishedCosts {
    pub fn add(&mut self, nodes: u64) {
        let nodes = nodes as f64;
        self.count += 1;
        self.sum += nodes;
        self.sum_squares += nodes * nodes;
    }

    /// Mean and standard deviation (at least [`LEAST_SPREAD`] of the mean), once any finished.
    fn mean_and_spread(&self) -> Option<(f64, f64)> {
        if self.count == 0 {
            return None;
        }
        let n = f64::from(self.count);
        let mean = self.sum / n;
        let variance = (self.sum_squares / n - mean * mean).max(0.0) * n / (n - 1.0).max(1.0);
        Some((mean, variance.sqrt().max(LEAST_SPREAD * mean)))
    }
}

/// The time left at `nodes_per_second` of a batch with `unfinished` puzzles, of which `puzzles`
/// are live (the rest wait in intake or for tables: not split), or None while no honest range
/// exists (nothing measured yet for some puzzle, or no rate).
pub fn estimate(
    puzzles: impl IntoIterator<Item = PuzzleLeft>,
    unfinished: u32,
    finished: &FinishedCosts,
    nodes_per_second: f64,
) -> Option<EtaRange> {
    if nodes_per_second <= 0.0 {
        return None;
    }
    let (mut low, mut high) = (0.0, 0.0);
    let (mut not_split, mut live) = (0u32, 0u32);
    for puzzle in puzzles {
        live += 1;
        match puzzle {
            PuzzleLeft::NotSplit => not_split += 1,
            PuzzleLeft::Searching {
                iteration,
                nodes,
                outstanding,
            } => {
                let done = nodes.saturating_sub(iteration.nodes_before) as f64;
                // A growth underestimated shows as an iteration past its expected size: its
                // tasks left are then taken to cost what its reported ones did.
                let by_tasks = done * outstanding as f64 / iteration.reported.max(1) as f64;
                let left = (iteration.expected as f64 - done).max(by_tasks);
                let growth = iteration.growth.unwrap_or(DEFAULT_GROWTH) * HIGH_GROWTH_MARGIN;
                let next = growth.max(DEFAULT_GROWTH) * (done + left);
                high += left + LAST_ITERATION_SHARE * next;
            }
        }
    }
    not_split += unfinished.saturating_sub(live);
    if live + not_split == 0 {
        return None;
    }
    if not_split > 0 {
        let (mean, spread) = finished.mean_and_spread()?;
        let n = f64::from(not_split);
        low += (n * mean - SPREAD_DEVIATIONS * spread * n.sqrt()).max(0.0);
        high += n * mean + SPREAD_DEVIATIONS * spread * n.sqrt();
    }
    let seconds = |nodes: f64| Duration::from_secs_f64((nodes / nodes_per_second).min(1e9));
    Some(EtaRange {
        low: seconds(low),
        high: seconds(high),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A puzzle in its third split iteration measured its growth (5x); what is left of this
    /// iteration is the expected size less what it searched, and the high end adds a quarter of
    /// the next iteration at 1.5 times that growth.
    #[test]
    fn a_searched_puzzle_may_end_now_or_after_its_next_iteration() {
        let first = IterationWork::next(None, 1_000);
        assert_eq!(first.expected, 5_000);
        let second = IterationWork::next(Some(first), 1_000 + 4_000);
        assert_eq!((second.last, second.growth), (Some(4_000), None));
        assert_eq!(second.expected, 24_000);
        let third = IterationWork::next(Some(second), 5_000 + 20_000);
        assert_eq!(third.growth, Some(5.0));
        assert_eq!(third.expected, 100_000);
        let searching = PuzzleLeft::Searching {
            iteration: IterationWork {
                reported: 10,
                ..third
            },
            nodes: 25_000 + 40_000,
            outstanding: 10,
        };
        let eta = estimate([searching], 1, &FinishedCosts::default(), 1_000.0).unwrap();
        assert_eq!(eta.low, Duration::ZERO);
        // 60,000 left, then a quarter of 7.5 x 100,000.
        assert_eq!(eta.high, Duration::from_secs_f64(60.0 + 187.5));
    }

    /// Puzzles not split yet cost what finished ones did; none finished: no estimate.
    #[test]
    fn puzzles_not_split_cost_what_finished_ones_did() {
        // Two live and not split, two more waiting in intake.
        let not_split = [PuzzleLeft::NotSplit; 2];
        assert_eq!(estimate(not_split, 4, &FinishedCosts::default(), 1.0), None);
        let mut finished = FinishedCosts::default();
        for nodes in [1_000, 3_000] {
            finished.add(nodes);
        }
        // Mean 2,000, spread 1,414: 8,000 -+ 3 x 1,414 x 2.
        let eta = estimate(not_split, 4, &finished, 1_000.0).unwrap();
        assert!((eta.low.as_secs_f64() - 0.0).abs() < 1e-9);
        assert!((eta.high.as_secs_f64() - 16.485).abs() < 1e-3, "{eta:?}");
        assert_eq!(estimate(not_split, 4, &finished, 0.0), None);
        assert_eq!(estimate([], 0, &finished, 1.0), None);
    }
}
