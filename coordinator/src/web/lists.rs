//! The dashboard's long views: every stored batch, newest first, a page at a time with a state
//! filter, a search and a submission time range (`/api/batch-list`); and the coordinator's work
//! over time from the store's history (`/api/history`).

use std::time::Duration;

use axum::extract::{Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::{BatchJson, WebError, WebState};
use crate::history::{History, HistoryView};
use crate::store::HISTORY_KEPT;

/// What the charts read: the store's history and how often it is sampled.
#[derive(Clone)]
pub struct Charts {
    pub history: History,
    pub interval: Duration,
}

/// `?seconds=N`: the time range, from 5 minutes to the history kept (default 15 minutes).
#[derive(Deserialize)]
pub(super) struct HistoryQuery {
    seconds: Option<u64>,
}

pub(super) async fn history(
    State(state): State<WebState>,
    Query(query): Query<HistoryQuery>,
) -> Result<Json<HistoryView>, WebError> {
    let seconds = query
        .seconds
        .unwrap_or(900)
        .clamp(300, HISTORY_KEPT.as_secs());
    let totals = state.service.read(|s| s.totals());
    let charts = state.charts.clone();
    let view =
        tokio::task::spawn_blocking(move || charts.history.view(&totals, seconds, charts.interval))
            .await
            .map_err(|e| WebError(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
            .map_err(crate::scheduler::SchedulerError::from)?;
    Ok(Json(view))
}

/// `?before=ID&limit=N&state=S&q=TEXT&owner=O&since_ms=A&until_ms=B`, every part optional:
/// batches older than `before` (newest first), in state S (running, done, cancelled, failed),
/// whose id, heuristic, goal or owner holds TEXT, owned by O (`-`: the operator), submitted in
/// [A, B).
#[derive(Deserialize)]
pub(super) struct ListQuery {
    before: Option<u64>,
    limit: Option<usize>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    q: String,
    /// Only this owner's batches (`-`: the operator's).
    #[serde(default)]
    owner: String,
    since_ms: Option<u64>,
    until_ms: Option<u64>,
}

#[derive(Serialize)]
pub(super) struct BatchList {
    batches: Vec<BatchJson>,
    /// Where the next (older) page starts, if there may be one.
    next_before: Option<u64>,
    /// Batches looked at for this page (a narrow search stops after [`MAX_SCANNED`]).
    scanned: usize,
}

/// Batches a page shows by default, and at most.
const LIST_PAGE: usize = 20;
const MAX_LIST_PAGE: usize = 200;
/// Batches read per hold of the scheduler's lock, and at most per request.
const SCAN_STEP: usize = 200;
const MAX_SCANNED: usize = 5_000;

pub(super) async fn batch_list(
    State(state): State<WebState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<BatchList>, WebError> {
    if !matches!(
        query.state.as_str(),
        "" | "running" | "done" | "cancelled" | "failed"
    ) {
        return Err(WebError(
            axum::http::StatusCode::BAD_REQUEST,
            format!(
                "state '{:.40}' is none of running, done, cancelled, failed",
                query.state
            ),
        ));
    }
    let limit = query.limit.unwrap_or(LIST_PAGE).clamp(1, MAX_LIST_PAGE);
    let needle = query.q.trim().to_lowercase();
    let mut found = Vec::new();
    let mut before = query.before;
    let mut scanned = 0;
    // No older batch is left. (A batch submitted before `since_ms` does not end the search:
    // a restored batch keeps the time it was first submitted, so a later id may be older.)
    let mut at_end = false;
    'scan: while found.len() < limit && scanned < MAX_SCANNED {
        let page = state.service.read(|s| s.list(before, SCAN_STEP, true))?;
        let last_page = page.len() < SCAN_STEP;
        let count = page.len();
        for (index, progress) in page.into_iter().enumerate() {
            scanned += 1;
            before = Some(progress.batch);
            let owner = progress.owner.as_ref().map_or("", |o| o.as_str());
            let wanted = !state.puzzle_view.contains(progress.batch)
                && (query.state.is_empty() || progress.state() == query.state)
                && match query.owner.as_str() {
                    "" => true,
                    "-" => owner.is_empty(),
                    name => owner == name,
                }
                && query
                    .since_ms
                    .is_none_or(|t| progress.submitted_unix_ms >= t)
                && query
                    .until_ms
                    .is_none_or(|t| progress.submitted_unix_ms < t)
                && (needle.is_empty()
                    || progress.batch.to_string() == needle
                    || progress.heuristic.to_lowercase().contains(&needle)
                    || progress.goal.to_lowercase().contains(&needle)
                    || owner.to_lowercase().contains(&needle));
            if wanted {
                found.push(BatchJson::from(progress));
            }
            if found.len() == limit {
                at_end = last_page && index + 1 == count;
                break 'scan;
            }
        }
        if last_page {
            at_end = true;
            break;
        }
    }
    let next_before = if at_end { None } else { before };
    Ok(Json(BatchList {
        batches: found,
        next_before,
        scanned,
    }))
}
