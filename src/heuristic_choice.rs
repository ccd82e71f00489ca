//! A heuristic picked at run time: [`HeuristicChoice`] is what a user names (`default`,
//! `manhattan`, `pdb:7-8`, ...) and [`AnyHeuristic`] the built heuristic, classic or pattern
//! database. It sits above both `heuristic` and `pdb`, so neither imports the other's users.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::board::{Board, Position};
use crate::heuristic::{Heuristic, HeuristicKind, LinearConflict, TileCost};
use crate::pdb::{AdditivePdb, PdbError, PdbEvent, PdbStore, Preset, WIDE};

/// A built heuristic of any kind, for code that picks one at run time. The solver matches on it
/// once per search so the kernel itself is compiled per heuristic, with no dynamic dispatch.
#[derive(Clone, Debug)]
pub enum AnyHeuristic {
    TileCost(Box<TileCost>),
    LinearConflict(Box<LinearConflict>),
    Pdb(Arc<AdditivePdb>),
    /// A catalogue of more tables than [`AdditivePdb`]'s narrow state holds.
    WidePdb(Arc<AdditivePdb<WIDE>>),
}

impl AnyHeuristic {
    /// Builds the tables of `kind` for `goal`.
    pub fn build(kind: HeuristicKind, goal: &Board) -> AnyHeuristic {
        match kind {
            HeuristicKind::Hamming => AnyHeuristic::TileCost(Box::new(TileCost::hamming(goal))),
            HeuristicKind::Manhattan => AnyHeuristic::TileCost(Box::new(TileCost::manhattan(goal))),
            HeuristicKind::LinearConflict => {
                AnyHeuristic::LinearConflict(Box::new(LinearConflict::new(goal)))
            }
        }
    }

    /// Bytes of pattern tables this heuristic reads (what a process holds of them in memory).
    pub fn table_bytes(&self) -> u64 {
        match self {
            AnyHeuristic::Pdb(pdb) => pdb.table_bytes(),
            AnyHeuristic::WidePdb(pdb) => pdb.table_bytes(),
            AnyHeuristic::TileCost(_) | AnyHeuristic::LinearConflict(_) => 0,
        }
    }

    pub fn estimate(&self, board: &Board) -> u32 {
        let position = Position::new(board);
        match self {
            AnyHeuristic::TileCost(h) => h.estimate(&position),
            AnyHeuristic::LinearConflict(h) => h.estimate(&position),
            AnyHeuristic::Pdb(h) => h.estimate(&position),
            AnyHeuristic::WidePdb(h) => h.estimate(&position),
        }
    }
}

/// A heuristic as a user names it: `hamming`, `manhattan`, `linear-conflict`, `pdb:PRESET`
/// (e.g. `pdb:7-8`), or `default`: the strongest pattern database of the board's size that fits
/// the memory budget (see [`HeuristicChoice::resolve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeuristicChoice {
    Classic(HeuristicKind),
    Pdb(Preset),
    Default,
}

impl HeuristicChoice {
    /// What this choice means for `goal` when pattern tables may take `table_budget` bytes:
    /// `default` becomes the strongest preset of the board's size that fits (linear conflict if
    /// none does); any other choice is itself.
    pub fn resolve(self, goal: &Board, table_budget: u64) -> HeuristicChoice {
        match self {
            HeuristicChoice::Default => match Preset::strongest_within(goal, table_budget) {
                Some(preset) => HeuristicChoice::Pdb(preset),
                None => HeuristicChoice::Classic(HeuristicKind::LinearConflict),
            },
            concrete => concrete,
        }
    }

    /// The pattern database a resolved choice needs, if any.
    pub fn preset(self) -> Option<Preset> {
        match self {
            HeuristicChoice::Pdb(preset) => Some(preset),
            _ => None,
        }
    }

    /// Builds the heuristic for `goal` (resolving `default` within `table_budget` bytes),
    /// loading or building pattern databases from `pdbs`.
    pub fn build(
        self,
        goal: &Board,
        table_budget: u64,
        pdbs: &PdbStore,
        events: &(dyn Fn(PdbEvent<'_>) + Sync),
    ) -> Result<AnyHeuristic, PdbError> {
        let resolved = self.resolve(goal, table_budget);
        match (resolved, resolved.preset()) {
            (_, Some(preset))
                if preset.tables() <= AdditivePdb::<{ crate::pdb::NARROW }>::MAX_TABLES =>
            {
                Ok(AnyHeuristic::Pdb(Arc::new(
                    pdbs.heuristic(preset, goal, events)?,
                )))
            }
            (_, Some(preset)) => Ok(AnyHeuristic::WidePdb(Arc::new(
                pdbs.heuristic(preset, goal, events)?,
            ))),
            (HeuristicChoice::Classic(kind), None) => Ok(AnyHeuristic::build(kind, goal)),
            (_, None) => Ok(AnyHeuristic::build(HeuristicKind::LinearConflict, goal)),
        }
    }
}

impl fmt::Display for HeuristicChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeuristicChoice::Classic(kind) => write!(f, "{kind}"),
            HeuristicChoice::Pdb(preset) => write!(f, "pdb:{preset}"),
            HeuristicChoice::Default => f.write_str("default"),
        }
    }
}

/// A name that is no heuristic (as an error quotes it, [`crate::excerpt::excerpt`]): the
/// message lists every name there is (the presets from their registry, [`crate::pdb::PRESETS`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown heuristic '{0}' (known: default, hamming, manhattan, linear-conflict, or pdb:NAME \
     with NAME one of {known})",
    known = Preset::names()
)]
pub struct UnknownChoice(pub String);

impl FromStr for HeuristicChoice {
    type Err = UnknownChoice;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if name == "default" {
            return Ok(HeuristicChoice::Default);
        }
        let unknown = || UnknownChoice(crate::excerpt::excerpt(name));
        if let Some(preset) = name.strip_prefix("pdb:") {
            return preset
                .parse()
                .map(HeuristicChoice::Pdb)
                .map_err(|_| unknown());
        }
        name.parse()
            .map(HeuristicChoice::Classic)
            .map_err(|_| unknown())
    }
}

impl HeuristicChoice {
    /// What the CLI's help says of `--heuristic`, from the presets' registry.
    pub fn help() -> String {
        let defaults: Vec<String> = (3..=5)
            .map(|side| {
                let names: Vec<String> = Preset::by_strength(side)
                    .into_iter()
                    .map(Preset::name)
                    .collect();
                format!("{side}x{side}: {}", names.join(" > "))
            })
            .collect();
        format!(
            "Heuristic: default (the strongest pattern database of the board's size whose \
             tables fit --memory-budget, {}; for a rectangle the largest blocks-K that fits, \
             else linear conflict), hamming, manhattan, linear-conflict, or pdb:NAME with NAME \
             one of {}",
            defaults.join("; "),
            Preset::help_in(crate::pdb::PRESETS)
        )
    }
}
