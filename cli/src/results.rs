//! How result items and statuses are printed: for people (the default), as JSON lines
//! (`--json`: one object per line), or as CSV (`--csv`: a header, then one row per board,
//! quoted by the `csv` crate where a field needs it).

use std::borrow::Cow;
use std::io::Write as _;

use clap::Args;
use serde::Serialize;
pub use tilesolve::excerpt::printable;
use tilesolve::proto::v1 as pb;

/// The output flags of commands that print result items.
#[derive(Args, Clone, Copy)]
pub struct FormatArgs {
    /// One JSON object per board per line.
    #[arg(long)]
    json: bool,
    /// Comma-separated values: a header, then one row per board.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

impl FormatArgs {
    pub fn format(self) -> Format {
        match (self.json, self.csv) {
            (true, _) => Format::Json,
            (_, true) => Format::Csv,
            _ => Format::Text,
        }
    }
}

/// One item, as a JSON line or a CSV row (CSV leaves out the tile list: one field per row).
#[derive(Serialize)]
struct ItemRecord<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    board: &'a str,
    /// `solved` (proven optimal), `bounded` (not proven optimal), `failed` or `pending`.
    status: &'static str,
    /// A bounded answer's proven lower bound, and the weight of the search that found it.
    #[serde(skip_serializing_if = "Option::is_none")]
    lower_bound: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    length: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    moves: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tiles: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    heuristic: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pending: bool,
}

/// A CSV row: every column present (empty when it does not apply), so rows line up.
#[derive(Serialize)]
struct ItemRow<'a> {
    line: Option<u32>,
    board: Cow<'a, str>,
    length: Option<u32>,
    moves: Option<&'a str>,
    nodes: Option<u64>,
    seconds: Option<f64>,
    heuristic: Option<&'a str>,
    error: Option<Cow<'a, str>>,
    pending: bool,
    /// Last, so that the columns of files written before they were added keep their places.
    status: &'static str,
    lower_bound: Option<u32>,
}

impl<'a> ItemRecord<'a> {
    fn of(item: &'a pb::ItemResult) -> ItemRecord<'a> {
        let board = if item.board.is_empty() {
            item.text.as_str()
        } else {
            item.board.as_str()
        };
        let mut record = ItemRecord {
            line: (item.line > 0).then_some(item.line),
            board,
            status: "pending",
            lower_bound: None,
            weight: None,
            length: None,
            moves: None,
            tiles: None,
            nodes: None,
            seconds: None,
            heuristic: None,
            error: None,
            pending: false,
        };
        match &item.outcome {
            Some(pb::item_result::Outcome::Bounded(b)) => {
                record.status = "bounded";
                record.lower_bound = Some(b.lower_bound);
                record.weight = Some(b.weight);
                record.length = Some(b.length);
                record.moves = Some(&b.moves);
                record.tiles = Some(&b.tiles);
                record.nodes = Some(b.nodes);
                record.seconds = Some(b.seconds);
                record.heuristic = Some(&b.heuristic);
                record.error = Some(&b.reason);
            }
            Some(pb::item_result::Outcome::Solution(s)) => {
                record.status = "solved";
                record.length = Some(s.length);
                record.moves = Some(&s.moves);
                record.tiles = Some(&s.tiles);
                record.nodes = Some(s.nodes);
                record.seconds = Some(s.seconds);
                record.heuristic = Some(&s.heuristic);
            }
            Some(pb::item_result::Outcome::Error(e)) => {
                record.status = "failed";
                record.error = Some(e);
            }
            Some(pb::item_result::Outcome::Cancelled(_)) => record.status = "cancelled",
            None => record.pending = true,
        }
        record
    }

    /// The CSV row: the submitted text and the error, which a batch's lines reach, with their
    /// control characters escaped (a CSV file is read in terminals too).
    fn row(&self) -> ItemRow<'a> {
        ItemRow {
            line: self.line,
            board: printable(self.board),
            length: self.length,
            moves: self.moves,
            nodes: self.nodes,
            seconds: self.seconds,
            heuristic: self.heuristic,
            error: self.error.map(printable),
            pending: self.pending,
            status: self.status,
            lower_bound: self.lower_bound,
        }
    }
}

/// Prints result items as pages arrive, in the chosen format, and notes whether all were solved.
pub struct ResultsOutput {
    format: Format,
    csv: Option<csv::Writer<std::io::Stdout>>,
    pub all_solved: bool,
}

impl ResultsOutput {
    pub fn new(format: Format) -> ResultsOutput {
        ResultsOutput {
            format,
            csv: (format == Format::Csv).then(|| csv::Writer::from_writer(std::io::stdout())),
            all_solved: true,
        }
    }

    /// Whether the answers' tiles are printed (JSON lines only), so worth asking for.
    pub fn prints_tiles(&self) -> bool {
        self.format == Format::Json
    }

    /// Prints `items`; a write that fails (the reader went away: `| head`) is an error, never a
    /// panic.
    pub fn items(&mut self, items: &[pb::ItemResult]) -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        for item in items {
            self.all_solved &= matches!(item.outcome, Some(pb::item_result::Outcome::Solution(_)));
            let record = ItemRecord::of(item);
            match (&mut self.csv, self.format) {
                (Some(writer), _) => writer.serialize(record.row())?,
                (None, Format::Json) => writeln!(out, "{}", serde_json::to_string(&record)?)?,
                (None, _) => {
                    let board = printable(record.board);
                    match (record.length, record.error) {
                        (Some(length), Some(why)) if record.status == "bounded" => writeln!(
                            out,
                            "{board}  {length} moves, NOT proven optimal (no solution is shorter \
                             than {}; {})  {}",
                            record.lower_bound.unwrap_or(0),
                            printable(why),
                            record.moves.unwrap_or("")
                        )?,
                        (Some(length), _) => writeln!(
                            out,
                            "{board}  {length} moves  {}",
                            record.moves.unwrap_or("")
                        )?,
                        (None, Some(error)) => {
                            writeln!(out, "{board}  error: {}", printable(error))?
                        }
                        (None, None) if record.status == "cancelled" => {
                            writeln!(out, "{board}  cancelled")?
                        }
                        (None, None) => writeln!(out, "{board}  pending")?,
                    }
                }
            }
        }
        if let Some(writer) = &mut self.csv {
            writer.flush()?;
        }
        Ok(())
    }

    /// Ends the output; people also get the batch's count on standard error.
    pub fn finish(&mut self, status: Option<&pb::BatchStatus>) -> anyhow::Result<()> {
        if let Some(writer) = &mut self.csv {
            writer.flush()?;
        }
        if let (Some(status), Format::Text) = (status, self.format) {
            let bounded = match status.bounded {
                0 => String::new(),
                n => format!(", {n} bounded (paths not proven optimal)"),
            };
            eprintln!(
                "batch {}: {} of {} solved, {} failed{bounded}",
                status.batch_id, status.solved, status.total, status.failed
            );
        }
        Ok(())
    }
}

/// A batch's status as a JSON line (`status --json`, `batches --json`, `cancel --json`).
pub fn status_json(status: &pb::BatchStatus) -> serde_json::Value {
    serde_json::json!({
        "batch": status.batch_id,
        "total": status.total,
        "solved": status.solved,
        "failed": status.failed,
        "cancelled_items": status.items_cancelled,
        "bounded": status.bounded,
        "done": status.done,
        "bounds": status.bounds,
        "workers": status.workers,
        "preparing": status.preparing,
        "cancelled": status.cancelled,
        "nodes": status.nodes,
        "nodes_per_second": status.nodes_per_second,
        "state": status.state,
        "submitted_unix_ms": status.submitted_unix_ms,
        "submitted": utc_time(status.submitted_unix_ms),
        "heuristic": status.heuristic,
        "goal": status.goal,
        "priority": status.priority,
        "retry_of": (status.retry_of > 0).then_some(status.retry_of),
        "owner": (!status.owner.is_empty()).then_some(&status.owner),
        "eta_seconds": status.eta_seconds,
        "eta_low_seconds": status.eta_low_seconds,
        "eta_high_seconds": status.eta_high_seconds,
    })
}

/// `unix_ms` as an ISO 8601 UTC time to the second (`2026-11-25T20:14:03Z`); empty for 0 (not
/// recorded).
pub fn utc_time(unix_ms: u64) -> String {
    if unix_ms == 0 {
        return String::new();
    }
    let seconds = unix_ms / 1000;
    let (days, time) = ((seconds / 86_400) as i64, seconds % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        time / 3600,
        time / 60 % 60,
        time % 60
    )
}

/// Where an item stands, as `results --state` and `retry` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ItemState {
    Queued,
    Solved,
    Bounded,
    Failed,
    Cancelled,
}

impl ItemState {
    /// Its name on the wire (`GetBatchRequest.item_state`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            ItemState::Queued => "queued",
            ItemState::Solved => "solved",
            ItemState::Bounded => "bounded",
            ItemState::Failed => "failed",
            ItemState::Cancelled => "cancelled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::utc_time;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(utc_time(0), "");
        assert_eq!(utc_time(1_000), "1970-01-01T00:00:01Z");
        assert_eq!(utc_time(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc_time(1_795_637_643_999), "2026-11-25T20:14:03Z");
    }
}
