//! The discrete-event run: the scheduler's policy applied to a recorded run for P virtual
//! workers.

use std::collections::HashSet;

use tilesolve::pdb::PdbStore;
use tilesolve::search::child_order;
use tilesolve::{Board, Direction, Solver};

use crate::frontier::{min_mean_task_seconds, seconds_per_node, split_iteration, BalanceParams};
use crate::queue::{Lane, Place, ReadyQueue};
use crate::scheduler::subtree_budget;
use crate::size_history::{PackedPath, SizeHistory};

use super::{SimulateError, SimulationPolicy, SimulationResult};

use super::hand_backs::{board_at, plan, HandBack, IDLE_THREADS_PER_ASK, LONG_POLL_SECONDS};
use super::model::*;
use super::threads::*;

pub(super) struct PuzzleState {
    pub(super) solver: Solver,
    /// The iteration in progress (`None`: the whole-puzzle task).
    pub(super) iteration: Option<usize>,
    /// The iteration split when the whole-puzzle task ends.
    pub(super) first_split: usize,
    pub(super) outstanding: usize,
    pub(super) done: bool,
    /// Sizes measured in the iteration in progress, as the tasks' reports would give them.
    pub(super) history: SizeHistory,
    /// Nodes searched so far, and the threads' seconds they took (the rate a split sizes
    /// tasks by).
    pub(super) nodes: u64,
    pub(super) seconds: f64,
}

/// Replays `puzzles` (submitted together, as one batch) with `workers` one-thread workers.
pub fn simulate(
    puzzles: &[RecordedPuzzle],
    pdbs: &PdbStore,
    policy: &SimulationPolicy,
    workers: usize,
) -> Result<SimulationResult, SimulateError> {
    let workers = workers.max(1);
    let mut sim = Simulation {
        puzzles,
        policy,
        workers,
        states: Vec::new(),
        queue: ReadyQueue::default(),
        waves: 0,
        coordinator_free: 0.0,
        splits_done: Vec::new(),
        audits_owed: 0.0,
        asked: HashSet::new(),
        result: SimulationResult {
            workers,
            makespan_seconds: 0.0,
            tasks: 0,
            busy_seconds: 0.0,
            predicted_seconds: 0.0,
            split_seconds: 0.0,
            split_estimates: 0,
            audit_seconds: 0.0,
            withdrawn_seconds: 0.0,
            granularity_limited: false,
            puzzle_seconds: vec![0.0; puzzles.len()],
        },
    };
    for (index, puzzle) in puzzles.iter().enumerate() {
        let solver = puzzle.solver(pdbs)?;
        let whole = puzzle.whole_task(policy.whole_task_budget, &solver);
        sim.states.push(PuzzleState {
            solver,
            iteration: None,
            first_split: whole.first_split,
            outstanding: 1,
            done: false,
            history: SizeHistory::default(),
            nodes: 0,
            seconds: 0.0,
        });
        sim.waves += 1;
        let place = Place {
            turn: 0,
            wave: sim.waves,
            order: Vec::new(),
        };
        sim.queue.push(
            &Lane::default(),
            0,
            place,
            SimTask {
                puzzle: index,
                iteration: None,
                board: puzzle.board,
                path: Vec::new(),
                order: Vec::new(),
                units: 0..0,
                nodes: whole.nodes,
                seconds: whole.seconds,
                predicted_seconds: 0.0,
                found: whole.found,
                turn: 0,
                wave: 0,
                predicted: whole.nodes,
                audit: false,
            },
        );
    }
    sim.run();
    // A puzzle the recording solved whole cannot be split here: when it ends last, the
    // recording, not the policy, set the wall.
    let result = &mut sim.result;
    let last = (0..puzzles.len())
        .max_by(|&a, &b| result.puzzle_seconds[a].total_cmp(&result.puzzle_seconds[b]));
    result.granularity_limited |=
        workers > 1 && last.is_some_and(|last| puzzles[last].iterations.is_empty());
    Ok(sim.result)
}

pub(super) struct Simulation<'a> {
    pub(super) puzzles: &'a [RecordedPuzzle],
    pub(super) policy: &'a SimulationPolicy,
    pub(super) workers: usize,
    pub(super) states: Vec<PuzzleState>,
    pub(super) queue: ReadyQueue<SimTask>,
    pub(super) waves: u64,
    /// When the coordinator is next free to serve a call.
    pub(super) coordinator_free: f64,
    /// Splits under way outside the coordinator's lock: when each is done, and its tasks.
    pub(super) splits_done: Vec<(f64, Vec<SimTask>)>,
    /// Audits owed: a share of each report, one audit per whole unit.
    pub(super) audits_owed: f64,
    /// The starts of running tasks asked to hand back.
    pub(super) asked: HashSet<u64>,
    pub(super) result: SimulationResult,
}

impl Simulation<'_> {
    pub(super) fn run(&mut self) {
        let mut now = 0.0f64;
        let mut threads = Threads::new(self.workers);
        loop {
            let next_split = self.queue_split_tasks(now);
            self.lease_queued(&mut threads, now);
            if self.policy.returns {
                self.return_held(&mut threads, now);
            }
            let next_look = self.ask_hand_backs(&mut threads, now);
            let next_task = threads.next_end();
            let wake = [next_split, next_look]
                .into_iter()
                .flatten()
                .min_by(f64::total_cmp);
            if let Some(at) = wake.filter(|&at| next_task.is_none_or(|task| at <= task)) {
                now = at;
                continue;
            }
            let Some((slot, task, started, at, start)) = threads.next_finished() else {
                break;
            };
            now = at;
            let natural_end = started + self.search_seconds(&task);
            let handing_back = self.asked.remove(&start)
                && !self.states[task.puzzle].done
                && now + 1e-9 < natural_end;
            let handed = if handing_back {
                let handed = self.plan_for(&task, now - started);
                if handed.is_none() {
                    // Nothing to hand back after all: it runs on.
                    threads.start(slot, task, started, natural_end - started);
                    continue;
                }
                handed
            } else {
                None
            };
            self.start_held(&mut threads, slot, now);
            let searched = (now - started).max(0.0);
            self.result.busy_seconds += searched;
            if task.seconds > 0.0 {
                self.result.predicted_seconds +=
                    task.predicted_seconds * (searched / task.seconds).min(1.0);
            }
            let puzzle = task.puzzle;
            if task.audit {
                self.result.audit_seconds += searched;
                continue;
            }
            if self.states[puzzle].done {
                // What it searched after the answer, before its worker learnt of it.
                let solved = self.result.puzzle_seconds[puzzle];
                self.result.withdrawn_seconds += (now - started.max(solved)).max(0.0);
                continue;
            }
            if let Some(handed) = handed {
                self.hand_back(&task, handed, now);
                continue;
            }
            if self.over_budget(&task) {
                if let Some(children) = self.children(&task) {
                    self.states[puzzle].outstanding += children.len();
                    let predicted = task.predicted / children.len().max(1) as u64;
                    for mut child in children {
                        child.predicted = predicted;
                        (child.turn, child.wave) = (task.turn, task.wave);
                        self.queue_in_place(child);
                    }
                    self.finish_task(puzzle, now);
                    continue;
                }
            }
            if task.found && !self.policy.exhaustive {
                self.states[puzzle].done = true;
                self.result.puzzle_seconds[puzzle] = now;
                // Cancel the puzzle's tasks: prefetched ones are dropped, running ones stop at
                // their worker's next heartbeat.
                for slot in 0..self.workers {
                    threads.held[slot].retain(|(t, _)| t.puzzle != puzzle || t.audit);
                    threads.cancel_at(slot, puzzle, self.next_heartbeat(slot, now));
                }
                continue;
            }
            self.audit_share(&task);
            self.report_sizes(&task);
            self.finish_task(puzzle, now);
        }
        // The batch ends with its last answer: audits and withdrawn tasks after it do not count.
        self.result.makespan_seconds = self
            .result
            .puzzle_seconds
            .iter()
            .copied()
            .fold(0.0, f64::max);
    }

    /// Leases queued tasks: to idle threads first, then to threads with room to prefetch (or,
    /// with `prefetch_before_idle`, each worker in turn takes all it may hold).
    pub(super) fn lease_queued(&mut self, threads: &mut Threads, now: f64) {
        while let Some((slot, runs_now)) =
            threads.wanting(self.policy.prefetch, self.policy.prefetch_before_idle)
        {
            let Some(task) = self.queue.pop() else {
                break;
            };
            if self.states[task.puzzle].done && !task.audit {
                continue;
            }
            // The coordinator serves one call at a time: a lease waits for it.
            let leased = now.max(self.coordinator_free);
            self.coordinator_free = leased + self.policy.coordinator_seconds_per_task;
            let arrives = leased + self.policy.overhead_seconds;
            self.result.tasks += 1;
            if runs_now {
                let seconds = self.search_seconds(&task);
                threads.start(slot, task, arrives, seconds);
            } else {
                threads.held[slot].push_back((task, arrives));
            }
        }
    }

    /// With threads idle and nothing queued, asks the longest running subtree tasks that went
    /// out at least the policy's `hand_back_after_seconds` ago to hand back, one for every
    /// [`IDLE_THREADS_PER_ASK`] idle threads (those asked and still running count): each stops
    /// a round trip from now. Returns when a starved worker looks again, while threads idle.
    pub(super) fn ask_hand_backs(&mut self, threads: &mut Threads, now: f64) -> Option<f64> {
        let idle = threads.running.iter().filter(|r| r.is_none()).count();
        if !self.policy.hand_backs || idle == 0 || !self.queue.is_empty() {
            return None;
        }
        let after = self.policy.hand_back_after_seconds;
        // Tasks that may be asked, now or once they are old enough.
        let mut running: Vec<(f64, usize, u64)> = threads
            .running
            .iter()
            .enumerate()
            .filter_map(|(slot, running)| {
                let (task, started, start) = running.as_ref()?;
                let can = task.iteration.is_some()
                    && !task.audit
                    && !self.is_unit(task)
                    && !self.over_budget(task)
                    && !self.states[task.puzzle].done
                    && !self.asked.contains(start);
                can.then_some((*started, slot, *start))
            })
            .collect();
        if running.is_empty() {
            return None;
        }
        running.sort_by(|a, b| a.0.total_cmp(&b.0));
        let asked_running = threads
            .running
            .iter()
            .flatten()
            .filter(|(_, _, start)| self.asked.contains(start))
            .count();
        let mut room = idle
            .div_ceil(IDLE_THREADS_PER_ASK)
            .saturating_sub(asked_running);
        let stops = now + self.policy.overhead_seconds;
        for (started, slot, start) in running {
            if room == 0 || now - started < after {
                break;
            }
            let Some((task, _, _)) = &threads.running[slot] else {
                continue;
            };
            if self.plan_for(task, stops - started).is_none() {
                continue;
            }
            self.asked.insert(start);
            threads.stop_at(slot, stops);
            room -= 1;
        }
        // Starved workers poll again as their long polls end, one after another.
        let look_every = (LONG_POLL_SECONDS / idle as f64).max(after / 20.0);
        Some(now + look_every.max(1e-6))
    }

    /// The hand-back of `task` stopped `elapsed` seconds into its search.
    pub(super) fn plan_for(&self, task: &SimTask, elapsed: f64) -> Option<HandBack> {
        let iteration = task.iteration?;
        let recorded = &self.puzzles[task.puzzle];
        let (units, bound) = (
            &recorded.iterations[iteration].units,
            recorded.iterations[iteration].bound,
        );
        let solver = &self.states[task.puzzle].solver;
        let order = |path: &[u8]| search_order(solver, &recorded.board, bound, path);
        let mut searched: Vec<(usize, &Unit)> = self
            .searched_units(task.puzzle, iteration, task.units.clone())
            .into_iter()
            .map(|at| (at, &units[at]))
            .collect();
        searched.sort_by_cached_key(|(_, unit)| order(&unit.path));
        plan(
            &searched,
            &order,
            task.path.len(),
            self.policy.profile_depth,
            elapsed,
        )
    }

    /// `task`, asked to hand back, stopped at `now` as `handed` says: what it searched counts
    /// (its sizes reported, a share audited), and what it did not is queued in its place.
    pub(super) fn hand_back(&mut self, task: &SimTask, handed: HandBack, now: f64) {
        let (puzzle, iteration) = (task.puzzle, task.iteration.unwrap_or_default());
        let recorded = &self.puzzles[puzzle];
        let units = &recorded.iterations[iteration].units;
        let (mut nodes, mut seconds) = (0, 0.0);
        let depth = task.path.len() + self.policy.profile_depth as usize;
        for &index in &handed.kept {
            let unit = &units[index];
            (nodes, seconds) = (nodes + unit.nodes, seconds + unit.seconds);
            let cut = unit.path.len().min(depth);
            self.states[puzzle].history.add(
                PackedPath::new(unit.path[..cut].iter().copied()),
                unit.nodes,
            );
        }
        let mut queued = Vec::new();
        if let Some((index, searched)) = handed.split_unit {
            let unit = &units[index];
            nodes += (unit.nodes as f64 * searched) as u64;
            seconds += unit.seconds * searched;
            queued.extend(self.rest_of_unit(task, index, 1.0 - searched));
        }
        self.states[puzzle].nodes += nodes;
        // The claim is audited like any report's.
        self.audit_share(&SimTask {
            units: 0..0,
            nodes,
            seconds,
            predicted_seconds: 0.0,
            found: false,
            ..task.clone()
        });
        for path in handed.paths {
            if let Some(board) = board_at(recorded.board, &path) {
                queued.push(self.task_below(puzzle, iteration, board, path));
            }
        }
        let predicted = task.predicted / queued.len().max(1) as u64;
        self.states[puzzle].outstanding += queued.len();
        let bound = recorded.iterations[iteration].bound;
        for child in queued {
            let order = search_order(
                &self.states[puzzle].solver,
                &recorded.board,
                bound,
                &child.path,
            );
            self.queue_in_place(SimTask {
                order,
                predicted,
                turn: task.turn,
                wave: task.wave,
                ..child
            });
        }
        self.finish_task(puzzle, now);
    }

    /// The `left` share of unit `index` below `task`, as a task of its own (one unit: it is
    /// not split or asked again).
    pub(super) fn rest_of_unit(&self, task: &SimTask, index: usize, left: f64) -> Option<SimTask> {
        let iteration = task.iteration?;
        let recorded = &self.puzzles[task.puzzle];
        let unit = &recorded.iterations[iteration].units[index];
        let seconds = unit.seconds * left;
        Some(SimTask {
            board: board_at(recorded.board, &unit.path)?,
            path: unit.path.clone(),
            units: index..index + 1,
            nodes: (unit.nodes as f64 * left) as u64,
            seconds,
            predicted_seconds: if unit.predicted { seconds } else { 0.0 },
            found: unit.found,
            audit: false,
            ..task.clone()
        })
    }

    /// Queues `task` at its turn, wave and order.
    pub(super) fn queue_in_place(&mut self, task: SimTask) {
        let place = Place {
            turn: task.turn,
            wave: task.wave,
            order: task.order.clone(),
        };
        self.queue.push(&Lane::default(), 0, place, task);
    }

    /// When the worker of `slot` next calls the coordinator at the latest: its heartbeats
    /// come every `heartbeat_seconds`, each worker's at its own phase.
    pub(super) fn next_heartbeat(&self, slot: usize, now: f64) -> f64 {
        let every = self.policy.heartbeat_seconds;
        if every <= 0.0 {
            return now;
        }
        let phase = every * slot as f64 / self.workers as f64;
        phase + ((now - phase) / every).ceil().max(0.0) * every
    }

    /// Queues an audit of `task` when its report is the one of the share due one.
    pub(super) fn audit_share(&mut self, task: &SimTask) {
        self.audits_owed += self.policy.audit_fraction;
        if self.audits_owed < 1.0 {
            return;
        }
        self.audits_owed -= 1.0;
        let turn = self.queue.turn_now();
        let audit = SimTask {
            audit: true,
            found: false,
            turn,
            ..task.clone()
        };
        let place = Place {
            turn,
            wave: task.wave,
            order: task.order.clone(),
        };
        self.queue.push(&Lane::default(), 0, place, audit);
    }

    /// Idle threads, with nothing queued, take tasks waiting unstarted behind other threads'
    /// (the newest first), as the coordinator asks their workers to return them: two round
    /// trips later (the ask and the return, then the lease).
    pub(super) fn return_held(&self, threads: &mut Threads, now: f64) {
        while let Some(idle) = threads.running.iter().position(Option::is_none) {
            let Some(holder) = threads.held.iter().position(|held| !held.is_empty()) else {
                return;
            };
            let Some((task, arrives)) = threads.held[holder].pop_back() else {
                return;
            };
            if self.states[task.puzzle].done && !task.audit {
                continue;
            }
            let seconds = self.search_seconds(&task);
            let at = now.max(arrives) + 2.0 * self.policy.overhead_seconds;
            threads.start(idle, task, at, seconds);
        }
    }

    /// A thread is free at `now`: it starts the first task it prefetched (once that arrives).
    pub(super) fn start_held(&self, threads: &mut Threads, slot: usize, now: f64) {
        while let Some((task, arrives)) = threads.held[slot].pop_front() {
            if self.states[task.puzzle].done && !task.audit {
                continue;
            }
            let seconds = self.search_seconds(&task);
            threads.start(slot, task, now.max(arrives), seconds);
            return;
        }
    }

    /// Seconds a task searches: all of it, or its budget's share when it is over budget.
    pub(super) fn search_seconds(&self, task: &SimTask) -> f64 {
        if self.over_budget(task) && task.nodes > 0 {
            let share = self.budget(task) as f64 / task.nodes as f64;
            return task.seconds * share;
        }
        task.seconds
    }

    /// The task's node budget, as the scheduler sets it.
    pub(super) fn budget(&self, task: &SimTask) -> u64 {
        subtree_budget(self.policy.subtree_task_budget, task.predicted)
    }

    pub(super) fn over_budget(&self, task: &SimTask) -> bool {
        let budget = self.budget(task);
        task.iteration.is_some() && budget > 0 && task.nodes > budget && !self.is_unit(task)
    }

    /// A task that is one unit cannot be split further in a replay.
    pub(super) fn is_unit(&self, task: &SimTask) -> bool {
        task.units.len() <= 1
    }

    /// One of a puzzle's tasks is done; after its iteration's last, the next is split (the
    /// puzzle is done when there is none, or when the split itself meets the goal).
    pub(super) fn finish_task(&mut self, puzzle: usize, now: f64) {
        let state = &mut self.states[puzzle];
        state.outstanding = state.outstanding.saturating_sub(1);
        if state.outstanding > 0 {
            return;
        }
        let puzzles = self.puzzles;
        let mut next = state.iteration.map_or(state.first_split, |i| i + 1);
        // Splits run one after another beside the coordinator's calls (outside its lock).
        let mut at = now;
        while let Some(iteration) = puzzles[puzzle].iterations.get(next) {
            let (tasks, seconds) = self.split(puzzle, next, iteration);
            at += seconds;
            let Some(tasks) = tasks else {
                break;
            };
            let state = &mut self.states[puzzle];
            state.iteration = Some(next);
            if !tasks.is_empty() {
                state.outstanding = tasks.len();
                self.waves += 1;
                let wave = self.waves;
                let tasks = tasks
                    .into_iter()
                    .map(|(_, task)| SimTask { wave, ..task })
                    .collect();
                self.splits_done.push((at, tasks));
                return;
            }
            next += 1;
        }
        self.states[puzzle].done = true;
        self.result.puzzle_seconds[puzzle] = at;
    }

    /// Queues the tasks of the splits done by `now`; returns when the next one will be.
    pub(super) fn queue_split_tasks(&mut self, now: f64) -> Option<f64> {
        let (done, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut self.splits_done)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.splits_done = pending;
        for (_, tasks) in done {
            // In search order: the k-th waits for the k-th round from now, as the scheduler's.
            let turn = self.queue.turn_now();
            for (rank, mut task) in (0u64..).zip(tasks) {
                task.turn = turn + rank;
                let place = Place {
                    turn: task.turn,
                    wave: task.wave,
                    order: task.order.clone(),
                };
                self.queue.push(&Lane::default(), 0, place, task);
            }
        }
        self.splits_done
            .iter()
            .map(|(at, _)| *at)
            .min_by(f64::total_cmp)
    }

    /// The tasks of an iteration, as the policy splits it for this many workers (`None` when
    /// the split meets the goal), and the seconds the split took.
    pub(super) fn split(
        &mut self,
        puzzle: usize,
        index: usize,
        iteration: &Iteration,
    ) -> (Option<Vec<(u64, SimTask)>>, f64) {
        let deepest = iteration
            .units
            .iter()
            .filter(|u| !u.interior)
            .map(|u| u.path.len() as u32)
            .min()
            .unwrap_or(0);
        let unfinished = self.states.iter().filter(|s| !s.done).count();
        let params = BalanceParams {
            threads: crate::frontier::iteration_threads(self.workers, unfinished),
            connected_threads: self.workers,
            tasks_per_thread: self.policy.tasks_per_thread,
            balance: self.policy.split_balance,
            min_split_nodes: self.policy.min_split_nodes,
            min_split_nodes_per_thread: self.policy.min_split_nodes_per_thread,
            max_depth: deepest,
            seconds_per_node: seconds_per_node(
                self.states[puzzle].nodes,
                self.states[puzzle].seconds,
            ),
            min_mean_task_seconds: min_mean_task_seconds(
                self.workers,
                self.policy.coordinator_seconds_per_task,
            ),
        };
        // A subtree can be split only if it lies above the units it holds, not inside one.
        let splittable = |path: &[Direction]| {
            let path: Vec<u8> = path.iter().map(|&d| d as u8).collect();
            !inside_unit(&iteration.units, &path)
        };
        let state = &mut self.states[puzzle];
        let root = self.puzzles[puzzle].board;
        let history = std::mem::take(&mut state.history);
        let frontier = split_iteration(
            &root,
            &state.solver,
            iteration.bound,
            &history,
            state.nodes,
            params,
            &splittable,
        );
        let seconds = frontier.estimates as f64
            * self.puzzles[puzzle].split_seconds_per_estimate(self.policy);
        self.result.split_seconds += seconds;
        self.result.split_estimates += frontier.estimates;
        if frontier.solution.is_some() {
            return (None, seconds);
        }
        self.result.granularity_limited |= frontier.depth_limited;
        let tasks = Some(
            frontier
                .tasks
                .into_iter()
                .map(|subtree| {
                    let path = subtree.path.iter().map(|&d| d as u8).collect();
                    let task = self.task_below(puzzle, index, subtree.board, path);
                    (
                        subtree.predicted,
                        SimTask {
                            predicted: subtree.predicted,
                            order: subtree.order,
                            ..task
                        },
                    )
                })
                .collect(),
        );
        (tasks, seconds)
    }

    /// What a finished task's report adds to its puzzle's history: its units, no finer than
    /// the parts a worker reports.
    pub(super) fn report_sizes(&mut self, task: &SimTask) {
        let state = &mut self.states[task.puzzle];
        state.nodes += task.nodes;
        state.seconds += task.seconds;
        let Some(iteration) = task.iteration else {
            state.history = self.puzzles[task.puzzle].prelude_history(self.policy);
            return;
        };
        let depth = task.path.len() + self.policy.profile_depth as usize;
        for unit in &self.puzzles[task.puzzle].iterations[iteration].units[task.units.clone()] {
            let cut = unit.path.len().min(depth);
            state.history.add(
                PackedPath::new(unit.path[..cut].iter().copied()),
                unit.nodes,
            );
        }
    }

    /// The task for the subtree below `path` in an iteration, with its units.
    pub(super) fn task_below(
        &self,
        puzzle: usize,
        iteration: usize,
        board: Board,
        path: Vec<u8>,
    ) -> SimTask {
        let units = &self.puzzles[puzzle].iterations[iteration].units;
        let start = units.partition_point(|u| u.path < path);
        let end = start + units[start..].partition_point(|u| u.path.starts_with(&path));
        let mut task = SimTask {
            puzzle,
            iteration: Some(iteration),
            board,
            path,
            order: Vec::new(),
            units: start..end,
            nodes: 0,
            seconds: 0.0,
            predicted_seconds: 0.0,
            found: false,
            turn: 0,
            wave: 0,
            predicted: 0,
            audit: false,
        };
        for unit in self.searched_units(puzzle, iteration, start..end) {
            let unit = &units[unit];
            task.nodes += unit.nodes;
            task.seconds += unit.seconds;
            if unit.predicted {
                task.predicted_seconds += unit.seconds;
            }
            task.found |= unit.found;
        }
        task
    }

    /// The units of `range` (an iteration's units below a task's path) its task searches, by
    /// their positions in the iteration: a task that meets the solution stops there, having
    /// searched what one thread meets before it.
    pub(super) fn searched_units(
        &self,
        puzzle: usize,
        iteration: usize,
        range: std::ops::Range<usize>,
    ) -> Vec<usize> {
        if self.policy.exhaustive {
            return range.collect();
        }
        let recorded = &self.puzzles[puzzle];
        let iteration = &recorded.iterations[iteration];
        let solver = &self.states[puzzle].solver;
        let first = range.start;
        searched_to_goal(
            &iteration.units[range],
            solver,
            &recorded.board,
            iteration.bound,
        )
        .into_iter()
        .map(|at| first + at)
        .collect()
    }

    /// An over-budget task's children within the bound, as the scheduler queues them; `None`
    /// when the recording is not fine enough to tell them apart.
    pub(super) fn children(&self, task: &SimTask) -> Option<Vec<SimTask>> {
        let iteration = task.iteration?;
        let units = &self.puzzles[task.puzzle].iterations[iteration].units[task.units.clone()];
        if !units
            .iter()
            .any(|u| u.path.len() > task.path.len() && !u.interior)
        {
            return None;
        }
        let solver = &self.states[task.puzzle].solver;
        let bound = self.puzzles[task.puzzle].iterations[iteration].bound;
        let parent = (bound, task.path.len() as u32, solver.estimate(&task.board));
        let mut seen = HashSet::new();
        let mut children = Vec::new();
        for unit in units.iter().filter(|u| u.path.len() > task.path.len()) {
            let step = unit.path[task.path.len()];
            if !seen.insert(step) {
                continue;
            }
            let direction = Direction::from_index(step);
            let (board, _) = task.board.apply(direction)?;
            let child_h = solver.estimate(&board);
            let mut path = task.path.clone();
            path.push(step);
            children.push(SimTask {
                order: child_order(solver.pruning(), &task.order, parent, child_h, direction),
                ..self.task_below(task.puzzle, iteration, board, path)
            });
        }
        Some(children)
    }
}
