//! What a worker's report is worth for its task: plausible, impossible (a faulty or lying
//! worker: the task goes back to the queue), or a real path shorter than the task's bound (an
//! earlier report was false). Judged before anything of the report is applied.

use tilesolve::heuristic::Weight;
use tilesolve::moves::{replay, without_loops, ReplayError};
use tilesolve::{Board, Direction};

use super::answer::Replayed;
use super::handed_back;
use super::types::{TaskOutcome, TaskSpec};

/// What a worker's report is worth for its task.
pub(super) enum Verdict {
    Plausible,
    /// Plausible, and a path: the path from the puzzle's board the worker found, replayed.
    Reaches(Replayed),
    /// It cannot be right for the task (a subtree task searches exactly at its bound; a
    /// whole-puzzle task starts at a proven lower bound); it comes from a faulty or lying
    /// worker, and taking it could store a path that is not optimal.
    Impossible(String),
    /// A real path (it replays to the goal) shorter than the bound the task was given: so an
    /// earlier report that raised the bound was false, and the puzzle's proof is void.
    Shorter(u32),
}

/// No path is searched this long (the kernel's limit).
const LONGEST: u32 = tilesolve::search::MAX_DEPTH as u32;

fn legal_children(spec: &TaskSpec) -> usize {
    spec.followed_children().len()
}

pub(super) fn judge(spec: &TaskSpec, outcome: &TaskOutcome) -> Verdict {
    let bound = spec.bound;
    match (&spec.weighted, outcome) {
        (Some(_), TaskOutcome::Weighted(found)) => return judge_weighted(spec, found),
        (Some(_), TaskOutcome::Failed(_)) => return Verdict::Plausible,
        (Some(_), other) | (None, other @ TaskOutcome::Weighted(_)) => {
            return Verdict::Impossible(format!(
                "a worker answered a {} task with a {} report",
                if spec.weighted.is_some() {
                    "weighted"
                } else {
                    "search"
                },
                other.kind()
            ))
        }
        (None, _) => {}
    }
    match outcome {
        TaskOutcome::Found(suffix) => {
            // Moves that leave the board or end elsewhere are a failed attempt (retried on the
            // next lease), never a puzzle failure: the puzzle is still solvable.
            let (length, shortest, replayed) = match replay_report(spec, suffix) {
                Ok(lengths) => lengths,
                Err(error) => {
                    return Verdict::Impossible(format!(
                        "a worker reported moves that do not reach the goal: {error}"
                    ))
                }
            };
            // A path that passes a board twice holds a real one shorter by its loop: below the
            // bound, an earlier report was false (the reporter's search never yields one: it
            // walks no move back). A whole-puzzle task's worker searched every bound it passed
            // itself, so a loop from one is its own false report.
            if shortest < length {
                return if shortest < bound {
                    Verdict::Shorter(shortest)
                } else {
                    Verdict::Impossible(format!(
                        "a worker reported a {length}-move path that visits a board twice"
                    ))
                };
            }
            if length < bound {
                Verdict::Shorter(length)
            } else if !spec.iterate && length > bound {
                Verdict::Impossible(format!(
                    "a worker reported a {length}-move answer at bound {bound}"
                ))
            } else {
                replayed.map_or(Verdict::Plausible, Verdict::Reaches)
            }
        }
        TaskOutcome::Exceeded(next) if *next <= bound => Verdict::Impossible(format!(
            "a worker reported next bound {next}, not above bound {bound}"
        )),
        TaskOutcome::BudgetSpent(at) if *at < bound => Verdict::Impossible(format!(
            "a worker reported spending its budget at bound {at}, below {bound}"
        )),
        // Every path of a solvable puzzle is cut well inside the longest path searched, so a
        // bound past it is a worker claiming the puzzle unsolvable.
        TaskOutcome::Exceeded(past) | TaskOutcome::BudgetSpent(past) if *past >= LONGEST => {
            Verdict::Impossible(format!("a worker reported bound {past}, past any path"))
        }
        TaskOutcome::Split { pruned_min_f, .. } if *pruned_min_f <= bound => Verdict::Impossible(
            format!("a worker reported pruned f {pruned_min_f}, not above bound {bound}"),
        ),
        // No pruned child (u32::MAX) means every child was handed back; otherwise the bound
        // must be one a path can have.
        TaskOutcome::Split {
            children,
            pruned_min_f,
        } if (*pruned_min_f == u32::MAX && children.len() < legal_children(spec))
            || (*pruned_min_f != u32::MAX && *pruned_min_f >= LONGEST) =>
        {
            Verdict::Impossible(format!(
                "a worker split into {} children with pruned f {pruned_min_f}",
                children.len()
            ))
        }
        TaskOutcome::HandedBack { searched_min_f, .. }
            if *searched_min_f <= bound
                || (*searched_min_f != u32::MAX && *searched_min_f >= LONGEST) =>
        {
            Verdict::Impossible(format!(
                "a worker handed back a task whose search met f {searched_min_f} at bound {bound}"
            ))
        }
        TaskOutcome::HandedBack { .. } if spec.iterate || spec.profile_depth == 0 => {
            Verdict::Impossible("a worker handed back a task that cannot be handed back".into())
        }
        TaskOutcome::HandedBack { paths, .. } => match handed_back::fault(spec, paths) {
            Some(reason) => Verdict::Impossible(reason),
            None => Verdict::Plausible,
        },
        _ => Verdict::Plausible,
    }
}

/// The puzzle's board a task's path starts from: the task's board with that path undone.
fn start_of(spec: &TaskSpec) -> Option<Board> {
    spec.path
        .iter()
        .rev()
        .try_fold(spec.board, |board, &direction| {
            board.apply(direction.opposite()).map(|(before, _)| before)
        })
}

/// The length of the path a task's `suffix` completes from the puzzle's board, as reported and
/// with the loops it may hold cut out (the same for a path that visits no board twice; the
/// task's own path and the suffix may pass one board each); an error if it is no path to the
/// goal.
pub(super) fn path_lengths(
    spec: &TaskSpec,
    suffix: &[Direction],
) -> Result<(u32, u32), ReplayError> {
    replay_report(spec, suffix).map(|(reported, shortest, _)| (reported, shortest))
}

/// [`path_lengths`], with the path as reported replayed when it visits no board twice.
fn replay_report(
    spec: &TaskSpec,
    suffix: &[Direction],
) -> Result<(u32, u32, Option<Replayed>), ReplayError> {
    let (start, whole) = match start_of(spec) {
        Some(start) => (start, [spec.path.as_slice(), suffix].concat()),
        None => (spec.board, suffix.to_vec()),
    };
    let reported = (spec.path.len() + suffix.len()) as u32;
    let prefix = reported - whole.len() as u32;
    match Replayed::new(start, spec.goal, &whole) {
        Ok(path) => Ok((reported, reported, Some(path))),
        Err(ReplayError::Revisits { .. }) => {
            let cut = without_loops(&start, &whole);
            replay(&start, &spec.goal, &cut)?;
            Ok((reported, prefix + cut.len() as u32, None))
        }
        Err(error) => Err(error),
    }
}

/// A weighted task's path must reach the goal, and cannot be shorter than the proven bound it
/// was given (if it is, a report that raised the bound was false).
fn judge_weighted(spec: &TaskSpec, found: &Option<(Vec<Direction>, Weight)>) -> Verdict {
    let Some((moves, _)) = found else {
        return Verdict::Plausible;
    };
    // An honest weighted search's path has its loops cut (`Solver::shortest_weighted_path`).
    if let Err(error) = replay(&spec.board, &spec.goal, moves) {
        return Verdict::Impossible(format!(
            "a worker reported weighted moves that are no path to the goal: {error}"
        ));
    }
    match moves.len() as u32 {
        length if length < spec.bound => Verdict::Shorter(length),
        _ => Verdict::Plausible,
    }
}
