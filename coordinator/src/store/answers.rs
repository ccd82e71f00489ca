//! The answers (in `answer_log`'s files): answers, the boards on their paths, and withdrawing
//! what a lying worker's reports proved.

use serde::{Deserialize, Serialize};
use tilesolve::moves::{moves_to_string, replay};
use tilesolve::{Board, Direction, Shape, Solution};

use super::answer_log::AnswerLog;
use super::format::{board_key, decode, encode_compact, remove_where};
use super::search::SearchState;
use super::{Store, StoreError};

/// Whether [`Store::put_solution`] stores the boards on a solution's path besides its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathBoards {
    Stored,
    /// Only the solved board (and the goal): for answers found so cheaply that searching a
    /// path board again costs less than writing 40 to 80 entries for every answer.
    Skipped,
}

/// A solved board: the optimal moves from it to its goal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredSolution {
    pub length: u32,
    /// The blank's moves, one letter each.
    pub moves: String,
    #[serde(with = "super::format::byte_run")]
    pub tiles: Vec<u8>,
    /// Nodes the search took: at least 1 for a board that was searched or proven on its own,
    /// 0 for boards stored as part of another board's path.
    pub nodes: u64,
    pub seconds: f64,
    pub heuristic: String,
    /// The workers whose reports the answer rests on: if one of them is caught lying, the
    /// answer is withdrawn and solved again ([`Store::withdraw_worker`]). (Absent from JSON
    /// values written before it was kept.)
    #[serde(default)]
    pub workers: Vec<u64>,
}

impl Store {
    /// The stored solution of `board` towards `goal`, if it was ever solved or lay on a solved
    /// optimal path.
    pub fn solution(
        &self,
        goal: &Board,
        board: &Board,
    ) -> Result<Option<StoredSolution>, StoreError> {
        let solution: Option<StoredSolution> = self
            .answers
            .get(&board_key(goal, board))?
            .map(|bytes| decode("solutions", &bytes))
            .transpose()?;
        Ok(solution.filter(|solution| !self.rests_on_withdrawn(&solution.workers)))
    }

    /// From now on no answer or bound resting on `worker`'s reports is read, though the pass
    /// that removes them ([`Store::withdraw_worker`]) has yet to run: it was quarantined.
    pub fn withdraw_from_reads(&self, worker: u64) {
        self.withdrawn_workers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(worker);
    }

    /// Whether something resting on `workers`' reports rests on a quarantined one.
    pub(super) fn rests_on_withdrawn(&self, workers: &[u64]) -> bool {
        let withdrawn = self
            .withdrawn_workers
            .read()
            .unwrap_or_else(|p| p.into_inner());
        !withdrawn.is_empty() && workers.iter().any(|worker| withdrawn.contains(worker))
    }

    /// Every stored solution that was searched for or proven on its own (`nodes > 0`; the
    /// boards on its path follow from it), with its goal and board, in the order they were
    /// stored.
    pub fn searched_solutions(
        &self,
    ) -> impl Iterator<Item = Result<(Board, Board, StoredSolution), StoreError>> + '_ {
        answer_entries(&self.answers).filter_map(|entry| {
            let read = || -> Result<Option<(Board, Board, StoredSolution)>, StoreError> {
                let (key, value) = entry?;
                let solution: StoredSolution = decode("solutions", &value)?;
                if solution.nodes == 0 || self.rests_on_withdrawn(&solution.workers) {
                    return Ok(None);
                }
                let corrupt = || StoreError::Corrupt {
                    tree: "solutions",
                    reason: "a key that is not a goal and a board".into(),
                };
                // [version, width, goal tiles, board tiles]: the width and the count of cells
                // give the shape (see `format::board_key`).
                let width = usize::from(*key.get(1).ok_or_else(corrupt)?);
                let cells = key.len().saturating_sub(2) / 2;
                if width == 0 || cells % width != 0 || key.len() != 2 + 2 * cells {
                    return Err(corrupt());
                }
                let shape = Shape::new(cells / width, width).map_err(|_| corrupt())?;
                let tiles = |range: std::ops::Range<usize>| -> Result<Board, StoreError> {
                    let values: Vec<u64> = key
                        .get(range)
                        .ok_or_else(corrupt)?
                        .iter()
                        .map(|&t| u64::from(t))
                        .collect();
                    Board::from_tiles_in(&values, shape).map_err(|_| corrupt())
                };
                let goal = tiles(2..2 + cells)?;
                let board = tiles(2 + cells..2 + 2 * cells)?;
                Ok(Some((goal, board, solution)))
            };
            read().transpose()
        })
    }

    /// Stores a replayed optimal solution, marked with the `workers` whose reports it rests on;
    /// with [`PathBoards::Stored`] also every board on its path with its exact distance (each
    /// suffix of an optimal path is optimal). Returns the board's own record, as stored.
    pub fn put_solution(
        &self,
        solution: &Solution,
        heuristic: &str,
        workers: &[u64],
        path_boards: PathBoards,
    ) -> Result<StoredSolution, StoreError> {
        // Plain inserts, not a sled batch: every entry is a whole answer on its own, so a crash
        // between them loses nothing that matters, and sled writes its log out twice for every
        // batch (that was most of the coordinator's time on a batch of easy boards).
        let own = StoredSolution {
            length: solution.moves.len() as u32,
            moves: moves_to_string(&solution.moves),
            tiles: solution.tiles.clone(),
            // At least 1 for the board searched (its root was looked at, even when an exact
            // table or a claim proven at its bound took no expansion): 0 marks the boards
            // stored only as part of its path, which an export leaves out.
            nodes: solution.counters.expanded.max(1),
            seconds: solution.seconds,
            heuristic: heuristic.to_string(),
            workers: workers.to_vec(),
        };
        // A board that is its goal has the goal's own record (below), which an export leaves
        // out.
        if !solution.moves.is_empty() {
            self.answers.put(
                &board_key(&solution.goal, &solution.board),
                &encode_compact(&own),
            )?;
        }
        if path_boards == PathBoards::Stored {
            self.put_path_boards(solution, &own)?;
        }
        let goal_key = board_key(&solution.goal, &solution.goal);
        let mut goals_stored = self.goals_stored.lock().unwrap_or_else(|p| p.into_inner());
        if goals_stored.contains(&goal_key) {
            return Ok(own);
        }
        if self.answers.get(&goal_key)?.is_none() {
            self.answers.put(
                &goal_key,
                &encode_compact(&StoredSolution {
                    length: 0,
                    moves: String::new(),
                    tiles: Vec::new(),
                    nodes: 0,
                    seconds: 0.0,
                    heuristic: heuristic.into(),
                    workers: Vec::new(),
                }),
            )?;
        }
        goals_stored.insert(goal_key);
        Ok(own)
    }

    /// Stores each board after the first on `solution`'s path with the rest of the path, as
    /// part of `own`'s answer (nodes 0).
    fn put_path_boards(&self, solution: &Solution, own: &StoredSolution) -> Result<(), StoreError> {
        let mut board = solution.board;
        for (step, &direction) in solution.moves.iter().enumerate() {
            board = board.apply(direction).map_or(board, |(next, _)| next);
            let step = step + 1;
            if step == solution.moves.len() {
                break;
            }
            let key = board_key(&solution.goal, &board);
            // A board on the path keeps an answer it already has: that answer rests on its own
            // workers, and items answered with it say so; overwritten with this path's, a
            // quarantine of one of these workers withdrew it while those items stayed solved
            // (found by the colluders' test: answered, then "not in the store" for good).
            if self.answers.get(&key)?.is_some() {
                continue;
            }
            let stored = StoredSolution {
                length: (solution.moves.len() - step) as u32,
                moves: own.moves[step..].to_string(),
                tiles: solution.tiles[step..].to_vec(),
                nodes: 0,
                seconds: 0.0,
                heuristic: own.heuristic.clone(),
                workers: own.workers.clone(),
            };
            self.answers.put(&key, &encode_compact(&stored))?;
        }
        Ok(())
    }

    pub(super) fn forget_goals_stored(&self) {
        self.goals_stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Checks a stored solution by replaying it; `None` if it does not replay (never trusted).
    pub fn verified(
        goal: &Board,
        board: &Board,
        stored: &StoredSolution,
    ) -> Option<Vec<Direction>> {
        let moves: Option<Vec<Direction>> = stored
            .moves
            .chars()
            .map(|c| Direction::ALL.into_iter().find(|d| d.letter() == c))
            .collect();
        let moves = moves?;
        replay(board, goal, &moves).ok().map(|_| moves)
    }

    /// Removes every stored solution and search state that rests on `worker`'s reports (it was
    /// caught lying); returns how many of each. A pass over both trees, run beside the
    /// scheduler (see [`Store::withdraw_from_reads`]): an answer stored over one of these
    /// meanwhile, resting on other workers, stays.
    pub fn withdraw_worker(&self, worker: u64) -> Result<(usize, usize), StoreError> {
        self.withdraw_from_reads(worker);
        self.forget_goals_stored();
        let mut withdrawn = Vec::new();
        for entry in answer_entries(&self.answers) {
            let (key, value) = entry?;
            let solution: StoredSolution = decode("solutions", &value)?;
            if solution.workers.contains(&worker) {
                withdrawn.push(key);
            }
        }
        let mut solutions = 0;
        for key in &withdrawn {
            let rests_on_worker = |value: &[u8]| {
                decode::<StoredSolution>("solutions", value)
                    .is_ok_and(|solution| solution.workers.contains(&worker))
            };
            solutions += usize::from(self.answers.remove_if(key, rests_on_worker)?);
        }
        // Made durable at once: an answer resting on a liar must not come back after a crash.
        self.answers.sync()?;
        let states = remove_where(&self.search, "search", |s: SearchState| {
            s.workers.contains(&worker)
        })?;
        Ok((solutions, states))
    }
}

/// Every stored answer's key and value, read a chunk at a time (so that writers wait for one
/// chunk, never for the whole pass).
fn answer_entries(
    answers: &AnswerLog,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), StoreError>> + '_ {
    const CHUNK: usize = 4096;
    let mut next = Some(0);
    let mut chunk = Vec::new().into_iter();
    std::iter::from_fn(move || loop {
        if let Some(entry) = chunk.next() {
            return Some(Ok(entry));
        }
        let from = next?;
        match answers.entries_from(from, CHUNK) {
            Ok((entries, after)) => {
                chunk = entries.into_iter();
                next = after;
            }
            Err(error) => {
                next = None;
                return Some(Err(error.into()));
            }
        }
    })
}

impl Store {
    /// Moves the answers of a store from before format 4 out of sled's `solutions` tree into
    /// the answer log, flushed, then empties the tree (a crash between moves them again).
    pub(super) fn move_answers_out_of_sled(&self) -> Result<(), StoreError> {
        if self.solutions.is_empty() {
            return Ok(());
        }
        let mut moved = 0u64;
        for entry in self.solutions.iter() {
            let (key, value) = entry?;
            self.answers.put(&key, &value)?;
            moved += 1;
        }
        self.answers.close()?;
        self.solutions.clear()?;
        self.db.flush()?;
        tracing::info!(
            answers = moved,
            "answers moved out of sled into the answer log"
        );
        Ok(())
    }
}
