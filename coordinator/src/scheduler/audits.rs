//! Audits and quarantine: answers stay optimal with one lying or faulty worker.
//!
//! A report claims that no path shorter than some length L leaves its task's board: a next
//! bound, a budget spent at a bound, a whole puzzle's answer. An audit searches the same board
//! on another worker under bound L - 1. Any path it finds replays to the goal and is shorter
//! than the claim, so it disproves the claim whoever found it; finding none upholds it. An audit
//! therefore needs no trust in the auditor: a lying auditor can only fail to find (which upholds
//! the claim, as an honest auditor would unless the audited worker lied too) or send moves that
//! do not replay, which count against it. An audit that spends its node budget has learned
//! nothing: like a subtree task, it goes on as one audit per child, and the answer waits for
//! them all. One asked back while threads idle goes on as one audit per descendant it did not
//! search.
//!
//! Every report of a new worker is audited until [`PROBATION_AUDITS`] were upheld (under
//! `sample`, only its first [`PROBATION_AUDITS`] cheap ones, a cheap measured part standing for
//! a larger one, or any once it has made a few; the cheap ones on the coordinator, within the
//! poll), then a fraction drawn with a secret seed, so a worker cannot tell which of its
//! reports are checked. No worker audits its own report. Under `full` no registration audits another of
//! its own lineage either ([`Lineage`]: every worker registered under one worker token is one,
//! since a token holder may register as many workers as it likes, and they would uphold each
//! other's lies); under `sample`, which guards against faulty machines, any other registration
//! past its probation may (registrations that all lie never uphold each other, and one that
//! heartbeats and never polls holds no audit up). Under `sample` the claims a registration
//! makes on probation are kept like every claim under `full`: an answer resting on one is
//! stored once its worker has passed probation, or after the claim's own audit, so nothing is
//! stored on the word of a registration that has shown nothing (a liar that re-registers, or
//! brings a silent decoy along, opens no window).
//! With no worker that may run an audit connected, the coordinator runs it itself, whatever its
//! size (in chunks of [`COORDINATOR_CHUNK_NODES`] on its background pool); but under `sample`
//! a large claim of a worker on probation that only the random draw picked is then kept
//! instead, as an undrawn one is (audited if an answer rests on it before its worker passes).
//! An audit is never dropped: one whose auditor falls silent, fails or leaves goes to another
//! worker or to the coordinator. What a
//! report says of its own size only decides where its audit runs, never whether it runs.
//! A claim that no draw picked is kept while an answer's length could rest on it: before an
//! answer its heuristic does not prove is stored, every such claim it rests on (those that set
//! the bound it was found at) is audited on a worker other than the one that made it. Sampling
//! alone let a worker pass probation on lies that hide nothing and then lengthen an answer
//! unseen. A puzzle's answer waits for the audits of the reports it rests on. A disproved claim
//! quarantines its worker: its calls are refused, its tasks go back to the queue, puzzles that
//! rest on its reports start again, and stored answers and bounds that rest on them are
//! withdrawn and their items solved again.
//!
//! [`PROBATION_AUDITS`]: super::config::PROBATION_AUDITS
//! [`Lineage`]: super::workers::Lineage

use rustc_hash::{FxHashMap, FxHashSet};

use tilesolve::search::PartSize;
use tilesolve::{Board, Direction};

use super::config::{
    Verify, COORDINATOR_AUDIT_NODES, COORDINATOR_CHUNK_NODES, PROBATION_PART_NODES,
    PROBATION_SAMPLE_NODES,
};
use super::deferred::{Deferred, FinishedAudit, PendingAudit, UnauditedClaim};
use super::handed_back::{self, searched_subtrees};
use super::judge::path_lengths;
use super::tasks::{Audit, TaskEntry};
use super::types::{
    Lineage, PuzzleId, TaskId, TaskOutcome, TaskReport, TaskSpec, WorkerId, MAX_ATTEMPTS,
};
use super::Parts;

/// What a report says about paths: below these boards (each with its path from the puzzle's
/// root), no path to the goal is shorter than the length given.
fn claims(spec: &TaskSpec, outcome: &TaskOutcome) -> Vec<(Board, Vec<Direction>, u32)> {
    let whole = |length: u32| vec![(spec.board, spec.path.clone(), length)];
    // A whole-puzzle task starts at a bound it is given: its first iteration finds some path
    // within that bound, not the shortest, so only what it ruled out past its first iteration
    // is its own claim.
    let beyond_start = |length: u32| {
        if length > spec.bound {
            whole(length)
        } else {
            Vec::new()
        }
    };
    match outcome {
        TaskOutcome::Exceeded(next) => whole(*next),
        TaskOutcome::BudgetSpent(at) => beyond_start(*at),
        TaskOutcome::Found(suffix) if spec.iterate => {
            beyond_start((spec.path.len() + suffix.len()) as u32)
        }
        // The children it did not hand back, it says, lead to nothing below `pruned_min_f`.
        TaskOutcome::Split {
            children,
            pruned_min_f,
        } => spec
            .followed_children()
            .into_iter()
            .filter(|(d, _)| !children.contains(d))
            .map(|(d, board)| {
                let mut path = spec.path.clone();
                path.push(d);
                (board, path, *pruned_min_f)
            })
            .collect(),
        // What it searched, it says, leads to nothing below `searched_min_f` (to nothing within
        // the bound, where nothing it searched went over it).
        TaskOutcome::HandedBack {
            paths,
            searched_min_f,
        } => {
            let length = if *searched_min_f == u32::MAX {
                spec.bound + 1
            } else {
                *searched_min_f
            };
            searched_subtrees(spec, paths)
                .into_iter()
                .map(|(board, moves)| (board, [spec.path.as_slice(), &moves].concat(), length))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A part of an exceeded subtree task's report cheap enough to audit for probation
/// ([`PROBATION_PART_NODES`]), drawn with `pick` (a secret draw in [0, 1)) among those the
/// worker measured (`TaskSpec::profile_depth`): the descendant, its path from the puzzle's
/// root, and the report's claim, which holds below it as below the whole board. Only a path
/// the worker's search follows is taken, so a shorter path found below it disproves the claim;
/// parts that name anything else are passed over, as a lie about sizes only steers the draw.
fn cheap_part(
    spec: &TaskSpec,
    outcome: &TaskOutcome,
    parts: &[PartSize],
    pick: f64,
) -> Option<(Board, Vec<Direction>, u32)> {
    let TaskOutcome::Exceeded(claim) = outcome else {
        return None;
    };
    let cheap: Vec<&PartSize> = parts
        .iter()
        .filter(|part| !part.moves.is_empty() && part.expanded <= PROBATION_PART_NODES)
        .collect();
    let part = cheap.get((pick * cheap.len() as f64) as usize)?;
    let mut board = spec.board;
    for (depth, &direction) in part.moves.iter().enumerate() {
        let followed = spec.followed_children_below(&board, &part.moves[..depth]);
        board = followed.into_iter().find(|&(d, _)| d == direction)?.1;
    }
    Some((board, [spec.path.as_slice(), &part.moves].concat(), *claim))
}

/// Salt of the draw that picks which cheap part of a report is audited: independent of the
/// draw that picks reports.
const PART_DRAW: u64 = 0x5EED_0F9A_27D3;

/// A number in [0, 1) that only someone holding `seed` can predict for `task` (SplitMix64).
fn draw(seed: u64, task: TaskId) -> f64 {
    let mut z = seed ^ task.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// What an audit found that the puzzles' lifecycle acts on: the audits never call back into
/// it.
#[derive(Debug)]
pub(super) enum AuditEvent {
    /// Every audit `puzzle`'s answer waited for has ended without disproving anything: an
    /// answer held for them may be stored.
    Resolved(PuzzleId),
    /// The worker lied or is broken: quarantine it, for the reason given.
    Quarantine(WorkerId, String),
}

/// The audits: the secret draw, for each live puzzle the audits its answer waits for, and
/// the probation draws they carry.
pub(super) struct Audits {
    /// Decides which reports are audited; secret, so a worker cannot tell.
    seed: u64,
    /// The audits of each live puzzle that its answer waits for (an entry from its first
    /// audit until the puzzle ends or starts again: [`Audits::forget`]).
    waiting: FxHashMap<PuzzleId, FxHashSet<TaskId>>,
    /// The audits drawn for a worker's probation that have not ended, each with that worker.
    /// One that ends without a verdict (it spent its budget and goes on in its children, or
    /// its puzzle ended) gives its draw back ([`Workers::give_back_probation_draw`]): a worker
    /// gets a few draws at a time, and one kept by an audit that never upholds anything stayed
    /// on probation for good (two of fifteen fresh workers on hard80, whose every claim was
    /// then audited again before an answer rested on it: 12.7 M nodes, 15% of the search).
    ///
    /// [`Workers::give_back_probation_draw`]: super::workers::Workers::give_back_probation_draw
    probation: FxHashMap<TaskId, WorkerId>,
}

impl Audits {
    pub(super) fn new(seed: u64) -> Audits {
        Audits {
            seed,
            waiting: FxHashMap::default(),
            probation: FxHashMap::default(),
        }
    }

    /// Whether `puzzle`'s answer waits for audits.
    pub(super) fn pending(&self, puzzle: PuzzleId) -> bool {
        self.waiting.get(&puzzle).is_some_and(|ids| !ids.is_empty())
    }

    /// `puzzle` ended or starts again: nothing waits for its audits, whose ids are returned so
    /// that their tasks are withdrawn.
    pub(super) fn forget(&mut self, parts: &mut Parts, puzzle: PuzzleId) -> Vec<TaskId> {
        let ids: Vec<TaskId> = self
            .waiting
            .remove(&puzzle)
            .map(|ids| ids.into_iter().collect())
            .unwrap_or_default();
        for id in &ids {
            self.ended_without_verdict(parts, *id);
        }
        ids
    }

    /// After `worker`'s report for `entry` (of a live puzzle) was taken: audits its claims
    /// when the worker is on probation or the draw says so, on another worker ([`Audit`] says
    /// which may) or on the coordinator. Returns the claims left unaudited (none when audits are off): an
    /// answer resting on them has them audited before it is stored (see [`Audits::answer`]).
    /// Under `sample`, a report too large to be drawn for probation is drawn by one of its
    /// cheap measured parts (`measured`, see [`cheap_part`]) instead, an audit small enough for
    /// the coordinator to run within the poll while no worker may: probation does not wait for
    /// a task that small, which a split sized for the coordinator's share seldom makes.
    pub(super) fn maybe_audit(
        &mut self,
        parts: &mut Parts,
        worker: WorkerId,
        entry: &TaskEntry,
        (outcome, measured): (&TaskOutcome, &[PartSize]),
        nodes: u64,
    ) -> Vec<UnauditedClaim> {
        let verify = parts.config.verify;
        if verify == Verify::Off {
            return Vec::new();
        }
        let node_budget = if entry.spec.iterate {
            parts.config.whole_task_budget
        } else {
            entry.spec.node_budget
        };
        // Under `full` no worker of the reporter's lineage audits it (one token, one liar).
        // Under `sample`, which guards machines of one's own against faults, any other
        // registration may: a second process is an independent check of a faulty one, and
        // with one worker token the sampled audits (5% of the work) would otherwise all run on
        // the coordinator, whose core then limits how many workers it can feed.
        let own = Lineage::Registration(worker);
        let (lineage, trusted_only) = match verify {
            Verify::Full => (parts.workers.lineage(worker).unwrap_or(own), false),
            Verify::Off | Verify::Sample => (own, true),
        };
        let unaudited =
            |(board, path, claim): (Board, Vec<Direction>, u32), nodes: u64| UnauditedClaim {
                nodes,
                spec: TaskSpec {
                    id: 0,
                    board,
                    path,
                    bound: claim - 1,
                    iterate: false,
                    node_budget,
                    profile_depth: 0,
                    ..entry.spec.clone()
                },
                audit: Audit {
                    of: worker,
                    lineage,
                    claim,
                    trusted_only,
                    probation: false,
                },
            };
        let claims: Vec<UnauditedClaim> = claims(&entry.spec, outcome)
            .into_iter()
            .filter(|&(_, _, claim)| claim > 0)
            .map(|claim| unaudited(claim, nodes))
            .collect();
        if claims.is_empty() {
            return claims;
        }
        let on_probation = parts.workers.on_probation(worker);
        let probation_draw = on_probation
            && self.draw_for_probation(
                parts,
                (worker, entry),
                (outcome, measured, nodes),
                &unaudited,
            );
        // Under `sample`, a large claim of a worker on probation drawn at random is kept, as an
        // undrawn one is, while only the coordinator could audit it: fifteen fresh workers put
        // 0.3-1 M nodes of such audits on it at a batch's start, and a kept claim is audited
        // all the same if an answer rests on it before its worker passes.
        let coordinator_only = verify == Verify::Sample
            && on_probation
            && nodes > COORDINATOR_AUDIT_NODES
            && !parts.workers.can_audit(&claims[0].audit);
        let sampled = draw(self.seed, entry.spec.id) < parts.config.audit_fraction;
        let drawn = probation_draw || (sampled && !coordinator_only);
        if !drawn {
            // Kept for the answer's audits under `full`, and under `sample` while the worker
            // is on probation: no answer rests on a registration's word before it has had
            // claims upheld (a liar that re-registers or brings a silent decoy along gets
            // nothing stored in the meantime). Past probation, under `sample`, nobody audits
            // them.
            return match verify {
                Verify::Full => claims,
                Verify::Sample if on_probation => claims,
                Verify::Off | Verify::Sample => Vec::new(),
            };
        }
        let cheap_probation = probation_draw && verify == Verify::Sample;
        for mut claim in claims {
            claim.audit.probation = probation_draw;
            match cheap_probation && claim.nodes <= PROBATION_SAMPLE_NODES {
                true => self.probation_here(parts, entry.puzzle, claim),
                false => self.route(parts, entry.puzzle, claim),
            }
        }
        Vec::new()
    }

    /// Whether a report of `worker`, on probation, of `nodes`, is audited for it (`claim_of`
    /// makes a claim to audit). Under `sample` only a cheap one is, or one of a larger
    /// report's cheap measured parts ([`cheap_part`]): that part is then audited here, and the
    /// report's own claims are left to the usual draw (`false`).
    fn draw_for_probation(
        &mut self,
        parts: &mut Parts,
        (worker, entry): (WorkerId, &TaskEntry),
        (outcome, measured, nodes): (&TaskOutcome, &[PartSize], u64),
        claim_of: &dyn Fn((Board, Vec<Direction>, u32), u64) -> UnauditedClaim,
    ) -> bool {
        if parts.config.verify == Verify::Full {
            return true;
        }
        let cheap = nodes <= PROBATION_SAMPLE_NODES;
        let pick = draw(self.seed ^ PART_DRAW, entry.spec.id);
        let part = match cheap {
            true => None,
            false => cheap_part(&entry.spec, outcome, measured, pick),
        };
        if !parts
            .workers
            .take_probation_draw(worker, cheap || part.is_some())
        {
            return false;
        }
        let Some(part) = part else {
            return true;
        };
        let mut claim = claim_of(part, PROBATION_PART_NODES);
        claim.audit.probation = true;
        self.probation_here(parts, entry.puzzle, claim);
        false
    }

    /// Audits a cheap claim drawn for probation under `sample` on the coordinator, within the
    /// poll that brought it, even when a worker could run it: queued for the workers, the
    /// audits of five of fifteen fresh workers waited until the batch's end, and the answers
    /// resting on their claims were audited whole (9 M nodes, 12% of the search). (Under
    /// `full` every claim on probation is audited, of any size, by another lineage.)
    fn probation_here(&mut self, parts: &mut Parts, puzzle: PuzzleId, claim: UnauditedClaim) {
        self.here(parts, puzzle, claim, COORDINATOR_AUDIT_NODES);
    }

    /// Audits `claim` on a worker that may run it ([`Audit::may_run_on`]) when one is
    /// connected, else on the coordinator.
    fn route(&mut self, parts: &mut Parts, puzzle: PuzzleId, claim: UnauditedClaim) {
        if parts.workers.can_audit(&claim.audit) {
            self.queue(parts, puzzle, claim);
        } else if claim.nodes <= COORDINATOR_AUDIT_NODES {
            // Run in the lock cycle that drew it, as an answer's audit is: handed to the
            // background pool, a sampled audit of an easy board cost more in the hand-off
            // than in its search. A claim that said it was small and is not spends this
            // budget and goes on in its children, on the background pool.
            self.here(parts, puzzle, claim, COORDINATOR_AUDIT_NODES);
        } else {
            self.here(parts, puzzle, claim, COORDINATOR_CHUNK_NODES);
        }
    }

    /// Audits `claim` on the coordinator's own tables within `budget` nodes (any admissible
    /// heuristic finds a path under the claim's bound): deferred, to run outside the lock.
    fn here(&mut self, parts: &mut Parts, puzzle: PuzzleId, claim: UnauditedClaim, budget: u64) {
        let key = (claim.spec.goal, claim.spec.heuristic);
        let solver = match parts.solver(&key) {
            Ok(solver) => solver.clone(),
            // A puzzle starts only once the coordinator holds its tables, so this is a fault.
            Err(error) => {
                let (batch, puzzle) = (puzzle.0, puzzle.1 + 1);
                tracing::error!(batch, puzzle, %error, "an audit cannot run on the coordinator");
                parts.totals.audits_skipped += 1;
                if claim.audit.probation {
                    parts.workers.give_back_probation_draw(claim.audit.of);
                }
                return;
            }
        };
        let id = self.new_audit(parts, puzzle, &claim.audit);
        parts.out.deferred.push(Deferred::Audit(PendingAudit {
            puzzle,
            claim,
            id,
            solver,
            budget,
        }));
    }

    fn queue(&mut self, parts: &mut Parts, puzzle: PuzzleId, claim: UnauditedClaim) {
        let id = self.new_audit(parts, puzzle, &claim.audit);
        tracing::debug!(
            batch = puzzle.0,
            puzzle = puzzle.1 + 1,
            task = id,
            worker = claim.audit.of,
            nodes = claim.nodes,
            probation = claim.audit.probation,
            "audit queued"
        );
        // Measured in parts, as subtree tasks are, so that it can be asked back while threads
        // idle (`hand_backs`).
        let profile_depth = parts.config.profile_depth;
        parts.tasks.add_audit(
            (puzzle, parts.batches.lane(puzzle.0)),
            TaskSpec {
                id,
                profile_depth,
                ..claim.spec
            },
            claim.audit,
            claim.nodes,
        );
    }

    /// An id for `audit` of `puzzle`, whose answer waits for it until it is resolved (and
    /// whose probation draw, if it carries one, it holds until then).
    fn new_audit(&mut self, parts: &mut Parts, puzzle: PuzzleId, audit: &Audit) -> TaskId {
        let id = parts.ids.next();
        self.waiting.entry(puzzle).or_default().insert(id);
        if audit.probation {
            self.probation.insert(id, audit.of);
        }
        id
    }

    /// The audit `id` upheld its claim: a probation draw it carries counts toward its worker's
    /// probation.
    fn upheld(&mut self, parts: &mut Parts, id: TaskId) {
        if let Some(worker) = self.probation.remove(&id) {
            parts.workers.audit_passed(worker);
        }
        parts.totals.audits_upheld += 1;
    }

    /// The audit `id` goes on whole under a new id, which carries its probation draw.
    fn goes_on_anew(&mut self, id: TaskId) {
        self.probation.remove(&id);
    }

    /// The audit `id` ended, or its search goes on in its children, without upholding or
    /// disproving its claim: a probation draw it carries is given back.
    fn ended_without_verdict(&mut self, parts: &mut Parts, id: TaskId) {
        if let Some(worker) = self.probation.remove(&id) {
            parts.workers.give_back_probation_draw(worker);
        }
    }

    /// Before `puzzle`'s answer is stored: audits each claim of `proof` (those its length
    /// rests on that no audit checked), on the coordinator when it is small
    /// ([`COORDINATOR_AUDIT_NODES`]), else on a worker other than the one that made it. The
    /// claims of the iteration (or whole task) that set the bound the answer was found at say
    /// together that nothing is shorter, so a false one among them is the only way a longer
    /// answer gets this far; it is found before anyone reads the answer.
    pub(super) fn answer(
        &mut self,
        parts: &mut Parts,
        puzzle: PuzzleId,
        proof: Vec<UnauditedClaim>,
    ) {
        for claim in proof {
            // Under `sample` a claim is kept only while its worker is on probation: one that
            // has since passed it is taken at its word, as its later claims are.
            if parts.config.verify == Verify::Sample && parts.workers.past_probation(claim.audit.of)
            {
                continue;
            }
            parts.totals.answer_audits += 1;
            tracing::debug!(
                batch = puzzle.0,
                puzzle = puzzle.1 + 1,
                worker = claim.audit.of,
                nodes = claim.nodes,
                "an answer's claim audited"
            );
            if claim.nodes <= COORDINATOR_AUDIT_NODES {
                self.here(parts, puzzle, claim, COORDINATOR_AUDIT_NODES);
            } else {
                self.route(parts, puzzle, claim);
            }
        }
    }

    /// Takes an audit the coordinator ran: a shorter path disproves the claim, nothing found
    /// upholds it, and a spent budget hands it to a worker.
    pub(super) fn finish_here(
        &mut self,
        parts: &mut Parts,
        finished: FinishedAudit,
    ) -> Vec<AuditEvent> {
        let FinishedAudit {
            puzzle,
            claim,
            id,
            outcome,
            nodes,
        } = finished;
        parts.totals.coordinator_audit_nodes =
            parts.totals.coordinator_audit_nodes.saturating_add(nodes);
        tracing::debug!(
            batch = puzzle.0,
            puzzle = puzzle.1 + 1,
            worker = claim.audit.of,
            nodes,
            probation = claim.audit.probation,
            outcome = outcome.kind(),
            "audit run on the coordinator"
        );
        // The puzzle started again or ended meanwhile: nothing waits for this audit.
        if !self
            .waiting
            .get(&puzzle)
            .is_some_and(|ids| ids.contains(&id))
        {
            return Vec::new();
        }
        let spec = &claim.spec;
        if let TaskOutcome::Found(suffix) = &outcome {
            if let Ok((_, shortest)) = path_lengths(spec, suffix) {
                return vec![self.disproved(parts, claim.audit, puzzle, id, shortest)];
            }
        }
        match outcome {
            TaskOutcome::Exceeded(next) if next > spec.bound => self.upheld(parts, id),
            TaskOutcome::Split { children, .. } => {
                let below = children.into_iter().map(|child| vec![child]);
                self.below(parts, puzzle, spec, claim.audit, below);
            }
            outcome => {
                // The coordinator's own search cannot fail but by a fault: a worker that may
                // run it still can.
                let (batch, index) = (puzzle.0, puzzle.1 + 1);
                tracing::error!(
                    batch,
                    puzzle = index,
                    ?outcome,
                    "the coordinator's audit failed"
                );
                if parts.workers.can_audit(&claim.audit) {
                    self.goes_on_anew(id);
                    self.queue(parts, puzzle, claim);
                } else {
                    parts.totals.audits_skipped += 1;
                }
            }
        }
        self.resolved(parts, puzzle, id).into_iter().collect()
    }

    /// Applies the result of an audit task from `auditor`.
    pub(super) fn apply(
        &mut self,
        parts: &mut Parts,
        auditor: WorkerId,
        entry: TaskEntry,
        report: TaskReport,
    ) -> Vec<AuditEvent> {
        let (task, puzzle) = (entry.spec.id, entry.puzzle);
        let Some(audit) = entry.audit else {
            return Vec::new();
        };
        let spec = &entry.spec;
        let impossible = match &report.outcome {
            // A path with a loop is still a real one, its loop cut out.
            TaskOutcome::Found(suffix) => match path_lengths(spec, suffix) {
                Ok((length, shortest)) => {
                    if shortest < audit.claim {
                        return vec![self.disproved(parts, audit, puzzle, task, shortest)];
                    }
                    Some(format!(
                        "an audit at bound {} reported a {length}-move path",
                        spec.bound
                    ))
                }
                Err(error) => Some(format!(
                    "an audit reported moves that do not reach the goal: {error}"
                )),
            },
            TaskOutcome::Exceeded(next) if *next <= spec.bound => Some(format!(
                "an audit reported next bound {next}, not above bound {}",
                spec.bound
            )),
            TaskOutcome::Exceeded(_) => {
                self.upheld(parts, task);
                None
            }
            TaskOutcome::Failed(_) if entry.attempts + 1 < MAX_ATTEMPTS => {
                parts.tasks.retry(entry);
                return Vec::new();
            }
            // The audit spent its budget: its children are audited instead, under the same
            // bound and claim, and the answer waits for them all. (Taking a spent budget as
            // "nothing found" let a lie stand whose audit was larger than the task it checked.)
            TaskOutcome::Split { children, .. } => {
                let below = children.iter().map(|&child| vec![child]);
                self.below(parts, puzzle, spec, audit, below);
                None
            }
            // Asked back while threads idled (a batch's last audit, say, on one thread): it
            // searched the rest of its subtree and found nothing, and the descendants it hands
            // back are audited in its place, under the same bound and claim.
            TaskOutcome::HandedBack {
                searched_min_f,
                paths,
            } => match handed_back::fault(spec, paths) {
                _ if *searched_min_f <= spec.bound => Some(format!(
                    "an audit handed back after meeting f {searched_min_f} at bound {}",
                    spec.bound
                )),
                Some(reason) => Some(reason),
                None => {
                    self.below(parts, puzzle, spec, audit, paths.iter().cloned());
                    None
                }
            },
            // Failed for good on workers: the coordinator runs it (unless its puzzle is gone).
            _ if !self.waiting.contains_key(&puzzle) => None,
            _ => {
                let claim = UnauditedClaim {
                    spec: entry.spec.clone(),
                    audit,
                    nodes: u64::MAX,
                };
                self.goes_on_anew(task);
                self.here(parts, puzzle, claim, COORDINATOR_CHUNK_NODES);
                None
            }
        };
        if let Some(reason) = impossible {
            let (batch, puzzle) = (entry.puzzle.0, entry.puzzle.1 + 1);
            tracing::warn!(batch, puzzle, task, worker = auditor, %reason, "impossible audit report");
            parts.tasks.retry_as_new(entry);
            if parts.workers.strike(auditor) {
                let reason = format!("impossible reports, the last: {reason}");
                return vec![AuditEvent::Quarantine(auditor, reason)];
            }
            return Vec::new();
        }
        self.resolved(parts, puzzle, task).into_iter().collect()
    }

    /// Audits the subtree below each of `descendants` (moves from `spec`'s board, within its
    /// bound) in place of the audit `spec`, which spent its budget or was asked back. They
    /// count for no probation: several audits of one claim are one verdict, and the audit they
    /// replace gives its draw back when it is resolved.
    fn below(
        &mut self,
        parts: &mut Parts,
        puzzle: PuzzleId,
        spec: &TaskSpec,
        audit: Audit,
        descendants: impl Iterator<Item = Vec<Direction>>,
    ) {
        // A puzzle that ended or started again waits for nothing.
        if !self.waiting.contains_key(&puzzle) {
            return;
        }
        for moves in descendants {
            let Some(board) = moves
                .iter()
                .try_fold(spec.board, |board, &d| board.apply(d).map(|(next, _)| next))
            else {
                continue;
            };
            let spec = TaskSpec {
                board,
                path: [spec.path.as_slice(), &moves].concat(),
                ..spec.clone()
            };
            self.route(
                parts,
                puzzle,
                UnauditedClaim {
                    spec,
                    audit: Audit {
                        probation: false,
                        ..audit
                    },
                    nodes: u64::MAX,
                },
            );
        }
    }

    /// An audit found a `length`-move path below a board whose report said nothing shorter
    /// than `audit.claim` existed: the reporting worker lied or is broken.
    fn disproved(
        &mut self,
        parts: &mut Parts,
        audit: Audit,
        puzzle: PuzzleId,
        task: TaskId,
        length: u32,
    ) -> AuditEvent {
        parts.totals.audits_disproved += 1;
        self.probation.remove(&task);
        if let Some(ids) = self.waiting.get_mut(&puzzle) {
            ids.remove(&task);
        }
        AuditEvent::Quarantine(
            audit.of,
            format!(
                "it reported no path shorter than {} moves, and an audit found one of {length}",
                audit.claim
            ),
        )
    }

    /// An audit of `puzzle` ended without disproving anything: when the answer waits for no
    /// other, it may be stored. A probation draw it still carries (it upheld nothing) is given
    /// back.
    fn resolved(
        &mut self,
        parts: &mut Parts,
        puzzle: PuzzleId,
        task: TaskId,
    ) -> Option<AuditEvent> {
        self.ended_without_verdict(parts, task);
        let ids = self.waiting.get_mut(&puzzle)?;
        ids.remove(&task);
        ids.is_empty().then_some(AuditEvent::Resolved(puzzle))
    }

    /// Hands the coordinator the queued audits no connected worker may run (every worker of
    /// another lineage has gone) or none took within a lease timeout (the one that may never
    /// asks for work): an answer never waits for ever on an audit, and never goes without one.
    pub(super) fn run_stranded_here(&mut self, parts: &mut Parts) -> Vec<AuditEvent> {
        let workers = &parts.workers;
        let stale = std::time::Instant::now().checked_sub(parts.config.lease_timeout);
        let stranded = parts
            .tasks
            .take_stranded_audits(stale, |audit| workers.can_audit(audit));
        stranded
            .into_iter()
            .flat_map(|entry| self.run_task_here(parts, entry))
            .collect()
    }

    /// Runs the audit task `entry`, which no worker will report on, on the coordinator.
    pub(super) fn run_task_here(&mut self, parts: &mut Parts, entry: TaskEntry) -> Vec<AuditEvent> {
        let Some(audit) = entry.audit else {
            return Vec::new();
        };
        let (puzzle, task) = (entry.puzzle, entry.spec.id);
        if !self.waiting.contains_key(&puzzle) {
            return Vec::new();
        }
        let claim = UnauditedClaim {
            spec: entry.spec,
            audit,
            nodes: u64::MAX,
        };
        self.goes_on_anew(task);
        self.here(parts, puzzle, claim, COORDINATOR_CHUNK_NODES);
        self.resolved(parts, puzzle, task).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{cheap_part, draw, PROBATION_PART_NODES};
    use crate::scheduler::types::{TaskOutcome, TaskSpec};
    use crate::store::Priority;
    use tilesolve::search::PartSize;
    use tilesolve::Board;

    #[test]
    fn a_part_over_the_probation_part_size_is_never_drawn() {
        let goal = Board::blank_last(4);
        let spec = TaskSpec {
            id: 1,
            puzzle: (1, 0),
            board: goal,
            goal,
            heuristic: "linear-conflict".parse().unwrap(),
            path: Vec::new(),
            bound: 10,
            iterate: false,
            node_budget: u64::MAX,
            profile_depth: 1,
            weighted: None,
            priority: Priority::DEFAULT,
        };
        let children = spec.followed_children_below(&goal, &[]);
        assert!(children.len() >= 2, "{children:?}");
        let part = |child: usize, expanded: u64| PartSize {
            moves: vec![children[child].0],
            expanded,
            micros: 1,
        };
        let parts = [
            part(0, PROBATION_PART_NODES),
            part(1, PROBATION_PART_NODES + 1),
        ];
        for pick in (0..10).map(|tenth| f64::from(tenth) / 10.0) {
            let drawn = cheap_part(&spec, &TaskOutcome::Exceeded(12), &parts, pick);
            let (board, moves, claim) = drawn.expect("the cheap part is drawn");
            assert_eq!(
                (board, moves, claim),
                (children[0].1, vec![children[0].0], 12)
            );
        }
        let dear = [part(1, PROBATION_PART_NODES + 1)];
        assert_eq!(
            cheap_part(&spec, &TaskOutcome::Exceeded(12), &dear, 0.5),
            None
        );
    }

    #[test]
    fn draws_spread_over_the_unit_interval() {
        let below: usize = (0..10_000).filter(|&t| draw(42, t) < 0.05).count();
        assert!((350..650).contains(&below), "{below}");
        assert!((0..10_000).all(|t| (0.0..1.0).contains(&draw(7, t))));
    }
}
