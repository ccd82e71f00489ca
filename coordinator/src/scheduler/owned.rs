//! A scheduler owned outright, for tests, benchmarks and tools that drive it without the
//! service: every call that leaves work after its lock cycle is followed by that work, here,
//! as the service's cycle would do it (deferred work run and handed back, records written, a
//! finished batch flushed).

use std::ops::{Deref, DerefMut};

use tilesolve::heuristic_choice::HeuristicChoice;
use tilesolve::pdb::PdbStore;

use super::intake::{self, SchedulerAccess};
use super::records::Flusher;
use super::types::{SchedulerError, Submitted};
use super::{Deferred, Scheduler, SchedulerConfig};
use crate::store::Store;

/// A [`Scheduler`] and its store's flusher. Derefs to the scheduler for everything else.
pub struct Owned {
    scheduler: Scheduler,
    flusher: Flusher,
}

impl Owned {
    pub fn new(
        store: Store,
        pdbs: PdbStore,
        config: SchedulerConfig,
    ) -> Result<Owned, SchedulerError> {
        let flusher = Flusher::new(store.clone());
        Ok(Owned {
            scheduler: Scheduler::new(store, pdbs, config)?,
            flusher,
        })
    }

    /// Reads and takes in a batch ([`intake::take_in`], the service's way in), then runs what
    /// that left.
    pub fn submit(
        &mut self,
        lines: &[String],
        heuristic: &str,
        goal: &str,
    ) -> Result<Submitted, SchedulerError> {
        let heuristic: HeuristicChoice = intake::parse_heuristic(heuristic)?;
        let goal = intake::parse_goal(goal)?;
        let store = self.scheduler.store();
        let read = intake::read_batch(&store, lines, heuristic, goal)?;
        let intake = intake::take_in(self, &store, read, |_| {})?;
        Ok(intake.submitted())
    }

    /// Runs everything the lock cycles so far left: deferred work (until none is left), records
    /// written, the store flushed when a batch ended.
    pub fn run_deferred(&mut self) -> Result<(), SchedulerError> {
        loop {
            let after = self.scheduler.take_cycle();
            self.flusher.write(after.records)?;
            if after.flush_due {
                self.flusher.flush()?;
            }
            if after.deferred.is_empty() {
                return Ok(());
            }
            for work in after.deferred {
                self.scheduler.finish_deferred(Deferred::run(work))?;
            }
        }
    }

    /// The store's flusher.
    pub fn flusher(&self) -> &Flusher {
        &self.flusher
    }
}

impl SchedulerAccess for Owned {
    /// Runs `step` alone: what it leaves waits for [`Owned::run_deferred`], as tests that look
    /// between the two expect.
    fn with<R>(
        &mut self,
        step: impl FnOnce(&mut Scheduler) -> Result<R, SchedulerError>,
    ) -> Result<R, SchedulerError> {
        step(&mut self.scheduler)
    }
}

impl Deref for Owned {
    type Target = Scheduler;

    fn deref(&self) -> &Scheduler {
        &self.scheduler
    }
}

impl DerefMut for Owned {
    fn deref_mut(&mut self) -> &mut Scheduler {
        &mut self.scheduler
    }
}
