//! Owners as the dashboard and `/metrics` show them: each owner the owners file names (and any
//! it no longer names that still has batches open or nodes today), with its role, its limits,
//! what it has open and spent today, and the submissions its limits refused.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::owners::{Caller, OwnerLimits, OwnerName, Owners, Role};
use crate::scheduler::OwnerUsage;
use crate::service::Service;

/// One owner's standing.
pub(super) struct OwnerStanding {
    pub(super) name: OwnerName,
    /// None: the owners file no longer names it.
    pub(super) role: Option<Role>,
    pub(super) limits: OwnerLimits,
    pub(super) usage: OwnerUsage,
    /// Refused submissions by the limit that refused them.
    pub(super) refusals: BTreeMap<&'static str, u64>,
}

/// Every owner's standing, by name.
pub(super) fn usage(service: &Service, owners: &Owners) -> Vec<OwnerStanding> {
    let mut usage = service.read(|scheduler| scheduler.owner_usage());
    let mut refusals = BTreeMap::<OwnerName, BTreeMap<&'static str, u64>>::new();
    for ((owner, limit), count) in service.refusals() {
        refusals.entry(owner).or_default().insert(limit, count);
    }
    let book = owners.book();
    let mut standings: Vec<OwnerStanding> = book
        .owners()
        .iter()
        .map(|owner| OwnerStanding {
            name: owner.name.clone(),
            role: Some(owner.role),
            limits: owner.limits,
            usage: usage.remove(&owner.name).unwrap_or_default(),
            refusals: refusals.remove(&owner.name).unwrap_or_default(),
        })
        .collect();
    standings.extend(usage.into_iter().map(|(name, usage)| OwnerStanding {
        refusals: refusals.remove(&name).unwrap_or_default(),
        name,
        role: None,
        limits: OwnerLimits::default(),
        usage,
    }));
    standings.sort_by(|a, b| a.name.cmp(&b.name));
    standings
}

#[derive(Serialize)]
pub(super) struct OwnerJson {
    pub(super) name: String,
    /// admin, submit, read; `removed` when the owners file no longer names it.
    role: &'static str,
    running_batches: u64,
    pending_boards: u64,
    nodes_today: u64,
    max_running_batches: Option<u64>,
    max_pending_boards: Option<u64>,
    max_nodes_per_day: Option<u64>,
    refused: u64,
}

impl From<OwnerStanding> for OwnerJson {
    fn from(owner: OwnerStanding) -> OwnerJson {
        OwnerJson {
            name: owner.name.to_string(),
            role: owner.role.map_or("removed", Role::name),
            running_batches: owner.usage.running_batches,
            pending_boards: owner.usage.pending_boards,
            nodes_today: owner.usage.nodes_today,
            max_running_batches: owner.limits.running_batches,
            max_pending_boards: owner.limits.pending_boards,
            max_nodes_per_day: owner.limits.nodes_per_day,
            refused: owner.refusals.values().sum(),
        }
    }
}

/// Who is looking at the dashboard: the page hides what the role may not do.
#[derive(Serialize)]
pub(super) struct CallerJson {
    /// None: the operator.
    owner: Option<String>,
    role: &'static str,
}

impl CallerJson {
    pub(super) fn of(caller: &Caller) -> CallerJson {
        CallerJson {
            owner: caller.name().map(OwnerName::to_string),
            role: caller.role().name(),
        }
    }
}
