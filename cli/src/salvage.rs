//! `salvage`: what a damaged store still holds, read into a file `tilesolve import` takes (the
//! format `export --batches` writes). The coordinator refuses a damaged store by name (see the
//! store's flush guard); this is the way out it names. The store is copied first and the copy
//! read, so the damaged files stay as they were; every record is read on its own, so one
//! unreadable record costs only itself.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use tilesolve_coordinator::store::{ItemStatus, Store, StoredBatch};

use crate::backup::{write_line, Exported, ExportedBatch, ExportedItem, Tagged};

#[derive(Args)]
pub struct SalvageArgs {
    /// The coordinator's data directory (its store is DIR/store).
    #[arg(long, env = "TILESOLVE_DATA")]
    data: PathBuf,
    /// The file to write.
    #[arg(long, short)]
    output: PathBuf,
}

/// What was read, and what could not be.
#[derive(Default)]
struct Salvaged {
    answers: u64,
    batches: u64,
    unreadable: u64,
}

pub fn run(args: SalvageArgs) -> anyhow::Result<bool> {
    let store_dir = args.data.join("store");
    if !store_dir.is_dir() {
        bail!("{} holds no store", args.data.display());
    }
    let copy = CopyDir(
        args.data
            .join(format!("store.salvage-{}", std::process::id())),
    );
    copy_dir(&store_dir, &copy.0)?;
    let mut salvaged = Salvaged::default();
    let store = match Store::open_damaged(&copy.0) {
        Ok(store) => store,
        Err(error) => {
            // The answers and the batches live in their own logs, readable without sled's.
            eprintln!(
                "{error}\nreading the answer and batch logs without sled's files: every answer \
                 and batch the logs hold comes back, the batches without their items"
            );
            salvaged.unreadable += 1;
            Store::open_logs_alone(&copy.0)?
        }
    };
    let file = std::fs::File::create(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;
    let mut out = std::io::BufWriter::new(file);
    // sled panics on some damaged pages: a tree that does is read as far as it went.
    let answers = catch_unwind(AssertUnwindSafe(|| {
        write_answers(&store, &mut out, &mut salvaged)
    }));
    let batches = catch_unwind(AssertUnwindSafe(|| {
        write_batches(&store, &mut out, &mut salvaged)
    }));
    for (tree, read) in [("answers", answers), ("batches", batches)] {
        match read {
            Ok(written) => written?,
            Err(_) => {
                eprintln!("the store's {tree} could be read only in part");
                salvaged.unreadable += 1;
            }
        }
    }
    out.flush()?;
    eprintln!(
        "salvaged {} answers and {} batches into {} ({} unreadable records); move {} aside, \
         start the coordinator and `tilesolve import {}`",
        salvaged.answers,
        salvaged.batches,
        args.output.display(),
        salvaged.unreadable,
        store_dir.display(),
        args.output.display()
    );
    Ok(salvaged.unreadable == 0)
}

fn write_answers(
    store: &Store,
    out: &mut dyn Write,
    salvaged: &mut Salvaged,
) -> anyhow::Result<()> {
    for entry in store.searched_solutions() {
        let Ok((goal, board, solution)) = entry else {
            salvaged.unreadable += 1;
            continue;
        };
        if Store::verified(&goal, &board, &solution).is_none() {
            salvaged.unreadable += 1;
            continue;
        }
        let line = Exported {
            board: board.to_string(),
            goal: goal.to_string(),
            moves: solution.moves,
            length: solution.length,
            heuristic: solution.heuristic,
        };
        write_line(out, &line)?;
        salvaged.answers += 1;
    }
    Ok(())
}

fn write_batches(
    store: &Store,
    out: &mut dyn Write,
    salvaged: &mut Salvaged,
) -> anyhow::Result<()> {
    for batch in store.each_batch() {
        let Ok(batch) = batch else {
            salvaged.unreadable += 1;
            continue;
        };
        let Ok(items) = store.items(batch.id) else {
            salvaged.unreadable += 1;
            continue;
        };
        write_line(
            out,
            &Tagged::Batch(exported_batch(&batch, items.len() as u32)),
        )?;
        for item in items {
            let (length, moves, error) = match item.status {
                ItemStatus::Solved(solution) => (Some(solution.length), Some(solution.moves), None),
                ItemStatus::Failed(reason) => (None, None, Some(reason)),
                // As `export` writes it.
                ItemStatus::Cancelled => (None, None, Some("cancelled".to_string())),
                ItemStatus::Bounded(bounded) => (
                    None,
                    None,
                    Some(crate::backup::bounded_note(
                        bounded.length,
                        &bounded.moves,
                        bounded.lower_bound,
                    )),
                ),
                ItemStatus::Queued => (None, None, None),
            };
            let exported = ExportedItem {
                batch: batch.id,
                line: item.line.unwrap_or(0),
                text: item.text,
                length,
                moves,
                error,
            };
            write_line(out, &Tagged::Item(exported))?;
        }
        salvaged.batches += 1;
    }
    Ok(())
}

fn exported_batch(batch: &StoredBatch, items: u32) -> ExportedBatch {
    ExportedBatch {
        id: batch.id,
        submitted_unix_ms: batch.submitted_unix_ms,
        heuristic: batch.heuristic.clone(),
        goal: batch.goal.clone().unwrap_or_default(),
        cancelled: batch.cancelled,
        items,
        time_limit_seconds: batch.limits.seconds.unwrap_or(0.0),
        node_limit: batch.limits.nodes.unwrap_or(0),
        suboptimal_percent: batch.limits.suboptimal_percent.unwrap_or(0),
        priority: batch.priority.get().into(),
        owner: batch
            .owner
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
    }
}

/// The store's copy, removed when the salvage ends however it ends.
struct CopyDir(PathBuf);

impl Drop for CopyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies the directory `from` (files and subdirectories) to `to`.
fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
