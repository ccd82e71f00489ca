//! What a subtree task's hand-back report says (`TaskOutcome::HandedBack`): the descendants it
//! did not search, by their moves from its board, and, by implication, the rest of its subtree,
//! which it did search. The rest is what it claims (no path within the bound there), so the
//! audits check exactly those subtrees; the descendants are queued as tasks of their own.

use std::collections::HashSet;

use tilesolve::task::MAX_PROFILE_DEPTH;
use tilesolve::{Board, Direction};

use super::types::TaskSpec;

/// Why `paths` cannot be what an honest worker handed back of `spec`, if it cannot: each is
/// one to `profile_depth` moves a worker's search follows, none is below another, none passes
/// the goal on its way (the worker would have stopped there with it), and there are no more
/// than a walk that stops once leaves: the rest of each level on its way down (at most three
/// siblings at the top, two below) and the descendant it was in. Counted first, so a flood of
/// paths costs the lock nothing.
pub(super) fn fault(spec: &TaskSpec, paths: &[Vec<Direction>]) -> Option<String> {
    let depth = spec.profile_depth.min(MAX_PROFILE_DEPTH) as usize;
    if paths.is_empty() || paths.len() > 3 * depth + 1 {
        return Some(format!(
            "a worker handed back {} descendants of a task measured {depth} moves deep",
            paths.len()
        ));
    }
    let mut sorted: Vec<&Vec<Direction>> = paths.iter().collect();
    sorted.sort_by_cached_key(|path| path.iter().map(|&d| d as u8).collect::<Vec<_>>());
    // Sorted, a path and one below it (or its twin) are neighbours, or one below it is.
    if sorted.windows(2).any(|pair| pair[1].starts_with(pair[0])) {
        return Some("a worker handed back a descendant twice, or one below another".into());
    }
    for path in paths {
        if path.is_empty() || path.len() > depth {
            return Some(format!(
                "a worker handed back a descendant {} moves below its task",
                path.len()
            ));
        }
        let mut board = spec.board;
        for (depth, &direction) in path.iter().enumerate() {
            if board == spec.goal {
                return Some("a worker handed back a descendant of the goal".into());
            }
            let followed = spec.followed_children_below(&board, &path[..depth]);
            match followed.into_iter().find(|&(d, _)| d == direction) {
                Some((_, child)) => board = child,
                None => {
                    return Some(format!(
                        "a worker handed back a descendant its search does not follow ({} moves)",
                        path.len()
                    ))
                }
            }
        }
    }
    None
}

/// The subtrees of `spec` that a report handing back `paths` (as [`fault`] lets through)
/// searched: each child, below the task's board or below a descendant on the way to a handed
/// back one, that is neither handed back nor on the way to one. With the handed back
/// descendants they cover the task's subtree, each node once. Each comes with its moves from
/// the task's board.
pub(super) fn searched_subtrees(
    spec: &TaskSpec,
    paths: &[Vec<Direction>],
) -> Vec<(Board, Vec<Direction>)> {
    let handed: HashSet<&[Direction]> = paths.iter().map(Vec::as_slice).collect();
    let on_the_way: HashSet<&[Direction]> = paths
        .iter()
        .flat_map(|path| (0..path.len()).map(move |depth| &path[..depth]))
        .collect();
    let mut searched = Vec::new();
    let mut open = vec![(spec.board, Vec::new())];
    while let Some((board, moves)) = open.pop() {
        for (direction, child) in spec.followed_children_below(&board, &moves) {
            let mut below = moves.clone();
            below.push(direction);
            if handed.contains(below.as_slice()) {
                continue;
            }
            if on_the_way.contains(below.as_slice()) {
                open.push((child, below));
            } else {
                searched.push((child, below));
            }
        }
    }
    searched
}
