//! A batch's way in: the heuristic and goal names of a request, and its lines read into items
//! (bad lines become failed items naming the line and the reason; boards already solved are
//! answered from the store).

use std::time::{SystemTime, UNIX_EPOCH};

use tilesolve::batch_file::{BatchLine, MAX_LINE_BYTES};
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::{moves_from_string, moves_to_string, replay};
use tilesolve::pdb::Preset;
use tilesolve::{Board, Direction, Goal, Shape};

use super::types::{SchedulerError, Submitted};
use super::{batches, Scheduler};
use crate::store::{ItemLimits, ItemStatus, Store, StoredBatch, StoredItem, EMBEDDED_ITEMS_MAX};
use tilesolve::proto::MAX_BATCH_LINES;

/// Items of a batch stored and started at a time ([`Scheduler::start_part`]): workers get the
/// first tasks once one part is in, not the whole batch (10,000 boards took 0.14 s to take in
/// while every worker waited), and the lock is held a few milliseconds at a time.
pub(super) const INTAKE_PART: usize = 1_000;

/// A batch's lines read and checked against the store, before the scheduler sees it
/// ([`Scheduler::read_batch`], no lock held).
pub struct ReadBatch {
    heuristic: HeuristicChoice,
    goal: Goal,
    items: Items,
    limits: ItemLimits,
}

impl ReadBatch {
    /// The batch with `limits` on what each item may spend (none by default).
    pub fn with_limits(self, limits: ItemLimits) -> ReadBatch {
        ReadBatch { limits, ..self }
    }
}

/// A batch being taken in: its id handed out and its counts open, its items stored
/// ([`Intake::store_part`], no lock held) and started ([`Scheduler::start_part`]) a part at a
/// time. Nothing is acknowledged until every part has started and the store is flushed.
pub struct Intake {
    batch: u64,
    heuristic: HeuristicChoice,
    goal: String,
    limits: ItemLimits,
    items: Vec<StoredItem>,
    submitted_unix_ms: u64,
    /// Items stored, and items started, so far.
    stored: usize,
    started: usize,
    /// Whether items start as their part is stored; else (some wait for tables) all at once.
    in_parts: bool,
    submitted: Submitted,
}

impl Intake {
    pub fn batch(&self) -> u64 {
        self.batch
    }

    pub fn submitted(&self) -> Submitted {
        self.submitted
    }

    /// Stores the next part's items; before the last part, also the batch's record (a batch
    /// can only end once its last part has started, and its end writes its figures into the
    /// record). False when every item is stored.
    pub fn store_part(&mut self, store: &Store) -> Result<bool, SchedulerError> {
        let total = self.items.len();
        if self.stored == total {
            return Ok(false);
        }
        let record = || StoredBatch {
            limits: self.limits,
            ..StoredBatch::new(
                self.batch,
                total,
                &self.heuristic.to_string(),
                &self.goal,
                self.submitted_unix_ms,
            )
        };
        if total <= EMBEDDED_ITEMS_MAX as usize {
            store.put_small_batch(&record(), &self.items)?;
            self.stored = total;
            return Ok(true);
        }
        let end = match self.in_parts {
            true => total.min(self.stored + INTAKE_PART),
            false => total,
        };
        store.put_items(
            self.batch,
            self.stored as u32,
            &self.items[self.stored..end],
        )?;
        if end == total {
            store.put_batch(&record())?;
        }
        self.stored = end;
        Ok(true)
    }

    /// Whether it is stored in the batch log alone, with no part in sled
    /// ([`Store::put_small_batch`]).
    pub fn is_one_record(&self) -> bool {
        self.items.len() <= EMBEDDED_ITEMS_MAX as usize
    }

    /// Queued items not started yet.
    fn queued_left(&self) -> usize {
        queued(&self.items[self.started..])
    }
}

fn queued(items: &[StoredItem]) -> usize {
    items
        .iter()
        .filter(|item| item.status == ItemStatus::Queued)
        .count()
}

impl Scheduler {
    /// Reads a batch's lines into items (bad lines become failed items naming the line and the
    /// reason; boards already solved are answered from `store`).
    pub fn read_batch(
        store: &Store,
        lines: &[String],
        heuristic: &str,
        goal: &str,
    ) -> Result<ReadBatch, SchedulerError> {
        if lines.len() > MAX_BATCH_LINES {
            return Err(SchedulerError::ResourceExhausted(format!(
                "a batch may hold at most {MAX_BATCH_LINES} lines, not {}",
                lines.len()
            )));
        }
        if let Some((index, line)) = lines
            .iter()
            .enumerate()
            .find(|(_, line)| line.len() > MAX_LINE_BYTES)
        {
            return Err(SchedulerError::InvalidArgument(format!(
                "line {} is {} bytes long; a batch line may be at most {MAX_LINE_BYTES}",
                index + 1,
                line.len()
            )));
        }
        let choice = parse_heuristic(heuristic)?;
        let goal = parse_goal(goal)?;
        if let Some(preset) = choice.preset() {
            check_shapes(lines, preset, &choice)?;
        }
        let heuristic = choice;
        let items = read_items(lines, goal, store)?;
        if items.items.is_empty() {
            return Err(SchedulerError::InvalidArgument(
                "the batch holds no boards (only blank or comment lines)".into(),
            ));
        }
        if items.invalid as usize == items.items.len() {
            // Nothing in it can be solved: storing it would only keep the garbage.
            let shown: Vec<String> = items
                .items
                .iter()
                .take(3)
                .filter_map(|item| match &item.status {
                    ItemStatus::Failed(reason) => Some(reason.clone()),
                    _ => None,
                })
                .collect();
            return Err(SchedulerError::InvalidArgument(format!(
                "every one of the batch's {} board lines is invalid ({}{})",
                items.items.len(),
                shown.join("; "),
                if items.items.len() > shown.len() {
                    "; ..."
                } else {
                    ""
                }
            )));
        }
        Ok(ReadBatch {
            heuristic,
            goal,
            items,
            limits: ItemLimits::default(),
        })
    }

    /// Accepts a read batch: refuses it if it would pass the pending limit or needs tables
    /// nobody can supply, hands out its id and opens its counts. Nothing is stored yet.
    pub fn open_batch(&mut self, read: ReadBatch) -> Result<Intake, SchedulerError> {
        let ReadBatch {
            heuristic,
            goal,
            items,
            limits,
        } = read;
        let queued = queued(&items.items);
        self.check_capacity(queued)?;
        self.check_tables_obtainable(&items.items, heuristic)?;
        let in_parts = self.solvers_ready(&items.items, heuristic)?;
        // Ids handed out by this process count too: an intake stores its record last.
        let batch = self.store.next_batch_id()?.max(self.last_batch_id + 1);
        self.last_batch_id = batch;
        self.batches.open(batch, batches::counts(&items.items));
        self.batches.set_limits(batch, limits);
        self.intake_pending += queued;
        Ok(Intake {
            batch,
            goal: goal.to_string(),
            limits,
            submitted_unix_ms: now_unix_ms(),
            stored: 0,
            started: 0,
            in_parts,
            submitted: Submitted {
                batch,
                items: items.items.len() as u32,
                invalid: items.invalid,
                from_store: items.from_store,
            },
            items: items.items,
            heuristic,
        })
    }

    /// Starts the items of `intake` stored since the last call (those whose tables are missing
    /// wait for them). Returns whether every item has started.
    pub fn start_part(&mut self, intake: &mut Intake) -> Result<bool, SchedulerError> {
        let part = intake.started..intake.stored;
        self.intake_pending -= queued(&intake.items[part.clone()]);
        intake.started = intake.stored;
        self.start_or_wait(
            intake.batch,
            part.start as u32,
            &intake.items[part],
            intake.heuristic,
        )?;
        let done = intake.started == intake.items.len();
        if done && queued(&intake.items) == 0 {
            // Every line answered from the store or invalid: done as it is acknowledged.
            self.close_batch(intake.batch)?;
        }
        Ok(done)
    }

    /// Forgets a batch whose intake failed part way: it was never acknowledged, so its
    /// started puzzles are withdrawn and its counts dropped.
    pub fn abandon(&mut self, intake: &Intake) {
        let batch = intake.batch;
        let started: Vec<_> = self
            .puzzles
            .range((batch, 0)..=(batch, u32::MAX))
            .map(|(&id, _)| id)
            .collect();
        for puzzle in started {
            self.cancel_tasks(puzzle);
            self.puzzles.remove(&puzzle);
        }
        self.waiting.remove(&batch);
        self.batches.close(batch);
        self.intake_pending -= intake.queued_left();
    }
}

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

/// Refuses a batch holding a board the pattern database `choice` (`preset`) cannot estimate,
/// naming the first such line: the outcome would depend on what the store happens to hold.
fn check_shapes(
    lines: &[String],
    preset: Preset,
    choice: &HeuristicChoice,
) -> Result<(), SchedulerError> {
    let mismatch = lines
        .iter()
        .enumerate()
        .filter_map(|(number, raw)| BatchLine::read(number + 1, raw))
        .find_map(|line| {
            let shape = line.read_board(None).ok()?.shape();
            (!preset.fits(shape)).then_some((line.number, shape))
        });
    match mismatch {
        Some((number, shape)) => Err(SchedulerError::InvalidArgument(format!(
            "line {number}: heuristic {choice} is for {}, and this board is {shape} (submit each size apart, or use `default`, which fits each size)",
            preset.fits_what()
        ))),
        None => Ok(()),
    }
}

/// A batch's items as read from its lines.
pub(super) struct Items {
    pub(super) items: Vec<StoredItem>,
    /// Lines that are not a solvable board.
    pub(super) invalid: u32,
    /// Boards answered from the store.
    pub(super) from_store: u32,
}

/// A line's board (its shape from a `size=` fact, its rows in braces or, for a square, its
/// count of tiles) and the goal of that shape it is solved towards, or why the line is invalid.
fn board_and_goal(line: &BatchLine<'_>, goal: Goal) -> Result<(Board, Board), String> {
    let board = line.read_board(None).map_err(|e| e.to_string())?;
    let goal = goal.for_shape(board.shape());
    board
        .check_solvable(&goal)
        .map(|()| (board, goal))
        .map_err(|e| e.to_string())
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
            Err(error) => Some(error),
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

/// The shapes of the boards of a batch that will be searched (they parse and can reach
/// `goal`), each once: a batch of only bad lines needs no pattern database.
pub(super) fn shapes(lines: &[String], goal: Goal) -> Vec<Shape> {
    let mut shapes: Vec<Shape> = lines
        .iter()
        .enumerate()
        .filter_map(|(number, raw)| BatchLine::read(number + 1, raw))
        .filter_map(|line| board_and_goal(&line, goal).ok())
        .map(|(board, _)| board.shape())
        .collect();
    shapes.sort_unstable();
    shapes.dedup();
    shapes
}

/// The submitted text kept with an item: a hostile megabyte line is not stored whole.
fn kept_text(text: &str) -> String {
    match text.char_indices().nth(MAX_KEPT_TEXT) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// Now, in ms since 1970 (0 before it): how the store dates batches and history samples.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
