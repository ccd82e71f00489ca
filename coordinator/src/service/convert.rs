//! Conversions between `tilesolve.v1` messages and the scheduler's types, and the one
//! conversion from scheduler errors to gRPC statuses.

use tilesolve::heuristic::Weight;
use tilesolve::moves::{moves_from_string, moves_to_string};
use tilesolve::proto::v1 as pb;
use tilesolve::search::PartSize;
use tilesolve::{Board, Direction};
use tonic::Status;

use crate::scheduler::{BatchProgress, SchedulerError, TaskOutcome, TaskReport, TaskSpec};
use crate::store::{
    ItemLimits, ItemStatus, Priority, Store, StoredBounded, StoredItem, StoredSolution,
};

/// The one conversion from scheduler errors to gRPC statuses.
impl From<SchedulerError> for Status {
    fn from(error: SchedulerError) -> Status {
        match error {
            SchedulerError::InvalidArgument(_) => Status::invalid_argument(error.to_string()),
            SchedulerError::UnknownBatch(_) | SchedulerError::UnknownWorker(_) => {
                Status::not_found(error.to_string())
            }
            SchedulerError::ResourceExhausted(_) => Status::resource_exhausted(error.to_string()),
            SchedulerError::PermissionDenied(_) => Status::permission_denied(error.to_string()),
            SchedulerError::FailedPrecondition(_) => Status::failed_precondition(error.to_string()),
            SchedulerError::Store(ref store) if Store::is_disk_full(store) => {
                Status::resource_exhausted(format!(
                    "the coordinator's disk is full ({error}): it stops serving and starts again \
                     once its data directory takes writes; retry then"
                ))
            }
            SchedulerError::Store(_) | SchedulerError::Pdb(_) | SchedulerError::Internal(_) => {
                Status::internal(error.to_string())
            }
        }
    }
}

pub(super) fn status_message(progress: BatchProgress) -> pb::BatchStatus {
    let state = progress.state().to_string();
    let eta = progress.eta;
    pb::BatchStatus {
        batch_id: progress.batch,
        total: progress.total,
        solved: progress.solved,
        failed: progress.failed,
        bounded: progress.bounded,
        done: progress.done,
        bounds: progress.bounds,
        nodes: progress.nodes,
        nodes_per_second: progress.nodes_per_second,
        workers: progress.workers,
        preparing: progress.preparing.unwrap_or_default(),
        cancelled: progress.cancelled,
        submitted_unix_ms: progress.submitted_unix_ms,
        heuristic: progress.heuristic,
        goal: progress.goal,
        state,
        eta_seconds: eta.map(|e| e.middle().as_secs_f64()),
        eta_low_seconds: eta.map(|e| e.low.as_secs_f64()),
        eta_high_seconds: eta.map(|e| e.high.as_secs_f64()),
        priority: progress.priority.get().into(),
        items_cancelled: progress.items_cancelled,
        retry_of: progress.retry_of.unwrap_or(0),
        owner: progress.owner.map(String::from).unwrap_or_default(),
    }
}

/// Whether a results page carries each answer's tiles (`GetBatchRequest.without_tiles`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Tiles {
    Sent,
    Left,
}

/// An item of a results page.
pub(super) fn item_message(index: u32, item: StoredItem, tiles: Tiles) -> pb::ItemResult {
    let outcome = match item.status {
        ItemStatus::Queued => None,
        ItemStatus::Solved(mut stored) => {
            if tiles == Tiles::Left {
                stored.tiles = Vec::new();
            }
            Some(pb::item_result::Outcome::Solution(solution_message(stored)))
        }
        ItemStatus::Failed(reason) => Some(pb::item_result::Outcome::Error(reason)),
        ItemStatus::Cancelled => Some(pb::item_result::Outcome::Cancelled(true)),
        ItemStatus::Bounded(mut stored) => {
            if tiles == Tiles::Left {
                stored.tiles = Vec::new();
            }
            Some(pb::item_result::Outcome::Bounded(bounded_message(stored)))
        }
    };
    pb::ItemResult {
        index,
        line: item.line.unwrap_or(0),
        text: item.text,
        board: item.board.unwrap_or_default(),
        goal: item.goal.unwrap_or_default(),
        outcome,
    }
}

pub(super) fn solution_message(stored: StoredSolution) -> pb::SolutionRecord {
    pb::SolutionRecord {
        length: stored.length,
        moves: stored.moves,
        tiles: stored.tiles.into_iter().map(u32::from).collect(),
        nodes: stored.nodes,
        seconds: stored.seconds,
        heuristic: stored.heuristic,
    }
}

/// A submission's limits on each item, checked.
pub(super) fn item_limits(request: &pb::SubmitBatchRequest) -> Result<ItemLimits, Status> {
    ItemLimits::from_request(
        request.time_limit_seconds,
        request.node_limit,
        request.suboptimal_percent,
    )
    .map_err(Status::invalid_argument)
}

/// How far ahead of this coordinator's clock a restored batch's submission time may be (the
/// two hosts' clocks differ a little).
const CLOCK_SKEW_MS: u64 = 60_000;

/// A request's `priority`, checked (0: the default).
pub(super) fn priority(priority: u32) -> Result<Priority, Status> {
    Priority::from_request(priority).map_err(Status::invalid_argument)
}

/// A request's `submitted_unix_ms`, checked: None for 0 (now), refused in the future.
pub(super) fn first_submitted(submitted_unix_ms: u64) -> Result<Option<u64>, Status> {
    let now = crate::scheduler::now_unix_ms();
    match submitted_unix_ms {
        0 => Ok(None),
        at if at <= now.saturating_add(CLOCK_SKEW_MS) => Ok(Some(at)),
        at => Err(Status::invalid_argument(format!(
            "submitted_unix_ms {at} is in the future (this coordinator's clock reads {now}): it is \
             the time a restored batch was first submitted"
        ))),
    }
}

pub(super) fn bounded_message(stored: StoredBounded) -> pb::BoundedRecord {
    pb::BoundedRecord {
        length: stored.length,
        moves: stored.moves,
        tiles: stored.tiles.into_iter().map(u32::from).collect(),
        lower_bound: stored.lower_bound,
        weight: f64::from(stored.weight_percent) / 100.0,
        nodes: stored.nodes,
        seconds: stored.seconds,
        heuristic: stored.heuristic,
        reason: stored.reason,
    }
}

fn parse_moves(text: &str) -> Result<Vec<Direction>, Status> {
    moves_from_string(text).ok_or_else(|| {
        Status::invalid_argument(format!("moves '{text}' must be letters U, D, L, R"))
    })
}

/// The messages of a poll's tasks. Their goal is nearly always one (a batch's), so its text is
/// written once and copied, not written again for every task.
pub(super) fn task_messages(tasks: Vec<TaskSpec>) -> Vec<pb::Task> {
    let mut goal_text: Option<(Board, String)> = None;
    tasks
        .into_iter()
        .map(|spec| {
            let goal = match &goal_text {
                Some((goal, text)) if *goal == spec.goal => text.clone(),
                _ => {
                    let text = spec.goal.to_string();
                    goal_text = Some((spec.goal, text.clone()));
                    text
                }
            };
            task_message(spec, goal)
        })
        .collect()
}

/// The message of one task, its goal's text given.
fn task_message(spec: TaskSpec, goal: String) -> pb::Task {
    pb::Task {
        task_id: spec.id,
        board: spec.board.to_string(),
        goal,
        heuristic: spec.heuristic.to_string(),
        path: moves_to_string(&spec.path),
        bound: spec.bound,
        iterate: spec.iterate,
        node_budget: spec.node_budget,
        profile_depth: spec.profile_depth,
        batch_id: spec.puzzle.0,
        puzzle: spec.puzzle.1 + 1,
        traceparent: String::new(),
        weighted: spec.weighted.map(|weighted| pb::WeightedSearch {
            weight_percent: weighted.weight.map_or(0, |weight| weight.percent()),
            seconds: weighted.time_limit.map_or(0.0, |limit| limit.as_secs_f64()),
        }),
        priority: spec.priority.get().into(),
    }
}

pub(super) fn report_of(result: pb::TaskResult) -> Result<TaskReport, Status> {
    use pb::task_result::Outcome;
    let outcome = match result.outcome {
        Some(Outcome::Found(moves)) => TaskOutcome::Found(parse_moves(&moves)?),
        Some(Outcome::NextBound(bound)) => TaskOutcome::Exceeded(bound),
        Some(Outcome::BudgetSpentAt(bound)) => TaskOutcome::BudgetSpent(bound),
        Some(Outcome::Error(reason)) => TaskOutcome::Failed(reason),
        Some(Outcome::Split(split)) => TaskOutcome::Split {
            children: parse_moves(&split.moves)?,
            pruned_min_f: split.pruned_min_f,
        },
        Some(Outcome::HandedBack(handed)) => TaskOutcome::HandedBack {
            paths: handed
                .paths
                .iter()
                .map(|path| parse_moves(path))
                .collect::<Result<_, _>>()?,
            searched_min_f: match handed.searched_min_f {
                0 => u32::MAX,
                bound => bound,
            },
        },
        Some(Outcome::Returned(_)) => TaskOutcome::Returned,
        Some(Outcome::Weighted(path)) if !path.found => TaskOutcome::Weighted(None),
        Some(Outcome::Weighted(path)) => {
            let weight = Weight::new(path.weight_percent, 100).ok_or_else(|| {
                Status::invalid_argument(format!(
                    "task {} weight {} hundredths is not one",
                    result.task_id, path.weight_percent
                ))
            })?;
            TaskOutcome::Weighted(Some((parse_moves(&path.moves)?, weight)))
        }
        None => {
            return Err(Status::invalid_argument(format!(
                "task {} result has no outcome",
                result.task_id
            )))
        }
    };
    let parts = result
        .parts
        .into_iter()
        .map(|part| {
            Ok(PartSize {
                moves: parse_moves(&part.moves)?,
                expanded: part.nodes,
                micros: part.micros,
            })
        })
        .collect::<Result<Vec<_>, Status>>()?;
    let seconds = |value: f64| {
        if value.is_finite() {
            value.max(0.0)
        } else {
            0.0
        }
    };
    Ok(TaskReport {
        task: result.task_id,
        outcome,
        nodes: result.nodes,
        seconds: seconds(result.seconds),
        queued_seconds: seconds(result.queued_seconds),
        parts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_submission_time_is_taken_unless_it_is_in_the_future() {
        let now = crate::scheduler::now_unix_ms();
        assert_eq!(first_submitted(0).unwrap(), None);
        assert_eq!(first_submitted(1_000).unwrap(), Some(1_000));
        assert_eq!(first_submitted(now).unwrap(), Some(now));
        let refused = first_submitted(now + 3_600_000).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(
            refused.message().starts_with(&format!(
                "submitted_unix_ms {} is in the future",
                now + 3_600_000
            )),
            "{}",
            refused.message()
        );
    }
}
