//! The client commands: `submit`, `status`, `results`, `query`, `batches` and `cancel`, and
//! what they share with `batch`, `import` and `loadtest` (reaching the coordinator, reading a
//! batch file, submitting it and waiting for its results).

use crate::process::runtime;
use std::path::PathBuf;
use std::time::Duration;

use crate::calls::{backoff, CallError, Client, Coordinator};
use crate::output::outln;
use crate::report::{print_status_line, status_text};
use crate::results::{status_json, Format, FormatArgs, ItemState, ResultsOutput};
use anyhow::{bail, Context};
use backon::BackoffBuilder;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tilesolve::batch_file::{check_text, BatchLine, NotText};
use tilesolve::connect::ConnectOptions;
use tilesolve::heuristic::Weight;
use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::proto::v1 as pb;
use tilesolve::proto::{MAX_BATCH_LINES, MAX_MESSAGE_BYTES};
use tilesolve::{parse_board_in, Goal, Shape};

pub const DEFAULT_COORDINATOR: &str = "http://127.0.0.1:7411";

pub(crate) fn read_file(path: &PathBuf, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading the {what} {}", path.display()))
}

/// How to reach the coordinator: shared by workers and every client command.
#[derive(Args, Clone)]
pub struct ConnectArgs {
    /// The coordinator's address; `https://` for TLS.
    #[arg(long, env = "TILESOLVE_COORDINATOR", default_value = DEFAULT_COORDINATOR)]
    pub(crate) coordinator: String,
    /// Bearer token the coordinator requires.
    #[arg(long, env = "TILESOLVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// PEM certificate of the authority that signed the coordinator's certificate.
    #[arg(long, env = "TILESOLVE_TLS_CA", value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// Name the coordinator's certificate carries, if not the address's host.
    #[arg(long, env = "TILESOLVE_TLS_DOMAIN")]
    tls_domain: Option<String>,
}

impl ConnectArgs {
    pub(crate) fn options(&self) -> anyhow::Result<ConnectOptions> {
        Ok(ConnectOptions {
            url: self.coordinator.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
            ca_pem: self
                .tls_ca
                .as_ref()
                .map(|path| read_file(path, "CA certificate"))
                .transpose()?,
            tls_domain: self.tls_domain.clone(),
        })
    }
}

/// Options of commands that submit a batch.
#[derive(Args)]
pub struct BatchOptions {
    /// Heuristic, as for `solve` (default: the size's pattern database).
    #[arg(long, default_value = "default")]
    pub(crate) heuristic: HeuristicChoice,
    /// Goal: `default`, `korf` or a board.
    #[arg(long, default_value = "default")]
    pub(crate) goal: Goal,
    #[command(flatten)]
    output: FormatArgs,
    #[command(flatten)]
    limits: LimitArgs,
    /// Rows x columns of every board, e.g. 3x4 (2 <= each, at most 32 cells); a line's
    /// ` # size=RxC` fact says it for that line. Without either, a board is the square of its
    /// count of values (9, 16 or 25), or the rows it is written in (`{{1,2,3},{4,5,0}}`).
    #[arg(long, value_name = "RxC")]
    size: Option<Shape>,
    /// A batch file: one board per line.
    pub(crate) file: PathBuf,
}

impl BatchOptions {
    /// The batch file's lines, each board line without a `size=` fact of its own given one for
    /// `--size`: the coordinator reads a line's shape from the line, so the request is the same
    /// for every shape.
    pub(crate) fn lines(&self) -> anyhow::Result<Vec<String>> {
        let lines = read_lines(&self.file)?;
        let Some(shape) = self.size else {
            return Ok(lines);
        };
        Ok(lines
            .into_iter()
            .enumerate()
            .map(|(index, raw)| match BatchLine::read(index + 1, &raw) {
                Some(line) if line.fact("size").is_none() => {
                    let separator = if line.facts.is_empty() { " # " } else { " " };
                    format!("{}{separator}size={shape}", raw.trim_end())
                }
                _ => raw,
            })
            .collect())
    }
}

/// What each board of a batch may spend before it comes back bounded.
#[derive(Args, Clone, Copy)]
pub struct LimitArgs {
    /// Stop a board's optimal search after this many seconds of search (summed over the
    /// threads that search it): it comes back bounded, with the shortest path weighted searches
    /// find in the last quarter of the limit and the lower bound the optimal search proved.
    #[arg(long, value_name = "SECS", value_parser = crate::options::parse_seconds)]
    time_limit: Option<std::time::Duration>,
    /// As --time-limit, after this many expanded nodes.
    #[arg(long, value_name = "NODES")]
    node_limit: Option<u64>,
    /// Ask only for a path at most W times the optimal length (weighted IDA*, 1 < W <= 10),
    /// with no optimal search.
    #[arg(long, value_name = "W", value_parser = crate::options::parse_weight)]
    suboptimal: Option<Weight>,
    /// --suboptimal 1.5.
    #[arg(long, conflicts_with = "suboptimal")]
    fast: bool,
}

impl LimitArgs {
    /// The limits as a submission carries them (its other fields empty).
    pub(crate) fn request(&self) -> anyhow::Result<pb::SubmitBatchRequest> {
        let time_limit_seconds = self.time_limit.map_or(0.0, |limit| limit.as_secs_f64());
        let weight = match self.fast {
            true => Weight::new(3, 2),
            false => self.suboptimal,
        };
        let suboptimal_percent = match weight.map(Weight::percent) {
            Some(100) => anyhow::bail!("--suboptimal 1 is the optimal search: leave it out"),
            percent => percent.unwrap_or(0),
        };
        Ok(pb::SubmitBatchRequest {
            time_limit_seconds,
            node_limit: self.node_limit.unwrap_or(0),
            suboptimal_percent,
            ..pb::SubmitBatchRequest::default()
        })
    }
}

#[derive(Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Wait for the batch with a progress bar, then print its results.
    #[arg(long)]
    wait: bool,
    /// 1 (lowest) to 5 (highest): workers take a higher priority's tasks first, whatever was
    /// submitted before them.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=5))]
    priority: u8,
    /// When the batch ends (done, failed or cancelled), POST a JSON notice of it to this URL,
    /// signed with the owner's notify secret; retried until the receiver answers 2xx.
    #[arg(long, value_name = "URL")]
    notify: Option<String>,
    #[command(flatten)]
    batch: BatchOptions,
}

#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The status as one JSON object.
    #[arg(long)]
    json: bool,
    batch: u64,
}

#[derive(Args)]
pub struct ResultsArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(flatten)]
    output: FormatArgs,
    /// Only the items in this state.
    #[arg(long, value_enum, conflicts_with_all = ["failed", "cancelled"])]
    state: Option<ItemState>,
    /// Only the failed items, each with its reason (--state failed).
    #[arg(long, conflicts_with = "cancelled")]
    failed: bool,
    /// Only the cancelled items (--state cancelled).
    #[arg(long)]
    cancelled: bool,
    batch: u64,
}

#[derive(Args)]
pub struct QueryArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Goal: `default`, `korf` or a board.
    #[arg(long, default_value = "default")]
    goal: String,
    /// The answer (or that there is none) as one JSON object.
    #[arg(long)]
    json: bool,
    /// Rows x columns of the board, e.g. 3x4; without it, a board is the square of its count
    /// of values, or the rows it is written in (`{{1,2,3},{4,5,0}}`).
    #[arg(long, value_name = "RxC")]
    size: Option<Shape>,
    board: String,
}

/// The lines of a batch file. A file that is not text (a NUL byte, more than a few invalid
/// UTF-8 sequences, a line over the limit) or past the coordinator's limits is refused here,
/// before anything is sent; a few stray bytes stay on their own lines (as U+FFFD), where the
/// coordinator reports them with their line numbers.
pub(crate) fn read_lines(file: &PathBuf) -> anyhow::Result<Vec<String>> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    // Requests also carry the heuristic and goal; leave room for them.
    let limit = MAX_MESSAGE_BYTES - 4096;
    if bytes.len() > limit {
        bail!(
            "{} is {} bytes; a batch may be at most {limit} bytes: split it into several",
            file.display(),
            bytes.len()
        );
    }
    // Binary noise is refused here, naming where, rather than stored as hundreds of invalid
    // lines (and echoed to the terminal).
    check_text(&bytes).with_context(|| format!("{} is refused", file.display()))?;
    let lines: Vec<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_string)
        .collect();
    if lines.len() > MAX_BATCH_LINES {
        return Err(NotText::TooManyLines {
            lines: lines.len(),
            most: MAX_BATCH_LINES,
        })
        .with_context(|| format!("{} is refused", file.display()));
    }
    Ok(lines)
}

/// Submits, optionally waits, prints; returns whether every item was solved. `terms` gives
/// the priority (0: the coordinator's default) and notify URL.
pub(crate) async fn submit_and_report(
    connect: ConnectOptions,
    options: &BatchOptions,
    terms: pb::SubmitBatchRequest,
    wait: bool,
) -> anyhow::Result<bool> {
    let lines = options.lines()?;
    let submitted = submit_lines(
        &mut Coordinator::new(connect),
        lines,
        // Parsed by the flag; its text is only the wire's encoding.
        &options.heuristic.to_string(),
        &options.goal.to_string(),
        pb::SubmitBatchRequest {
            priority: terms.priority,
            notify_url: terms.notify_url,
            ..options.limits.request()?
        },
        options.output.format(),
        wait,
    )
    .await?;
    Ok(submitted.all_solved)
}

/// A batch [`submit_lines`] submitted.
pub(crate) struct Submitted {
    pub batch: u64,
    /// Every item solved (known only when it waited; else: no line was invalid).
    pub all_solved: bool,
    /// Items answered from the store at submission.
    pub from_store: u32,
}

/// Submits `lines` as one batch; with `wait`, watches it and prints its results.
pub(crate) async fn submit_lines(
    coordinator: &mut Coordinator,
    lines: Vec<String>,
    heuristic: &str,
    goal: &str,
    terms: pb::SubmitBatchRequest,
    format: Format,
    wait: bool,
) -> anyhow::Result<Submitted> {
    // Only reaching the coordinator is retried: a submission that may have arrived is not
    // sent again (it would be a second batch).
    coordinator.reach().await?;
    let request = pb::SubmitBatchRequest {
        lines: lines.clone(),
        heuristic: heuristic.to_string(),
        goal: goal.to_string(),
        ..terms
    };
    let submitted = coordinator
        .once(|mut client| async move { client.submit_batch(request).await })
        .await?;
    eprintln!(
        "batch {}: {} boards ({} invalid, {} answered from the store)",
        submitted.batch_id, submitted.items, submitted.invalid, submitted.from_store
    );
    let batch = submitted.batch_id;
    if !wait {
        outln!("{batch}")?;
        return Ok(Submitted {
            batch,
            all_solved: submitted.invalid == 0,
            from_store: submitted.from_store,
        });
    }
    wait_until_done(coordinator, batch, &progress_bar()).await?;
    // Page by page, printing as they come, so memory holds one page however large the batch.
    let mut output = ResultsOutput::new(format);
    let mut facts = FactCheck::default();
    let pages = Pages {
        batch,
        state: None,
        tiles: output.prints_tiles(),
    };
    let status = read_pages(coordinator, pages, Patience::UntilAnswered, |items| {
        facts.add(&lines, items);
        output.items(items)
    })
    .await?;
    output.finish(status.as_ref())?;
    facts.report();
    Ok(Submitted {
        batch,
        all_solved: output.all_solved,
        from_store: submitted.from_store,
    })
}

/// Watches `batch` until every item has ended, with `bar` showing its progress. The batch is
/// the coordinator's (flushed to its disk before it was acknowledged): if the coordinator goes
/// away, this waits for it to come back rather than give up.
pub(crate) async fn wait_until_done(
    coordinator: &mut Coordinator,
    batch: u64,
    bar: &ProgressBar,
) -> anyhow::Result<()> {
    wait_noting(coordinator, batch, bar, &mut |_| {}).await
}

/// [`wait_until_done`], handing `note` every status the coordinator sends (for a caller that
/// says in words what it waits for, where a progress bar is not drawn).
pub(crate) async fn wait_noting(
    coordinator: &mut Coordinator,
    batch: u64,
    bar: &ProgressBar,
    note: &mut dyn FnMut(&pb::BatchStatus),
) -> anyhow::Result<()> {
    let mut pauses = backoff(Duration::from_secs(5)).without_max_times().build();
    loop {
        match watch(coordinator, batch, bar, note).await {
            Ok(()) => break,
            Err(error) if error.is_transient() => {
                bar.set_message(format!(
                    "coordinator at {} unreachable; reconnecting",
                    coordinator.url()
                ));
                tracing::info!(%error, "reconnecting");
                let pause = pauses.next().unwrap_or(Duration::from_secs(5));
                tokio::time::sleep(pause).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
    bar.finish_and_clear();
    Ok(())
}

/// How long reading a batch keeps trying after transport faults.
#[derive(Clone, Copy)]
pub(crate) enum Patience {
    /// A few tries, as any one-shot command.
    OneShot,
    /// Until the coordinator answers: the caller is waiting for a batch it submitted.
    UntilAnswered,
}

/// Which of a batch's results to read.
pub(crate) struct Pages {
    pub(crate) batch: u64,
    /// Only the items in this state.
    pub(crate) state: Option<ItemState>,
    /// Whether each answer's tiles are wanted: the coordinator leaves them out otherwise.
    pub(crate) tiles: bool,
}

/// Reads a batch's result pages, handing each page's items to `each`. A page that fails on a
/// transport fault is asked for again, so nothing is skipped or printed twice. Returns the
/// batch's status from the last page.
pub(crate) async fn read_pages(
    coordinator: &mut Coordinator,
    pages: Pages,
    patience: Patience,
    mut each: impl FnMut(&[pb::ItemResult]) -> anyhow::Result<()>,
) -> anyhow::Result<Option<pb::BatchStatus>> {
    let mut token = String::new();
    loop {
        let request = pb::GetBatchRequest {
            batch_id: pages.batch,
            page_size: RESULTS_PAGE,
            page_token: token.clone(),
            item_state: pages.state.map_or("", ItemState::name).to_string(),
            without_tiles: !pages.tiles,
        };
        let get = |mut client: Client| {
            let request = request.clone();
            async move { client.get_batch(request).await }
        };
        let page = match patience {
            Patience::OneShot => coordinator.call(get).await?,
            Patience::UntilAnswered => coordinator.call_until_answered(get, |_| {}).await?,
        };
        each(&page.items)?;
        if page.next_page_token.is_empty() {
            return Ok(page.status);
        }
        token = page.next_page_token;
    }
}

/// Items a results page asks for (the coordinator's largest page).
const RESULTS_PAGE: u32 = 10_000;

/// Solution lengths checked against the submitted file's `optimal=` facts (as the benchmark
/// sets state them), page by page; the report names any that differ.
#[derive(Default)]
struct FactCheck {
    checked: usize,
    wrong: Vec<String>,
}

impl FactCheck {
    fn add(&mut self, lines: &[String], items: &[pb::ItemResult]) {
        for item in items {
            let Some(pb::item_result::Outcome::Solution(solution)) = &item.outcome else {
                continue;
            };
            let Some(raw) = lines.get((item.line as usize).wrapping_sub(1)) else {
                continue;
            };
            let Some(optimal) =
                BatchLine::read(item.line as usize, raw).and_then(|l| l.fact("optimal"))
            else {
                continue;
            };
            self.checked += 1;
            if optimal.parse::<u32>().ok() != Some(solution.length) {
                self.wrong.push(format!(
                    "line {} ({} moves, file says {optimal})",
                    item.line, solution.length
                ));
            }
        }
    }

    fn report(&self) {
        if self.checked > 0 {
            eprintln!(
                "lengths matching the file's optimal= facts: {} of {}",
                self.checked - self.wrong.len(),
                self.checked
            );
            for mismatch in &self.wrong {
                eprintln!("  MISMATCH {mismatch}");
            }
        }
    }
}

pub(crate) fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} solved  {msg}  [{elapsed_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Shows a batch's progress until it is done, or until the stream breaks.
async fn watch(
    coordinator: &mut Coordinator,
    batch: u64,
    bar: &ProgressBar,
    note: &mut dyn FnMut(&pb::BatchStatus),
) -> Result<(), CallError> {
    let request = pb::WatchBatchRequest { batch_id: batch };
    let mut stream = coordinator
        .once(|mut client| async move { client.watch_batch(request).await })
        .await?;
    loop {
        let status = match stream.message().await {
            Ok(Some(status)) => status,
            Ok(None) => break,
            Err(status) => return Err(coordinator.failed(status)),
        };
        note(&status);
        bar.set_length(u64::from(status.total));
        bar.set_position(u64::from(status.solved + status.failed));
        let bounds: Vec<String> = status.bounds.iter().take(6).map(u32::to_string).collect();
        let preparing = if status.preparing.is_empty() {
            String::new()
        } else {
            format!("  preparing tables: {}", status.preparing)
        };
        bar.set_message(format!(
            "bounds [{}]  {:.1} M nodes/s (last 30 s)  {} workers{preparing}",
            bounds.join(" "),
            status.nodes_per_second / 1e6,
            status.workers
        ));
        if status.done {
            return Ok(());
        }
    }
    Err(CallError::Lost("the progress stream ended early".into()))
}

pub fn submit(args: SubmitArgs) -> anyhow::Result<bool> {
    let connect = args.connect.options()?;
    let terms = pb::SubmitBatchRequest {
        priority: args.priority.into(),
        notify_url: args.notify.unwrap_or_default(),
        ..pb::SubmitBatchRequest::default()
    };
    runtime()?.block_on(submit_and_report(connect, &args.batch, terms, args.wait))
}

#[derive(Args)]
pub struct ListArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Print at most this many batches (default: all, read page by page).
    #[arg(long)]
    limit: Option<usize>,
    /// Start after this batch id (a page token, as the last line printed).
    #[arg(long)]
    page: Option<u64>,
    /// Newest first.
    #[arg(long)]
    newest_first: bool,
    /// Only batches in this state.
    #[arg(long, value_parser = ["running", "done", "cancelled", "failed"])]
    state: Option<String>,
    /// Only this owner's batches (`-`: the operator's, which have no owner).
    #[arg(long, value_name = "NAME")]
    owner: Option<String>,
    /// One JSON object per batch per line.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CancelArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The batch's status after cancelling, as one JSON object.
    #[arg(long)]
    json: bool,
    batch: u64,
}

pub fn list(args: ListArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let mut left = args.limit.unwrap_or(usize::MAX);
        let mut token = args.page.map(|id| id.to_string()).unwrap_or_default();
        // Page by page, printed as they come: memory holds one page however many batches.
        while left > 0 {
            let request = pb::ListBatchesRequest {
                page_size: left.min(1_000) as u32,
                page_token: token,
                newest_first: args.newest_first,
                state: args.state.clone().unwrap_or_default(),
                owner: args.owner.clone().unwrap_or_default(),
            };
            let page = coordinator
                .call(|mut client| {
                    let request = request.clone();
                    async move { client.list_batches(request).await }
                })
                .await?;
            for status in &page.batches {
                print_status_line(status, args.json)?;
            }
            left = left.saturating_sub(page.batches.len());
            if page.next_page_token.is_empty() {
                break;
            }
            token = page.next_page_token;
        }
        Ok(true)
    })
}

pub fn cancel(args: CancelArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let request = pb::CancelBatchRequest {
            batch_id: args.batch,
        };
        // Cancelling twice is cancelling once: safe to retry.
        let status = coordinator
            .call(|mut client| async move { client.cancel_batch(request).await })
            .await?;
        if !status.cancelled && !args.json {
            // A finished batch is history: the coordinator left it as it was.
            outln!(
                "batch {} had already finished ({} of {} solved, {} failed): nothing changed",
                status.batch_id,
                status.solved,
                status.total,
                status.failed
            )?;
        } else {
            print_status_line(&status, args.json)?;
        }
        Ok(true)
    })
}

pub fn status(args: StatusArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        // One item is the smallest page: only the status is wanted.
        let request = pb::GetBatchRequest {
            batch_id: args.batch,
            page_size: 1,
            page_token: String::new(),
            item_state: String::new(),
            without_tiles: true,
        };
        let page = coordinator
            .call(|mut client| {
                let request = request.clone();
                async move { client.get_batch(request).await }
            })
            .await?;
        let Some(status) = page.status else {
            bail!("the coordinator sent no status")
        };
        if args.json {
            outln!("{}", status_json(&status))?;
        } else if status.done {
            outln!("{}", status_text(&status))?;
        } else {
            outln!(
                "{}; {}; {} workers",
                status_text(&status),
                crate::report::running_bounds(&status.bounds),
                status.workers
            )?;
            if !status.preparing.is_empty() {
                outln!("preparing tables: {}", status.preparing)?;
            }
        }
        Ok(true)
    })
}

pub fn results(args: ResultsArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let mut output = ResultsOutput::new(args.output.format());
        let state = match (args.failed, args.cancelled) {
            (true, _) => Some(ItemState::Failed),
            (_, true) => Some(ItemState::Cancelled),
            _ => args.state,
        };
        let pages = Pages {
            batch: args.batch,
            state,
            tiles: output.prints_tiles(),
        };
        let status = read_pages(&mut coordinator, pages, Patience::OneShot, |items| {
            output.items(items)
        })
        .await?;
        output.finish(status.as_ref())?;
        Ok(output.all_solved)
    })
}

pub fn query(args: QueryArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        // A shape given here is sent as the board's rows, which say it on their own.
        let board = match args.size {
            Some(shape) => parse_board_in(&args.board, Some(shape))
                .with_context(|| format!("board {:?}", args.board))?
                .to_string(),
            None => args.board.clone(),
        };
        let request = pb::QueryRequest {
            board,
            goal: args.goal,
        };
        let response = coordinator
            .call(|mut client| {
                let request = request.clone();
                async move { client.query(request).await }
            })
            .await?;
        match (response.found, response.solution, response.bounded) {
            (true, Some(s), _) => {
                if args.json {
                    outln!(
                        "{}",
                        serde_json::json!({"board": request.board, "status": "solved", "length": s.length, "moves": s.moves, "tiles": s.tiles, "heuristic": s.heuristic})
                    )?;
                } else {
                    outln!("{}  {} moves  {}", request.board, s.length, s.moves)?;
                }
                Ok(true)
            }
            (_, None, Some(b)) => {
                if args.json {
                    outln!(
                        "{}",
                        serde_json::json!({"board": request.board, "status": "bounded", "length": b.length, "lower_bound": b.lower_bound, "weight": b.weight, "moves": b.moves, "tiles": b.tiles})
                    )?;
                } else {
                    outln!(
                        "{}  {} moves, NOT proven optimal (no solution is shorter than {})  {}",
                        request.board, b.length, b.lower_bound, b.moves
                    )?;
                }
                Ok(false)
            }
            _ => {
                if args.json {
                    outln!(
                        "{}",
                        serde_json::json!({"board": request.board, "error": "not in the store"})
                    )?;
                } else {
                    eprintln!("{}: not in the store", request.board);
                }
                Ok(false)
            }
        }
    })
}
