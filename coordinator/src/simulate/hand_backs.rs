//! Work asked back in a replay, as `serve` asks it (`scheduler/hand_backs.rs`): while threads
//! idle with nothing queued, the subtree tasks that have run longest stop and hand back what
//! they have not searched, so an iteration's last long subtrees are shared out.
//!
//! A replay hands back at the recording's units ([`plan`]): a worker gives up the measured part
//! it was in, `profile_depth` moves below its task, and hands back with it the later siblings
//! of each subtree on the way down, each a task of its own; what it searched before stays
//! searched. Where the recording's units are coarser than those parts, the unit it was in is
//! cut where the search stood instead. Each handed back subtree is queued in the task's place,
//! as the scheduler queues them. Which tasks are asked, and when, is the run's
//! (`Simulation::ask_hand_backs`).

use tilesolve::{Board, Direction};

use super::model::Unit;

/// Idle threads per running task asked at once (`serve`'s `IDLE_THREADS_PER_ASK`).
pub(super) const IDLE_THREADS_PER_ASK: usize = 8;

/// How long a worker with every thread idle waits in its poll before it polls again (`serve`'s
/// `LONG_POLL`): each poll of a starved worker looks for tasks to ask back.
pub(super) const LONG_POLL_SECONDS: f64 = 1.0;

/// What a task stopped partway hands back, in units (indices into its iteration's units).
#[derive(Debug, PartialEq)]
pub(super) struct HandBack {
    /// Units it searched whole and keeps: its claim.
    pub(super) kept: Vec<usize>,
    /// Subtrees it did not search (or gave up), by their paths from the puzzle's root, in
    /// search order.
    pub(super) paths: Vec<Vec<u8>>,
    /// A unit coarser than a worker's parts that it was in: the share of it searched (kept)
    /// and the rest, handed back as one task of that share of the unit's size.
    pub(super) split_unit: Option<(usize, f64)>,
}

/// What a task below `task_depth` moves, whose searched units are `searched` (each with its
/// index, in search order), hands back when it stops `elapsed` seconds into its search: a
/// worker gives up the part it was in, `profile_depth` moves below the task, and hands back
/// with it the later siblings of each subtree on the way down to it. A unit at that depth or
/// deeper is given up with its part; a coarser unit is cut where the search stood (the part
/// given up inside it is not told apart). `None` when the task would have ended by then, or
/// the unit it is in is not below it (nothing to share). `order` is one thread's order of a
/// path.
pub(super) fn plan(
    searched: &[(usize, &Unit)],
    order: &dyn Fn(&[u8]) -> Vec<u8>,
    task_depth: usize,
    profile_depth: u32,
    elapsed: f64,
) -> Option<HandBack> {
    let mut before = 0.0;
    let current = searched.iter().position(|(_, unit)| {
        let ends = before + unit.seconds;
        let past = ends > elapsed;
        if !past {
            before = ends;
        }
        past
    })?;
    let (index, unit) = searched[current];
    let path = &unit.path;
    let part_depth = task_depth + profile_depth as usize;
    let cap = path.len().min(part_depth);
    if cap <= task_depth {
        return None;
    }
    let given_up = &path[..cap];
    let (mut paths, split_unit) = if path.len() < part_depth {
        let searched_share = ((elapsed - before) / unit.seconds.max(1e-12)).clamp(0.0, 1.0);
        (Vec::new(), Some((index, searched_share)))
    } else {
        (vec![given_up.to_vec()], None)
    };
    // Every later unit lies below the given up subtree or below a later sibling of a subtree
    // on the way down to it (the order of a path extends its parent's).
    for level in task_depth + 1..=cap {
        let (parent, mine) = (&path[..level - 1], order(&path[..level]));
        let mut later: Vec<Vec<u8>> = searched
            .iter()
            .map(|(_, unit)| &unit.path)
            .filter(|p| p.len() >= level && p.starts_with(parent) && p[..level] != path[..level])
            .map(|p| p[..level].to_vec())
            .filter(|sibling| order(sibling) > mine)
            .collect();
        later.sort();
        later.dedup();
        paths.extend(later);
    }
    paths.sort_by_cached_key(|p| order(p));
    let kept = searched[..current]
        .iter()
        .filter(|(_, unit)| !unit.path.starts_with(given_up))
        .map(|&(index, _)| index)
        .collect();
    Some(HandBack {
        kept,
        paths,
        split_unit,
    })
}

/// The board `path` leads to from `root`, if every move is legal.
pub(super) fn board_at(root: Board, path: &[u8]) -> Option<Board> {
    path.iter().try_fold(root, |board, &step| {
        board.apply(Direction::from_index(step)).map(|(b, _)| b)
    })
}
