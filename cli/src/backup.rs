//! `export` and `import`: every stored answer out of one coordinator as JSON lines, and into
//! another as batches whose lines carry the claimed moves (`board # moves=...`), one batch per
//! goal. The importing coordinator replays each claim and stores it only once its own search
//! has ruled out anything shorter, so an import never lets a wrong or non-optimal answer in.
//!
//! With `export --batches` the file also holds every batch: a `{"batch": ...}` line (its id,
//! heuristic, goal, submission time, limits, whether it was cancelled) followed by one
//! `{"item": ...}` line per item (its line number, its text, and its answer or error). `import`
//! submits those batches again after every answer was proven, so their items are answered from
//! the store, with their limits and the time they were first submitted (new ids: each is
//! printed beside the old). A batch the coordinator already holds, by its submission time,
//! items and heuristic, is not submitted again: importing a file twice changes nothing.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use serde::{Deserialize, Serialize};
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::proto::v1 as pb;
use tilesolve::proto::MAX_BATCH_LINES;
use tilesolve::{parse_board, Board, Shape};

use crate::calls::{connect, CallError, Client, Coordinator};
use crate::client::{
    progress_bar, read_pages, submit_lines, wait_noting, ConnectArgs, Pages, Patience,
};
use crate::process::runtime;
use crate::results::{printable, FormatArgs};

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
    /// Heuristic for proving the answers of the sizes it fits (as for `solve`), once per size:
    /// a pattern database fits its own size, `5x5=linear-conflict` the size named, a plain
    /// `linear-conflict` every size not named otherwise. Boards of other sizes use the
    /// default for their size. Imported batches keep their own.
    #[arg(long)]
    heuristic: Vec<SizedHeuristic>,
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
pub(crate) struct Exported {
    pub(crate) board: String,
    pub(crate) goal: String,
    pub(crate) moves: String,
    pub(crate) length: u32,
    pub(crate) heuristic: String,
}

/// A batch's own line in an export; its items follow it.
#[derive(Serialize, Deserialize)]
pub(crate) struct ExportedBatch {
    pub(crate) id: u64,
    pub(crate) submitted_unix_ms: u64,
    pub(crate) heuristic: String,
    /// The goal its items were solved towards (empty when no line of it was valid).
    pub(crate) goal: String,
    pub(crate) cancelled: bool,
    pub(crate) items: u32,
    /// The limits it set on each item (0: none; absent from exports written before they
    /// were kept).
    #[serde(default)]
    pub(crate) time_limit_seconds: f64,
    #[serde(default)]
    pub(crate) node_limit: u64,
    #[serde(default)]
    pub(crate) suboptimal_percent: u32,
    /// 1 to 5 (0, or absent from exports written before it was kept: the default).
    #[serde(default)]
    pub(crate) priority: u32,
    /// Whose it was (absent: the operator's, or from exports written before owners were kept).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) owner: String,
}

/// One item of the batch before it in an export.
#[derive(Serialize, Deserialize)]
pub(crate) struct ExportedItem {
    pub(crate) batch: u64,
    /// 1-based line in the submitted file (0: not known).
    pub(crate) line: u32,
    pub(crate) text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) length: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) moves: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The lines of an export that are not answers.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Tagged {
    Batch(ExportedBatch),
    Item(ExportedItem),
}

pub(crate) fn write_line(out: &mut dyn Write, value: &impl Serialize) -> anyhow::Result<()> {
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
                ..pb::ListBatchesRequest::default()
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

/// How an export keeps a bounded answer: as the item's error, so that a restore never takes
/// the path for a solution.
pub(crate) fn bounded_note(length: u32, moves: &str, lower_bound: u32) -> String {
    format!(
        "bounded answer, not proven optimal: {length} moves {moves}; no solution is shorter than {lower_bound}"
    )
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
                item_state: String::new(),
                // An export writes each answer's moves; its tiles follow from them.
                without_tiles: true,
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
                // As coordinators before cancelled items had their own outcome wrote it.
                Some(pb::item_result::Outcome::Cancelled(_)) => {
                    (None, None, Some("cancelled".to_string()))
                }
                // Never exported as an answer: restored, it would read as a solution.
                Some(pb::item_result::Outcome::Bounded(bounded)) => (
                    None,
                    None,
                    Some(bounded_note(
                        bounded.length,
                        &bounded.moves,
                        bounded.lower_bound,
                    )),
                ),
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
        time_limit_seconds: info.time_limit_seconds,
        node_limit: info.node_limit,
        suboptimal_percent: info.suboptimal_percent,
        priority: info.priority,
        owner: info.owner,
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
    let all = |named: fn(Shape) -> Board| boards.iter().all(|b| *b == named(b.shape()));
    if all(Board::blank_last_in) {
        "blank-last".into()
    } else if all(Board::blank_first_in) {
        "korf".into()
    } else {
        goals.first().cloned().unwrap_or_default()
    }
}

/// An answer to prove again: its batch line (`board # moves=...`) and where the export file
/// holds it.
struct AnswerLine {
    file_line: usize,
    text: String,
}

/// What an export file holds: answer lines by goal, and batches with their items.
#[derive(Default)]
struct ExportFile {
    answers: BTreeMap<String, Vec<AnswerLine>>,
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
                    .push(AnswerLine {
                        file_line: number + 1,
                        text: format!("{} # moves={}", answer.board, answer.moves),
                    });
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

/// The heuristics `import --heuristic` named, each for the board sizes it fits (a pattern
/// database its own size, `NxN=NAME` that size, any other every size); sizes none fits get
/// `default`, the strongest for their size.
struct SizedHeuristics(Vec<SizedHeuristic>);

/// One `--heuristic` of an import: `NxN=NAME` (for that size), or `NAME` (a pattern database
/// for its own size, anything else for every size), parsed by the flag.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SizedHeuristic {
    side: Option<usize>,
    choice: HeuristicChoice,
}

impl std::str::FromStr for SizedHeuristic {
    type Err = String;

    fn from_str(text: &str) -> Result<SizedHeuristic, String> {
        let (side, name) = match text.split_once('=') {
            Some((size, name)) => {
                let side = size
                    .split_once('x')
                    .filter(|(rows, columns)| rows == columns)
                    .and_then(|(rows, _)| rows.parse::<usize>().ok())
                    .ok_or_else(|| format!("{text}: the size before = is e.g. 4x4"))?;
                (Some(side), name)
            }
            None => (None, text),
        };
        let choice: HeuristicChoice = name.parse().map_err(|error| format!("{text}: {error}"))?;
        let fits = choice.preset().and_then(|preset| preset.square_side());
        if let (Some(side), Some(fits)) = (side, fits) {
            if side != fits {
                return Err(format!("{text}: {name} is for {fits}x{fits} boards"));
            }
        }
        Ok(SizedHeuristic {
            side: side.or(fits),
            choice,
        })
    }
}

impl SizedHeuristics {
    fn new(given: &[SizedHeuristic]) -> anyhow::Result<SizedHeuristics> {
        for (n, heuristic) in given.iter().enumerate() {
            if given[..n].iter().any(|other| other.side == heuristic.side) {
                bail!(
                    "--heuristic {}: another --heuristic fits the same boards; give one per size",
                    heuristic.choice
                );
            }
        }
        Ok(SizedHeuristics(given.to_vec()))
    }

    /// The heuristic for boards of `shape`: for a square, the one named for its size, else one
    /// named for any size, else `default`.
    fn for_shape(&self, shape: Shape) -> HeuristicChoice {
        let named = |wanted: Option<usize>| self.0.iter().find(|h| h.side == wanted);
        shape
            .square_side()
            .and_then(|side| named(Some(side)))
            .or_else(|| named(None))
            .map_or(HeuristicChoice::Default, |h| h.choice)
    }
}

/// What an import did, for its summary and exit status.
#[derive(Default)]
struct Restored {
    answers: usize,
    restored: usize,
    refused: usize,
    batches: usize,
    /// Batches the coordinator already held (an earlier import of the same file).
    batches_present: usize,
    batches_refused: usize,
}

/// How often an import waiting for its answers' proofs says how far they are.
const PROOF_NOTE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// What an import says while the coordinator proves a chunk of its answers (each searched
/// again unless the heuristic proves it): how many are proven, and that it waits for a worker
/// when none is connected. A restore into a coordinator without workers waited silently for
/// ever before (a progress bar is not drawn where standard error is not a terminal).
struct ProofNotes {
    what: String,
    /// When it last said something, and whether no worker was connected then.
    last: Option<(std::time::Instant, bool)>,
}

impl ProofNotes {
    fn new(what: String) -> ProofNotes {
        ProofNotes { what, last: None }
    }

    /// Says how far `status` is, at first, every [`PROOF_NOTE_EVERY`] and whenever workers
    /// come or all go.
    fn note(&mut self, bar: &indicatif::ProgressBar, status: &pb::BatchStatus) {
        if status.done {
            return;
        }
        let waiting = status.workers == 0;
        let due = self.last.is_none_or(|(at, was_waiting)| {
            was_waiting != waiting || at.elapsed() >= PROOF_NOTE_EVERY
        });
        if !due {
            return;
        }
        self.last = Some((std::time::Instant::now(), waiting));
        let proven = status.solved + status.failed;
        let workers = match waiting {
            true => "no worker is connected: the proofs wait for one".to_string(),
            false => match status.workers {
                1 => "1 worker searching".to_string(),
                workers => format!("{workers} workers searching"),
            },
        };
        let line = format!(
            "{}: {proven} of {} answers proven; {workers}",
            self.what, status.total
        );
        bar.suspend(|| eprintln!("{line}"));
    }
}

/// Whether `error` is the coordinator refusing a submission (as opposed to not reaching it).
fn refusal(error: &anyhow::Error) -> Option<String> {
    match error.downcast_ref::<CallError>() {
        Some(refused @ CallError::Refused { .. }) => Some(refused.to_string()),
        _ => None,
    }
}

pub fn import(args: ImportArgs) -> anyhow::Result<bool> {
    let heuristics = SizedHeuristics::new(&args.heuristic)?;
    let file = ExportFile::read(&args.file)?;
    let shown = args.file.display().to_string();
    let mut coordinator = Coordinator::new(args.connect.options()?);
    let done = runtime()?.block_on(async {
        let mut done = Restored::default();
        let mut answer_batches = Vec::new();
        for (goal, lines) in &file.answers {
            let shape = parse_board(goal)
                .map_err(|error| anyhow::anyhow!("{shown}: goal {goal}: {error}"))?
                .shape();
            // Its text is only the wire's encoding.
            let heuristic = heuristics.for_shape(shape).to_string();
            for chunk in lines.chunks(MAX_BATCH_LINES) {
                done.answers += chunk.len();
                let texts = chunk.iter().map(|line| line.text.clone()).collect();
                let submitted = submit_lines(
                    &mut coordinator,
                    texts,
                    &heuristic,
                    goal,
                    pb::SubmitBatchRequest::default(),
                    args.output.format(),
                    args.wait,
                )
                .await;
                let batch = match submitted {
                    Ok(submitted) => submitted.batch,
                    Err(error) => match refusal(&error) {
                        Some(reason) => {
                            let (first, last) =
                                (chunk[0].file_line, chunk[chunk.len() - 1].file_line);
                            eprintln!("{shown} lines {first}-{last}: not restored: {reason}");
                            done.refused += chunk.len();
                            continue;
                        }
                        None => return Err(error),
                    },
                };
                answer_batches.push(batch);
                if !args.wait {
                    let (first, last) = (chunk[0].file_line, chunk[chunk.len() - 1].file_line);
                    let bar = progress_bar();
                    let mut notes = ProofNotes::new(format!("{shown} lines {first}-{last}"));
                    let mut note = |status: &pb::BatchStatus| notes.note(&bar, status);
                    wait_noting(&mut coordinator, batch, &bar, &mut note).await?;
                }
                let all = Pages {
                    batch,
                    state: None,
                    tiles: false,
                };
                read_pages(&mut coordinator, all, Patience::UntilAnswered, |items| {
                    for item in items {
                        let Some(line) = chunk.get((item.line as usize).wrapping_sub(1)) else {
                            continue;
                        };
                        match &item.outcome {
                            Some(pb::item_result::Outcome::Solution(_)) => done.restored += 1,
                            Some(pb::item_result::Outcome::Error(reason)) => {
                                eprintln!(
                                    "{shown} line {}: {}: not restored: {}",
                                    line.file_line,
                                    printable(&item.text),
                                    printable(reason)
                                );
                                done.refused += 1;
                            }
                            // Bounded, cancelled or not answered: not restored.
                            _ => done.refused += 1,
                        }
                    }
                    Ok(())
                })
                .await?;
            }
        }
        remove_answer_batches(&mut coordinator, answer_batches).await?;
        import_batches(&mut coordinator, &file, &args, &mut done).await?;
        anyhow::Ok(done)
    })?;
    eprintln!(
        "{} answers in {shown} / {} restored / {} refused{}",
        done.answers,
        done.restored,
        done.refused,
        if file.batches.is_empty() {
            String::new()
        } else {
            format!(
                "; {} batches imported, {} already here, {} not whole",
                done.batches, done.batches_present, done.batches_refused
            )
        }
    );
    Ok(done.refused == 0 && done.batches_refused == 0)
}

/// Removes the batches that proved the answers (their answers stay): they are not the
/// backup's, so a restore holds the batches it restored and no more.
async fn remove_answer_batches(
    coordinator: &mut Coordinator,
    batches: Vec<u64>,
) -> anyhow::Result<()> {
    if batches.is_empty() {
        return Ok(());
    }
    let request = pb::PruneBatchesRequest {
        older_than_seconds: 0,
        solutions: false,
        batch_ids: batches,
    };
    coordinator
        .call(|mut client| {
            let request = request.clone();
            async move { client.prune_batches(request).await }
        })
        .await?;
    Ok(())
}

/// What tells a batch restored from an export apart: when it was first submitted (to the
/// millisecond, kept by the restore), its items and its heuristic. A batch of the coordinator
/// with the same is that batch, restored before (or never gone).
#[derive(PartialEq, Eq, Hash)]
struct Submission {
    submitted_unix_ms: u64,
    items: u32,
    heuristic: String,
}

/// Every batch the coordinator holds, by [`Submission`] (those with a known submission time).
async fn held_batches(coordinator: &mut Coordinator) -> anyhow::Result<HashMap<Submission, u64>> {
    let mut held = HashMap::new();
    let mut token = String::new();
    loop {
        let request = pb::ListBatchesRequest {
            page_size: 10_000,
            page_token: token.clone(),
            ..Default::default()
        };
        let page = coordinator
            .call(|mut client| {
                let request = request.clone();
                async move { client.list_batches(request).await }
            })
            .await?;
        for status in page.batches {
            if status.submitted_unix_ms == 0 {
                continue;
            }
            let submission = Submission {
                submitted_unix_ms: status.submitted_unix_ms,
                items: status.total,
                heuristic: status.heuristic,
            };
            held.entry(submission).or_insert(status.batch_id);
        }
        if page.next_page_token.is_empty() {
            return Ok(held);
        }
        token = page.next_page_token;
    }
}

/// Submits the export's batches once every answer is proven, so their items come from the
/// store (at submission) instead of being searched again, each with the limits it set and the
/// time it was first submitted; a cancelled batch is cancelled again. A batch the coordinator
/// already holds (the same file imported before) is left as it is.
async fn import_batches(
    coordinator: &mut Coordinator,
    file: &ExportFile,
    args: &ImportArgs,
    done: &mut Restored,
) -> anyhow::Result<()> {
    if file.batches.is_empty() {
        return Ok(());
    }
    let held = held_batches(coordinator).await?;
    for (batch, items) in &file.batches {
        if items.is_empty() {
            eprintln!("batch {}: no items, not imported", batch.id);
            continue;
        }
        let submission = Submission {
            submitted_unix_ms: batch.submitted_unix_ms,
            items: batch.items,
            heuristic: batch.heuristic.clone(),
        };
        if let Some(present) = held.get(&submission) {
            eprintln!(
                "batch {}: already here as batch {present} (the same submission time, items and \
                 heuristic): not imported again",
                batch.id
            );
            done.batches_present += 1;
            continue;
        }
        let request = pb::SubmitBatchRequest {
            time_limit_seconds: batch.time_limit_seconds,
            node_limit: batch.node_limit,
            suboptimal_percent: batch.suboptimal_percent,
            submitted_unix_ms: batch.submitted_unix_ms,
            priority: batch.priority,
            owner: batch.owner.clone(),
            ..pb::SubmitBatchRequest::default()
        };
        let submitted = submit_lines(
            coordinator,
            batch_lines(items),
            &batch.heuristic,
            &batch.goal,
            request,
            args.output.format(),
            args.wait && !batch.cancelled,
        )
        .await;
        let submitted = match submitted {
            Ok(submitted) => submitted,
            Err(error) => match refusal(&error) {
                Some(reason) => {
                    eprintln!("batch {}: not imported: {reason}", batch.id);
                    done.batches_refused += 1;
                    continue;
                }
                None => return Err(error),
            },
        };
        done.batches += 1;
        eprintln!("batch {} imported as batch {}", batch.id, submitted.batch);
        let answered = items.iter().filter(|item| item.length.is_some()).count();
        if submitted.from_store < answered as u32 {
            eprintln!(
                "batch {}: {} of its {answered} answers did not come back from the store",
                batch.id,
                answered as u32 - submitted.from_store
            );
            done.batches_refused += 1;
        }
        // A cancelled batch is cancelled again: its items the store answered keep their
        // answers, the rest fail as cancelled, as they did.
        if batch.cancelled {
            let request = pb::CancelBatchRequest {
                batch_id: submitted.batch,
            };
            coordinator
                .call(|mut client| async move { client.cancel_batch(request).await })
                .await?;
        }
    }
    Ok(())
}
