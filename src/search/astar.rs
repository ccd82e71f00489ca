//! A* with a memory budget, kept to compare against IDA*: it expands each board once but stores
//! every board it reaches, so on hard 15-puzzles it runs out of memory long before IDA* runs out
//! of time. The budget turns that into a clear error instead of swapping.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use thiserror::Error;

use crate::board::{Board, PaddedTiles, Position};
use crate::direction::Direction;
use crate::heuristic::Heuristic;
use crate::moves::{Neighbors, NO_CELL};
use crate::search::{Abort, Counters, Limits, CHECK_INTERVAL};

/// Why A* ended without a solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum AStarError {
    #[error("search stopped ({abort:?}) with no solution shorter than {bound} moves")]
    Aborted { abort: Abort, bound: u32 },
    #[error("memory budget exceeded: {stored} boards stored would need about {needed_mib} MiB, over the budget of {budget_mib} MiB")]
    MemoryBudget {
        stored: usize,
        needed_mib: usize,
        budget_mib: usize,
    },
    #[error("the goal is unreachable from this board")]
    NoSolution,
}

/// What A* remembers per board: cost from the start and the move that reached it.
#[derive(Clone, Copy)]
struct Reached {
    g: u8,
    last: u8,
}

/// Bytes per stored board: a hash map slot (key, value, control byte, load-factor slack) plus an
/// open-list entry. An estimate, on the high side.
const BYTES_PER_BOARD: usize = 2 * (16 + 2) + 1 + 32;

/// Boards as 5 bits per cell: 25 cells fit in a u128.
fn pack(tiles: &PaddedTiles, cells: usize) -> u128 {
    tiles[..cells]
        .iter()
        .rev()
        .fold(0u128, |packed, &tile| (packed << 5) | u128::from(tile))
}

fn unpack(mut packed: u128, cells: usize) -> PaddedTiles {
    let mut tiles = [0u8; 32];
    for tile in tiles.iter_mut().take(cells) {
        *tile = (packed & 31) as u8;
        packed >>= 5;
    }
    tiles
}

/// Best-first search on f = g + h, ties broken towards deeper nodes. With a consistent heuristic
/// each board is expanded at most once and the first goal popped is optimal.
pub fn a_star<H: Heuristic>(
    heuristic: &H,
    neighbors: &Neighbors,
    start: &Board,
    goal: &Board,
    limits: Limits<'_>,
    memory_budget: usize,
) -> (Result<Vec<Direction>, AStarError>, Counters) {
    let cells = start.cells();
    let goal_key = pack(&goal.padded(), cells);
    let start_key = pack(&start.padded(), cells);
    let start_h = heuristic.estimate(&Position::new(start));
    let mut reached: HashMap<u128, Reached> = HashMap::new();
    let mut open: BinaryHeap<(Reverse<u32>, u8, u128)> = BinaryHeap::new();
    reached.insert(
        start_key,
        Reached {
            g: 0,
            last: NO_CELL,
        },
    );
    open.push((Reverse(start_h), 0, start_key));
    let mut counters = Counters::default();
    let mut bound = start_h;
    let budget_error = |stored: usize| AStarError::MemoryBudget {
        stored,
        needed_mib: (stored * BYTES_PER_BOARD) >> 20,
        budget_mib: memory_budget >> 20,
    };

    while let Some((Reverse(f), g, key)) = open.pop() {
        if reached.get(&key).is_some_and(|r| r.g < g) {
            continue; // a stale entry: the board was reached more cheaply since
        }
        bound = bound.max(f);
        if key == goal_key {
            return (Ok(path_to(&reached, key, cells, neighbors)), counters);
        }
        counters.expanded += 1;
        if counters.expanded % CHECK_INTERVAL == 0 {
            if let Some(abort) = limits.exceeded(counters.expanded) {
                return (Err(AStarError::Aborted { abort, bound }), counters);
            }
        }
        let tiles = unpack(key, cells);
        let blank = tiles.iter().position(|&t| t == 0).unwrap_or(0);
        let mut position = Position {
            tiles,
            cells: [0; 32],
        };
        for (cell, &tile) in tiles.iter().enumerate().take(cells) {
            position.cells[usize::from(tile)] = cell as u8;
        }
        let state = heuristic.init(&position);
        let last = reached.get(&key).map_or(NO_CELL, |r| r.last);
        for (direction, &next) in neighbors.of(blank).iter().enumerate() {
            if next == NO_CELL || usize::from(last) + direction == 3 {
                continue;
            }
            counters.generated += 1;
            let next = usize::from(next);
            let tile = position.slide(next, blank);
            let child_h =
                heuristic.value(heuristic.after_move(&position, state, tile, next, blank));
            let child_key = pack(&position.tiles, cells);
            position.slide(blank, next);
            let child_g = g + 1;
            if reached.get(&child_key).is_some_and(|r| r.g <= child_g) {
                continue;
            }
            // Checked before every insert; the per-board estimate includes the tables' growth slack.
            let stored = reached.len().max(open.len()) + 1;
            if stored * BYTES_PER_BOARD > memory_budget {
                return (Err(budget_error(stored)), counters);
            }
            reached.insert(
                child_key,
                Reached {
                    g: child_g,
                    last: direction as u8,
                },
            );
            open.push((Reverse(u32::from(child_g) + child_h), child_g, child_key));
        }
    }
    (Err(AStarError::NoSolution), counters)
}

/// Walks the recorded last moves back from `key` to the start.
fn path_to(
    reached: &HashMap<u128, Reached>,
    mut key: u128,
    cells: usize,
    neighbors: &Neighbors,
) -> Vec<Direction> {
    let mut moves = Vec::new();
    while let Some(&Reached { last, .. }) = reached.get(&key) {
        if last == NO_CELL {
            break;
        }
        let direction = Direction::from_index(last);
        moves.push(direction);
        let mut tiles = unpack(key, cells);
        let blank = tiles.iter().position(|&t| t == 0).unwrap_or(0);
        let previous = usize::from(neighbors.of(blank)[direction.opposite() as usize]);
        tiles[blank] = tiles[previous];
        tiles[previous] = 0;
        key = pack(&tiles, cells);
    }
    moves.reverse();
    moves
}
