//! `export` and `import`: every stored answer out of one coordinator as JSON lines, and into
//! another as batches whose lines carry the claimed moves (`board # moves=...`), one batch per
//! goal. The importing coordinator replays each claim and stores it only once its own search
//! has ruled out anything shorter, so an import never lets a wrong or non-optimal answer in.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use tilesolve::proto::v1 as pb;

use crate::distributed::{client, refused, runtime, submit_lines, ConnectArgs};

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Write here instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Args)]
pub struct ImportArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Heuristic for proving the answers (as for `solve`).
    #[arg(long, default_value = "default")]
    heuristic: String,
    /// Wait for each batch and print its results.
    #[arg(long)]
    wait: bool,
    /// With --wait, one JSON object per board per line.
    #[arg(long)]
    json: bool,
    /// A file `tilesolve export` wrote.
    file: PathBuf,
}

/// One exported answer, a JSON line.
#[derive(Serialize, Deserialize)]
struct Exported {
    board: String,
    goal: String,
    moves: String,
    length: u32,
    heuristic: String,
}

pub fn export(args: ExportArgs) -> anyhow::Result<bool> {
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let count = runtime()?.block_on(async {
        let mut client = client(&args.connect.options()?).await?;
        let mut stream = client
            .export_solutions(pb::ExportSolutionsRequest {})
            .await
            .map_err(refused)?
            .into_inner();
        let mut count = 0u64;
        while let Some(solution) = stream.message().await.map_err(refused)? {
            let line = Exported {
                board: solution.board,
                goal: solution.goal,
                moves: solution.moves,
                length: solution.length,
                heuristic: solution.heuristic,
            };
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
            count += 1;
        }
        anyhow::Ok(count)
    })?;
    out.flush()?;
    eprintln!("exported {count} answers");
    Ok(true)
}

pub fn import(args: ImportArgs) -> anyhow::Result<bool> {
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("opening {}", args.file.display()))?;
    // Batch lines per goal, in file order; a line that is not an export record stops the import
    // before anything is sent, naming the line.
    let mut by_goal: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("reading {}", args.file.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: Exported = serde_json::from_str(&line).with_context(|| {
            format!(
                "{} line {}: not an export record",
                args.file.display(),
                number + 1
            )
        })?;
        by_goal
            .entry(record.goal)
            .or_default()
            .push(format!("{} # moves={}", record.board, record.moves));
    }
    let connect = args.connect.options()?;
    runtime()?.block_on(async {
        let mut all_solved = true;
        for (goal, lines) in by_goal {
            for chunk in lines.chunks(tilesolve_coordinator::scheduler::MAX_BATCH_LINES) {
                all_solved &= submit_lines(
                    &connect,
                    chunk.to_vec(),
                    &args.heuristic,
                    &goal,
                    args.json,
                    args.wait,
                )
                .await?;
            }
        }
        Ok(all_solved)
    })
}

#[derive(Args)]
pub struct PruneArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Remove finished batches submitted at least this many days ago (fractions allowed).
    #[arg(long, value_name = "DAYS")]
    older_than_days: f64,
    /// Remove their answers too (and every board on their paths); by default answers stay,
    /// so queries and later batches still find them.
    #[arg(long)]
    solutions: bool,
}

pub fn prune(args: PruneArgs) -> anyhow::Result<bool> {
    if args.older_than_days.is_nan() || args.older_than_days < 0.0 {
        anyhow::bail!("--older-than-days must be 0 or more");
    }
    let pruned = runtime()?.block_on(async {
        let mut client = client(&args.connect.options()?).await?;
        client
            .prune_batches(pb::PruneBatchesRequest {
                older_than_seconds: (args.older_than_days * 86_400.0) as u64,
                solutions: args.solutions,
            })
            .await
            .map_err(refused)
            .map(|r| r.into_inner())
    })?;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    println!(
        "pruned {} batches ({} items, {} stored boards); store {:.1} MB -> {:.1} MB",
        pruned.batches,
        pruned.items,
        pruned.boards,
        mb(pruned.store_bytes_before),
        mb(pruned.store_bytes_after)
    );
    Ok(true)
}
