//! A batch's way in: the heuristic and goal names of a request, and its lines read into items
//! (bad lines become failed items naming the line and the reason; boards already solved are
//! answered from the store).

use std::time::{SystemTime, UNIX_EPOCH};

use tilesolve::batch_file::{BatchLine, MAX_LINE_BYTES};
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::moves::{moves_from_string, moves_to_string, replay, without_loops};
use tilesolve::pdb::Preset;
use tilesolve::{Board, Direction, Goal, Shape};

use std::collections::HashSet;

use tilesolve::parse_board;

use super::batches::{self, Batches};
use super::types::{SchedulerError, SolverKey, Submitted};
use super::Scheduler;
use crate::owners::OwnerName;
use crate::store::{
    ItemLimits, ItemStatus, Priority, Store, StoreError, StoredBatch, StoredItem,
    EMBEDDED_ITEMS_MAX,
};
use tilesolve::proto::MAX_BATCH_LINES;

/// Items of a batch stored and started at a time ([`Scheduler::start_part`]): workers get the
/// first tasks once one part is in, not the whole batch (10,000 boards took 0.14 s to take in
/// while every worker waited), and the lock is held a few milliseconds at a time.
pub(super) const INTAKE_PART: usize = 1_000;

/// A batch's lines read and checked against the store, before the scheduler sees it
/// ([`read_batch`], no lock held).
pub struct ReadBatch {
    heuristic: HeuristicChoice,
    goal: Goal,
    items: Items,
    terms: BatchTerms,
}

/// What a submission asks for beyond its boards, checked at the edge.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchTerms {
    /// What each item may spend (none by default).
    pub limits: ItemLimits,
    pub priority: Priority,
    /// When it was first submitted, for a restored batch; None: now, as it is opened.
    pub submitted_unix_ms: Option<u64>,
    /// The batch whose items it submits again, for a retry.
    pub retry_of: Option<u64>,
    /// Whose it is: the owner whose token submitted it (None: the operator).
    pub owner: Option<OwnerName>,
    /// Where to POST a notice when it ends.
    pub notify: Option<String>,
}

impl ReadBatch {
    /// The batch with `terms`.
    pub fn with_terms(self, terms: BatchTerms) -> ReadBatch {
        ReadBatch { terms, ..self }
    }

    /// The batch with `limits` on what each item may spend, its other terms as they were.
    pub fn with_limits(mut self, limits: ItemLimits) -> ReadBatch {
        self.terms.limits = limits;
        self
    }
}

/// A batch being taken in: its id handed out and its counts open, its items stored
/// ([`Intake::store_part`], no lock held) and started ([`Scheduler::start_part`]) a part at a
/// time (or held in its backlog). Nothing is acknowledged until every part is in and the store
/// is flushed.
pub struct Intake {
    batch: u64,
    heuristic: HeuristicChoice,
    goal: String,
    limits: ItemLimits,
    priority: Priority,
    retry_of: Option<u64>,
    owner: Option<OwnerName>,
    notify: Option<String>,
    items: Items,
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
        let total = self.items.items.len();
        if self.stored == total {
            return Ok(false);
        }
        let record = || StoredBatch {
            limits: self.limits,
            priority: self.priority,
            retry_of: self.retry_of,
            owner: self.owner.clone(),
            notify: self.notify.clone(),
            ..StoredBatch::new(
                self.batch,
                total,
                &self.heuristic.to_string(),
                &self.goal,
                self.submitted_unix_ms,
            )
        };
        if total <= EMBEDDED_ITEMS_MAX as usize {
            store.put_small_batch(&record(), &self.items.items)?;
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
            &self.items.items[self.stored..end],
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
        self.items.items.len() <= EMBEDDED_ITEMS_MAX as usize
    }

    /// Queued items not started yet.
    pub(super) fn queued_left(&self) -> usize {
        queued(&self.items.items[self.started..])
    }
}

fn queued(items: &[StoredItem]) -> usize {
    items
        .iter()
        .filter(|item| item.status == ItemStatus::Queued)
        .count()
}

/// Reads a batch's lines into items (bad lines become failed items naming the line and the
/// reason; boards already solved are answered from `store`). No lock: the scheduler sees the
/// batch only at [`Scheduler::open_batch`].
pub fn read_batch(
    store: &Store,
    lines: &[String],
    heuristic: HeuristicChoice,
    goal: Goal,
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
    if let Some(preset) = heuristic.preset() {
        check_shapes(lines, preset, &heuristic)?;
    }
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
        terms: BatchTerms::default(),
    })
}

impl ReadBatch {
    /// Its queued items (those neither invalid nor answered from the store).
    pub fn queued(&self) -> usize {
        queued(&self.items.items)
    }

    /// The solvers its queued items need.
    pub(super) fn solver_keys(&self) -> HashSet<SolverKey> {
        solver_keys(
            &self.items.queued(0..self.items.items.len()),
            self.heuristic,
        )
    }

    /// The batch under id `batch`, its counts open in `batches`.
    pub(super) fn open(self, batch: u64, in_parts: bool, batches: &mut Batches) -> Intake {
        let ReadBatch {
            heuristic,
            goal,
            items,
            terms:
                BatchTerms {
                    limits,
                    priority,
                    submitted_unix_ms,
                    retry_of,
                    owner,
                    notify,
                },
        } = self;
        let queued = queued(&items.items);
        batches.open(batch, batches::counts(&items.items), heuristic);
        batches.set_limits(batch, limits);
        batches.set_priority(batch, priority);
        batches.set_owner(batch, owner.clone());
        batches.intake_opened(queued);
        Intake {
            batch,
            goal: goal.to_string(),
            limits,
            priority,
            retry_of,
            owner,
            notify,
            submitted_unix_ms: submitted_unix_ms.unwrap_or_else(now_unix_ms),
            stored: 0,
            started: 0,
            in_parts,
            submitted: Submitted {
                batch,
                items: items.items.len() as u32,
                invalid: items.invalid,
                from_store: items.from_store,
            },
            items,
            heuristic,
        }
    }
}

impl Intake {
    /// The items stored since the last call, with the index of the first, to be started; their
    /// queued ones leave the intake's count in `batches`.
    pub(super) fn next_part(&mut self, batches: &mut Batches) -> (u32, Vec<QueuedItem<'_>>) {
        let part = self.started..self.stored;
        batches.intake_done(queued(&self.items.items[part.clone()]));
        self.started = self.stored;
        (part.start as u32, self.items.queued(part))
    }

    /// Whether every item has been handed to the scheduler (started, waiting or held back).
    pub(super) fn all_started(&self) -> bool {
        self.started == self.items.items.len()
    }

    /// Whether any item is queued (not invalid, not answered from the store).
    pub(super) fn has_queued(&self) -> bool {
        queued(&self.items.items) > 0
    }
}

/// Where a batch's way in takes the scheduler: the service's lock cycle, or a scheduler owned
/// outright ([`super::Owned`]).
pub trait SchedulerAccess {
    /// Runs `step` on the scheduler (and whatever the lock cycle does after it).
    fn with<R>(
        &mut self,
        step: impl FnOnce(&mut Scheduler) -> Result<R, SchedulerError>,
    ) -> Result<R, SchedulerError>;
}

/// Takes a read batch in: opens it ([`Scheduler::open_batch`]), calls `opened` with its id,
/// then stores its items a part at a time without the scheduler (`store`) and starts each part
/// under it ([`Scheduler::start_part`]), so workers solve the first while the rest are stored.
/// A batch whose intake fails part way is abandoned. The only way a batch comes in.
pub fn take_in(
    access: &mut impl SchedulerAccess,
    store: &Store,
    read: ReadBatch,
    opened: impl FnOnce(u64),
) -> Result<Intake, SchedulerError> {
    let mut intake = access.with(|scheduler| scheduler.open_batch(read))?;
    opened(intake.batch());
    let taken_in = (|| {
        while intake.store_part(store)? {
            access.with(|scheduler| scheduler.start_part(&mut intake))?;
        }
        Ok(())
    })();
    if let Err(error) = taken_in {
        access.with(|scheduler| {
            scheduler.abandon(&intake);
            Ok(())
        })?;
        return Err(error);
    }
    Ok(intake)
}

/// The heuristic a stored batch named: its text is the on-disk encoding, parsed as the batch
/// is loaded (resumed, or opened again by a quarantine).
pub(super) fn stored_heuristic(batch: &StoredBatch) -> Result<HeuristicChoice, SchedulerError> {
    let name = if batch.heuristic.is_empty() {
        "default"
    } else {
        &batch.heuristic
    };
    name.parse().map_err(|e| {
        StoreError::Corrupt {
            tree: "batches",
            reason: format!("batch {}: heuristic: {e}", batch.id),
        }
        .into()
    })
}

/// A batch item as the scheduler starts it: as stored, with its board and goal parsed once
/// (by intake from the line, or from the stored text as the batch is loaded); None for a line
/// that was not a board.
#[derive(Clone, Copy)]
pub(super) struct QueuedItem<'a> {
    pub(super) item: &'a StoredItem,
    pub(super) boards: Option<(Board, Board)>,
}

impl<'a> QueuedItem<'a> {
    /// An item read back from the store (of `batch`, at `index`): its board and goal parsed.
    pub(super) fn stored(
        batch: u64,
        index: u32,
        item: &'a StoredItem,
    ) -> Result<QueuedItem<'a>, SchedulerError> {
        QueuedItem::stored_after(batch, index, item, &mut None)
    }

    /// [`QueuedItem::stored`], its goal taken from `last_goal` (the goal text parsed last, and
    /// the board it gave) when it is the same text.
    fn stored_after(
        batch: u64,
        index: u32,
        item: &'a StoredItem,
        last_goal: &mut Option<(&'a str, Board)>,
    ) -> Result<QueuedItem<'a>, SchedulerError> {
        let corrupt = || StoreError::Corrupt {
            tree: "items",
            reason: format!("batch {batch} item {index}"),
        };
        let (Some(board), Some(goal)) = (&item.board, &item.goal) else {
            return Ok(QueuedItem { item, boards: None });
        };
        let board = parse_board(board).map_err(|_| corrupt())?;
        let goal = match *last_goal {
            Some((text, goal_board)) if text == goal.as_str() => goal_board,
            _ => {
                let goal_board = parse_board(goal).map_err(|_| corrupt())?;
                *last_goal = Some((goal.as_str(), goal_board));
                goal_board
            }
        };
        Ok(QueuedItem {
            item,
            boards: Some((board, goal)),
        })
    }

    /// The queued ones of a stored batch's `items` (from index `first` on), parsed; the others
    /// without their boards (nothing starts them).
    pub(super) fn stored_all(
        batch: u64,
        first: u32,
        items: &'a [StoredItem],
    ) -> Result<Vec<QueuedItem<'a>>, SchedulerError> {
        // A batch's items nearly always share one goal: its text is parsed once, not once an
        // item (a parse is thousands of instructions).
        let mut last_goal = None;
        (first..)
            .zip(items)
            .map(|(index, item)| match item.status {
                ItemStatus::Queued => QueuedItem::stored_after(batch, index, item, &mut last_goal),
                _ => Ok(QueuedItem { item, boards: None }),
            })
            .collect()
    }

    /// Whether it waits to be searched.
    pub(super) fn is_queued(&self) -> bool {
        self.item.status == ItemStatus::Queued
    }
}

/// The solver keys of a batch's queued items.
pub(super) fn solver_keys(items: &[QueuedItem], heuristic: HeuristicChoice) -> HashSet<SolverKey> {
    let mut keys = HashSet::new();
    // A batch's items nearly always share one goal: a goal like the last one's is not hashed
    // again (a hash a board was 2.5% of a coordinator's instructions on easy boards).
    let mut last = None;
    for (_, goal) in items
        .iter()
        .filter(|queued| queued.is_queued())
        .filter_map(|queued| queued.boards)
    {
        if last != Some(goal) {
            keys.insert((goal, heuristic));
            last = Some(goal);
        }
    }
    keys
}

/// Longest submitted line text kept with an item that failed to parse.
const MAX_KEPT_TEXT: usize = 200;

/// A request's heuristic name; empty means `default`.
pub fn parse_heuristic(name: &str) -> Result<HeuristicChoice, SchedulerError> {
    let name = if name.is_empty() { "default" } else { name };
    name.parse()
        .map_err(|e| SchedulerError::InvalidArgument(format!("heuristic: {e}")))
}

/// A request's goal; empty means the default goal.
pub fn parse_goal(text: &str) -> Result<Goal, SchedulerError> {
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
    /// Each item's board and goal (None for a line that is not a board).
    pub(super) boards: Vec<Option<(Board, Board)>>,
    /// Lines that are not a solvable board.
    pub(super) invalid: u32,
    /// Boards answered from the store.
    pub(super) from_store: u32,
}

impl Items {
    /// The items of `part`, each with its board and goal.
    fn queued(&self, part: std::ops::Range<usize>) -> Vec<QueuedItem<'_>> {
        self.items[part.clone()]
            .iter()
            .zip(&self.boards[part])
            .map(|(item, &boards)| QueuedItem { item, boards })
            .collect()
    }
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
pub fn line_errors(lines: &[String], goal: Goal) -> Vec<(u32, String)> {
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
        // Sized once: an item is a few hundred bytes to move at every doubling.
        items: Vec::with_capacity(lines.len()),
        boards: Vec::with_capacity(lines.len()),
        invalid: 0,
        from_store: 0,
    };
    // Most lines share one goal: its text is written once.
    let mut goal_text: Option<(Board, String)> = None;
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
        let boards = board_and_goal(&line, goal);
        read.boards.push(boards.clone().ok());
        match boards {
            Ok((board, goal)) => {
                item.board = Some(board.to_string());
                item.goal = match &goal_text {
                    Some((last, text)) if *last == goal => Some(text.clone()),
                    _ => {
                        let text = goal.to_string();
                        goal_text = Some((goal, text.clone()));
                        Some(text)
                    }
                };
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

/// Moves a line claims take `board` to `goal`, replayed, with any loops they hold cut out (a
/// claim need not be shortest).
fn claimed_moves(board: &Board, goal: &Board, text: &str) -> Result<Vec<Direction>, String> {
    let moves = moves_from_string(text).ok_or("not letters U, L, R, D")?;
    let moves = without_loops(board, &moves);
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
