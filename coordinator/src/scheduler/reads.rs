//! Answers read from the store alone, without the scheduler's lock: a stored solution or
//! bounded path for a board, a batch's items (all, or those in one state), the lines a retry
//! submits again, the finished batches a prune would remove.

use tilesolve::{parse_board, Board};

use super::intake::parse_goal;
use super::types::SchedulerError;
use crate::store::{ItemStatus, Store, StoredBatch, StoredBounded, StoredItem, StoredSolution};

/// Where an item stands, as a filter names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemState {
    Queued,
    Solved,
    Bounded,
    Failed,
    Cancelled,
}

impl ItemState {
    pub const ALL: [ItemState; 5] = [
        ItemState::Queued,
        ItemState::Solved,
        ItemState::Bounded,
        ItemState::Failed,
        ItemState::Cancelled,
    ];

    /// The state named `name` (`queued`, `solved`, `bounded`, `failed`, `cancelled`); the
    /// reason names the field `field` and the choices.
    pub fn parse(field: &str, name: &str) -> Result<ItemState, SchedulerError> {
        ItemState::ALL
            .into_iter()
            .find(|state| state.name() == name)
            .ok_or_else(|| {
                SchedulerError::InvalidArgument(format!(
                    "{field}: '{}' is not an item state: queued, solved, bounded, failed or \
                     cancelled",
                    tilesolve::excerpt::excerpt(name)
                ))
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            ItemState::Queued => "queued",
            ItemState::Solved => "solved",
            ItemState::Bounded => "bounded",
            ItemState::Failed => "failed",
            ItemState::Cancelled => "cancelled",
        }
    }

    /// The states a retry asks for: failed, cancelled, or (neither) both.
    pub fn retried(failed: bool, cancelled: bool) -> Vec<ItemState> {
        match (failed, cancelled) {
            (true, false) => vec![ItemState::Failed],
            (false, true) => vec![ItemState::Cancelled],
            _ => vec![ItemState::Failed, ItemState::Cancelled],
        }
    }

    pub fn of(status: &ItemStatus) -> ItemState {
        match status {
            ItemStatus::Queued => ItemState::Queued,
            ItemStatus::Solved(_) => ItemState::Solved,
            ItemStatus::Bounded(_) => ItemState::Bounded,
            ItemStatus::Failed(_) => ItemState::Failed,
            ItemStatus::Cancelled => ItemState::Cancelled,
        }
    }
}

/// What a retry of `batch` submits: the batch as stored, and a line for each of its items in
/// one of `states`, in order (its board, or the text of a line that held none, with facts
/// naming where it came from: `retry_of=3 line=17`). Refused when no item is in those states.
pub fn retry_lines(
    store: &Store,
    batch: u64,
    states: &[ItemState],
) -> Result<(StoredBatch, Vec<String>), SchedulerError> {
    let stored = store
        .batch(batch)?
        .ok_or(SchedulerError::UnknownBatch(batch))?;
    let lines: Vec<String> = store
        .items(batch)?
        .into_iter()
        .filter(|item| states.contains(&ItemState::of(&item.status)))
        .map(|item| {
            let board = item.board.unwrap_or(item.text);
            match item.line {
                Some(line) => format!("{board} # retry_of={batch} line={line}"),
                None => format!("{board} # retry_of={batch}"),
            }
        })
        .collect();
    if lines.is_empty() {
        let names: Vec<&str> = states.iter().map(|state| state.name()).collect();
        return Err(SchedulerError::InvalidArgument(format!(
            "batch {batch} has no {} items: nothing to retry",
            names.join(" or ")
        )));
    }
    Ok((stored, lines))
}

/// A query's board and its goal, as a client typed them.
fn query_boards(board: &str, goal: &str) -> Result<(Board, Board), SchedulerError> {
    let board =
        parse_board(board).map_err(|e| SchedulerError::InvalidArgument(format!("board: {e}")))?;
    let goal = parse_goal(goal)?.for_shape(board.shape());
    Ok((board, goal))
}

/// A stored solution, replayed before it is returned.
pub fn query(
    store: &Store,
    board: &str,
    goal: &str,
) -> Result<Option<StoredSolution>, SchedulerError> {
    let (board, goal) = query_boards(board, goal)?;
    let stored = store.solution(&goal, &board)?;
    Ok(stored.filter(|s| Store::verified(&goal, &board, s).is_some()))
}

/// Without a stored solution: the path a limited search stored for the board, replayed, with
/// the lower bound proven so far (its search's nodes and seconds are not kept).
pub fn query_bounded(
    store: &Store,
    board: &str,
    goal: &str,
) -> Result<Option<StoredBounded>, SchedulerError> {
    let (board, goal) = query_boards(board, goal)?;
    let Some(state) = store.search_state(&goal, &board)? else {
        return Ok(None);
    };
    let Some(best) = state.best else {
        return Ok(None);
    };
    let replayed = tilesolve::moves::moves_from_string(&best.moves)
        .and_then(|moves| tilesolve::moves::replay(&board, &goal, &moves).ok());
    Ok(replayed.map(|tiles| StoredBounded {
        length: tiles.len() as u32,
        moves: best.moves,
        tiles,
        lower_bound: state.lower_bound,
        weight_percent: best.weight_percent,
        nodes: 0,
        seconds: 0.0,
        heuristic: String::new(),
        reason: "stored by a limited search: the optimal search resumes from its lower bound"
            .into(),
        workers: state.workers,
    }))
}

/// A batch's items, in order.
pub fn items(store: &Store, batch: u64) -> Result<Vec<StoredItem>, SchedulerError> {
    store
        .batch(batch)?
        .ok_or(SchedulerError::UnknownBatch(batch))?;
    Ok(store.items(batch)?)
}

/// The batch as submitted, and up to `limit` of its items from index `start` on, with their
/// indices (a page of 10,000 items took the lock from every worker for milliseconds).
pub fn items_page(
    store: &Store,
    batch: u64,
    start: u32,
    limit: usize,
) -> Result<(StoredBatch, Vec<(u32, StoredItem)>), SchedulerError> {
    let stored = store
        .batch(batch)?
        .ok_or(SchedulerError::UnknownBatch(batch))?;
    Ok((stored, store.items_page(batch, start, limit)?))
}

/// Finished batches submitted before `cutoff_unix_ms`, oldest first, up to `count` after the
/// batch `after`: what a prune removes, a page at a time.
pub fn finished_before(
    store: &Store,
    cutoff_unix_ms: u64,
    after: Option<u64>,
    count: usize,
) -> Result<(Vec<u64>, Option<u64>), SchedulerError> {
    let page = store.batches_page(after, count, false)?;
    // Every page is read: ids follow submission, but a restored batch keeps the time it was
    // first submitted (`tilesolve import`), so a later id may be older.
    let last = (page.len() == count)
        .then(|| page.last().map(|b| b.id))
        .flatten();
    let old = page
        .iter()
        .filter(|b| b.submitted_unix_ms < cutoff_unix_ms && b.finished.is_some())
        .map(|b| b.id)
        .collect();
    Ok((old, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::BatchFigures;

    /// A restored batch keeps the time it was first submitted: retention finds it old though a
    /// newer batch came before it, on any page.
    #[test]
    fn a_restored_batch_older_than_those_before_it_is_found_old() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (day, now) = (86_400_000, 100 * 86_400_000);
        // Five new batches, then one restored from 30 days ago, then one new again.
        let times = [now, now, now, now, now, now - 30 * day, now];
        let mut restored = 0;
        for submitted in times {
            let id = store.next_batch_id().unwrap();
            if submitted < now {
                restored = id;
            }
            let mut batch = StoredBatch::new(id, 0, "default", "blank-last", submitted);
            batch.finished = Some(BatchFigures {
                solved: 0,
                failed: 0,
                cancelled: 0,
                nodes: 0,
                seconds: 0.0,
            });
            store.put_batch(&batch).unwrap();
        }
        let cutoff = now - 7 * day;
        let (mut old, mut after) = (Vec::new(), None);
        loop {
            let (page, last) = finished_before(&store, cutoff, after, 2).unwrap();
            old.extend(page);
            match last {
                Some(last) => after = Some(last),
                None => break,
            }
        }
        assert_eq!(old, vec![restored]);
    }
}
