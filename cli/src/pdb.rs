//! `tilesolve pdb build|info|verify`: pattern databases in the data directory.

use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use tilesolve::pdb::{file, PdbStore, Preset};
use tilesolve::{Goal, Shape};

use crate::options::DataArgs;
use crate::output::outln;
use crate::progress;

#[derive(Subcommand)]
pub enum PdbCommand {
    /// Build a preset's tables (or check they are already there and intact).
    Build(BuildArgs),
    /// List the tables in the data directory.
    Info(DataOnly),
    /// Check every table in the data directory against its checksum, read from disk (a table
    /// no process maps is cached again in 2 MiB pages, as searches want it).
    Verify(DataOnly),
}

#[derive(Args)]
pub struct BuildArgs {
    // The presets, from their registry (`tilesolve::pdb::PRESETS`); `blocks-K` with --size.
    #[arg(help = Preset::help_in(tilesolve::pdb::PRESETS))]
    preset: Preset,
    /// Rows x columns of the boards, for a `blocks-K` preset: e.g. 4x5.
    #[arg(long, value_name = "RxC")]
    size: Option<Shape>,
    /// Goal the tables are built for: `default`, `korf` or a board.
    #[arg(long, default_value = "default")]
    goal: Goal,
    /// Rebuild even if intact tables are present.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Args)]
pub struct DataOnly {
    #[command(flatten)]
    data: DataArgs,
}

pub fn run(command: PdbCommand) -> anyhow::Result<bool> {
    match command {
        PdbCommand::Build(args) => build(args),
        PdbCommand::Info(args) => list(&args.data, false),
        PdbCommand::Verify(args) => list(&args.data, true),
    }
}

fn build(args: BuildArgs) -> anyhow::Result<bool> {
    let store = args.data.store();
    let shape = match (args.preset.square_side(), args.size) {
        (Some(side), None) => Shape::square(side),
        (_, Some(shape)) => shape,
        (None, None) => anyhow::bail!("pdb {}: give the board's shape: --size RxC", args.preset),
    };
    let goal = args.goal.for_shape(shape);
    let specs = PdbStore::specs(args.preset, &goal)?;
    let to_build: Vec<_> = specs
        .iter()
        .filter(|spec| args.force || !store.path_of(spec).exists())
        .collect();
    let estimate: f64 = to_build
        .iter()
        .map(|spec| PdbStore::estimated_build_seconds(spec))
        .sum();
    eprintln!(
        "pdb {} for goal {goal}: {} tables, {:.1} MB in memory; {} to build, about {}",
        args.preset,
        specs.len(),
        specs
            .iter()
            .map(|spec| spec.entry_bytes(spec.packs()))
            .sum::<u64>() as f64
            / 1e6,
        to_build.len(),
        progress::duration(estimate)
    );
    let started = Instant::now();
    let mut bytes = 0;
    for spec in specs {
        let table = if args.force {
            store.build(&spec, &progress::pdb_events)?
        } else {
            store.table(&spec, &progress::pdb_events)?
        };
        bytes += table.len();
        outln!(
            "{}  {} bytes of entries  checksum {:016x}",
            store.path_of(&spec).display(),
            table.len(),
            table.checksum
        )?;
    }
    outln!(
        "pdb {} for goal {goal}: {:.1} MB in {:.1} s",
        args.preset,
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    )?;
    Ok(true)
}

/// Lists (and with `verify`, checks) every `.pdb` file; returns whether all were good.
fn list(data: &DataArgs, verify: bool) -> anyhow::Result<bool> {
    let dir = &data.dir;
    let mut paths: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pdb"))
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(error).with_context(|| format!("reading {}", dir.display())),
    };
    paths.sort();
    if paths.is_empty() {
        outln!("no pattern databases in {}", dir.display())?;
    }
    let mut all_good = true;
    for path in paths {
        let started = Instant::now();
        match file::inspect(&path, verify) {
            Ok(header) => {
                let verdict = if verify {
                    format!("  ok ({:.2} s)", started.elapsed().as_secs_f64())
                } else {
                    String::new()
                };
                outln!(
                    "{}  {} goal {}  tiles {:?}  {} entries{}  checksum {:016x}{verdict}",
                    path.display(),
                    header.spec.goal.shape(),
                    header.spec.goal,
                    header.spec.tiles,
                    header.spec.stored_entries(header.packed),
                    match (header.packed, header.spec.zero_aware) {
                        (true, true) => " (zero-aware by blank cell, packed)",
                        (true, false) => " (packed)",
                        (false, true) => " (zero-aware by region)",
                        (false, false) => "",
                    },
                    header.checksum
                )?;
            }
            Err(error) => {
                all_good = false;
                outln!("{}  BAD: {error}", path.display())?;
            }
        }
    }
    Ok(all_good)
}
