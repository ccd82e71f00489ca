//! Who may do what, and how much: a caller's role checked against what it asks, a batch's owner
//! against who would change it, and an owner's limits against what it has open and spent
//! ([`crate::owners`]). Refusals name the limit, its value and the usage that met it, and are
//! counted per owner and limit for `/metrics`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::owners::{Caller, Owner, OwnerLimits, OwnerName, Role};
use crate::scheduler::{OwnerUsage, SchedulerError};

use super::Service;

/// Refusals by owner and the limit's name in the owners file.
pub type Refusals = BTreeMap<(OwnerName, &'static str), u64>;

/// What admission keeps: one submission with limits checked and taken in at a time (so two
/// cannot both pass a limit only one fits under), and the refusals counted.
#[derive(Clone, Default)]
pub(super) struct Admission {
    limited_intake: Arc<Mutex<()>>,
    refusals: Arc<Mutex<Refusals>>,
}

impl Admission {
    /// Held while a submission with limits is checked and taken in.
    pub(super) fn hold(&self) -> std::sync::MutexGuard<'_, ()> {
        self.limited_intake
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn count_refusal(&self, owner: &OwnerName, limit: &'static str) {
        let mut refusals = self
            .refusals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *refusals.entry((owner.clone(), limit)).or_insert(0) += 1;
    }

    pub(super) fn refusals(&self) -> Refusals {
        self.refusals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Refuses `owner` a batch of `boards` more pending boards when its `usage` meets a limit.
    pub(super) fn check_limits(
        &self,
        owner: &Owner,
        usage: OwnerUsage,
        boards: u64,
    ) -> Result<(), SchedulerError> {
        let refused = limit_reached(owner, usage, boards);
        if let Some((limit, _)) = &refused {
            self.count_refusal(&owner.name, limit);
        }
        refused.map_or(Ok(()), |(limit, reason)| {
            tracing::warn!(owner = %owner.name, limit, "submission refused: owner at its limit");
            Err(SchedulerError::ResourceExhausted(reason))
        })
    }
}

/// The first limit of `owner` that a batch of `boards` pending boards would pass, with the
/// refusal's text.
fn limit_reached(owner: &Owner, usage: OwnerUsage, boards: u64) -> Option<(&'static str, String)> {
    let OwnerLimits {
        running_batches,
        pending_boards,
        nodes_per_day,
    } = owner.limits;
    let name = &owner.name;
    if let Some(most) = running_batches.filter(|&most| usage.running_batches >= most) {
        return Some((
            "max_running_batches",
            format!(
                "owner {name} has {} queued or running, its limit \
                 (max_running_batches = {most}): submit again when one ends",
                plural(usage.running_batches, "batch", "batches")
            ),
        ));
    }
    if let Some(most) = pending_boards.filter(|&most| usage.pending_boards + boards > most) {
        return Some((
            "max_pending_boards",
            format!(
                "owner {name} would have {} boards pending, over its limit \
                 (max_pending_boards = {most}): {} are pending and this batch adds {boards}",
                usage.pending_boards + boards,
                usage.pending_boards
            ),
        ));
    }
    if let Some(most) = nodes_per_day.filter(|&most| usage.nodes_today >= most) {
        return Some((
            "max_nodes_per_day",
            format!(
                "owner {name} searched {} nodes today (UTC), its limit \
                 (max_nodes_per_day = {most}): new batches are taken again after midnight UTC",
                usage.nodes_today
            ),
        ));
    }
    None
}

fn plural(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Refuses `caller` unless its role is at least `needed`; `action` says what it asked.
pub fn require_role(caller: &Caller, needed: Role, action: &str) -> Result<(), SchedulerError> {
    if caller.role() >= needed {
        return Ok(());
    }
    Err(SchedulerError::PermissionDenied(format!(
        "{} may not {action}: that needs role {} or above",
        caller.describe(),
        needed.name()
    )))
}

impl Service {
    /// Refuses `caller` unless it may `action` (cancel, retry) batch `batch`: an admin any, a
    /// submitter its own.
    pub fn require_owner(
        &self,
        caller: &Caller,
        batch: u64,
        action: &str,
    ) -> Result<(), SchedulerError> {
        require_role(caller, Role::Submit, action)?;
        if caller.role() == Role::Admin {
            return Ok(());
        }
        let owner = self
            .store
            .batch(batch)?
            .ok_or(SchedulerError::UnknownBatch(batch))?
            .owner;
        if caller.may_change(owner.as_ref()) {
            return Ok(());
        }
        let whose = owner.map_or("the operator".to_string(), |o| format!("owner {o}"));
        Err(SchedulerError::PermissionDenied(format!(
            "{} may not {action} batch {batch}: it is {whose}'s (only its owner or an admin may)",
            caller.describe()
        )))
    }

    /// Refusals of submissions, by owner and limit, since the coordinator started.
    pub fn refusals(&self) -> Refusals {
        self.admission.refusals()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(limits: OwnerLimits) -> Owner {
        Owner {
            name: OwnerName::try_from("alice".to_string()).unwrap(),
            role: Role::Submit,
            limits,
            notify_secret: None,
        }
    }

    #[test]
    fn each_limit_refuses_at_its_value_and_names_it() {
        let usage = OwnerUsage {
            running_batches: 2,
            pending_boards: 90,
            nodes_today: 1_000,
        };
        let running = owner(OwnerLimits {
            running_batches: Some(2),
            ..OwnerLimits::default()
        });
        let (limit, text) = limit_reached(&running, usage, 1).unwrap();
        assert_eq!(limit, "max_running_batches");
        assert!(text.contains("(max_running_batches = 2)"), "{text}");
        let pending = owner(OwnerLimits {
            pending_boards: Some(100),
            ..OwnerLimits::default()
        });
        assert!(limit_reached(&pending, usage, 10).is_none());
        let (limit, text) = limit_reached(&pending, usage, 11).unwrap();
        assert_eq!(limit, "max_pending_boards");
        assert!(text.contains("101 boards pending"), "{text}");
        let nodes = owner(OwnerLimits {
            nodes_per_day: Some(1_000),
            ..OwnerLimits::default()
        });
        assert_eq!(
            limit_reached(&nodes, usage, 1).unwrap().0,
            "max_nodes_per_day"
        );
        assert!(limit_reached(&owner(OwnerLimits::default()), usage, 1_000_000).is_none());
    }

    #[test]
    fn a_reader_may_not_submit_and_says_who_it_is() {
        let reader = Caller {
            owner: Some(Owner {
                role: Role::Read,
                ..owner(OwnerLimits::default())
            }),
        };
        let error = require_role(&reader, Role::Submit, "submit a batch").unwrap_err();
        assert_eq!(
            error.to_string(),
            "owner alice (role read) may not submit a batch: that needs role submit or above"
        );
        assert!(require_role(&Caller::OPERATOR, Role::Admin, "prune").is_ok());
    }
}
