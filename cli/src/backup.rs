//! `export` and `import`: every stored answer out of one coordinator as JSON lines, and into
//! another as batches whose lines carry the claimed moves (`board # moves=...`), one batch per
//! goal. The importing coordinator replays each claim and stores it only once its own search
//! has ruled out anything shorter, so an import never lets a wrong or non-optimal answer in.
//!
//! With `export --batches` the file also holds every batch: a `{"batch": ...}` line (its id,
//! heuristic, goal, submission time, whether it was cancelled) followed by one `{"item": ...}`
//! line per item (its line number, its text, and its answer or error). `import` submits those
//! batches again after every answer was proven, so their items are answered from the store.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use serde::{Deserialize, Serialize};
use tilesolve::proto::v1 as pb;
use tilesolve::{parse_board, Board};
use tilesolve_coordinator::scheduler::MAX_BATCH_LINES;

use crate::calls::{connect, CallError, Client, Coordinator};
use crate::distributed::{progress_bar, runtime, submit_lines, wait_until_done, ConnectArgs};
use crate::results::FormatArgs;

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Write here instead of standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Also write every stored batch with its items, so `import` submits them again.
    #[arg(long)]
    batches: bool,
}

#[derive(Args)]
pub struct ImportArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Heuristic for proving the answers (as for `solve`); imported batches keep their own.
    #[arg(long, default_value = "default")]
    heuristic: String,
    /// Wait for each batch and print its results.
    #[arg(long)]
    wait: bool,
    /// With --wait: the results' format.
    #[command(flatten)]
    output: FormatArgs,
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

/// A batch's own line in an export; its items follow it.
#[derive(Serialize, Deserialize)]
struct ExportedBatch {
    id: u64,
    submitted_unix_ms: u64,
    heuristic: String,
    /// The goal its items were solved towards (empty when no line of it was valid).
    goal: String,
    cancelled: bool,
    items: u32,
}

/// One item of the batch before it in an export.
#[derive(Serialize, Deserialize)]
struct ExportedItem {
    batch: u64,
    /// 1-based line in the submitted file (0: not known).
    line: u32,
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    moves: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// The lines of an export that are not answers.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Tagged {
    Batch(ExportedBatch),
    Item(ExportedItem),
}

fn write_line(out: &mut dyn Write, value: &impl Serialize) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}

pub fn export(args: ExportArgs) -> anyhow::Result<bool> {
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let (answers, batches) = runtime()?.block_on(async {
        let mut client = connect(&args.connect.options()?).await?;
        let mut stream = client
            .export_solutions(pb::ExportSolutionsRequest {})
            .await
            .map_err(CallError::from)?
            .into_inner();
        let mut answers = 0u64;
        while let Some(solution) = stream.message().await.map_err(CallError::from)? {
            let line = Exported {
                board: solution.board,
                goal: solution.goal,
                moves: solution.moves,
                length: solution.length,
                heuristic: solution.heuristic,
            };
            write_line(&mut out, &line)?;
            answers += 1;
        }
        let batches = if args.batches {
            export_batches(&mut client, &mut out).await?
        } else {
            0
        };
        anyhow::Ok((answers, batches))
    })?;
    out.flush()?;
    if args.batches {
        eprintln!("exported {answers} answers and {batches} batches");
    } else {
        eprintln!("exported {answers} answers");
    }
    Ok(true)
}

/// Writes every stored batch, oldest first, each with its items; returns how many.
async fn export_batches(client: &mut Client, out: &mut dyn Write) -> anyhow::Result<u64> {
    let mut count = 0;
    let mut list_token = String::new();
    loop {
        let listed = client
            .list_batches(pb::ListBatchesRequest {
                page_size: 0,
                page_token: list_token.clone(),
                newest_first: false,
            })
            .await
            .map_err(CallError::from)?
            .into_inner();
        for status in listed.batches {
            export_batch(client, status.batch_id, out).await?;
            count += 1;
        }
        if listed.next_page_token.is_empty() {
            return Ok(count);
        }
        list_token = listed.next_page_token;
    }
}

/// Writes one batch's line and its items' lines. Its items are read first (a page at a time):
/// the batch's line names their goal.
async fn export_batch(client: &mut Client, id: u64, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut items = Vec::new();
    let mut info = None;
    let mut goals = Vec::new();
    let mut token = String::new();
    loop {
        let page = client
            .get_batch(pb::GetBatchRequest {
                batch_id: id,
                page_size: 0,
                page_token: token.clone(),
            })
            .await
            .map_err(CallError::from)?
            .into_inner();
        info = info.or(page.info);
        for item in page.items {
            if !item.goal.is_empty() && !goals.contains(&item.goal) {
                goals.push(item.goal.clone());
            }
            let (length, moves, error) = match item.outcome {
                Some(pb::item_result::Outcome::Solution(solution)) => {
                    (Some(solution.length), Some(solution.moves), None)
                }
                Some(pb::item_result::Outcome::Error(error)) => (None, None, Some(error)),
                None => (None, None, None),
            };
            items.push(ExportedItem {
                batch: id,
                line: item.line,
                text: item.text,
                length,
                moves,
                error,
            });
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let info = info.with_context(|| {
        format!("batch {id}: the coordinator did not say how it was submitted (is it older than this client?)")
    })?;
    let goal = if info.goal.is_empty() {
        goal_named_by(&goals)
    } else {
        info.goal
    };
    let batch = ExportedBatch {
        id,
        submitted_unix_ms: info.submitted_unix_ms,
        heuristic: info.heuristic,
        goal,
        cancelled: info.cancelled,
        items: items.len() as u32,
    };
    write_line(out, &Tagged::Batch(batch))?;
    for item in items {
        write_line(out, &Tagged::Item(item))?;
    }
    Ok(())
}

/// The goal a batch stored before coordinators kept it asked for, from its items' goals: a
/// named goal (which adapts to each board's size) when every one of them is that goal for its
/// size, else the board they share.
fn goal_named_by(goals: &[String]) -> String {
    let boards: Vec<Board> = goals.iter().filter_map(|g| parse_board(g).ok()).collect();
    let all = |named: fn(usize) -> Board| boards.iter().all(|b| *b == named(b.side()));
    if all(Board::blank_last) {
        "blank-last".into()
    } else if all(Board::blank_first) {
        "korf".into()
    } else {
        goals.first().cloned().unwrap_or_default()
    }
}

/// What an export file holds: answer lines by goal, and batches with their items.
#[derive(Default)]
struct ExportFile {
    answers: BTreeMap<String, Vec<String>>,
    batches: Vec<(ExportedBatch, Vec<ExportedItem>)>,
}

impl ExportFile {
    /// Reads an export; a line that is not an export record, or an item that does not follow
    /// its batch, stops the import before anything is sent, naming the line.
    fn read(path: &Path) -> anyhow::Result<ExportFile> {
        let file =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut read = ExportFile::default();
        for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("reading {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let at = || format!("{} line {}", path.display(), number + 1);
            let value: serde_json::Value =
                serde_json::from_str(&line).with_context(|| format!("{}: not JSON", at()))?;
            let tagged = value.get("batch").is_some() || value.get("item").is_some();
            if !tagged {
                let answer: Exported = serde_json::from_value(value)
                    .with_context(|| format!("{}: not an export record", at()))?;
                read.answers
                    .entry(answer.goal)
                    .or_default()
                    .push(format!("{} # moves={}", answer.board, answer.moves));
                continue;
            }
            match serde_json::from_value(value)
                .with_context(|| format!("{}: not a batch or item record", at()))?
            {
                Tagged::Batch(batch) => read.batches.push((batch, Vec::new())),
                Tagged::Item(item) => match read.batches.last_mut() {
                    Some((batch, items)) if batch.id == item.batch => items.push(item),
                    _ => bail!(
                        "{}: an item of batch {} that does not follow that batch's line",
                        at(),
                        item.batch
                    ),
                },
            }
        }
        Ok(read)
    }
}

/// A batch's lines to submit again: each item's text at its original line number (blank lines
/// between keep the numbers), so errors and results name the same lines as before.
fn batch_lines(items: &[ExportedItem]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let line = item.line as usize;
        if line > lines.len() + 1 && line <= MAX_BATCH_LINES {
            lines.resize(line - 1, String::new());
        }
        lines.push(item.text.clone());
    }
    lines
}

pub fn import(args: ImportArgs) -> anyhow::Result<bool> {
    let file = ExportFile::read(&args.file)?;
    let mut coordinator = Coordinator::new(args.connect.options()?);
    runtime()?.block_on(async {
        let mut all_solved = true;
        let mut answer_batches = Vec::new();
        for (goal, lines) in &file.answers {
            for chunk in lines.chunks(MAX_BATCH_LINES) {
                let submitted = submit_lines(
                    &mut coordinator,
                    chunk.to_vec(),
                    &args.heuristic,
                    goal,
                    args.output.format(),
                    args.wait,
                )
                .await?;
                all_solved &= submitted.all_solved;
                answer_batches.push(submitted.batch);
            }
        }
        if file.batches.is_empty() {
            return Ok(all_solved);
        }
        // The batches go in once every answer is proven, so their items come from the store
        // instead of being searched again.
        if !args.wait {
            for batch in answer_batches {
                wait_until_done(&mut coordinator, batch, &progress_bar()).await?;
            }
        }
        for (batch, items) in &file.batches {
            if items.is_empty() {
                eprintln!("batch {}: no items, not imported", batch.id);
                continue;
            }
            let submitted = submit_lines(
                &mut coordinator,
                batch_lines(items),
                &batch.heuristic,
                &batch.goal,
                args.output.format(),
                args.wait && !batch.cancelled,
            )
            .await?;
            eprintln!("batch {} imported as batch {}", batch.id, submitted.batch);
            // A cancelled batch is cancelled again: its items that the store does not answer
            // fail as cancelled, as they did.
            if batch.cancelled {
                let request = pb::CancelBatchRequest {
                    batch_id: submitted.batch,
                };
                coordinator
                    .call(|mut client| async move { client.cancel_batch(request).await })
                    .await?;
            }
        }
        // Items of the batches end as they did (a bad line fails again): the exit status
        // speaks for the answers only.
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
    let mut coordinator = Coordinator::new(args.connect.options()?);
    let request = pb::PruneBatchesRequest {
        older_than_seconds: (args.older_than_days * 86_400.0) as u64,
        solutions: args.solutions,
    };
    // Pruning twice prunes once: safe to retry.
    let pruned = runtime()?.block_on(
        coordinator.call(|mut client| async move { client.prune_batches(request).await }),
    )?;
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
