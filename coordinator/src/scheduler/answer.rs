//! A puzzle's answer on its way to the store: its moves, and the tiles they move once a replay
//! has shown that they lead from the puzzle's board to its goal.
//!
//! Invariant: a [`Replayed`] is made only by replaying its moves ([`Replayed::new`]), so an
//! answer stored from one was replayed, from the board and to the goal it names. The judge of
//! a report replays what a worker found ([`super::judge`]); the answer carries that replay to
//! [`super::puzzle::Puzzle::solution`], which takes its tiles only when its board, goal and
//! moves are the puzzle's and the answer's, and replays anything else itself. So each answer a
//! worker finds is replayed once, not once to judge it and again to store it (the second
//! replay was 5% of a coordinator's instructions on easy boards).

use tilesolve::moves::{replay, ReplayError};
use tilesolve::{Board, Direction};

/// Moves replayed from `board` to `goal`, with the tiles they move.
#[derive(Debug)]
pub(super) struct Replayed {
    board: Board,
    goal: Board,
    moves: Vec<Direction>,
    tiles: Vec<u8>,
}

impl Replayed {
    /// `moves` replayed from `board`: an error if they leave the board, pass a board twice or
    /// end anywhere but on `goal`.
    pub(super) fn new(
        board: Board,
        goal: Board,
        moves: &[Direction],
    ) -> Result<Replayed, ReplayError> {
        let tiles = replay(&board, &goal, moves)?;
        Ok(Replayed {
            board,
            goal,
            moves: moves.to_vec(),
            tiles,
        })
    }
}

/// A puzzle's answer: its moves, replayed already or not yet.
#[derive(Debug)]
pub(super) enum Answer {
    Moves(Vec<Direction>),
    Replayed(Replayed),
}

impl Answer {
    /// `moves`, carrying `replayed` when it is a replay of these very moves.
    pub(super) fn of(moves: Vec<Direction>, replayed: Option<Replayed>) -> Answer {
        match replayed {
            Some(path) if path.moves == moves => Answer::Replayed(path),
            _ => Answer::Moves(moves),
        }
    }

    /// Its moves and the tiles they move from `board` to `goal`: a replay's own when it was
    /// replayed from that board to that goal, else replayed now.
    pub(super) fn replayed_from(
        self,
        board: &Board,
        goal: &Board,
    ) -> Result<(Vec<Direction>, Vec<u8>), ReplayError> {
        let moves = match self {
            Answer::Replayed(path) if path.board == *board && path.goal == *goal => {
                return Ok((path.moves, path.tiles))
            }
            Answer::Replayed(path) => path.moves,
            Answer::Moves(moves) => moves,
        };
        let tiles = replay(board, goal, &moves)?;
        Ok((moves, tiles))
    }
}

impl From<Vec<Direction>> for Answer {
    fn from(moves: Vec<Direction>) -> Answer {
        Answer::Moves(moves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilesolve::moves::moves_from_string;

    fn boards() -> (Board, Board) {
        let goal = Board::blank_last(3);
        let (board, _) = goal.apply(Direction::Left).unwrap();
        (board, goal)
    }

    #[test]
    fn a_replay_of_the_puzzles_own_path_is_taken_as_it_is() {
        let (board, goal) = boards();
        let moves = moves_from_string("R").unwrap();
        let path = Replayed::new(board, goal, &moves).unwrap();
        let tiles = path.tiles.clone();
        let answer = Answer::of(moves.clone(), Some(path));
        assert!(matches!(answer, Answer::Replayed(_)));
        assert_eq!(answer.replayed_from(&board, &goal).unwrap(), (moves, tiles));
    }

    #[test]
    fn moves_that_do_not_reach_the_goal_are_never_replayed() {
        let (board, goal) = boards();
        let wrong = moves_from_string("L").unwrap();
        assert!(Replayed::new(board, goal, &wrong).is_err());
        assert!(Answer::from(wrong).replayed_from(&board, &goal).is_err());
    }

    #[test]
    fn a_replay_of_other_moves_or_from_another_board_is_replayed_again() {
        let (board, goal) = boards();
        let moves = moves_from_string("R").unwrap();
        let path = Replayed::new(board, goal, &moves).unwrap();
        // Not these moves: the answer keeps its own, unreplayed.
        let other = moves_from_string("RLR").unwrap();
        assert!(matches!(Answer::of(other, Some(path)), Answer::Moves(_)));
        // Replayed from another board: replayed again from the puzzle's, where it fails.
        let (elsewhere, _) = board.apply(Direction::Up).unwrap();
        let path = Replayed::new(board, goal, &moves).unwrap();
        assert!(Answer::Replayed(path)
            .replayed_from(&elsewhere, &goal)
            .is_err());
    }
}
