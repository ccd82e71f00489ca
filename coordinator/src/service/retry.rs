//! A batch's failed or cancelled items submitted again as a new batch, linked to the old one
//! (its `retry_of`), with the old batch's heuristic, goal and limits: through the same intake
//! as any submission, so nothing about it is acknowledged before it is stored.

use super::Service;
use crate::owners::Caller;
use crate::scheduler::reads::{self, ItemState};
use crate::scheduler::{parse_goal, parse_heuristic, BatchTerms, SchedulerError, Submitted};
use crate::store::Priority;

impl Service {
    /// Submits the items of `batch` in `states` again; `priority` None keeps the old batch's.
    /// Only the batch's owner or an admin may; the new batch is `caller`'s.
    pub async fn retry_batch(
        &self,
        caller: &Caller,
        batch: u64,
        states: Vec<ItemState>,
        priority: Option<Priority>,
    ) -> Result<Submitted, SchedulerError> {
        self.require_owner(caller, batch, "retry")?;
        let store = self.store.clone();
        let (stored, lines) =
            tokio::task::spawn_blocking(move || reads::retry_lines(&store, batch, &states))
                .await
                .map_err(|e| SchedulerError::Internal(e.to_string()))??;
        let heuristic = match stored.heuristic.as_str() {
            "" => "default",
            named => named,
        };
        let terms = BatchTerms {
            limits: stored.limits,
            priority: priority.unwrap_or(stored.priority),
            submitted_unix_ms: None,
            retry_of: Some(batch),
            owner: None,
            notify: stored.notify.clone(),
        };
        let submitted = self
            .accept_batch(
                caller,
                lines,
                parse_heuristic(heuristic)?,
                parse_goal(stored.goal.as_deref().unwrap_or_default())?,
                terms,
            )
            .await?;
        tracing::info!(
            batch = submitted.batch,
            retry_of = batch,
            items = submitted.items,
            "batch retried"
        );
        Ok(submitted)
    }
}
