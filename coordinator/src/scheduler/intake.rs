//! A batch's way in: the heuristic and goal names of a request, and its lines read into items
//! (bad lines become failed items naming the line and the reason; boards already solved are
//! answered from the store).

use std::time::{SystemTime, UNIX_EPOCH};

use tilesolve::batch_file::BatchLine;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::{moves_from_string, moves_to_string, replay};
use tilesolve::{parse_board, Board, BoardError, Direction, Goal};

use super::SchedulerError;
use crate::store::{ItemStatus, Store, StoredItem};

/// Longest submitted line text kept with an item that failed to parse.
const MAX_KEPT_TEXT: usize = 200;

/// A request's heuristic name; empty means `default`.
pub(super) fn parse_heuristic(name: &str) -> Result<HeuristicChoice, SchedulerError> {
    let name = if name.is_empty() { "default" } else { name };
    name.parse()
        .map_err(|e| SchedulerError::InvalidArgument(format!("heuristic: {e}")))
}

/// A request's goal; empty means the default goal.
pub(super) fn parse_goal(text: &str) -> Result<Goal, SchedulerError> {
    if text.is_empty() {
        return Ok(Goal::BlankLast);
    }
    text.parse()
        .map_err(|e| SchedulerError::InvalidArgument(format!("goal: {e}")))
}

/// A batch's items as read from its lines.
pub(super) struct Items {
    pub(super) items: Vec<StoredItem>,
    /// Lines that are not a solvable board.
    pub(super) invalid: u32,
    /// Boards answered from the store.
    pub(super) from_store: u32,
}

/// A line's board and the goal it is solved towards, or why the line is invalid.
fn board_and_goal(line: &BatchLine<'_>, goal: Goal) -> Result<(Board, Board), BoardError> {
    parse_board(line.board).and_then(|board| {
        let goal = goal.for_side(board.side());
        board.check_solvable(&goal).map(|()| (board, goal))
    })
}

/// What intake would refuse in `lines`, line by line (number, reason), without submitting:
/// the same checks as [`read_items`], so a page can show them before the batch is sent.
pub(super) fn line_errors(lines: &[String], goal: Goal) -> Vec<(u32, String)> {
    let mut errors = Vec::new();
    for (number, raw) in lines.iter().enumerate() {
        let Some(line) = BatchLine::read(number + 1, raw) else {
            continue;
        };
        let reason = match board_and_goal(&line, goal) {
            Err(error) => Some(error.to_string()),
            Ok((board, goal)) => line
                .fact("moves")
                .and_then(|text| claimed_moves(&board, &goal, text).err())
                .map(|reason| format!("moves=: {reason}")),
        };
        if let Some(reason) = reason {
            errors.push((line.number as u32, reason));
        }
    }
    errors
}

/// Reads every board line of a batch (blank and comment lines are skipped).
pub(super) fn read_items(
    lines: &[String],
    goal: Goal,
    store: &Store,
) -> Result<Items, SchedulerError> {
    let mut read = Items {
        items: Vec::new(),
        invalid: 0,
        from_store: 0,
    };
    for (number, raw) in lines.iter().enumerate() {
        let Some(line) = BatchLine::read(number + 1, raw) else {
            continue;
        };
        let mut item = StoredItem {
            text: kept_text(line.board),
            line: Some(line.number as u32),
            board: None,
            goal: None,
            status: ItemStatus::Queued,
            claimed: None,
        };
        match board_and_goal(&line, goal) {
            Ok((board, goal)) => {
                item.board = Some(board.to_string());
                item.goal = Some(goal.to_string());
                if let Some(text) = line.fact("moves") {
                    match claimed_moves(&board, &goal, text) {
                        Ok(moves) => item.claimed = Some(moves_to_string(&moves)),
                        Err(reason) => {
                            item.status = ItemStatus::Failed(format!(
                                "line {}: moves=: {reason}",
                                line.number
                            ));
                            read.invalid += 1;
                            read.items.push(item);
                            continue;
                        }
                    }
                }
                if let Some(stored) = store.solution(&goal, &board)? {
                    if Store::verified(&goal, &board, &stored).is_some() {
                        item.status = ItemStatus::Solved(stored);
                        read.from_store += 1;
                    }
                }
            }
            Err(error) => {
                item.status = ItemStatus::Failed(format!("line {}: {error}", line.number));
                read.invalid += 1;
            }
        }
        read.items.push(item);
    }
    Ok(read)
}

/// Moves a line claims take `board` to `goal`, replayed.
fn claimed_moves(board: &Board, goal: &Board, text: &str) -> Result<Vec<Direction>, String> {
    let moves = moves_from_string(text).ok_or("not letters U, L, R, D")?;
    replay(board, goal, &moves).map_err(|error| error.to_string())?;
    Ok(moves)
}

/// The sizes of the boards of a batch that will be searched (they parse and can reach `goal`),
/// each once: a batch of only bad lines needs no pattern database.
pub(super) fn sides(lines: &[String], goal: Goal) -> Vec<usize> {
    let mut sides: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(number, raw)| BatchLine::read(number + 1, raw))
        .filter_map(|line| parse_board(line.board).ok())
        .filter(|board| board.check_solvable(&goal.for_side(board.side())).is_ok())
        .map(|board| board.side())
        .collect();
    sides.sort_unstable();
    sides.dedup();
    sides
}

/// The submitted text kept with an item: a hostile megabyte line is not stored whole.
fn kept_text(text: &str) -> String {
    match text.char_indices().nth(MAX_KEPT_TEXT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

pub(super) fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
