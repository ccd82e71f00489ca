//! Answers read from the store alone, without the scheduler's lock: a stored solution or
//! bounded path for a board, a batch's items, the finished batches a prune would remove.

use tilesolve::{parse_board, Board};

use super::intake::parse_goal;
use super::types::SchedulerError;
use crate::store::{Store, StoredBatch, StoredBounded, StoredItem, StoredSolution};

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
    // Ids are handed out in submission order: past the first batch submitted after the
    // cutoff, none is older.
    let reached_cutoff = page.iter().any(|b| b.submitted_unix_ms >= cutoff_unix_ms);
    let last = (page.len() == count && !reached_cutoff)
        .then(|| page.last().map(|b| b.id))
        .flatten();
    let old = page
        .iter()
        .take_while(|b| b.submitted_unix_ms < cutoff_unix_ms)
        .filter(|b| b.finished.is_some())
        .map(|b| b.id)
        .collect();
    Ok((old, last))
}
