//! `retry`: a batch's failed and/or cancelled items submitted again as a new batch, linked to
//! the old one (the coordinator's `RetryBatch`).

use clap::Args;
use tilesolve::proto::v1 as pb;

use crate::calls::Coordinator;
use crate::client::{progress_bar, read_pages, wait_until_done, ConnectArgs, Pages, Patience};
use crate::output::outln;
use crate::process::runtime;
use crate::results::{FormatArgs, ResultsOutput};

#[derive(Args)]
pub struct RetryArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// Only the failed items (with --cancelled, or with neither: both).
    #[arg(long)]
    failed: bool,
    /// Only the cancelled items.
    #[arg(long)]
    cancelled: bool,
    /// The new batch's priority, 1 to 5 (default: the old batch's).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=5))]
    priority: Option<u8>,
    /// Wait for the new batch with a progress bar, then print its results.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    output: FormatArgs,
    /// The batch whose items to submit again.
    batch: u64,
}

/// Submits the items again; prints the new batch's id (or, with --wait, its results). Returns
/// whether every item was solved (known only when it waited; else: no line was invalid).
pub fn retry(args: RetryArgs) -> anyhow::Result<bool> {
    runtime()?.block_on(async {
        let mut coordinator = Coordinator::new(args.connect.options()?);
        let request = pb::RetryBatchRequest {
            batch_id: args.batch,
            failed: args.failed,
            cancelled: args.cancelled,
            priority: args.priority.map_or(0, u32::from),
        };
        // Only reaching the coordinator is retried: a retry that may have arrived is not sent
        // again (it would be a second batch).
        coordinator.reach().await?;
        let submitted = coordinator
            .once(|mut client| async move { client.retry_batch(request).await })
            .await?;
        let batch = submitted.batch_id;
        eprintln!(
            "batch {batch}: {} boards of batch {} submitted again ({} answered from the store)",
            submitted.items, args.batch, submitted.from_store
        );
        if !args.wait {
            outln!("{batch}")?;
            return Ok(submitted.invalid == 0);
        }
        wait_until_done(&mut coordinator, batch, &progress_bar()).await?;
        let mut output = ResultsOutput::new(args.output.format());
        let pages = Pages {
            batch,
            state: None,
            tiles: output.prints_tiles(),
        };
        let status = read_pages(&mut coordinator, pages, Patience::UntilAnswered, |items| {
            output.items(items)
        })
        .await?;
        output.finish(status.as_ref())?;
        Ok(output.all_solved)
    })
}
