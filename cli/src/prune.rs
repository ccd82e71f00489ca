//! `prune`: removes finished batches older than a number of days (with their answers if asked),
//! after a count of what would go; a prune that would remove every finished batch asks for
//! `--yes`.

use clap::Args;
use tilesolve::proto::v1 as pb;

use crate::calls::Coordinator;
use crate::client::ConnectArgs;
use crate::output::outln;
use crate::process::runtime;

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
    /// Count what would go, and remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// Remove them even when they are every finished batch the coordinator holds (without it,
    /// such a prune stops after the count).
    #[arg(long)]
    yes: bool,
}

/// A prune that would remove every finished batch, asked for without `--yes`.
#[derive(Debug, thiserror::Error)]
#[error(
    "this removes every finished batch the coordinator holds ({batches} batches, {items} items): \
     run it again with --yes to remove them (--dry-run counts without removing)"
)]
pub struct PruneNeedsYes {
    batches: u64,
    items: u64,
}

pub fn prune(args: PruneArgs) -> anyhow::Result<bool> {
    if args.older_than_days.is_nan() || args.older_than_days < 0.0 {
        anyhow::bail!("--older-than-days must be 0 or more");
    }
    let mut coordinator = Coordinator::new(args.connect.options()?);
    let request = pb::PruneBatchesRequest {
        older_than_seconds: (args.older_than_days * 86_400.0) as u64,
        solutions: args.solutions,
        batch_ids: Vec::new(),
    };
    let runtime = runtime()?;
    let preview = runtime.block_on(coordinator.call(|mut client| {
        let request = request.clone();
        async move { client.preview_prune(request).await }
    }))?;
    if args.dry_run {
        outln!(
            "would prune {} batches ({} items) of the {} finished batches the coordinator holds; nothing removed",
            preview.batches, preview.items, preview.finished_batches
        )?;
        return Ok(true);
    }
    if preview.batches > 0 && preview.batches >= preview.finished_batches && !args.yes {
        return Err(PruneNeedsYes {
            batches: preview.batches,
            items: preview.items,
        }
        .into());
    }
    // Pruning twice prunes once: safe to retry.
    let pruned = runtime.block_on(coordinator.call(|mut client| {
        let request = request.clone();
        async move { client.prune_batches(request).await }
    }))?;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    outln!(
        "pruned {} batches ({} items, {} stored boards); store {:.1} MB -> {:.1} MB",
        pruned.batches,
        pruned.items,
        pruned.boards,
        mb(pruned.store_bytes_before),
        mb(pruned.store_bytes_after)
    )?;
    Ok(true)
}
